"""Recurrent regression from a sine wave to a cosine wave with nn.RNN (relu), nn.LSTM and nn.GRU
(two layers, sequence-first input, a Linear applied per time step and torch.stack'ed, the hidden
state carried across windows with .detach(), MSELoss and Adam), then a hand-written RNN cell built
from Linear layers over torch.cat((input, hidden), 1) with LogSoftmax.

Source: reganzm/Learn-Pytorch-And-Become-A-Data-Scientist, chapter5/RNN/RNNRegression.py,
LSTMRegression.py, GRURegression.py and RNNCell.py.  Adapted: the three regression scripts share
one loop here; .cuda() and plotting removed; 30 steps instead of 2000; parameters and the random
input drawn from one numpy stream so the run is deterministic.
"""
import numpy as np
import torch
from torch import nn

bins = 50
input_dim = 1
lr = 0.01
epochs = 30
hidden_size = 32
num_layers = 2

rng = np.random.RandomState(0)


def init_from_numpy(module, scale=0.1):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy((rng.randn(*p.shape) * scale).astype(np.float32)))
    return module


class RecurrentDemo(nn.Module):
    def __init__(self, kind):
        super().__init__()
        if kind == "rnn":
            self.rnn = nn.RNN(input_size=input_dim, hidden_size=hidden_size,
                              num_layers=num_layers, nonlinearity="relu")
        elif kind == "lstm":
            self.rnn = nn.LSTM(input_size=input_dim, hidden_size=hidden_size, num_layers=num_layers)
        else:
            self.rnn = nn.GRU(input_size=input_dim, hidden_size=hidden_size, num_layers=num_layers)
        self.out = nn.Linear(hidden_size, 1)

    def forward(self, x, h):
        r_out, h_state = self.rnn(x, h)
        outs = []
        for time_step in range(r_out.size(1)):
            outs.append(self.out(r_out[:, time_step, :]))
        return torch.stack(outs, dim=1), h_state


for kind in ("rnn", "lstm", "gru"):
    model = init_from_numpy(RecurrentDemo(kind))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loss_func = nn.MSELoss()
    if kind == "lstm":
        state = (torch.zeros(num_layers, 1, hidden_size), torch.zeros(num_layers, 1, hidden_size))
    elif kind == "gru":
        state = torch.zeros(num_layers * 1, 1, hidden_size)
    else:
        state = None
    for step in range(epochs):
        start, end = step * np.pi, (step + 1) * np.pi
        steps = np.linspace(start, end, bins, dtype=np.float32, endpoint=False)
        x = torch.from_numpy(np.sin(steps)).unsqueeze(1).unsqueeze(2)
        y = torch.from_numpy(np.cos(steps)).unsqueeze(1).unsqueeze(2)
        prediction, state = model(x, state)
        if kind == "lstm":
            state = (state[0].detach(), state[1].detach())
        else:
            state = state.detach()
        loss = loss_func(prediction, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(kind, "loss:{:.8f}".format(loss))
    flat = prediction.data.numpy().flatten()
    print(kind, prediction.shape, tuple(s.shape for s in state) if kind == "lstm" else state.shape,
          "pred[:4]", " ".join(f"{v:.3f}" for v in flat[:4]), "grad-free state:", not state[0].requires_grad)


class RNNCell(nn.Module):
    def __init__(self, input_size, hidden_size, output_size, batch_size):
        super(RNNCell, self).__init__()
        self.batch_size = batch_size
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        combined = torch.cat((input, hidden), 1)
        hidden = self.i2h(combined)
        output = self.i2o(combined)
        output = self.softmax(output)
        return output, hidden

    def initHidden(self):
        return torch.zeros(self.batch_size, self.hidden_size)


n_hidden = 10
target_size = 2
input_size = 26
batch_size = 64
rnnCell = init_from_numpy(RNNCell(input_size, n_hidden, target_size, batch_size))
hidden = rnnCell.initHidden()
input = torch.from_numpy(rng.randint(0, 10, (batch_size, input_size))).float()
print(input[:2])
print(input.shape, input.dtype)
output, next_hidden = rnnCell(input, hidden)
print(output.data.size(), next_hidden.data.size())
print(output[:3], output.exp().sum(1)[:3])
