"""nn.Module forward hooks and forward pre-hooks: call order, replacement of inputs / outputs,
kwargs, prepend, always_call, handle removal - checked against PyTorch."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import tapegrad as tg


def _scenario(M):
    """Run one script with hooks against library M; return what it records."""
    log = []
    M.manual_seed(0)
    lin = M.nn.Linear(2, 3)
    with M.no_grad():
        lin.weight.copy_(M.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
        lin.bias.zero_()
    x = M.tensor([[1.0, -1.0]])
    h1 = lin.register_forward_pre_hook(lambda m, a: log.append(("pre1", len(a))))
    h2 = lin.register_forward_pre_hook(lambda m, a: a[0] * 2)  # non-tuple is wrapped
    h3 = lin.register_forward_hook(lambda m, a, o: log.append(("post", a[0].tolist(),
                                                               o.tolist())))
    h4 = lin.register_forward_hook(lambda m, a, o: o + 1)
    h5 = lin.register_forward_hook(lambda m, a, o: log.append("first"), prepend=True)
    log.append(lin(x).tolist())
    for h in (h1, h2, h3, h4, h5):
        h.remove()
    h1.remove()  # removing twice is harmless
    log.append(lin(x).tolist())

    def pre_kw(m, a, k):
        return (a[0] * 0,), dict(k)

    hk = lin.register_forward_pre_hook(pre_kw, with_kwargs=True)
    hp = lin.register_forward_hook(lambda m, a, k, o: log.append(("kw", sorted(k))),
                                   with_kwargs=True)
    log.append(lin(x).tolist())
    hk.remove()
    hp.remove()
    return log


def test_forward_hook_parity(torch):
    assert _scenario(tg) == _scenario(torch)


def test_forward_hooks_values_without_torch():
    log = _scenario(tg)
    assert log == [("pre1", 1), "first", ("post", [[2.0, -2.0]], [[-2.0, -2.0, -2.0]]),
                   [[-1.0, -1.0, -1.0]], [[-1.0, -1.0, -1.0]], ("kw", []), [[0.0, 0.0, 0.0]]]


def test_activation_capture_and_gradient_through_replaced_output():
    net = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.ReLU(), tg.nn.Linear(4, 1))
    acts = {}
    for name, m in net.named_children():
        m.register_forward_hook(lambda m, a, o, name=name: acts.__setitem__(name, o.detach()))
    net[2].register_forward_hook(lambda m, a, o: o * 3)
    x = tg.randn(5, 3)
    y = net(x)
    assert sorted(acts) == ["0", "1", "2"]
    np.testing.assert_allclose(y.detach().numpy(), 3 * acts["2"].numpy(), rtol=1e-6)
    y.sum().backward()
    g3 = net[2].weight.grad.numpy()
    np.testing.assert_allclose(g3, 3 * acts["1"].numpy().sum(0, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("lib", ["tg", "torch"])
def test_always_call_runs_when_forward_raises(lib, request):
    M = tg if lib == "tg" else request.getfixturevalue("torch")
    seen = []

    class Boom(M.nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    b = Boom()
    b.register_forward_hook(lambda m, a, o: seen.append(("always", o)), always_call=True)
    b.register_forward_hook(lambda m, a, o: seen.append("plain"))
    with pytest.raises(ValueError, match="boom"):
        b(1)
    assert seen == [("always", None)]


@pytest.mark.parametrize("lib", ["tg", "torch"])
def test_bad_kwargs_pre_hook_result(lib, request):
    M = tg if lib == "tg" else request.getfixturevalue("torch")
    lin = M.nn.Linear(2, 2)
    lin.register_forward_pre_hook(lambda m, a, k: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match="must return None or a tuple of"):
        lin(M.ones(1, 2))


def test_handles_context_manager_and_copies():
    lin = tg.nn.Linear(2, 2)
    calls = []
    with lin.register_forward_hook(lambda m, a, o: calls.append(1)) as h:
        lin(tg.ones(1, 2))
    lin(tg.ones(1, 2))
    assert calls == [1] and isinstance(h.id, int)
    lin.register_forward_pre_hook(lambda m, a: None)
    copy.deepcopy(lin)(tg.ones(1, 2))
    clone = pickle.loads(pickle.dumps(tg.nn.Linear(2, 2)))
    clone.register_forward_hook(lambda m, a, o: calls.append(2))
    clone(tg.ones(1, 2))
    assert calls == [1, 2]
    assert "_forward_hooks" not in lin.state_dict()


@pytest.mark.parametrize("lib", ["tg", "torch"])
def test_get_submodule_parameter_buffer(lib, request):
    M = tg if lib == "tg" else request.getfixturevalue("torch")
    s = M.nn.Sequential(M.nn.Linear(2, 2))
    s.register_buffer("b", M.ones(1))
    assert s.get_submodule("") is s and s.get_submodule("0") is s[0]
    assert s.get_parameter("0.bias") is s[0].bias
    assert s.get_buffer("b").tolist() == [1.0]
    cases = [(s.get_submodule, "1", "Sequential has no attribute `1`"),
             (s.get_submodule, "0.weight", "`weight` is not an nn.Module"),
             (s.get_parameter, "0.x", "Linear has no attribute `x`"),
             (s.get_parameter, "b", "`b` is not an nn.Parameter"),
             (s.get_buffer, "0.weight", "`weight` is not a buffer"),
             (s.get_buffer, "zz", "Sequential has no attribute `zz`")]
    for fn, target, phrase in cases:
        with pytest.raises(AttributeError, match=phrase):
            fn(target)
