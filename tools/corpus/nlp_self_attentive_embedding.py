"""dataflowr/self-attentive-sentence-embedding (models.py, train.py's Frobenius penalty and training
step): a BiLSTM with multi-hop self-attention over padded token batches, trained with the
||AA^T - I||_F penalty, gradient clipping and Adam; the 'mean' and 'max' pooling variants too.

Adapted: hydra config and JSON data files -> a small in-script config and synthetic reviews;
dropout 0 and every parameter set from a seeded numpy stream, so printed values do not depend on
torch's random stream; a state_dict round trip through an in-memory buffer instead of a file.
"""
import io
import json
import os
import random

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


class Dictionary(object):
    def __init__(self, path=''):
        self.word2idx = dict()
        self.idx2word = list()

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


class BiLSTM(nn.Module):

    def __init__(self, config):
        super(BiLSTM, self).__init__()
        self.drop = nn.Dropout(config['dropout'])
        self.encoder = nn.Embedding(config['ntoken'], config['ninp'])
        self.bilstm = nn.LSTM(config['ninp'], config['nhid'], config['nlayers'], dropout=config['dropout'],
                              bidirectional=True)
        self.nlayers = config['nlayers']
        self.nhid = config['nhid']
        self.pooling = config['pooling']
        self.dictionary = config['dictionary']
#        self.init_weights()
        self.encoder.weight.data[self.dictionary.word2idx['<pad>']] = 0
        if os.path.exists(config['word-vector']):
            print('Loading word vectors from', config['word-vector'])
            vectors = torch.load(config['word-vector'])
            #print(vectors[3], config['ninp'])
            assert vectors[3] >= config['ninp']#2
            vocab = vectors[1]#0
            vectors = vectors[2]#1
            loaded_cnt = 0
            for word in self.dictionary.word2idx:
                if word not in vocab:
                    continue
                real_id = self.dictionary.word2idx[word]
                loaded_id = vocab[word]
                self.encoder.weight.data[real_id] = vectors[loaded_id][:config['ninp']]
                loaded_cnt += 1
            print('%d words from external word vectors loaded.' % loaded_cnt)

    # note: init_range constraints the value of initial weights
    def init_weights(self, init_range=0.1):
        self.encoder.weight.data.uniform_(-init_range, init_range)

    def forward(self, inp, hidden):
        emb = self.drop(self.encoder(inp))
        outp = self.bilstm(emb, hidden)[0]
        if self.pooling == 'mean':
            outp = torch.mean(outp, 0).squeeze()
        elif self.pooling == 'max':
            outp = torch.max(outp, 0)[0].squeeze()
        elif self.pooling == 'all' or self.pooling == 'all-word':
            outp = torch.transpose(outp, 0, 1).contiguous()
        return outp, emb

    def init_hidden( self, bsz ):
        # trick see https://discuss.pytorch.org/t/when-to-initialize-lstm-hidden-state/2323
        weight = next(self.parameters())
        # attention: hidden contains both hidden state and cell state
        return (weight.new_zeros(self.nlayers*2, bsz, self.nhid),
                weight.new_zeros(self.nlayers*2, bsz, self.nhid))
    

class SelfAttentiveEncoder(nn.Module):

    def __init__(self, config):
        super(SelfAttentiveEncoder, self).__init__()
        self.bilstm = BiLSTM(config)
        self.drop = nn.Dropout(config['dropout'])
        self.ws1 = nn.Linear(config['nhid'] * 2, config['attention-unit'], bias=False)
        self.ws2 = nn.Linear(config['attention-unit'], config['attention-hops'], bias=False)
        self.tanh = nn.Tanh()
        self.softmax = nn.Softmax(dim=1)
        self.dictionary = config['dictionary']
#        self.init_weights()
        self.attention_hops = config['attention-hops']

    def init_weights(self, init_range=0.1):
        self.ws1.weight.data.uniform_(-init_range, init_range)
        self.ws2.weight.data.uniform_(-init_range, init_range)

    def forward(self, inp, hidden):
        outp = self.bilstm.forward(inp, hidden)[0]
        size = outp.size()  # [bsz, len, nhid]
        compressed_embeddings = outp.view(-1, size[2])  # [bsz*len, nhid*2]
        transformed_inp = torch.transpose(inp, 0, 1).contiguous()  # [bsz, len]
        transformed_inp = transformed_inp.view(size[0], 1, size[1])  # [bsz, 1, len]
        concatenated_inp = [transformed_inp for i in range(self.attention_hops)]
        concatenated_inp = torch.cat(concatenated_inp, 1)  # [bsz, hop, len]

        hbar = self.tanh(self.ws1(self.drop(compressed_embeddings)))  # [bsz*len, attention-unit]
        alphas = self.ws2(hbar).view(size[0], size[1], -1)  # [bsz, len, hop]
        alphas = torch.transpose(alphas, 1, 2).contiguous()  # [bsz, hop, len]
        penalized_alphas = alphas + (
            -10000 * (concatenated_inp == self.dictionary.word2idx['<pad>']).float())
            # [bsz, hop, len] + [bsz, hop, len]
        alphas = self.softmax(penalized_alphas.view(-1, size[1]))  # [bsz*hop, len]
        alphas = alphas.view(size[0], self.attention_hops, size[1])  # [bsz, hop, len]
        return torch.bmm(alphas, outp), alphas

    def init_hidden(self, bsz):
        return self.bilstm.init_hidden(bsz)


class Classifier(nn.Module):

    def __init__(self, config):
        super(Classifier, self).__init__()
        if config['pooling'] == 'mean' or config['pooling'] == 'max':
            self.encoder = BiLSTM(config)
            self.fc = nn.Linear(config['nhid'] * 2, config['nfc'])
        elif config['pooling'] == 'all':
            self.encoder = SelfAttentiveEncoder(config)
            self.fc = nn.Linear(config['nhid'] * 2 * config['attention-hops'], config['nfc'])
        else:
            raise Exception('Error when initializing Classifier')
        self.drop = nn.Dropout(config['dropout'])
        self.tanh = nn.Tanh()
        self.pred = nn.Linear(config['nfc'], config['class-number'])
        self.dictionary = config['dictionary']
#        self.init_weights()

    def init_weights(self, init_range=0.1):
        self.fc.weight.data.uniform_(-init_range, init_range)
        self.fc.bias.data.fill_(0)
        self.pred.weight.data.uniform_(-init_range, init_range)
        self.pred.bias.data.fill_(0)

    def forward(self, inp, hidden):
        outp, attention = self.encoder.forward(inp, hidden)
        outp = outp.view(outp.size(0), -1)
        fc = self.tanh(self.fc(self.drop(outp)))
        pred = self.pred(self.drop(fc))
        out_bool = True
        if type(self.encoder) == BiLSTM:
            attention = None
            out_bool = False
        return pred, attention, out_bool 

    def init_hidden(self, bsz):
        return self.encoder.init_hidden(bsz)



def Frobenius(mat):
    size = mat.size()
    if len(size) == 3:  # batched matrix
        ret = (torch.sum(torch.sum((mat ** 2), 1), 1).squeeze() + 1e-10) ** 0.5
        return torch.sum(ret) / size[0]
    else:
        raise Exception('matrix for computing Frobenius norm should be with 3 dims')


def package(data):
    """Package data for training / evaluation."""
    data = list(map(lambda x: json.loads(x), data))
    dat = list(map(lambda x: list(map(lambda y: dictionary.word2idx[y], x['text'])), data))
    maxlen = 0
    for item in dat:
        maxlen = max(maxlen, len(item))
    targets = list(map(lambda x: x['label'], data))
    maxlen = min(maxlen, 500)
    for i in range(len(data)):
        if maxlen < len(dat[i]):
            dat[i] = dat[i][:maxlen]
        else:
            for j in range(maxlen - len(dat[i])):
                dat[i].append(dictionary.word2idx['<pad>'])
    dat = torch.LongTensor(dat)
    targets = torch.LongTensor(targets)
    return dat.t(), targets


rng = random.Random(9)
rs = np.random.RandomState(0)
words = ['<pad>'] + 'good bad great awful food service place nice slow fast tasty bland love hate the was'.split()
dictionary = Dictionary()
for w in words:
    dictionary.add_word(w)
lines = []
for _ in range(24):
    t = [rng.choice(words[1:]) for _ in range(rng.randint(3, 9))]
    lines.append(json.dumps({'text': t, 'label': min(2, sum(w in ('good', 'great', 'nice', 'love') for w in t))}))

for pooling in ['all', 'mean', 'max']:
    config = {'dropout': 0.0, 'ntoken': len(dictionary), 'nlayers': 2, 'nhid': 8, 'ninp': 6,
              'pooling': pooling, 'attention-unit': 10, 'attention-hops': 3, 'nfc': 12,
              'dictionary': dictionary, 'word-vector': '', 'class-number': 3}
    model = Classifier(config)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy(rs.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
    batch_size, hops = 8, config['attention-hops']
    I = torch.zeros(batch_size, hops, hops)
    for i in range(batch_size):
        for j in range(hops):
            I.data[i][j][j] = 1
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=0.01, betas=[0.9, 0.999], eps=1e-8, weight_decay=0)
    model.train()
    for epoch in range(3):
        total_loss = 0.0
        for i in range(0, len(lines), batch_size):
            data, targets = package(lines[i:i + batch_size])
            hidden = model.init_hidden(data.size(1))
            output, attention, out_bool = model.forward(data, hidden)
            loss = criterion(output.view(data.size(1), -1), targets)
            if out_bool:  # add penalization term
                attentionT = torch.transpose(attention, 1, 2).contiguous()
                extra_loss = Frobenius(torch.bmm(attention, attentionT) - I[:attention.size(0)])
                loss += 1.0 * extra_loss
            optimizer.zero_grad()
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            total_loss += loss.data.item()
        print(pooling, epoch, round(total_loss, 4), round(float(norm), 4))
    model.eval()
    with torch.no_grad():
        data, targets = package(lines[:batch_size])
        output, attention, out_bool = model(data, model.init_hidden(data.size(1)))
        print(pooling, output.shape, torch.max(output, 1)[1].tolist(), targets.tolist())
        if out_bool:
            print('attention rows sum to 1:', torch.allclose(attention.sum(2), torch.ones(batch_size, hops)))
            print('pad positions get no attention:', float(attention[data.t().unsqueeze(1).expand_as(attention) == 0].max()) < 1e-3)
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    clone = Classifier(config)
    clone.load_state_dict(torch.load(buf))
    clone.eval()
    with torch.no_grad():
        print(pooling, 'reloaded model agrees:', torch.equal(clone(data, clone.init_hidden(data.size(1)))[0], output))
