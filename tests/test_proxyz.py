"""Held-out proxy scripts (proxyz): what they printed differently from PyTorch."""
import abc
import pickle

import pytest

import tapegrad
from tapegrad import nn
from tapegrad.utils.data import DataLoader, TensorDataset

torch = pytest.importorskip("torch")


def _objects(lib):
    p = lib.nn.Parameter(lib.ones(1))
    opt = lib.optim.Adam([p], lr=0.1)
    sched = lib.optim.lr_scheduler.StepLR(opt, 1)
    plateau = lib.optim.lr_scheduler.ReduceLROnPlateau(lib.optim.SGD([p], lr=0.1))
    loader = lib.utils.data.DataLoader(lib.utils.data.TensorDataset(lib.ones(2, 1)), batch_size=1)
    ds = lib.utils.data.TensorDataset(lib.ones(4, 1))
    parts = lib.utils.data.random_split(ds, [2, 2])
    both = lib.utils.data.ConcatDataset(parts)
    return [opt, lib.optim.SGD([p], lr=0.1), sched, plateau, loader, ds, parts[0], both]


def test_type_of_optimizer_scheduler_loader_dataset_prints_torch_path():
    # A tutorial's `print(type(optimizer))` / `print(type(train_loader))` shows PyTorch's path.
    ours = [repr(type(o)) for o in _objects(tapegrad)]
    theirs = [repr(type(o)) for o in _objects(torch)]
    assert ours == theirs


def test_user_subclasses_keep_their_module_and_may_mix_abc():
    class MyOpt(tapegrad.optim.SGD, abc.ABC):
        pass

    class MyLoader(DataLoader):
        pass

    class MyData(tapegrad.utils.data.Dataset, abc.ABC):
        @abc.abstractmethod
        def __len__(self):
            ...

    class MyStream(tapegrad.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(2))

    with pytest.raises(TypeError):
        MyData()  # still abstract, as under PyTorch
    assert list(DataLoader(MyStream(), batch_size=None)) == [0, 1]

    assert repr(MyOpt).endswith(".MyOpt'>") and "torch" not in repr(MyOpt)
    assert "torch" not in repr(MyLoader)
    p = nn.Parameter(tapegrad.ones(1))
    assert isinstance(MyOpt([p], lr=0.1), tapegrad.optim.Optimizer)


def test_optimizer_state_still_pickles_and_loader_still_iterates():
    p = nn.Parameter(tapegrad.ones(2))
    opt = tapegrad.optim.SGD([p], lr=0.1, momentum=0.9)
    p.sum().backward()
    opt.step()
    state = pickle.loads(pickle.dumps(opt.state_dict()))
    assert state["param_groups"][0]["momentum"] == 0.9
    batches = [b[0].tolist() for b in DataLoader(TensorDataset(tapegrad.arange(3.0)), batch_size=2)]
    assert batches == [[0.0, 1.0], [2.0]]
