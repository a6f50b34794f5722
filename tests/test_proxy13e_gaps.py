"""What the session-13 proxy of public RL and model-summary scripts (seungeunrho/minimalRL,
higgsfield/RL-Adventure, nikhilbarhate99/PPO-PyTorch, openai/spinningup, ...) found tapegrad
doing differently from PyTorch, each checked against torch."""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.creation as creation

_SLOW_LIST = ("Creating a tensor from a list of numpy.ndarrays is extremely slow. Please consider "
              "converting the list to a single numpy.ndarray with numpy.array() before "
              "converting to a tensor.")

# -- torch.tensor of a list of ndarrays: the once-per-process warning, the dtype ----------------

_DATA = {
    "arrays": lambda: [np.zeros(3), np.ones(3)],
    "tuple of arrays": lambda: (np.zeros(3), np.ones(3), np.full(3, 2.0)),
    "nested": lambda: [[np.zeros(3)], [np.ones(3)]],
    "list then float64 array": lambda: [[1.0, 2.0, 3.0], np.ones(3)],
    "int arrays": lambda: [np.zeros(3, np.int32), np.ones(3, np.int32)],
    "float32 arrays": lambda: [np.zeros(2, np.float32), np.ones(2, np.float32)],
    "one array": lambda: [np.arange(2.0)],
    "empty array": lambda: [np.zeros(0)],
    "floats": lambda: [1.0, 2.5],
    "lists of floats": lambda: [[1.0, 2.0], [3.0, 4.0]],
}
_SLOW = {"arrays", "tuple of arrays", "nested", "list then float64 array", "int arrays",
         "float32 arrays", "one array"}


def _created(lib, factory, data, dtype):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kwargs = {} if dtype is None else {"dtype": getattr(lib, dtype)}
        t = getattr(lib, factory)(data, **kwargs)
    return t, [str(w.message).split(" (Triggered")[0] for w in caught
               if w.category is UserWarning]


@pytest.mark.parametrize("dtype", [None, "float32"])
@pytest.mark.parametrize("factory", ["tensor", "as_tensor", "Tensor"])
@pytest.mark.parametrize("name", sorted(_DATA))
def test_list_of_ndarrays_values_dtype_and_warning(name, factory, dtype, monkeypatch):
    torch = pytest.importorskip("torch")
    if factory == "Tensor" and dtype is not None:
        pytest.skip("Tensor(data) takes no dtype")
    monkeypatch.setattr(creation, "_warned_list_of_arrays", False)
    t, messages = _created(tg, factory, _DATA[name](), dtype)
    expected = _created(torch, factory, _DATA[name](), dtype)[0]
    assert str(t.dtype) == str(expected.dtype)
    assert tuple(t.shape) == tuple(expected.shape)
    np.testing.assert_array_equal(t.numpy(), expected.numpy())
    assert messages == ([_SLOW_LIST] if name in _SLOW else [])
    assert _created(tg, factory, _DATA[name](), dtype)[1] == []     # once per process


def test_list_of_ndarrays_warning_names_the_callers_line_once_per_process():
    # PyTorch's TORCH_WARN_ONCE: printed once, whatever the filters, at the user's line; a fresh
    # process of each library prints the same.
    script = ("import warnings, numpy as np, torch\nwarnings.simplefilter('always')\n"
              "for _ in range(3):\n    torch.tensor([np.zeros(2), np.ones(2)])\n"
              "torch.as_tensor([np.zeros(2)])\n")
    hook = str(__import__("pathlib").Path(__file__).parents[1] / "tools" / "corpus_hook")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**__import__("os").environ, "PYTHONPATH": hook}).stderr
    assert out.count("UserWarning") == 1
    assert f"<string>:4: UserWarning: {_SLOW_LIST}" in out


def test_list_of_zero_dim_arrays_has_no_len_as_in_torch():
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        for factory in ("tensor", "as_tensor", "Tensor"):
            with pytest.raises(TypeError, match="len\\(\\) of unsized object"):
                getattr(lib, factory)([np.array(1.0), np.array(2.0)])
    # after a Python number, a 0-d array is one more number (and a float64 one)
    expected = _created(torch, "tensor", [1.0, np.array(2.0)], None)[0]
    got = _created(tg, "tensor", [1.0, np.array(2.0)], None)[0]
    assert str(got.dtype) == str(expected.dtype) == "torch.float64"


# -- autograd.Variable(volatile=True) ----------------------------------------------------------

def test_variable_volatile_and_requires_grad_is_a_value_error_after_the_warning():
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        with pytest.warns(UserWarning, match="volatile was removed"):
            with pytest.raises(ValueError, match="Variable can't be volatile and require_grad "
                                                 "at the same time!"):
                lib.autograd.Variable(lib.ones(2), requires_grad=True, volatile=True)
        with pytest.warns(UserWarning, match="volatile was removed"):
            assert lib.autograd.Variable(lib.ones(2), volatile=True).requires_grad is False


# -- torch.utils.hooks, nn.parameter.is_lazy, sys.getsizeof of storages (torchinfo) --------------

def test_utils_hooks_removable_handle_as_torch():
    torch = pytest.importorskip("torch")
    from collections import OrderedDict
    for lib in (tg, torch):
        hooks, extra = OrderedDict(), OrderedDict()
        h = lib.utils.hooks.RemovableHandle(hooks, extra_dict=extra)
        hooks[h.id], extra[h.id] = "hook", True
        h2 = lib.utils.hooks.RemovableHandle(hooks, extra_dict=[extra])
        assert h2.id == h.id + 1
        with h:
            assert h.id in hooks
        assert h.id not in hooks and h.id not in extra
        h2.remove()     # nothing registered under it: no error
    m = tg.nn.Linear(2, 2)
    handle = m.register_forward_hook(lambda *a: None)
    assert isinstance(handle, tg.utils.hooks.RemovableHandle)
    handle.remove()
    assert len(m._forward_hooks) == 0


def test_is_lazy_as_torch():
    torch = pytest.importorskip("torch")
    import torch.nn.parameter as torch_parameter
    from tapegrad.nn.parameter import is_lazy
    for lib, lazy in ((tg, is_lazy), (torch, torch_parameter.is_lazy)):
        layer = lib.nn.LazyLinear(3)
        assert lazy(layer.weight) and not lazy(lib.nn.Linear(2, 3).weight)
        layer(lib.ones(2, 4))
        assert not lazy(layer.weight)


def test_getsizeof_storage_counts_its_bytes():
    torch = pytest.importorskip("torch")
    import sys as _sys
    for shape, dtype in (((16, 1, 28, 28), "float32"), ((3,), "float64"), ((0,), "float32")):
        got = [_sys.getsizeof(lib.ones(shape, dtype=getattr(lib, dtype)).untyped_storage())
               for lib in (tg, torch)]
        empty = [_sys.getsizeof(lib.ones(0).untyped_storage()) for lib in (tg, torch)]
        # the bytes held are counted as torch counts them; the object header is each
        # implementation's own (PyTorch's C storage object is 8 bytes larger)
        assert got[0] - empty[0] == got[1] - empty[1] == int(np.prod(shape)) * (
            8 if dtype == "float64" else 4)


# -- F.softmax / F.log_softmax without dim: the warning names its function and the user's line --

def test_implicit_softmax_dim_warning_names_function_and_callers_line():
    torch = pytest.importorskip("torch")
    import inspect

    def messages(lib):
        x = lib.ones(2, 3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            line = inspect.currentframe().f_lineno + 1
            a = lib.nn.functional.softmax(x)
            b = lib.nn.functional.log_softmax(x)
        assert a.shape == b.shape == (2, 3)
        return [(str(w.message), w.lineno - line, w.filename) for w in caught]

    got, expected = messages(tg), messages(torch)
    assert got == expected
    assert [m[0].split(" has")[0] for m in got] == [
        "Implicit dimension choice for softmax", "Implicit dimension choice for log_softmax"]
    assert [m[1] for m in got] == [0, 1] and got[0][2] == __file__


# -- torch.cuda.random; manual_seed takes what int() takes (torchattacks' APGD, AutoAttack) --------

def test_cuda_random_module_and_manual_seed_through_int():
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        assert lib.cuda.random.manual_seed is lib.cuda.manual_seed
        lib.cuda.random.manual_seed(3)       # no CUDA: a no-op in both
        for given, seeded in ((1.5, 1), ("3", 3), (lib.tensor(2.5), 2), (True, 1)):
            lib.manual_seed(given)
            assert lib.initial_seed() == seeded
        with pytest.raises(TypeError, match="int\\(\\) argument must be"):
            lib.manual_seed(None)
        with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
            lib.Generator().manual_seed(1.5)
    a = (tg.manual_seed(7.9), tg.rand(3))[1]
    assert tg.equal(a, (tg.manual_seed(7), tg.rand(3))[1])
