"""Regressions of the issue-16 fuzz findings left open by session 10 (seeds of the 54 million
run), fixed in session 11.

Each test asserts the right values without torch where it can and, where torch is installed,
runs the same program in torch and compares.
"""
import numpy as np
import pytest

import tapegrad as tg


def _both(program):
    """program(lib) in tapegrad and, if installed, in torch."""
    mine = program(tg)
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is optional
        return mine, None
    return mine, program(torch)


# -- an in-place op on a view: its output is the view (seeds 54001360, 54105721) ---------------
# view.exp_() is computed out of place and written back into the view.  PyTorch's ExpBackward
# saves the view itself as its result, so a create_graph backward's gradient reads the view, and
# the second derivative flows through the view's history (its base's CopySlices): the retained
# .grad of the view and of its base receive the second pass too.  tapegrad's graph VJP read the
# dead out-of-place result instead, so the retained .grad missed (or miscounted) the second
# pass while the leaves' gradients agreed.

def _einsum_view_exp_(L):
    # 54001360: einsum's result is a view; exp_ on it, retained, then a double backward
    v0 = L.tensor([[1.1901183128356934]], dtype=L.float64, requires_grad=True)
    v5 = L.tensor([[0.9468196034431458]], dtype=L.float64, requires_grad=True)
    v6 = L.einsum("ij,jk->ik", v0, v5)
    v7 = v6.exp_()
    v7.retain_grad()
    G = L.autograd.grad((v6 * 2.0).sum(), [v0, v5], create_graph=True)
    after_first = v7.grad.clone()
    S = (G[0] * 3.0).sum() + (G[1] * -1.5).sum()
    G2 = L.autograd.grad(S, [v0, v5])
    return [after_first.numpy(), v7.grad.numpy(), G2[0].numpy(), G2[1].numpy()]


def _slice_exp_retained_base(L):
    # 54105721: exp_ into a strided slice of a retained base, then a double backward
    w = L.tensor([0.25], dtype=L.float64, requires_grad=True)
    v8 = L.tensor([[-0.5], [0.5], [1.0]], dtype=L.float64) + w
    v8.retain_grad()
    v10 = v8[::2].exp_()
    G = L.autograd.grad((v10 * L.tensor([[0.7], [-1.3]], dtype=L.float64)).sum(), [w],
                        create_graph=True)
    S = (G[0] * 2.0).sum()
    G2 = L.autograd.grad(S, [w])
    return [v8.grad.numpy(), G[0].detach().numpy(), G2[0].numpy()]


@pytest.mark.parametrize("program", [_einsum_view_exp_, _slice_exp_retained_base])
def test_in_place_op_on_a_view_is_read_as_the_view_by_a_second_derivative(program):
    mine, theirs = _both(program)
    if theirs is None:
        pytest.skip("torch not installed")
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_second_pass_reaches_the_retained_view_without_torch():
    after_first, retained, g2a, g2b = _einsum_view_exp_(tg)
    a, b = 1.1901183128356934, 0.9468196034431458
    e = np.exp(a * b)
    # G = (2 e b, 2 e a); S = 3 G0 - 1.5 G1: dS/dv7 (v7 = e) = 3 * 2 b - 1.5 * 2 a
    np.testing.assert_allclose(after_first, [[2.0]])
    np.testing.assert_allclose(retained, [[2.0 + 6.0 * b - 3.0 * a]], rtol=1e-12)
    # d/da (6 e b - 3 e a) = 6 e b^2 - 3 e a b - 3 e
    np.testing.assert_allclose(g2a, [[6 * e * b * b - 3 * e * a * b - 3 * e]], rtol=1e-12)
    np.testing.assert_allclose(g2b, [[6 * e * a * b + 6 * e - 3 * e * a * a]], rtol=1e-12)


def _write_into_view_after_exp_(L):
    x = L.tensor([0.5, -1.0, 2.0, 0.25], dtype=L.float64, requires_grad=True)
    b = x * 1.0
    v = b[::2]
    v.exp_()
    v.mul_(2.0)             # overwrites exp_'s saved result (the view) in place
    try:
        b.sum().backward()
    except RuntimeError as e:
        return str(e)
    return None


def test_write_into_a_view_after_its_in_place_op_is_refused_at_backward():
    mine, theirs = _both(_write_into_view_after_exp_)
    assert mine is not None and "modified by an inplace operation" in mine
    if theirs is not None:
        assert "modified by an inplace operation" in theirs


# -- retain_grad on a stale view without history (seed 54106587) --------------------------------
# A view taken while its base did not require grad, whose base has a history since (copy_ of a
# tensor that requires grad), is a leaf to PyTorch's retain_grad until its history is read:
# PyTorch tests the raw grad_fn (empty) before regenerating it, so retain_grad does nothing and
# .grad stays None.  Once the history was read (grad_fn), retain_grad works.

def _retain_on_stale_view(L, read_history_first, view_of_view):
    with L.no_grad():
        base = L.ones(()) * 2
    view = base.squeeze()
    if view_of_view:
        view = view.squeeze()
    src = L.tensor(-1.25, requires_grad=True)
    base.copy_(src)
    if read_history_first:
        view.grad_fn
    view.retain_grad()
    retains = view.retains_grad
    (view * 2).sum().backward()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grad = view.grad
    return retains, None if grad is None else float(grad), float(src.grad)


@pytest.mark.parametrize("read_history_first", [False, True])
@pytest.mark.parametrize("view_of_view", [False, True])
def test_retain_grad_on_a_stale_view_without_history(read_history_first, view_of_view):
    mine, theirs = _both(lambda L: _retain_on_stale_view(L, read_history_first, view_of_view))
    expected = (True, 2.0, 2.0) if read_history_first else (False, None, 2.0)
    assert mine == expected
    if theirs is not None:
        assert mine == theirs


# 58107723 (held-out run on the merged main): under saved-tensor hooks a compiled call re-runs its
# ops on tensors (SK_CALL steps), and the eager sweep's offer of the call's output gradient for
# in-place reuse leaked into their VJPs: add(x, y, alpha=a) handed the gradient to x's slot, then
# the scaling VJP of y's branch wrote a * g into the same array, so x.grad was a instead of 1
# from the second call on.  The replay's backward withdraws the offer.
_HOOKED_BODIES = {
    "add alpha": lambda x, y: tg.add(x, y, alpha=-0.5),
    "add same alpha": lambda x, y: tg.add(x, x, alpha=-0.5) * y,
    "sub alpha": lambda x, y: tg.sub(x, y, alpha=3),
    "mixed": lambda x, y: (x + 2 * y).tanh() * x - y,
}


@pytest.mark.parametrize("hooks", ["identity", "save_on_cpu"])
@pytest.mark.parametrize("name", list(_HOOKED_BODIES))
def test_compiled_call_under_saved_tensor_hooks_keeps_its_gradients(name, hooks):
    body = _HOOKED_BODIES[name]

    def hooked(x, y):
        ctx = (tg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)
               if hooks == "identity" else tg.autograd.graph.save_on_cpu(pin_memory=False))
        with ctx:
            return body(x, y)

    compiled = tg.compile(hooked)
    for k in range(4):
        grads = []
        for fn in (hooked, compiled):
            x = tg.tensor([0.3 + k, -1.1], requires_grad=True)
            y = tg.tensor([1.5, 0.25 * k], requires_grad=True)
            fn(x, y).sum().backward()
            grads.append((x.grad.numpy().copy(), y.grad.numpy().copy()))
        for eager, replayed in zip(*grads):
            np.testing.assert_array_equal(replayed, eager)
