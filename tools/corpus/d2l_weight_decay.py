"""d2l.ai weight decay: high-dimensional linear regression from scratch with an l2_penalty,
init_params, a data_iter-style loader, then the concise version with per-parameter-group
weight_decay on SGD (decay on the weight, none on the bias)."""
import torch
from torch import nn
from torch.utils import data

n_train, n_test, num_inputs, batch_size = 20, 100, 200, 5
true_w, true_b = torch.ones((num_inputs, 1)) * 0.01, 0.05


def synthetic_data(w, b, num_examples):
    X = torch.normal(0, 1, (num_examples, len(w)))
    y = torch.matmul(X, w) + b
    y += torch.normal(0, 0.01, y.shape)
    return X, y.reshape((-1, 1))


def load_array(data_arrays, batch_size, is_train=True):
    dataset = data.TensorDataset(*data_arrays)
    return data.DataLoader(dataset, batch_size, shuffle=is_train)


torch.manual_seed(0)
train_data = synthetic_data(true_w, true_b, n_train)
train_iter = load_array(train_data, batch_size)
test_data = synthetic_data(true_w, true_b, n_test)
test_iter = load_array(test_data, batch_size, is_train=False)
print(train_data[0].shape, train_data[1].shape, len(train_iter), len(test_iter))


def init_params():
    w = torch.normal(0, 1, size=(num_inputs, 1), requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    return [w, b]


def l2_penalty(w):
    return torch.sum(w.pow(2)) / 2


print(l2_penalty(torch.tensor([[1.0], [2.0], [-2.0]])))


def linreg(X, w, b):
    return torch.matmul(X, w) + b


def squared_loss(y_hat, y):
    return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2


def sgd(params, lr, batch_size):
    with torch.no_grad():
        for param in params:
            param -= lr * param.grad / batch_size
            param.grad.zero_()


def evaluate_loss(net, data_iter, loss):
    total, count = 0.0, 0
    for X, y in data_iter:
        out = net(X)
        y = y.reshape(out.shape)
        l = loss(out, y)
        total += l.sum().item()
        count += l.numel()
    return total / count


def train(lambd):
    w, b = init_params()
    net, loss = lambda X: linreg(X, w, b), squared_loss
    num_epochs, lr = 50, 0.003
    for epoch in range(num_epochs):
        for X, y in train_iter:
            l = loss(net(X), y) + lambd * l2_penalty(w)
            l.sum().backward()
            sgd([w, b], lr, batch_size)
    return torch.norm(w).item(), evaluate_loss(net, test_iter, squared_loss)


norm0, test0 = train(lambd=0)
norm3, test3 = train(lambd=3)
print('w norm smaller with decay:', norm3 < norm0, 'test loss smaller:', test3 < test0)


def train_concise(wd):
    net = nn.Sequential(nn.Linear(num_inputs, 1))
    for param in net.parameters():
        param.data.normal_()
    loss = nn.MSELoss(reduction='none')
    num_epochs, lr = 50, 0.003
    trainer = torch.optim.SGD([
        {"params": net[0].weight, 'weight_decay': wd},
        {"params": net[0].bias}], lr=lr)
    for epoch in range(num_epochs):
        for X, y in train_iter:
            trainer.zero_grad()
            l = loss(net(X), y)
            l.mean().backward()
            trainer.step()
    return net[0].weight.norm().item(), trainer


n0, trainer = train_concise(0)
n3, trainer = train_concise(3)
print(n3 < n0, [g['weight_decay'] for g in trainer.param_groups], len(trainer.param_groups))
lin = nn.Linear(2, 1, bias=False)
with torch.no_grad():
    lin.weight.fill_(1.0)
opt = torch.optim.SGD(lin.parameters(), lr=0.1, weight_decay=0.5)
lin(torch.tensor([[1.0, 2.0]])).sum().backward()
opt.step()
print(lin.weight)
