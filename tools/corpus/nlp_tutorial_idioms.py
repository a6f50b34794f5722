"""Idioms of the single-file NLP tutorials (NNLM, TextRNN, TextCNN, seq2seq): vocabularies built
from sentences, np.eye one-hot batches through the legacy FloatTensor/LongTensor constructors,
.data.max(1, keepdim=True)[1] predictions, padding masks with .data.eq(0), the implicit-dim
softmax, and a sinusoid table turned into a frozen embedding.  Weights are fixed, so every value
printed is seed-independent."""
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

dtype = torch.FloatTensor

sentences = ["i like dog", "i love coffee", "i hate milk"]
word_list = " ".join(sentences).split()
word_list = sorted(set(word_list))
word_dict = {w: i for i, w in enumerate(word_list)}
number_dict = {i: w for i, w in enumerate(word_list)}
n_class = len(word_dict)
print(n_class, word_dict)


def make_batch(sentences):
    input_batch, target_batch = [], []
    for sen in sentences:
        word = sen.split()
        input = [word_dict[n] for n in word[:-1]]
        target = word_dict[word[-1]]
        input_batch.append(np.eye(n_class)[input])
        target_batch.append(target)
    return input_batch, target_batch


input_batch, target_batch = make_batch(sentences)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # PyTorch warns that a list of ndarrays is slow
    input_batch = torch.FloatTensor(input_batch)
target_batch = torch.LongTensor(target_batch)
print(input_batch.shape, input_batch.dtype, target_batch, target_batch.dtype, input_batch.type())

ids = torch.LongTensor([[word_dict[n] for n in sen.split()] for sen in sentences])
print(ids, ids.type())


class TextRNN(nn.Module):
    def __init__(self):
        super(TextRNN, self).__init__()
        self.rnn = nn.RNN(input_size=n_class, hidden_size=5)
        self.W = nn.Linear(5, n_class, bias=False)
        self.b = nn.Parameter(torch.ones([n_class]))

    def forward(self, hidden, X):
        X = X.transpose(0, 1)
        outputs, hidden = self.rnn(X, hidden)
        outputs = outputs[-1]
        return self.W(outputs) + self.b


model = TextRNN()
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) + i).view_as(p) * 0.5)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(30):
    optimizer.zero_grad()
    hidden = torch.zeros(1, len(input_batch), 5)
    output = model(hidden, input_batch)
    loss = criterion(output, target_batch)
    if (epoch + 1) % 10 == 0:
        print('Epoch:', '%04d' % (epoch + 1), 'cost =', '{:.6f}'.format(loss))
    loss.backward()
    optimizer.step()

hidden = torch.zeros(1, len(input_batch), 5)
predict = model(hidden, input_batch).data.max(1, keepdim=True)[1]
print(predict, predict.squeeze())
print([sen.split()[:2] for sen in sentences], '->', [number_dict[n.item()] for n in predict.squeeze()])

# padding masks as the Transformer tutorials build them
seq_q = torch.LongTensor([[1, 2, 3, 0, 0]])
pad_attn_mask = seq_q.data.eq(0).unsqueeze(1)
print(pad_attn_mask, pad_attn_mask.expand(1, 5, 5).shape)
subsequent = np.triu(np.ones([1, 5, 5]), k=1)
subsequent = torch.from_numpy(subsequent).byte()
print(subsequent.dtype, torch.gt((pad_attn_mask.expand(1, 5, 5).byte() + subsequent), 0))
scores = torch.arange(25, dtype=torch.float32).view(1, 5, 5) / 10
scores.masked_fill_(pad_attn_mask.expand(1, 5, 5), -1e9)
print(nn.Softmax(dim=-1)(scores)[0, 0])


def get_sinusoid_encoding_table(n_position, d_model):
    def cal_angle(position, hid_idx):
        return position / np.power(10000, 2 * (hid_idx // 2) / d_model)

    def get_posi_angle_vec(position):
        return [cal_angle(position, hid_j) for hid_j in range(d_model)]

    sinusoid_table = np.array([get_posi_angle_vec(pos_i) for pos_i in range(n_position)])
    sinusoid_table[:, 0::2] = np.sin(sinusoid_table[:, 0::2])
    sinusoid_table[:, 1::2] = np.cos(sinusoid_table[:, 1::2])
    return torch.FloatTensor(sinusoid_table)


pos_emb = nn.Embedding.from_pretrained(get_sinusoid_encoding_table(6, 4), freeze=True)
print(pos_emb(torch.LongTensor([[1, 2, 3, 4, 0]]))[0, :2], pos_emb.weight.requires_grad)

# attention weights with the implicit-dim softmax of the seq2seq tutorial (PyTorch warns)
attn_scores = torch.tensor([0.5, 1.5, -0.5])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    attn = F.softmax(attn_scores).view(1, 1, -1)
print(attn, len(caught), caught[0].category.__name__ if caught else None)
context = attn.bmm(torch.ones(1, 3, 2))
print(context, context.squeeze(0))
print(torch.max(torch.tensor([[0.1, 0.7, 0.2]]), 1)[1].data[0], np.argmax(np.array([0.1, 0.7, 0.2])))
