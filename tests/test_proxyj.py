"""What held-out tutorial scripts (proxyj's units) showed tapegrad doing otherwise than PyTorch,
checked against torch where it is installed."""
from __future__ import annotations

import pytest

import tapegrad as tg


def _outcome(fn):
    """fn()'s result as (dtype, values), or the type of the exception it raised."""
    try:
        result = fn()
    except Exception as exc:  # noqa: BLE001  (the type is what is compared)
        return type(exc).__name__
    return str(result.dtype).rsplit(".", 1)[-1], result.tolist()


# PyTorch's arange has three signatures, (end), (start, end) and (start, end, step): a lone
# bound given as `end=` is the end (a vision-transformer notebook's
# `torch.arange(end=C * H * W, dtype=torch.float)`), a step needs both bounds.
ARANGE_CALLS = [
    ("end_kw", lambda m: m.arange(end=5)),
    ("end_kw_float", lambda m: m.arange(end=4.0)),
    ("end_kw_dtype", lambda m: m.arange(end=6, dtype=m.float32)),
    ("start_end_kw", lambda m: m.arange(start=1, end=5)),
    ("all_kw", lambda m: m.arange(start=2, end=7, step=2)),
    ("start_pos_end_kw", lambda m: m.arange(1, end=4)),
    ("lone_positional", lambda m: m.arange(5)),
    ("positional_step", lambda m: m.arange(0, 1, 0.25)),
    ("tensor_end_kw", lambda m: m.arange(end=m.tensor(3))),
    ("end_step_no_start", lambda m: m.arange(end=5, step=2)),
    ("lone_bound_with_step", lambda m: m.arange(5, step=2)),
    ("nothing", lambda m: m.arange()),
]


@pytest.mark.parametrize("name,call", ARANGE_CALLS, ids=[c[0] for c in ARANGE_CALLS])
def test_arange_keyword_bounds_match_torch(name, call):
    torch = pytest.importorskip("torch")
    assert _outcome(lambda: call(tg)) == _outcome(lambda: call(torch))


def test_arange_end_keyword_values():
    # Without torch too: the lone `end=` bound starts the range at 0.
    assert tg.arange(end=3).tolist() == [0, 1, 2]
    assert tg.arange(end=3).dtype == tg.int64
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        tg.arange(end=5, step=2)


def test_one_hot_takes_input_keyword():
    # PyTorch's parser names one_hot's argument `input` (its docstring says `tensor`).
    torch = pytest.importorskip("torch")
    got = tg.nn.functional.one_hot(input=tg.tensor([0, 2]), num_classes=3)
    want = torch.nn.functional.one_hot(input=torch.tensor([0, 2]), num_classes=3)
    assert got.tolist() == want.tolist() and got.dtype == tg.int64
    with pytest.raises(TypeError):
        torch.nn.functional.one_hot(tensor=torch.tensor([0]), num_classes=2)
    with pytest.raises(TypeError):
        tg.nn.functional.one_hot(tensor=tg.tensor([0]), num_classes=2)


# torch.diff, torch.norm and torch.histogram take out= in PyTorch; tapegrad refused the keyword.
OUT_CALLS = [
    ("diff", lambda m: m.diff(m.tensor([1.0, 4.0, 9.0, 7.0]), out=m.empty(0))),
    ("diff_int", lambda m: m.diff(m.tensor([1, 4, 9]), out=m.empty(0, dtype=m.int64))),
    ("norm", lambda m: m.norm(m.tensor([3.0, 4.0]), out=m.empty(()))),
    ("norm_dim", lambda m: m.norm(m.tensor([[3.0, 4.0], [1.0, 1.0]]), p=1, dim=1,
                                  out=m.empty(0))),
    ("norm_long_out", lambda m: m.norm(m.tensor([3.0, 4.0]), out=m.empty(0, dtype=m.int64))),
    ("histogram", lambda m: m.histogram(m.tensor([1.0, 2.0, 2.0, 5.0]), bins=2,
                                        out=(m.empty(0), m.empty(0)))[0]),
]


@pytest.mark.parametrize("name,call", OUT_CALLS, ids=[c[0] for c in OUT_CALLS])
def test_out_keyword_of_diff_norm_histogram(name, call):
    torch = pytest.importorskip("torch")
    assert _outcome(lambda: call(tg)) == _outcome(lambda: call(torch))


def test_diff_out_refused_under_grad():
    torch = pytest.importorskip("torch")
    for m in (tg, torch):
        w = m.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            m.diff(w, out=m.empty(0))


def test_set_default_device_takes_device_keyword():
    torch = pytest.importorskip("torch")
    for m in (tg, torch):
        m.set_default_device(device="cpu")
        try:
            assert m.zeros(2).device.type == "cpu"
        finally:
            m.set_default_device(None)


def test_tensor_where_takes_keywords():
    # Tensor.where's parameters are condition and other in PyTorch.
    torch = pytest.importorskip("torch")
    got = tg.arange(4.0).where(condition=tg.arange(4.0) > 1, other=-1.0)
    want = torch.arange(4.0).where(condition=torch.arange(4.0) > 1, other=-1.0)
    assert got.tolist() == want.tolist()


# PyTorch 2.13's batch norms (and the lazy norms) take bias=False: a scale without a shift.
BIAS_FREE_NORMS = [
    ("BatchNorm1d", lambda m: m.nn.BatchNorm1d(3, bias=False), (4, 3)),
    ("BatchNorm2d", lambda m: m.nn.BatchNorm2d(3, bias=False), (2, 3, 2, 2)),
    ("BatchNorm3d", lambda m: m.nn.BatchNorm3d(3, affine=False, bias=False), (2, 3, 1, 2, 2)),
    ("LazyBatchNorm1d", lambda m: m.nn.LazyBatchNorm1d(bias=False), (4, 3)),
    ("LazyInstanceNorm1d", lambda m: m.nn.LazyInstanceNorm1d(bias=False), (2, 3, 4)),
]


@pytest.mark.parametrize("name,make,shape", BIAS_FREE_NORMS, ids=[c[0] for c in BIAS_FREE_NORMS])
def test_norm_layers_without_bias(name, make, shape):
    torch = pytest.importorskip("torch")
    import numpy as np
    x = np.linspace(-2, 3, int(np.prod(shape)), dtype=np.float32).reshape(shape) ** 2
    seen = []
    for m in (tg, torch):
        layer = make(m)
        before = repr(layer)
        out = layer(m.tensor(x, requires_grad=True))
        out.pow(2).sum().backward()
        seen.append((before, repr(layer), layer.bias is None, sorted(layer.state_dict()),
                     np.round(out.detach().numpy(), 5).tolist(),
                     None if layer.weight is None else np.round(layer.weight.grad.numpy(), 4).tolist()))
    assert seen[0] == seen[1]


# Factories that take pin_memory= in PyTorch: False is accepted, True refused (no accelerator).
PINNABLE = [
    ("tril_indices", lambda m, pin: m.tril_indices(3, 3, pin_memory=pin)),
    ("triu_indices", lambda m, pin: m.triu_indices(3, 3, pin_memory=pin)),
    ("linspace", lambda m, pin: m.linspace(0, 1, 3, pin_memory=pin)),
    ("logspace", lambda m, pin: m.logspace(0, 1, 3, pin_memory=pin)),
    ("zeros_like", lambda m, pin: m.zeros_like(m.ones(2), pin_memory=pin)),
    ("ones_like", lambda m, pin: m.ones_like(m.ones(2), pin_memory=pin)),
    ("full_like", lambda m, pin: m.full_like(m.ones(2), 3, pin_memory=pin)),
    ("empty_like", lambda m, pin: m.empty_like(m.ones(2), pin_memory=pin).fill_(0)),
    ("rand_like", lambda m, pin: m.rand_like(m.ones(2), pin_memory=pin).mul(0)),
    ("randn_like", lambda m, pin: m.randn_like(m.ones(2), pin_memory=pin).mul(0)),
    ("randint_like", lambda m, pin: m.randint_like(m.ones(2), 1, pin_memory=pin)),
    ("hann_window", lambda m, pin: m.hann_window(4, pin_memory=pin)),
    ("hamming_window", lambda m, pin: m.hamming_window(4, pin_memory=pin)),
    ("blackman_window", lambda m, pin: m.blackman_window(4, pin_memory=pin)),
    ("bartlett_window", lambda m, pin: m.bartlett_window(4, pin_memory=pin)),
    ("kaiser_window", lambda m, pin: m.kaiser_window(4, pin_memory=pin)),
]


@pytest.mark.parametrize("name,call", PINNABLE, ids=[c[0] for c in PINNABLE])
def test_factories_take_pin_memory(name, call):
    torch = pytest.importorskip("torch")
    import numpy as np
    got, want = _outcome(lambda: call(tg, False)), _outcome(lambda: call(torch, False))
    assert got[0] == want[0]
    assert np.allclose(got[1], want[1], atol=1e-6)
    if not torch.cuda.is_available():
        assert _outcome(lambda: call(tg, True)) == _outcome(lambda: call(torch, True))
