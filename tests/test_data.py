"""tapegrad.utils.data: datasets, samplers, DataLoader batching/shuffling, collate, random_split."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _core
from tapegrad.utils import data
from tapegrad.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset,
                                 IterableDataset, RandomSampler, SequentialSampler, Subset,
                                 TensorDataset, default_collate, default_convert, random_split)


def _xy(n=10):
    x = _core.wrap_array(np.arange(n * 3, dtype=np.float32).reshape(n, 3))
    y = _core.wrap_array(np.arange(n, dtype=np.int64))
    return x, y


class ListDataset(Dataset):
    """A plain map-style dataset (exercises the generic per-sample path)."""

    def __init__(self, items):
        self.items = items

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)


# -- datasets -------------------------------------------------------------------------------------

def test_tensor_dataset():
    x, y = _xy()
    ds = TensorDataset(x, y)
    assert len(ds) == 10
    xi, yi = ds[4]
    assert xi.tolist() == [12.0, 13.0, 14.0] and yi.item() == 4
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, tg.tensor([1, 2, 3]))


def test_subset_and_concat():
    ds = ListDataset(list("abcdef"))
    sub = Subset(ds, [5, 0, 2])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == ["f", "a", "c"]
    assert sub.__getitems__([2, 0]) == ["c", "f"]
    cat = ds + ListDataset(list("xy"))
    assert isinstance(cat, ConcatDataset) and len(cat) == 8
    assert cat[6] == "x" and cat[-1] == "y" and cat[0] == "a"
    with pytest.raises(ValueError, match="absolute value of index"):
        cat[-9]
    with pytest.raises(NotImplementedError):
        Dataset()[0]


# -- DataLoader -----------------------------------------------------------------------------------

def test_batches_in_order_with_last_partial_batch():
    x, y = _xy(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=4)
    assert len(loader) == 3
    batches = list(loader)
    assert len(batches) == 3
    assert all(isinstance(b, list) and len(b) == 2 for b in batches)   # tuples collate to lists
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][0].shape == tg.Size([4, 3]) and batches[0][0].dtype == tg.float32
    assert batches[2][0].tolist() == [[24.0, 25.0, 26.0], [27.0, 28.0, 29.0]]


def test_drop_last_and_len():
    x, y = _xy(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=4, drop_last=True)
    assert len(loader) == 2
    assert [b[1].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    for n, bs, drop in [(10, 3, False), (10, 3, True), (9, 3, False), (9, 3, True), (1, 5, False),
                        (1, 5, True), (0, 2, False)]:
        ds = ListDataset(list(range(n)))
        loader = DataLoader(ds, batch_size=bs, drop_last=drop)
        assert len(loader) == len(list(loader))
        assert len(iter(loader)) == len(loader)


def _orders(loader):
    return [b[1].tolist() for b in loader]


def test_shuffle_is_a_permutation_repeatable_with_manual_seed():
    x, y = _xy(50)
    ds = TensorDataset(x, y)
    tg.manual_seed(123)
    loader = DataLoader(ds, batch_size=8, shuffle=True)
    epoch1, epoch2 = _orders(loader), _orders(loader)
    flat = [i for b in epoch1 for i in b]
    assert sorted(flat) == list(range(50)) and flat != list(range(50))
    assert [len(b) for b in epoch1] == [8] * 6 + [2]
    assert epoch1 != epoch2                     # a fresh order every epoch
    tg.manual_seed(123)
    loader = DataLoader(ds, batch_size=8, shuffle=True)
    assert _orders(loader) == epoch1 and _orders(loader) == epoch2
    # rows stay aligned across tensors
    for bx, by in DataLoader(ds, batch_size=8, shuffle=True):
        np.testing.assert_array_equal(bx._array[:, 0], by._array * 3)


def test_shuffle_with_explicit_generator():
    x, y = _xy(20)
    ds = TensorDataset(x, y)
    a = _orders(DataLoader(ds, batch_size=5, shuffle=True, generator=np.random.default_rng(7)))
    tg.manual_seed(0)                           # the default generator is not used
    b = _orders(DataLoader(ds, batch_size=5, shuffle=True, generator=np.random.default_rng(7)))
    assert a == b
    with pytest.raises(TypeError, match="generator must be a tapegrad.Generator"):
        list(DataLoader(ds, shuffle=True, generator=42))


def test_fast_path_equals_per_sample_path():
    x, y = _xy(13)
    order = [12, 0, 5, 5, 7, 3, 1, 2, 11]
    fast = list(DataLoader(TensorDataset(x, y), batch_size=4, sampler=order))
    slow = list(DataLoader(ListDataset([(x[i], y[i]) for i in range(13)]), batch_size=4,
                           sampler=order))
    assert len(fast) == len(slow) == 3
    for f, s in zip(fast, slow):
        for a, b in zip(f, s):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a._array, b._array)
    # through a Subset (e.g. from random_split) too
    sub = Subset(TensorDataset(x, y), [4, 2, 9])
    assert [b[1].tolist() for b in DataLoader(sub, batch_size=2)] == [[4, 2], [9]]
    assert len(DataLoader(sub, batch_size=2)) == 2


def test_batch_sampler_and_batch_size_none():
    ds = ListDataset([(i, float(i)) for i in range(6)])
    loader = DataLoader(ds, batch_sampler=[[0, 1], [5, 4, 3]])
    out = list(loader)
    assert out[1][0].tolist() == [5, 4, 3] and out[1][1].dtype == tg.float64
    single = list(DataLoader(ListDataset([np.array([1.0, 2.0]), np.array([3.0, 4.0])]),
                             batch_size=None))
    assert len(single) == 2 and single[1].tolist() == [3.0, 4.0]
    assert single[1].dtype == tg.float64
    assert list(BatchSampler(SequentialSampler(range(5)), 2, False)) == [[0, 1], [2, 3], [4]]
    assert list(BatchSampler(SequentialSampler(range(5)), 2, True)) == [[0, 1], [2, 3]]


def test_random_sampler_options():
    gen = np.random.default_rng(0)
    s = RandomSampler(range(5), replacement=True, num_samples=12, generator=gen)
    draws = list(s)
    assert len(draws) == len(s) == 12 and all(0 <= d < 5 for d in draws)
    s = RandomSampler(range(4), num_samples=10, generator=gen)
    draws = list(s)
    assert len(draws) == 10 and sorted(draws[:4]) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(range(4), num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(range(4), replacement=1)


def test_random_sampler_with_replacement_streams_a_huge_num_samples():
    # A trainer that samples forever (minGPT's) asks for 10**10 draws and takes a few batches.
    ds = TensorDataset(tg.arange(10))
    sampler = RandomSampler(ds, replacement=True, num_samples=int(1e10))
    loader = DataLoader(ds, sampler=sampler, batch_size=4)
    assert len(sampler) == 10**10
    batches = [b for _, (b,) in zip(range(3), loader)]
    assert [b.shape for b in batches] == [(4,)] * 3
    assert all(0 <= v < 10 for b in batches for v in b.tolist())
    first = next(iter(sampler))
    assert isinstance(first, int) and 0 <= first < 10


def test_batches_span_the_sampler_chunks(monkeypatch):
    from tapegrad.utils.data import sampler as sampler_module
    monkeypatch.setattr(sampler_module, "_DRAW_CHUNK", 3)
    ds = TensorDataset(tg.arange(5))
    for drop_last, sizes in ((False, [4, 4, 3]), (True, [4, 4])):
        loader = DataLoader(ds, sampler=RandomSampler(ds, replacement=True, num_samples=11),
                            batch_size=4, drop_last=drop_last)
        assert [len(b) for (b,) in loader] == sizes
    # Without replacement, one pass is one permutation per len(dataset) indices.
    loader = DataLoader(ds, sampler=RandomSampler(ds, num_samples=7), batch_size=2)
    order = [v for (b,) in loader for v in b.tolist()]
    assert len(order) == 7 and sorted(order[:5]) == [0, 1, 2, 3, 4]


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def test_iterable_dataset():
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3, drop_last=True)] == \
        [[0, 1, 2], [3, 4, 5]]
    assert len(DataLoader(Stream(7), batch_size=3)) == 3
    assert len(DataLoader(Stream(7), batch_size=3, drop_last=True)) == 2
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Stream(3), shuffle=True)


@pytest.mark.parametrize("kwargs,msg", [
    (dict(shuffle=True, sampler=[0, 1]), "sampler option is mutually exclusive with shuffle"),
    (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
    (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching"),
    (dict(num_workers=-1), "num_workers option should be non-negative"),
    (dict(batch_size=0), "batch_size should be a positive integer value"),
])
def test_dataloader_argument_errors(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        DataLoader(ListDataset([1, 2]), **kwargs)


# -- collate --------------------------------------------------------------------------------------

def test_default_collate_structures():
    Point = collections.namedtuple("Point", "x y")
    batch = [
        {"img": tg.tensor([[1.0, 2.0]]), "label": 1, "name": "a", "p": Point(1.5, True),
         "arr": np.array([1, 2], dtype=np.int32), "nested": [1, (2.0, 3)]},
        {"img": tg.tensor([[3.0, 4.0]]), "label": 2, "name": "b", "p": Point(2.5, False),
         "arr": np.array([3, 4], dtype=np.int32), "nested": [4, (5.0, 6)]},
    ]
    out = default_collate(batch)
    assert out["img"].shape == tg.Size([2, 1, 2]) and out["img"].dtype == tg.float32
    assert out["label"].tolist() == [1, 2] and out["label"].dtype == tg.int64
    assert out["name"] == ["a", "b"] or out["name"] == ("a", "b")
    assert isinstance(out["p"], Point) and out["p"].x.dtype == tg.float64
    assert out["p"].y.dtype == tg.bool and out["p"].y.tolist() == [True, False]
    assert out["arr"].dtype == tg.int32 and out["arr"].tolist() == [[1, 2], [3, 4]]
    assert isinstance(out["nested"], list) and out["nested"][0].tolist() == [1, 4]
    assert isinstance(out["nested"][1], list) and out["nested"][1][0].dtype == tg.float64
    assert default_collate([np.float32(1.5), np.float32(2.0)]).dtype == tg.float32


def test_default_collate_errors_and_promotion():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal"):
        default_collate([[1, 2], [3]])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got "
                                           r"\[2\] at entry 0 and \[3\] at entry 1"):
        default_collate([tg.tensor([1, 2]), tg.tensor([1, 2, 3])])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors"):
        default_collate([object(), object()])
    mixed = default_collate([tg.tensor([1, 2]), tg.tensor([0.5, 1.0])])
    assert mixed.dtype == tg.float32 and mixed.tolist() == [[1.0, 2.0], [0.5, 1.0]]
    assert default_convert((np.array([1.0]), "s"))[0].dtype == tg.float64


def test_collate_matches_torch(torch):
    from torch.utils.data import default_collate as torch_collate
    samples = [
        [(1, 2.5, True), (3, 4.5, False)],
        [{"a": [1, 2], "b": 0.5}, {"a": [3, 4], "b": 1.5}],
        [[1, 2.5], [3, 4]],
    ]
    for batch in samples:
        ours, theirs = default_collate(batch), torch_collate(batch)

        def compare(a, b):
            if isinstance(b, torch.Tensor):
                assert str(a.dtype) == str(b.dtype) and a.tolist() == b.tolist()
            elif isinstance(b, dict):
                assert list(a) == list(b)
                for k in b:
                    compare(a[k], b[k])
            else:
                assert type(a) is type(b) and len(a) == len(b)
                for x, y in zip(a, b):
                    compare(x, y)
        compare(ours, theirs)


# -- random_split ---------------------------------------------------------------------------------

def test_random_split_sizes_and_disjointness():
    ds = ListDataset(list(range(10)))
    parts = random_split(ds, [3, 7], generator=np.random.default_rng(0))
    assert [len(p) for p in parts] == [3, 7]
    seen = [p[i] for p in parts for i in range(len(p))]
    assert sorted(seen) == list(range(10))
    parts = random_split(ds, [0.33, 0.33, 0.34])
    assert [len(p) for p in parts] == [4, 3, 3]          # floors 3,3,3; remainder to the first
    idx = [set(p.indices) for p in parts]
    assert not (idx[0] & idx[1]) and not (idx[0] & idx[2]) and not (idx[1] & idx[2])
    assert [len(p) for p in random_split(ds, [0.5, 0.5])] == [5, 5]
    a = random_split(ds, [5, 5], generator=np.random.default_rng(3))
    b = random_split(ds, [5, 5], generator=np.random.default_rng(3))
    assert [p.indices for p in a] == [p.indices for p in b]
    tg.manual_seed(1)
    c = random_split(ds, [5, 5])
    tg.manual_seed(1)
    assert [p.indices for p in random_split(ds, [5, 5])] == [p.indices for p in c]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(ds, [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
        random_split(ds, [0.5, 1.5, -1.0])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(ListDataset([1, 2]), [0.9, 0.1])


def test_random_split_lengths_match_torch(torch):
    for n, fracs in [(10, [0.33, 0.33, 0.34]), (7, [0.5, 0.5]), (101, [0.8, 0.1, 0.1]),
                     (5, [0.25, 0.25, 0.25, 0.25]), (1000, [0.7, 0.2, 0.1])]:
        ours = [len(p) for p in random_split(ListDataset(list(range(n))), fracs)]
        theirs = [len(p) for p in torch.utils.data.random_split(range(n), fracs)]
        assert ours == theirs


def test_exports():
    for name in ["DataLoader", "Dataset", "TensorDataset", "Subset", "random_split",
                 "default_collate", "RandomSampler", "SequentialSampler", "BatchSampler"]:
        assert hasattr(data, name)
