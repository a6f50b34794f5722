"""Learn-the-basics 'Datasets & DataLoaders' and 'Transforms': a custom Dataset, batching, splitting."""
import torch
from torch.utils.data import Dataset, DataLoader, random_split, Subset, ConcatDataset


class SquaresDataset(Dataset):
    def __init__(self, n, transform=None, target_transform=None):
        self.n = n
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        image = torch.full((1, 4, 4), float(idx))
        label = idx % 10
        if self.transform:
            image = self.transform(image)
        if self.target_transform:
            label = self.target_transform(label)
        return image, label


def one_hot(y):
    return torch.zeros(10, dtype=torch.float).scatter_(0, torch.tensor(y), value=1)


ds = SquaresDataset(100, transform=lambda x: x / 100.0, target_transform=one_hot)
print(len(ds))
img, label = ds[13]
print(img.shape, img[0, 0, 0].item(), label)

loader = DataLoader(ds, batch_size=32, shuffle=False)
print(len(loader))
for batch_idx, (images, labels) in enumerate(loader):
    print(batch_idx, images.shape, labels.shape, images.dtype, labels.dtype)

plain = SquaresDataset(100)
images, labels = next(iter(DataLoader(plain, batch_size=8)))
print(labels)
print(images[:, 0, 0, 0])

torch.manual_seed(0)
shuffled = DataLoader(plain, batch_size=10, shuffle=True)
seen = sorted(int(l) for _, labels in shuffled for l in labels)
print("shuffle keeps every sample once:", seen == sorted(i % 10 for i in range(100)))

dl = DataLoader(plain, batch_size=30, drop_last=True)
print([b[0].shape[0] for b in dl])

train_set, val_set = random_split(plain, [80, 20], generator=torch.Generator().manual_seed(42))
print(len(train_set), len(val_set), type(train_set).__name__)
print(len(set(train_set.indices) | set(val_set.indices)))

sub = Subset(plain, [1, 2, 3])
print([sub[i][1] for i in range(len(sub))])
both = ConcatDataset([sub, Subset(plain, [7])])
print(len(both), both[3][1])


def collate(batch):
    xs = torch.stack([b[0].flatten() for b in batch])
    ys = torch.tensor([b[1] for b in batch])
    return xs, ys


xs, ys = next(iter(DataLoader(plain, batch_size=4, collate_fn=collate)))
print(xs.shape, ys)
