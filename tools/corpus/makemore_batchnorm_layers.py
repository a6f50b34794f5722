"""makemore part 3 (activations, gradients, BatchNorm): hand-written Linear / BatchNorm1d / Tanh
classes with parameters() and out attributes, kaiming-style init with a 5/3 gain, the last layer
made less confident, retain_grad on activations, update-to-data ratios, running stats under
torch.no_grad, and the same net rebuilt with torch.nn for comparison."""
import torch
import torch.nn.functional as F

words = ['emma', 'olivia', 'ava', 'isabella', 'sophia', 'mia', 'amelia', 'harper', 'evelyn', 'abigail',
         'emily', 'ella', 'avery', 'scarlett', 'grace', 'chloe', 'riley', 'zoey', 'nora', 'lily', 'hannah']
chars = sorted(list(set(''.join(words))))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi['.'] = 0
itos = {i: s for s, i in stoi.items()}
vocab_size = len(itos)
block_size = 3


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


Xtr, Ytr = build_dataset(words)
print(Xtr.shape, Ytr.shape, vocab_size)


class Linear:
    def __init__(self, fan_in, fan_out, bias=True):
        self.weight = torch.randn((fan_in, fan_out), generator=g) / fan_in ** 0.5
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
            xmean = x.mean(0, keepdim=True)
            xvar = x.var(0, keepdim=True)
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


n_embd = 10
n_hidden = 64
g = torch.Generator().manual_seed(2147483647)
C = torch.randn((vocab_size, n_embd), generator=g)
layers = [
    Linear(n_embd * block_size, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
    Linear(n_hidden, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
    Linear(n_hidden, vocab_size, bias=False), BatchNorm1d(vocab_size),
]
with torch.no_grad():
    layers[-1].gamma *= 0.1
    for layer in layers[:-1]:
        if isinstance(layer, Linear):
            layer.weight *= 5 / 3
parameters = [C] + [p for layer in layers for p in layer.parameters()]
print(sum(p.nelement() for p in parameters))
for p in parameters:
    p.requires_grad = True

max_steps = 300
batch_size = 32
lossi = []
ud = []
for i in range(max_steps):
    ix = torch.randint(0, Xtr.shape[0], (batch_size,), generator=g)
    Xb, Yb = Xtr[ix], Ytr[ix]
    emb = C[Xb]
    x = emb.view(emb.shape[0], -1)
    for layer in layers:
        x = layer(x)
    loss = F.cross_entropy(x, Yb)
    for layer in layers:
        layer.out.retain_grad()
    for p in parameters:
        p.grad = None
    loss.backward()
    lr = 0.1 if i < 200 else 0.01
    for p in parameters:
        p.data += -lr * p.grad
    lossi.append(loss.log10().item())
    with torch.no_grad():
        ud.append([((lr * p.grad).std() / p.data.std()).log10().item() for p in parameters])

print('initial loss near -log(1/27):', abs(10 ** lossi[0] - torch.tensor(1 / 27.0).log().neg().item()) < 0.5)
print('loss fell:', sum(lossi[-30:]) < sum(lossi[:30]))
for i, layer in enumerate(layers[:-1]):
    if isinstance(layer, Tanh):
        t = layer.out
        print('layer %d (%10s): grad shape %s saturated below 50%%: %s' % (
            i, layer.__class__.__name__, tuple(t.grad.shape), ((t.abs() > 0.97).float().mean() * 100).item() < 50))
print(len(ud), len(ud[0]), all(u == u for u in ud[-1]))
for layer in layers:
    layer.training = False
print(layers[1].running_mean.shape, layers[1].running_var.shape)

x = torch.tensor([[1.0, 2.0], [3.0, 6.0], [5.0, 10.0]])
bn = BatchNorm1d(2)
print(bn(x), bn.running_mean, bn.running_var)
tbn = torch.nn.BatchNorm1d(2)
print(torch.allclose(tbn(x), (x - x.mean(0)) / (x.var(0, unbiased=False) + 1e-5).sqrt(), atol=1e-6), tbn.running_mean, tbn.running_var)
print(x.var(0, keepdim=True), x.var(0, unbiased=False))
net = torch.nn.Sequential(torch.nn.Linear(n_embd * block_size, n_hidden, bias=False), torch.nn.BatchNorm1d(n_hidden),
                          torch.nn.Tanh(), torch.nn.Linear(n_hidden, vocab_size))
print(net(C[Xtr[:5]].view(5, -1)).shape)
