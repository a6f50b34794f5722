"""DataLoader idioms of older tutorials run on today's PyTorch: a Dataset over a numpy table,
`num_workers=2` with shuffle=False, batches unpacked in enumerate(loader, 0), `next(iter(loader))`,
len(loader) with and without drop_last, and the Python 2 spelling `iter(loader).next()`, which
stops with an AttributeError naming the loader's iterator class (caught and printed: a corpus
script must finish under PyTorch).  The table is deterministic, so nothing depends on the random stream."""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class TableDataset(Dataset):
    """A diabetes-style table: eight feature columns and a 0/1 label column."""

    def __init__(self):
        xy = (np.arange(30 * 9, dtype=np.float32).reshape(30, 9) % 7) / 7.0
        xy[:, -1] = (np.arange(30) % 2).astype(np.float32)
        self.len = xy.shape[0]
        self.x_data = torch.from_numpy(xy[:, 0:-1])
        self.y_data = torch.from_numpy(xy[:, [-1]])

    def __getitem__(self, index):
        return self.x_data[index], self.y_data[index]

    def __len__(self):
        return self.len


dataset = TableDataset()
loader = DataLoader(dataset=dataset, batch_size=8, shuffle=False, num_workers=2)
print(len(loader), len(DataLoader(dataset, batch_size=8, drop_last=True)))
for epoch in range(2):
    for i, data in enumerate(loader, 0):
        inputs, labels = data
        inputs, labels = torch.tensor(inputs), torch.tensor(labels)
        print(f'Epoch: {epoch} {i} | Inputs {tuple(inputs.shape)} {inputs.dtype} sum {inputs.sum():.4f} | Labels {labels.view(-1).tolist()}')

X, y = next(iter(DataLoader(dataset, batch_size=4)))
print(X.shape, y.shape, y.dtype)
for workers in (0, 2):
    it = iter(DataLoader(dataset, batch_size=4, num_workers=workers))
    try:
        it.next()
    except AttributeError as e:
        print("AttributeError:", e)
