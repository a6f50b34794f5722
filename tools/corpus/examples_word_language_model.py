"""pytorch/examples-style word language model: Embedding + LSTM/GRU, batchify, BPTT, clip_grad_norm_."""
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ['LSTM', 'GRU']:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            nonlinearity = {'RNN_TANH': 'tanh', 'RNN_RELU': 'relu'}[rnn_type]
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == 'LSTM':
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        else:
            return weight.new_zeros(self.nlayers, bsz, self.nhid)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    data = data.view(bsz, -1).t().contiguous()
    return data


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)


bptt = 10


def get_batch(source, i):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


torch.manual_seed(1111)
device = torch.device("cpu")
words = ("the cat sat on the mat and the dog sat on the log " * 20).split()
vocab = sorted(set(words))
word2idx = {w: i for i, w in enumerate(vocab)}
ids = torch.tensor([word2idx[w] for w in words], dtype=torch.int64)
train_data = batchify(ids, 8).to(device)
print(train_data.shape, train_data.dtype, train_data[:3, 0].tolist())

for rnn_type in ['LSTM', 'GRU', 'RNN_TANH']:
    ntokens = len(vocab)
    model = RNNModel(rnn_type, ntokens, 16, 32, 2, dropout=0.2).to(device)
    criterion = nn.NLLLoss()
    lr = 5.0
    start_time = time.time()
    epoch_losses = []
    for epoch in range(1, 5):
        model.train()
        total_loss = 0.
        hidden = model.init_hidden(8)
        nb = 0
        for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
            data, targets = get_batch(train_data, i)
            model.zero_grad()
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            total_loss += loss.item()
            nb += 1
        epoch_losses.append(total_loss / nb)
    elapsed = time.time() - start_time
    print('| {} | batches {} | ppl decreased {} | final ppl below 10: {}'.format(
        rnn_type, nb, epoch_losses[-1] < epoch_losses[0], math.exp(epoch_losses[-1]) < 10))
    h = model.init_hidden(3)
    shapes = [t.shape for t in h] if isinstance(h, tuple) else [h.shape]
    print(shapes)
