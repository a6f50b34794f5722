"""makemore part 5 (WaveNet): Embedding / FlattenConsecutive / Linear / BatchNorm1d / Tanh layers
in a Sequential container written by hand, BatchNorm over (0, 1) for 3-D input, a hierarchical
fusion of characters, and the same architecture with torch.nn modules."""
import random

import torch
import torch.nn.functional as F

words = ['emma', 'olivia', 'ava', 'isabella', 'sophia', 'mia', 'amelia', 'harper', 'evelyn', 'abigail',
         'emily', 'ella', 'avery', 'scarlett', 'grace', 'chloe', 'riley', 'zoey', 'nora', 'lily', 'hannah',
         'layla', 'zoe', 'stella', 'hazel', 'ellie', 'paisley', 'audrey', 'skylar', 'violet']
chars = sorted(list(set(''.join(words))))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi['.'] = 0
itos = {i: s for s, i in stoi.items()}
vocab_size = len(itos)
block_size = 8


def build_dataset(words):
    X, Y = [], []
    for w in words:
        context = [0] * block_size
        for ch in w + '.':
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = context[1:] + [ix]
    return torch.tensor(X), torch.tensor(Y)


random.seed(42)
random.shuffle(words)
Xtr, Ytr = build_dataset(words[:25])
Xdev, Ydev = build_dataset(words[25:])
for x, y in zip(Xtr[:3], Ytr[:3]):
    print(''.join(itos[ix.item()] for ix in x), '-->', itos[y.item()])


class Linear:
    def __init__(self, fan_in, fan_out, bias=True):
        self.weight = torch.randn((fan_in, fan_out)) / fan_in ** 0.5
        self.bias = torch.zeros(fan_out) if bias else None

    def __call__(self, x):
        self.out = x @ self.weight
        if self.bias is not None:
            self.out += self.bias
        return self.out

    def parameters(self):
        return [self.weight] + ([] if self.bias is None else [self.bias])


class BatchNorm1d:
    def __init__(self, dim, eps=1e-5, momentum=0.1):
        self.eps = eps
        self.momentum = momentum
        self.training = True
        self.gamma = torch.ones(dim)
        self.beta = torch.zeros(dim)
        self.running_mean = torch.zeros(dim)
        self.running_var = torch.ones(dim)

    def __call__(self, x):
        if self.training:
            if x.ndim == 2:
                dim = 0
            elif x.ndim == 3:
                dim = (0, 1)
            xmean = x.mean(dim, keepdim=True)
            xvar = x.var(dim, keepdim=True)
        else:
            xmean = self.running_mean
            xvar = self.running_var
        xhat = (x - xmean) / torch.sqrt(xvar + self.eps)
        self.out = self.gamma * xhat + self.beta
        if self.training:
            with torch.no_grad():
                self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * xmean
                self.running_var = (1 - self.momentum) * self.running_var + self.momentum * xvar
        return self.out

    def parameters(self):
        return [self.gamma, self.beta]


class Tanh:
    def __call__(self, x):
        self.out = torch.tanh(x)
        return self.out

    def parameters(self):
        return []


class Embedding:
    def __init__(self, num_embeddings, embedding_dim):
        self.weight = torch.randn((num_embeddings, embedding_dim))

    def __call__(self, IX):
        self.out = self.weight[IX]
        return self.out

    def parameters(self):
        return [self.weight]


class FlattenConsecutive:
    def __init__(self, n):
        self.n = n

    def __call__(self, x):
        B, T, C = x.shape
        x = x.view(B, T // self.n, C * self.n)
        if x.shape[1] == 1:
            x = x.squeeze(1)
        self.out = x
        return self.out

    def parameters(self):
        return []


class Sequential:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        self.out = x
        return self.out

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]


torch.manual_seed(42)
n_embd = 10
n_hidden = 32
model = Sequential([
    Embedding(vocab_size, n_embd),
    FlattenConsecutive(2), Linear(n_embd * 2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
    FlattenConsecutive(2), Linear(n_hidden * 2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
    FlattenConsecutive(2), Linear(n_hidden * 2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
    Linear(n_hidden, vocab_size),
])
with torch.no_grad():
    model.layers[-1].weight *= 0.1
parameters = model.parameters()
print(sum(p.nelement() for p in parameters))
for p in parameters:
    p.requires_grad = True

ix = torch.randint(0, Xtr.shape[0], (4,))
Xb, Yb = Xtr[ix], Ytr[ix]
logits = model(Xb)
print(Xb.shape)
for layer in model.layers:
    print(layer.__class__.__name__, ':', tuple(layer.out.shape))

e = torch.randn(4, 8, 10)
explicit = torch.cat([e[:, ::2, :], e[:, 1::2, :]], dim=2)
print(explicit.shape, (e.view(4, 4, 20) == explicit).all())

lossi = []
for i in range(400):
    ix = torch.randint(0, Xtr.shape[0], (32,))
    Xb, Yb = Xtr[ix], Ytr[ix]
    logits = model(Xb)
    loss = F.cross_entropy(logits, Yb)
    for p in parameters:
        p.grad = None
    loss.backward()
    lr = 0.1 if i < 300 else 0.01
    for p in parameters:
        p.data += -lr * p.grad
    lossi.append(loss.log10().item())
print(torch.tensor(lossi).view(-1, 100).mean(1).shape, torch.tensor(lossi).view(-1, 100).mean(1)[-1] < lossi[0])

for layer in model.layers:
    layer.training = False


@torch.no_grad()
def split_loss(x, y):
    logits = model(x)
    return F.cross_entropy(logits, y).item()


print(split_loss(Xtr, Ytr) < split_loss(Xtr[:0].new_zeros((1, block_size)), Ytr[:1]) + 10)

tmodel = torch.nn.Sequential(
    torch.nn.Embedding(vocab_size, n_embd), torch.nn.Flatten(1), torch.nn.Unflatten(1, (4, n_embd * 2)),
    torch.nn.Linear(n_embd * 2, n_hidden, bias=False), torch.nn.Tanh(),
    torch.nn.Flatten(1), torch.nn.Linear(4 * n_hidden, vocab_size))
print(tmodel(Xtr[:6]).shape, tmodel[2])
