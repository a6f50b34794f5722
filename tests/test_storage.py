"""Storages: Tensor.untyped_storage() / storage() and the storage classes, as PyTorch has them.
Values are checked directly; with PyTorch installed, a script's printout is compared whole."""
import copy
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tapegrad as tg


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)    # TypedStorage's deprecation warning
        yield


def test_views_share_one_untyped_storage():
    x = tg.arange(6.)
    s = x.untyped_storage()
    assert x.untyped_storage() is s              # one object while it is referenced
    assert s.nbytes() == s.size() == len(s) == 24 and s.element_size() == 1
    assert s.data_ptr() == x.data_ptr()
    for view in (x[2:], x.view(2, 3).t(), x.expand(2, 6), x[::2]):
        assert view.untyped_storage() is s
        assert len(view.storage()) == 6


def test_writes_through_a_storage_reach_the_tensor():
    x = tg.arange(4.)
    t = x.storage()
    t[0] = 7
    t[-1] = 9
    assert x.tolist() == [7.0, 1.0, 2.0, 9.0]
    x.untyped_storage().fill_(0)
    assert x.tolist() == [0.0] * 4
    assert t.fill_(2.5) is t and x.tolist() == [2.5] * 4


def test_typed_storage_items_and_conversions():
    x = tg.tensor([1, 2, 3], dtype=tg.int32)
    t = x.storage()
    assert t.dtype == tg.int32 and t.element_size() == 4 and t.nbytes() == 12
    assert t.tolist() == [1, 2, 3] and list(t) == [1, 2, 3] and t[1] == 2
    assert t.type() == "torch.IntStorage"
    d = t.double()
    assert d.dtype == tg.float64 and d.tolist() == [1.0, 2.0, 3.0]
    assert d.data_ptr() != t.data_ptr()
    assert t.clone().tolist() == [1, 2, 3] and t.clone().data_ptr() != t.data_ptr()
    assert copy.deepcopy(t).data_ptr() != t.data_ptr()
    assert tg.tensor(t).dtype == tg.int32 and tg.tensor(t).tolist() == [1, 2, 3]


def test_untyped_storage_bytes_and_slices():
    x = tg.tensor([1.0], dtype=tg.float64)
    s = x.untyped_storage()
    assert s.tolist() == list(np.array([1.0]).view(np.uint8))
    part = s[4:8]
    assert part.nbytes() == 4 and part.data_ptr() == s.data_ptr() + 4


def test_bad_indexes_raise_index_error():
    t = tg.arange(4.).storage()
    with pytest.raises(IndexError, match="index 10 out of range for storage of size 4"):
        t[10]
    with pytest.raises(IndexError, match="index 100 out of range for storage of size 16"):
        tg.arange(4.).untyped_storage()[100]
    with pytest.raises(RuntimeError, match="slices are only supported in UntypedStorage"):
        t[1:2]


def test_legacy_storage_classes():
    assert tg.FloatStorage(3).size() == 3 and tg.FloatStorage(3).dtype == tg.float32
    assert tg.DoubleStorage([1, 2]).tolist() == [1.0, 2.0]
    assert tg.Storage is tg.FloatStorage
    t = tg.arange(3.).storage()
    assert isinstance(t, tg.TypedStorage) and isinstance(t, tg.FloatStorage)
    assert not isinstance(t, tg.DoubleStorage)
    assert isinstance(t.untyped(), tg.UntypedStorage)
    assert tg.is_storage(t) and tg.is_storage(t.untyped()) and not tg.is_storage(tg.ones(1))
    assert tg.UntypedStorage(5).nbytes() == 5
    assert tg.TypedStorage([1, 2], dtype=tg.int16).tolist() == [1, 2]


def test_storage_type_is_the_legacy_class_of_the_dtype():
    assert tg.ones(2).storage_type() is tg.FloatStorage
    assert tg.ones(2, dtype=tg.int64).storage_type() is tg.LongStorage


def test_legacy_constructor_shares_a_storage():
    x = tg.arange(4.)
    y = tg.Tensor(x[2:].storage())
    assert y.data_ptr() == x.data_ptr() and y.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert tg.FloatTensor(x.untyped_storage()).data_ptr() == x.data_ptr()
    with pytest.raises(RuntimeError, match="Expected a Storage of type Double or an "
                                           "UntypedStorage, but got type Float"):
        tg.DoubleTensor(x.storage())


_SCRIPT = r"""
import copy, sys, warnings, importlib
torch = importlib.import_module(sys.argv[1])
x = torch.arange(4.)
s = x.untyped_storage()
print(s)
print(type(s).__name__, s.data_ptr() == x.data_ptr(), s.nbytes(), len(s), s[1], s.device)
t = x.storage()
print(t)
print(type(t).__name__, t.size(), t[1], t.dtype, t.element_size(), t.tolist(), t.type())
y = x[2:]
print(len(y.storage()), y.storage_offset(), y.data_ptr() - x.data_ptr())
print(repr(torch.tensor([1, 2]).storage()), repr(torch.tensor([]).storage()))
print(torch.tensor([True]).storage(), torch.tensor([1.5], dtype=torch.float16).storage())
print(torch.tensor([], dtype=torch.float64).untyped_storage())
print(torch.tensor(torch.arange(3.).storage()), torch.Tensor(x.untyped_storage()))
print(torch.LongTensor(torch.tensor([1.0, 2.0], dtype=torch.float64).untyped_storage()))
e = torch.ones(3).expand(4, 3)
print(e.untyped_storage().nbytes(), len(e.storage()), torch.Storage([1.5]).dtype)
print(x.storage_type(), torch.ones(2, dtype=torch.bool).storage_type())
"""


def test_printout_matches_pytorch(torch, tmp_path):
    script = tmp_path / "storage_script.py"
    script.write_text(_SCRIPT)

    def run(module):
        # the same tapegrad this test imported, whether installed or in a source tree
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tg.__file__)))
        done = subprocess.run([sys.executable, "-W", "ignore", str(script), module],
                              capture_output=True, text=True, check=True, env=env)
        return done.stdout

    assert run("tapegrad") == run("torch")
