"""derekhanbaliq/DeepLizard-PyTorch-Tutorial L10-L13, L19, L28_confusion_matrix.py (DeepLizard's
"Neural Network Programming" series): reshape/squeeze/flatten, broadcasting against numpy,
max/argmax with dims, the conv2d/linear Network's learnable parameters, then an Adam training
loop with get_num_correct, predictions gathered under @torch.no_grad() with torch.cat, a
torch.stack of (target, prediction) pairs and a confusion matrix filled by indexing an int32
tensor.

Adapted: FashionMNIST replaced by 600 synthetic 1x28x28 images (numpy, seeded) whose label is
the row of a bright band, in a small Dataset with a .targets tensor; parameters drawn from numpy; 5 epochs -> 3, lr 0.01 -> 0.003; prediction batch
10000 -> 250; sklearn's confusion_matrix and the plot dropped.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.set_printoptions(linewidth=120)
torch.set_grad_enabled(True)

# -- L10-L13: tensor shapes and reductions
t = torch.tensor([[1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]], dtype=torch.float32)
print(t.size(), len(t.shape), torch.tensor(t.shape).prod(), t.numel())
print(t.reshape([1, 12]).squeeze().unsqueeze(dim=0).shape)
print(t.reshape(1, -1).squeeze())
t3 = torch.stack((torch.ones(4, 4), 2 * torch.ones(4, 4), 3 * torch.ones(4, 4)))
print(t3.reshape(3, 1, 4, 4).flatten(start_dim=1).shape, t3.reshape(3, 1, 4, 4)[0][0][0][0])
t1 = torch.tensor([[1, 1], [1, 1]], dtype=torch.float32)
t2 = np.broadcast_to(torch.tensor([2, 4], dtype=torch.float32).numpy(), t1.shape)
print(t1 + t2, t1 + torch.tensor(np.broadcast_to(2, t1.shape), dtype=torch.float32))
m = torch.tensor([[1, 0, 0, 2], [0, 3, 3, 0], [4, 0, 0, 5]], dtype=torch.float32)
print(m.max(), m.argmax(), m.max(dim=0), m.max(dim=1), m.argmax(dim=1), m.mean().item())


def get_num_correct(preds, labels):
    return preds.argmax(dim=1).eq(labels).sum().item()


class Network(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels=1, out_channels=6, kernel_size=5)
        self.conv2 = nn.Conv2d(in_channels=6, out_channels=12, kernel_size=5)
        self.fc1 = nn.Linear(in_features=12 * 4 * 4, out_features=120)
        self.fc2 = nn.Linear(in_features=120, out_features=60)
        self.out = nn.Linear(in_features=60, out_features=10)

    def forward(self, t):
        t = F.max_pool2d(F.relu(self.conv1(t)), kernel_size=2, stride=2)
        t = F.max_pool2d(F.relu(self.conv2(t)), kernel_size=2, stride=2)
        t = F.relu(self.fc1(t.reshape(-1, 12 * 4 * 4)))
        t = F.relu(self.fc2(t))
        return self.out(t)


class FakeFashion(torch.utils.data.Dataset):
    def __init__(self, n=600):
        rng = np.random.RandomState(0)
        labels = rng.randint(0, 10, n)
        self.data = (rng.rand(n, 1, 28, 28) * 0.5).astype(np.float32)
        for i, label in enumerate(labels):     # the class is where a bright band lies
            self.data[i, 0, 2 * label + 4:2 * label + 7] += 0.5
        self.targets = torch.tensor(labels)

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        return torch.from_numpy(self.data[i]), int(self.targets[i])


train_set = FakeFashion()
network = Network()
rng = np.random.RandomState(1)
with torch.no_grad():
    for p in network.parameters():
        p.copy_(torch.from_numpy((rng.randn(*p.shape) * 0.1).astype(np.float32)))

# -- L19: learnable parameters
print(network)
print(network.conv1.weight.shape, network.fc1.weight.shape, network.out.weight.shape)
for name, param in network.named_parameters():
    print(name, '\t\t', param.shape)

# -- L28: training, predictions, confusion matrix
train_loader = torch.utils.data.DataLoader(train_set, batch_size=100)
optimizer = optim.Adam(network.parameters(), lr=0.003)
for epoch in range(3):
    total_loss = 0
    total_correct = 0
    for images, labels in train_loader:
        preds = network(images)
        loss = F.cross_entropy(preds, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
        total_correct += get_num_correct(preds, labels)
    print("epoch = ", epoch, ", total_correct = ", total_correct, ", loss = ", total_loss)


@torch.no_grad()
def get_all_preds(model, loader):
    all_preds = torch.tensor([])
    for images, labels in loader:
        all_preds = torch.cat((all_preds, model(images)), dim=0)
    return all_preds


train_preds = get_all_preds(network, torch.utils.data.DataLoader(train_set, batch_size=250))
print(train_preds.shape, train_preds.requires_grad, train_preds.grad, train_preds.grad_fn)
preds_correct = get_num_correct(train_preds, train_set.targets)
print("total correct: ", preds_correct, "accuracy: ", preds_correct / len(train_set))

stacked = torch.stack((train_set.targets, train_preds.argmax(dim=1)), dim=1)
print(stacked.shape, stacked[:3])
cmt = torch.zeros(10, 10, dtype=torch.int32)
for p in stacked:
    true_label, predicted_label = p.tolist()
    cmt[true_label, predicted_label] = cmt[true_label, predicted_label] + 1
print(cmt, cmt.sum(), cmt.diag().sum().item())
