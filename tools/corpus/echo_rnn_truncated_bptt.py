"""Echo-sequence RNN with truncated backprop through time, as the NYU deep-learning notebooks
train it: the hidden state carried across chunks and cut with hidden.detach_(), RMSprop,
BCEWithLogitsLoss, accuracy by thresholding.  Weights and data come from numpy, so the printout
does not depend on the library's random stream."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.RandomState(3)
batch, chunk, n_chunks, echo = 5, 20, 60, 3
series = rng.randint(0, 2, size=(batch, chunk * n_chunks)).astype(np.float32)
target = np.roll(series, echo, axis=1)
target[:, :echo] = 0


class SimpleRNN(nn.Module):
    def __init__(self, hidden=4):
        super().__init__()
        self.rnn = nn.RNN(input_size=1, hidden_size=hidden, batch_first=True)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, x, hidden):
        x, hidden = self.rnn(x, hidden)
        return self.linear(x), hidden


model = SimpleRNN()
init = np.random.RandomState(0)
with torch.no_grad():
    for name, p in model.named_parameters():
        p.copy_(torch.from_numpy(init.uniform(-0.5, 0.5, size=tuple(p.shape)).astype(np.float32)))
criterion = nn.BCEWithLogitsLoss()
optimizer = torch.optim.RMSprop(model.parameters(), lr=0.01)

for epoch in range(1, 4):
    hidden, correct, losses = None, 0, []
    for b in range(n_chunks):
        x = torch.from_numpy(series[:, b * chunk:(b + 1) * chunk, None].copy())
        y = torch.from_numpy(target[:, b * chunk:(b + 1) * chunk, None].copy())
        optimizer.zero_grad()
        if hidden is not None:
            hidden.detach_()
        logits, hidden = model(x, hidden)
        loss = criterion(logits, y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        pred = torch.sigmoid(logits) > 0.5
        correct += (pred == y.byte()).int().sum().item()
    print(f"epoch {epoch}: loss {np.mean(losses):.4f}, accuracy {100 * correct / series.size:.1f}%, "
          f"hidden requires_grad {hidden.requires_grad}, is_leaf {hidden.is_leaf}")

probe = torch.from_numpy(rng.randint(0, 2, size=(1, 30, 1)).astype(np.float32))
with torch.no_grad():
    out, h = model(probe, None)
pred = torch.where(out > 0, torch.ones_like(out), torch.zeros_like(out))
print(probe.view(1, -1).byte())
print(pred.view(1, -1).byte(), h.shape)
expected = np.roll(probe.numpy(), echo)
expected[:, :echo] = 0
print((expected == pred.numpy()).mean())
