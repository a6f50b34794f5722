"""Tensor subclasses keep PyTorch's __torch_function__ protocol (tapegrad.overrides): results of
ops on a subclass's instances are of the subclass, a subclass's override sees every public
function, method, operator and tensor-valued property, nn.Parameter (and its subclasses) opt out,
and gradients flow through subclass instances to the leaves they came from.  Each scenario runs
under tapegrad and, where installed, PyTorch, and the two must print the same."""
import numpy as np
import pytest

import tapegrad


def type_names(lib):
    """The types of the results of ordinary code on a plain subclass's instance."""
    F = lib.nn.functional

    class Sub(lib.Tensor):
        pass

    x = lib.arange(6.).reshape(2, 3).as_subclass(Sub)
    plain = lib.ones(2, 3)
    cases = {
        "x + 1": x + 1, "1 + x": 1 + x, "1 - x": 1 - x, "2 / x": 2 / (x + 1), "x ** 2": x ** 2,
        "2 ** x": 2 ** x, "-x": -x, "abs": abs(x), "x @ x.T": x @ x.T, "x[0]": x[0],
        "x < 1": x < 1, "x == 1": x == 1, "plain + x": plain + x, "plain * x": plain * x,
        "plain.add(x)": plain.add(x), "exp()": x.exp(), "exp": lib.exp(x), "relu": F.relu(x),
        "softmax": F.softmax(x, -1), "cat": lib.cat([plain, x]), "stack": lib.stack([x, plain]),
        "where": lib.where(x > 1, x, 0.0), "max.values": x.max(0).values,
        "max[1]": x.max(0)[1], "split[0]": x.split(1)[0], "T": x.T, "mT": x.mT, "data": x.data,
        "detach": x.detach(), "clone": x.clone(), "view": x.view(-1), "reshape": x.reshape(3, 2),
        "float": x.float(), "to": x.to(lib.float64), "new_zeros": x.new_zeros(2),
        "zeros_like": lib.zeros_like(x), "sum": x.sum(), "mean(0)": x.mean(0),
        "linear": lib.nn.Linear(3, 2)(x), "builtin sum": sum([x, x]),
        "size": x.size(), "shape": x.shape, "tolist": x.tolist(), "item": x[0, 1].item(),
        "numpy": x.numpy(), "len": len(x), "grad": x.grad,
    }
    z = x.clone()
    z += 1
    z[0] = 7
    cases["in place"] = z
    return {k: type(v).__name__ for k, v in cases.items()}, z.tolist()


def test_results_keep_the_subclass():
    names, values = type_names(tapegrad)
    for key in ("x + 1", "1 - x", "x @ x.T", "plain * x", "plain.add(x)", "exp", "relu", "cat",
                "max.values", "T", "data", "zeros_like", "linear", "in place"):
        assert names[key] == "Sub", key
    for key, want in (("size", "Size"), ("tolist", "list"), ("item", "float"),
                      ("numpy", "ndarray"), ("len", "int"), ("grad", "NoneType")):
        assert names[key] == want, key
    assert values == [[7.0, 7.0, 7.0], [4.0, 5.0, 6.0]]


def test_results_keep_the_subclass_as_in_pytorch():
    torch = pytest.importorskip("torch")
    ours, values = type_names(tapegrad)
    theirs, their_values = type_names(torch)
    assert ours == theirs
    assert values == their_values


def seen_functions(lib):
    """The __name__s a logging subclass's override is handed, call by call."""
    seen = []

    class Logged(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs or {})

    x = lib.arange(6.).reshape(2, 3).as_subclass(Logged)
    out = []
    for step in (lambda: x + 1, lambda: x * 2, lambda: x / 2, lambda: -x, lambda: x.exp(),
                 lambda: lib.exp(x), lambda: lib.nn.functional.relu(x), lambda: x.sum(),
                 lambda: lib.cat([x, x]), lambda: x[0], lambda: x < 1, lambda: x.T):
        seen.clear()
        result = step()
        out.append((list(seen), type(result).__name__))
    return out


def test_the_override_sees_each_call_as_pytorch_names_it():
    got = seen_functions(tapegrad)
    assert got[0] == (["add"], "Logged")
    assert got[5] == (["exp"], "Logged")
    torch = pytest.importorskip("torch")
    assert got == seen_functions(torch)


def overrides(lib):
    """An override that answers some functions itself (HANDLED_FUNCTIONS style), a subclass of a
    subclass keeping its own methods, and the protocol's opt-out."""
    class Custom(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is lib.mean:
                return "custom mean"
            if func is lib.Tensor.sum:
                return "custom sum"
            return super().__torch_function__(func, types, args, kwargs or {})

    class Base(lib.Tensor):
        def double(self):
            return self * 2

    class Child(Base):
        def __add__(self, other):
            return "own add"

    class Plain(lib.Tensor):       # (the idiom of subclasses that opt out of the protocol)
        __torch_function__ = lib._C._disabled_torch_function_impl

    class MyParameter(lib.nn.Parameter):
        pass

    c = lib.ones(3).as_subclass(Custom)
    child = lib.ones(2).as_subclass(Child)
    return [lib.mean(c), c.sum(), type(c.mean()).__name__, type(c.exp()).__name__,
            type(child.double()).__name__, child + 1, type(child - 1).__name__,
            type(lib.ones(2).as_subclass(Plain) + 1).__name__,
            type(lib.nn.Parameter(lib.ones(2)) * 2).__name__,
            type(MyParameter(lib.ones(2)) * 2).__name__]


def test_overrides_answer_and_opt_outs_stay_plain():
    got = overrides(tapegrad)
    assert got == ["custom mean", "custom sum", "Custom", "Custom", "Child", "own add", "Child",
                   "Tensor", "Tensor", "Tensor"]
    torch = pytest.importorskip("torch")
    assert got == overrides(torch)


def test_gradients_flow_through_subclass_instances():
    class Sub(tapegrad.Tensor):
        pass

    w = tapegrad.tensor([0.5, -1.0, 2.0], dtype=tapegrad.float64, requires_grad=True)
    s = w.as_subclass(Sub)
    loss = (s * s).sum() + tapegrad.nn.functional.linear(s, tapegrad.ones(2, 3, dtype=tapegrad.float64)).sum()
    assert type(loss) is Sub and loss.requires_grad
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * w.detach().numpy() + 2)
    assert type(w.grad) is tapegrad.Tensor


def test_metadata_subclass_with_its_own_init():
    torch = pytest.importorskip("torch")

    def run(lib):
        class Tagged(lib.Tensor):
            @staticmethod
            def __new__(cls, data, tag=None):
                return lib.Tensor._make_subclass(cls, data)

            def __init__(self, data, tag=None):
                self.tag = tag

        t = Tagged(lib.tensor([1.0, 2.0]), tag="a")
        u = t * 2
        return type(t).__name__, t.tag, type(u).__name__, hasattr(u, "tag"), u.tolist()

    assert run(tapegrad) == run(torch)


def test_dispatch_off_inside_the_default_override():
    """Inside Tensor.__torch_function__ (the dispatch off for this thread) calls run plain, and
    the setting is restored after."""
    calls = []

    class Counted(tapegrad.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            calls.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs or {})

    x = tapegrad.ones(2, 2).as_subclass(Counted)
    with tapegrad._C.DisableTorchFunctionSubclass():
        assert type(x + 1) is tapegrad.Tensor
    repr(x)             # its formatting's own ops do not reach the override
    assert calls == ["__repr__"]
    calls.clear()
    x.exp()
    assert calls == ["exp"]
    assert not tapegrad._core._subclass_dispatch_set_off(None)
