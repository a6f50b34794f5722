"""locuslab/TCN: the temporal convolutional network (tcn.py verbatim: weight_norm'd dilated
Conv1d blocks, Chomp1d, residual downsample) on the adding problem (adding_problem/model.py and
the training loop of add_test.py), starting from numpy weights and numpy data so that the run is
deterministic; the weight_norm deprecation warning is printed as caught."""
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.autograd import Variable
from torch.nn.utils import weight_norm


class Chomp1d(nn.Module):
    def __init__(self, chomp_size):
        super(Chomp1d, self).__init__()
        self.chomp_size = chomp_size

    def forward(self, x):
        return x[:, :, :-self.chomp_size].contiguous()


class TemporalBlock(nn.Module):
    def __init__(self, n_inputs, n_outputs, kernel_size, stride, dilation, padding, dropout=0.2):
        super(TemporalBlock, self).__init__()
        self.conv1 = weight_norm(nn.Conv1d(n_inputs, n_outputs, kernel_size,
                                           stride=stride, padding=padding, dilation=dilation))
        self.chomp1 = Chomp1d(padding)
        self.relu1 = nn.ReLU()
        self.dropout1 = nn.Dropout(dropout)

        self.conv2 = weight_norm(nn.Conv1d(n_outputs, n_outputs, kernel_size,
                                           stride=stride, padding=padding, dilation=dilation))
        self.chomp2 = Chomp1d(padding)
        self.relu2 = nn.ReLU()
        self.dropout2 = nn.Dropout(dropout)

        self.net = nn.Sequential(self.conv1, self.chomp1, self.relu1, self.dropout1,
                                 self.conv2, self.chomp2, self.relu2, self.dropout2)
        self.downsample = nn.Conv1d(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
        self.relu = nn.ReLU()
        self.init_weights()

    def init_weights(self):
        self.conv1.weight.data.normal_(0, 0.01)
        self.conv2.weight.data.normal_(0, 0.01)
        if self.downsample is not None:
            self.downsample.weight.data.normal_(0, 0.01)

    def forward(self, x):
        out = self.net(x)
        res = x if self.downsample is None else self.downsample(x)
        return self.relu(out + res)


class TemporalConvNet(nn.Module):
    def __init__(self, num_inputs, num_channels, kernel_size=2, dropout=0.2):
        super(TemporalConvNet, self).__init__()
        layers = []
        num_levels = len(num_channels)
        for i in range(num_levels):
            dilation_size = 2 ** i
            in_channels = num_inputs if i == 0 else num_channels[i-1]
            out_channels = num_channels[i]
            layers += [TemporalBlock(in_channels, out_channels, kernel_size, stride=1, dilation=dilation_size,
                                     padding=(kernel_size-1) * dilation_size, dropout=dropout)]

        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


class TCN(nn.Module):
    def __init__(self, input_size, output_size, num_channels, kernel_size, dropout):
        super(TCN, self).__init__()
        self.tcn = TemporalConvNet(input_size, num_channels, kernel_size=kernel_size, dropout=dropout)
        self.linear = nn.Linear(num_channels[-1], output_size)
        self.init_weights()

    def init_weights(self):
        self.linear.weight.data.normal_(0, 0.01)

    def forward(self, x):
        y1 = self.tcn(x)
        return self.linear(y1[:, :, -1])


def data_generator(N, seq_length, rs):
    """adding_problem/utils.py, its torch.rand drawn from numpy instead."""
    X_num = torch.from_numpy(rs.random_sample((N, 1, seq_length)).astype(np.float32))
    X_mask = torch.zeros([N, 1, seq_length])
    Y = torch.zeros([N, 1])
    for i in range(N):
        positions = rs.choice(seq_length, size=2, replace=False)
        X_mask[i, 0, positions[0]] = 1
        X_mask[i, 0, positions[1]] = 1
        Y[i,0] = X_num[i, 0, positions[0]] + X_num[i, 0, positions[1]]
    X = torch.cat((X_num, X_mask), dim=1)
    return Variable(X), Variable(Y)


rs = np.random.RandomState(1111)
seq_length, batch_size, epochs = 40, 16, 3
X_train, Y_train = data_generator(96, seq_length, rs)
X_test, Y_test = data_generator(32, seq_length, rs)
print(X_train.shape, Y_train.shape, X_train.dtype)

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    model = TCN(2, 1, [12, 12, 12], kernel_size=4, dropout=0.0)
print(sorted({(w.category.__name__, str(w.message)) for w in caught}))

for name, p in model.named_parameters():
    with torch.no_grad():
        p.copy_(torch.from_numpy(rs.standard_normal(tuple(p.shape)).astype(np.float32) * 0.3
                                 + (1.0 if name.endswith("weight_g") else 0.0)))
    print(name, tuple(p.shape), p.requires_grad)
print([k for k in model.state_dict()])
block = model.tcn.network[1]
print(block.conv1)
print(type(block.conv1.weight).__name__, block.conv1.weight.requires_grad, block.conv1.weight.grad_fn is None)
print(block.chomp1.chomp_size, block.conv1.dilation, block.conv1.padding)

optimizer = getattr(optim, "Adam")(model.parameters(), lr=4e-3)


def train(epoch):
    model.train()
    batch_idx = 1
    total_loss = 0
    for i in range(0, X_train.size(0), batch_size):
        if i + batch_size > X_train.size(0):
            x, y = X_train[i:], Y_train[i:]
        else:
            x, y = X_train[i:(i+batch_size)], Y_train[i:(i+batch_size)]
        optimizer.zero_grad()
        output = model(x)
        loss = F.mse_loss(output, y)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        batch_idx += 1
        total_loss += loss.item()
        if batch_idx % 3 == 0:
            cur_loss = total_loss / 3
            processed = min(i+batch_size, X_train.size(0))
            print('Train Epoch: {:2d} [{:6d}/{:6d} ({:.0f}%)]\tLoss: {:.5f}\tgrad norm {:.4f}'.format(
                epoch, processed, X_train.size(0), 100.*processed/X_train.size(0), cur_loss, norm.item()))
            total_loss = 0


def evaluate():
    model.eval()
    with torch.no_grad():
        output = model(X_test)
        test_loss = F.mse_loss(output, Y_test)
        print('Test set: Average loss: {:.5f}'.format(test_loss.item()))
        return test_loss.item()


for ep in range(1, epochs+1):
    train(ep)
    tloss = evaluate()
print(model.tcn.network[0].conv1.weight_g.grad.shape, model.tcn.network[0].conv1.weight_v.grad.shape)
w = model.tcn.network[0].conv1.weight
g, v = model.tcn.network[0].conv1.weight_g, model.tcn.network[0].conv1.weight_v
print(torch.allclose(w, g * v / v.norm(dim=(1, 2), keepdim=True)))
