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
