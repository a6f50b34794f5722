"""A word-level Transformer language model: a subclass of nn.Transformer that uses only its encoder
(the decoder it builds stays unused), a PositionalEncoding buffer sliced per batch, a causal mask
built as torch.log(torch.tril(ones)) (0 / -inf floats), log_softmax + NLLLoss, clip_grad_norm_ and a
hand-written SGD step (p.data.add_(p.grad, alpha=-lr)), lr divided by 4 when validation stalls,
the whole model pickled with torch.save and reloaded with torch.load(weights_only=False), then
words generated one at a time from exp(log-probabilities / temperature).

Source: jin-li/pytorch-tutorial, T07_language_transformer/model.py, data.py, language_transformer.py
and generate_text.py.  Adapted: WikiText-2 replaced by three small synthetic text files written to
a temporary directory (numpy-drawn words); emsize/nhid 200 -> 16, 2 epochs, batch 4, seq_len 8;
every parameter drawn from numpy and dropout off (nn.Transformer's layers keep their default 0.1;
their random stream is library-specific); the checkpoint kept in an io.BytesIO; timing prints
dropped; torch.multinomial's draw of the next word and torch.randint's first word made with numpy.
"""
import io
import math
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

_rng = np.random.RandomState(0)


# ----------------------------------------------------------------------------- model.py
class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super(PositionalEncoding, self).__init__()
        self.dropout = nn.Dropout(p=dropout)

        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0).transpose(0, 1)
        self.register_buffer('pe', pe)

    def forward(self, x):
        x = x + self.pe[:x.size(0), :]
        return self.dropout(x)


class TransformerModel(nn.Transformer):
    """Container module with an encoder, a recurrent or transformer module, and a decoder."""

    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
        super(TransformerModel, self).__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid,
                                               num_encoder_layers=nlayers)
        self.model_type = 'Transformer'
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)

        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)

        self.init_weights()

    def _generate_square_subsequent_mask(self, sz):
        return torch.log(torch.tril(torch.ones(sz, sz)))

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, src, has_mask=True):
        if has_mask:
            device = src.device
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                mask = self._generate_square_subsequent_mask(len(src)).to(device)
                self.src_mask = mask
        else:
            self.src_mask = None

        src = self.input_emb(src) * math.sqrt(self.ninp)
        src = self.pos_encoder(src)
        output = self.encoder(src, mask=self.src_mask)
        output = self.decoder(output)
        return F.log_softmax(output, dim=-1)


# ----------------------------------------------------------------------------- data.py
class Dictionary(object):
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


class Corpus(object):
    def __init__(self, path):
        self.dictionary = Dictionary()
        self.train = self.tokenize(os.path.join(path, 'train.txt'))
        self.valid = self.tokenize(os.path.join(path, 'valid.txt'))
        self.test = self.tokenize(os.path.join(path, 'test.txt'))

    def tokenize(self, path):
        """Tokenizes a text file."""
        assert os.path.exists(path)
        with open(path, 'r', encoding="utf8") as f:
            for line in f:
                words = line.split() + ['<eos>']
                for word in words:
                    self.dictionary.add_word(word)

        with open(path, 'r', encoding="utf8") as f:
            idss = []
            for line in f:
                words = line.split() + ['<eos>']
                ids = []
                for word in words:
                    ids.append(self.dictionary.word2idx[word])
                idss.append(torch.tensor(ids).type(torch.int64))
            ids = torch.cat(idss)

        return ids


# ----------------------------------------------------------------------------- language_transformer.py
def batchify(device, data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    data = data.view(bsz, -1).t().contiguous()
    return data.to(device)


def get_batch(source, i, seq_len):
    seq_len = min(seq_len, len(source) - 1 - i)
    data = source[i:i+seq_len]
    target = source[i+1:i+1+seq_len].view(-1)
    return data, target


def evaluate(device, model, eval_data, criterion, seq_len, ntokens):
    model.eval()
    total_loss = 0.
    with torch.no_grad():
        for i in range(0, eval_data.size(0) - 1, seq_len):
            data, targets = get_batch(eval_data, i, seq_len)
            data, targets = data.to(device), targets.to(device)
            output = model(data)
            output = output.view(-1, ntokens)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(eval_data) - 1)


def train(device, model, epoch, train_data, criterion, lr, log_interval, seq_len, ntokens):
    model.train()
    total_loss = 0.
    loss_all = []
    data_cnt = []
    for batch, i in enumerate(range(0, train_data.size(0) - 1, seq_len)):
        data, targets = get_batch(train_data, i, seq_len)
        data, targets = data.to(device), targets.to(device)
        model.zero_grad()
        output = model(data)
        output = output.view(-1, ntokens)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        total_loss += loss.item()
        loss_all.append(loss.item())
        data_cnt.append(len(data))
        if batch % log_interval == 0 and batch > 0:
            cur_loss = total_loss / log_interval
            print('| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} | '
                  'loss {:5.2f} | ppl {:8.2f}'.format(
                      epoch, batch, len(train_data) // seq_len, lr, cur_loss, math.exp(cur_loss)))
            total_loss = 0
    return np.average(loss_all, weights=data_cnt)


def draw_parameters(model):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy(_rng.uniform(-0.1, 0.1, tuple(p.shape)).astype(np.float32)))
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
        if isinstance(m, nn.MultiheadAttention):
            m.dropout = 0.0


def language_model(device, data_source, epochs, batch_size, eval_batch_size, lr, emsize, nhead, nhid,
                   nlayers, seq_len, dropout, checkpoint):
    corpus = Corpus(data_source)
    ntokens = len(corpus.dictionary)
    print('tokens', ntokens, corpus.train.shape, corpus.valid.dtype)
    train_data = batchify(device, corpus.train, batch_size)
    val_data = batchify(device, corpus.valid, eval_batch_size)
    test_data = batchify(device, corpus.test, eval_batch_size)
    print('batches', tuple(train_data.shape), tuple(val_data.shape), train_data.is_contiguous())
    model = TransformerModel(ntokens, emsize, nhead, nhid, nlayers, dropout).to(device)
    draw_parameters(model)
    print('parameters', sum(p.numel() for p in model.parameters()), type(model.decoder).__name__,
          len(model.encoder.layers))
    criterion = nn.NLLLoss()
    best_val_loss = None
    train_losses = []
    val_losses = []
    for epoch in range(1, epochs+1):
        train_loss_tmp = train(device, model, epoch, train_data, criterion, lr, 3, seq_len, ntokens)
        val_loss_tmp = evaluate(device, model, val_data, criterion, seq_len, ntokens)
        train_losses.append(train_loss_tmp)
        val_losses.append(val_loss_tmp)
        print('-' * 89)
        print('| end of epoch {:3d} | valid loss {:5.2f} | valid ppl {:8.2f}'.format(
            epoch, val_loss_tmp, math.exp(val_loss_tmp)))
        print('-' * 89)
        if not best_val_loss or val_loss_tmp < best_val_loss:
            checkpoint.seek(0)
            checkpoint.truncate()
            torch.save(model, checkpoint)
            best_val_loss = val_loss_tmp
        else:
            lr /= 4.0
    print('mask', model._generate_square_subsequent_mask(3), model.src_mask.shape)
    test_loss = evaluate(device, model, test_data, criterion, seq_len, ntokens)
    print('=' * 89)
    print('| End of training | test loss {:5.2f} | test ppl {:8.2f}'.format(test_loss, math.exp(test_loss)))
    print('=' * 89)
    return train_losses, val_losses, corpus


# ----------------------------------------------------------------------------- generate_text.py
def generate_text(device, checkpoint, corpus, words, temperature, log_interval):
    checkpoint.seek(0)
    model = torch.load(checkpoint, map_location=device, weights_only=False)
    model.eval()
    print(type(model).__name__, model.src_mask is None)

    ntokens = len(corpus.dictionary)
    input = torch.tensor([[int(_rng.randint(ntokens))]], dtype=torch.long).to(device)

    generated_text = []
    with torch.no_grad():
        for i in range(words):
            output = model(input, False)
            word_weights = output[-1].squeeze().div(temperature).exp().cpu()
            probs = (word_weights / word_weights.sum()).double().numpy()
            word_idx = torch.tensor(_rng.choice(ntokens, p=probs / probs.sum()))
            word_tensor = torch.Tensor([[word_idx]]).long().to(device)
            input = torch.cat([input, word_tensor], 0)

            word = corpus.dictionary.idx2word[word_idx]
            generated_text.append(word)

            if i % log_interval == 0:
                print('| Generated {}/{} words'.format(i, words))
    return generated_text, input


torch.manual_seed(1111)
device = torch.device("cpu")
words = ["w%d" % i for i in range(30)]
with tempfile.TemporaryDirectory() as data_dir:
    for name, lines in [('train', 40), ('valid', 12), ('test', 12)]:
        with open(os.path.join(data_dir, name + '.txt'), 'w') as f:
            for _ in range(lines):
                f.write(' '.join(words[j] for j in _rng.randint(0, 30, _rng.randint(3, 9))) + '\n')
    checkpoint = io.BytesIO()
    train_losses, val_losses, corpus = language_model(
        device, data_dir, epochs=2, batch_size=4, eval_batch_size=2, lr=5.0, emsize=16, nhead=2,
        nhid=16, nlayers=2, seq_len=8, dropout=0.2, checkpoint=checkpoint)
print('train', [round(float(v), 4) for v in train_losses], type(train_losses[0]).__name__)
print('valid', [round(v, 4) for v in val_losses])
text, input = generate_text(device, checkpoint, corpus, words=12, temperature=1.0, log_interval=5)
print(' '.join(text))
print(input.shape, input.dtype)
