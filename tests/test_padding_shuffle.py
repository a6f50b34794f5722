"""Padding modules, pixel / channel shuffles and Bilinear: values, gradients, reprs, errors
against PyTorch, and finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

RNG = np.random.default_rng(5)
X4 = RNG.standard_normal((2, 8, 4, 6))

PADS = [("ZeroPad1d", (2,)), ("ZeroPad2d", ((1, 1, 2, 0),)), ("ZeroPad2d", (1,)),
        ("ConstantPad1d", (2, 3.5)), ("ConstantPad2d", ((1, 2, 3, 0), 1)),
        ("ReflectionPad1d", (2,)), ("ReflectionPad2d", (1,)), ("ReplicationPad1d", ((1, 2),)),
        ("ReplicationPad2d", (1,)), ("CircularPad1d", (1,)), ("CircularPad2d", ((1, 2, 0, 1),))]


@pytest.mark.parametrize("name,args", PADS)
def test_padding_modules_match_torch(torch, name, args):
    x = X4[0] if name.endswith("1d") else X4
    mt, mp = getattr(tg.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(mt) == repr(mp)
    a, b = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ya, yb = mt(a), mp(b)
    np.testing.assert_array_equal(ya.detach().numpy(), yb.detach().numpy())
    g = RNG.standard_normal(tuple(yb.shape))
    (ya * tg.tensor(g)).sum().backward()
    (yb * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)


def test_padding_values_without_torch():
    x = tg.tensor([[[1.0, 2.0, 3.0]]])
    assert tg.nn.ZeroPad1d(1)(x).tolist() == [[[0.0, 1.0, 2.0, 3.0, 0.0]]]
    assert tg.nn.ConstantPad1d((0, 2), 9.0)(x).tolist() == [[[1.0, 2.0, 3.0, 9.0, 9.0]]]
    assert tg.nn.ReflectionPad1d(1)(x).tolist() == [[[2.0, 1.0, 2.0, 3.0, 2.0]]]
    assert tg.nn.ReplicationPad1d(1)(x).tolist() == [[[1.0, 1.0, 2.0, 3.0, 3.0]]]
    assert tg.nn.CircularPad1d(1)(x).tolist() == [[[3.0, 1.0, 2.0, 3.0, 1.0]]]
    assert repr(tg.nn.ZeroPad2d(1)) == "ZeroPad2d((1, 1, 1, 1))"


SHUFFLES = {
    "pixel_shuffle": lambda M, t: M.nn.functional.pixel_shuffle(t, 2),
    "pixel_unshuffle": lambda M, t: M.nn.functional.pixel_unshuffle(t, 2),
    "channel_shuffle": lambda M, t: M.nn.functional.channel_shuffle(t, 4),
    "pixel_shuffle_3d": lambda M, t: M.nn.functional.pixel_shuffle(t[0], 2),
}


@pytest.mark.parametrize("name", sorted(SHUFFLES))
def test_shuffles_match_torch(torch, gradcheck, name):
    fn = SHUFFLES[name]
    a, b = tg.tensor(X4, requires_grad=True), torch.tensor(X4, requires_grad=True)
    ya, yb = fn(tg, a), fn(torch, b)
    np.testing.assert_array_equal(ya.detach().numpy(), yb.detach().numpy())
    g = RNG.standard_normal(tuple(yb.shape))
    (ya * tg.tensor(g)).sum().backward()
    (yb * torch.tensor(g)).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())
    gradcheck(lambda t: fn(tg, t) * tg.tensor(g), X4)


def test_shuffle_values_and_modules_without_torch():
    x = tg.arange(8.0).reshape(1, 4, 1, 2)
    y = tg.nn.PixelShuffle(2)(x)
    assert y.shape == (1, 1, 2, 4)
    assert y.tolist() == [[[[0.0, 2.0, 1.0, 3.0], [4.0, 6.0, 5.0, 7.0]]]]
    assert tg.nn.PixelUnshuffle(2)(y).tolist() == x.tolist()
    c = tg.arange(4.0).reshape(1, 4, 1)
    assert tg.nn.ChannelShuffle(2)(c).reshape(-1).tolist() == [0.0, 2.0, 1.0, 3.0]
    assert repr(tg.nn.PixelShuffle(2)) == "PixelShuffle(upscale_factor=2)"
    assert repr(tg.nn.PixelUnshuffle(3)) == "PixelUnshuffle(downscale_factor=3)"
    assert repr(tg.nn.ChannelShuffle(2)) == "ChannelShuffle(groups=2)"


@pytest.mark.parametrize("lib", ["tg", "torch"])
def test_errors(lib, request):
    M = tg if lib == "tg" else request.getfixturevalue("torch")
    Fn = M.nn.functional
    cases = [
        ("divisible by the square of upscale_factor, but input.size\\(-3\\)=3 is not divisible "
         "by 4", lambda: Fn.pixel_shuffle(M.randn(1, 3, 2, 2), 2)),
        ("expects height to be divisible by downscale_factor, but input.size\\(-2\\)=3",
         lambda: Fn.pixel_unshuffle(M.randn(1, 1, 3, 4), 2)),
        ("Number of channels must be divisible by groups. Got 3 channels and 2 groups.",
         lambda: Fn.channel_shuffle(M.randn(1, 3, 2), 2)),
        ("bilinear\\(\\): input2 size does not match weight size: got 4 but expected 3",
         lambda: Fn.bilinear(M.randn(2, 3), M.randn(2, 4), M.randn(5, 3, 3))),
    ]
    for phrase, fn in cases:
        with pytest.raises(RuntimeError, match=phrase):
            fn()


def test_bilinear_matches_torch(torch, gradcheck):
    a, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 3, 5))
    w, bias = RNG.standard_normal((6, 4, 5)), RNG.standard_normal(6)
    ta = [tg.tensor(v, requires_grad=True) for v in (a, b, w, bias)]
    pa = [torch.tensor(v, requires_grad=True) for v in (a, b, w, bias)]
    ya, yb = F.bilinear(*ta), torch.nn.functional.bilinear(*pa)
    assert tuple(ya.shape) == tuple(yb.shape) == (2, 3, 6)
    (ya * ya).sum().backward()
    (yb * yb).sum().backward()
    np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=1e-10)
    for p, q in zip(ta, pa):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10)
    gradcheck(F.bilinear, a[0, :2], b[0, :2], w[:3], bias[:3])


def test_bilinear_module():
    m = tg.nn.Bilinear(2, 3, 4)
    assert repr(m) == "Bilinear(in1_features=2, in2_features=3, out_features=4, bias=True)"
    assert m.weight.shape == (4, 2, 3) and m.bias.shape == (4,)
    bound = 1 / np.sqrt(2)
    assert np.abs(m.weight.detach().numpy()).max() <= bound
    y = m(tg.randn(5, 2), tg.randn(5, 3))
    y.sum().backward()
    assert y.shape == (5, 4) and m.weight.grad.shape == (4, 2, 3)
    nb = tg.nn.Bilinear(2, 3, 4, bias=False)
    assert nb.bias is None and list(nb.state_dict()) == ["weight"]
