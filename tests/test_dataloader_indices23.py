"""What a map-style dataset's __getitem__ / __getitems__ receive from DataLoader: Python ints and
a list, as in PyTorch.  SILENT before session 23: the built-in samplers' batches reached the
dataset as numpy.int64, so `torch.tensor([i, i + 1.0])` in a dataset built a float64 tensor
(numpy's float64 scalar) where PyTorch builds float32, and `isinstance(i, int)` was False."""
from __future__ import annotations

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

LOADERS = [{}, {"shuffle": True}, {"batch_size": 2}, {"batch_size": 3, "drop_last": True},
           {"batch_size": 2, "shuffle": True}, {"batch_size": None}]


def _first_batch(T, kw):
    class Items(T.utils.data.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return T.tensor([i, i + 1.0]), type(i).__name__, isinstance(i, int)

    x, kind, is_int = next(iter(T.utils.data.DataLoader(Items(), **kw)))
    return str(x.dtype), kind, is_int if isinstance(is_int, bool) else is_int.tolist()


@pytest.mark.parametrize("kw", LOADERS, ids=[str(k) for k in LOADERS])
def test_dataset_gets_python_ints(kw):
    assert _first_batch(tg, kw) == _first_batch(torch, kw)


def test_getitems_gets_a_list_of_ints():
    def seen(T):
        class Batched(T.utils.data.Dataset):
            def __len__(self):
                return 4

            def __getitems__(self, indices):
                return [(type(indices).__name__, type(indices[0]).__name__)] * len(indices)

        loader = T.utils.data.DataLoader(Batched(), batch_size=2, collate_fn=lambda b: b)
        return next(iter(loader))[0]
    assert seen(tg) == seen(torch) == ("list", "int")
