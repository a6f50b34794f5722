"""Regressions of missing errors the issue-16 fuzz runs found outside views and in-place writes
(docs/differences.md, "Fuzz findings"): tapegrad now raises where PyTorch raises, with its
exception type and key phrase, and still runs the neighbouring cases PyTorch runs."""
import numpy as np
import pytest

import tapegrad as tg

F = tg.nn.functional


def _outcome(fn, L):
    try:
        return "ok", tuple(fn(L).shape)
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        return type(e).__name__, str(e)


# -- F.pad(mode='replicate') that leaves a 1-d input no width --------------------------------

PADS = [((2, 1), (0, -1)), ((1, 2, 1), (-1, 0)), ((1, 2, 1), (-2, 0)), ((1, 2, 2), (-1, -1)),
        ((1, 2, 2), (0, -1)), ((1, 2, 1), (2, -1)), ((1, 1, 1, 3), (0, 0, 0, -1)),
        ((1, 1, 2, 3), (0, -3, 0, 0))]


@pytest.mark.parametrize("shape,pad", PADS)
def test_replicate_pad_output_width(shape, pad, torch):
    def fn(L):
        return L.nn.functional.pad(L.zeros(shape), pad, mode="replicate")
    assert _outcome(fn, tg) == _outcome(fn, torch)


def test_replicate_pad_to_no_width_raises():
    with pytest.raises(RuntimeError, match=r"input \(W: 1\) is too small. Calculated output W: 0"):
        F.pad(tg.zeros(1, 2, 1), (0, -1), mode="replicate")
    # the 2-d kernel returns the empty result
    assert F.pad(tg.zeros(1, 1, 2, 3), (0, -3, 0, 0), mode="replicate").shape == (1, 1, 2, 0)


# -- F.scaled_dot_product_attention with a mask that broadcasts the scores bigger --------------

MASKS = [(2, 2), (2, 1), (2, 2, 2), (2, 1, 2, 2), (1, 2), (1, 1, 2), (2,), (3, 2, 2)]


@pytest.mark.parametrize("mask_shape", MASKS)
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_sdpa_mask_that_broadcasts_the_scores(mask_shape, kind, torch):
    def fn(L):
        q, k, v = L.ones(2, 1, 1), L.ones(2, 2, 1), L.ones(2, 2, 2)
        mask = L.ones(mask_shape, dtype=L.bool) if kind == "bool" else L.zeros(mask_shape)
        return L.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    mine, theirs = _outcome(fn, tg), _outcome(fn, torch)
    assert mine[0] == theirs[0]
    if mine[0] == "ok":
        assert mine == theirs
    else:
        assert mine[1].split(" at ")[0] == theirs[1].split(" at ")[0]


def test_sdpa_mask_broadcasting_a_length_one_query_raises():
    q, k, v = tg.ones(2, 1, 1), tg.ones(2, 2, 1), tg.ones(2, 2, 2)
    with pytest.raises(RuntimeError, match=r"output with shape \[2, 1, 2\] doesn't match the "
                       r"broadcast shape \[2, 2, 2\]"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=tg.ones(2, 2, dtype=tg.bool))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=tg.tensor([True, False]))
    np.testing.assert_allclose(out.numpy(), np.ones((2, 1, 2)))


# -- an in-place write into a recurrent layer's output (surface seeds 701568, 703338, ...) ------

@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_in_place_write_into_rnn_output_keeps_the_gradient(mode):
    grads = []
    for write in (False, True):
        tg.manual_seed(0)
        layer = getattr(tg.nn, mode)(3, 4, dtype=tg.float64)
        x = tg.tensor(np.linspace(-1, 1, 2 * 5 * 3).reshape(5, 2, 3), requires_grad=True)
        out, _ = layer(x)
        if write:
            out.mul_(1.0).add_(2.0)         # PyTorch's layer saved what its backward needs
        (out * out).sum().backward() if not write else ((out - 2.0) ** 2).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


def test_in_place_write_into_rnn_output_against_torch(torch):
    res = []
    for L in (tg, torch):
        L.manual_seed(0)
        layer = L.nn.GRU(2, 3, dtype=L.float64)
        with L.no_grad():
            for p, v in zip(layer.parameters(), (0.1, -0.2, 0.3, -0.05)):
                p.copy_(L.full(tuple(p.shape), v, dtype=L.float64) * L.arange(
                    p.numel(), dtype=L.float64).reshape(tuple(p.shape)) / 7)
        x = L.tensor(np.linspace(-1, 1, 12).reshape(3, 2, 2), requires_grad=True)
        out, h = layer(x)
        out.add_(1.0)
        (out.sum() * 2 + h.sum()).backward()
        res.append(x.grad.numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-10)


# -- nn.MultiheadAttention with a query that may attend nothing (program seeds of the 700000 run) -

def _masked_attention(L, train, grad, need_weights):
    L.manual_seed(0)
    m = L.nn.MultiheadAttention(4, 2, batch_first=True, dtype=L.float64)
    with L.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(L.tensor(np.sin(np.arange(p.numel()) * 0.37 + i).reshape(tuple(p.shape))))
    m.train(train)
    x = L.tensor(np.cos(np.arange(24) * 0.3).reshape(2, 3, 4))
    mask = L.tensor([[True, True, True], [False, True, False]])       # batch 0: every key
    with (L.enable_grad() if grad else L.no_grad()):
        out, w = m(x, x, x, key_padding_mask=mask, need_weights=need_weights)
    return out.detach().numpy(), w


@pytest.mark.parametrize("train,grad,need_weights", [
    (False, False, False), (False, False, True), (True, False, False), (False, True, False),
    (True, True, True)])
def test_mha_fully_masked_row_against_torch(train, grad, need_weights, torch):
    mine, w = _masked_attention(tg, train, grad, need_weights)
    theirs, tw = _masked_attention(torch, train, grad, need_weights)
    np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)
    assert (w is None) == (tw is None)


def test_mha_fully_masked_row_nan_only_on_the_inference_fast_path():
    fast, w = _masked_attention(tg, False, False, False)
    assert w is None and np.isnan(fast[0]).all() and np.isfinite(fast[1]).all()
    # elsewhere the attention kernel gives zeros: the output is the out-projection's bias
    slow, _ = _masked_attention(tg, True, False, False)
    bias = np.sin(np.arange(4) * 0.37 + 3)
    np.testing.assert_allclose(slow[0], np.broadcast_to(bias, (3, 4)), rtol=1e-12)
    np.testing.assert_allclose(slow[1], fast[1], rtol=1e-12)


# -- second derivatives through the scatter family written in place (issue 16, task list) ------

X0 = [[0.5, -1.2, 2.0], [1.5, 0.0, -0.7], [0.9, 1.1, -0.4]]
S0 = [[1.3, 0.0, 0.8], [0.4, 2.2, 0.0]]
IDX = [[0, 2, 1], [0, 1, 1]]
W0 = [[0.3, -0.2, 0.5], [0.1, 0.7, -0.4], [0.6, -0.9, 0.2]]


def _scatter_second_derivatives(L, op, include_self=True, x0=X0):
    x = L.tensor(np.array(x0), requires_grad=True)
    s = L.tensor(np.array(S0), requires_grad=True)
    idx = L.tensor(IDX)
    y = x * 1.5
    if op.startswith("reduce_"):
        y.scatter_reduce_(0, idx, s, op[7:], include_self=include_self)
    elif op == "scatter_add_":
        y.scatter_add_(0, idx, s)
    elif op == "index_add_":
        y.index_add_(0, L.tensor([2, 0]), s, alpha=0.7)
    elif op == "index_copy_":
        y.index_copy_(0, L.tensor([2, 0]), s)
    w = L.tensor(np.array(W0))
    gx, gs = L.autograd.grad((y * y * w).sum(), [x, s], create_graph=True)
    h = L.autograd.grad((gx * w).sum() + (gs * gs).sum(), [x, s])
    return [t.detach().numpy() for t in (gx, gs) + tuple(h)]


SCATTER_OPS = [("reduce_prod", True), ("reduce_prod", False), ("reduce_sum", True),
               ("reduce_sum", False), ("reduce_mean", True), ("reduce_mean", False),
               ("reduce_amax", True), ("reduce_amin", False), ("scatter_add_", True),
               ("index_add_", True), ("index_copy_", True)]


@pytest.mark.parametrize("op,include_self", SCATTER_OPS)
def test_in_place_scatter_second_derivatives_against_torch(op, include_self, torch):
    mine = _scatter_second_derivatives(tg, op, include_self)
    theirs = _scatter_second_derivatives(torch, op, include_self)
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_second_derivative_by_finite_differences(include_self):
    # d/dx of S(x) = sum(gx(x) * w) + sum(gs(x)^2), with gx, gs the first derivatives
    def first(x0):
        x = tg.tensor(np.array(x0), requires_grad=True)
        s = tg.tensor(np.array(S0), requires_grad=True)
        y = (x * 1.5).scatter_reduce(0, tg.tensor(IDX), s, "prod", include_self=include_self)
        gx, gs = tg.autograd.grad((y * y * tg.tensor(np.array(W0))).sum(), [x, s])
        return float((gx.numpy() * np.array(W0)).sum() + (gs.numpy() ** 2).sum())
    h = _scatter_second_derivatives(tg, "reduce_prod", include_self)[2]
    x0 = np.array(X0)
    eps = 1e-6
    for i, j in np.ndindex(x0.shape):
        up, down = x0.copy(), x0.copy()
        up[i, j] += eps
        down[i, j] -= eps
        np.testing.assert_allclose(h[i, j], (first(up) - first(down)) / (2 * eps),
                                   rtol=1e-5, atol=1e-6)


def test_once_differentiable_results_raise_when_differentiated():
    from tapegrad.autograd.function import Function, once_differentiable

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    g, = tg.autograd.grad((Square.apply(x * 1) ** 2).sum(), [x], create_graph=True)
    assert g.requires_grad
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was "
                       "marked with @once_differentiable"):
        g.sum().backward()
