"""In the style of mrzhuzhe/pepper torchText/ (the text_sentiment_ngrams and transformer LM
tutorials rewritten without torchtext): a collate_fn building EmbeddingBag offsets with
torch.tensor(lengths[:-1]).cumsum(dim=0), nn.EmbeddingBag(sparse=True) + Linear trained with SGD
(lr 4.0) and StepLR, the sparse gradient's type/layout/indices, accuracy by argmax, the
"loss += loss.item()" evaluation slip under no_grad; then a TransformerEncoder language model with
a float -inf/0 square subsequent mask, a registered sinusoid buffer, bptt batches from a
batchified token stream, clip_grad_norm_, scheduler.get_lr() and perplexities.  A synthetic data
set replaces AG_NEWS / WikiText2; weights from numpy; dropout 0."""
import math

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader


def fill(module, seed, scale):
    rng = np.random.RandomState(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))


class TextSentiment(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=True)
        self.fc = nn.Linear(embed_dim, num_class)

    def forward(self, text, offsets):
        return self.fc(self.embedding(text, offsets))


rng = np.random.RandomState(0)
data = []
for _ in range(40):
    label = int(rng.randint(0, 4))
    data.append((label, torch.tensor(rng.randint(label * 6, label * 6 + 9, size=int(rng.randint(2, 7))))))


def generate_batch(batch):
    label = torch.tensor([entry[0] for entry in batch])
    text = [entry[1] for entry in batch]
    offsets = [0] + [len(entry) for entry in text]
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    return torch.cat(text), offsets, label


model = TextSentiment(30, 8, 4)
fill(model, 1, 0.5)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=4.0)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.9)
text, offsets, cls = generate_batch(data[:4])
print(text, offsets, offsets.dtype, cls)
for epoch in range(3):
    train_loss, train_acc = 0, 0
    for i, (text, offsets, cls) in enumerate(DataLoader(data[:32], batch_size=8, collate_fn=generate_batch)):
        optimizer.zero_grad()
        output = model(text, offsets)
        loss = criterion(output, cls)
        train_loss += loss.item()
        loss.backward()
        if epoch == 0 and i == 0:
            g = model.embedding.weight.grad
            print(type(g), g.layout, g.is_sparse, g.shape, g.coalesce().indices().tolist())
            print(g.to_dense()[text[:3]].sum(1))
        optimizer.step()
        train_acc += (output.argmax(1) == cls).sum().item()
    scheduler.step()
    loss, acc = 0, 0
    for text, offsets, cls in DataLoader(data[32:], batch_size=8, collate_fn=generate_batch):
        with torch.no_grad():
            output = model(text, offsets)
            loss = criterion(output, cls)
            loss += loss.item()
            acc += (output.argmax(1) == cls).sum().item()
    valid_loss = loss / len(data[32:])
    print(f'Epoch {epoch + 1} lr {scheduler.get_last_lr()[0]:.4f}\tLoss: {train_loss / 32:.4f}(train)'
          f'\t|\tAcc: {train_acc / 32 * 100:.1f}%(train)\t{valid_loss:.4f}(valid) {acc}')
    print(type(valid_loss).__name__, valid_loss.requires_grad)
with torch.no_grad():
    out = model(torch.tensor([3, 4, 5, 12]), torch.tensor([0]))
print(out.argmax(1).item() + 1, out)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=64):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer('pe', pe.unsqueeze(0).transpose(0, 1))

    def forward(self, x):
        return self.dropout(x + self.pe[:x.size(0), :])


class TransformerModel(nn.Module):
    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
        super().__init__()
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        layer = nn.TransformerEncoderLayer(ninp, nhead, nhid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(layer, nlayers, enable_nested_tensor=False)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)

    def _generate_square_subsequent_mask(self, sz):
        mask = (torch.triu(torch.ones(sz, sz)) == 1).transpose(0, 1)
        return mask.float().masked_fill(mask == 0, float('-inf')).masked_fill(mask == 1, float(0.0))

    def forward(self, src):
        if self.src_mask is None or self.src_mask.size(0) != len(src):
            self.src_mask = self._generate_square_subsequent_mask(len(src))
        src = self.pos_encoder(self.encoder(src) * math.sqrt(self.ninp))
        return self.decoder(self.transformer_encoder(src, self.src_mask))


bptt = 6


def get_batch(source, i):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].view(-1)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous()


stream = torch.tensor(np.concatenate([np.arange(k, k + 5) % 20 for k in rng.randint(0, 20, 60)]))
train_data, val_data = batchify(stream[:240], 4), batchify(stream[240:], 2)
print(train_data.shape, val_data.shape, train_data[:2])
ntokens = 20
lm = TransformerModel(ntokens, 16, 2, 16, 2, dropout=0.0)
fill(lm, 2, 0.2)
print(lm._generate_square_subsequent_mask(4))
opt = torch.optim.SGD(lm.parameters(), lr=5.0)
sched = torch.optim.lr_scheduler.StepLR(opt, 1.0, gamma=0.95)


def evaluate(eval_model, data_source):
    eval_model.eval()
    total_loss = 0.
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, bptt):
            data, targets = get_batch(data_source, i)
            total_loss += len(data) * criterion(eval_model(data).view(-1, ntokens), targets).item()
    return total_loss / (len(data_source) - 1)


for epoch in range(1, 3):
    lm.train()
    total_loss = 0.
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        data, targets = get_batch(train_data, i)
        opt.zero_grad()
        loss = criterion(lm(data).view(-1, ntokens), targets)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(lm.parameters(), 0.5)
        opt.step()
        total_loss += loss.item()
        if batch % 4 == 0 and batch > 0:
            cur = total_loss / 4
            print('| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} | loss {:5.2f} | ppl {:8.2f} | norm {:.3f}'.format(
                epoch, batch, len(train_data) // bptt, sched.get_lr()[0], cur, math.exp(cur), norm))
            total_loss = 0
    val_loss = evaluate(lm, val_data)
    print('| end of epoch {:3d} | valid loss {:5.2f} | valid ppl {:8.2f}'.format(epoch, val_loss, math.exp(val_loss)))
    sched.step()
print(lm.src_mask.shape, sched.get_last_lr())
