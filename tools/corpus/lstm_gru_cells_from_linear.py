"""emadRad/lstm-gru-pytorch idioms: GRU and LSTM cells written from nn.Linear gates split with
chunk, unrolled over the rows of an image (28 steps of 28 features) with h0/c0 built as
Variable(torch.zeros(...)), Parameter/Tensor imported from torch, the cells' uniform reset from
1/sqrt(hidden), CrossEntropyLoss and a few SGD steps; an accuracy count as the notebook does it.
Weights and data from numpy: both libraries see the same (float64: no rounding to amplify)."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable
from torch.nn import Parameter  # noqa: F401  (the notebook's imports)
from torch import Tensor  # noqa: F401

torch.set_default_dtype(torch.float64)


class GRUCell(nn.Module):
    def __init__(self, input_size, hidden_size, bias=True):
        super(GRUCell, self).__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.x2h = nn.Linear(input_size, 3 * hidden_size, bias=bias)
        self.h2h = nn.Linear(hidden_size, 3 * hidden_size, bias=bias)
        self.reset_parameters()

    def reset_parameters(self):
        std = 1.0 / math.sqrt(self.hidden_size)
        for w in self.parameters():
            w.data.uniform_(-std, std)

    def forward(self, x, hidden):
        x = x.view(-1, x.size(1))
        gate_x = self.x2h(x).squeeze()
        gate_h = self.h2h(hidden).squeeze()
        i_r, i_i, i_n = gate_x.chunk(3, 1)
        h_r, h_i, h_n = gate_h.chunk(3, 1)
        resetgate = F.sigmoid(i_r + h_r)
        inputgate = F.sigmoid(i_i + h_i)
        newgate = F.tanh(i_n + (resetgate * h_n))
        return newgate + inputgate * (hidden - newgate)


class LSTMCell(nn.Module):
    def __init__(self, input_size, hidden_size, bias=True):
        super(LSTMCell, self).__init__()
        self.hidden_size = hidden_size
        self.x2h = nn.Linear(input_size, 4 * hidden_size, bias=bias)
        self.h2h = nn.Linear(hidden_size, 4 * hidden_size, bias=bias)

    def forward(self, x, hidden):
        hx, cx = hidden
        x = x.view(-1, x.size(1))
        gates = (self.x2h(x) + self.h2h(hx)).squeeze()
        ingate, forgetgate, cellgate, outgate = gates.chunk(4, 1)
        ingate, forgetgate = F.sigmoid(ingate), F.sigmoid(forgetgate)
        cellgate, outgate = F.tanh(cellgate), F.sigmoid(outgate)
        cy = torch.mul(cx, forgetgate) + torch.mul(ingate, cellgate)
        hy = torch.mul(outgate, F.tanh(cy))
        return (hy, cy)


class GRUModel(nn.Module):
    def __init__(self, input_dim, hidden_dim, layer_dim, output_dim, bias=True):
        super(GRUModel, self).__init__()
        self.hidden_dim, self.layer_dim = hidden_dim, layer_dim
        self.gru_cell = GRUCell(input_dim, hidden_dim, layer_dim)
        self.fc = nn.Linear(hidden_dim, output_dim)

    def forward(self, x):
        h0 = Variable(torch.zeros(self.layer_dim, x.size(0), self.hidden_dim))
        outs = []
        hn = h0[0, :, :]
        for seq in range(x.size(1)):
            hn = self.gru_cell(x[:, seq, :], hn)
            outs.append(hn)
        return self.fc(outs[-1].squeeze())


class LSTMModel(nn.Module):
    def __init__(self, input_dim, hidden_dim, layer_dim, output_dim, bias=True):
        super(LSTMModel, self).__init__()
        self.hidden_dim, self.layer_dim = hidden_dim, layer_dim
        self.lstm = LSTMCell(input_dim, hidden_dim, layer_dim)
        self.fc = nn.Linear(hidden_dim, output_dim)

    def forward(self, x):
        h0 = Variable(torch.zeros(self.layer_dim, x.size(0), self.hidden_dim))
        c0 = Variable(torch.zeros(self.layer_dim, x.size(0), self.hidden_dim))
        outs = []
        cn, hn = c0[0, :, :], h0[0, :, :]
        for seq in range(x.size(1)):
            hn, cn = self.lstm(x[:, seq, :], (hn, cn))
            outs.append(hn)
        return self.fc(outs[-1].squeeze())


rng = np.random.RandomState(0)
images = torch.tensor(rng.rand(3, 16, 1, 28, 28))
labels = torch.tensor(rng.randint(0, 10, size=(3, 16)))
for cls in (GRUModel, LSTMModel):
    model = cls(28, 32, 1, 10)
    print(model)
    bound = 1.0 / math.sqrt(32)
    print(all(float(p.detach().abs().max()) <= bound for p in model.gru_cell.parameters()) if cls is GRUModel
          else len(list(model.parameters())))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rng.uniform(-0.2, 0.2, size=tuple(p.shape))))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(3):
        x = Variable(images[i].view(-1, 28, 28))
        y = Variable(labels[i])
        optimizer.zero_grad()
        outputs = model(x)
        loss = criterion(outputs, y)
        loss.backward()
        grad_norm = math.sqrt(sum(float(p.grad.norm()) ** 2 for p in model.parameters()))
        optimizer.step()
        _, predicted = torch.max(outputs.data, 1)
        correct = (predicted == y).sum()
        print('Iteration: {}. Loss: {:.6f}. Grad norm: {:.6f}. Correct: {}'.format(
            i, loss.item(), grad_norm, correct.item()))
    print(outputs.shape, outputs.dtype, predicted.tolist())
