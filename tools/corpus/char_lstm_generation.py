"""A char-level LSTM/GRU language model (nn.LSTM, nn.GRU with batch_first), trained and sampled."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(42)
text = "hello world. hello there. well hello. " * 15
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
itos = {i: c for c, i in stoi.items()}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
print(len(chars), data.shape)


class CharModel(nn.Module):
    def __init__(self, vocab, hidden=48, cell='lstm', num_layers=1):
        super().__init__()
        self.embed = nn.Embedding(vocab, 16)
        rnn_cls = nn.LSTM if cell == 'lstm' else nn.GRU
        self.rnn = rnn_cls(16, hidden, num_layers=num_layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x, state=None):
        out, state = self.rnn(self.embed(x), state)
        return self.head(out), state


seq_len, batch = 20, 16
for cell in ['lstm', 'gru']:
    model = CharModel(len(chars), cell=cell)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for step in range(60):
        starts = torch.randint(0, len(data) - seq_len - 1, (batch,))
        x = torch.stack([data[s:s + seq_len] for s in starts])
        y = torch.stack([data[s + 1:s + seq_len + 1] for s in starts])
        logits, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, len(chars)), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    print(cell, 'loss decreased:', losses[-1] < losses[0], '| below 1.0:', losses[-1] < 1.0)

    model.eval()
    with torch.no_grad():
        idx = torch.tensor([[stoi['h']]])
        state = None
        out = ['h']
        for _ in range(20):
            logits, state = model(idx, state)
            probs = F.softmax(logits[:, -1], dim=-1)
            idx = torch.multinomial(probs, 1)
            out.append(itos[idx.item()])
    print(cell, 'sampled', len(''.join(out)), 'chars')
    if cell == 'lstm':
        h, c = state
        print(h.shape, c.shape)
    else:
        print(state.shape)

lstm = nn.LSTM(input_size=4, hidden_size=3, num_layers=2, batch_first=True, bidirectional=True)
out, (h, c) = lstm(torch.zeros(5, 7, 4))
print(out.shape, h.shape, c.shape)
print([name for name, _ in lstm.named_parameters()][:4])
gru = nn.GRU(4, 3)
out, h = gru(torch.zeros(7, 5, 4), torch.zeros(1, 5, 3))
print(out.shape, h.shape, gru.weight_ih_l0.shape)
cell = nn.GRUCell(4, 3)
print(cell(torch.zeros(2, 4)).shape)
