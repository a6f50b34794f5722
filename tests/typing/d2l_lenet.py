"""d2l.ai-style LeNet: Sequential of Conv2d/Sigmoid/AvgPool2d, layer shapes, xavier init, a short fit."""
# Copied from tools/corpus/d2l_lenet.py with `import tapegrad as torch`: an ordinary script that
# tools/typecheck.sh type-checks (0 errors expected).

import tapegrad as torch
from tapegrad import nn

torch.manual_seed(0)
net = nn.Sequential(
    nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.Sigmoid(),
    nn.AvgPool2d(kernel_size=2, stride=2),
    nn.Conv2d(6, 16, kernel_size=5), nn.Sigmoid(),
    nn.AvgPool2d(kernel_size=2, stride=2),
    nn.Flatten(),
    nn.Linear(16 * 5 * 5, 120), nn.Sigmoid(),
    nn.Linear(120, 84), nn.Sigmoid(),
    nn.Linear(84, 10))

X = torch.rand(size=(1, 1, 28, 28), dtype=torch.float32)
for layer in net:
    X = layer(X)
    print(layer.__class__.__name__, 'output shape: \t', X.shape)


def init_weights(m):
    if type(m) == nn.Linear or type(m) == nn.Conv2d:
        nn.init.xavier_uniform_(m.weight)


net.apply(init_weights)
print(net[0].weight.shape, net[0].bias.shape)

# Two classes: a bright top half or a bright bottom half.
y = torch.arange(128) % 2
X = torch.rand(128, 1, 28, 28) * 0.3
X[y == 0, :, :14, :] += 0.7
X[y == 1, :, 14:, :] += 0.7

optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)
loss = nn.CrossEntropyLoss()
first = None
for epoch in range(30):
    net.train()
    for i in range(0, 128, 32):
        optimizer.zero_grad()
        y_hat = net(X[i:i + 32])
        l = loss(y_hat, y[i:i + 32])
        l.backward()
        optimizer.step()
    first = l.item() if first is None else first
net.eval()
with torch.no_grad():
    acc = (net(X).argmax(axis=1) == y).float().mean()
print('loss decreased:', l.item() < first, '| accuracy above 0.9:', acc.item() > 0.9)
