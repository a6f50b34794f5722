"""Held-out proxy scripts (NLP and graph tutorials, session proxyag): the sparse idioms of GCN
and sparse-GAT layers -- grad_fn names of sparse products as PyTorch records them, ``@`` between
a sparse matrix and a vector, torch.sparse.softmax / log_softmax and torch.sparse.addmm --
against PyTorch, plus finite differences for the new differentiable functions."""
import warnings

import numpy as np
import pytest

import tapegrad as tg

IDX = [[0, 1, 1, 3, 1, 2], [1, 0, 2, 2, 0, 3]]      # (1, 0) twice: coalescing sums it
VALS = [1., 2., 3., 4., 5., -1.5]


@pytest.fixture
def quiet_torch(torch):
    with warnings.catch_warnings():       # PyTorch warns about unchecked sparse invariants
        warnings.simplefilter("ignore", UserWarning)
        yield torch


def _sparse(L, vals=VALS, requires_grad=True, dtype=None):
    v = L.tensor(vals, requires_grad=requires_grad, dtype=dtype or L.float32)
    return L.sparse_coo_tensor(L.tensor(IDX), v, (4, 4)), v


PRODUCTS = {
    "sparse.mm": lambda L, A, x: L.sparse.mm(A, x),
    "mm": lambda L, A, x: L.mm(A, x),
    "@": lambda L, A, x: A @ x,
    "spmm": lambda L, A, x: L.spmm(A, x),
    "A.mm": lambda L, A, x: A.mm(x),
    "A.matmul": lambda L, A, x: A.matmul(x),
    "dense @ sparse": lambda L, A, x: x.t() @ A,
    "mm(dense, sparse)": lambda L, A, x: L.mm(x.t(), A),
    "sparse.mm(dense, sparse)": lambda L, A, x: L.sparse.mm(x.t(), A),
    "A.mv": lambda L, A, x: A.mv(x[:, 0]),
    "A @ vector": lambda L, A, x: A @ x[:, 0],
    "vector @ A": lambda L, A, x: x[:, 0] @ A,
    "sparse.mm(sparse, sparse)": lambda L, A, x: L.sparse.mm(A, A),
    "sparse @ sparse": lambda L, A, x: A @ A,
}


@pytest.mark.parametrize("route", sorted(PRODUCTS))
def test_sparse_product_grad_fn_and_values(quiet_torch, route):
    # A GCN's printed output shows its grad_fn: torch.sparse.mm records SparseAddmmBackward0,
    # torch.mm / @ / spmm MmBackward0 (tapegrad showed its internal IndexAddBackward0).
    # `A @ vector` and `vector @ A` raised IndexError / RuntimeError.
    x = np.arange(8.).reshape(4, 2) - 3
    results = []
    for L in (tg, quiet_torch):
        A, v = _sparse(L)
        xt = L.tensor(x, dtype=L.float32, requires_grad=True)
        out = PRODUCTS[route](L, A, xt)
        dense = out.to_dense() if out.is_sparse else out
        (dense * L.arange(float(dense.numel())).reshape(dense.shape)).sum().backward()
        results.append((out.is_sparse, type(out.grad_fn).__name__, dense.detach().numpy(),
                        v.grad.numpy(), None if xt.grad is None else xt.grad.numpy()))
    ours, theirs = results
    assert ours[:2] == theirs[:2]
    assert (ours[4] is None) == (theirs[4] is None)
    for a, b in zip(ours[2:], theirs[2:]):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dim", [0, 1])
def test_sparse_softmax_against_torch(quiet_torch, log, dim):
    # (dim=-1 is left to finite differences: PyTorch 2.13's forward is right there, but its
    # backward gives a different, wrong gradient for a negative dim.)
    results = []
    for L in (tg, quiet_torch):
        A, v = _sparse(L)
        fn = L.sparse.log_softmax if log else L.sparse.softmax
        out = fn(A, dim)
        weights = L.arange(1., 1. + out._nnz())
        (out.values() * weights).sum().backward()
        results.append((repr(out), out.is_coalesced(), v.grad.numpy()))
    assert results[0][:2] == results[1][:2]
    np.testing.assert_allclose(results[0][2], results[1][2], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("make", [
    # a dense dimension in the values: softmax within each stored entry
    lambda L: L.sparse.softmax(L.tensor([[1., 2.], [3., 4.]]).to_sparse(1), 1),
    lambda L: L.sparse.softmax(L.tensor([[1., 0.], [3., 4.]]).to_sparse(1), 0),
    lambda L: L.sparse.softmax(L.tensor([[1., 2.], [3., 0.]]).to_sparse(), 1, dtype=L.float64),
    lambda L: L.sparse.softmax(L.sparse_coo_tensor([[0, 0, 1]], [1., 2., 3.], (3,)), 0),
    lambda L: L.sparse.log_softmax(L.arange(24.).reshape(2, 3, 4).to_sparse(2), 1),
    lambda L: L.sparse.softmax(L.sparse_coo_tensor(L.zeros(2, 0, dtype=L.int64), L.zeros(0),
                                                   (2, 2)), 1),
])
def test_sparse_softmax_shapes_and_dtypes(quiet_torch, make):
    assert repr(make(tg)) == repr(make(quiet_torch))


@pytest.mark.parametrize("call", [
    lambda L: L.sparse.softmax(L.ones(2, 2), 1),
    lambda L: L.sparse.softmax(L.ones(2, 2).to_sparse(), 2),
    lambda L: L.sparse.softmax(L.ones(2, 2, dtype=L.int64).to_sparse(), 1),
])
def test_sparse_softmax_errors(quiet_torch, call):
    with pytest.raises(Exception) as theirs:
        call(quiet_torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(tg)
    assert str(theirs.value).split(" with ")[0].split(" (")[0] in str(ours.value)


@pytest.mark.parametrize("beta, alpha", [(1, 1), (2, 0.5), (0, 3)])
def test_sparse_addmm_against_torch(quiet_torch, beta, alpha):
    results = []
    for L in (tg, quiet_torch):
        A, v = _sparse(L)
        base = L.ones(4, 2, requires_grad=True)
        x = L.arange(8.).reshape(4, 2).requires_grad_()
        out = L.sparse.addmm(base, A, x, beta=beta, alpha=alpha)
        (out * L.arange(8.).reshape(4, 2)).sum().backward()
        results.append((type(out.grad_fn).__name__, out.detach().numpy(), v.grad.numpy(),
                        base.grad.numpy(), x.grad.numpy()))
    assert results[0][0] == results[1][0]
    for a, b in zip(results[0][1:], results[1][1:]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    dense = [[1., 2.], [3., 4.]]
    assert tg.sparse.addmm(tg.ones(2, 2), tg.tensor(dense), tg.tensor(dense)).tolist() == \
        quiet_torch.sparse.addmm(quiet_torch.ones(2, 2), quiet_torch.tensor(dense),
                                 quiet_torch.tensor(dense)).tolist()


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_sparse_softmax_finite_differences(gradcheck, log, dim):
    idx = tg.tensor(IDX)
    fn = tg.sparse.log_softmax if log else tg.sparse.softmax
    weights = tg.tensor(np.linspace(0.5, 2.0, 5))       # 5 entries once (1, 0) is coalesced
    gradcheck(lambda v: fn(tg.sparse_coo_tensor(idx, v, (4, 4)), dim).values() * weights,
              np.array(VALS) / 2)


def test_sparse_addmm_finite_differences(gradcheck):
    idx = tg.tensor(IDX)
    gradcheck(lambda m, v, d: tg.sparse.addmm(m, tg.sparse_coo_tensor(idx, v, (4, 4)), d,
                                              beta=0.5, alpha=2.0),
              np.linspace(-1, 1, 8).reshape(4, 2), np.array(VALS), np.linspace(-2, 1, 8).reshape(4, 2))


@pytest.mark.parametrize("read", [
    lambda A: A.to_dense(),
    lambda A: A.coalesce().values(),
    lambda A: A.coalesce().to_dense(),
    lambda A: A.t().to_dense(),
])
def test_sparse_readout_grad_fn_names(quiet_torch, read):
    # printed tensors read back from a sparse adjacency show ToDenseBackward0 / ValuesBackward0
    names, values = [], []
    for L in (tg, quiet_torch):
        A, v = _sparse(L)
        out = read(A)
        names.append(type(out.grad_fn).__name__)
        out.sum().backward()
        values.append((out.detach().numpy(), v.grad.numpy()))
    assert names[0] == names[1]
    for a, b in zip(*values):
        np.testing.assert_allclose(a, b)


@pytest.mark.parametrize("make", [
    lambda L, A: A,
    lambda L, A: L.sparse_coo_tensor(A.coalesce().indices(), A.coalesce().values() * 1, (4, 4)),
    lambda L, A: A.coalesce(),
    lambda L, A: A * 2,
    lambda L, A: -A,
    lambda L, A: A + A,
    lambda L, A: A - A.coalesce(),
    lambda L, A: A.add(A, alpha=2),
    lambda L, A: A.t(),
    lambda L, A: A.transpose(0, 1),
    lambda L, A: L.sparse.sum(A, 1),
    lambda L, A: A.to_dense().to_sparse(),
    lambda L, A: A.clone(),
    lambda L, A: A.t().t(),
])
def test_sparse_result_grad_fn_objects(quiet_torch, make):
    # `S.grad_fn` of a sparse result was None (t(), transpose, a tensor built from values that
    # require grad) or tapegrad's internal node (IndexAddBackward0 for coalesce, +, -, sum).
    results = []
    for L in (tg, quiet_torch):
        A, v = _sparse(L)
        out = make(L, A)
        dense = out.to_dense() if out.is_sparse else out
        (dense * L.arange(float(dense.numel())).reshape(dense.shape)).sum().backward()
        results.append((type(out.grad_fn).__name__, out.is_leaf, repr(out).split("grad_fn=")[-1],
                        v.grad.numpy()))
    assert results[0][:3] == results[1][:3]
    np.testing.assert_allclose(results[0][3], results[1][3])


ELEMENTWISE = {
    "S * D": lambda A, D: A * D,
    "D * S": lambda A, D: D * A,
    "S.mul(D)": lambda A, D: A.mul(D),
    "abs": lambda A, D: A.abs(),
    "pow": lambda A, D: A.pow(2),
    "**": lambda A, D: A ** 3,
    "pow(-1)": lambda A, D: A.pow(-1),
    "square": lambda A, D: A.square(),
    "relu": lambda A, D: A.relu(),
    "log1p": lambda A, D: A.abs().log1p(),
}


@pytest.mark.parametrize("op", sorted(ELEMENTWISE))
def test_sparse_elementwise_against_torch(quiet_torch, op):
    # sparse * dense (a GAT's masked scores) and zero-preserving maps of the stored values
    # raised TypeError / NotImplementedError.
    results = []
    for L in (tg, quiet_torch):
        A, v = _sparse(L)
        D = (L.arange(16.).reshape(4, 4) - 5).requires_grad_()
        out = ELEMENTWISE[op](A, D)
        (out.to_dense() * L.arange(16.).reshape(4, 4)).sum().backward()
        grad_d = None if D.grad is None else D.grad.to_dense().numpy()
        results.append((repr(out), v.grad.numpy(), grad_d))
    (ours, ours_v, ours_d), (theirs, theirs_v, theirs_d) = results
    assert ours == theirs
    np.testing.assert_allclose(ours_v, theirs_v, rtol=1e-6)
    assert (ours_d is None) == (theirs_d is None)
    if theirs_d is not None:        # PyTorch hands the dense operand a sparse gradient
        np.testing.assert_allclose(ours_d, theirs_d, rtol=1e-6)


def test_sparse_pow_zero_refused(quiet_torch):
    with pytest.raises(RuntimeError, match="cannot raise to zeroth power on sparse tensor"):
        _sparse(quiet_torch)[0].pow(0)
    with pytest.raises(RuntimeError, match="cannot raise to zeroth power on sparse tensor"):
        _sparse(tg)[0].pow(0)


def test_sparse_elementwise_finite_differences(gradcheck):
    # (sqrt, tanh and sin are checked here only: PyTorch 2.13's sparse backward of each raises)
    idx = tg.tensor(IDX)
    dense = np.linspace(-1, 2, 16).reshape(4, 4)
    gradcheck(lambda v, d: (tg.sparse_coo_tensor(idx, v, (4, 4)) * d).to_dense(),
              np.array(VALS), dense)
    gradcheck(lambda v: tg.sparse_coo_tensor(idx, v, (4, 4)).pow(3).to_dense(), np.array(VALS))
    for fn in (lambda s: s.abs().sqrt(), lambda s: s.tanh(), lambda s: s.sin()):
        gradcheck(lambda v: fn(tg.sparse_coo_tensor(idx, v, (4, 4))).to_dense(), np.array(VALS))


def test_sparse_sqrt_tanh_sin_forward(quiet_torch):
    for fn in (lambda s: s.abs().sqrt(), lambda s: s.tanh(), lambda s: s.sin()):
        assert repr(fn(_sparse(tg)[0])) == repr(fn(_sparse(quiet_torch)[0]))


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("args", [
    (3, 4, 2, 0.5),                       # dropout given positionally lands in bias
    (3, 4, 1, True, 1),                   # batch_first=1
    (3.0, 4),                             # input_size a float
    (0, 4),                               # input_size zero
])
def test_rnn_constructor_argument_types(torch, cls, args):
    # L1aoXingyu/Char-RNN-PyTorch builds nn.GRU(embed_dim, hidden_size, num_layers, dropout):
    # PyTorch refuses the float bias with TypeError; tapegrad built a GRU silently.
    with pytest.raises((TypeError, ValueError)) as theirs:
        getattr(torch.nn, cls)(*args)
    with pytest.raises(type(theirs.value)) as ours:
        getattr(tg.nn, cls)(*args)
    assert str(ours.value) == str(theirs.value)
