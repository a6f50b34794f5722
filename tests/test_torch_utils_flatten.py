"""torch._utils' _flatten_dense_tensors / _unflatten_dense_tensors (fastai v1's and apex's mixed
precision import them): values, layouts, views, graph node names, gradients and errors against
PyTorch, and a float64 gradcheck of the round trip."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
from tapegrad._utils import _flatten_dense_tensors as tg_flatten
from tapegrad._utils import _unflatten_dense_tensors as tg_unflatten

torch = pytest.importorskip("torch")
from torch._utils import _flatten_dense_tensors as torch_flatten  # noqa: E402
from torch._utils import _unflatten_dense_tensors as torch_unflatten  # noqa: E402

LIBS = [(tg, tg_flatten, tg_unflatten), (torch, torch_flatten, torch_unflatten)]


def _inputs(lib):
    r = np.random.RandomState(0)
    a = lib.tensor(r.randn(2, 3)).t()              # not contiguous
    b = lib.tensor(r.randn(4), requires_grad=True)
    c = lib.tensor(r.randn(1, 2, 1))
    return [a, b, c]


def _flatten_case(lib, flatten, unflatten):
    tensors = _inputs(lib)
    flat = flatten(tensors)
    out = [flat.detach().numpy().tolist(), flat.is_contiguous(), type(flat.grad_fn).__name__]
    single = flatten([tensors[1]])
    out += [single._base is tensors[1], type(single.grad_fn).__name__]
    (flat * lib.arange(12.0, dtype=flat.dtype)).sum().backward()
    out.append(tensors[1].grad.numpy().tolist())
    mixed = flatten([lib.ones(2, dtype=lib.int64), lib.ones(1)])
    out.append((str(mixed.dtype), mixed.tolist()))
    return out


def test_flatten_matches_torch():
    assert _flatten_case(*LIBS[0]) == _flatten_case(*LIBS[1])


def _unflatten_case(lib, flatten, unflatten):
    tensors = _inputs(lib)
    flat = lib.arange(12.0, dtype=lib.float64).requires_grad_()
    views = unflatten(flat, tensors)
    out = [type(views).__name__, [v.shape for v in views], [v.detach().numpy().tolist() for v in views],
           [v._base is flat for v in views], [type(v.grad_fn).__name__ for v in views]]
    (views[0].sum() * 2 + views[2].sum() * 3).backward()
    out.append(flat.grad.numpy().tolist())
    with lib.no_grad():
        buffer = lib.zeros(12, dtype=lib.float64)
        for v, t in zip(unflatten(buffer, tensors), tensors):
            v.copy_(t)                               # writes reach the buffer (views)
    out.append(buffer.numpy().round(6).tolist())
    with pytest.raises(RuntimeError) as info:
        unflatten(lib.zeros(5), tensors)
    out.append(str(info.value))
    with pytest.raises(ValueError) as info:
        flatten([])
    out.append(str(info.value))
    return out


def test_unflatten_matches_torch():
    assert _unflatten_case(*LIBS[0]) == _unflatten_case(*LIBS[1])


def test_round_trip_gradcheck_float64():
    shapes = [(2, 3), (4,), (1, 2)]
    r = np.random.RandomState(1)
    inputs = [tg.tensor(r.randn(*s), requires_grad=True) for s in shapes]

    def f(*ts):
        flat = tg_flatten([t.t() if t.dim() == 2 else t for t in ts])
        views = tg_unflatten(flat * flat, [tg.zeros(3, 2), tg.zeros(4), tg.zeros(2, 1)])
        return tuple(v.sin() for v in views)

    assert tg.autograd.gradcheck(f, inputs)
