"""Held-out fuzz run on session 12's merged main (seeds 58500000 on): create_graph under saved-
tensor hooks read the live tensor, not the value the hook unpacked.

58500409, 58506165: an op saved a value under hooks that copy it (pack: numpy copy, or clone),
then the saved tensor was written in place under no_grad.  The first backward read the unpacked
copy (right), but a create_graph backward built its graph on the live tensor, now overwritten:
silently wrong first and second derivatives.  PyTorch's saved variable is the unpacked value on
the node's edge.  The sweep below writes the saved input (or output) of many ops after the
forward and compares first and second derivatives with PyTorch's.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


def _copying_hooks(lib):
    return lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach().numpy().copy(),
                                                  lambda a: lib.from_numpy(a))


def _cloning_hooks(lib):
    return lib.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t)


# name -> f(lib, h, w): h is the intermediate that is saved and later written, w a second leaf
OPS = {
    "atan2": lambda lib, h, w: lib.atan2(h, w),
    "mul": lambda lib, h, w: h * w,
    "div": lambda lib, h, w: w / h,
    "pow": lambda lib, h, w: lib.pow(h, 2) * w,
    "exp": lambda lib, h, w: h.exp() * w,
    "tanh": lambda lib, h, w: h.tanh() * w,
    "sigmoid": lambda lib, h, w: h.sigmoid() * w,
    "sin": lambda lib, h, w: h.sin() * w,
    "sqrt": lambda lib, h, w: (h * h + 1).sqrt() * w,
    "matmul": lambda lib, h, w: h @ w,
    "linear": lambda lib, h, w: lib.nn.functional.linear(h, w),
    "softmax": lambda lib, h, w: lib.softmax(h * w, -1),
    "log_softmax": lambda lib, h, w: lib.log_softmax(h, -1) * w,
    "layer_norm": lambda lib, h, w: lib.nn.functional.layer_norm(h, (3,)) * w,
    "mse_loss": lambda lib, h, w: lib.nn.functional.mse_loss(h, w),
    "cumprod": lambda lib, h, w: h.cumprod(-1) * w,
    "prod": lambda lib, h, w: h.prod(-1, keepdim=True) * w,
    "norm": lambda lib, h, w: h.norm() * w,
    "max": lambda lib, h, w: h.max(-1, keepdim=True).values * w,
    "where": lambda lib, h, w: lib.where(h > 0, h * h, w),
    "clamp": lambda lib, h, w: lib.clamp(h * w, -0.5, 0.5) * h,
    "logsumexp": lambda lib, h, w: lib.logsumexp(h * w, -1),
}
WRITES = {
    "zero_": lambda t: t.zero_(),
    "mul_": lambda t: t.mul_(3.0),
    "setitem": lambda t: t.__setitem__((0, 0), 7.0),
}


def _run(lib, name, write, hooks, in_place_output=False):
    rng = np.random.default_rng(5)
    x = lib.tensor(rng.uniform(0.3, 1.5, (3, 3)), requires_grad=True)
    w = lib.tensor(rng.uniform(0.3, 1.5, (3, 3)), requires_grad=True)
    weights = lib.tensor(rng.standard_normal((3, 3)))
    h = x * 1.5 + 0.25                                  # an intermediate, saved by the op below
    with hooks(lib):
        if in_place_output:
            h = h.sigmoid_()                            # saves its own output, then written
            out = h * w
        else:
            out = OPS[name](lib, h, w)
    with lib.no_grad():
        WRITES[write](h)
    if out.ndim == 0:
        loss = out * 1.7
    elif out.ndim == 2:
        loss = (out * weights[: out.shape[0], : out.shape[-1]]).sum()
    else:
        loss = (out * weights[0, : out.shape[-1]]).sum()
    g = lib.autograd.grad(loss, [x, w], create_graph=True)
    s = sum((gi * (k + 1.5)).sum() for k, gi in enumerate(g) if gi.requires_grad)
    g2 = lib.autograd.grad(s, [x, w], allow_unused=True)
    return [t.detach().numpy() for t in g], [None if t is None else t.numpy() for t in g2]


def _compare(ours, theirs):
    (g, g2), (tg_, tg2) = ours, theirs
    for a, b in zip(g, tg_):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)
    for a, b in zip(g2, tg2):
        if a is None or b is None:
            assert (a is None or not a.any()) and (b is None or not b.any())
        else:
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("write", sorted(WRITES))
@pytest.mark.parametrize("name", sorted(OPS))
def test_create_graph_reads_the_unpacked_value_not_the_written_tensor(torch, name, write):
    _compare(_run(tg, name, write, _copying_hooks), _run(torch, name, write, _copying_hooks))


@pytest.mark.parametrize("write", sorted(WRITES))
def test_saved_output_written_after_an_in_place_op(torch, write):
    """58506165: sigmoid_ saves its output under cloning hooks, then a no_grad write."""
    _compare(_run(tg, None, write, _cloning_hooks, in_place_output=True),
             _run(torch, None, write, _cloning_hooks, in_place_output=True))


def test_fuzz_58500409_minimal():
    """The shrunk program, checked against finite differences of the first derivative taken
    before the write (no torch needed)."""
    v0 = tg.tensor([-0.4526462144528374, -0.842808789706713, 0.7637408887345564],
                   dtype=tg.float64, requires_grad=True)
    v1 = tg.tensor([[-1.083669157951958, 0.15992866892477556],
                    [0.2372636954671289, 0.792100621981769]], dtype=tg.float64,
                   requires_grad=True)
    v2 = tg.tensor([[0.7690077845754117, -0.009068292519595162, -1.3318630577289892]],
                   dtype=tg.float64)
    with _copying_hooks(tg):
        v3 = tg.nn.functional.linear(v0, v2)
        v4 = tg.atan2(v3, v1)
    expected = tg.autograd.grad(tg.atan2(v3.detach(), v1).sum(), [v1])[0]
    with tg.no_grad():
        v3.zero_()
    g = tg.autograd.grad(v4.sum(), [v0, v1], create_graph=True)
    np.testing.assert_allclose(g[1].detach().numpy(), expected.numpy(), rtol=1e-12)


# 58900539, 58903121: the same for Functions (custom ones, and the library's kernel Functions:
# cumprod, convolutions, pooling, ...): ctx.saved_tensors gave a hook's copy without its place
# in the graph, so a create_graph backward through the saved values had no graph (second
# derivatives silently missed those terms, or a second grad() raised).
def _custom_cube(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * x * x
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * 3 * y / x
    return Cube


FUNCTION_OPS = {
    "custom Function (input and output saved)": lambda lib, h: _custom_cube(lib).apply(h),
    "cumprod": lambda lib, h: h.cumprod(0),
    "conv1d": lambda lib, h: lib.nn.functional.conv1d(
        h.reshape(1, 3, 3), lib.ones(2, 3, 2, dtype=lib.float64) * 0.3).tanh(),
    "avg_pool1d": lambda lib, h: lib.nn.functional.avg_pool1d(h.reshape(1, 3, 3) ** 2, 2),
}
HOOKS = {
    "numpy copy": _copying_hooks,
    "clone": _cloning_hooks,
    "tuple": lambda lib: lib.autograd.graph.saved_tensors_hooks(
        lambda t: (t.dtype, t.shape, t.tolist()),
        lambda p: lib.tensor(p[2], dtype=p[0]).reshape(p[1])),
}


@pytest.mark.parametrize("hooks", sorted(HOOKS))
@pytest.mark.parametrize("name", sorted(FUNCTION_OPS))
def test_function_saved_values_under_hooks_keep_their_graph(torch, name, hooks):
    results = []
    for lib in (tg, torch):
        rng = np.random.default_rng(11)
        x = lib.tensor(rng.uniform(0.3, 1.5, (3, 3)), requires_grad=True)
        h = x * 1.5 + 0.25
        with HOOKS[hooks](lib):
            out = FUNCTION_OPS[name](lib, h)
        weights = lib.tensor(rng.standard_normal(tuple(out.shape)))
        g = lib.autograd.grad((out * weights).sum(), [x], create_graph=True)[0]
        assert g.requires_grad
        g2 = lib.autograd.grad((g * g).sum(), [x])[0]
        results.append((g.detach().numpy(), g2.numpy()))
    (g, g2), (tg_, tg2) = results
    np.testing.assert_allclose(g, tg_, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(g2, tg2, rtol=1e-9, atol=1e-11)
