"""Regressions of the fuzz findings triaged in the second issue-16 session (tools/fuzz.py).

Each test names the fuzz finding it pins, asserts the right values without torch, and compares
with torch when it is installed.
"""
import math

import numpy as np
import pytest

import tapegrad as tg

nan, inf = math.nan, math.inf


# -- an in-place op makes its tensor the op's output (seeds 702742, 702859, 705401) -------------
# `v.sqrt_()` was `v.copy_(v.clone().sqrt())`: v's grad_fn a copy, and the output sqrt saved for
# backward a tensor other than v.  A second derivative reaching that saved output then bypassed
# v, so v's retained .grad missed it, and a write into v after sqrt_ went unnoticed.

def _retained_grad_after_double_backward(L, op):
    x = L.tensor([[1.67, 0.3]], dtype=L.float64, requires_grad=True)
    v = x * 1.0
    op(v)
    v.retain_grad()
    loss = (v * L.tensor([0.7, 0.4], dtype=L.float64)).sum()
    g, = L.autograd.grad(loss, [x], create_graph=True)
    (g * L.tensor([[0.3, -0.2]], dtype=L.float64)).sum().backward()
    return v.grad.numpy(), x.grad.numpy(), type(v.grad_fn).__name__


IN_PLACE_OPS = {
    "sqrt_": lambda v: v.sqrt_(),
    "tanh_": lambda v: v.tanh_(),
    "exp_": lambda v: v.exp_(),
    "sigmoid_": lambda v: v.sigmoid_(),
    "pow_": lambda v: v.pow_(2.5),
    "ipow": lambda v: v.__ipow__(2.5),
}


def test_sqrt_in_place_retained_grad_gets_the_second_derivative():
    vg, xg, name = _retained_grad_after_double_backward(tg, IN_PLACE_OPS["sqrt_"])
    # d/dy of sum(g * c) with g = w / (2 y) per element: -c w / (2 y^2), y = sqrt(x)
    y = np.sqrt([1.67, 0.3])
    np.testing.assert_allclose(vg, [[0.7, 0.4]] - np.array([0.3 * 0.7, -0.2 * 0.4]) / (2 * y * y))
    assert name == "SqrtBackward0"


@pytest.mark.parametrize("name", sorted(IN_PLACE_OPS))
def test_in_place_retained_grad_second_derivative_against_torch(torch, name):
    mine = _retained_grad_after_double_backward(tg, IN_PLACE_OPS[name])
    theirs = _retained_grad_after_double_backward(torch, IN_PLACE_OPS[name])
    np.testing.assert_allclose(mine[0], theirs[0], rtol=1e-12)
    np.testing.assert_allclose(mine[1], theirs[1], rtol=1e-12)
    assert mine[2] == theirs[2]


def test_write_after_an_in_place_op_that_saved_its_output_raises():
    # exp_ saved its output, which is now x's storage: PyTorch's error, not a stale gradient
    a = tg.tensor([0.5, 1.5], requires_grad=True)
    x = a * 1.0
    x.exp_()
    x.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        x.sum().backward()


def test_in_place_op_result_is_the_ops_output_gradient():
    a = tg.tensor([0.25, 4.0], dtype=tg.float64, requires_grad=True)
    x = a * 1.0
    x.sqrt_()
    x.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [1.0, 0.25])
    assert x._version == 1 and type(x.grad_fn).__name__ == "SqrtBackward0"


# -- tapegrad.compile: what a replay cannot reproduce runs eagerly ------------------------------
# (seeds 703579, 704329, 704441, 704699, 704992, 705047: a view taken under no_grad of an input
# that requires grad; 702468, 705048: requires_grad_() inside the function)

def _eager_and_compiled(fn, make_args, calls=3):
    compiled = tg.compile(fn)
    out = []
    for call in range(calls):
        row = []
        for f in (fn, compiled):
            args = make_args(call)
            o = f(*args)
            if o.requires_grad:
                (o * tg.arange(1.0, o.numel() + 1, dtype=o.dtype).reshape(o.shape)).sum().backward()
            row.append((o.detach().numpy().copy(), o.requires_grad,
                        [None if a.grad is None else a.grad.numpy().copy() for a in args]))
        out.append(row)
    return compiled, out


def _assert_same(rows):
    for eager, compiled in rows:
        np.testing.assert_array_equal(eager[0], compiled[0])
        assert eager[1] == compiled[1]
        for ge, gc in zip(eager[2], compiled[2]):
            assert (ge is None) == (gc is None)
            if ge is not None:
                np.testing.assert_array_equal(ge, gc)


def test_compile_view_under_no_grad_stops_the_gradient_as_eager():
    def fn(x):
        with tg.no_grad():
            v = x.flatten()
        return v.exp()
    compiled, rows = _eager_and_compiled(
        fn, lambda c: [tg.tensor([[0.5, -1.0], [2.0, c * 1.0]], requires_grad=True)])
    _assert_same(rows)
    assert rows[1][1][1] and rows[1][1][2] == [None]     # requires grad, gradient goes nowhere
    assert "view under no_grad" in compiled.explain()


def test_compile_requires_grad_inside_the_function_runs_eagerly():
    def fn(x, y):
        y.requires_grad_(False)
        return x * y + (x * 2).detach().requires_grad_()
    compiled, rows = _eager_and_compiled(
        fn, lambda c: [tg.tensor([1.0, 2.0 + c], requires_grad=True),
                       tg.tensor([3.0, -1.0], requires_grad=True)])
    _assert_same(rows)
    assert "requires_grad_()" in compiled.explain()


def test_compile_no_grad_result_inside_the_function_still_replays():
    def fn(x):
        with tg.no_grad():
            s = x * 2                       # not a view: does not require grad
        return x * s
    compiled, rows = _eager_and_compiled(
        fn, lambda c: [tg.tensor([1.0, -2.0, 0.5 + c], requires_grad=True)])
    _assert_same(rows)
    np.testing.assert_array_equal(rows[2][1][2][0], [2.0, -8.0, 15.0])   # s is a constant: 2x, weighted
    assert "replayed" in compiled.explain()


# -- empty results do not check what they never read (seeds 701183, 702438, 702457, 704264,
# 704802, 703660, 703227, 703323, 703985) ---------------------------------------------------------

EMPTY_INDEX_CASES = [((2, 4, 0), ([-3, -3],)), ((2, 4, 0), ([5],)), ((1, 0), ([0, 1, -1],)),
                     ((2, 4, 0), (slice(None), [7])), ((3, 0), ([[0, 9]],))]


@pytest.mark.parametrize("shape,key", EMPTY_INDEX_CASES)
def test_out_of_range_index_with_an_empty_result(shape, key):
    x = tg.zeros(shape, requires_grad=True)
    key = tuple(tg.tensor(k) if isinstance(k, list) else k for k in key)
    y = x[key]
    assert y.numel() == 0
    y.sum().backward()
    assert x.grad.shape == x.shape


@pytest.mark.parametrize("shape,key", EMPTY_INDEX_CASES)
def test_out_of_range_index_with_an_empty_result_against_torch(torch, shape, key):
    tk = tuple(torch.tensor(k) if isinstance(k, list) else k for k in key)
    gk = tuple(tg.tensor(k) if isinstance(k, list) else k for k in key)
    assert tuple(tg.zeros(shape)[gk].shape) == tuple(torch.zeros(shape)[tk].shape)


def test_out_of_range_index_with_elements_still_raises():
    with pytest.raises(IndexError, match="out of bounds"):
        tg.zeros(2, 3)[tg.tensor([2])]
    with pytest.raises(IndexError, match="out of bounds"):
        tg.zeros(0, 3)[tg.tensor([0])]


@pytest.mark.parametrize("dim", [1, 5, -3])
def test_cat_of_empty_1d_tensors_checks_no_dim(dim):
    e = tg.zeros(0, requires_grad=True)
    out = tg.cat([e, e], dim)
    assert out.shape == (0,) and out.requires_grad
    out.sum().backward()
    assert e.grad.shape == (0,)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_nll_loss_of_zero_classes_with_every_target_ignored(reduction):
    F = tg.nn.functional
    x = tg.zeros(2, 0, requires_grad=True)
    loss = F.nll_loss(x, tg.tensor([0, 0]), ignore_index=0, reduction=reduction)
    expected = {"none": [0.0, 0.0], "sum": 0.0, "mean": nan}[reduction]
    np.testing.assert_array_equal(loss.detach().numpy(), expected)
    loss.sum().backward()
    assert x.grad.shape == (2, 0)
    v = tg.zeros(0, requires_grad=True)                  # unbatched: a (0,) input, 0-d target
    loss = F.cross_entropy(v, tg.tensor(0), ignore_index=0, reduction=reduction)
    loss.sum().backward()
    assert v.grad.shape == (0,)
    with pytest.raises(IndexError, match="Target 1 is out of bounds"):
        F.nll_loss(x, tg.tensor([0, 1]), ignore_index=0)
