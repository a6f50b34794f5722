"""rasbt/deeplearning-models rnn_lstm_bi_imdb / rnn_gru_packed_imdb style: a legacy-torchtext
flow written out by hand (token lists bucketed by length, sorted longest-first within a batch,
padded to [seq_len, batch] with a <pad> index), an Embedding with padding_idx, a 2-layer
bidirectional LSTM and a GRU over pack_padded_sequence, the last layer's forward and backward
hidden states concatenated into a binary logit trained with BCE-with-logits and Adam. Data come
from numpy's seeded generator and weights from a fixed pattern: the run is seed-free."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(123)
VOCAB, PAD, EMB, HID, BATCH = 40, 1, 8, 6, 6


def make_examples(n):
    out = []
    for _ in range(n):
        label = float(rng.random() < 0.5)
        length = int(rng.integers(2, 9))
        low = 2 if label else 20
        out.append((rng.integers(low, low + 20, length).tolist(), label))
    return out


def buckets(examples):
    examples = sorted(examples, key=lambda e: len(e[0]))
    for s in range(0, len(examples), BATCH):
        chunk = sorted(examples[s:s + BATCH], key=lambda e: -len(e[0]))
        lengths = torch.tensor([len(t) for t, _ in chunk])
        text = torch.full((int(lengths[0]), len(chunk)), PAD, dtype=torch.long)
        for j, (toks, _) in enumerate(chunk):
            text[:len(toks), j] = torch.tensor(toks)
        yield text, lengths, torch.tensor([lab for _, lab in chunk])


def fixed_weights(module):
    with torch.no_grad():
        for k, (name, p) in enumerate(module.named_parameters()):
            p.copy_(torch.linspace(-0.4, 0.4, p.numel()).view_as(p).roll(3 * k))
    return module


class RNN(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, EMB, padding_idx=PAD)
        if cell == 'lstm':
            self.rnn = nn.LSTM(EMB, HID, num_layers=2, bidirectional=True)
        else:
            self.rnn = nn.GRU(EMB, HID, bidirectional=True)
        self.fc = nn.Linear(2 * HID, 1)

    def forward(self, text, text_length):
        embedded = self.embedding(text)
        packed = nn.utils.rnn.pack_padded_sequence(embedded, text_length)
        packed_output, hidden = self.rnn(packed)
        if isinstance(hidden, tuple):
            hidden = hidden[0]
        hidden = torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)
        return self.fc(hidden).view(-1)


train, test = make_examples(24), make_examples(8)
text, lengths, labels = next(buckets(train))
print('Text matrix size:', text.size(), 'lengths:', lengths.tolist())

for cell in ('lstm', 'gru'):
    model = fixed_weights(RNN(cell))
    with torch.no_grad():
        model.embedding.weight[PAD].zero_()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(2):
        model.train()
        total = 0.0
        for text, lengths, labels in buckets(train):
            logits = model(text, lengths)
            cost = F.binary_cross_entropy_with_logits(logits, labels)
            optimizer.zero_grad()
            cost.backward()
            optimizer.step()
            total += cost.item()
        model.eval()
        with torch.no_grad():
            correct = sum(((model(t, l) > 0).float() == y).sum().item()
                          for t, l, y in buckets(test))
        print(f'{cell} epoch {epoch + 1:02d} | train cost {total:.4f} | '
              f'test acc {100 * correct / len(test):.2f}%')
    print(cell, 'pad row grad stays zero:', bool((model.embedding.weight.grad[PAD] == 0).all()))
    out, _ = model.rnn(nn.utils.rnn.pack_padded_sequence(model.embedding(text), lengths))
    padded, out_lengths = nn.utils.rnn.pad_packed_sequence(out)
    print(cell, 'padded output', tuple(padded.shape), out_lengths.tolist(),
          'grad_fn:', type(padded.grad_fn).__name__)
    print(cell, 'fc weight:', model.fc.weight.data.view(-1)[:4])
