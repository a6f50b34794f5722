"""Regression tests for what fuzz28's runs found (tools/fuzz_formats.py: save/load across the two
libraries, sparse COO / CSR / CSC programs, torch.masked), each case checked against PyTorch."""
import io
import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

DENSE = [[0.0, 1.5, -2.0], [3.0, 0.0, 0.0]]
W = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]


def _grad(lib, conv, op):
    d = lib.tensor(DENSE, dtype=lib.float64, requires_grad=True)
    w = lib.tensor(W, dtype=lib.float64)
    op(lib, getattr(d, conv)(), w).backward()
    return d.grad


DENSE_STYLE = {
    "sum": lambda L, s, w: s.sum(),
    "matmul_op": lambda L, s, w: (s @ w).sum(),
    "mm": lambda L, s, w: L.mm(s, w).sum(),
    "mv": lambda L, s, w: L.mv(s, w[:, 0]).sum(),
    "addmm": lambda L, s, w: L.addmm(L.zeros(2, 2, dtype=L.float64), s, w).sum(),
    "scalar_then_sum": lambda L, s, w: (s * 2.5).sum(),
    "t_then_sum": lambda L, s, w: (s.t() * -1).sum(),
    "dense_at_t": lambda L, s, w: (w.t() @ s.t()).sum(),
    "add_then_mm": lambda L, s, w: ((s + s) @ w).sum(),
    "dense_plus_sparse": lambda L, s, w: (L.ones(2, 3, dtype=L.float64) + s).pow(2).sum(),
}
MASKED_STYLE = {
    "to_dense": lambda L, s, w: (s.to_dense() * 3).sum(),
    "values": lambda L, s, w: s.values().sum(),
    "sparse_mm": lambda L, s, w: L.sparse.mm(s, w).sum(),
}


@pytest.mark.parametrize("conv", ["to_sparse", "to_sparse_csr", "to_sparse_csc"])
@pytest.mark.parametrize("name", sorted(DENSE_STYLE) + sorted(MASKED_STYLE))
def test_dense_origin_gradient_as_pytorch(conv, name):
    # SILENT: a sparse tensor made from a dense one that requires grad gave the dense tensor a
    # gradient masked to the stored pattern through every op; PyTorch differentiates sum, the
    # products, t / scalar products / sparse + sparse as dense ops (ToSparseBackward passes the
    # full gradient on) and masks only through to_dense, values and torch.sparse.*
    op = {**DENSE_STYLE, **MASKED_STYLE}[name]
    try:
        expected = _grad(torch, conv, op)
    except RuntimeError:
        pytest.skip("PyTorch refuses this layout here")
    got = _grad(tg, conv, op)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)


def test_dense_origin_sum_gradient_is_finite_difference():
    # d -> d.to_sparse().sum() is d.sum(): its derivative is one everywhere, zeros included
    d = tg.tensor(DENSE, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(lambda x: (x.to_sparse() * 2.0).t().sum(), (d,))
    d.to_sparse().sum().backward()
    np.testing.assert_array_equal(d.grad.numpy(), np.ones((2, 3)))


@pytest.mark.parametrize("name", ["sum", "t_matmul", "scalar_matmul", "neg_sum", "coalesce_sum"])
def test_sparse_leaf_gets_dense_gradient_through_derived_tensors(name):
    # SILENT: only a leaf used directly in a product got PyTorch's dense gradient; through
    # s.sum(), s.t(), s * c, -s or s.coalesce() its .grad was masked to the pattern
    ops = {"sum": lambda s, w: s.sum(),
           "t_matmul": lambda s, w: (s.t().t() @ w).sum(),
           "scalar_matmul": lambda s, w: ((s * 2) @ w).sum(),
           "neg_sum": lambda s, w: (-s).sum(),
           "coalesce_sum": lambda s, w: s.coalesce().sum()}
    grads = []
    for L in (torch, tg):
        s = L.sparse_coo_tensor([[0, 1, 0], [1, 0, 2]], [1.5, 3.0, -2.0], (2, 3),
                                dtype=L.float64, requires_grad=True)
        ops[name](s, L.tensor(W, dtype=L.float64)).backward()
        grads.append(s.grad)
    assert str(grads[1].layout) == str(grads[0].layout)
    np.testing.assert_allclose(grads[1].to_dense().numpy(), grads[0].to_dense().numpy())


@pytest.mark.parametrize("conv", ["to_sparse", "to_sparse_csr", "to_sparse_csc"])
@pytest.mark.parametrize("shape", [(2, 2), (2, 0), (0, 3)])
def test_to_dense_of_empty_sparse_stays_on_the_graph(conv, shape):
    # A sparse tensor with no stored entries: to_dense() dropped the graph (requires_grad False),
    # so backward raised or the origin's .grad stayed None where PyTorch's is zeros
    results = []
    for L in (torch, tg):
        d = L.zeros(shape, dtype=L.float64, requires_grad=True)
        out = getattr(d, conv)().to_dense()
        assert out.requires_grad
        (out * 2).sum().backward()
        results.append(d.grad)
    np.testing.assert_array_equal(results[1].numpy(), results[0].numpy())
    assert tuple(results[1].shape) == tuple(results[0].shape)


def test_to_dense_of_values_built_empty_sparse():
    grads = []
    for L in (torch, tg):
        v = L.zeros(0, 2, dtype=L.float64, requires_grad=True)
        s = L.sparse_coo_tensor(L.zeros(1, 0, dtype=L.int64), v, (3, 2))
        out = s.to_dense()
        assert out.requires_grad and out.grad_fn.name() == "ToDenseBackward0"
        out.sum().backward()
        grads.append(v.grad)
    assert tuple(grads[1].shape) == tuple(grads[0].shape) == (0, 2)


def test_in_place_op_on_dense_origin_sparse_updates_its_products():
    # the dense-gradient twin follows in-place ops (a stale one would give the old values)
    outs = []
    for L in (torch, tg):
        d = L.tensor(DENSE, dtype=L.float64, requires_grad=True)
        s = d.to_sparse() * 1.0
        s.mul_(3.0)
        s.add_(d.to_sparse())
        total = s.sum()
        prod = s @ L.tensor(W, dtype=L.float64)
        (total + prod.sum()).backward()
        outs.append((total.item(), prod.detach().numpy().copy(), d.grad.numpy().copy()))
    assert outs[1][0] == pytest.approx(outs[0][0])
    np.testing.assert_allclose(outs[1][1], outs[0][1])
    np.testing.assert_allclose(outs[1][2], outs[0][2])


@pytest.mark.parametrize("order", ["vector_matrix", "matrix_vector"])
def test_matmul_of_sparse_vector_and_dense_matrix(order):
    # PyTorch multiplies a 1-D sparse operand with a 2-D dense one (tapegrad raised IndexError)
    out = []
    for L in (torch, tg):
        d = L.tensor([1.5, 0.0], dtype=L.float64, requires_grad=True)
        m = L.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=L.float64)
        y = L.matmul(d.to_sparse(), m.t()) if order == "vector_matrix" else L.matmul(m, d.to_sparse())
        (y * L.tensor([1.0, -2.0, 0.5], dtype=L.float64)).sum().backward()
        out.append((y.grad_fn.name(), y.detach().numpy().copy(), d.grad.numpy().copy()))
    assert out[1][0] == out[0][0]
    np.testing.assert_allclose(out[1][1], out[0][1])
    np.testing.assert_allclose(out[1][2], out[0][2])


@pytest.mark.parametrize("case", ["dense_1d_left", "dense_1d_right", "csr_with_vector",
                                  "csc_with_vector"])
def test_sparse_mm_refuses_vectors_as_pytorch(case):
    def call(L):
        m = L.tensor([[1.0, 0.0], [0.0, 2.0]])
        args = {"dense_1d_left": (L.ones(2), m), "dense_1d_right": (m, L.ones(2)),
                "csr_with_vector": (m.to_sparse_csr(), L.ones(2)),
                "csc_with_vector": (m.to_sparse_csc(), L.ones(2))}[case]
        return L.sparse.mm(*args)
    with pytest.raises(Exception) as expected:
        call(torch)
    with pytest.raises(type(expected.value), match=str(expected.value).split("(")[0][:30]):
        call(tg)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "masked_softmax", "masked_log_softmax",
                                "masked_softmin"])
@pytest.mark.parametrize("dtype", ["int64", "bool", "uint8"])
def test_softmax_of_empty_integer_tensor(fn, dtype):
    # PyTorch returns an empty input before its dtype check (tapegrad raised NotImplementedError)
    if dtype == "bool" and fn.startswith("masked_"):
        for L in (torch, tg):   # (torch.masked has no max identity for bool: both refuse)
            with pytest.raises(NotImplementedError, match="identity of am"):
                getattr(L.masked, fn[7:])(L.zeros((2, 0), dtype=L.bool), 1,
                                          mask=L.ones((2, 0), dtype=L.bool))
        return
    out = []
    for L in (torch, tg):
        x = L.zeros((2, 0), dtype=getattr(L, dtype))
        if fn.startswith("masked_"):
            y = getattr(L.masked, fn[7:])(x, 1, mask=L.ones((2, 0), dtype=L.bool))
        else:
            y = getattr(L, fn)(x, 1)
        out.append((str(y.dtype), tuple(y.shape)))
    assert out[1] == out[0]
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        tg.softmax(tg.zeros(2, dtype=tg.int64), 0)
