"""Modern-Computer-Vision-with-PyTorch chapter 2 style: a toy Dataset that copy-constructs its
tensors with torch.tensor(x).float() (PyTorch's UserWarning, at the user's line, recorded here),
a DataLoader with batch_size=2 (no shuffle), a Linear-ReLU-Linear net with fixed weights trained
by SGD on MSELoss, the intermediate layer's values, and a prediction."""
import os
import warnings

import torch
import torch.nn as nn
from torch.optim import SGD
from torch.utils.data import DataLoader, Dataset

x = [[1, 2], [3, 4], [5, 6], [7, 8]]
y = [[3], [7], [11], [15]]
X = torch.tensor(x).float()
Y = torch.tensor(y).float()
print(X.dtype, Y.shape)


class MyDataset(Dataset):
    def __init__(self, x, y):
        self.x = torch.tensor(x).float()
        self.y = torch.tensor(y).float()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, ix):
        return self.x[ix], self.y[ix]


with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ds = MyDataset(X, Y)
    again = X.new_tensor(X)
for w in caught:
    print(w.category.__name__, os.path.basename(w.filename), w.lineno - caught[0].lineno, str(w.message))

dl = DataLoader(ds, batch_size=2, shuffle=False)
print(len(dl), [b[0].shape for b in dl])


class MyNeuralNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_to_hidden_layer = nn.Linear(2, 8)
        self.hidden_layer_activation = nn.ReLU()
        self.hidden_to_output_layer = nn.Linear(8, 1)

    def forward(self, x):
        hidden1 = self.input_to_hidden_layer(x)
        hidden2 = self.hidden_layer_activation(hidden1)
        return self.hidden_to_output_layer(hidden2), hidden2


mynet = MyNeuralNet()
with torch.no_grad():
    for i, p in enumerate(mynet.parameters()):
        p.copy_(torch.linspace(-0.5, 0.5, p.numel()).view(p.shape) * (i + 1) / 4)
loss_func = nn.MSELoss()
opt = SGD(mynet.parameters(), lr=0.001)
loss_history = []
for _ in range(30):
    for xb, yb in dl:
        opt.zero_grad()
        loss_value = loss_func(mynet(xb)[0], yb)
        loss_value.backward()
        opt.step()
        loss_history.append(loss_value.item())
print([round(v, 4) for v in loss_history[::10]])
print(mynet(X)[1])
val_x = torch.tensor([[10, 11]]).float()
print(mynet(val_x)[0])
print(mynet.input_to_hidden_layer.weight.grad)
