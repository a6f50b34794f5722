"""d2l.ai-style MLP with dropout from scratch and concise, net.apply(init_weights), weight decay."""
import torch
from torch import nn

torch.manual_seed(0)


def dropout_layer(X, dropout):
    assert 0 <= dropout <= 1
    if dropout == 1:
        return torch.zeros_like(X)
    mask = (torch.rand(X.shape) > dropout).float()
    return mask * X / (1.0 - dropout)


X = torch.arange(16, dtype=torch.float32).reshape((2, 8))
print('dropout_p = 0:', dropout_layer(X, 0))
print('dropout_p = 1:', dropout_layer(X, 1))
half = dropout_layer(X, 0.5)
print('dropout_p = 0.5 keeps or doubles:', bool(((half == 0) | (half == 2 * X)).all()))


def relu(X):
    a = torch.zeros_like(X)
    return torch.max(X, a)


print(relu(torch.tensor([-1.0, 0.5, 2.0])))

centers = torch.randn(5, 20) * 2
labels = torch.randint(0, 5, (500,))
feats = centers[labels] + torch.randn(500, 20)

net = nn.Sequential(nn.Flatten(),
                    nn.Linear(20, 64), nn.ReLU(), nn.Dropout(0.2),
                    nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.5),
                    nn.Linear(64, 5))


def init_weights(m):
    if type(m) == nn.Linear:
        nn.init.normal_(m.weight, std=0.01)


net.apply(init_weights)
print(net)
loss = nn.CrossEntropyLoss(reduction='none')
trainer = torch.optim.SGD(net.parameters(), lr=0.5, weight_decay=1e-4)
for epoch in range(10):
    net.train()
    for i in range(0, 500, 50):
        l = loss(net(feats[i:i + 50]), labels[i:i + 50])
        trainer.zero_grad()
        l.mean().backward()
        trainer.step()
net.eval()
with torch.no_grad():
    acc = (net(feats).argmax(dim=1) == labels).float().mean().item()
    print('eval is deterministic:', torch.equal(net(feats), net(feats)))
print('train accuracy above 0.9:', acc > 0.9)

trainer = torch.optim.SGD([
    {"params": net[1].weight, 'weight_decay': 3.0},
    {"params": net[1].bias}], lr=0.1)
print(len(trainer.param_groups), trainer.param_groups[0]['weight_decay'], trainer.param_groups[1]['weight_decay'])
