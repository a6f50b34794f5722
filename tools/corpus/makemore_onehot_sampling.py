"""makemore part 1 idioms: bigram count tables, normalisation with keepdim, F.one_hot, sampling with a Generator."""
import torch
import torch.nn.functional as F

words = ['emma', 'olivia', 'ava', 'isabella', 'sophia', 'mia', 'amelia', 'ella', 'lily', 'anna']
chars = sorted(set(''.join(words)))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi['.'] = 0
itos = {i: s for s, i in stoi.items()}
V = len(stoi)
print(V, chars)

N = torch.zeros((V, V), dtype=torch.int32)
for w in words:
    cs = ['.'] + list(w) + ['.']
    for c1, c2 in zip(cs, cs[1:]):
        N[stoi[c1], stoi[c2]] += 1
print(N[0], N.sum(), N.dtype, N.max())
print('most common first letter:', itos[N[0].argmax().item()])

P = (N + 1).float()
P /= P.sum(1, keepdims=True)
print(P.shape, P[0].sum(), P[0, :5])
print(torch.allclose(P.sum(1), torch.ones(V)))

g = torch.Generator().manual_seed(2147483647)
p = torch.rand(3, generator=g)
p = p / p.sum()
samples = torch.multinomial(p, num_samples=100, replacement=True, generator=g)
print(samples.shape, samples.dtype, samples.min().item() >= 0, samples.max().item() <= 2)
g1 = torch.Generator().manual_seed(42)
g2 = torch.Generator().manual_seed(42)
print('same seed, same stream:', torch.equal(torch.multinomial(P[0], 20, replacement=True, generator=g1),
                                            torch.multinomial(P[0], 20, replacement=True, generator=g2)))
print(torch.multinomial(torch.tensor([0.0, 0.0, 1.0]), 3, replacement=True))
print(sorted(torch.multinomial(torch.tensor([1.0, 1.0, 1.0, 1.0]), 4).tolist()))

names = []
g = torch.Generator().manual_seed(2147483647)
for _ in range(5):
    out, ix = [], 0
    while True:
        ix = torch.multinomial(P[ix], num_samples=1, replacement=True, generator=g).item()
        if ix == 0:
            break
        out.append(itos[ix])
    names.append(''.join(out))
print('sampled names only use known letters:', all(set(n) <= set(chars) for n in names))

log_likelihood, n = 0.0, 0
for w in words:
    cs = ['.'] + list(w) + ['.']
    for c1, c2 in zip(cs, cs[1:]):
        log_likelihood += torch.log(P[stoi[c1], stoi[c2]])
        n += 1
nll = -log_likelihood
print(f'{log_likelihood=}'.split('=')[0], f'{nll:.4f}', f'{nll / n:.4f}')

xs, ys = [], []
for w in words:
    cs = ['.'] + list(w) + ['.']
    for c1, c2 in zip(cs, cs[1:]):
        xs.append(stoi[c1])
        ys.append(stoi[c2])
xs = torch.tensor(xs)
ys = torch.tensor(ys)
num = xs.nelement()
print('examples:', num, xs[:5], ys[:5])
xenc = F.one_hot(xs, num_classes=V).float()
print(xenc.shape, xenc.dtype, xenc[0].nonzero().item(), F.one_hot(torch.tensor([2, 0])), F.one_hot(torch.tensor([[1], [0]]), 3).shape)

W = torch.zeros((V, V), requires_grad=True)
with torch.no_grad():
    W += torch.linspace(-1, 1, V * V).reshape(V, V)
for k in range(40):
    logits = xenc @ W
    counts = logits.exp()
    probs = counts / counts.sum(1, keepdims=True)
    loss = -probs[torch.arange(num), ys].log().mean() + 0.01 * (W ** 2).mean()
    W.grad = None
    loss.backward()
    W.data += -20 * W.grad
    if k % 10 == 0:
        print(f'step {k}: loss {loss.item():.4f}')
ce = F.cross_entropy(xenc @ W, ys)
print('cross_entropy agrees:', torch.allclose(ce, -probs[torch.arange(num), ys].log().mean(), atol=1e-4))
print('row of probs for "e":', probs[xs == stoi['e']][0].argmax().item() == (xenc @ W)[xs == stoi['e']][0].argmax().item())
print(f"first-row logits max at {(W[0]).argmax().item()}, {W.grad.abs().sum() > 0}")
