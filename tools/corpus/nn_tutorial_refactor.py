"""'What is torch.nn really?': from-scratch logistic regression on MNIST-like data, then the
step-by-step refactor to nn.functional, nn.Module, nn.Linear, optim, TensorDataset, DataLoader,
a validation loop, a CNN with a Lambda layer and a WrappedDataLoader."""
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset

rng = np.random.RandomState(0)
proto = rng.rand(10, 784).astype(np.float32)
y_np = rng.randint(0, 10, size=600)
x_np = np.clip(proto[y_np] + 0.3 * rng.randn(600, 784).astype(np.float32), 0, 1)
x_train, y_train, x_valid, y_valid = map(torch.tensor, (x_np[:500], y_np[:500], x_np[500:], y_np[500:]))
n, c = x_train.shape
print(x_train.dtype, y_train.dtype, x_train.shape, y_train.min(), y_train.max())

weights = torch.tensor(rng.randn(784, 10).astype(np.float32)) / math.sqrt(784)
weights.requires_grad_()
bias = torch.zeros(10, requires_grad=True)
print(weights.is_leaf, bias.requires_grad)


def log_softmax(x):
    return x - x.exp().sum(-1).log().unsqueeze(-1)


def model(xb):
    return log_softmax(xb @ weights + bias)


bs = 64
xb = x_train[0:bs]
preds = model(xb)
print(preds[0].shape, preds.shape, preds.grad_fn is not None)


def nll(input, target):
    return -input[range(target.shape[0]), target].mean()


loss_func = nll
yb = y_train[0:bs]
print(round(loss_func(preds, yb).item(), 3))


def accuracy(out, yb):
    preds = torch.argmax(out, dim=1)
    return (preds == yb).float().mean()


print(round(accuracy(preds, yb).item(), 4))

lr = 0.5
epochs = 2
for epoch in range(epochs):
    for i in range((n - 1) // bs + 1):
        start_i = i * bs
        end_i = start_i + bs
        xb = x_train[start_i:end_i]
        yb = y_train[start_i:end_i]
        pred = model(xb)
        loss = loss_func(pred, yb)
        loss.backward()
        with torch.no_grad():
            weights -= weights.grad * lr
            bias -= bias.grad * lr
            weights.grad.zero_()
            bias.grad.zero_()
print(loss_func(model(xb), yb).item() < 0.5, accuracy(model(xb), yb).item() > 0.8)

loss_func = F.cross_entropy
print(torch.allclose(F.cross_entropy(xb @ weights + bias, yb), nll(model(xb), yb), atol=1e-6))


class Mnist_Logistic(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(784, 10)

    def forward(self, xb):
        return self.lin(xb)


def get_model():
    model = Mnist_Logistic()
    return model, optim.SGD(model.parameters(), lr=lr)


def loss_batch(model, loss_func, xb, yb, opt=None):
    loss = loss_func(model(xb), yb)
    if opt is not None:
        loss.backward()
        opt.step()
        opt.zero_grad()
    return loss.item(), len(xb)


def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
    for epoch in range(epochs):
        model.train()
        for xb, yb in train_dl:
            loss_batch(model, loss_func, xb, yb, opt)
        model.eval()
        with torch.no_grad():
            losses, nums = zip(*[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])
        val_loss = np.sum(np.multiply(losses, nums)) / np.sum(nums)
    return val_loss


def get_data(train_ds, valid_ds, bs):
    return (DataLoader(train_ds, batch_size=bs, shuffle=True),
            DataLoader(valid_ds, batch_size=bs * 2))


torch.manual_seed(0)
train_ds = TensorDataset(x_train, y_train)
valid_ds = TensorDataset(x_valid, y_valid)
print(len(train_ds), len(train_ds[0]), train_ds[0][0].shape, train_ds[3][1].dtype)
train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
print(len(train_dl), len(valid_dl))
model, opt = get_model()
print(sum(p.numel() for p in model.parameters()))
val = fit(epochs, model, loss_func, opt, train_dl, valid_dl)
print(type(val).__name__, val < 1.0)


class Lambda(nn.Module):
    def __init__(self, func):
        super().__init__()
        self.func = func

    def forward(self, x):
        return self.func(x)


def preprocess(x, y):
    return x.view(-1, 1, 28, 28), y


class WrappedDataLoader:
    def __init__(self, dl, func):
        self.dl = dl
        self.func = func

    def __len__(self):
        return len(self.dl)

    def __iter__(self):
        for b in self.dl:
            yield (self.func(*b))


train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
train_dl = WrappedDataLoader(train_dl, preprocess)
valid_dl = WrappedDataLoader(valid_dl, preprocess)
model = nn.Sequential(
    nn.Conv2d(1, 8, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.Conv2d(8, 8, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.Conv2d(8, 10, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    Lambda(lambda x: x.view(x.size(0), -1)),
)
print(model)
opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
xb, yb = next(iter(train_dl))
print(xb.shape, model(xb).shape)
val = fit(1, model, loss_func, opt, train_dl, valid_dl)
print(math.isfinite(val))
