"""d2l.ai GRU and LSTM from scratch: get_params with normal(), init state tuples, the gate
equations with sigmoid/tanh per time step over one-hot inputs, grad_clipping by the global norm,
perplexity; then the concise nn.GRU / nn.LSTM language model wrappers."""
import math

import torch
from torch import nn
from torch.nn import functional as F

text = "the time machine by h g wells " * 8
vocab = sorted(set(text))
token_to_idx = {t: i for i, t in enumerate(vocab)}
corpus = [token_to_idx[c] for c in text]
vocab_size = len(vocab)
print(vocab_size, len(corpus), vocab[:5])


def seq_data_iter_sequential(corpus, batch_size, num_steps):
    num_tokens = ((len(corpus) - 1) // batch_size) * batch_size
    Xs = torch.tensor(corpus[0: num_tokens])
    Ys = torch.tensor(corpus[1: num_tokens + 1])
    Xs, Ys = Xs.reshape(batch_size, -1), Ys.reshape(batch_size, -1)
    num_batches = Xs.shape[1] // num_steps
    for i in range(0, num_steps * num_batches, num_steps):
        X = Xs[:, i: i + num_steps]
        Y = Ys[:, i: i + num_steps]
        yield X, Y


def get_lstm_params(vocab_size, num_hiddens, device):
    num_inputs = num_outputs = vocab_size

    def normal(shape):
        return torch.randn(size=shape, device=device) * 0.01

    def three():
        return (normal((num_inputs, num_hiddens)), normal((num_hiddens, num_hiddens)),
                torch.zeros(num_hiddens, device=device))

    W_xi, W_hi, b_i = three()
    W_xf, W_hf, b_f = three()
    W_xo, W_ho, b_o = three()
    W_xc, W_hc, b_c = three()
    W_hq = normal((num_hiddens, num_outputs))
    b_q = torch.zeros(num_outputs, device=device)
    params = [W_xi, W_hi, b_i, W_xf, W_hf, b_f, W_xo, W_ho, b_o, W_xc, W_hc, b_c, W_hq, b_q]
    for param in params:
        param.requires_grad_(True)
    return params


def init_lstm_state(batch_size, num_hiddens, device):
    return (torch.zeros((batch_size, num_hiddens), device=device),
            torch.zeros((batch_size, num_hiddens), device=device))


def lstm(inputs, state, params):
    [W_xi, W_hi, b_i, W_xf, W_hf, b_f, W_xo, W_ho, b_o, W_xc, W_hc, b_c, W_hq, b_q] = params
    (H, C) = state
    outputs = []
    for X in inputs:
        I = torch.sigmoid((X @ W_xi) + (H @ W_hi) + b_i)
        F_ = torch.sigmoid((X @ W_xf) + (H @ W_hf) + b_f)
        O = torch.sigmoid((X @ W_xo) + (H @ W_ho) + b_o)
        C_tilda = torch.tanh((X @ W_xc) + (H @ W_hc) + b_c)
        C = F_ * C + I * C_tilda
        H = O * torch.tanh(C)
        Y = (H @ W_hq) + b_q
        outputs.append(Y)
    return torch.cat(outputs, dim=0), (H, C)


def gru(inputs, state, params):
    W_xz, W_hz, b_z, W_xr, W_hr, b_r, W_xh, W_hh, b_h, W_hq, b_q = params
    H, = state
    outputs = []
    for X in inputs:
        Z = torch.sigmoid((X @ W_xz) + (H @ W_hz) + b_z)
        R = torch.sigmoid((X @ W_xr) + (H @ W_hr) + b_r)
        H_tilda = torch.tanh((X @ W_xh) + ((R * H) @ W_hh) + b_h)
        H = Z * H + (1 - Z) * H_tilda
        Y = H @ W_hq + b_q
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


def grad_clipping(net, theta):
    if isinstance(net, nn.Module):
        params = [p for p in net.parameters() if p.requires_grad]
    else:
        params = net.params
    norm = torch.sqrt(sum(torch.sum((p.grad ** 2)) for p in params))
    if norm > theta:
        for param in params:
            param.grad[:] *= theta / norm
    return norm


def train_epoch(net, train_iter, loss, updater, device):
    state = None
    total, count = 0.0, 0
    for X, Y in train_iter:
        if state is None:
            state = net.begin_state(batch_size=X.shape[0], device=device)
        else:
            if isinstance(net, nn.Module) and not isinstance(state, tuple):
                state.detach_()
            else:
                for s in state:
                    s.detach_()
        y = Y.T.reshape(-1)
        y_hat, state = net(X, state)
        l = loss(y_hat, y.long()).mean()
        if isinstance(updater, torch.optim.Optimizer):
            updater.zero_grad()
            l.backward()
            grad_clipping(net, 1)
            updater.step()
        else:
            l.backward()
            grad_clipping(net, 1)
            updater(batch_size=1)
        total += l.item() * y.numel()
        count += y.numel()
    return math.exp(total / count)


device = torch.device('cpu')
torch.manual_seed(0)
num_hiddens, batch_size, num_steps = 32, 4, 10
net = RNNModelScratch(vocab_size, num_hiddens, device, get_lstm_params, init_lstm_state, lstm)
X = torch.arange(10).reshape((2, 5))
state = net.begin_state(X.shape[0], device)
Y, new_state = net(X, state)
print(Y.shape, len(new_state), new_state[0].shape)


def sgd_updater(batch_size, lr=2.0):
    with torch.no_grad():
        for param in net.params:
            param -= lr * param.grad / batch_size
            param.grad.zero_()


loss = nn.CrossEntropyLoss()
ppls = [train_epoch(net, seq_data_iter_sequential(corpus, batch_size, num_steps), loss, sgd_updater, device)
        for _ in range(8)]
print('scratch lstm perplexity fell:', ppls[-1] < ppls[0], ppls[0] < vocab_size + 1)
W = [torch.ones(2, 3, requires_grad=True)]
(W[0] * 10).sum().backward()


class Holder:
    params = W


print(grad_clipping(Holder, 1.0), W[0].grad)


class RNNModel(nn.Module):
    def __init__(self, rnn_layer, vocab_size, **kwargs):
        super(RNNModel, self).__init__(**kwargs)
        self.rnn = rnn_layer
        self.vocab_size = vocab_size
        self.num_hiddens = self.rnn.hidden_size
        if not self.rnn.bidirectional:
            self.num_directions = 1
            self.linear = nn.Linear(self.num_hiddens, self.vocab_size)
        else:
            self.num_directions = 2
            self.linear = nn.Linear(self.num_hiddens * 2, self.vocab_size)

    def forward(self, inputs, state):
        X = F.one_hot(inputs.T.long(), self.vocab_size)
        X = X.to(torch.float32)
        Y, state = self.rnn(X, state)
        output = self.linear(Y.reshape((-1, Y.shape[-1])))
        return output, state

    def begin_state(self, device, batch_size=1):
        if not isinstance(self.rnn, nn.LSTM):
            return torch.zeros((self.num_directions * self.rnn.num_layers, batch_size, self.num_hiddens),
                               device=device)
        else:
            return (torch.zeros((self.num_directions * self.rnn.num_layers, batch_size, self.num_hiddens),
                                device=device),
                    torch.zeros((self.num_directions * self.rnn.num_layers, batch_size, self.num_hiddens),
                                device=device))


for layer in (nn.GRU(vocab_size, num_hiddens), nn.LSTM(vocab_size, num_hiddens, num_layers=2)):
    model = RNNModel(layer, vocab_size).to(device)
    updater = torch.optim.SGD(model.parameters(), lr=1.0)
    ppls = [train_epoch(model, seq_data_iter_sequential(corpus, batch_size, num_steps), loss, updater, device)
            for _ in range(5)]
    print(type(layer).__name__, ppls[-1] < ppls[0], model.num_directions)
