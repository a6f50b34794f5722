"""torch.utils.data pieces small training scripts combine: TensorDataset, splits, subsets, samplers."""
import torch
from torch.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, RandomSampler,
                              SequentialSampler, Subset, SubsetRandomSampler, TensorDataset,
                              WeightedRandomSampler, random_split, default_collate)

X = torch.arange(20.0).reshape(10, 2)
y = torch.arange(10) % 3
ds = TensorDataset(X, y)
print(len(ds), ds[3], len(ds.tensors))
print(ds[2:4])

gen = torch.Generator().manual_seed(42)
train, val = random_split(ds, [8, 2], generator=gen)
print(type(train).__name__, len(train), len(val))
print('disjoint and complete:', sorted(train.indices + val.indices) == list(range(10)))
a, b, c = random_split(range(10), [0.5, 0.3, 0.2], generator=torch.Generator().manual_seed(0))
print('fractional lengths:', len(a), len(b), len(c))
t1 = random_split(ds, [5, 5], generator=torch.Generator().manual_seed(7))[0].indices
t2 = random_split(ds, [5, 5], generator=torch.Generator().manual_seed(7))[0].indices
print('same seed same split:', t1 == t2)
try:
    random_split(ds, [3, 3])
except ValueError as e:
    print('bad lengths: ValueError')

sub = Subset(ds, [0, 2, 4])
print(len(sub), sub[1], sub.indices, sub.dataset is ds)
both = ConcatDataset([sub, Subset(ds, [9])])
print(len(both), both[3], both.cumulative_sizes)

print(list(SequentialSampler(range(4))))
print(sorted(RandomSampler(range(5))))
print(len(RandomSampler(range(5), replacement=True, num_samples=12)))
print(list(BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=False)))
print(list(BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=True)))
print(sorted(SubsetRandomSampler([5, 1, 3])))

weights = torch.tensor([0.0, 0.0, 1.0, 0.0])
wsampler = WeightedRandomSampler(weights, num_samples=6, replacement=True)
print('weighted draws:', list(wsampler), len(wsampler))
class_counts = torch.bincount(y)
sample_weights = 1.0 / class_counts[y].float()
print('class counts:', class_counts, 'sample weights:', sample_weights)
balanced = WeightedRandomSampler(sample_weights, num_samples=3000, replacement=True,
                                 generator=torch.Generator().manual_seed(1))
drawn = y[torch.tensor(list(balanced))]
freq = torch.bincount(drawn, minlength=3).float() / 3000
print('balanced classes:', bool((freq - 1 / 3).abs().max() < 0.05))
no_repl = list(WeightedRandomSampler([1.0, 2.0, 3.0, 4.0], num_samples=4, replacement=False))
print('without replacement is a permutation:', sorted(no_repl))

loader = DataLoader(ds, batch_size=4, shuffle=False)
for xb, yb in loader:
    print(xb.shape, yb.tolist())
print(len(loader), len(DataLoader(ds, batch_size=4, drop_last=True)))
loader = DataLoader(ds, batch_size=3, sampler=SubsetRandomSampler(range(6)))
print('sampler batches:', [len(yb) for _, yb in loader])
loader = DataLoader(ds, batch_sampler=BatchSampler(SequentialSampler(ds), 5, False))
print('batch_sampler:', [yb.tolist() for _, yb in loader])
shuffled = DataLoader(ds, batch_size=10, shuffle=True, generator=torch.Generator().manual_seed(3))
(xb, yb), = list(shuffled)
print('shuffle keeps pairs:', torch.equal((xb[:, 0] / 2).long() % 3, yb), sorted((xb[:, 0] / 2).long().tolist()) == list(range(10)))


class Squares(Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {'x': torch.tensor([float(i)]), 'y': i * i, 'name': f'item{i}'}


batch = next(iter(DataLoader(Squares(), batch_size=3)))
print(batch['x'].shape, batch['y'], batch['name'])
print(default_collate([(1, 2.0), (3, 4.0)]))
print(default_collate([torch.ones(2), torch.zeros(2)]))


def pad_collate(items):
    xs = [torch.ones(n) * n for n in items]
    longest = max(len(x) for x in xs)
    return torch.stack([torch.cat([x, torch.zeros(longest - len(x))]) for x in xs])


print(next(iter(DataLoader([1, 3, 2], batch_size=3, collate_fn=pad_collate))))
print(list(DataLoader([10, 20, 30], batch_size=None)))
