"""Gaps found running held-out tutorials (zhiyuan8/Pytorch-tutorial, Mzh2002/PyTorch-Tutorial,
rsk15035032/Pytorch-tutorial) under tapegrad: what they print must be what PyTorch prints."""
import re

import pytest

import tapegrad
from tapegrad.utils.data import (BatchSampler, DataLoader, RandomSampler, SequentialSampler,
                                 Subset, TensorDataset)


def _norm(text):
    return re.sub(r"0x[0-9a-f]+", "0x?", text)


def _objects(lib):
    ds = lib.utils.data.TensorDataset(lib.zeros(4, 2))
    dl = lib.utils.data.DataLoader(ds, batch_size=2)
    opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1)
    sched = lib.optim.lr_scheduler
    return [dl, ds, lib.utils.data.Subset(ds, [0]), lib.utils.data.RandomSampler(ds),
            lib.utils.data.SequentialSampler(ds), iter(dl), dl.batch_sampler,
            sched.StepLR(opt, 1), sched.ReduceLROnPlateau(opt), sched.CosineAnnealingLR(opt, 3)]


def test_data_and_scheduler_objects_print_torch_paths():
    # print(train_dataloader) in a tutorial printed <tapegrad.utils.data.dataloader.DataLoader ...>
    texts = [_norm(repr(o)) for o in _objects(tapegrad)]
    assert texts[0] == "<torch.utils.data.dataloader.DataLoader object at 0x?>"
    assert texts[5] == "<torch.utils.data.dataloader._SingleProcessDataLoaderIter object at 0x?>"
    assert texts[7] == "<torch.optim.lr_scheduler.StepLR object at 0x?>"
    assert all(t.startswith("<torch.") for t in texts)


def test_data_and_scheduler_reprs_match_torch(torch):
    assert [_norm(repr(o)) for o in _objects(tapegrad)] == [_norm(repr(o)) for o in _objects(torch)]
    assert _norm(str(_objects(tapegrad)[0])) == _norm(str(_objects(torch)[0]))


def test_user_subclass_keeps_its_module(torch):
    class MyData(tapegrad.utils.data.Dataset):
        def __len__(self):
            return 1

    class TorchData(torch.utils.data.Dataset):
        def __len__(self):
            return 1

    mine, theirs = _norm(repr(MyData())), _norm(repr(TorchData()))
    assert mine == theirs.replace("TorchData", "MyData")
    assert mine.startswith("<" + __name__ + ".")


def test_multiprocessing_iterator_repr():
    dl = DataLoader(TensorDataset(tapegrad.arange(4.0)), batch_size=2, num_workers=1)
    it = iter(dl)
    try:
        assert _norm(repr(it)) == "<torch.utils.data.dataloader._MultiProcessingDataLoaderIter object at 0x?>"
    finally:
        del it


def test_hook_handle_repr_matches_torch(torch):
    mine = tapegrad.nn.Linear(2, 2).register_forward_hook(lambda *a: None)
    theirs = torch.nn.Linear(2, 2).register_forward_hook(lambda *a: None)
    assert _norm(repr(mine)) == _norm(repr(theirs)) == "<torch.utils.hooks.RemovableHandle object at 0x?>"
    # a tensor hook's handle (the core's own handle type) prints the same
    assert _norm(repr(tapegrad.zeros(1, requires_grad=True).register_hook(lambda g: g))) == _norm(
        repr(torch.zeros(1, requires_grad=True).register_hook(lambda g: g)))
