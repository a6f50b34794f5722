"""Linear algebra: matmul / @ (1-D, 2-D, batched and broadcast-batched), mm, bmm, mv, dot, outer and
nn.functional.linear.  Finite differences (float64, contiguous and non-contiguous inputs), bad
input, and parity with PyTorch (values, dtypes, gradients, grad_fn names)."""
import gc
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.testing import numeric_grad
from tapegrad.testing import count_python_calls as _python_calls_during

F = tg.nn.functional
RNG = np.random.default_rng(7)


# -- helpers --------------------------------------------------------------------------------------

def layout_view(a, layout):
    """The values of `a` stored C-contiguous ("C"), transposed in memory ("T") or strided ("S")."""
    if layout == "C" or a.ndim == 0:
        return a.copy()
    if layout == "T":
        v = np.asfortranarray(a)
    else:
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), dtype=a.dtype)
        big[..., ::2] = a
        v = big[..., ::2]
    assert np.array_equal(v, a)
    return v


def check(fn, *arrays, layout="C", atol=1e-6, rtol=1e-5):
    """tapegrad's gradient of sum(w * fn(*inputs)) against central differences (float64)."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    tensors = [tg.from_numpy(layout_view(a, layout)).requires_grad_() for a in arrays]
    out = fn(*tensors)
    w = np.linspace(0.5, 1.5, out.numel()).reshape(out.shape)
    (out * tg.tensor(w)).sum().backward()

    def scalar(*arrs):
        return float((fn(*[tg.tensor(a) for a in arrs]).detach().numpy() * w).sum())

    for t, e in zip(tensors, numeric_grad(scalar, arrays)):
        assert t.grad is not None, "no gradient reached an input"
        assert t.grad.shape == t.shape and t.grad.dtype == tg.float64
        np.testing.assert_allclose(t.grad.numpy(), e, atol=atol, rtol=rtol)


def randn(*shape):
    return np.asarray(RNG.standard_normal(shape))


def name(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


# -- finite differences ---------------------------------------------------------------------------

MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)), ((1, 3), (3, 1)),
    ((5, 2, 3), (5, 3, 4)), ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((3,), (5, 3, 4)),
    ((5, 2, 3), (3,)), ((6, 1, 2, 3), (5, 3, 4)), ((1, 2, 3), (5, 3, 4)), ((5, 2, 3), (1, 3, 4)),
    ((2, 1, 2, 3), (1, 5, 3, 4)), ((2, 3), (2, 5, 3, 4)), ((3,), (2, 1, 3, 2)),
    ((2, 5, 2, 3), (3,)), ((1, 3), (5, 3, 4)), ((2, 3), (5, 3, 1)),
]


@pytest.mark.parametrize("layout", ["C", "T", "S"])
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES, ids=[f"{a}@{b}" for a, b in MATMUL_SHAPES])
def test_matmul_finite_differences(sa, sb, layout):
    check(lambda a, b: a @ b, randn(*sa), randn(*sb), layout=layout)


@pytest.mark.parametrize("layout", ["C", "T"])
def test_mm_bmm_mv_dot_outer_finite_differences(layout):
    check(lambda a, b: a.mm(b), randn(2, 3), randn(3, 4), layout=layout)
    check(lambda a, b: tg.mm(a, b), randn(1, 3), randn(3, 1), layout=layout)
    check(lambda a, b: a.bmm(b), randn(2, 2, 3), randn(2, 3, 4), layout=layout)
    check(lambda a, b: tg.bmm(a, b), randn(1, 1, 3), randn(1, 3, 2), layout=layout)
    check(lambda a, b: tg.mv(a, b), randn(2, 3), randn(3), layout=layout)
    check(lambda a, b: a.dot(b), randn(4), randn(4), layout="S" if layout == "T" else "C")
    check(lambda a, b: tg.outer(a, b), randn(3), randn(4), layout="S" if layout == "T" else "C")
    check(lambda a, b: a.matmul(b), randn(2, 3), randn(3, 4), layout=layout)


LINEAR_SHAPES = [
    ((2, 3), (4, 3), (4,)), ((2, 3), (4, 3), None), ((5, 2, 3), (4, 3), (4,)),
    ((5, 2, 3), (4, 3), None), ((3,), (4, 3), (4,)), ((3,), (4, 3), None),
    ((2, 5, 2, 3), (4, 3), (4,)), ((2, 3), (4, 3), ()), ((5, 2, 3), (4, 3), ()),
    ((2, 3), (4, 3), (2, 4)), ((5, 2, 3), (4, 3), (2, 4)), ((2, 3), (4, 3), (1,)),
    ((3,), (3,), None), ((3,), (3,), ()), ((5, 2, 3), (3,), ()), ((2, 3), (3,), None),
    ((1, 3), (1, 3), (1,)),
]


@pytest.mark.parametrize("layout", ["C", "T", "S"])
@pytest.mark.parametrize("sx,sw,sb", LINEAR_SHAPES, ids=[str(s) for s in LINEAR_SHAPES])
def test_linear_finite_differences(sx, sw, sb, layout):
    if sb is None:
        check(lambda x, w: F.linear(x, w), randn(*sx), randn(*sw), layout=layout)
    else:
        check(lambda x, w, b: F.linear(x, w, b), randn(*sx), randn(*sw), randn(*sb),
              layout=layout)


def test_empty_products_have_zero_gradients():
    a = tg.zeros(2, 0, requires_grad=True)
    b = tg.zeros(0, 3, requires_grad=True)
    y = a @ b
    assert y.tolist() == [[0, 0, 0], [0, 0, 0]]
    y.sum().backward()
    assert a.grad.shape == (2, 0) and b.grad.shape == (0, 3)
    c = tg.zeros(0, 2, 3, requires_grad=True)
    z = c @ tg.ones(3, 4, requires_grad=True)
    assert z.shape == (0, 2, 4)
    z.sum().backward()
    assert c.grad.shape == (0, 2, 3)


def test_gradients_only_for_inputs_that_require_them():
    a = tg.tensor(randn(5, 2, 3), requires_grad=True)
    b = tg.tensor(randn(3, 4))
    (a @ b).sum().backward()
    assert a.grad.shape == (5, 2, 3) and b.grad is None
    np.testing.assert_allclose(a.grad.numpy(), np.broadcast_to(b.numpy().sum(1), (5, 2, 3)),
                               rtol=1e-6)
    x = tg.tensor(randn(2, 3))
    w = tg.tensor(randn(4, 3), requires_grad=True)
    c = tg.tensor(randn(4))
    F.linear(x, w, c).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.broadcast_to(x.numpy().sum(0), (4, 3)),
                               rtol=1e-6)


# -- names, dtypes, operators ---------------------------------------------------------------------

def test_grad_fn_names_follow_pytorchs_route():
    def r(*s, grad=True):
        return tg.tensor(randn(*s), dtype=tg.float32, requires_grad=grad)
    assert name(r(3) @ r(3)) == "DotBackward0"
    assert name(r(2, 3) @ r(3, 4)) == "MmBackward0"
    assert name(r(3) @ r(3, 4)) == "SqueezeBackward4"
    assert name(r(2, 3) @ r(3)) == "MvBackward0"
    assert name(r(5, 2, 3) @ r(5, 3, 4)) == "UnsafeViewBackward0"
    assert name(r(5, 2, 3) @ r(3, 4)) == "UnsafeViewBackward0"
    assert name(r(2, 3) @ r(5, 3, 4)) == "CloneBackward0"
    assert name(r(2, 3, grad=False) @ r(5, 3, 4)) == "UnsafeViewBackward0"
    assert name(r(1, 2, 3) @ r(5, 3, 4)) == "CloneBackward0"
    assert name(r(1, 3) @ r(5, 3, 4)) == "TransposeBackward0"
    assert name(r(2, 3).mm(r(3, 4))) == "MmBackward0"
    assert name(r(2, 2, 3).bmm(r(2, 3, 4))) == "BmmBackward0"
    assert name(r(3).dot(r(3))) == "DotBackward0"
    assert name(tg.mv(r(2, 3), r(3))) == "MvBackward0"
    assert name(r(3).outer(r(4))) == "MulBackward0"
    assert name(F.linear(r(2, 3), r(4, 3), r(4))) == "AddmmBackward0"
    assert name(F.linear(r(2, 3), r(4, 3))) == "MmBackward0"
    assert name(F.linear(r(5, 2, 3), r(4, 3), r(4))) == "ViewBackward0"
    assert name(F.linear(r(5, 2, 3), r(4, 3))) == "UnsafeViewBackward0"
    assert name(F.linear(r(5, 2, 3), r(4, 3), r())) == "AddBackward0"
    assert name(F.linear(r(3), r(4, 3), r(4))) == "ViewBackward0"
    assert name(F.linear(r(3), r(4, 3))) == "SqueezeBackward4"


def test_matmul_operators_and_namespaces():
    a = tg.tensor(randn(2, 3), dtype=tg.float32)
    b = tg.tensor(randn(3, 4), dtype=tg.float32)
    expected = a.numpy() @ b.numpy()
    for out in (a @ b, a.matmul(b), tg.matmul(a, b), a.__matmul__(b), b.__rmatmul__(a)):
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    # An ndarray operand is numpy's, as in PyTorch (numpy 2 warns of the one-parameter
    # __array_wrap__ PyTorch's Tensor has too); test_ndarray_operands compares with torch.
    with pytest.warns(DeprecationWarning, match="__array_wrap__"):
        out = a @ np.ones((3, 1), np.float32)
    np.testing.assert_allclose(out.numpy(), a.numpy().sum(1, keepdims=True), rtol=1e-6)
    assert tg.ger.__wrapped__ is tg.outer.__wrapped__ and F.linear is tg.nn.functional.linear
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for @"):
        a @ 3
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for @"):
        3 @ a
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for @"):
        [1.0, 2.0] @ b
    with pytest.raises(TypeError, match=r"matmul\(\): argument 'other' \(position 2\) must be "
                                        r"Tensor, not int"):
        tg.matmul(a, 3)


def test_dtypes():
    i = tg.tensor([[1, 2, 3], [4, 5, 6]])
    j = tg.tensor([[1, 0], [0, 1], [1, 1]])
    out = i @ j
    assert out.dtype == tg.int64 and out.tolist() == [[4, 5], [10, 11]]
    i32 = tg.tensor([1, 2], dtype=tg.int32)
    assert i32.dot(i32).dtype == tg.int32 and i32.dot(i32).item() == 5
    assert (tg.ones(2, 2, dtype=tg.float16) @ tg.ones(2, 2, dtype=tg.float16)).dtype == tg.float16
    assert (tg.ones(2, 3, dtype=tg.float64) @ tg.ones(3, dtype=tg.float64)).dtype == tg.float64
    # outer promotes like multiplication (int64 with float32 gives float32)
    assert tg.outer(tg.tensor([1, 2]), tg.tensor([1.0, 2.0])).dtype == tg.float32
    o = tg.outer(tg.tensor([1.0, 2.0], requires_grad=True),
                 tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64, requires_grad=True))
    assert o.dtype == tg.float64
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64, requires_grad=True)
    tg.outer(x, y).sum().backward()
    assert x.grad.dtype == tg.float32 and y.grad.dtype == tg.float64
    assert x.grad.tolist() == [6.0, 6.0] and y.grad.tolist() == [3.0, 3.0, 3.0]
    assert F.linear(i, tg.tensor([[1, 1, 1]])).tolist() == [[6], [15]]


def test_infinities_and_overflow_give_ieee_results_without_warnings():
    # pytest turns warnings into errors: numpy's "invalid value encountered in matmul" would fail
    inf = float("inf")
    a = tg.tensor([[inf, 1.0]], requires_grad=True)
    b = tg.tensor([[1.0], [-inf]], requires_grad=True)
    assert np.isnan((a @ b).item())
    big = tg.tensor([3e38, 3e38], requires_grad=True)
    assert big.dot(big).item() == inf
    assert tg.outer(big, big).detach().numpy().max() == inf
    assert np.isnan(F.linear(a, tg.tensor([[1.0, -inf]]), tg.tensor([1.0])).item())
    assert np.isnan(F.linear(a, tg.tensor([[1.0, -inf]])).item())
    (a @ b).sum().backward()
    assert a.grad is not None


def test_no_record_without_grad_mode():
    a = tg.tensor(randn(2, 3), dtype=tg.float32, requires_grad=True)
    with tg.no_grad():
        for y in (a @ tg.ones(3, 2), F.linear(a, tg.ones(4, 3), tg.ones(4)),
                  tg.outer(a[0], a[1]), a[0].dot(a[1]), tg.ones(5, 2, 2) @ a):
            assert y.grad_fn is None and not y.requires_grad


def test_backward_twice_raises_and_retain_graph_accumulates():
    a = tg.tensor(randn(2, 3), requires_grad=True)
    b = tg.tensor(randn(3, 4), requires_grad=True)
    y = (a @ b).sum()
    y.backward(retain_graph=True)
    first = a.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * first, rtol=1e-6)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


# -- bad input ------------------------------------------------------------------------------------

def z(*shape, dtype=tg.float32):
    return tg.zeros(shape, dtype=dtype)     # (a tuple: z() is a 0-d tensor; zeros() raises)


BAD = [
    (lambda: z(2, 3).mm(z(4, 5)), RuntimeError,
     r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    (lambda: z(3).mm(z(3, 4)), RuntimeError, r"self must be a matrix"),
    (lambda: tg.mm(z(2, 3), z(2, 3, 4)), RuntimeError, r"mat2 must be a matrix"),
    (lambda: z(2, 3).mm(z(3, 4, dtype=tg.float64)), RuntimeError,
     r"expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda: z(2, 3, dtype=tg.int64).mm(z(3, 4)), RuntimeError, r"but got: long int != float"),
    (lambda: z(2, 3, dtype=tg.bool).mm(z(3, 4, dtype=tg.bool)), NotImplementedError,
     r"\"addmm_impl_cpu_\" not implemented for 'Bool'"),
    (lambda: z(2, 2, 3).bmm(z(2, 4, 5)), RuntimeError,
     r"Expected size for first two dimensions of batch2 tensor to be: \[2, 3\] but got: "
     r"\[2, 4\]\."),
    (lambda: z(2, 2, 3).bmm(z(3, 3, 5)), RuntimeError, r"to be: \[2, 3\] but got: \[3, 3\]\."),
    (lambda: z(2, 3).bmm(z(3, 4)), RuntimeError, r"batch1 must be a 3D tensor"),
    (lambda: z(2, 2, 3).bmm(z(3, 4)), RuntimeError, r"batch2 must be a 3D tensor"),
    (lambda: z(2, 2, 3).bmm(z(2, 3, 4, dtype=tg.float64)), RuntimeError,
     r"expected scalar type Float but found Double"),
    (lambda: z(2, 3).dot(z(2, 3)), RuntimeError, r"1D tensors expected, but got 2D and 2D tensors"),
    (lambda: z(3).dot(z(4)), RuntimeError, r"inconsistent tensor size, expected tensor \[3\] and "
                                           r"src \[4\] to have the same number of elements, but "
                                           r"got 3 and 4 elements respectively"),
    (lambda: z(3).dot(z(3, dtype=tg.float64)), RuntimeError,
     r"dot : expected both vectors to have same dtype, but found Float and Double"),
    (lambda: z(3, 1).outer(z(4)), RuntimeError, r"outer: Expected 1-D argument self, but got 2-D"),
    (lambda: tg.outer(z(3), z(4, 1)), RuntimeError, r"outer: Expected 1-D argument vec2, but got"),
    (lambda: tg.mv(z(2, 3), z(4)), RuntimeError,
     r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"),
    (lambda: z() @ z(3), RuntimeError,
     r"both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
    (lambda: z(3) @ z(4, 5), RuntimeError, r"shapes cannot be multiplied \(1x3 and 4x5\)"),
    (lambda: z(5, 2, 3) @ z(4, 3, 5), RuntimeError, r"The size of tensor a \(5\) must match the "
                                                   r"size of tensor b \(4\) at non-singleton "
                                                   r"dimension 0"),
    (lambda: z(5, 2, 3) @ z(4, 5), RuntimeError, r"shapes cannot be multiplied \(10x3 and 4x5\)"),
    (lambda: z(5, 2, 3) @ z(4), RuntimeError, r"size mismatch, got input \(10\), mat \(10x3\), "
                                              r"vec \(4\)"),
    (lambda: z(2, 3) @ z(3, dtype=tg.float64), RuntimeError,
     r"addmv input tensors must have the same dtype, but got Double, Float, and Double"),
    (lambda: F.linear(z(2, 3), z(4, 5)), RuntimeError,
     r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 5x4\)"),
    (lambda: F.linear(z(2, 3), z(4, 3), z(5)), RuntimeError,
     r"The expanded size of the tensor \(4\) must match the existing size \(5\) at non-singleton "
     r"dimension 1\.  Target sizes: \[2, 4\]\.  Tensor sizes: \[5\]"),
    (lambda: F.linear(z(2, 3), z(1, 4, 3)), RuntimeError,
     r"t\(\) expects a tensor with <= 2 dimensions, but self is 3D"),
    (lambda: F.linear(z(2, 3), z(4, 3), z(4, dtype=tg.float64)), RuntimeError,
     r"self and mat2 must have the same dtype, but got Double and Float"),
    (lambda: F.linear(z(), z(4, 3)), RuntimeError,
     r"both arguments to linear need to be at least 1D, but they are 0D and 2D"),
    (lambda: F.linear(z(2, 3), z(3), z(2)), RuntimeError, r"mat2 must be a matrix, got 1-D tensor"),
]


@pytest.mark.parametrize("fn,exc,msg", BAD)
def test_bad_input(fn, exc, msg):
    with pytest.raises(exc, match=msg):
        fn()


def test_failed_op_leaves_no_record():
    a = tg.tensor(randn(2, 3), dtype=tg.float32, requires_grad=True)
    gc.collect()  # earlier tests' cyclic garbage must not be freed mid-test
    before = tg._core.tape().live_records
    for fn in (lambda: a @ tg.ones(4, 5), lambda: a.mm(tg.ones(3, 4, dtype=tg.float64)),
               lambda: F.linear(a, tg.ones(4, 3), tg.ones(5)), lambda: a.dot(a)):
        with pytest.raises(RuntimeError):
            fn()
    assert tg._core.tape().live_records == before


# -- the sweep stays compiled ---------------------------------------------------------------------

W = tg.tensor(np.eye(4) * 0.9 + 0.01, dtype=tg.float64, requires_grad=True)
B = tg.tensor(np.full(4, 0.01), requires_grad=True)
W3 = tg.tensor(np.stack([np.eye(4)] * 2) * 0.9, requires_grad=True)
M3 = tg.tensor(np.eye(3) * 0.9, requires_grad=True)
STEPS = {
    "matmul": lambda y: y @ W,
    "batched matmul": lambda y: (y @ W3)[0],
    "matrix @ batch": lambda y: (M3 @ (y @ W3))[1],
    "batch @ batch": lambda y: ((y @ W3) @ W3)[0],
    "vector @ matrix": lambda y: y + tg.outer(B, y[0] @ W)[:3],
    "linear": lambda y: F.linear(y, W, B),
    "linear no bias": lambda y: F.linear(y, W),
    "mv/outer": lambda y: y + tg.outer(y @ B, B),
    "dot/outer": lambda y: y + tg.outer(y[0], y[1])[:3] * 0.01 + y[0].dot(y[1]) * 0.01,
}


@pytest.mark.parametrize("step", list(STEPS.values()), ids=list(STEPS))
def test_backward_makes_no_python_call_per_product(step):
    counts = []
    for n in (3, 12):
        y = x = tg.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
        for _ in range(n):
            y = step(y)
        loss = y.sum()
        counts.append(_python_calls_during(loss.backward))
        assert x.grad is not None
    assert counts[0] == counts[1]


# -- parity with PyTorch --------------------------------------------------------------------------

def _run(mod, fn, arrays, req):
    ts = []
    for a, r in zip(arrays, req):
        t = mod.from_numpy(a)
        ts.append(t.requires_grad_() if r and a.dtype.kind == "f" else t)
    try:
        out = fn(mod, *ts)
    except Exception as e:                                    # noqa: BLE001 - compared below
        return ("raised", type(e).__name__, str(e).split("\n")[0])
    vals = (out.detach().numpy().copy(), str(out.dtype), name(out))
    grads = None
    if out.requires_grad:
        w = np.linspace(-1, 2, out.numel()).reshape(tuple(out.shape))
        (out * mod.from_numpy(w.astype(out.detach().numpy().dtype))).sum().backward()
        grads = [None if t.grad is None else t.grad.numpy().copy() for t in ts if t.requires_grad]
    return vals, grads


def assert_parity(torch, fn, *arrays, req=None, rtol=1e-4, atol=1e-5):
    req = req or [True] * len(arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _run(torch, fn, arrays, req)
        got = _run(tg, fn, arrays, req)
    if expected[0] == "raised" or got[0] == "raised":
        assert got == expected
        return
    (ev, eg), (gv, gg) = expected, got
    assert gv[1:] == ev[1:]                                   # dtype and grad_fn name
    assert gv[0].shape == ev[0].shape
    np.testing.assert_allclose(gv[0], ev[0], rtol=rtol, atol=atol)
    assert (gg is None) == (eg is None)
    for a, b in zip(eg or [], gg or []):
        assert (a is None) == (b is None)
        if a is not None:
            assert b.shape == a.shape and b.dtype == a.dtype
            np.testing.assert_allclose(b, a, rtol=rtol, atol=atol)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


PARITY_SHAPES = MATMUL_SHAPES + [((4, 5, 2, 3), (4, 5, 3, 4)), ((0, 3), (3, 2)), ((2, 0), (0, 3)),
                                 ((2, 3), (1, 3, 4)), ((1, 1, 2, 3), (5, 3, 4)),
                                 ((0, 2, 3), (3, 4)), ((2, 3), (0, 3, 4)), ((1, 2, 3), (1, 3, 4))]
REQS = [[True, True], [True, False], [False, True]]


@pytest.mark.parametrize("req", REQS, ids=["both", "a", "b"])
@pytest.mark.parametrize("sa,sb", PARITY_SHAPES, ids=[f"{a}@{b}" for a, b in PARITY_SHAPES])
def test_matmul_parity(torch, sa, sb, req):
    assert_parity(torch, lambda m, a, b: a @ b, f32(*sa), f32(*sb), req=req)


@pytest.mark.parametrize("req", REQS, ids=["both", "a", "b"])
def test_matmul_parity_non_contiguous(torch, req):
    t32 = f32(3, 2, 5).transpose(2, 1, 0)
    assert_parity(torch, lambda m, a, b: a @ b, f32(4, 3).T, f32(4, 3), req=req)
    assert_parity(torch, lambda m, a, b: a @ b, t32, f32(3, 4), req=req)
    assert_parity(torch, lambda m, a, b: a @ b, t32, f32(3), req=req)
    assert_parity(torch, lambda m, a, b: a @ b, f32(2), f32(5, 4, 2).transpose(0, 2, 1), req=req)
    assert_parity(torch, lambda m, a, b: m.matmul(a, b), f32(2, 6)[:, ::2], t32, req=req)


OTHER_OPS = [
    ("mm", lambda m, a, b: a.mm(b), (2, 3), (3, 4)),
    ("bmm", lambda m, a, b: m.bmm(a, b), (2, 2, 3), (2, 3, 4)),
    ("dot", lambda m, a, b: a.dot(b), (3,), (3,)),
    ("mv", lambda m, a, b: m.mv(a, b), (2, 3), (3,)),
    ("outer", lambda m, a, b: a.outer(b), (3,), (4,)),
]


@pytest.mark.parametrize("op,fn,sa,sb", OTHER_OPS, ids=[o[0] for o in OTHER_OPS])
def test_other_products_parity(torch, op, fn, sa, sb):
    assert_parity(torch, fn, f32(*sa), f32(*sb))
    assert_parity(torch, fn, f32(*sa).astype(np.float64), f32(*sb).astype(np.float64))


def test_outer_promotion_parity(torch):
    assert_parity(torch, lambda m, a, b: m.outer(a, b), f32(3), f32(4).astype(np.float64))
    assert_parity(torch, lambda m, a, b: m.outer(a, b), np.arange(3), f32(4))


@pytest.mark.parametrize("req", [[True, True, True], [False, True, True], [True, False, False],
                                 [False, False, True]], ids=["all", "params", "input", "bias"])
@pytest.mark.parametrize("sx,sw,sb", LINEAR_SHAPES, ids=[str(s) for s in LINEAR_SHAPES])
def test_linear_parity(torch, sx, sw, sb, req):
    arrays = [f32(*sx), f32(*sw)] + ([f32(*sb)] if sb is not None else [])
    req = req[:len(arrays)]
    if not any(req):
        req = [True] * len(arrays)
    assert_parity(torch, lambda m, *a: m.nn.functional.linear(*a), *arrays, req=req)


def test_linear_parity_non_contiguous(torch):
    lin = lambda m, *a: m.nn.functional.linear(*a)            # noqa: E731
    x = f32(3, 5, 2).transpose(2, 1, 0)
    assert_parity(torch, lin, x, f32(4, 3), f32(4))           # matmul + add: AddBackward0
    assert_parity(torch, lin, x, f32(4, 3))
    assert_parity(torch, lin, f32(2, 3), f32(3, 4).T, f32(4))
    assert_parity(torch, lin, f32(2, 5, 3, 2).transpose(0, 1, 3, 2), f32(4, 3), f32(4))


@pytest.mark.parametrize("fn", [lambda m, a, b: a @ b, lambda m, a, b: a.mm(b)])
def test_integer_products_parity(torch, fn):
    assert_parity(torch, fn, np.arange(6).reshape(2, 3), np.arange(12).reshape(3, 4))
    assert_parity(torch, fn, np.arange(6, dtype=np.int32).reshape(2, 3),
                  np.arange(12, dtype=np.int32).reshape(3, 4))
    assert_parity(torch, lambda m, a, b: a.bmm(b), np.arange(6).reshape(1, 2, 3),
                  np.arange(12).reshape(1, 3, 4))
    assert_parity(torch, lambda m, a, b: m.nn.functional.linear(a, b),
                  np.arange(6).reshape(2, 3), np.arange(12).reshape(4, 3))


def _zeros(*shape, dtype=np.float32):
    return np.zeros(shape, dtype)


D = np.float64
ERRORS = [
    (lambda m, a, b: a.mm(b), _zeros(2, 3), _zeros(4, 5)),
    (lambda m, a, b: a.mm(b), _zeros(3), _zeros(3, 4)),
    (lambda m, a, b: a.mm(b), _zeros(2, 3), _zeros(3, 4, dtype=D)),
    (lambda m, a, b: a.mm(b), _zeros(2, 3, dtype=np.float16), _zeros(3, 4)),
    (lambda m, a, b: a.mm(b), _zeros(2, 3, dtype=np.int8), _zeros(3, 4, dtype=np.int16)),
    (lambda m, a, b: a.mm(b), _zeros(2, 3, dtype=np.uint8), _zeros(3, 4, dtype=np.int32)),
    (lambda m, a, b: a.mm(b), _zeros(2, 3, dtype=bool), _zeros(3, 4, dtype=bool)),
    (lambda m, a, b: a.bmm(b), _zeros(2, 2, 3), _zeros(2, 4, 5)),
    (lambda m, a, b: a.bmm(b), _zeros(1, 2, 2, 3), _zeros(1, 2, 3, 4)),
    (lambda m, a, b: a.bmm(b), _zeros(2, 2, 3, dtype=D), _zeros(2, 3, 4)),
    (lambda m, a, b: a.bmm(b), _zeros(2, 2, 3, dtype=bool), _zeros(2, 3, 4, dtype=bool)),
    (lambda m, a, b: a.dot(b), _zeros(3), _zeros(3, 3)),
    (lambda m, a, b: a.dot(b), _zeros(), _zeros()),
    (lambda m, a, b: a.dot(b), _zeros(3, dtype=np.int64), _zeros(3)),
    (lambda m, a, b: a.dot(b), _zeros(3, dtype=bool), _zeros(3, dtype=bool)),
    (lambda m, a, b: a.dot(b), _zeros(3, dtype=bool), _zeros(4, dtype=bool)),
    (lambda m, a, b: a.outer(b), _zeros(), _zeros(4)),
    (lambda m, a, b: a @ b, _zeros(3), _zeros()),
    (lambda m, a, b: a @ b, _zeros(3), _zeros(4)),
    (lambda m, a, b: a @ b, _zeros(2, 3), _zeros(4)),
    (lambda m, a, b: a @ b, _zeros(5, 2, 3), _zeros(5, 4, 5)),
    (lambda m, a, b: a @ b, _zeros(2, 5, 2, 3), _zeros(3, 4, 3, 5)),
    (lambda m, a, b: a @ b, _zeros(3), _zeros(3, dtype=D)),
    (lambda m, a, b: a @ b, _zeros(2, 2, 3), _zeros(2, 3, 4, dtype=D)),
    (lambda m, a, b: a @ b, _zeros(2, 3, dtype=D), _zeros(3)),
    (lambda m, a, b: a @ b, _zeros(2, 2, 3), _zeros(3, 4, dtype=D)),
    (lambda m, a, b: a @ b, _zeros(2, 3), _zeros(5, 4, 5)),
    (lambda m, a, b: a @ b, _zeros(3), _zeros(5, 4, 5)),
    (lambda m, a, b: a @ b, _zeros(3), _zeros(3, 4, dtype=D)),
    (lambda m, a, b: a @ b, _zeros(2, 2, 3), _zeros(3, dtype=D)),
    (lambda m, a, b: a @ b, _zeros(2, 3, dtype=bool), _zeros(3, 4, dtype=bool)),
    (lambda m, a, b: a @ b, _zeros(2, 3, dtype=bool), _zeros(3, dtype=bool)),
    (lambda m, a, b: a @ b, _zeros(2, 2, 3, dtype=bool), _zeros(2, 3, 4, dtype=bool)),
    (lambda m, a, b: a @ b, _zeros(2, 3, dtype=np.int64), _zeros(3, 4)),
    (lambda m, a, b: m.nn.functional.linear(a, b), _zeros(5), _zeros(4, 3)),
    (lambda m, a, b: m.nn.functional.linear(a, b), _zeros(5, 2, 3), _zeros(4, 5)),
    (lambda m, a, b: m.nn.functional.linear(a, b), _zeros(2, 3), _zeros(4, 3, dtype=D)),
    (lambda m, a, b: m.nn.functional.linear(a, b, b[0]), _zeros(5, 2, 3), _zeros(4, 5)),
    (lambda m, a, b: m.nn.functional.linear(a, b, b[:, 0]), _zeros(5, 2, 3), _zeros(5, 3)),
    (lambda m, a, b: m.nn.functional.linear(a, b, b[0:2, 0]),
     _zeros(3, 2, 5).transpose(2, 1, 0), _zeros(5, 3)),
    (lambda m, a, b: m.nn.functional.linear(a, b, b[None, :2]), _zeros(2, 3), _zeros(4, 3)),
]


@pytest.mark.parametrize("fn,a,b", ERRORS)
def test_error_parity(torch, fn, a, b):
    assert_parity(torch, fn, a, b, req=[False, False])


# -- tril / triu ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (2, 3, 4)], ids=str)
@pytest.mark.parametrize("k", [-1, 0, 2])
def test_tril_triu_gradients(gradcheck, shape, k):
    a = np.random.default_rng(7).standard_normal(shape)
    gradcheck(lambda t: tg.tril(t, k) * t, a)
    gradcheck(lambda t: t.triu(diagonal=k) * t, a)


def test_tril_triu_values_inplace_and_errors():
    x = tg.ones(3, 3)
    assert x.tril().tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    assert tg.triu(x, 1).tolist() == [[0, 1, 1], [0, 0, 1], [0, 0, 0]]
    assert x.tril_(-1) is x and x.tolist() == [[0, 0, 0], [1, 0, 0], [1, 1, 0]]
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tg.tril(tg.ones(3))
    w = tg.ones(2, 2, requires_grad=True)
    h = w * 3
    h.triu_()
    h.sum().backward()
    assert w.grad.tolist() == [[3, 3], [0, 3]]
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.tril_()


def test_tril_triu_match_torch(torch):
    a = np.random.default_rng(8).standard_normal((2, 3, 4))
    g = np.random.default_rng(9).standard_normal((2, 3, 4))
    for name in ("tril", "triu"):
        for k in (-2, 0, 1, 5):
            x = tg.tensor(a, requires_grad=True)
            tx = torch.tensor(a, requires_grad=True)
            y, ty = getattr(tg, name)(x, k), getattr(torch, name)(tx, k)
            assert np.array_equal(y.detach().numpy(), ty.detach().numpy())
            assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__
            y.backward(tg.tensor(g))
            ty.backward(torch.tensor(g))
            assert np.array_equal(x.grad.numpy(), tx.grad.numpy())
            gg, = tg.autograd.grad((getattr(tg, name)(x, k) ** 2).sum(), x, create_graph=True)
            tgg, = torch.autograd.grad((getattr(torch, name)(tx, k) ** 2).sum(), tx,
                                       create_graph=True)
            np.testing.assert_allclose(tg.autograd.grad(gg.sum(), x)[0].numpy(),
                                       torch.autograd.grad(tgg.sum(), tx)[0].numpy())
