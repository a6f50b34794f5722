"""Idioms of the from-scratch chapters of Chinese-language d2l ports (softmax regression and an
MLP written by hand): relu as torch.max(input=X, other=torch.tensor(0.0)), softmax by exp and a
keepdim sum, cross entropy through gather, a hand-written minibatch SGD on param.data, a
data_iter built on index_select, and accuracy as (y_hat.argmax(dim=1) == y).float().mean().item().
Data and weights are deterministic functions, so the output does not depend on the random stream."""
import torch
from torch import nn

num_inputs, num_hiddens, num_outputs = 6, 5, 3
n = 24
X_all = torch.sin(torch.arange(n * num_inputs, dtype=torch.float32).view(n, num_inputs) * 0.37)
y_all = (torch.arange(n) * 7 % num_outputs).long()


def relu(X):
    return torch.max(input=X, other=torch.tensor(0.0))


def softmax(X):
    X_exp = X.exp()
    partition = X_exp.sum(dim=1, keepdim=True)
    return X_exp / partition


def cross_entropy(y_hat, y):
    return -torch.log(y_hat.gather(1, y.view(-1, 1)))


def sgd(params, lr, batch_size):
    for param in params:
        param.data -= lr * param.grad / batch_size


def data_iter(batch_size, features, labels):
    num_examples = len(features)
    indices = list(range(num_examples))
    indices = indices[::2] + indices[1::2]          # a fixed "shuffle"
    for i in range(0, num_examples, batch_size):
        j = torch.LongTensor(indices[i: min(i + batch_size, num_examples)])
        yield features.index_select(0, j), labels.index_select(0, j)


def accuracy(y_hat, y):
    return (y_hat.argmax(dim=1) == y).float().mean().item()


W1 = torch.cos(torch.arange(num_inputs * num_hiddens, dtype=torch.float) * 0.5).view(num_inputs, num_hiddens) * 0.3
b1 = torch.zeros(num_hiddens, dtype=torch.float)
W2 = torch.sin(torch.arange(num_hiddens * num_outputs, dtype=torch.float) * 0.9).view(num_hiddens, num_outputs) * 0.3
b2 = torch.zeros(num_outputs, dtype=torch.float)
params = [W1, b1, W2, b2]
for param in params:
    param.requires_grad_(requires_grad=True)

print(relu(torch.tensor([[-1.0, 2.0], [0.5, -0.25]])))
print(torch.max(torch.tensor([1.0, -3.0]), torch.tensor([0.0, 0.0])), torch.tensor([2.0, -1.0]).min(other=torch.tensor(0.0)))
X = torch.tensor([[1, 2, 3], [4, 5, 6]])
print(X.sum(dim=0, keepdim=True))
print(X.sum(dim=1, keepdim=True))
X_prob = softmax(torch.tensor([[0.1, 0.2, 0.3], [1.0, -1.0, 0.0]]))
print(X_prob, X_prob.sum(dim=1))
y_hat = torch.tensor([[0.1, 0.3, 0.6], [0.3, 0.2, 0.5]])
y = torch.LongTensor([0, 2])
print(y_hat.gather(1, y.view(-1, 1)))
print(accuracy(y_hat, y))


def net(X):
    X = X.view((-1, num_inputs))
    H = relu(torch.matmul(X, W1) + b1)
    return softmax(torch.matmul(H, W2) + b2)


batch_size, lr = 8, 0.5
for epoch in range(5):
    train_l_sum, train_acc_sum, m = 0.0, 0.0, 0
    for Xb, yb in data_iter(batch_size, X_all, y_all):
        l = cross_entropy(net(Xb), yb).sum()
        for param in params:
            if param.grad is not None:
                param.grad.data.zero_()
        l.backward()
        sgd(params, lr, batch_size)
        train_l_sum += l.item()
        train_acc_sum += (net(Xb).argmax(dim=1) == yb).sum().item()
        m += yb.shape[0]
    print('epoch %d, loss %.4f, train acc %.3f' % (epoch + 1, train_l_sum / m, train_acc_sum / m))
print(W2.grad.shape, b1.grad)
print('test acc', accuracy(net(X_all), y_all))
