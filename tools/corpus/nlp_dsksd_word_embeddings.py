"""DSKSD/DeepNLP-models-Pytorch notebooks 01-03: word2vec skip-gram with the full softmax,
skip-gram with negative sampling (LogSigmoid of bmm scores) and GloVe's weighted least squares
on co-occurrence counts, each trained with Adam on a tiny corpus, then F.cosine_similarity
neighbours as the notebooks compute them.

Adapted: nltk's Gutenberg corpus -> a small synthetic corpus, the batch loss read with
.tolist() (a 0-d loss today), fewer epochs, CPU only, and every parameter set from a seeded
numpy stream after construction so that printed values do not depend on torch's random stream.
"""
import random
from collections import Counter
from itertools import combinations_with_replacement

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.autograd import Variable

flatten = lambda l: [item for sublist in l for item in sublist]
random.seed(1024)
rs = np.random.RandomState(0)
USE_CUDA = torch.cuda.is_available()
LongTensor = torch.LongTensor
FloatTensor = torch.FloatTensor


def numpy_init(model):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy(rs.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))


def getBatch(batch_size, train_data):
    random.shuffle(train_data)
    sindex = 0
    eindex = batch_size
    while eindex < len(train_data):
        batch = train_data[sindex: eindex]
        temp = eindex
        eindex = eindex + batch_size
        sindex = temp
        yield batch
    if eindex >= len(train_data):
        batch = train_data[sindex:]
        yield batch


def prepare_sequence(seq, word2index):
    idxs = list(map(lambda w: word2index[w] if word2index.get(w) is not None else word2index["<UNK>"], seq))
    return Variable(LongTensor(idxs))


def prepare_word(word, word2index):
    return Variable(LongTensor([word2index[word]]) if word2index.get(word) is not None else LongTensor([word2index["<UNK>"]]))


words = "the whale ship sea captain white boat water old man call me years ago little money purse shore".split()
corpus = [[random.choice(words) for _ in range(random.randint(4, 9))] for _ in range(40)]
vocab = sorted(set(flatten(corpus)))
vocab.append('<UNK>')
word2index = {'<UNK>': 0}
for vo in vocab:
    if word2index.get(vo) is None:
        word2index[vo] = len(word2index)
WINDOW_SIZE = 2
windows = flatten([[tuple((['<DUMMY>'] * WINDOW_SIZE + c + ['<DUMMY>'] * WINDOW_SIZE)[i:i + 2 * WINDOW_SIZE + 1])
                    for i in range(len(c))] for c in corpus])
pairs = []
for window in windows:
    for i in range(WINDOW_SIZE * 2 + 1):
        if i == WINDOW_SIZE or window[i] == '<DUMMY>':
            continue
        pairs.append((window[WINDOW_SIZE], window[i]))
print(len(vocab), len(pairs), pairs[:3])
train_data = [(prepare_word(a, word2index).view(1, -1), prepare_word(b, word2index).view(1, -1)) for a, b in pairs]


def word_similarity(model, target, vocab):
    target_V = model.prediction(prepare_word(target, word2index))
    similarities = []
    for i in range(len(vocab)):
        if vocab[i] == target:
            continue
        vector = model.prediction(prepare_word(list(vocab)[i], word2index))
        cosine_sim = F.cosine_similarity(target_V, vector).data.tolist()[0]
        similarities.append([vocab[i], round(cosine_sim, 4)])
    return sorted(similarities, key=lambda x: x[1], reverse=True)[:3]


class Skipgram(nn.Module):
    
    def __init__(self, vocab_size, projection_dim):
        super(Skipgram,self).__init__()
        self.embedding_v = nn.Embedding(vocab_size, projection_dim)
        self.embedding_u = nn.Embedding(vocab_size, projection_dim)

        self.embedding_v.weight.data.uniform_(-1, 1) # init
        self.embedding_u.weight.data.uniform_(0, 0) # init
        #self.out = nn.Linear(projection_dim,vocab_size)
    def forward(self, center_words,target_words, outer_words):
        center_embeds = self.embedding_v(center_words) # B x 1 x D
        target_embeds = self.embedding_u(target_words) # B x 1 x D
        outer_embeds = self.embedding_u(outer_words) # B x V x D
        
        scores = target_embeds.bmm(center_embeds.transpose(1, 2)).squeeze(2) # Bx1xD * BxDx1 => Bx1
        norm_scores = outer_embeds.bmm(center_embeds.transpose(1, 2)).squeeze(2) # BxVxD * BxDx1 => BxV
        
        nll = -torch.mean(torch.log(torch.exp(scores)/torch.sum(torch.exp(norm_scores), 1).unsqueeze(1))) # log-softmax
        
        return nll # negative log likelihood
    
    def prediction(self, inputs):
        embeds = self.embedding_v(inputs)
        
        return embeds 


model = Skipgram(len(word2index), 10)
numpy_init(model)
optimizer = optim.Adam(model.parameters(), lr=0.01)
for epoch in range(3):
    losses = []
    for i, batch in enumerate(getBatch(64, train_data)):
        inputs, targets = zip(*batch)
        inputs = torch.cat(inputs)  # B x 1
        targets = torch.cat(targets)  # B x 1
        vocabs = prepare_sequence(list(vocab), word2index).expand(inputs.size(0), len(vocab))  # B x V
        model.zero_grad()
        loss = model(inputs, targets, vocabs)
        loss.backward()
        optimizer.step()
        losses.append(loss.data.tolist())
    print("skipgram epoch : %d, mean_loss : %.04f" % (epoch, np.mean(losses)))
print(word_similarity(model, 'whale', vocab))

word_count = Counter(flatten(corpus))
Z = 0.001
num_total_words = sum([c for w, c in word_count.items()])
unigram_table = []
for vo in vocab[:-1]:
    unigram_table.extend([vo] * int(((word_count[vo] / num_total_words) ** 0.75) / Z))
print(len(vocab), len(unigram_table))


def negative_sampling(targets, unigram_table, k):
    batch_size = targets.size(0)
    neg_samples = []
    for i in range(batch_size):
        nsample = []
        target_index = targets[i].data.cpu().tolist()[0] if USE_CUDA else targets[i].data.tolist()[0]
        while len(nsample) < k: # num of sampling
            neg = random.choice(unigram_table)
            if word2index[neg] == target_index:
                continue
            nsample.append(neg)
        neg_samples.append(prepare_sequence(nsample, word2index).view(1, -1))
    
    return torch.cat(neg_samples)


class SkipgramNegSampling(nn.Module):
    
    def __init__(self, vocab_size, projection_dim):
        super(SkipgramNegSampling, self).__init__()
        self.embedding_v = nn.Embedding(vocab_size, projection_dim) # center embedding
        self.embedding_u = nn.Embedding(vocab_size, projection_dim) # out embedding
        self.logsigmoid = nn.LogSigmoid()
                
        initrange = (2.0 / (vocab_size + projection_dim))**0.5 # Xavier init
        self.embedding_v.weight.data.uniform_(-initrange, initrange) # init
        self.embedding_u.weight.data.uniform_(-0.0, 0.0) # init
        
    def forward(self, center_words, target_words, negative_words):
        center_embeds = self.embedding_v(center_words) # B x 1 x D
        target_embeds = self.embedding_u(target_words) # B x 1 x D
        
        neg_embeds = -self.embedding_u(negative_words) # B x K x D
        
        positive_score = target_embeds.bmm(center_embeds.transpose(1, 2)).squeeze(2) # Bx1
        negative_score = torch.sum(neg_embeds.bmm(center_embeds.transpose(1, 2)).squeeze(2), 1).view(negs.size(0), -1) # BxK -> Bx1
        
        loss = self.logsigmoid(positive_score) + self.logsigmoid(negative_score)
        
        return -torch.mean(loss)
    
    def prediction(self, inputs):
        embeds = self.embedding_v(inputs)
        
        return embeds


model = SkipgramNegSampling(len(word2index), 10)
numpy_init(model)
optimizer = optim.Adam(model.parameters(), lr=0.01)
for epoch in range(3):
    losses = []
    for i, batch in enumerate(getBatch(64, train_data)):
        inputs, targets = zip(*batch)
        inputs = torch.cat(inputs)  # B x 1
        targets = torch.cat(targets)  # B x 1
        negs = negative_sampling(targets, unigram_table, 5)
        model.zero_grad()
        loss = model(inputs, targets, negs)
        loss.backward()
        optimizer.step()
        losses.append(loss.data.tolist())
    print("negsampling epoch : %d, mean_loss : %.04f" % (epoch, np.mean(losses)))
print(word_similarity(model, 'whale', vocab))

window_data = pairs


def weighting(w_i, w_j):
    try:
        x_ij = X_ik[(w_i, w_j)]
    except:
        x_ij = 1
    x_max = 100  # 100 # fixed in paper
    alpha = 0.75
    if x_ij < x_max:
        result = (x_ij / x_max) ** alpha
    else:
        result = 1
    return result


X_ik_window_5 = Counter(window_data)
X_ik = {}
weighting_dic = {}
for bigram in combinations_with_replacement(vocab, 2):
    if X_ik_window_5.get(bigram) is not None:
        co_occer = X_ik_window_5[bigram]
        X_ik[bigram] = co_occer + 1  # log(Xik) -> log(Xik+1) to prevent divergence
        X_ik[(bigram[1], bigram[0])] = co_occer + 1
    weighting_dic[bigram] = weighting(bigram[0], bigram[1])
    weighting_dic[(bigram[1], bigram[0])] = weighting(bigram[1], bigram[0])
u_p, v_p, co_p, weight_p = [], [], [], []
for pair in window_data:
    u_p.append(prepare_word(pair[0], word2index).view(1, -1))
    v_p.append(prepare_word(pair[1], word2index).view(1, -1))
    try:
        cooc = X_ik[pair]
    except:
        cooc = 1
    co_p.append(torch.log(Variable(FloatTensor([cooc]))).view(1, -1))
    weight_p.append(Variable(FloatTensor([weighting_dic[pair]])).view(1, -1))
glove_data = list(zip(u_p, v_p, co_p, weight_p))
print(glove_data[0])


class GloVe(nn.Module):
    
    def __init__(self, vocab_size,projection_dim):
        super(GloVe,self).__init__()
        self.embedding_v = nn.Embedding(vocab_size, projection_dim) # center embedding
        self.embedding_u = nn.Embedding(vocab_size, projection_dim) # out embedding
        
        self.v_bias = nn.Embedding(vocab_size, 1)
        self.u_bias = nn.Embedding(vocab_size, 1)
        
        initrange = (2.0 / (vocab_size + projection_dim))**0.5 # Xavier init
        self.embedding_v.weight.data.uniform_(-initrange, initrange) # init
        self.embedding_u.weight.data.uniform_(-initrange, initrange) # init
        self.v_bias.weight.data.uniform_(-initrange, initrange) # init
        self.u_bias.weight.data.uniform_(-initrange, initrange) # init
        
    def forward(self, center_words, target_words, coocs, weights):
        center_embeds = self.embedding_v(center_words) # B x 1 x D
        target_embeds = self.embedding_u(target_words) # B x 1 x D
        
        center_bias = self.v_bias(center_words).squeeze(1)
        target_bias = self.u_bias(target_words).squeeze(1)
        
        inner_product = target_embeds.bmm(center_embeds.transpose(1, 2)).squeeze(2) # Bx1
        
        loss = weights*torch.pow(inner_product +center_bias + target_bias - coocs, 2)
        
        return torch.sum(loss)
    
    def prediction(self, inputs):
        v_embeds = self.embedding_v(inputs) # B x 1 x D
        u_embeds = self.embedding_u(inputs) # B x 1 x D
                
        return v_embeds+u_embeds # final embed


model = GloVe(len(word2index), 10)
numpy_init(model)
optimizer = optim.Adam(model.parameters(), lr=0.01)
for epoch in range(3):
    losses = []
    for i, batch in enumerate(getBatch(64, glove_data)):
        inputs, targets, coocs, weights = zip(*batch)
        inputs = torch.cat(inputs)  # B x 1
        targets = torch.cat(targets)  # B x 1
        coocs = torch.cat(coocs)
        weights = torch.cat(weights)
        model.zero_grad()
        loss = model(inputs, targets, coocs, weights)
        loss.backward()
        optimizer.step()
        losses.append(loss.data.tolist())
    print("glove epoch : %d, mean_loss : %.04f" % (epoch, np.mean(losses)))
print(word_similarity(model, 'whale', vocab))
