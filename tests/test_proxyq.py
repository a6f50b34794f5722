"""Held-out proxy scripts (proxyq): grad_fn names of ops tapegrad builds from other ops.

A script that prints a result (`tensor([...], grad_fn=<HardtanhBackward0>)`) or reads
grad_fn.name() sees PyTorch's node for the whole op, not the last op of tapegrad's composite
(WhereBackward0, IndexSelectBackward0, MulBackward0).  Gradients are unchanged.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

# (label, op applied to a float64 (2, 4) tensor that requires grad)
CASES = [
    ("hardtanh", lambda m, x: m.nn.functional.hardtanh(x)),
    ("relu6", lambda m, x: m.nn.functional.relu6(x)),
    ("nn.ReLU6", lambda m, x: m.nn.ReLU6()(x)),
    ("selu", lambda m, x: m.nn.functional.selu(x)),
    ("mish", lambda m, x: m.nn.functional.mish(x)),
    ("hardswish", lambda m, x: m.nn.functional.hardswish(x)),
    ("hardsigmoid", lambda m, x: m.nn.functional.hardsigmoid(x)),
    ("logsigmoid", lambda m, x: m.nn.functional.logsigmoid(x)),
    ("glu", lambda m, x: m.nn.functional.glu(x)),
    ("celu", lambda m, x: m.nn.functional.celu(x, 0.5)),
    ("ReLU6_inplace", lambda m, x: m.nn.ReLU6(inplace=True)(x * 1.0)),
    ("Hardtanh_inplace", lambda m, x: m.nn.Hardtanh(inplace=True)(x * 1.0)),
    ("Hardsigmoid_inplace", lambda m, x: m.nn.Hardsigmoid(inplace=True)(x * 1.0)),
    ("SELU_inplace", lambda m, x: m.nn.SELU(inplace=True)(x * 1.0)),
    ("CELU_inplace", lambda m, x: m.nn.CELU(inplace=True)(x * 1.0)),
    ("LeakyReLU_inplace", lambda m, x: m.nn.LeakyReLU(0.2, inplace=True)(x * 1.0)),
    ("ELU_inplace", lambda m, x: m.nn.functional.elu(x * 1.0, inplace=True)),
    ("ReLU_inplace", lambda m, x: m.nn.ReLU(inplace=True)(x * 1.0)),
    ("SiLU_inplace", lambda m, x: m.nn.SiLU(inplace=True)(x * 1.0)),
    ("flip", lambda m, x: m.flip(x, [1])),
    ("fliplr", lambda m, x: m.fliplr(x)),
    ("roll", lambda m, x: m.roll(x, 1, 1)),
    ("roll_flat", lambda m, x: m.roll(x, 2)),
    ("sort", lambda m, x: m.sort(x, dim=1)[0]),
    ("topk", lambda m, x: m.topk(x, 2)[0]),
    ("trace", lambda m, x: m.trace(x)),
    ("nan_to_num", lambda m, x: m.nan_to_num(x)),
    ("threshold", lambda m, x: m.nn.functional.threshold(x, 0.3, -1.0)),
    ("Threshold_inplace", lambda m, x: m.nn.Threshold(0.3, -1.0, inplace=True)(x * 1.0)),
    ("hardshrink", lambda m, x: m.nn.functional.hardshrink(x)),
    ("softshrink", lambda m, x: m.nn.functional.softshrink(x, 0.6)),
    ("rad2deg", lambda m, x: m.rad2deg(x)),
    ("deg2rad", lambda m, x: x.deg2rad()),
    ("sinc", lambda m, x: m.sinc(x)),
    ("lerp_scalar", lambda m, x: m.lerp(x, x * 3.0, 0.25)),
    ("lerp_tensor", lambda m, x: m.lerp(x, x * 3.0, m.full_like(x, 0.75))),
    ("addcmul", lambda m, x: m.addcmul(x, x, x * 2.0, value=0.5)),
    ("addcdiv", lambda m, x: m.addcdiv(x, x, x * x + 1.0, value=2)),
    ("addmm", lambda m, x: m.addmm(x[0, :2], x[:, :3], x[:, 1:].T, beta=0.5)),
    ("addmv", lambda m, x: m.addmv(x[:, 0], x, x[0])),
    ("baddbmm", lambda m, x: m.baddbmm(x[None, :, :2], x[None], x[None, :, :2].repeat(1, 2, 1))),
]

DATA = np.array([[-4.0, -0.5, 0.25, 3.5], [7.0, -2.5, 1.5, -0.75]])


@pytest.mark.parametrize("label,op", CASES, ids=[c[0] for c in CASES])
def test_composite_grad_fn_name_and_gradient_match_pytorch(label, op):
    torch = pytest.importorskip("torch")
    xt = torch.tensor(DATA, requires_grad=True)
    xg = tg.tensor(DATA, requires_grad=True)
    yt, yg = op(torch, xt), op(tg, xg)
    assert yg.grad_fn.name() == yt.grad_fn.name()
    assert type(yg.grad_fn).__name__ == type(yt.grad_fn).__name__
    assert f"grad_fn=<{yt.grad_fn.name()}>" in repr(yg)
    np.testing.assert_allclose(yg.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    weights = np.linspace(0.5, 2.0, yt.numel()).reshape(tuple(yt.shape))
    (yt * torch.tensor(weights)).sum().backward()
    (yg * tg.tensor(weights)).sum().backward()
    # (rtol: PyTorch's float64 hardsigmoid backward multiplies by 1/6 rounded to float32)
    np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), rtol=1e-7, atol=1e-12)


def test_renamed_node_keeps_its_inputs_and_second_derivative():
    torch = pytest.importorskip("torch")
    xt = torch.tensor(DATA, requires_grad=True)
    xg = tg.tensor(DATA, requires_grad=True)
    (gt,) = torch.autograd.grad(torch.nn.functional.mish(xt).sum(), xt, create_graph=True)
    (gg,) = tg.autograd.grad(tg.nn.functional.mish(xg).sum(), xg, create_graph=True)
    np.testing.assert_allclose(gg.detach().numpy(), gt.detach().numpy(), rtol=1e-12)
    (ht,) = torch.autograd.grad(gt.sum(), xt)
    (hg,) = tg.autograd.grad(gg.sum(), xg)
    np.testing.assert_allclose(hg.numpy(), ht.numpy(), rtol=1e-10)
    assert len(tg.nn.functional.hardtanh(xg).grad_fn.next_functions) >= 1


def test_inplace_activation_and_views_keep_their_own_names():
    torch = pytest.importorskip("torch")
    # in place on a non-leaf: the written tensor's node is PyTorch's in both
    names = []
    for m in (torch, tg):
        x = m.tensor(DATA, requires_grad=True)
        names.append(m.nn.functional.hardtanh(x * 1.0, inplace=True).grad_fn.name())
    assert names[0] == names[1]
    # a flip whose result is a permuted view keeps the view's node, in both
    xt = torch.tensor(DATA, requires_grad=True)
    xg = tg.tensor(DATA, requires_grad=True)
    assert tg.flip(xg, [1]).grad_fn.name() == torch.flip(xt, [1]).grad_fn.name()


IMAGE = np.arange(32, dtype=np.float64).reshape(1, 2, 4, 4) / 7.0
SPATIAL = [
    ("nearest", lambda m, x: m.nn.functional.interpolate(x, scale_factor=2)),
    ("nn.Upsample", lambda m, x: m.nn.Upsample(scale_factor=2)(x)),
    ("bilinear", lambda m, x: m.nn.functional.interpolate(x, size=(6, 5), mode="bilinear")),
    ("bilinear_ac", lambda m, x: m.nn.UpsamplingBilinear2d(scale_factor=2)(x)),
    ("bicubic", lambda m, x: m.nn.functional.interpolate(x, scale_factor=1.5, mode="bicubic")),
    ("linear", lambda m, x: m.nn.functional.interpolate(x[0], scale_factor=2, mode="linear")),
    ("nearest1d", lambda m, x: m.nn.functional.interpolate(x[0], size=7)),
    ("reflect", lambda m, x: m.nn.functional.pad(x, (1, 2, 2, 1), mode="reflect")),
    ("replicate", lambda m, x: m.nn.functional.pad(x[0], (1, 2), mode="replicate")),
    ("ReflectionPad2d", lambda m, x: m.nn.ReflectionPad2d(1)(x)),
]


@pytest.mark.parametrize("label,op", SPATIAL, ids=[c[0] for c in SPATIAL])
def test_resampling_and_padding_grad_fn_names_match_pytorch(label, op):
    torch = pytest.importorskip("torch")
    xt = torch.tensor(IMAGE, requires_grad=True)
    xg = tg.tensor(IMAGE, requires_grad=True)
    yt, yg = op(torch, xt), op(tg, xg)
    assert yg.grad_fn.name() == yt.grad_fn.name()
    np.testing.assert_allclose(yg.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    weights = np.linspace(0.5, 2.0, yt.numel()).reshape(tuple(yt.shape))
    (yt * torch.tensor(weights)).sum().backward()
    (yg * tg.tensor(weights)).sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
