"""Regressions from the triage of the session-7 differential fuzz run (tools/fuzz.py, seeds
36000000+; the verdicts are in docs or the triage table): each test fails before its fix."""
import numpy as np
import pytest
import torch

import tapegrad as tg


def _matmul_then_write(lib, a_shape, b_shape, b_transposed, a_first):
    """a @ b (or b @ a), then an in-place write to the operand that does not require grad,
    then backward: the gradient, or the exception type."""
    rng = np.random.default_rng(7)
    A = rng.standard_normal(a_shape)
    B = rng.standard_normal(b_shape)
    a = lib.tensor(A, dtype=lib.float64, requires_grad=True)
    b = lib.tensor(B, dtype=lib.float64)
    if b_transposed:
        b = b.transpose(-1, -2)
    out = a @ b if a_first else b @ a
    W = lib.tensor(rng.standard_normal(tuple(out.shape)), dtype=lib.float64)
    b.mul_(3.0)                     # written after the forward, before the backward
    try:
        (out * W).sum().backward()
    except RuntimeError as e:
        return "RuntimeError", str(e)[:60]
    return "ok", a.grad.numpy()


@pytest.mark.parametrize("a_shape,b_shape,b_transposed,a_first", [
    ((1,), (2, 1, 3), False, True),       # seed 36007638's first product: vector @ batch
    ((2, 3), (4, 3, 2), False, True),     # matrix @ batch: folded transposed, copied
    ((2, 3), (4, 2, 3), True, True),      # ... the batch already transposed: a view, refused
    ((2, 3), (1, 3, 1), False, True),     # ... a size-1 last dim: a view, refused
    ((3,), (4, 3, 2), False, True),       # vector @ batch, copied
    ((2,), (5, 4, 2, 3), True, False),    # batch (strided) @ vector, folded with a copy
    ((2, 3), (5, 4, 2, 3), True, False),  # batch (strided) @ matrix, folded with a copy
    ((3, 2), (5, 4, 3), False, False),    # batch @ matrix, contiguous: a view, refused
])
def test_matmul_fold_saves_copy_like_torch(a_shape, b_shape, b_transposed, a_first):
    # fuzz seed 36007638: PyTorch folds the batch operand of matrix @ batch with a reshape that
    # copies, and saves the copy: an in-place write to it after the forward is no error, and the
    # gradient uses the forward's values.  tapegrad refused it ("modified by an inplace op").
    want = _matmul_then_write(torch, a_shape, b_shape, b_transposed, a_first)
    got = _matmul_then_write(tg, a_shape, b_shape, b_transposed, a_first)
    assert got[0] == want[0], (got, want)
    if want[0] == "ok":
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-12)


def test_matmul_fold_copy_gradient_is_the_forwards_finite_difference():
    # the gradient after the write is that of the function the forward computed (float64 FD)
    rng = np.random.default_rng(3)
    A = rng.standard_normal((2, 3))
    B = rng.standard_normal((4, 3, 2))
    W = rng.standard_normal((4, 2, 2))
    a = tg.tensor(A, requires_grad=True)
    b = tg.tensor(B)
    out = a @ b
    b.sigmoid_()
    (out * tg.tensor(W)).sum().backward()
    f = lambda X: float((np.matmul(X, B) * W).sum())
    fd = np.zeros_like(A)
    for i in np.ndindex(A.shape):
        e = np.zeros_like(A)
        e[i] = 1e-6
        fd[i] = (f(A + e) - f(A - e)) / 2e-6
    np.testing.assert_allclose(a.grad.numpy(), fd, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("a_shape,b_shape,which", [
    ((2, 3, 4), (1, 4, 5), "a"),          # broadcast batch, b's reshape is a view: refused
    ((2, 3, 4), (3, 1, 4, 5), "a"),       # b expanded to the batch and flattened: a copy
    ((1, 3, 4), (2, 4, 5), "a"),          # a's size-1 batch squeezed, b folded transposed: copy
    ((2, 3, 4), (2, 4, 5), "a"),          # plain bmm: refused
    ((2, 1, 3, 4), (2, 4, 5), "a"),       # b expanded: a copy
    ((4,), (3, 2, 4, 5), "a"),            # vector @ batch, folded transposed: a copy
    ((2, 3, 4), (4,), "a"),               # batch @ vector: refused
    ((3, 1, 3, 4), (2, 4, 5), "b"),       # a expanded: a copy
    ((2, 3, 4), (1, 4, 5), "b"),          # b's size-1 batch squeezed, a folded: a view, refused
    ((1, 3, 4), (2, 4, 5), "b"),          # a expanded by a stride-0 batch, a view: refused
    ((3, 4), (2, 4, 5), "both"),          # both require grad: both saved as views: refused
])
def test_matmul_batched_saves_like_torch(a_shape, b_shape, which):
    # siblings of seed 36007638: the broadcast-batch route (expand + reshape to 3-D) copies an
    # operand whose batch is really expanded; PyTorch then computes the gradient after an
    # in-place write to it (tapegrad refused), and refuses it when the reshape is a view
    def run(lib):
        rng = np.random.default_rng(0)
        a = lib.tensor(rng.standard_normal(a_shape), requires_grad=which in ("a", "both"))
        b = lib.tensor(rng.standard_normal(b_shape), requires_grad=which in ("b", "both"))
        out = a @ b
        W = lib.tensor(rng.standard_normal(tuple(out.shape)))
        with lib.no_grad():
            (b if which == "a" else a).mul_(2.0)
        try:
            (out * W).sum().backward()
        except RuntimeError:
            return "RuntimeError", None
        return "ok", (a if which in ("a", "both") else b).grad.numpy()
    want, got = run(torch), run(tg)
    assert got[0] == want[0], (got[0], want[0])
    if want[0] == "ok":
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("how", ["chunk", "split", "unbind", "no_grad_view", "no_grad_write"])
def test_special_view_requires_grad_follows_base(how):
    # fuzz seeds 36001023, 36004124, 36006373: a no_grad view or an output of chunk / split /
    # unbind, whose base then gets a history from an in-place write of a tensor requiring grad,
    # reports requires_grad=True in PyTorch (a view reports its base's); tapegrad said False
    def run(lib):
        w = lib.tensor([2.0, 5.0], requires_grad=True)
        a = lib.zeros(4)
        if how == "chunk":
            v = a.chunk(2)[0]
        elif how == "split":
            v = a.split(2)[0]
        elif how == "unbind":
            v = a.unbind(0)[1]
        else:
            with lib.no_grad():
                v = a[0:2]
        if how == "no_grad_write":
            with lib.no_grad():
                a[0:2] = w
        else:
            a[0:2] = w
        return v.requires_grad
    assert run(tg) == run(torch)
