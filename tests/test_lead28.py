"""Session 28's own fixes, each checked against PyTorch where it is installed."""
import pytest

import tapegrad as tg


def message(fn, lib):
    """The exception's type name and message, or the result's shape."""
    try:
        return tuple(fn(lib).shape)
    except Exception as e:                      # (compared by type and message)
        return type(e).__name__, str(e)


# -- expand's error names the dim PyTorch's does --------------------------------------------------
# PyTorch checks the sizes from the last dim; tapegrad checked from the first, so with two
# mismatching dims its message named the other one.

EXPAND_CASES = {
    "two mismatches": lambda L: L.ones(2, 3).expand(4, 4),
    "leading -1 after a mismatch": lambda L: L.ones(2, 3).expand(-1, 4, 4),
    "one mismatch": lambda L: L.ones(2, 3).expand(5, 3),
    "new leading dim": lambda L: L.ones(2, 3).expand(5, 2, 3),
    "keep with -1": lambda L: L.ones(3, 1).expand(-1, 4),
}


@pytest.mark.parametrize("case", EXPAND_CASES)
def test_expand_error_names_last_mismatching_dim(case):
    got = message(EXPAND_CASES[case], tg)
    if case == "two mismatches":
        assert got[1].startswith("The expanded size of the tensor (4) must match the existing "
                                 "size (3) at non-singleton dimension 1.")
    torch = pytest.importorskip("torch")
    assert got == message(EXPAND_CASES[case], torch)


# -- a matrix product's gradient keeps a column-major operand's layout ---------------------------
# PyTorch's mm backward computes the gradient of a column-major (transposed contiguous) operand as
# a transposed product, so it comes out column-major; through the transpose's backward the
# gradient of `w` in `x @ w.t()` is row-major, and `g.view(-1)` works (flat_grad in TRPO-style
# code).  tapegrad's came back to w transposed (strides (1, 4)), and view(-1) raised.  bmm and mv
# have no such rule; einsum multiplies with bmm, as PyTorch's.

import numpy as np                                     # noqa: E402

_RNG = np.random.default_rng(28)
_X, _W, _Q, _B, _V, _X3, _BIAS, _M = (_RNG.standard_normal(s) for s in
                                      ((5, 3), (4, 3), (3, 4), (3, 2), (3,), (2, 5, 3), (4,), (4, 4)))

LAYOUT_CASES = {
    "x @ w.t()": lambda L, x, w, q: ((x @ w.t()).sum(), [w, x]),
    "q.t() @ b": lambda L, x, w, q: ((q.t() @ L.tensor(_B)).sum(), [q]),
    "w.t() @ q.t()": lambda L, x, w, q: ((w.t() @ q.t()).pow(2).sum(), [w, q]),
    "mm": lambda L, x, w, q: (L.mm(w.t(), w).sum(), [w]),
    "batch @ w.t()": lambda L, x, w, q: ((L.tensor(_X3) @ w.t()).sum(), [w]),
    "vector @ w.t()": lambda L, x, w, q: ((L.tensor(_V) @ w.t()).sum(), [w]),
    "q.t() @ vector": lambda L, x, w, q: ((q.t() @ L.tensor(_V)).sum(), [q]),
    "bmm": lambda L, x, w, q: (L.bmm(x.unsqueeze(0), w.t().unsqueeze(0)).sum(), [w]),
    "addmm": lambda L, x, w, q: (L.addmm(L.tensor(_BIAS), x, w.t()).sum(), [w, x]),
    "addmm q.t()": lambda L, x, w, q: (L.addmm(L.tensor(_M), q.t(), q).sum(), [q]),
    "linear": lambda L, x, w, q: (L.nn.functional.linear(x, w).sum(), [w, x]),
    "linear of a transposed weight": lambda L, x, w, q: (
        L.nn.functional.linear(x, q.t()).sum(), [q]),
    "linear of a transposed input": lambda L, x, w, q: (
        L.nn.functional.linear(q.t(), w).sum(), [q, w]),
    "linear of a batch": lambda L, x, w, q: (
        L.nn.functional.linear(L.tensor(_X3), w, L.tensor(_BIAS)).sum(), [w]),
    "einsum": lambda L, x, w, q: (L.einsum("ij,kj->ik", x, w).sum(), [w]),
    "einsum with a batch": lambda L, x, w, q: (L.einsum("bij,kj->bik", L.tensor(_X3), w).sum(),
                                               [w]),
    "tensordot": lambda L, x, w, q: (L.tensordot(x, w, dims=([1], [1])).sum(), [w]),
    "inner": lambda L, x, w, q: (L.inner(x, w).sum(), [w]),
}


def layout_grads(lib, case, create_graph):
    x, w, q = (lib.tensor(a, requires_grad=True) for a in (_X, _W, _Q))
    loss, wrt = LAYOUT_CASES[case](lib, x, w, q)
    grads = lib.autograd.grad(loss, wrt, create_graph=create_graph)
    return [(tuple(g.shape), g.stride(), np.round(g.detach().numpy(), 12).tolist()) for g in grads]


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("case", LAYOUT_CASES)
def test_matrix_product_gradient_layout(case, create_graph):
    got = layout_grads(tg, case, create_graph)
    if case == "x @ w.t()":
        assert got[0][1] == (3, 1)                     # w's gradient row-major, as w
    torch = pytest.importorskip("torch")
    assert got == layout_grads(torch, case, create_graph)


def test_flat_gradient_of_a_hand_written_layer():
    # TRPO's flat_grad: torch.cat([g.view(-1) for g in grads]) over a layer written as x @ w.t()
    w = tg.tensor(_W, requires_grad=True)
    x = tg.tensor(_X)
    grads = tg.autograd.grad((x @ w.t()).tanh().sum(), [w])
    flat = tg.cat([g.view(-1) for g in grads])
    assert flat.shape == (12,)
    np.testing.assert_allclose(flat.numpy(), ((1 - np.tanh(_X @ _W.T) ** 2).T @ _X).ravel(),
                               rtol=1e-12)


# -- a module with a full backward hook does not keep its calls' graphs alive --------------------
# The output identity's backward closure held the list of its own outputs, whose node holds the
# closure: a cycle through the tape, which the garbage collector cannot see, so every hooked
# call's graph (and its kernel workspace) stayed alive for good (Grad-CAM, gradient logging).

def test_full_backward_hook_releases_each_calls_graph():
    import gc
    import weakref
    from tapegrad import _core
    conv = tg.nn.Conv2d(1, 2, 3)
    handle = conv.register_full_backward_hook(lambda module, grad_in, grad_out: None)
    gc.collect()
    before = _core._nn_workspace_bytes()[1]
    x = tg.ones(1, 1, 4, 4, requires_grad=True)
    y = conv(x)
    alive = weakref.ref(y)
    y.sum().backward()
    del y
    tg.relu(conv(tg.ones(1, 1, 4, 4)))      # a call nothing backpropagates through
    gc.collect()
    assert alive() is None
    assert _core._nn_workspace_bytes()[1] == before
    handle.remove()
