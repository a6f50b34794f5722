"""d2l.ai-style concise linear regression: TensorDataset/DataLoader, nn.Sequential, weight.data.normal_."""
import torch
from torch import nn
from torch.utils import data

torch.manual_seed(0)


def synthetic_data(w, b, num_examples):
    X = torch.normal(0, 1, (num_examples, len(w)))
    y = torch.matmul(X, w) + b
    y += torch.normal(0, 0.01, y.shape)
    return X, y.reshape((-1, 1))


true_w = torch.tensor([2, -3.4])
true_b = 4.2
features, labels = synthetic_data(true_w, true_b, 1000)


def load_array(data_arrays, batch_size, is_train=True):
    dataset = data.TensorDataset(*data_arrays)
    return data.DataLoader(dataset, batch_size, shuffle=is_train)


batch_size = 10
data_iter = load_array((features, labels), batch_size)
X, y = next(iter(data_iter))
print(X.shape, y.shape, len(data_iter))

net = nn.Sequential(nn.Linear(2, 1))
net[0].weight.data.normal_(0, 0.01)
net[0].bias.data.fill_(0)
print(net[0].bias.data)
loss = nn.MSELoss()
trainer = torch.optim.SGD(net.parameters(), lr=0.03)

num_epochs = 3
for epoch in range(num_epochs):
    for X, y in data_iter:
        l = loss(net(X), y)
        trainer.zero_grad()
        l.backward()
        trainer.step()
    l = loss(net(features), labels)
    print(f'epoch {epoch + 1}, loss below 0.001: {l < 1e-3}')

w = net[0].weight.data
print('error in estimating w:', ((true_w - w.reshape(true_w.shape)).abs() < 0.01).tolist())
b = net[0].bias.data
print('error in estimating b:', abs(true_b - b).item() < 0.01)
print(w.shape, b.shape, net[0].weight.grad.shape)

huber = nn.HuberLoss(delta=1.0)
print(huber(torch.tensor([0.0, 3.0]), torch.tensor([0.5, 0.0])))
print(nn.L1Loss()(torch.tensor([1.0, -1.0]), torch.tensor([0.0, 0.0])))
