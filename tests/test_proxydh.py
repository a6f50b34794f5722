"""What the proxy of public graph-algorithm and combinatorial-optimisation scripts (PageRank,
shortest paths, label propagation, Sinkhorn, pointer networks, GCNs over sparse adjacency)
found tapegrad lacking: a module holding its sparse adjacency as a buffer (registration, dtype
casts, state_dict round trips), the sparse tensor's copy_, ..."""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn as nn

warnings.filterwarnings("ignore", message="Sparse invariant checks")


def _adjacency(dtype=tg.float32):
    return tg.sparse_coo_tensor(tg.tensor([[0, 1, 2], [1, 2, 0]]), tg.ones(3, dtype=dtype), (3, 3))


class _SparseGCN(nn.Module):
    """A GCN layer keeping its normalised adjacency as a buffer (a common idiom)."""

    def __init__(self, adj):
        super().__init__()
        self.register_buffer("adj", adj)
        self.lin = nn.Linear(3, 2)

    def forward(self, x):
        return tg.sparse.mm(self.adj, self.lin(x))


# -- sparse buffers ----------------------------------------------------------------------------

def test_sparse_tensor_registers_and_assigns_as_buffer():
    m = _SparseGCN(_adjacency())
    assert [n for n, _ in m.named_buffers()] == ["adj"]
    assert m.state_dict()["adj"].layout is tg.sparse_coo
    m.adj = _adjacency().coalesce()
    assert m.adj.is_coalesced()
    with pytest.raises(TypeError, match="cannot assign 'int' as buffer 'adj'"):
        m.adj = 3
    with pytest.raises(TypeError, match="cannot assign 'list' object to buffer 'b'"):
        m.register_buffer("b", [1])


@pytest.mark.parametrize("cast, dtype", [("double", tg.float64), ("half", tg.float16),
                                         ("float", tg.float32)])
def test_module_dtype_casts_convert_a_sparse_buffer(cast, dtype):
    m = _SparseGCN(_adjacency(tg.float64 if cast == "float" else tg.float32))
    getattr(m, cast)()
    assert m.adj.dtype == dtype and m.adj.layout is tg.sparse_coo
    assert m.lin.weight.dtype == dtype


def test_module_to_dtype_casts_sparse_buffer_and_forward_runs_in_that_dtype():
    m = _SparseGCN(_adjacency()).to(tg.float64)
    assert m.adj.dtype == tg.float64
    out = m(tg.ones(3, 3, dtype=tg.float64))
    assert out.dtype == tg.float64
    # an integer sparse buffer keeps its dtype under to(float64), as PyTorch's
    m2 = _SparseGCN(_adjacency(tg.int64)).to(tg.float64)
    assert m2.adj.dtype == tg.int64


def test_state_dict_round_trip_with_sparse_buffer():
    m = _SparseGCN(_adjacency())
    buf = io.BytesIO()
    tg.save(m.state_dict(), buf)
    buf.seek(0)
    loaded = tg.load(buf)
    target = _SparseGCN(tg.sparse_coo_tensor(tg.tensor([[0], [0]]), tg.ones(1), (3, 3)))
    result = target.load_state_dict(loaded)
    assert not result.missing_keys and not result.unexpected_keys
    np.testing.assert_array_equal(target.adj.to_dense().numpy(), m.adj.to_dense().numpy())
    np.testing.assert_array_equal(target.lin.weight.detach().numpy(),
                                  m.lin.weight.detach().numpy())


def test_load_state_dict_sparse_errors_follow_pytorch():
    m = _SparseGCN(_adjacency())
    with pytest.raises(RuntimeError, match=r"size mismatch for adj: copying a param with shape "
                                           r"torch.Size\(\[2, 3\]\)"):
        m.load_state_dict({"adj": tg.ones(2, 3)}, strict=False)
    with pytest.raises(RuntimeError, match="copy_\\(\\) between dense and sparse Tensors is not "
                                           "implemented! Found self type = torch.sparse."
                                           "FloatTensor and src type = torch.FloatTensor"):
        m.load_state_dict({"adj": tg.ones(3, 3)}, strict=False)
    with pytest.raises(RuntimeError, match="expected torch.Tensor or Tensor-like object"):
        m.load_state_dict({"adj": 3}, strict=False)
    dense = nn.Module()
    dense.register_buffer("adj", tg.zeros(3, 3))
    with pytest.raises(RuntimeError, match="Found self type = torch.FloatTensor and src type = "
                                           "torch.sparse.FloatTensor"):
        dense.load_state_dict(m.state_dict(), strict=False)
    doubled = _adjacency() * 2
    m.load_state_dict({"adj": doubled}, strict=False, assign=True)
    assert m.adj is doubled


# -- SparseTensor.copy_ ------------------------------------------------------------------------

def test_sparse_copy_takes_entries_and_size_in_own_dtype():
    t = tg.sparse_coo_tensor(tg.tensor([[0], [0]]), tg.ones(1, dtype=tg.float64), (2, 2))
    src = _adjacency()
    assert t.copy_(src) is t
    assert t.dtype == tg.float64 and tuple(t.shape) == (3, 3) and t._nnz() == 3
    np.testing.assert_array_equal(t.to_dense().numpy(), src.to_dense().numpy())
    # the copy owns its values: changing the source afterwards leaves it alone
    src.mul_(5)
    assert t.to_dense().sum().item() == 3.0


def test_sparse_copy_refuses_shrinking_a_nonempty_tensor_but_not_an_empty_one():
    big = tg.sparse_coo_tensor(tg.tensor([[0], [0]]), tg.ones(1), (4, 4))
    with pytest.raises(RuntimeError, match=r"shrinking the size of sparse dimensions \(from "
                                           r"\[4, 4\] to \[3, 3\]\)"):
        big.copy_(_adjacency())
    empty = tg.sparse_coo_tensor(tg.empty(2, 0, dtype=tg.int64), tg.empty(0), (5, 5))
    empty.copy_(_adjacency())
    assert tuple(empty.shape) == (3, 3)


def test_sparse_copy_checks_against_torch():
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore", message="Sparse invariant checks")
    idx = [[0, 1, 1, 0], [2, 0, 2, 2]]
    vals = [3.0, -4.0, 5.0, 1.0]
    for lib in (torch, tg):
        t = lib.sparse_coo_tensor(lib.tensor([[1], [1]]), lib.ones(1, dtype=lib.float64), (2, 3))
        t.copy_(lib.sparse_coo_tensor(lib.tensor(idx), lib.tensor(vals), (2, 3)))
        if lib is torch:
            expected = (t.dtype, t.is_coalesced(), t.to_dense().numpy())
        else:
            assert str(t.dtype) == str(expected[0]) and t.is_coalesced() == expected[1]
            np.testing.assert_array_equal(t.to_dense().numpy(), expected[2])


# -- zero-preserving elementwise functions on sparse tensors ----------------------------------

_UNARY_NAMES = ["sign", "floor", "ceil", "round", "trunc", "fix", "expm1", "sgn", "asin",
                "arcsin", "atan", "arctan", "sinh", "asinh", "atanh", "erf", "erfinv", "frac",
                "deg2rad", "rad2deg", "nan_to_num", "tan", "abs", "absolute", "sqrt", "square",
                "tanh", "sin", "log1p", "relu", "isnan", "isinf", "isposinf", "isneginf",
                "signbit"]


@pytest.mark.parametrize("name", _UNARY_NAMES)
def test_sparse_zero_preserving_function_matches_torch(name):
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore", message="Sparse invariant checks")
    idx = [[0, 1, 1, 0], [2, 0, 2, 2]]
    vals = [0.3, -0.4, 0.5, 0.1]
    got = getattr(tg.sparse_coo_tensor(tg.tensor(idx), tg.tensor(vals), (2, 3)), name)()
    want = getattr(torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(vals), (2, 3)), name)()
    assert got.layout is tg.sparse_coo and str(got.dtype) == str(want.dtype)
    assert got.is_coalesced() == want.is_coalesced() and got._nnz() == want._nnz()
    np.testing.assert_allclose(got.to_dense().numpy(), want.to_dense().numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["expm1", "asin", "atan", "sinh", "asinh", "atanh", "erf",
                                  "erfinv", "tan", "nan_to_num"])
def test_sparse_zero_preserving_function_gradients(name):
    idx = tg.tensor([[0, 1, 1, 0], [2, 0, 2, 2]])

    def through_sparse(v):
        return getattr(tg.sparse_coo_tensor(idx, v, (2, 3)), name)().coalesce().values()

    v = tg.tensor([0.3, -0.4, 0.5, 0.1], dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(through_sparse, (v,))
    out = getattr(tg.sparse_coo_tensor(idx, v, (2, 3)), name)()
    assert out.grad_fn is not None


def test_sparse_nan_to_num_keyword_arguments():
    s = tg.sparse_coo_tensor(tg.tensor([[0, 1, 1], [2, 0, 1]]),
                             tg.tensor([float("nan"), float("inf"), -float("inf")]), (2, 3))
    np.testing.assert_array_equal(s.nan_to_num(nan=0.5, posinf=9.0, neginf=-9.0).to_dense()
                                  .numpy(), [[0, 0, 0.5], [9, -9, 0]])
    assert tg.sign(s).layout is tg.sparse_coo


def test_sparse_sum_refuses_compressed_layouts_as_pytorch():
    for s, name in [(tg.eye(3).to_sparse_csr(), "SparseCsr"), (tg.eye(4).to_sparse_csc(), "SparseCsc"),
                    (tg.ones(2), "Strided")]:
        with pytest.raises(RuntimeError, match=f"coalesce expected sparse coordinate tensor "
                                               f"layout but got {name}"):
            tg.sparse.sum(s)
    assert tg.sparse.sum(tg.eye(2).to_sparse()).item() == 2.0


# -- grad_fn names: the overload PyTorch records ------------------------------------------------

@pytest.mark.parametrize("kwargs, node", [({}, "SortBackward0"), ({"descending": True}, "SortBackward0"),
                                          ({"stable": True}, "SortBackward1"),
                                          ({"stable": False}, "SortBackward1"),
                                          ({"dim": 0, "stable": True}, "SortBackward1")])
def test_sort_node_follows_the_overload_called(kwargs, node):
    x = tg.tensor([3.0, 1.0, 2.0], requires_grad=True)
    assert tg.sort(x, **kwargs).values.grad_fn.name() == node
    assert x.sort(**kwargs).values.grad_fn.name() == node
    transposed = tg.arange(6.0).reshape(2, 3).T.requires_grad_()     # (the layout-keeping path)
    assert transposed.sort(**kwargs).values.grad_fn.name() == node
    values, indices = x.sort(**kwargs)
    values.backward(tg.tensor([1.0, 10.0, 100.0]))
    expected = np.zeros(3)
    expected[indices.numpy()] = [1.0, 10.0, 100.0]
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_nanmedian_of_all_elements_is_its_own_node():
    y = tg.tensor([1.0, float("nan"), 3.0, 3.0], requires_grad=True)
    m = tg.nanmedian(y)
    assert m.grad_fn.name() == "NanmedianBackward0"
    assert tg.median(y.detach().requires_grad_()).grad_fn.name() == "MedianBackward0"
    m.backward()
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 0.0, 0.5, 0.5])   # ties share it
