"""Idioms of lecture-style character RNNs ("hihell" -> "ihello"): one-hot rows from a list of
lists, nn.RNN(batch_first=True) stepped one character at a time with the hidden state threaded
through, `loss = 0` accumulated with criterion calls, sys.stdout.write(idx2char[idx.data[0]]),
'%1.3f' % loss on a tensor that requires grad, an nn.Embedding variant over the whole sequence,
and pack_padded_sequence over sorted lengths.  Weights are set from deterministic formulas, so
nothing depends on the random stream."""
import sys

import torch
import torch.nn as nn
from torch.autograd import Variable
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

idx2char = ['h', 'i', 'e', 'l', 'o']
x_data = [0, 1, 0, 2, 3, 3]   # hihell
one_hot_lookup = [[1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 1, 0], [0, 0, 0, 0, 1]]
y_data = [1, 0, 2, 3, 3, 4]   # ihello
x_one_hot = [one_hot_lookup[x] for x in x_data]
inputs = Variable(torch.Tensor(x_one_hot))
labels = Variable(torch.LongTensor(y_data))


def deterministic_(module, scale):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            k = torch.arange(p.numel(), dtype=torch.float32).view(p.shape)
            p.copy_(torch.sin(k * 0.7 + i) * scale)


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.rnn = nn.RNN(input_size=5, hidden_size=5, batch_first=True)

    def forward(self, hidden, x):
        x = x.view(1, 1, 5)
        out, hidden = self.rnn(x, hidden)
        return hidden, out.view(-1, 5)

    def init_hidden(self):
        return Variable(torch.zeros(1, 1, 5))


model = Model()
deterministic_(model, 0.5)
print(model)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
for epoch in range(12):
    optimizer.zero_grad()
    loss = 0
    hidden = model.init_hidden()
    sys.stdout.write("predicted string: ")
    for input, label in zip(inputs, labels):
        hidden, output = model(hidden, input)
        val, idx = output.max(1)
        sys.stdout.write(idx2char[idx.data[0]])
        loss += criterion(output, torch.LongTensor([label]))
    print(", epoch: %d, loss: %1.3f" % (epoch + 1, loss))
    loss.backward()
    optimizer.step()


class EmbModel(nn.Module):
    def __init__(self):
        super(EmbModel, self).__init__()
        self.embedding = nn.Embedding(5, 10)
        self.rnn = nn.RNN(input_size=10, hidden_size=5, batch_first=True)
        self.fc = nn.Linear(5, 5)

    def forward(self, x):
        h_0 = Variable(torch.zeros(1, x.size(0), 5))
        emb = self.embedding(x)
        emb = emb.view(1, x.size(1), -1)
        out, _ = self.rnn(emb, h_0)
        return self.fc(out.view(-1, 5))


emb_model = EmbModel()
deterministic_(emb_model, 0.4)
optimizer = torch.optim.Adam(emb_model.parameters(), lr=0.1)
for epoch in range(10):
    outputs = emb_model(Variable(torch.LongTensor([x_data])))
    optimizer.zero_grad()
    loss = criterion(outputs, labels)
    loss.backward()
    optimizer.step()
    _, idx = outputs.max(1)
    idx = idx.data.numpy()
    result_str = [idx2char[c] for c in idx.squeeze()]
    print("epoch: %d, loss: %1.3f" % (epoch + 1, loss.item()), "Predicted string: ", ''.join(result_str))

# pack_padded_sequence over names sorted by length
names = ['adylov', 'solan', 'hard', 'san']
vectorized = [[ord(c) for c in name] for name in names]
seq_lengths = torch.LongTensor([len(s) for s in vectorized])
seq_tensor = Variable(torch.zeros((len(vectorized), seq_lengths.max()))).long()
for i, (seq, seqlen) in enumerate(zip(vectorized, seq_lengths)):
    seq_tensor[i, :seqlen] = torch.LongTensor(seq)
seq_lengths, perm_idx = seq_lengths.sort(0, descending=True)
seq_tensor = seq_tensor[perm_idx]
print(seq_tensor.size(), seq_lengths)
seq_tensor = seq_tensor.transpose(0, 1)
embed = nn.Embedding(128, 3)
lstm = nn.LSTM(input_size=3, hidden_size=2)
deterministic_(embed, 1.0)
deterministic_(lstm, 0.6)
packed = pack_padded_sequence(embed(seq_tensor), seq_lengths.data.numpy())
print(type(packed).__name__, packed.batch_sizes)
out, (h, c) = lstm(packed)
unpacked, unpacked_len = pad_packed_sequence(out)
print(unpacked.size(), unpacked_len)
print(unpacked[:, 0])
print(h)
