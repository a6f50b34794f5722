"""d2l.ai-style RNN from scratch: one_hot, hand-written cell, gradient clipping, perplexity, greedy predict."""
import math

import torch
from torch.nn import functional as F

torch.manual_seed(0)
text = "the time machine by h g wells " * 12
vocab = sorted(set(text))
token_to_idx = {ch: i for i, ch in enumerate(vocab)}
corpus = [token_to_idx[ch] for ch in text]
print(len(vocab), len(corpus))
print(F.one_hot(torch.tensor([0, 2]), len(vocab)).shape)

X = torch.arange(10).reshape((2, 5))
print(F.one_hot(X.T, 28).shape)


def get_params(vocab_size, num_hiddens, device):
    num_inputs = num_outputs = vocab_size

    def normal(shape):
        return torch.randn(size=shape, device=device) * 0.01

    W_xh = normal((num_inputs, num_hiddens))
    W_hh = normal((num_hiddens, num_hiddens))
    b_h = torch.zeros(num_hiddens, device=device)
    W_hq = normal((num_hiddens, num_outputs))
    b_q = torch.zeros(num_outputs, device=device)
    params = [W_xh, W_hh, b_h, W_hq, b_q]
    for param in params:
        param.requires_grad_(True)
    return params


def init_rnn_state(batch_size, num_hiddens, device):
    return (torch.zeros((batch_size, num_hiddens), device=device),)


def rnn(inputs, state, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    H, = state
    outputs = []
    for X in inputs:
        H = torch.tanh(torch.mm(X, W_xh) + torch.mm(H, W_hh) + b_h)
        Y = torch.mm(H, W_hq) + b_q
        outputs.append(Y)
    return torch.cat(outputs, dim=0), (H,)


class RNNModelScratch:
    def __init__(self, vocab_size, num_hiddens, device, get_params, init_state, forward_fn):
        self.vocab_size, self.num_hiddens = vocab_size, num_hiddens
        self.params = get_params(vocab_size, num_hiddens, device)
        self.init_state, self.forward_fn = init_state, forward_fn

    def __call__(self, X, state):
        X = F.one_hot(X.T, self.vocab_size).type(torch.float32)
        return self.forward_fn(X, state, self.params)

    def begin_state(self, batch_size, device):
        return self.init_state(batch_size, self.num_hiddens, device)


device = torch.device('cpu')
num_hiddens = 32
net = RNNModelScratch(len(vocab), num_hiddens, device, get_params, init_rnn_state, rnn)
state = net.begin_state(X.shape[0], device)
Y, new_state = net(X.to(device), state)
print(Y.shape, len(new_state), new_state[0].shape)


def grad_clipping(net, theta):
    params = net.params
    norm = torch.sqrt(sum(torch.sum((p.grad ** 2)) for p in params))
    if norm > theta:
        for param in params:
            param.grad[:] *= theta / norm


def predict_ch8(prefix, num_preds, net, device):
    state = net.begin_state(batch_size=1, device=device)
    outputs = [token_to_idx[prefix[0]]]
    get_input = lambda: torch.tensor([outputs[-1]], device=device).reshape((1, 1))
    for y in prefix[1:]:
        _, state = net(get_input(), state)
        outputs.append(token_to_idx[y])
    for _ in range(num_preds):
        y, state = net(get_input(), state)
        outputs.append(int(y.argmax(dim=1).reshape(1)))
    return ''.join([vocab[i] for i in outputs])


num_steps, batch_size, lr = 10, 8, 1.0
data = torch.tensor(corpus)
ppls = []
for epoch in range(30):
    state = None
    total, n = 0.0, 0
    for start in range(0, len(corpus) - num_steps * batch_size - 1, num_steps * batch_size):
        chunk = data[start:start + num_steps * batch_size + 1]
        Xb = chunk[:-1].reshape(batch_size, num_steps)
        Yb = chunk[1:].reshape(batch_size, num_steps)
        if state is None:
            state = net.begin_state(batch_size=batch_size, device=device)
        else:
            for s in state:
                s.detach_()
        y = Yb.T.reshape(-1)
        y_hat, state = net(Xb, state)
        l = F.cross_entropy(y_hat, y.long()).mean()
        for p in net.params:
            p.grad = None
        l.backward()
        grad_clipping(net, 1)
        with torch.no_grad():
            for p in net.params:
                p -= lr * p.grad
        total += l.item() * y.numel()
        n += y.numel()
    ppls.append(math.exp(total / n))
print('perplexity decreased:', ppls[-1] < ppls[0], '| below 4:', ppls[-1] < 4)
print(len(predict_ch8('time ', 10, net, device)))
