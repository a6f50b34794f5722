"""nn.ParameterList / nn.ParameterDict and Module full backward (pre-)hooks (issue 15)."""
from __future__ import annotations

from collections import OrderedDict
import copy

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn


def _holder(lib_nn, lib):
    """A module holding a ParameterList and a ParameterDict, of tapegrad's or torch's nn."""

    class _Holder(lib_nn.Module):
        def __init__(self):
            super().__init__()
            self.ps = lib_nn.ParameterList([lib_nn.Parameter(lib.ones(1)) for _ in range(2)])
            self.pd = lib_nn.ParameterDict({"x": lib_nn.Parameter(lib.ones(2))})

    return _Holder()


# -- ParameterList -------------------------------------------------------------------------------

def test_parameter_list_registers_and_wraps_tensors():
    pl = nn.ParameterList([nn.Parameter(tg.ones(2, 3)), tg.zeros(3, dtype=tg.float64),
                           nn.Parameter(tg.ones(2), requires_grad=False)])
    assert isinstance(pl[1], nn.Parameter) and pl[1].requires_grad
    assert not pl[2].requires_grad and pl[-1] is pl[2]
    pl.append(5)
    assert len(pl) == 4 and pl[3] == 5
    assert list(pl.state_dict()) == ["0", "1", "2"]
    assert [name for name, _ in pl.named_parameters()] == ["0", "1", "2"]
    tail = pl[1:]
    assert type(tail) is nn.ParameterList and len(tail) == 3 and tail[0] is pl[1]
    pl[0] = tg.zeros(4)
    assert isinstance(pl[0], nn.Parameter) and pl[0].shape == (4,)
    pl += [tg.ones(1)]
    pl.extend([tg.ones(1)])
    assert len(pl) == 6
    with pytest.raises(IndexError, match="index 7 is out of range"):
        pl[7]
    with pytest.raises(TypeError, match="should be called with an iterable"):
        pl.extend(3)
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        pl(1)


def test_parameter_list_repr():
    pl = nn.ParameterList([nn.Parameter(tg.ones(2, 3)), tg.zeros(3, dtype=tg.float64)])
    pl.append("x")
    assert repr(pl) == ("ParameterList(\n"
                        "    (0): Parameter containing: [torch.float32 of size 2x3]\n"
                        "    (1): Parameter containing: [torch.float64 of size 3]\n"
                        "    (2): Object of type: str\n"
                        ")")
    assert repr(nn.ParameterList()) == "ParameterList()"


# -- ParameterDict -------------------------------------------------------------------------------

def test_parameter_dict_order_and_mapping_methods():
    pd = nn.ParameterDict({"b": nn.Parameter(tg.ones(2)), "a": tg.ones(1, 2)})
    pd["c"] = tg.zeros(1)
    pd.update(OrderedDict([("z", tg.ones(1)), ("y", tg.ones(1))]))
    # a plain dict is added in sorted key order, an OrderedDict in its own order
    assert list(pd.keys()) == ["a", "b", "c", "z", "y"]
    assert [name for name, _ in pd.named_parameters()] == ["a", "b", "c", "z", "y"]
    assert isinstance(pd["a"], nn.Parameter) and "c" in pd and pd.get("q") is None
    assert pd.pop("a").shape == (1, 2) and len(pd) == 4
    assert pd.popitem()[0] == "y" and list(reversed(pd)) == ["z", "c", "b"]
    assert pd.setdefault("n", tg.ones(3)).shape == (3,)
    merged = pd | {"k": tg.ones(1)}
    assert list(merged) == ["b", "c", "z", "n", "k"] and "k" not in pd
    assert list(nn.ParameterDict([("q", tg.ones(1)), ("p", tg.ones(1))])) == ["q", "p"]
    pd.clear()
    assert len(pd) == 0 and repr(pd) == "ParameterDict()"


def test_parameter_dict_errors():
    pd = nn.ParameterDict({"a": tg.ones(1)})
    with pytest.raises(TypeError, match="cannot be used as a key as it is not a string"):
        pd[1]
    with pytest.raises(TypeError, match="cannot be used as a key as it is not a string"):
        pd[1] = tg.ones(1)
    with pytest.raises(AttributeError, match="'ParameterDict' object has no attribute 'zz'"):
        pd["zz"]
    with pytest.raises(ValueError, match="has length 1; 2 is required"):
        pd.update([("a",)])
    with pytest.raises(TypeError, match="should be called with an iterable of key/value pairs"):
        pd.update(3)


def test_parameter_dict_repr():
    pd = nn.ParameterDict({"w": tg.ones(2, 2), "v": tg.ones(3, dtype=tg.float64)})
    assert repr(pd) == ("ParameterDict(\n"
                        "    (v): Parameter containing: [torch.DoubleTensor of size 3]\n"
                        "    (w): Parameter containing: [torch.FloatTensor of size 2x2]\n"
                        ")")


def test_containers_inside_a_module_train_save_load_copy():
    m = _holder(nn, tg)
    assert list(m.state_dict()) == ["ps.0", "ps.1", "pd.x"]
    assert repr(m) == ("_Holder(\n"
                       "  (ps): ParameterList(\n"
                       "      (0): Parameter containing: [torch.float32 of size 1]\n"
                       "      (1): Parameter containing: [torch.float32 of size 1]\n"
                       "  )\n"
                       "  (pd): ParameterDict(  (x): Parameter containing: "
                       "[torch.FloatTensor of size 2])\n"
                       ")")
    opt = tg.optim.SGD(m.parameters(), lr=0.1)
    (m.ps[0] * 2 + m.pd["x"].sum()).sum().backward()
    opt.step()
    assert m.ps[0].tolist() == pytest.approx([0.8]) and m.pd.x.tolist() == pytest.approx([0.9] * 2)
    other = _holder(nn, tg)
    other.load_state_dict(m.state_dict())
    assert other.ps[0].tolist() == pytest.approx([0.8])
    clone = copy.deepcopy(m)
    assert clone.ps[0] is not m.ps[0] and clone.pd["x"].tolist() == m.pd["x"].tolist()


def test_containers_match_torch(torch):
    def describe(lib_nn, lib):
        m = _holder(lib_nn, lib)
        m.ps.append(lib.zeros(2, 2, dtype=lib.float64))
        m.pd.update({"b": lib.ones(1), "a": lib.ones(3)})
        return repr(m), list(m.state_dict()), [n for n, _ in m.named_parameters()]

    assert describe(nn, tg) == describe(torch.nn, torch)


# -- backward hooks ------------------------------------------------------------------------------

def _run_hook_script(lib):
    """What the hooks of a Linear layer and of a two-input module see, and the input grads."""
    lib.manual_seed(0)
    lin = lib.nn.Linear(3, 2).double()
    with lib.no_grad():
        lin.weight.copy_(lib.tensor([[1.0, -2.0, 0.5], [0.0, 3.0, 1.0]], dtype=lib.float64))
    log = []

    def hook(module, grad_input, grad_output):
        log.append(("hook", [None if g is None else g.tolist() for g in grad_input],
                    [None if g is None else g.tolist() for g in grad_output]))

    def pre_hook(module, grad_output):
        log.append(("pre", [g.tolist() for g in grad_output]))
        return (grad_output[0] * 2,)

    h1 = lin.register_full_backward_hook(hook)
    h2 = lin.register_full_backward_pre_hook(pre_hook)
    x = lib.ones(1, 3, dtype=lib.float64, requires_grad=True)
    lin(x).sum().backward()
    log.append(("x.grad", x.grad.tolist()))
    h2.remove()
    h1.remove()
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0] * 0 + 1,))
    x = lib.ones(1, 3, dtype=lib.float64, requires_grad=True)
    lin(x).sum().backward()
    log.append(("replaced", x.grad.tolist()))

    class Two(lib.nn.Module):
        def forward(self, a, k, b):
            return a * k, b + 1

    two = Two()
    two.register_full_backward_hook(hook)
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0], requires_grad=True)
    p, _ = two(a, 3, b)
    p.sum().backward()
    return log


def test_full_backward_hooks_values():
    log = _run_hook_script(tg)
    assert log[0] == ("pre", [[[1.0, 1.0]]])
    assert log[1] == ("hook", [[[2.0, 2.0, 3.0]]], [[[2.0, 2.0]]])
    assert log[2] == ("x.grad", [[2.0, 2.0, 3.0]])
    assert log[3] == ("replaced", [[1.0, 1.0, 1.0]])
    # a non-tensor input has no gradient; an unused output's gradient is None, an input's zeros
    assert log[4] == ("hook", [[3.0, 3.0], None, [0.0]], [[1.0, 1.0], None])


def test_full_backward_hooks_match_torch(torch):
    assert _run_hook_script(tg) == _run_hook_script(torch)


def test_full_backward_hook_without_input_grad_warns_and_cannot_replace():
    lin = nn.Linear(2, 1)
    seen = []
    lin.register_full_backward_hook(lambda m, gi, go: seen.append(gi))
    with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are "
                                         "computed with respect to module outputs"):
        lin(tg.ones(1, 2)).sum().backward()
    assert seen == [(None,)]
    lin2 = nn.Linear(2, 1)
    lin2.register_full_backward_hook(lambda m, gi, go: (tg.ones(1, 2),))
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="should always return "
                                                                      "None or None for all"):
        lin2(tg.ones(1, 2)).sum().backward()


def test_full_backward_hook_errors_and_removal():
    lin = nn.Linear(2, 1)
    handle = lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    x = tg.ones(1, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of "
                                           "grad_input, got 2, but expected 1"):
        lin(x).sum().backward()
    handle.remove()
    x = tg.ones(1, 2, requires_grad=True)
    lin(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), lin.weight.detach().numpy())
    calls = []
    lin.register_full_backward_pre_hook(lambda m, go: calls.append("second"))
    lin.register_full_backward_pre_hook(lambda m, go: calls.append("first"), prepend=True)
    lin(x).sum().backward()
    assert calls == ["first", "second"]
    with tg.no_grad():              # nothing records: the hooks never fire
        lin(x)
    assert calls == ["first", "second"]
