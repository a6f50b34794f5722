"""A FedAvg simulation in the style of federated-learning reference code, with deterministic
weights and data: a shard-based non-IID split (labels sorted with numpy, two shards per client)
and a Dirichlet label split (numpy's sampler; torch.distributions.Dirichlet's log_prob, mean and
variance for the proportions), a Dataset subclass over client indices, Subset and random_split
with a seeded generator, copy.deepcopy of the global model per client, local SGD with momentum,
state_dict averaging in place (+= over clients, torch.div, including BatchNorm's
num_batches_tracked), weighted aggregation with torch.stack(...).mean / sum, load_state_dict, a
test loop counting correct predictions, and deep copies of parameters carrying per-sample state
(which a deep copy leaves behind)."""
import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Subset, TensorDataset, random_split

rng = np.random.default_rng(7)
N, C, USERS = 48, 4, 4
images = torch.from_numpy(rng.standard_normal((N, 1, 8, 8)).astype(np.float32))
labels = torch.from_numpy(np.arange(N) % C)
train = TensorDataset(images, labels)


def fill_(module, scale):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 1.3 + i).view_as(p) * scale)


def shard_noniid(labels, num_users, num_shards=8, per_shard=6):
    idx_shard = list(range(num_shards))
    dict_users = {i: np.array([], dtype="int64") for i in range(num_users)}
    idxs_labels = np.vstack((np.arange(num_shards * per_shard), labels))
    idxs = idxs_labels[:, idxs_labels[1, :].argsort(kind="stable")][0, :]
    for i in range(num_users):
        rand_set = sorted(rng.choice(idx_shard, 2, replace=False).tolist())
        idx_shard = sorted(set(idx_shard) - set(rand_set))
        for rand in rand_set:
            dict_users[i] = np.concatenate((dict_users[i], idxs[rand * per_shard:(rand + 1) * per_shard]))
    return dict_users


def dirichlet_split(labels, num_users, alpha):
    parts = [[] for _ in range(num_users)]
    for k in range(C):
        idx_k = np.where(labels == k)[0]
        prop = rng.dirichlet(np.repeat(alpha, num_users))
        cuts = (np.cumsum(prop) * len(idx_k)).astype(int)[:-1]
        for part, chunk in zip(parts, np.split(idx_k, cuts)):
            part.extend(chunk.tolist())
    return parts


class DatasetSplit(Dataset):
    def __init__(self, dataset, idxs):
        self.dataset = dataset
        self.idxs = list(idxs)

    def __len__(self):
        return len(self.idxs)

    def __getitem__(self, item):
        image, label = self.dataset[self.idxs[item]]
        return image, label


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 3 * 3, C)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(x.view(-1, x.shape[1] * x.shape[2] * x.shape[3]))


def local_train(net, dataset, idxs, epochs=2, bs=4):
    net.train()
    loader = DataLoader(DatasetSplit(dataset, idxs), batch_size=bs, shuffle=False)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.5)
    epoch_loss = []
    for _ in range(epochs):
        batch_loss = []
        for images, labels in loader:
            net.zero_grad()
            loss = F.cross_entropy(net(images), labels)
            loss.backward()
            opt.step()
            batch_loss.append(loss.item())
        epoch_loss.append(sum(batch_loss) / len(batch_loss))
    return net.state_dict(), sum(epoch_loss) / len(epoch_loss)


def fed_avg(w):
    w_avg = copy.deepcopy(w[0])
    for k in w_avg.keys():
        for i in range(1, len(w)):
            w_avg[k] += w[i][k]
        w_avg[k] = torch.div(w_avg[k], len(w))
    return w_avg


def test(net, dataset):
    net.eval()
    loss, correct = 0.0, 0
    for data, target in DataLoader(dataset, batch_size=16):
        out = net(data)
        loss += F.cross_entropy(out, target, reduction="sum").item()
        pred = out.data.max(1, keepdim=True)[1]
        correct += pred.eq(target.data.view_as(pred)).long().cpu().sum()
    return 100.00 * correct / len(dataset), loss / len(dataset)


shards = shard_noniid(labels.numpy(), USERS)
print({k: (len(v), np.bincount(labels.numpy()[v], minlength=C).tolist()) for k, v in shards.items()})
dparts = dirichlet_split(labels.numpy(), USERS, 0.5)
print([len(p) for p in dparts])
dist = torch.distributions.Dirichlet(torch.full((USERS,), 0.5))
props = torch.tensor([len(p) / N for p in dparts])
props = (props + 1e-3) / (props + 1e-3).sum()
print(f"{dist.log_prob(props).item():.4f}", dist.mean, dist.variance.sum().item() > 0)
subsets = [Subset(train, p) for p in dparts]
print([len(s) for s in subsets], [int(s[0][1]) for s in subsets if len(s)])
a, b = random_split(train, [36, 12], generator=torch.Generator().manual_seed(0))
print(len(a), len(b), type(a).__name__, sorted(a.indices + b.indices) == list(range(N)))

net_glob = CNN()
fill_(net_glob, 0.3)
print(sorted(net_glob.state_dict().keys()))
for rnd in range(2):
    w_locals, loss_locals, sizes = [], [], []
    for idx in range(USERS):
        w, loss = local_train(copy.deepcopy(net_glob), train, shards[idx])
        w_locals.append(copy.deepcopy(w))
        loss_locals.append(loss)
        sizes.append(len(shards[idx]))
    w_glob = fed_avg(w_locals)
    print(w_glob["bn.num_batches_tracked"], w_glob["bn.num_batches_tracked"].dtype)
    net_glob.load_state_dict(w_glob)
    print(f"Round {rnd:3d}, Average loss {sum(loss_locals) / len(loss_locals):.4f}")
acc, tl = test(net_glob, train)
print(f"accuracy {acc:.2f} loss {tl:.4f}", acc.dtype)

frac = torch.tensor(sizes, dtype=torch.float32) / sum(sizes)
weighted = {}
for k in w_locals[0]:
    stacked = torch.stack([sd[k].float() for sd in w_locals])
    weighted[k] = (stacked * frac.view(-1, *([1] * (stacked.dim() - 1)))).sum(0)
mean_sd = {k: torch.stack([sd[k].float() for sd in w_locals]).mean(0) for k in w_locals[0]}
try:
    torch.stack([sd["bn.num_batches_tracked"] for sd in w_locals]).mean(0)
except RuntimeError as e:
    print("RuntimeError", str(e)[:60])
net_glob.load_state_dict(weighted)
print(net_glob.bn.num_batches_tracked, net_glob.bn.num_batches_tracked.dtype)
print(f"{net_glob.fc.weight.sum().item():.5f} {mean_sd['fc.weight'].sum().item():.5f}")
server = copy.deepcopy(net_glob)
with torch.no_grad():
    for k in server.state_dict().keys():
        server.state_dict()[k].copy_(sum(sd[k] for sd in w_locals) / len(w_locals))
print(f"{server.fc.bias.sum().item():.5f} {server.bn.running_var.sum().item():.5f}")

for p in net_glob.parameters():
    p.grad_sample = torch.ones(3, *p.shape)
clone = copy.deepcopy(net_glob)
print([hasattr(p, "grad_sample") for p in clone.parameters()], clone.fc.weight.grad)
print(all(hasattr(p, "grad_sample") for p in net_glob.parameters()))
