"""makemore part 1, counting: bigram count matrix, smoothing, normalisation, sampling, likelihood."""
import torch

words = ['emma', 'olivia', 'ava', 'isabella', 'sophia', 'charlotte', 'mia', 'amelia', 'harper',
         'evelyn', 'abigail', 'emily', 'elizabeth', 'mila', 'ella', 'avery', 'sofia', 'camila',
         'aria', 'scarlett', 'victoria', 'madison', 'luna', 'grace', 'chloe', 'penelope', 'layla',
         'riley', 'zoey', 'nora', 'lily', 'eleanor', 'hannah', 'lillian', 'addison', 'aubrey',
         'ellie', 'stella', 'natalie', 'zoe', 'leah', 'hazel', 'violet', 'aurora', 'savannah',
         'audrey', 'brooklyn', 'bella', 'claire', 'skylar', 'quinn', 'jack', 'xavier', 'wyatt']
print(len(words), min(len(w) for w in words), max(len(w) for w in words))

chars = sorted(list(set(''.join(words))))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi['.'] = 0
itos = {i: s for s, i in stoi.items()}
V = len(stoi)
print(V)

N = torch.zeros((V, V), dtype=torch.int32)
for w in words:
    chs = ['.'] + list(w) + ['.']
    for ch1, ch2 in zip(chs, chs[1:]):
        ix1 = stoi[ch1]
        ix2 = stoi[ch2]
        N[ix1, ix2] += 1

print(N.dtype, N.shape, N.sum().item(), N[0, stoi['a']].item(), N[stoi['a'], 0].item())
print(N[0])
top = N.view(-1).topk(2)
print([(itos[i // V] + itos[i % V], c) for c, i in zip(top.values.tolist(), top.indices.tolist())])

p = N[0].float()
p = p / p.sum()
print(p.shape, round(p.sum().item(), 5), f"{p[stoi['a']].item():.4f}")

g = torch.Generator().manual_seed(2147483647)
ix = torch.multinomial(p, num_samples=1, replacement=True, generator=g).item()
print(type(ix).__name__, 0 <= ix < V)
draws = torch.multinomial(p, num_samples=20, replacement=True, generator=g)
print(draws.shape, draws.dtype, bool((p[draws] > 0).all()))

P = (N + 1).float()
P /= P.sum(1, keepdims=True)
print(P.shape, torch.allclose(P.sum(1), torch.ones(V)))

g = torch.Generator().manual_seed(2147483647)
names = []
for i in range(5):
    out = []
    ix = 0
    while True:
        p = P[ix]
        ix = torch.multinomial(p, num_samples=1, replacement=True, generator=g).item()
        out.append(itos[ix])
        if ix == 0:
            break
    names.append(''.join(out))
print(len(names), all(n.endswith('.') for n in names))

log_likelihood = 0.0
n = 0
for w in words:
    chs = ['.'] + list(w) + ['.']
    for ch1, ch2 in zip(chs, chs[1:]):
        ix1 = stoi[ch1]
        ix2 = stoi[ch2]
        prob = P[ix1, ix2]
        logprob = torch.log(prob)
        log_likelihood += logprob
        n += 1
print(f'{log_likelihood=}')
nll = -log_likelihood
print(f'{nll=}')
print(f'{nll/n}')
print(f'{(nll / n).item():.4f}')
