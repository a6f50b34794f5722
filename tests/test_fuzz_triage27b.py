"""Regressions of the session-27 fuzz run of fuzz11 (programs 62666160-, 60663073-; surface
60783193-).

Each test compares with PyTorch (the `torch` fixture skips cleanly without it).
"""
import math

import numpy as np
import pytest

import tapegrad as tg


# -- tril_ / triu_ on an expand()ed view (62668407: RuntimeError where PyTorch runs) ---------------
# PyTorch's kernel writes only the zeros, with no overlap check: a memory location that any
# dropped element sees becomes zero at every element seeing it.  Recorded, the write goes to the
# base and its backward raises the overlap error.

_TRIANGLE_CASES = [("tril_", 0, (1, 3), (3, 3)), ("triu_", 0, (1, 3), (3, 3)),
                   ("triu_", 0, (3, 1), (3, 3)), ("tril_", -1, (3, 1), (3, 3)),
                   ("triu_", 1, (1,), (2, 2)), ("tril_", 1, (1,), (2, 2)),
                   ("tril_", 0, (2, 1, 3), (2, 4, 3)), ("triu_", 5, (1, 3), (3, 3)),
                   ("tril_", 5, (1, 3), (3, 3))]


def _triangle_on_expanded(lib, name, diagonal, shape, expanded, requires_grad):
    x = lib.arange(1.0, 1.0 + math.prod(shape), dtype=lib.float64).reshape(shape)
    x.requires_grad_(requires_grad)
    base = x * 1
    view = base.expand(expanded)
    out = getattr(view, name)(diagonal)
    backward_error = None
    if requires_grad:
        with pytest.raises(RuntimeError) as e:
            lib.autograd.grad(out.sum(), x)
        backward_error = str(e.value)[:60]
    return (out.detach().numpy(), base.detach().numpy(), out.requires_grad, out._version,
            backward_error)


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("case", _TRIANGLE_CASES, ids=lambda c: f"{c[0]}{c[1]}-{c[2]}")
def test_triangle_in_place_on_expanded_view_matches_torch(torch, case, requires_grad):
    got = _triangle_on_expanded(tg, *case, requires_grad)
    expected = _triangle_on_expanded(torch, *case, requires_grad)
    for a, b in zip(got[:2], expected[:2]):
        np.testing.assert_array_equal(a, b)
    assert got[2:] == expected[2:]


# -- nansum / nanmean / nan_to_num gradients at a NaN (or replaced) element (62669567; SILENT: 0
# where PyTorch's is NaN) -------------------------------------------------------------------------
# PyTorch's backward multiplies the gradient by the kept mask (nansum: not NaN; nan_to_num:
# finite), so an infinite or NaN gradient there is NaN; a where() masking it gave 0.

_NAN, _INF = float("nan"), float("inf")
_MASKING_OPS = {
    "nansum": lambda t: t.nansum(),
    "nansum-dim": lambda t: t.nansum(-1),
    "nansum-keepdim": lambda t: t.nansum((0, 1), keepdim=True),
    "nanmean-dim": lambda t: t.nanmean(0),
    "nan_to_num": lambda t: t.nan_to_num(),
    "nan_to_num-given": lambda t: t.nan_to_num(1.5, 9.0, -9.0),
    "nan_to_num_": lambda t: (t * 1).nan_to_num_(),
}


def _masked_gradients(lib, name, upstream, create_graph):
    x = lib.tensor([[_NAN, 1.0, _INF], [-_INF, 2.0, -0.5]], dtype=lib.float64,
                   requires_grad=True)
    y = _MASKING_OPS[name](x)
    g, = lib.autograd.grad((y * y * upstream).sum(), x, create_graph=create_graph)
    out = [y.detach().numpy(), g.detach().numpy()]
    if create_graph:
        out.append(lib.autograd.grad((g * g.detach().nan_to_num()).sum(), x,
                                     allow_unused=True)[0])
        out[-1] = None if out[-1] is None else out[-1].numpy()
    return out, type(y.grad_fn).__name__


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("upstream", [_INF, _NAN, 2.0])
@pytest.mark.parametrize("name", sorted(_MASKING_OPS))
def test_nan_masking_op_gradients_match_torch(torch, name, upstream, create_graph):
    got, got_name = _masked_gradients(tg, name, upstream, create_graph)
    expected, expected_name = _masked_gradients(torch, name, upstream, create_graph)
    assert got_name == expected_name
    for a, b in zip(got, expected):
        if b is None:
            assert a is None
            continue
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_nansum_and_nan_to_num_pass_finite_gradients_by_finite_differences():
    x = tg.tensor([[0.3, -1.2, 2.0], [0.7, 1.1, -0.4]], dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(lambda t: t.nansum(1) ** 2, (x,))
    assert tg.autograd.gradgradcheck(lambda t: t.nanmean(0) ** 3, (x,))
    assert tg.autograd.gradgradcheck(lambda t: t.nan_to_num() ** 3, (x,))
