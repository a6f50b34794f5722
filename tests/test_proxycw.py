"""Scientific-computing idioms met in numerical-methods scripts (proxy corpus "proxycw"):
torch.sparse.spdiags for finite-difference matrices, against PyTorch."""
import warnings

import numpy as np
import pytest

import tapegrad as tg


@pytest.fixture
def quiet_torch():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():      # PyTorch's one-time sparse/CSR beta warnings
        warnings.simplefilter("ignore", UserWarning)
        yield torch


def _both(lib, diagonals, offsets, shape, **kw):
    return lib.sparse.spdiags(lib.tensor(diagonals), lib.tensor(offsets), shape, **kw)


@pytest.mark.parametrize("offsets, shape", [
    ([0, 1, -2], (3, 4)),       # above the main diagonal: values picked by column
    ([1, 0, -1], (4, 3)),       # tall: the lower diagonal reaches the last row
    ([0, -1, -2], (3, 3)),
    ([2, -1, 0], (2, 5)),
])
def test_spdiags_matches_torch(quiet_torch, offsets, shape):
    diagonals = np.arange(1.0, 10.0).reshape(3, 3)
    ours, theirs = _both(tg, diagonals, offsets, shape), _both(quiet_torch, diagonals, offsets, shape)
    np.testing.assert_array_equal(ours._indices().numpy(), theirs._indices().numpy())
    np.testing.assert_array_equal(ours._values().numpy(), theirs._values().numpy())
    np.testing.assert_array_equal(ours.to_dense().numpy(), theirs.to_dense().numpy())
    assert ours.is_coalesced() == theirs.is_coalesced()
    assert repr(ours) == repr(theirs)


def test_spdiags_vector_and_scalar_offset(quiet_torch):
    for offset in ([1], 1, -1):
        ours = _both(tg, [1.0, 2.0, 3.0], offset, (3, 3)).to_dense()
        theirs = _both(quiet_torch, [1.0, 2.0, 3.0], offset, (3, 3)).to_dense()
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("layout", ["sparse_csr", "sparse_csc"])
def test_spdiags_compressed_layouts(quiet_torch, layout):
    diagonals = np.arange(1.0, 10.0).reshape(3, 3)
    ours = _both(tg, diagonals, [0, 1, -1], (2, 5), layout=getattr(tg, layout))
    theirs = _both(quiet_torch, diagonals, [0, 1, -1], (2, 5), layout=getattr(quiet_torch, layout))
    assert repr(ours) == repr(theirs)


def test_spdiags_int_values_and_empty():
    s = tg.sparse.spdiags(tg.arange(9).reshape(3, 3), tg.tensor([0, -1, -2]), (3, 3))
    assert s.dtype == tg.int64
    assert s.to_dense().tolist() == [[0, 0, 0], [3, 1, 0], [6, 4, 2]]
    assert tg.sparse.spdiags(tg.ones(2, 0), tg.tensor([0, -1]), (3, 3))._nnz() == 0


def test_spdiags_has_no_derivative():
    # PyTorch: the result requires grad (grad_fn NotImplemented); differentiating raises
    d = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    s = tg.sparse.spdiags(d, tg.tensor([0, 1]), (2, 2))
    assert s.requires_grad and "grad_fn=<NotImplemented>" in repr(s)
    with pytest.raises(RuntimeError, match="derivative for aten::_spdiags is not implemented"):
        s.to_dense().sum().backward()


@pytest.mark.parametrize("offsets, shape, exc, phrase", [
    (tg.tensor([0, 0, 1]), (3, 3), RuntimeError, "Offset tensor contains duplicate values"),
    (tg.tensor([0, 1]), (3, 3), RuntimeError, r"Number of diagonals \(3\) does not match"),
    (tg.tensor([[0, 1, 2]]), (3, 3), RuntimeError, "Offsets must be scalar or vector"),
    (tg.tensor([0.0, 1.0, 2.0]), (3, 3), RuntimeError, "must have dtype Long but got Float"),
    (tg.tensor([0, 1, 2], dtype=tg.int32), (3, 3), RuntimeError, "dtype Long but got Int"),
    (tg.tensor([0, 1, 2]), (3, 3, 3), RuntimeError, "Output shape must be 2d"),
    ([0, 1, 2], (3, 3), TypeError, "argument 'offsets' \\(position 2\\) must be Tensor"),
])
def test_spdiags_errors(offsets, shape, exc, phrase):
    with pytest.raises(exc, match=phrase):
        tg.sparse.spdiags(tg.ones(3, 3), offsets, shape)


def test_spdiags_rejects_dense_layout_and_3d_diagonals():
    with pytest.raises(RuntimeError, match="supported, got Strided"):
        tg.sparse.spdiags(tg.ones(3, 3), tg.tensor([0, 1, 2]), (3, 3), layout=tg.strided)
    with pytest.raises(RuntimeError, match="Diagonals must be vector or matrix"):
        tg.sparse.spdiags(tg.ones(1, 3, 3), tg.tensor([0]), (3, 3))


def test_spdiags_tridiagonal_solve_matches_dense():
    # the finite-difference idiom: -u'' = 1 with a [-1, 2, -1] stencil, solved densely
    n = 6
    bands = tg.tensor([[-1.0] * n, [2.0] * n, [-1.0] * n], dtype=tg.float64)
    A = tg.sparse.spdiags(bands, tg.tensor([-1, 0, 1]), (n, n))
    expected = 2 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    np.testing.assert_array_equal(A.to_dense().numpy(), expected)
    u = tg.linalg.solve(A.to_dense(), tg.ones(n, dtype=tg.float64))
    np.testing.assert_allclose((tg.sparse.mm(A, u[:, None])[:, 0]).numpy(), np.ones(n))


@pytest.mark.parametrize("make, backend", [
    (lambda m: m, "'CPU'"),
    (lambda m: m.to_sparse(), "'SparseCPU'"),
    (lambda m: m.to_sparse_csr(), "'SparseCsrCPU'"),
])
def test_spsolve_refused_on_cpu_as_pytorch(make, backend):
    # PyTorch's CPU build has no kernel for aten::_spsolve (CUDA's cuDSS only)
    A = make(tg.tensor([[4.0, 1.0], [1.0, 3.0]]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(NotImplementedError, match=f"aten::_spsolve' with arguments from the {backend}"):
            tg.sparse.spsolve(A, tg.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="argument 'A' \\(position 1\\) must be Tensor, not list"):
        tg.sparse.spsolve([[1.0]], tg.tensor([1.0]))
