"""Zero signs of single-term matrix products against PyTorch.

PyTorch's mm of float32/float64 matrices is MKL's gemm, which stores an entry with one term (inner
dimension 1) as the product itself: 0 * -1 stays -0.0.  A product with one row or one column goes
to gemv, and bmm of more than one matrix to its own loop or batched BLAS: those sum from +0.0, as
numpy's BLAS does.  The signs are MKL's, so the comparisons go through `torch_bits`."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

DTYPES = ["float32", "float64"]
COL = [-0.0, 0.0, -1.0, 2.0]            # zeros of both signs against negatives and positives
ROW = [0.0, -0.0, 3.0, -0.5, 0.0]


def _run(lib, fn, arrays, seed, req):
    """fn's output and the gradients of the operands marked in `req`, for output adjoint `seed`."""
    ts = [lib.tensor(a, requires_grad=r) for a, r in zip(arrays, req)]
    out = fn(lib, *ts)
    out.backward(lib.tensor(seed))
    return [out.detach().numpy()] + [t.grad.numpy() for t, r in zip(ts, req) if r]


def _seed(shape, dtype):
    vals = np.array([-1.0, 0.0, 2.0, -0.0, 0.5])
    return np.resize(vals, int(np.prod(shape))).reshape(shape).astype(dtype)


def _compare(torch, torch_bits, fn, arrays, req=None):
    req = req or [True] * len(arrays)
    with torch.no_grad():
        shape = tuple(fn(torch, *[torch.tensor(a) for a in arrays]).shape)
    seed = _seed(shape, arrays[0].dtype)
    want = _run(torch, fn, arrays, seed, req)
    got = _run(tg, fn, arrays, seed, req)
    assert len(want) == len(got)
    for w, g in zip(want, got):
        torch_bits.assert_equal(g, w)


@pytest.mark.parametrize("dtype", DTYPES)
def test_outer_product_as_matmul_keeps_zero_signs(dtype, torch_bits):
    torch = pytest.importorskip("torch")
    a = np.array(COL, dtype=dtype).reshape(4, 1)
    b = np.array(ROW, dtype=dtype).reshape(1, 5)
    _compare(torch, torch_bits, lambda L, x, y: x @ y, [a, b])
    _compare(torch, torch_bits, lambda L, x, y: L.mm(x, y), [a, b])
    _compare(torch, torch_bits, lambda L, x, y: L.matmul(x, y), [a, b], [False, True])
    if torch_bits.reproducible:         # printed: `-0.` where PyTorch prints it
        assert str(tg.tensor(a) @ tg.tensor(b)) == str(torch.tensor(a) @ torch.tensor(b))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [
    ((1, 1), (1, 5)),                   # one row: gemv, a sum from +0.0
    ((4, 1), (1, 1)),                   # one column: gemv
    ((1, 1), (1, 1)),
    ((4, 2), (2, 5)),                   # two terms: from +0.0
])
def test_products_with_one_row_column_or_more_terms_sum_from_positive_zero(shapes, dtype,
                                                                           torch_bits):
    torch = pytest.importorskip("torch")
    sa, sb = shapes
    a = np.resize(np.array(COL), int(np.prod(sa))).reshape(sa).astype(dtype)
    b = np.resize(np.array(ROW), int(np.prod(sb))).reshape(sb).astype(dtype)
    _compare(torch, torch_bits, lambda L, x, y: x @ y, [a, b])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes, req", [
    (((3, 4, 1), (1, 5)), [True, True]),        # batch @ matrix, folded: one mm
    (((3, 4, 1), (1, 5)), [False, True]),
    (((4, 1), (3, 1, 5)), [True, True]),        # matrix @ batch, folded by transposing
    (((4, 1), (3, 1, 5)), [False, True]),       # ... not folded (bmm): from +0.0
    (((1, 4), (3, 4, 5)), [True, True]),        # the batch's gradient: g^T A with one row of A
    (((1, 25, 1), (1, 1, 30)), [True, True]),   # a batch of one above bmm's small loop: mm
    (((2, 25, 1), (2, 1, 30)), [True, True]),   # two: batched BLAS, from +0.0
    (((1, 5, 1), (1, 1, 6)), [True, True]),     # one, in bmm's small loop: from +0.0
    (((3,), (3, 4)), [True, True]),             # vector @ matrix: B's gradient is an mm
    (((1,), (1, 4)), [True, True]),             # ... with one row: gemv
])
def test_matmul_routes_keep_pytorchs_zero_signs(shapes, req, dtype, torch_bits):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(43)
    arrays = [rng.choice(np.array(COL + ROW), size=s).astype(dtype) for s in shapes]
    _compare(torch, torch_bits, lambda L, x, y: L.matmul(x, y), arrays, req)


def _linear_step(lib, x, w, b, seed):
    return (lib.nn.functional.linear(x, w, b) * seed).sum()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("in_shape", [(1, 3), (3,), (1, 1, 3)])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("compiled", [False, True])
def test_linear_weight_grad_of_a_batch_of_one(in_shape, bias, dtype, compiled, torch_bits):
    """Linear(3, 2) on one sample: weight.grad = g^T x, one term per entry (an outer product)."""
    torch = pytest.importorskip("torch")
    x = np.array([0.0, -0.0, 1.5], dtype=dtype).reshape(in_shape)
    w = np.array([[1.0, -2.0, 0.5], [-0.0, 3.0, -1.0]], dtype=dtype)
    bv = np.array([0.5, -0.0], dtype=dtype)
    seed = np.array([-1.0, 0.0], dtype=dtype).reshape(in_shape[:-1] + (2,))

    def grads(lib, step):
        xt, wt = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        bt = lib.tensor(bv, requires_grad=True) if bias else None
        step(xt, wt, bt, lib.tensor(seed)).backward()
        return wt.grad.numpy().copy(), xt.grad.numpy().copy()

    want = grads(torch, lambda *a: _linear_step(torch, *a))
    step = lambda *a: _linear_step(tg, *a)     # noqa: E731
    if compiled:
        step = tg.compile(step)
    for _ in range(3):                          # a compiled function replays from its second call
        for g, wv in zip(grads(tg, step), want):
            torch_bits.assert_equal(g, wv)


def test_single_term_products_have_finite_difference_gradients(gradcheck):
    rng = np.random.default_rng(7)
    gradcheck(lambda a, b: a @ b, rng.standard_normal((4, 1)), rng.standard_normal((1, 5)))
    gradcheck(lambda a, b: a @ b, rng.standard_normal((3, 4, 1)), rng.standard_normal((1, 5)))
    gradcheck(lambda a, b: a @ b, rng.standard_normal((4, 1)), rng.standard_normal((3, 1, 5)))
    gradcheck(lambda a, b: a @ b, rng.standard_normal((1, 25, 1)), rng.standard_normal((1, 1, 30)))
    gradcheck(lambda a, b: a @ b, rng.standard_normal(3), rng.standard_normal((3, 4)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k, p", [(3, 4), (1, 4), (3, 1)])
def test_vector_matrix_weight_grad_with_create_graph(k, p, dtype, torch_bits):
    """vector @ matrix under create_graph: B's gradient is PyTorch's mm (MmBackward0), its zero
    signs as eager's, not an elementwise outer product's (which signs a one-row product's zeros)."""
    torch = pytest.importorskip("torch")
    a = np.resize(np.array([0.0, -0.0, 2.0]), k).astype(dtype)
    b = np.resize(np.array([1.0, -2.0, 0.0, 3.0]), k * p).reshape(k, p).astype(dtype)
    g = np.resize(np.array([-1.0, 0.0, 2.0, -0.0]), p).astype(dtype)
    res = []
    for lib in (torch, tg):
        ta, tb = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        gb, = lib.autograd.grad(ta @ tb, tb, lib.tensor(g), create_graph=True)
        res.append((gb.detach().numpy(), gb.grad_fn.name()))
    torch_bits.assert_equal(res[1][0], res[0][0])
    assert res[1][1] == res[0][1]
