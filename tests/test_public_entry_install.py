"""One installer of the public functions' entry (tapegrad/_public_calls.py's install): out= where
PyTorch's function in that namespace takes it, nowhere else."""
import inspect
import types

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F
from tapegrad import _core, _out_arg, _public_calls

torch = pytest.importorskip("torch")


def _torch_takes_out(fn) -> bool:
    try:
        return "out" in inspect.signature(fn).parameters
    except (TypeError, ValueError):          # a builtin: its documented signature
        doc = fn.__doc__ or ""
        return "out (Tensor" in doc or "out=None" in doc


def _namespaces():
    import torch.nn.functional as TF
    return [("nn.functional", F, TF), ("linalg", tg.linalg, torch.linalg),
            ("special", tg.special, torch.special), ("fft", tg.fft, torch.fft)]


@pytest.mark.parametrize("label,ours,theirs", _namespaces(), ids=lambda v: v if
                         isinstance(v, str) else "")
def test_out_only_where_torch_has_it_in_that_namespace(label, ours, theirs):
    checked = 0
    for name in _out_arg.OUT_FUNCTIONS:
        if not (hasattr(ours, name) and hasattr(theirs, name)):
            continue
        mine = "out" in inspect.signature(getattr(ours, name)).parameters
        assert mine == _torch_takes_out(getattr(theirs, name)), f"{label}.{name}"
        checked += 1
    assert checked or label == "fft"


def test_out_at_run_time_as_torch():
    values = np.array([[0.5, -1.0], [2.0, 0.25]])
    for lib, functional in ((tg, F), (torch, torch.nn.functional)):
        x = lib.tensor(values)
        with pytest.raises(TypeError):          # F.sigmoid has no out= (torch.sigmoid has)
            functional.sigmoid(x, out=lib.empty(0, dtype=lib.float64))
        with pytest.raises(TypeError):          # nor has the method
            x.tanh(out=lib.empty(0, dtype=lib.float64))
    for name in ("sigmoid", "tanh"):
        out = tg.empty(0, dtype=tg.float64)
        assert getattr(tg, name)(tg.tensor(values), out=out) is out
        np.testing.assert_allclose(out.numpy(),
                                   getattr(torch, name)(torch.tensor(values)).numpy())
    out, ref = tg.empty(0, dtype=tg.float64), torch.empty(0, dtype=torch.float64)
    tg.special.erf(tg.tensor(values), out=out)
    torch.special.erf(torch.tensor(values), out=ref)
    np.testing.assert_allclose(out.numpy(), ref.numpy())


def test_one_installer_serves_both_kinds():
    def square(input):
        return input * input

    def cube(input):
        return input * input * input

    namespace = {"__name__": "scratch", "square": square, "cube": cube, "twice": cube}
    _public_calls.install(namespace, ("square",))
    assert isinstance(namespace["square"], _core.WithOut) and namespace["square"].takes_out
    assert isinstance(namespace["cube"], _core.WithOut) and not namespace["cube"].takes_out
    # an alias is its own entry of the one function, answering to its own name (as PyTorch's
    # torch.arccosh is not torch.acosh)
    assert namespace["twice"] is not namespace["cube"]
    assert namespace["twice"].__wrapped__ is namespace["cube"].__wrapped__ is cube
    assert (namespace["twice"].__name__, namespace["cube"].__name__) == ("twice", "cube")
    assert "out" in inspect.signature(namespace["square"]).parameters
    x = tg.tensor([1.0, 2.0])
    out = tg.empty(2)
    assert namespace["square"](x, out=out) is out and out.tolist() == [1.0, 4.0]
    with pytest.raises(TypeError):
        namespace["cube"](x, out=out)
    # installing again changes nothing (tapegrad's lazy loads call it once per module)
    before = dict(namespace)
    _public_calls.install(namespace, ("square",))
    assert all(namespace[k] is before[k] for k in before)


def test_entries_with_and_without_out_of_one_function_are_apart():
    # tapegrad.softmax and special.softmax wrap one function; only the first takes out=
    # (F.sigmoid is PyTorch's Python function calling the method: tests/test_proxycq.py)
    assert tg.softmax.__wrapped__ is tg.special.softmax.__wrapped__
    assert tg.softmax is not tg.special.softmax and tg.softmax.takes_out and \
        not tg.special.softmax.takes_out
    assert tg.ger.__wrapped__ is tg.outer.__wrapped__


def test_no_installer_left_in_out_arg():
    assert not hasattr(_out_arg, "install") and not hasattr(_out_arg, "with_out")
    assert isinstance(_public_calls.install, types.FunctionType)
