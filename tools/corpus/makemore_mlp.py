"""makemore part 2, MLP: embedding table C[X], tanh hidden layer, cross_entropy, minibatches, lr decay."""
import random

import torch
import torch.nn.functional as F

words = ['emma', 'olivia', 'ava', 'isabella', 'sophia', 'charlotte', 'mia', 'amelia', 'harper',
         'evelyn', 'abigail', 'emily', 'elizabeth', 'mila', 'ella', 'avery', 'sofia', 'camila',
         'aria', 'scarlett', 'victoria', 'madison', 'luna', 'grace', 'chloe', 'penelope', 'layla',
         'riley', 'zoey', 'nora', 'lily', 'eleanor', 'hannah', 'lillian', 'addison', 'aubrey']
chars = sorted(list(set(''.join(words))))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi['.'] = 0
itos = {i: s for s, i in stoi.items()}
V = len(itos)
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
    X = torch.tensor(X)
    Y = torch.tensor(Y)
    print(X.shape, Y.shape)
    return X, Y


random.seed(42)
random.shuffle(words)
n1 = int(0.8 * len(words))
Xtr, Ytr = build_dataset(words[:n1])
Xdev, Ydev = build_dataset(words[n1:])

g = torch.Generator().manual_seed(2147483647)
C = torch.randn((V, 10), generator=g)
W1 = torch.randn((30, 100), generator=g) * (5 / 3) / 30 ** 0.5
b1 = torch.randn(100, generator=g) * 0.01
W2 = torch.randn((100, V), generator=g) * 0.01
b2 = torch.randn(V, generator=g) * 0
parameters = [C, W1, b1, W2, b2]
print(sum(p.nelement() for p in parameters))
for p in parameters:
    p.requires_grad = True

emb = C[Xtr]
print(emb.shape, emb.view(-1, 30).shape, emb.view(emb.shape[0], -1).shape)
print(torch.cat(torch.unbind(emb, 1), 1).shape)

lossi = []
for i in range(1500):
    ix = torch.randint(0, Xtr.shape[0], (32,), generator=g)
    emb = C[Xtr[ix]]
    h = torch.tanh(emb.view(-1, 30) @ W1 + b1)
    logits = h @ W2 + b2
    loss = F.cross_entropy(logits, Ytr[ix])
    for p in parameters:
        p.grad = None
    loss.backward()
    lr = 0.1 if i < 1000 else 0.01
    for p in parameters:
        p.data += -lr * p.grad
    lossi.append(loss.log10().item())


@torch.no_grad()
def split_loss(X, Y):
    emb = C[X]
    h = torch.tanh(emb.view(emb.shape[0], -1) @ W1 + b1)
    logits = h @ W2 + b2
    return F.cross_entropy(logits, Y).item()


train_loss = split_loss(Xtr, Ytr)
print('train loss below 2.2:', train_loss < 2.2)
print('minibatch loss fell:', sum(lossi[-100:]) < sum(lossi[:100]))
print('dev loss finite:', split_loss(Xdev, Ydev) < 10)

logits = torch.tensor([[0.0, 0.0, 0.0, 0.0], [5.0, 0.0, 0.0, 0.0]])
print(F.cross_entropy(logits, torch.tensor([3, 0])))
print(F.cross_entropy(logits, torch.tensor([3, 0]), reduction='none'))

g = torch.Generator().manual_seed(2147483647 + 10)
samples = []
for _ in range(5):
    out = []
    context = [0] * block_size
    while True:
        emb = C[torch.tensor([context])]
        h = torch.tanh(emb.view(1, -1) @ W1 + b1)
        logits = h @ W2 + b2
        probs = F.softmax(logits, dim=1)
        ix = torch.multinomial(probs, num_samples=1, generator=g).item()
        context = context[1:] + [ix]
        out.append(ix)
        if ix == 0:
            break
    samples.append(''.join(itos[i] for i in out))
print(len(samples), all(s.endswith('.') for s in samples))
