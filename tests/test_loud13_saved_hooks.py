"""Session 13 (loud): values an op keeps outside the saved-tensor pack hooks.

Under hooks that copy (a numpy copy here), an in-place write to a saved tensor after the forward
(under no_grad) does not reach PyTorch's gradient: its backward reads the unpacked copies and
checks no version.  Two bypasses of the hooks in tapegrad:
- the kernel Functions' backward read their kernel state, which held the live argument arrays:
  convolutions and scaled_dot_product_attention gave silently wrong first derivatives;
- version guards kept for values PyTorch saves but tapegrad's record does not read (mse_loss,
  gather, the poolings, group_norm, cumprod) raised "modified by an inplace operation".
Each case is compared with PyTorch; the first six fail without the fix.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


def _copying_hooks(lib):
    return lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach().numpy().copy(),
                                                  lambda a: lib.from_numpy(a))


def _rnn(lib, F, h, w):
    m = lib.nn.RNN(6, 4, batch_first=True).double()
    with lib.no_grad():
        for k, p in enumerate(m.parameters()):
            p.copy_(lib.tensor(np.random.default_rng(k).uniform(-0.5, 0.5, tuple(p.shape))))
    return m(h.reshape(6, 6, 6) * w[0, 0, 0, 0])[0]


# name -> f(lib, F, h, w): h (2, 3, 6, 6) is saved by the op and written after the forward
OPS = {
    "conv2d": lambda lib, F, h, w: F.conv2d(h, w),
    "conv_transpose2d": lambda lib, F, h, w: F.conv_transpose2d(h, w.transpose(0, 1)),
    "attention": lambda lib, F, h, w: F.scaled_dot_product_attention(
        h.reshape(2, 3, 36), h.reshape(2, 3, 36) * w[0, 0, 0, 0], h.reshape(2, 3, 36)),
    "attention_causal": lambda lib, F, h, w: F.scaled_dot_product_attention(
        h.reshape(2, 6, 18) * w[0, 0, 0, 0], h.reshape(2, 6, 18), h.reshape(2, 6, 18),
        is_causal=True),
    "cumprod": lambda lib, F, h, w: h.cumprod(-1) * w[0, 0, 0, 0],
    "mse_loss": lambda lib, F, h, w: F.mse_loss(h, w[:2, :, :, :].repeat(1, 1, 2, 2)),
    "smooth_l1_loss": lambda lib, F, h, w: F.smooth_l1_loss(h, w[:2].repeat(1, 1, 2, 2)),
    "huber_loss": lambda lib, F, h, w: F.huber_loss(h, w[:2].repeat(1, 1, 2, 2), delta=0.5),
    "gather": lambda lib, F, h, w: lib.gather(h, 3, lib.zeros(2, 3, 6, 2, dtype=lib.int64))
    * w[0, 0, 0, 0],
    "avg_pool2d": lambda lib, F, h, w: F.avg_pool2d(h, 2) * w[0, 0, 0, 0],
    "max_pool2d": lambda lib, F, h, w: F.max_pool2d(h * w[0, 0, 0, 0], 2),
    "adaptive_max_pool2d": lambda lib, F, h, w: F.adaptive_max_pool2d(h, 3) * w[0, 0, 0, 0],
    "group_norm": lambda lib, F, h, w: F.group_norm(h, 3) * w[0, 0, 0, 0],
    "hardtanh": lambda lib, F, h, w: F.hardtanh(h - 1) * w[0, 0, 0, 0],
    "rnn": _rnn,
}


def _run(lib, name, write, order):
    rng = np.random.default_rng(5)
    x = lib.tensor(rng.uniform(0.3, 1.5, (2, 3, 6, 6)), requires_grad=True)
    w = lib.tensor(rng.uniform(0.3, 1.5, (4, 3, 3, 3)), requires_grad=True)
    h = x * 1.5 + 0.25
    with _copying_hooks(lib):
        out = OPS[name](lib, lib.nn.functional, h, w)
    with lib.no_grad():
        h.zero_() if write == "zero_" else h.mul_(3.0)
    weights = lib.tensor(rng.standard_normal(tuple(out.shape)))
    g = lib.autograd.grad((out * weights).sum() * (out * out).sum() ** (order - 1), [x, w],
                          allow_unused=True)
    return [None if t is None else t.numpy() for t in g]


@pytest.mark.parametrize("write", ["zero_", "mul_"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_write_after_forward_under_copying_hooks(torch, name, write):
    for order in (1, 2):
        ours, theirs = _run(tg, name, write, order), _run(torch, name, write, order)
        for a, b in zip(ours, theirs):
            if a is None or b is None:
                assert (a is None or not a.any()) and (b is None or not b.any())
            else:
                np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


def test_without_hooks_the_guards_still_refuse():
    """Outside hooks the guards stand, as PyTorch's saved variables: a write raises."""
    x = tg.randn(4, requires_grad=True, dtype=tg.float64)
    h = x * 2
    loss = tg.nn.functional.mse_loss(h, tg.zeros(4, dtype=tg.float64))
    c = h.cumprod(0).sum()
    with tg.no_grad():
        h.mul_(2)
    for out in (loss, c):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.backward()


# -- what an operand of a product saves (fuzz 59000494) ------------------------------------------
# outer (and ger) saved both operands whatever required grad; PyTorch's outer is
# a.unsqueeze(1) * b, whose MulBackward0 saves each operand only for the other's gradient, so a
# write into the operand whose partner needs no gradient computes there (also when the partner
# is empty, the fuzz seed).

def _product(lib, op, n, partner_grad, swap, create_graph):
    a = lib.tensor([0.5, -0.3], dtype=lib.float64, requires_grad=True)
    h = a * 1.5
    p = lib.linspace(0.5, 2.0, n, dtype=lib.float64).requires_grad_(partner_grad)
    args = (p, h) if swap else (h, p)
    y = lib.outer(*args) if op == "outer" else lib.ger(*args)
    with lib.no_grad():
        h.mul_(2.0)
    leaves = [a, p] if partner_grad else [a]
    try:
        g = lib.autograd.grad((y * y.detach().cos()).sum(), leaves, create_graph=create_graph)
    except RuntimeError as e:
        return "modified by an inplace operation" in str(e)
    if not create_graph:
        return [t.detach().numpy() for t in g]
    s = sum((t * (k + 1)).sum() for k, t in enumerate(g) if t.requires_grad)
    if not isinstance(s, lib.Tensor) or not s.requires_grad:
        return [t.detach().numpy() for t in g]
    g2 = lib.autograd.grad(s, leaves, allow_unused=True)
    return [t.detach().numpy() for t in g] + [None if t is None else t.numpy() for t in g2]


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("n", [0, 3])
@pytest.mark.parametrize("partner_grad", [False, True])
@pytest.mark.parametrize("op", ["outer", "ger"])
def test_outer_saves_each_operand_for_the_others_gradient(torch, op, n, partner_grad, swap,
                                                           create_graph):
    ours = _product(tg, op, n, partner_grad, swap, create_graph)
    theirs = _product(torch, op, n, partner_grad, swap, create_graph)
    if isinstance(theirs, bool):
        assert ours is theirs
        return
    assert not isinstance(ours, bool), "tapegrad raised where PyTorch computes"
    for x, y in zip(ours, theirs):
        if x is None or y is None:
            assert (x is None or not x.any()) and (y is None or not y.any())
        else:
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)
