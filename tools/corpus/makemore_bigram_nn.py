"""makemore part 1, neural net: one-hot inputs, a 27x27 weight matrix trained by gradient descent."""
import torch
import torch.nn.functional as F

words = ['emma', 'olivia', 'ava', 'isabella', 'sophia', 'charlotte', 'mia', 'amelia', 'harper',
         'evelyn', 'abigail', 'emily', 'elizabeth', 'mila', 'ella', 'avery', 'sofia', 'camila',
         'aria', 'scarlett', 'victoria', 'madison', 'luna', 'grace', 'chloe', 'penelope', 'layla']
chars = sorted(list(set(''.join(words))))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi['.'] = 0
V = len(stoi)

xs, ys = [], []
for w in words:
    chs = ['.'] + list(w) + ['.']
    for ch1, ch2 in zip(chs, chs[1:]):
        xs.append(stoi[ch1])
        ys.append(stoi[ch2])
xs = torch.tensor(xs)
ys = torch.tensor(ys)
num = xs.nelement()
print('number of examples: ', num, xs.dtype)

xenc = F.one_hot(xs, num_classes=V).float()
print(xenc.shape, xenc.dtype, xenc[:2].sum(1))

# Count-based model for reference (the best average NLL on this data); index_put_ with
# accumulate=True counts repeated pairs, which a plain N[xs, ys] += 1 would count once.
N = torch.zeros((V, V))
N.index_put_((xs, ys), torch.ones(num), accumulate=True)
P = N / N.sum(1, keepdim=True).clamp(min=1)
best = -P[xs, ys].log().mean().item()
print(f'count-based nll {best:.4f}')

g = torch.Generator().manual_seed(2147483647)
W = torch.randn((V, V), generator=g, requires_grad=True)
print(W.shape, W.requires_grad, W.is_leaf)

losses = []
for k in range(300):
    xenc = F.one_hot(xs, num_classes=V).float()
    logits = xenc @ W
    counts = logits.exp()
    probs = counts / counts.sum(1, keepdims=True)
    loss = -probs[torch.arange(num), ys].log().mean() + 0.0001 * (W ** 2).mean()
    losses.append(loss.item())
    W.grad = None
    loss.backward()
    W.data += -50 * W.grad

print('loss decreased:', losses[-1] < losses[0])
print('within 0.1 of the count model:', abs(losses[-1] - best) < 0.1)
ce = F.cross_entropy(xenc @ W, ys)
print('cross_entropy agrees:', abs(ce.item() - (losses[-1] - 0.0001 * (W ** 2).mean().item())) < 1e-2)

g = torch.Generator().manual_seed(2147483647)
ix = 0
out = []
while True:
    xenc = F.one_hot(torch.tensor([ix]), num_classes=V).float()
    p = F.softmax(xenc @ W, dim=1)
    ix = torch.multinomial(p, num_samples=1, replacement=True, generator=g).item()
    if ix == 0 or len(out) > 30:
        break
    out.append(ix)
print('sampled a name:', isinstance(ix, int))
