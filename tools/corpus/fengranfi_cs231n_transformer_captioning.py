"""FengRanfi/assignment3_cs231n_2024 (Stanford CS231n 2024 assignment 3, a student's solution):
cs231n/transformer_layers.py (PositionalEncoding filled by Python loops, MultiHeadAttention with
view/transpose heads, masked_fill with -inf, softmax), cs231n/classifiers/transformer.py
(TransformerDecoderLayer, deep-copied TransformerDecoder, CaptioningTransformer with its
_init_weights, tril target mask, greedy sample through argmax(axis=1) and cat), and
cs231n/captioning_solver_transformer.py (legacy torch.Tensor / torch.LongTensor constructors on
numpy arrays, masked temporal cross-entropy with reduction='none', Adam) plus the notebook's
checks of Transformer_Captioning.ipynb (parameters set from np.linspace through p.data).

Adapted: the COCO captions and VGG features replaced by 40 synthetic captions over a 12-word
vocabulary drawn with numpy; parameters set from numpy (linspace or a seeded normal) instead of
torch's generator; dropout probabilities set to 0 for training; 30 iterations; plots, image
URLs, docstrings and comments dropped. The student's positional encoding is kept as written
(its 2-d buffer does not match the notebook's expected values, in both libraries).
"""
import copy
import math

import numpy as np
import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    def __init__(self, embed_dim, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        assert embed_dim % 2 == 0
        pe = torch.zeros(1, max_len, embed_dim)
        pos_code = torch.zeros(max_len, embed_dim)
        for i in range(max_len):
            for j in range(embed_dim):
                if j % 2 == 0:
                    pos_code[i][j] = math.sin(i * 10000 ** (-j / embed_dim))
                else:
                    pos_code[i][j] = math.cos(i * 10000 ** (-(j - 1) / embed_dim))
        pe = pos_code
        self.register_buffer('pe', pe)

    def forward(self, x):
        N, S, D = x.shape
        output = torch.empty((N, S, D))
        output = x + self.pe[0:S, 0:D]
        return self.dropout(output)


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.1):
        super().__init__()
        assert embed_dim % num_heads == 0
        self.key = nn.Linear(embed_dim, embed_dim)
        self.query = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)
        self.attn_drop = nn.Dropout(dropout)
        self.n_head = num_heads
        self.emd_dim = embed_dim
        self.head_dim = self.emd_dim // self.n_head

    def forward(self, query, key, value, attn_mask=None):
        H = self.n_head
        N, S, E = query.shape
        N, T, E = value.shape
        output = torch.empty((N, S, E))
        query2 = self.query(query)
        key2 = self.key(key)
        value2 = self.value(value)
        EH = E // H
        query2 = query2.view(N, S, H, EH).transpose(1, 2)
        key2 = key2.view(N, T, H, EH).transpose(1, 2)
        value2 = value2.view(N, T, H, EH).transpose(1, 2)
        scores = torch.matmul(query2, key2.transpose(-1, -2)) / (EH ** 0.5)
        if attn_mask is not None:
            scores = scores.masked_fill(attn_mask == 0, float('-inf'))
        softmaxScore = torch.softmax(scores, dim=-1)
        dropScore = self.attn_drop(softmaxScore)
        attnout = torch.matmul(dropScore, value2)
        attnout = attnout.transpose(1, 2).contiguous()
        attnout = attnout.view(N, S, E)
        output = self.proj(attnout)
        return output


class TransformerDecoderLayer(nn.Module):
    def __init__(self, input_dim, num_heads, dim_feedforward=2048, dropout=0.1):
        super().__init__()
        self.self_attn = MultiHeadAttention(input_dim, num_heads, dropout)
        self.multihead_attn = MultiHeadAttention(input_dim, num_heads, dropout)
        self.linear1 = nn.Linear(input_dim, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, input_dim)
        self.norm1 = nn.LayerNorm(input_dim)
        self.norm2 = nn.LayerNorm(input_dim)
        self.norm3 = nn.LayerNorm(input_dim)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)
        self.activation = nn.ReLU()

    def forward(self, tgt, memory, tgt_mask=None):
        tgt2 = self.self_attn(query=tgt, key=tgt, value=tgt, attn_mask=tgt_mask)
        tgt = tgt + self.dropout1(tgt2)
        tgt = self.norm1(tgt)
        tgt2 = self.multihead_attn(query=tgt, key=memory, value=memory)
        tgt = tgt + self.dropout2(tgt2)
        tgt = self.norm2(tgt)
        tgt2 = self.linear2(self.dropout(self.activation(self.linear1(tgt))))
        tgt = tgt + self.dropout3(tgt2)
        tgt = self.norm3(tgt)
        return tgt


def clones(module, N):
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


class TransformerDecoder(nn.Module):
    def __init__(self, decoder_layer, num_layers):
        super().__init__()
        self.layers = clones(decoder_layer, num_layers)
        self.num_layers = num_layers

    def forward(self, tgt, memory, tgt_mask=None):
        output = tgt
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask)
        return output


class CaptioningTransformer(nn.Module):
    def __init__(self, word_to_idx, input_dim, wordvec_dim, num_heads=4, num_layers=2,
                 max_length=50):
        super().__init__()
        vocab_size = len(word_to_idx)
        self.vocab_size = vocab_size
        self._null = word_to_idx['<NULL>']
        self._start = word_to_idx.get('<START>', None)
        self._end = word_to_idx.get('<END>', None)
        self.visual_projection = nn.Linear(input_dim, wordvec_dim)
        self.embedding = nn.Embedding(vocab_size, wordvec_dim, padding_idx=self._null)
        self.positional_encoding = PositionalEncoding(wordvec_dim, max_len=max_length)
        decoder_layer = TransformerDecoderLayer(input_dim=wordvec_dim, num_heads=num_heads)
        self.transformer = TransformerDecoder(decoder_layer, num_layers=num_layers)
        self.apply(self._init_weights)
        self.output = nn.Linear(wordvec_dim, vocab_size)

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def forward(self, features, captions):
        N, T = captions.shape
        scores = torch.empty((N, T, self.vocab_size))
        features_embed = self.visual_projection(features).unsqueeze(1)
        captions_embed = self.embedding(captions)
        captions_position = self.positional_encoding(captions_embed)
        tgt_mask = torch.tril(torch.ones(T, T))
        decoder_out = self.transformer(captions_position, features_embed, tgt_mask)
        scores = self.output(decoder_out)
        return scores

    def sample(self, features, max_length=30):
        with torch.no_grad():
            features = torch.Tensor(features)
            N = features.shape[0]
            captions = self._null * np.ones((N, max_length), dtype=np.int32)
            partial_caption = self._start * np.ones(N, dtype=np.int32)
            partial_caption = torch.LongTensor(partial_caption)
            partial_caption = partial_caption.unsqueeze(1)
            for t in range(max_length):
                output_logits = self.forward(features, partial_caption)
                output_logits = output_logits[:, -1, :]
                word = torch.argmax(output_logits, axis=1)
                captions[:, t] = word.numpy()
                word = word.unsqueeze(1)
                partial_caption = torch.cat([partial_caption, word], dim=1)
            return captions


def transformer_temporal_softmax_loss(x, y, mask):
    N, T, V = x.shape
    x_flat = x.reshape(N * T, V)
    y_flat = y.reshape(N * T)
    mask_flat = mask.reshape(N * T)
    loss = torch.nn.functional.cross_entropy(x_flat, y_flat, reduction='none')
    loss = torch.mul(loss, mask_flat)
    loss = torch.mean(loss)
    return loss


def decode_captions(captions, idx_to_word):
    decoded = []
    N, T = captions.shape
    for i in range(N):
        words = []
        for t in range(T):
            word = idx_to_word[captions[i, t]]
            if word != "<NULL>":
                words.append(word)
            if word == "<END>":
                break
        decoded.append(" ".join(words))
    return decoded


def rel_error(x, y):
    return np.max(np.abs(x - y) / (np.maximum(1e-8, np.abs(x) + np.abs(y))))


def set_from_linspace(model):
    for p in model.parameters():
        p.data = torch.tensor(np.linspace(-1.4, 1.3, num=p.numel()).reshape(*p.shape))


# --- the notebook's MultiHeadAttention check, parameters and data from numpy
rs = np.random.RandomState(231)
attn = MultiHeadAttention(8, num_heads=2)
set_from_linspace(attn)
attn.eval()
data = torch.tensor(rs.randn(1, 3, 8))
other_data = torch.tensor(rs.randn(1, 3, 8))
mask = torch.tensor(rs.randn(3, 3)) < 0.5
self_attn_output = attn(query=data, key=data, value=data)
masked_self_attn_output = attn(query=data, key=data, value=data, attn_mask=mask)
attn_output = attn(query=data, key=other_data, value=other_data)
print('mask:', mask)
print('self attention:', self_attn_output)
print('masked self attention:', masked_self_attn_output.detach().numpy().round(4))
print('cross attention:', attn_output.sum(-1), attn_output.dtype)

# --- the positional encoding (the student's loops; a 2-d buffer)
pos_encoder = PositionalEncoding(6, max_len=50)
print('pe buffer:', pos_encoder.pe.shape, pos_encoder.pe.dtype, [n for n, _ in pos_encoder.named_buffers()])
pos_encoder.eval()
pe_in = torch.tensor(rs.randn(1, 2, 6), dtype=torch.float32)
print('pe output:', pos_encoder(pe_in))

# --- the notebook's CaptioningTransformer check (all parameters from linspace)
N, D, W, T = 4, 20, 30, 3
word_to_idx = {'<NULL>': 0, 'cat': 2, 'dog': 3}
V = len(word_to_idx)
transformer = CaptioningTransformer(word_to_idx, input_dim=D, wordvec_dim=W, num_heads=2,
                                    num_layers=2, max_length=30)
transformer.eval()
set_from_linspace(transformer)
features = torch.tensor(np.linspace(-1.5, 0.3, num=(N * D)).reshape(N, D))
captions = torch.tensor((np.arange(N * T) % V).reshape(N, T))
scores = transformer(features, captions)
print('scores:', scores.shape, scores.dtype, scores[0], scores.sum().item())
print('parameters:', sum(p.numel() for p in transformer.parameters()),
      len(list(transformer.named_parameters())), len(transformer.state_dict()))

# --- overfitting a small synthetic caption set, as the solver does
words = ['<NULL>', '<START>', '<END>', '<UNK>'] + ['w%d' % i for i in range(8)]
w2i = {w: i for i, w in enumerate(words)}
caps = np.zeros((40, 9), dtype=np.int32)
caps[:, 0] = 1
for i in range(40):
    L = rs.randint(3, 8)
    caps[i, 1:L] = rs.randint(4, len(words), L - 1)
    caps[i, L] = 2
image_idxs = rs.randint(0, 10, 40)
image_features = rs.randn(10, 16).astype(np.float32)

model = CaptioningTransformer(w2i, input_dim=16, wordvec_dim=32, num_heads=2, num_layers=2,
                              max_length=30)
for m in model.modules():
    if isinstance(m, nn.Dropout):
        m.p = 0.0
with torch.no_grad():
    for name, p in model.named_parameters():
        p.copy_(torch.tensor(rs.randn(*p.shape) * (0.02 if p.dim() > 1 else 0.0)))
        if name.endswith('weight') and p.dim() == 1:
            p.fill_(1.0)
optim = torch.optim.Adam(model.parameters(), lr=0.001)
for t in range(30):
    batch = rs.choice(40, 10)
    captions_b, features_b = caps[batch], image_features[image_idxs[batch]]
    captions_in = captions_b[:, :-1]
    captions_out = captions_b[:, 1:]
    mask = captions_out != model._null
    t_features = torch.Tensor(features_b)
    t_captions_in = torch.LongTensor(captions_in)
    t_captions_out = torch.LongTensor(captions_out)
    t_mask = torch.LongTensor(mask)
    logits = model(t_features, t_captions_in)
    loss = transformer_temporal_softmax_loss(logits, t_captions_out, t_mask)
    optim.zero_grad()
    loss.backward()
    optim.step()
    if t % 10 == 0 or t == 29:
        print('(Iteration %d / %d) loss: %f' % (t + 1, 30, loss.item()), t_mask.dtype,
              t_captions_in.dtype, t_features.dtype)

model.eval()
sampled = model.sample(image_features[:3], max_length=8)
print(sampled.dtype, sampled.shape)
print(decode_captions(sampled, words))
print(decode_captions(caps[:3], words))
