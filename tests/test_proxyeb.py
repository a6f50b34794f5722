"""Implicit layers and differentiable optimisation (proxy corpus proxyeb): linear-algebra
corners those layers meet (condition numbers of degenerate matrices, norms and determinants that
overflow, argument errors of the solvers), compared against PyTorch."""
import math
import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _error(lib, fn):
    try:
        fn(lib)
    except Exception as e:         # noqa: BLE001 - the type and message are what we compare
        return type(e).__name__, str(e)
    return None


def test_solve_triangular_missing_upper_uses_parser_words():
    # `upper` is keyword-only: PyTorch's parser calls it a missing positional argument (Python's
    # own words, "keyword-only argument: 'upper'", leaked through)
    call = lambda L: L.linalg.solve_triangular(L.eye(2), L.ones(2, 1))
    assert _error(tg, call) == _error(torch, call) == (
        "TypeError", 'linalg_solve_triangular() missing 1 required positional arguments: "upper"')


def test_missing_positional_and_keyword_only_named_together():
    # PyTorch's parser names every required argument left out; Python names the positional
    # ones first, alone ("missing 1 ...: 'B'")
    call = lambda L: L.linalg.solve_triangular(L.eye(2))
    assert _error(tg, call) == _error(torch, call) == (
        "TypeError", 'linalg_solve_triangular() missing 2 required positional argument: "B", '
                     '"upper"')


NON_FINITE = {
    "nan": [[math.nan, 1.0], [0.0, 1.0]],
    "inf": [[math.inf, 1.0], [0.0, 1.0]],
    "zero": [[0.0, 0.0], [0.0, 0.0]],
    "singular": [[1.0, 2.0], [2.0, 4.0]],
    "regular": [[4.0, 1.0], [1.0, 3.0]],
}


@pytest.mark.parametrize("p", ["fro", 1, -1, math.inf, -math.inf])
@pytest.mark.parametrize("case", sorted(NON_FINITE))
def test_cond_by_inverse_turns_nan_into_inf(p, case):
    # PyTorch's cond for the orders it computes through the inverse maps every NaN of
    # norm(A) * norm(A^-1) to inf (a NaN in A gave NaN here)
    rows = NON_FINITE[case]
    got = tg.linalg.cond(tg.tensor(rows, dtype=tg.float64), p)
    want = torch.linalg.cond(torch.tensor(rows, dtype=torch.float64), p)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("p", [None, 2, -2, "nuc", "fro", 1, math.inf])
def test_cond_graph_and_gradient(p):
    rows = [[[4.0, 1.0], [1.0, 3.0]], [[2.0, -1.0], [0.5, 1.0]]]
    a = tg.tensor(rows, dtype=tg.float64, requires_grad=True)
    t = torch.tensor(rows, dtype=torch.float64, requires_grad=True)
    ca, ct = tg.linalg.cond(a, p), torch.linalg.cond(t, p)
    assert ca.grad_fn.name() == ct.grad_fn.name()
    assert tuple(ca.shape) == tuple(ct.shape)
    np.testing.assert_allclose(ca.detach().numpy(), ct.detach().numpy(), rtol=1e-12)
    if p not in (None, 2, -2, "nuc"):
        # (PyTorch's backward through these raises: it writes into inv_ex's saved output)
        return
    ca.sum().backward()
    ct.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert tg.autograd.gradcheck(lambda x: tg.linalg.cond(x, p), (a.detach().requires_grad_(),))


@pytest.mark.parametrize("fn", [
    lambda L, A: L.linalg.matrix_norm(A),
    lambda L, A: L.linalg.norm(A),
    lambda L, A: L.linalg.cond(A, "fro"),
    lambda L, A: L.linalg.det(A),
    lambda L, A: L.det(A),
])
def test_overflow_is_inf_without_numpy_warnings(fn):
    # float32 values whose squares or products overflow: PyTorch answers inf (or -inf) silently;
    # numpy's "overflow encountered in multiply" RuntimeWarning leaked to the user
    rows = [[1e30, 1e30], [1e30, -1e30]]
    want = fn(torch, torch.tensor(rows))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = fn(tg, tg.tensor(rows))
    assert got.dtype == tg.float32
    np.testing.assert_array_equal(got.numpy(), want.numpy())


_EXTREME = [1e30, -1e30, 0.0, math.inf, math.nan, -1.0, 1e-45, 3e38, 2.5]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", [
    lambda L, x: L.lgamma(x),
    lambda L, x: L.xlogy(x, x),
    lambda L, x: L.special.entr(x),
    lambda L, x: L.hypot(x, x),
    lambda L, x: L.nn.functional.kl_div(x, x.abs(), reduction="none"),
    lambda L, x: L.i0(x),
], ids=["lgamma", "xlogy", "entr", "hypot", "kl_div", "i0"])
def test_elementwise_overflow_is_silent(fn, dtype):
    # results beyond the dtype's range are inf (nan where PyTorch has nan) without numpy's
    # RuntimeWarnings ("overflow encountered in multiply / cast / hypot", "invalid value")
    scale = 1.0 if dtype == "float32" else 1e280
    want = fn(torch, torch.tensor(_EXTREME, dtype=getattr(torch, dtype)) * scale)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = tg.tensor(_EXTREME, dtype=getattr(tg, dtype)) * scale
        got = fn(tg, x)
        got_rec = fn(tg, x.clone().requires_grad_())
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    np.testing.assert_allclose(got_rec.detach().numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", [
    lambda L, v, i: L.zeros(2, 2, dtype=v.dtype).index_add(0, i, L.stack([v, v], 1)),
    lambda L, v, i: L.nn.functional.embedding_bag(L.tensor([[0, 1]]), v[:, None], mode="sum"),
    lambda L, v, i: L.zeros(2, dtype=v.dtype).scatter_reduce(0, i, v, "sum"),
    lambda L, v, i: L.zeros(2, dtype=v.dtype).scatter_reduce(0, i, v, "prod"),
    lambda L, v, i: L.zeros(2, dtype=v.dtype).scatter(0, i, v, reduce="add"),
    lambda L, v, i: L.sparse_coo_tensor(i[None], v, (2,)).to_dense(),
], ids=["index_add_rows", "embedding_bag", "scatter_reduce_sum", "scatter_reduce_prod",
        "scatter_add_reduce", "sparse_to_dense"])
def test_accumulating_inf_and_minus_inf_is_silent_nan(fn, dtype):
    # the accumulations numpy's ufunc.at performs: inf + -inf is nan without its RuntimeWarning
    # ("invalid value encountered in add"), as PyTorch
    values, index = [math.inf, -math.inf, 1.0], [0, 0, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = fn(torch, torch.tensor(values, dtype=getattr(torch, dtype)), torch.tensor(index))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.simplefilter("error", RuntimeWarning)
        got = fn(tg, tg.tensor(values, dtype=getattr(tg, dtype)), tg.tensor(index))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("case", ["eigh", "eig", "svd"])
def test_phase_dependent_loss_error_words(case):
    # a loss that depends on the phase of complex eigen/singular vectors has no gradient;
    # PyTorch's three backwards word the refusal differently
    def call(L):
        if case == "eigh":
            H = L.tensor([[2.0, 1 - 1j], [1 + 1j, 3.0]], dtype=L.complex128, requires_grad=True)
            vectors = L.linalg.eigh(H)[1]
        elif case == "eig":
            A = L.tensor([[0.0, 1.0], [-1.0, 0.3]], dtype=L.float64, requires_grad=True)
            vectors = L.linalg.eig(A)[1]
        else:
            C = L.tensor([[1 + 2j, 0.5], [0.3j, 2 - 1j]], dtype=L.complex128, requires_grad=True)
            vectors = L.linalg.svd(C)[0]
        vectors.real.sum().backward()
    got, want = _error(tg, call), _error(torch, call)
    assert want is not None and want[0] == "RuntimeError"
    assert got == want


def test_every_hook_handle_is_a_removable_handle():
    # DEQ code keeps the handle of z.register_hook to remove it inside the hook; PyTorch's
    # handles are all torch.utils.hooks.RemovableHandle (the core's tensor-hook handle was not)
    from tapegrad.utils.hooks import RemovableHandle
    x = tg.ones(2, requires_grad=True)
    y = x * 2
    handles = [x.register_hook(lambda g: g), y.register_hook(lambda g: g),
               x.register_post_accumulate_grad_hook(lambda p: None),
               y.grad_fn.register_hook(lambda gi, go: None),
               y.grad_fn.register_prehook(lambda g: None),
               tg.nn.Linear(2, 2).register_forward_hook(lambda *a: None)]
    assert all(isinstance(h, RemovableHandle) for h in handles)
    assert issubclass(type(handles[0]), RemovableHandle)
    assert not isinstance(object(), RemovableHandle)
    for h in handles:
        h.remove()
