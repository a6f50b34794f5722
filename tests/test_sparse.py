"""Sparse COO tensors: construction, coalesce, conversions, repr, sparse.mm / spmm, sparse.sum and
their gradients, against PyTorch and against values worked out by hand."""
import warnings

import numpy as np
import pytest

import tapegrad as tg

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]      # (0, 2) appears twice
VALS = [3., 4., 5., 1.]


def _sparse(lib, vals=VALS, **kw):
    return lib.sparse_coo_tensor(lib.tensor(IDX), lib.tensor(vals), (2, 3), **kw)


@pytest.fixture
def quiet_torch(torch):
    # PyTorch 2.13 warns once that it does not check sparse invariants by default.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield torch


# -- real values, no torch ------------------------------------------------------------------------
def test_structure_and_dense_form():
    s = _sparse(tg)
    assert s.is_sparse and s.layout is tg.sparse_coo and tg.ones(1).layout is tg.strided
    assert str(tg.sparse_coo) == "torch.sparse_coo" and tg.is_tensor(s)
    assert s.shape == (2, 3) and s.dtype == tg.float32 and s._nnz() == 4
    assert (s.sparse_dim(), s.dense_dim(), s.is_coalesced()) == (2, 0, False)
    assert s.to_dense().tolist() == [[0., 0., 4.], [4., 0., 5.]]
    assert s.to("cpu") is s and s.to(tg.float64).dtype == tg.float64


def test_coalesce_sums_duplicates_and_sorts():
    s = tg.sparse_coo_tensor(tg.tensor([[1, 0, 1], [2, 0, 2]]), tg.tensor([1., 2., 3.]), (2, 3))
    c = s.coalesce()
    assert c.is_coalesced() and c.coalesce() is c
    assert c.indices().tolist() == [[0, 1], [0, 2]] and c.values().tolist() == [2., 4.]
    with pytest.raises(RuntimeError, match="uncoalesced tensor, please call .coalesce"):
        s.indices()


def test_mm_values_and_gradients():
    v = tg.tensor(VALS, requires_grad=True)
    d = tg.tensor([[1., 2.], [3., 4.], [5., 6.]], requires_grad=True)
    out = tg.sparse.mm(tg.sparse_coo_tensor(tg.tensor(IDX), v, (2, 3)), d)
    assert out.tolist() == [[20., 24.], [29., 38.]]
    out.sum().backward()
    # d(sum)/dv_k = sum of row c_k of d; d(sum)/dD[c] = sum of the values in column c
    assert v.grad.tolist() == [11., 3., 11., 11.]
    assert d.grad.tolist() == [[4., 4.], [0., 0.], [9., 9.]]


def test_leaf_sparse_gets_sparse_grad_on_its_pattern():
    s = _sparse(tg, requires_grad=True)
    assert s.is_leaf and s.requires_grad
    tg.sparse.mm(s, tg.ones(3, 2)).sum().backward()
    g = s.grad
    assert g.is_sparse and g.is_coalesced()
    assert g.indices().tolist() == [[0, 1, 1], [2, 0, 2]] and g.values().tolist() == [2., 2., 2.]
    # torch.spmm (as torch.mm) gives a leaf the dense gradient, as PyTorch's
    s = _sparse(tg, requires_grad=True)
    tg.spmm(s, tg.ones(3, 2)).sum().backward()
    assert not s.grad.is_sparse and s.grad.tolist() == [[2., 2., 2.], [2., 2., 2.]]


def test_errors():
    s = _sparse(tg)
    with pytest.raises(RuntimeError, match="Expected dim 0 size 3, got 4"):
        tg.sparse.mm(s, tg.ones(4, 2))
    with pytest.raises(IndexError, match="Dimension out of range"):
        tg.sparse.mm(s, tg.ones(3))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        tg.sparse.mm(s, tg.ones(3, 2, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="size is inconsistent with indices: for dim 1"):
        tg.sparse_coo_tensor(tg.tensor([[0], [5]]), tg.tensor([1.]), (2, 3))
    with pytest.raises(RuntimeError, match="found negative index -1 for dim 1"):
        tg.sparse_coo_tensor(tg.tensor([[0], [-1]]), tg.tensor([1.]))
    with pytest.raises(RuntimeError, match="must have same nnz"):
        tg.sparse_coo_tensor(tg.tensor(IDX), tg.tensor([1., 2.]), (2, 3))
    with pytest.raises(RuntimeError, match="add\\(sparse, dense\\) is not supported"):
        s + tg.ones(2, 3)
    with pytest.raises(TypeError, match="Use Tensor.to_dense"):
        s.numpy()
    with pytest.raises(NotImplementedError, match="SparseCPU"):
        tg.exp(s)                       # a dense op never misreads a sparse tensor (PyTorch's)
    with pytest.raises(NotImplementedError, match="SparseCPU"):
        s.view(3, 2)


def test_dense_mm_of_sparse_operand_without_torch():
    s = _sparse(tg)
    np.testing.assert_array_equal(tg.mm(s, tg.ones(3, 1)).numpy(), [[4.0], [9.0]])
    np.testing.assert_array_equal(tg.matmul(tg.ones(2), s).numpy(), [4.0, 0.0, 9.0])
    w = tg.ones(3, 2, requires_grad=True)
    tg.mm(s, w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[4.0, 4.0], [0.0, 0.0], [9.0, 9.0]])
    with pytest.raises(RuntimeError, match="Expected dim 0 size 3, got 2"):
        tg.mm(s, tg.ones(2, 2))
    with pytest.raises(TypeError, match="must be Tensor"):
        tg.mm(s, [[1.0]])


def test_mm_finite_differences(gradcheck):
    idx = tg.tensor([[0, 2, 1, 2, 0], [1, 0, 2, 0, 3]])
    gradcheck(lambda v, d: tg.sparse.mm(tg.sparse_coo_tensor(idx, v, (3, 4)), d),
              np.linspace(-1, 2, 5), np.linspace(-2, 1, 8).reshape(4, 2))
    gradcheck(lambda v: tg.sparse_coo_tensor(idx, v, (3, 4)).coalesce().values() ** 2,
              np.linspace(-1, 2, 5))
    gradcheck(lambda x: tg.sparse.mm(x.to_sparse(), x.t() * 2), np.array([[0.5, 1.5], [2., -1.]]))


# -- parity with PyTorch --------------------------------------------------------------------------
def _same(ours, theirs):
    if getattr(theirs, "is_sparse", False):
        assert ours.is_sparse and repr(ours) == repr(theirs)
    else:
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6)
        assert str(ours.dtype) == str(theirs.dtype)


@pytest.mark.parametrize("make", [
    lambda L: _sparse(L),
    lambda L: _sparse(L, requires_grad=True),
    lambda L: _sparse(L).coalesce(),
    lambda L: _sparse(L).t(),
    lambda L: _sparse(L) * 2,
    lambda L: _sparse(L).double(),
    lambda L: L.sparse_coo_tensor(L.tensor([[0, 1]]), L.tensor([[1., 2.], [3., 4.]])),
    lambda L: L.sparse_coo_tensor(L.tensor([[1, 1]]), L.tensor([1, 2], dtype=L.int32)),
    lambda L: L.sparse_coo_tensor(L.zeros(2, 0, dtype=L.int64), L.zeros(0), (3, 3)),
    lambda L: L.tensor([[0., 2.], [3., 0.]]).to_sparse(),
    lambda L: L.arange(12.).reshape(2, 3, 2).to_sparse(2),
    lambda L: L.sparse.sum(_sparse(L), 0),
    lambda L: L.sparse.sum(_sparse(L)),
    lambda L: L.sparse.sum(_sparse(L), (0, 1)),
    lambda L: _sparse(L) + L.sparse_coo_tensor(L.tensor([[1, 0], [1, 0]]), L.tensor([7., 8.]),
                                               (2, 3)),
    lambda L: _sparse(L).coalesce() + _sparse(L).t().t(),
    lambda L: L.ones(2, 3) + _sparse(L),
    lambda L: L.spmm(_sparse(L), L.arange(6.).reshape(3, 2)),
    lambda L: L.sparse.mm(L.arange(6.).reshape(3, 2).t(), _sparse(L).t()),
    lambda L: L.sparse.mm(_sparse(L), _sparse(L).t()).coalesce(),
    # torch.mm / torch.matmul / torch.mv take a sparse COO operand too
    lambda L: L.mm(_sparse(L), L.arange(6.).reshape(3, 2)),
    lambda L: L.mm(L.arange(4.).reshape(2, 2), _sparse(L)),
    lambda L: L.mm(_sparse(L), _sparse(L).t()).coalesce(),
    lambda L: L.matmul(_sparse(L), L.arange(6.).reshape(3, 2)),
    lambda L: L.matmul(L.arange(4.).reshape(2, 2), _sparse(L)),
    lambda L: L.matmul(_sparse(L), L.ones(3)),
    lambda L: L.mv(_sparse(L), L.ones(3)),
])
def test_parity_forward(quiet_torch, make):
    _same(make(tg), make(quiet_torch))


def test_parity_repr_with_grad(quiet_torch):
    for L in (tg, quiet_torch):
        v = L.tensor(VALS, requires_grad=True)
        text = repr(L.sparse_coo_tensor(L.tensor(IDX), v, (2, 3)))
        if L is tg:
            ours = text
    assert ours == text


@pytest.mark.parametrize("fn", ["sparse.mm", "spmm", "to_dense", "sum", "coalesce"])
def test_parity_gradients(quiet_torch, fn):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((2, 4))
    results = []
    for L in (tg, quiet_torch):
        v = L.tensor(VALS, requires_grad=True, dtype=L.float64)
        d = L.tensor(np.arange(12.).reshape(3, 4) - 5, requires_grad=True)
        s = L.sparse_coo_tensor(L.tensor(IDX), v, (2, 3))
        leaf = L.sparse_coo_tensor(L.tensor(IDX), L.tensor(VALS, dtype=L.float64), (2, 3),
                                   requires_grad=True)
        if fn in ("sparse.mm", "spmm"):
            mm = L.sparse.mm if fn == "sparse.mm" else L.spmm
            (mm(s, d) * L.tensor(w)).sum().backward()
            (mm(leaf, d.detach()) * L.tensor(w)).sum().backward()
        elif fn == "to_dense":
            (s.to_dense() * L.tensor(w[:, :3])).sum().backward()
            (leaf.to_dense() * L.tensor(w[:, :3])).sum().backward()
        elif fn == "sum":
            L.sparse.sum(s * 3).backward()
            L.sparse.sum(leaf).backward()
        else:
            (s.coalesce().values() * L.tensor([1., 2., 3.], dtype=L.float64)).sum().backward()
            (leaf.coalesce().values() ** 2).sum().backward()
        results.append((v.grad, d.grad, leaf.grad))
    (ours_v, ours_d, ours_leaf), (torch_v, torch_d, torch_leaf) = results
    _same(ours_v, torch_v)
    assert (ours_d is None) == (torch_d is None)
    if torch_d is not None:
        _same(ours_d, torch_d)
    assert ours_leaf.is_sparse == torch_leaf.is_sparse     # torch.spmm's is dense
    _same(ours_leaf, torch_leaf)


def test_parity_errors(quiet_torch):
    for make, exc in [
        (lambda L: L.sparse.mm(_sparse(L), L.ones(4, 2)), RuntimeError),
        (lambda L: L.sparse.mm(_sparse(L), L.ones(3)), IndexError),
        (lambda L: L.sparse_coo_tensor(L.tensor([0, 1]), L.tensor([1.]), (2,)), RuntimeError),
        (lambda L: L.sparse_coo_tensor(L.tensor([[0]]), L.tensor([[1., 2.]]), (2, 3)),
         RuntimeError),
        (lambda L: _sparse(L) + L.ones(2, 3), RuntimeError),
        (lambda L: _sparse(L).values(), RuntimeError),
        (lambda L: L.sparse.sum(L.ones(2)), RuntimeError),
    ]:
        msgs = []
        for L in (tg, quiet_torch):
            with pytest.raises(exc) as info:
                make(L)
            msgs.append(str(info.value))
        assert msgs[0] == msgs[1]


def test_randomized_mm_against_torch(quiet_torch):
    rng = np.random.default_rng(1)
    for _ in range(20):
        n, k, p, nnz = rng.integers(1, 6, size=4)
        idx = np.stack([rng.integers(0, n, nnz), rng.integers(0, k, nnz)])
        vals, dense = rng.standard_normal(nnz), rng.standard_normal((k, p))
        outs = []
        for L in (tg, quiet_torch):
            v = L.tensor(vals, requires_grad=True)
            d = L.tensor(dense, requires_grad=True)
            s = L.sparse_coo_tensor(L.tensor(idx), v, (int(n), int(k)))
            out = L.sparse.mm(s, d)
            (out ** 2).sum().backward()
            outs.append([out.detach().numpy(), v.grad.numpy(), d.grad.numpy(),
                         s.coalesce().values().detach().numpy(), s.coalesce().indices().numpy()])
        for a, b in zip(*outs):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
