"""d2l.ai attention mechanisms: Nadaraya-Watson kernel regression with softmax weights,
sequence_mask / masked_softmax with 1-D and 2-D valid_lens (repeat_interleave of valid_lens), AdditiveAttention, DotProductAttention with bmm, dropout, attention weights shapes."""
import math

import torch
from torch import nn
from torch.nn import functional as F

n_train = 20
x_train, _ = torch.sort(torch.arange(n_train, dtype=torch.float32) * 5 / n_train)


def f(x):
    return 2 * torch.sin(x) + x ** 0.8


y_train = f(x_train)
x_test = torch.arange(0, 5, 0.5)
y_truth = f(x_test)
n_test = len(x_test)
print(n_test, x_test[:4])
X_repeat = x_test.repeat_interleave(n_train).reshape((-1, n_train))
attention_weights = nn.functional.softmax(-(X_repeat - x_train) ** 2 / 2, dim=1)
y_hat = torch.matmul(attention_weights, y_train)
print(attention_weights.shape, torch.allclose(attention_weights.sum(1), torch.ones(n_test)))
print(y_hat[:3])


def sequence_mask(X, valid_len, value=0):
    maxlen = X.size(1)
    mask = torch.arange((maxlen), dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]
    X[~mask] = value
    return X


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    else:
        shape = X.shape
        if valid_lens.dim() == 1:
            valid_lens = torch.repeat_interleave(valid_lens, shape[1])
        else:
            valid_lens = valid_lens.reshape(-1)
        X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
        return nn.functional.softmax(X.reshape(shape), dim=-1)


X = torch.tensor([[1, 2, 3], [4, 5, 6]])
print(sequence_mask(X, torch.tensor([1, 2])))
scores = torch.arange(16, dtype=torch.float32).reshape(2, 2, 4) / 4
print(masked_softmax(scores, torch.tensor([2, 3])))
print(masked_softmax(scores, torch.tensor([[1, 3], [2, 4]])))


class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super(AdditiveAttention, self).__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        queries, keys = self.W_q(queries), self.W_k(keys)
        features = queries.unsqueeze(2) + keys.unsqueeze(1)
        features = torch.tanh(features)
        scores = self.w_v(features).squeeze(-1)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


torch.manual_seed(0)
queries, keys = torch.normal(0, 1, (2, 1, 20)), torch.ones((2, 10, 2))
values = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)
valid_lens = torch.tensor([2, 6])
attention = AdditiveAttention(key_size=2, query_size=20, num_hiddens=8, dropout=0.1)
attention.eval()
out = attention(queries, keys, values, valid_lens)
print(out)
print(attention.attention_weights)


class DotProductAttention(nn.Module):
    def __init__(self, dropout, **kwargs):
        super(DotProductAttention, self).__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


queries = torch.ones((2, 1, 2))
attention = DotProductAttention(dropout=0.5)
attention.eval()
print(attention(queries, keys, values, valid_lens))
print(attention.attention_weights.shape)
q = torch.tensor([[[1.0, 0.0]]])
k = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])
print(DotProductAttention(0.0)(q, k, torch.eye(3).unsqueeze(0), torch.tensor([2])))
print(F.scaled_dot_product_attention(q, k, torch.eye(3).unsqueeze(0)))
