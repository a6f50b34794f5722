"""Inspired by chaddy1004/pytorch-weighted-sampler (a DataLoader subclass per sampling policy
over an imbalanced label list): WeightedRandomSampler with and without replacement, a custom
round-robin Sampler, BatchSampler and batch_sampler=, SubsetRandomSampler, random_split with
fractions, ConcatDataset/ChainDataset, an IterableDataset sharding by get_worker_info, and
default_collate of dicts, namedtuples, numpy arrays and strings.  Random draws are reported by
what does not depend on the stream (counts, lengths, sorted contents, dtypes)."""
import collections
import random

import numpy as np
import torch
from torch.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset,
                              IterableDataset, RandomSampler, Sampler, SequentialSampler,
                              SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
                              default_collate, get_worker_info, random_split)

random.seed(1004)
np.random.seed(1004)
torch.manual_seed(1004)

Sample = collections.namedtuple("Sample", ["features", "label"])


class ImbalancedDataset(Dataset):
    def __init__(self, ratio, len_minor=6):
        self.labels = [1] * (len_minor * ratio) + [0] * len_minor
        self.n_major, self.n_minor = len_minor * ratio, len_minor

    def __getitem__(self, index):
        label = self.labels[index]
        return {"x": np.full(2, index, dtype=np.float32), "y": label,
                "w": 0.5 * (label + 1), "name": f"item{index}",
                "pair": Sample(torch.tensor([index, -index]), label)}

    def __len__(self):
        return len(self.labels)


class WeightedLoader(DataLoader):
    def __init__(self, dataset, final_size, replacement):
        counts = {0: dataset.n_minor, 1: dataset.n_major}
        weights = [len(dataset) / counts[lab] for lab in dataset.labels]
        self.weights_used = weights
        sampler = WeightedRandomSampler(torch.DoubleTensor(weights), final_size,
                                        replacement=replacement)
        super().__init__(dataset, batch_size=4, sampler=sampler, num_workers=0)


ds = ImbalancedDataset(ratio=3)
print(len(ds), ds.n_major, ds.n_minor, ds[5]["name"])
over = WeightedLoader(ds, final_size=10, replacement=True)
under = WeightedLoader(ds, final_size=8, replacement=False)
for name, loader in (("over", over), ("under", under)):
    sizes, seen = [], []
    for batch in loader:
        sizes.append(len(batch["y"]))
        seen += batch["name"]
    print(name, len(loader), sizes, len(seen), type(batch["y"]).__name__, batch["y"].dtype,
          batch["x"].dtype, tuple(batch["x"].shape), batch["w"].dtype)
    print(" ", type(batch["pair"]).__name__, batch["pair"].features.shape,
          batch["pair"].label.dtype, type(loader.sampler).__name__,
          loader.sampler.replacement, loader.sampler.num_samples)
print("no repeats without replacement", len(set(seen)) == len(seen))
sampled = list(WeightedRandomSampler([0.0, 0.0, 1.0, 0.0], 5))
print(sampled, type(sampled[0]).__name__)
try:
    list(WeightedRandomSampler([0.0, 1.0], 3, replacement=False))
except RuntimeError as e:
    print("RuntimeError", str(e)[:60])


class RoundRobinSampler(Sampler):
    """Alternates classes, oversampling the minority one (as a balanced-batch sampler)."""

    def __init__(self, labels):
        by = collections.defaultdict(list)
        for i, lab in enumerate(labels):
            by[lab].append(i)
        longest = max(len(v) for v in by.values())
        self.groups = [(v * longest)[:longest] for _, v in sorted(by.items())]

    def __iter__(self):
        for row in zip(*self.groups):
            yield from row

    def __len__(self):
        return sum(len(g) for g in self.groups)


rr = RoundRobinSampler(ds.labels)
loader = DataLoader(ds, batch_size=6, sampler=rr, drop_last=True)
print(len(rr), len(loader), [b["y"].tolist() for b in loader][:2])
bs = BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=False)
print(list(bs), len(bs), len(BatchSampler(range(7), 3, True)))
print([b.tolist() for b in DataLoader(torch.arange(10, 17), batch_sampler=bs)])
sub = DataLoader(TensorDataset(torch.arange(20.0)), batch_size=4,
                 sampler=SubsetRandomSampler(list(range(0, 20, 3))))
print(sorted(int(v) for (b,) in sub for v in b), len(sub))
print(len(list(RandomSampler(range(5), replacement=True, num_samples=9))))

parts = random_split(range(11), [0.5, 0.3, 0.2], generator=torch.Generator().manual_seed(3))
print([len(p) for p in parts], sorted(i for p in parts for i in p), type(parts[0]).__name__)
try:
    random_split(range(5), [3, 3])
except ValueError as e:
    print("ValueError", e)
cat = ConcatDataset([TensorDataset(torch.arange(3)), TensorDataset(torch.arange(10, 14))])
print(len(cat), cat.cumulative_sizes, cat[4], cat[-1])


class Shards(IterableDataset):
    def __init__(self, start, end):
        super().__init__()
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per = (self.end - self.start + info.num_workers - 1) // info.num_workers
        lo = self.start + info.id * per
        return iter(range(lo, min(lo + per, self.end)))


print(get_worker_info())
print([b.tolist() for b in DataLoader(Shards(3, 10), batch_size=3)])
print([b.tolist() for b in DataLoader(Shards(3, 10), batch_size=3, drop_last=True)])
print(list(ChainDataset([Shards(0, 2), Shards(5, 7)])))
try:
    DataLoader(Shards(0, 3), shuffle=True)
except ValueError as e:
    print("ValueError", str(e)[:70])

print(default_collate([np.array([1.5, 2.5]), np.array([3.5, 4.5])]).dtype,
      default_collate([np.int32(1), np.int32(2)]), default_collate([1.5, 2]))
print(default_collate([("a", 1), ("b", 2)]), default_collate([[1, 2], [3, 4]]))
print(default_collate([{"k": True}, {"k": False}]))
try:
    default_collate([torch.zeros(2), torch.zeros(3)])
except RuntimeError as e:
    print("RuntimeError", str(e)[:50])
g = torch.Generator().manual_seed(7)
torch.randperm(4, generator=g)
twin = g.clone_state()
print(torch.equal(torch.randperm(9, generator=g), torch.randperm(9, generator=twin)),
      twin.initial_seed() == g.initial_seed())
