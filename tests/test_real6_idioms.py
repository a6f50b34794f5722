"""Idioms from the real6 held-out proxy (issue 15): public scripts (hunkim/PyTorchZeroToAll,
pytorch/examples, ShusenTang/Dive-into-DL-PyTorch) run with `import tapegrad as torch` print what
they print under PyTorch."""
from __future__ import annotations

import pytest

import tapegrad as tg


def _loader_iterator_error(lib, num_workers):
    ds = lib.utils.data.TensorDataset(lib.arange(8.0))
    it = iter(lib.utils.data.DataLoader(ds, batch_size=2, num_workers=num_workers))
    with pytest.raises(AttributeError) as info:
        it.next()      # the Python 2 idiom: Dive-into-DL-PyTorch 3.6 stops here under PyTorch
    return type(it).__name__, str(info.value)


@pytest.mark.parametrize("num_workers", [0, 1])
def test_loader_iterator_class_names_match_torch(torch, num_workers):
    # The AttributeError names the iterator's class; PyTorch's worker iterator is private.
    assert _loader_iterator_error(tg, num_workers) == _loader_iterator_error(torch, num_workers)


def test_worker_iterator_reachable_under_torch_module_name(torch):
    assert tg.utils.data.dataloader._MultiProcessingDataLoaderIter.__name__ == \
        torch.utils.data.dataloader._MultiProcessingDataLoaderIter.__name__
