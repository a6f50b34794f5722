"""Copying, pickling and multiprocess loading: deepcopy(model), pickle of tensors, DataLoader workers."""
import copy
import io
import pickle

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class RangeDataset(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor([float(i), float(i) ** 2]), i % 3


def main():
    torch.manual_seed(0)
    t = torch.arange(6.0).reshape(2, 3)
    back = pickle.loads(pickle.dumps(t))
    print(back, torch.equal(back, t), back.dtype)
    p = nn.Parameter(torch.ones(2))
    p2 = pickle.loads(pickle.dumps(p))
    print(type(p2).__name__, p2.requires_grad)

    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    clone = copy.deepcopy(model)
    with torch.no_grad():
        clone[0].weight.add_(1.0)
    x = torch.ones(5, 3)
    print('deepcopy is independent:', not torch.equal(model(x), clone(x)))
    print(copy.copy(t).shape, copy.deepcopy({'w': t})['w'].sum().item())
    sd = copy.deepcopy(model.state_dict())
    print(list(sd.keys()))
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    model(x).sum().backward()
    opt.step()
    print(len(copy.deepcopy(opt.state_dict())['state']))

    buf = io.BytesIO()
    torch.save(model, buf)
    buf.seek(0)
    restored = torch.load(buf, weights_only=False)
    print(type(restored).__name__, torch.equal(restored(x), model(x)))

    ds = RangeDataset(20)
    serial = [(xb.clone(), yb.clone()) for xb, yb in DataLoader(ds, batch_size=4)]
    parallel = list(DataLoader(ds, batch_size=4, num_workers=2))
    print(len(parallel), all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
                             for a, b in zip(serial, parallel)))
    loader = DataLoader(ds, batch_size=5, num_workers=2, persistent_workers=True, pin_memory=False)
    for epoch in range(2):
        total = sum(xb[:, 0].sum().item() for xb, _ in loader)
        print('epoch', epoch, total)


if __name__ == '__main__':
    main()
