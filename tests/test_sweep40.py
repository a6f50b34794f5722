"""Sparse COO sweep (session 30, from PyTorch's test/test_sparse.py): construction from a size
alone, zero sparse dimensions, narrow_copy, hspmm, index_select's index checks and dense
dimensions, floor division, in-place transpose, sparse.sum's repeated dims.  Every expectation
is PyTorch's own result on the same data."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks:UserWarning")

IDX = [[0, 1, 1, 2, 0], [2, 0, 2, 1, 2]]
VALS = [1.5, -2.0, 3.0, 4.25, 0.5]


def _coo(lib, dtype="float64", requires_grad=False, hybrid=False):
    vals = np.arange(10.).reshape(5, 2) - 4 if hybrid else np.array(VALS)
    size = (3, 4, 2) if hybrid else (3, 4)
    return lib.sparse_coo_tensor(lib.tensor(IDX), lib.tensor(vals, dtype=getattr(lib, dtype)),
                                 size, requires_grad=requires_grad)


def _same_sparse(got, want):
    assert got.is_sparse and want.is_sparse
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype) == str(want.dtype)
    assert (got.sparse_dim(), got.dense_dim()) == (want.sparse_dim(), want.dense_dim())
    assert got.is_coalesced() == want.is_coalesced()
    np.testing.assert_array_equal(got._indices().numpy(), want._indices().numpy())
    np.testing.assert_allclose(got._values().numpy(), want._values().numpy(), rtol=1e-6)


@pytest.mark.parametrize("make", [lambda lib: lib.sparse_coo_tensor((2, 3), dtype=lib.float64),
                                  lambda lib: lib.sparse_coo_tensor(lib.Size([2, 3])),
                                  lambda lib: lib.sparse_coo_tensor([4])])
def test_sparse_coo_tensor_from_a_size_alone_is_empty(make):
    _same_sparse(make(tg), make(torch))


def test_coalesce_and_to_dense_with_no_sparse_dimensions_sum_every_entry():
    def make(lib):
        return lib.sparse_coo_tensor(lib.zeros(0, 3, dtype=lib.long),
                                     lib.tensor([[1., 2.], [3., 4.], [5., 6.]]), (2,))
    _same_sparse(make(tg).coalesce(), make(torch).coalesce())
    np.testing.assert_array_equal(make(tg).to_dense().numpy(), make(torch).to_dense().numpy())


@pytest.mark.parametrize("x", [3.5, 0.0])
def test_to_sparse_of_a_scalar(x):
    _same_sparse(tg.tensor(x).to_sparse(), torch.tensor(x).to_sparse())
    assert tg.tensor(x).to_sparse().to_dense().item() == x


def test_to_sparse_of_a_scalar_is_differentiable():
    a, b = tg.tensor(2.0, requires_grad=True), torch.tensor(2.0, requires_grad=True)
    (tg.sparse.sum(a.to_sparse()) * 3).backward()
    (torch.sparse.sum(b.to_sparse()) * 3).backward()
    assert a.grad.item() == b.grad.item() == 3.0


@pytest.mark.parametrize("dim,start,length", [(0, 1, 2), (1, 2, 2), (1, 0, 3), (0, 0, 0)])
def test_narrow_copy_along_a_sparse_dimension(dim, start, length):
    _same_sparse(_coo(tg).narrow_copy(dim, start, length),
                 _coo(torch).narrow_copy(dim, start, length))
    _same_sparse(tg.narrow_copy(_coo(tg), dim, start, length),
                 torch.narrow_copy(_coo(torch), dim, start, length))


def test_narrow_copy_along_a_dense_dimension_and_of_a_coalesced_tensor():
    _same_sparse(_coo(tg, hybrid=True).narrow_copy(2, 1, 1),
                 _coo(torch, hybrid=True).narrow_copy(2, 1, 1))
    _same_sparse(_coo(tg).coalesce().narrow_copy(1, 2, 2),
                 _coo(torch).coalesce().narrow_copy(1, 2, 2))


@pytest.mark.parametrize("args,exc,phrase", [((0, 2, 3), RuntimeError, "Invalid range to narrow"),
                                             ((0, -1, 1), RuntimeError, "Invalid range"),
                                             ((0, 1, -1), RuntimeError, "length must be"),
                                             ((2, 0, 1), RuntimeError, "Dimension 2 out of range"),
                                             ((-1, 0, 1), RuntimeError, "Dimension -1 out of")])
def test_narrow_copy_refusals(args, exc, phrase):
    with pytest.raises(exc, match=phrase):
        _coo(tg).narrow_copy(*args)
    with pytest.raises(exc, match=phrase):
        _coo(torch).narrow_copy(*args)


def test_narrow_copy_gradient_reaches_the_kept_values():
    vals = tg.tensor(VALS, dtype=tg.float64, requires_grad=True)

    def f(v):
        s = tg.sparse_coo_tensor(tg.tensor(IDX), v, (3, 4))
        return s.narrow_copy(1, 1, 2).to_dense() * tg.tensor([[1., 2.], [3., 4.], [5., 6.]],
                                                               dtype=tg.float64)
    assert tg.autograd.gradcheck(f, (vals,))
    f(vals).sum().backward()
    # entries at column 1 and 2 are kept: (0,2)->col 1 weight 2, (1,2)->4, (2,1)->5, (0,2)->2
    np.testing.assert_allclose(vals.grad.numpy(), [2., 0., 4., 5., 2.])


def test_hspmm_matches_pytorch():
    dense = np.arange(8.).reshape(4, 2) - 3
    got = tg.hspmm(_coo(tg), tg.tensor(dense))
    want = torch.hspmm(_coo(torch), torch.tensor(dense))
    _same_sparse(got, want)
    _same_sparse(_coo(tg).hspmm(tg.tensor(dense)), want)


def test_hspmm_refusals():
    with pytest.raises(RuntimeError, match="Expected dim 0 size 4, got 3"):
        tg.hspmm(_coo(tg), tg.ones(3, 2, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        tg.hspmm(_coo(tg), tg.ones(4, 2))
    with pytest.raises(NotImplementedError, match="hspmm"):
        tg.hspmm(tg.ones(2, 2), tg.ones(2, 2))


def test_hspmm_gradient_by_finite_differences():
    vals = tg.tensor(VALS, dtype=tg.float64, requires_grad=True)
    dense = tg.tensor(np.arange(8.).reshape(4, 2) / 3, requires_grad=True)

    def f(v, d):
        return tg.hspmm(tg.sparse_coo_tensor(tg.tensor(IDX), v, (3, 4)), d).to_dense()
    assert tg.autograd.gradcheck(f, (vals, dense))


def test_index_select_refuses_a_float_or_2d_index():
    for bad in (tg.tensor([1.]), tg.tensor([[0]])):
        with pytest.raises(IndexError, match="must be 1-D strided"):
            _coo(tg).index_select(0, bad)
    with pytest.raises(IndexError, match="must be 1-D strided"):
        _coo(torch).index_select(0, torch.tensor([1.]))


def test_index_select_along_a_dense_dimension():
    index = [1, 0, 1]
    got = _coo(tg, hybrid=True).index_select(2, tg.tensor(index))
    want = _coo(torch, hybrid=True).index_select(2, torch.tensor(index))
    _same_sparse(got, want)
    vals = tg.tensor(np.arange(10.).reshape(5, 2), requires_grad=True)
    assert tg.autograd.gradcheck(
        lambda v: tg.sparse_coo_tensor(tg.tensor(IDX), v, (3, 4, 2)).index_select(
            2, tg.tensor(index)).to_dense(), (vals,))


def test_floor_divide_coalesces_first():
    _same_sparse(_coo(tg) // 2, _coo(torch) // 2)
    _same_sparse(tg.floor_divide(_coo(tg), 2), torch.floor_divide(_coo(torch), 2))
    _same_sparse(_coo(tg, "int64") // 2, _coo(torch, "int64") // 2)


def test_transpose_in_place_and_of_dense_dimensions():
    a, b = _coo(tg), _coo(torch)
    assert a.transpose_(0, 1) is a
    b.transpose_(0, 1)
    _same_sparse(a, b)
    with pytest.raises(RuntimeError, match="transposed dimensions must be sparse"):
        tg.sparse_coo_tensor(tg.tensor(IDX), tg.ones(5, 2, 2), (3, 4, 2, 2)).transpose(2, 3)


def test_sparse_sum_refuses_a_repeated_dim():
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
        tg.sparse.sum(_coo(tg), [0, -2])
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
        torch.sparse.sum(_coo(torch), [0, -2])


def test_is_same_size():
    assert _coo(tg).is_same_size(tg.zeros(3, 4)) is _coo(torch).is_same_size(torch.zeros(3, 4))
    assert _coo(tg).is_same_size(_coo(tg).t()) is False


@pytest.mark.parametrize("op", ["mul_", "div_"])
@pytest.mark.parametrize("factor", [2.5, "tensor"])
def test_in_place_scaling(op, factor):
    a, b = _coo(tg), _coo(torch)
    fa = tg.tensor(2.5, dtype=tg.float64) if factor == "tensor" else factor
    fb = torch.tensor(2.5, dtype=torch.float64) if factor == "tensor" else factor
    assert getattr(a, op)(fa) is a
    getattr(b, op)(fb)
    np.testing.assert_allclose(a.to_dense().numpy(), b.to_dense().numpy())
    np.testing.assert_array_equal(a._indices().numpy(), b._indices().numpy())


def test_in_place_scaling_of_a_leaf_that_requires_grad_is_refused():
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        _coo(tg, requires_grad=True).mul_(2)


def test_in_place_scaling_of_a_non_leaf_keeps_the_gradient_path():
    vals = tg.tensor(VALS, dtype=tg.float64, requires_grad=True)
    s = tg.sparse_coo_tensor(tg.tensor(IDX), vals * 1, (3, 4))
    s.mul_(3.0)
    s *= 2
    s.to_dense().sum().backward()
    np.testing.assert_allclose(vals.grad.numpy(), [6.0] * 5)


def test_floor_division_by_a_tensor_with_dimensions_is_refused():
    with pytest.raises(RuntimeError, match="requires a scalar or zero-dim dense tensor divisor"):
        _coo(tg) // tg.ones(4, dtype=tg.float64)
    with pytest.raises(RuntimeError, match="requires a scalar or zero-dim dense tensor divisor"):
        _coo(tg) // _coo(tg)


def test_hspmm_of_a_vector_and_of_an_empty_matrix():
    with pytest.raises(RuntimeError, match="matrices expected, got 1D tensor"):
        tg.hspmm(_coo(tg), tg.ones(4, dtype=tg.float64))
    empty_tg = tg.sparse_coo_tensor(tg.zeros(2, 0, dtype=tg.long), tg.zeros(0), (3, 4))
    empty_t = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (3, 4))
    _same_sparse(tg.hspmm(empty_tg, tg.ones(4, 2)), torch.hspmm(empty_t, torch.ones(4, 2)))


BATCH = np.zeros((3, 2, 4))
BATCH[0, 1, 2], BATCH[2, 0, 0], BATCH[2, 1, 3] = 2.0, -1.0, 4.0
RIGHT = np.arange(24.).reshape(3, 4, 2) / 5


def test_bmm_of_a_sparse_batch_and_a_dense_one():
    want = torch.bmm(torch.tensor(BATCH).to_sparse(), torch.tensor(RIGHT))
    got = tg.bmm(tg.tensor(BATCH).to_sparse(), tg.tensor(RIGHT))
    np.testing.assert_allclose(got.numpy(), want.numpy())
    got = tg.stack([tg.tensor(BATCH[k]).to_sparse() for k in range(3)]).bmm(tg.tensor(RIGHT))
    np.testing.assert_allclose(got.numpy(), want.numpy())
    empty = tg.sparse_coo_tensor(tg.zeros(3, 0, dtype=tg.long), tg.zeros(0, dtype=tg.float64),
                                 (3, 2, 4))
    np.testing.assert_array_equal(empty.bmm(tg.tensor(RIGHT)).numpy(), np.zeros((3, 2, 2)))


def test_bmm_gradients_by_finite_differences_and_grad_fn():
    right = tg.tensor(RIGHT, requires_grad=True)
    vals = tg.tensor([2.0, -1.0, 4.0], dtype=tg.float64, requires_grad=True)
    index = tg.tensor([[0, 2, 2], [1, 0, 1], [2, 0, 3]])

    def f(v, r):
        return tg.sparse_coo_tensor(index, v, (3, 2, 4)).bmm(r)
    assert tg.autograd.gradcheck(f, (vals, right))
    assert type(f(vals, right).grad_fn).__name__ == "BmmBackward0"


@pytest.mark.parametrize("other,phrase", [
    (np.ones((3, 5, 2)), r"'self.size\(2\)' and 'mat2.size\(1\)' must match"),
    (np.ones((2, 4, 2)), r"'self.size\(0\)' and 'mat2.size\(0\)' must match"),
    (np.ones((4, 2)), "Tensor 'mat2' must have 3 dims, but has 2"),
    (np.ones((3, 4, 2), dtype=np.float32), "expected scalar type Double but found Float")])
def test_bmm_refusals(other, phrase):
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match=phrase):
            lib.tensor(BATCH).to_sparse().bmm(lib.tensor(other))
    with pytest.raises(RuntimeError, match="must have 3 sparse dims, but has 2"):
        tg.tensor(BATCH[0]).to_sparse().bmm(tg.tensor(RIGHT))
    with pytest.raises(RuntimeError, match="Tensor 'mat2' must be dense"):
        tg.bmm(tg.ones(3, 2, 4, dtype=tg.float64), tg.tensor(BATCH).to_sparse().transpose(1, 2))


def test_dsmm_and_hsmm():
    dense = np.arange(8.).reshape(4, 2) - 3
    np.testing.assert_allclose(tg.dsmm(_coo(tg), tg.tensor(dense)).numpy(),
                               torch.dsmm(_coo(torch), torch.tensor(dense)).numpy())
    _same_sparse(tg.hsmm(_coo(tg), tg.tensor(dense)), torch.hsmm(_coo(torch), torch.tensor(dense)))
