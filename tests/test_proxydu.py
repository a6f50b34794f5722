"""Detection / segmentation training code without torchvision ops (the proxydu corpus): the
interpolations an FPN, a segmentation head and a RoI crop use, bit for bit as PyTorch's CPU
kernels compute them (float32 and half; float64 within an ulp), with their gradients."""
import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _data(shape, dtype=np.float32, seed=37):
    """Values exactly representable and equal in both libraries (no transcendental input)."""
    n = int(np.prod(shape))
    return (((np.arange(n, dtype=np.float64) * seed) % 101) / 101 - 0.5).astype(dtype).reshape(shape)


def _both(a, **kw):
    theirs = TF.interpolate(torch.from_numpy(a), **kw).numpy()
    ours = F.interpolate(tg.tensor(a), **kw).numpy()
    return ours, theirs


# PyTorch's bilinear kernel for outputs with height + width <= 128 (any channel count: its SIMD
# order over whole vectors of 8 float32 channels, its scalar order over the rest), its generic
# kernel for larger ones; bicubic, linear and trilinear kernels; scale factors and align_corners.
_CASES = [
    ((1, 1, 5, 7), dict(size=(3, 4), mode="bilinear")),
    ((2, 3, 5, 7), dict(size=(8, 11), mode="bilinear")),
    ((1, 8, 5, 7), dict(size=(13, 5), mode="bilinear")),
    ((2, 11, 5, 7), dict(scale_factor=1.7, mode="bilinear")),
    ((1, 20, 4, 6), dict(size=(8, 11), mode="bilinear", align_corners=True)),
    ((1, 2, 30, 40), dict(size=(100, 90), mode="bilinear")),
    ((1, 5, 30, 40), dict(size=(100, 90), mode="bilinear", align_corners=True)),
    ((2, 3, 5, 7), dict(size=(8, 11), mode="bicubic")),
    ((2, 3, 5, 7), dict(size=(3, 4), mode="bicubic", align_corners=True)),
    ((1, 2, 30, 40), dict(size=(100, 90), mode="bicubic")),
    ((2, 3, 9), dict(size=14, mode="linear")),
    ((2, 3, 9), dict(scale_factor=1.7, mode="linear")),
    ((1, 5, 3, 4, 5), dict(size=(5, 6, 7), mode="trilinear")),
    ((1, 9, 3, 4, 5), dict(size=(2, 6, 3), mode="trilinear", align_corners=True)),
]


@pytest.mark.parametrize("shape,kw", _CASES)
def test_interpolate_float32_bits_match_torch(shape, kw, torch_bits):
    # tapegrad computed the weights in float64 and summed along the first axis first: about
    # half the float32 outputs were an ulp off PyTorch's (F.interpolate(arange(16).view(1, 1,
    # 4, 4), size=5, mode='bicubic') printed 0.3677 for PyTorch's 0.3678)
    ours, theirs = _both(_data(shape), **kw)
    torch_bits.assert_equal(ours, theirs)


@pytest.mark.parametrize("shape,kw", _CASES)
def test_interpolate_half_bits_match_torch(shape, kw, torch_bits):
    # half inputs: the channels-last kernel keeps float32 weights, the others store them in
    # half (a linear pair as 1 - w1 of the rounded w1)
    ours, theirs = _both(_data(shape, np.float16), **kw)
    torch_bits.assert_equal(ours, theirs)


@pytest.mark.parametrize("shape,kw", _CASES)
def test_interpolate_float64_within_an_ulp(shape, kw):
    ours, theirs = _both(_data(shape, np.float64), **kw)
    np.testing.assert_allclose(ours, theirs, rtol=4e-16, atol=4e-16)


def test_bilinear_float64_weights_index_from_the_rounded_position(torch_bits):
    # 20 -> 60 rows: PyTorch's output row 4 reads input row 1 alone (its index comes from the
    # product rounded before - 0.5, 1.0), a fused position (0.99999999999999989) read row 0
    # with weight 1.1e-16, and an inf there made a NaN PyTorch does not have
    eye = np.eye(20).reshape(20, 1, 1, 20)
    ours, theirs = _both(eye, size=(1, 60), mode="bilinear")
    torch_bits.assert_equal(ours, theirs)
    x = np.zeros((1, 1, 1, 3))
    x[..., 2] = np.inf
    ours, theirs = _both(x, size=(7, 7), mode="bilinear")
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))


def test_bicubic_readme_example_prints_as_torch():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    ours = F.interpolate(tg.tensor(x), size=5, mode="bicubic", align_corners=False)
    theirs = TF.interpolate(torch.from_numpy(x), size=5, mode="bicubic", align_corners=False)
    assert str(ours) == str(theirs)


def test_channels_last_input_bits_and_layout(torch_bits):
    a = _data((1, 5, 30, 40))
    t = TF.interpolate(torch.from_numpy(a).contiguous(memory_format=torch.channels_last),
                       size=(100, 90), mode="bilinear")
    g = F.interpolate(tg.tensor(a).contiguous(memory_format=tg.channels_last),
                      size=(100, 90), mode="bilinear")
    torch_bits.assert_equal(g.numpy(), t.numpy())
    assert g.is_contiguous(memory_format=tg.channels_last)


@pytest.mark.parametrize("kw", [dict(size=(4, 7), mode="bilinear"),
                                dict(size=(130, 7), mode="bilinear"),
                                dict(size=(4, 7), mode="bicubic", align_corners=True),
                                dict(scale_factor=1.5, mode="bilinear", align_corners=True)])
def test_interpolate_gradients(kw, gradcheck):
    x = _data((1, 9, 3, 5), np.float64)
    gradcheck(lambda t: F.interpolate(t, **kw) ** 2, x)
    xt = tg.tensor(x, requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda t: F.interpolate(t, **kw) ** 2, (xt,))


@pytest.mark.parametrize("kw", [dict(size=(8, 11), mode="bilinear"),
                                dict(size=(8, 11), mode="bicubic")])
def test_interpolate_float32_gradient_close_to_torch(kw):
    a, g = _data((1, 9, 5, 7)), _data((1, 9, 8, 11), seed=53)
    ta = torch.from_numpy(a).requires_grad_()
    TF.interpolate(ta, **kw).backward(torch.from_numpy(g))
    ga = tg.tensor(a, requires_grad=True)
    out = F.interpolate(ga, **kw)
    out.backward(tg.tensor(g))
    assert out.grad_fn.name() == TF.interpolate(ta, **kw).grad_fn.name()
    np.testing.assert_allclose(ga.grad.numpy(), ta.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_non_finite_inputs_reach_the_outputs_torch_reaches():
    x = _data((1, 3, 5, 7))
    x[0, 1, 2, 3] = np.inf
    x[0, 2, 4, 0] = np.nan
    for kw in (dict(size=(8, 11), mode="bilinear"), dict(size=(140, 9), mode="bilinear"),
               dict(size=(8, 11), mode="bicubic")):
        ours, theirs = _both(x, **kw)
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
        np.testing.assert_array_equal(np.isinf(ours), np.isinf(theirs))


# -- grid_sample (RoI crops by affine grids) -------------------------------------------------------

def _grid(shape, seed=53):
    return _data(shape, seed=seed) * 2.4 * 101 / 97


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("shape,gshape", [((2, 3, 16, 16), (2, 5, 7, 2)),
                                          ((1, 11, 9, 13), (1, 20, 3, 2)),
                                          ((2, 1, 5, 5), (2, 40, 40, 2))])
def test_grid_sample_bilinear_float32_bits(shape, gshape, padding_mode, align_corners,
                                           torch_bits):
    # PyTorch's 2-d bilinear kernel fuses the unnormalisation's scale and shift and sums the
    # taps as nw * x_nw, then fma(x, w, acc) for ne, sw and se: a plain sum was an ulp off in
    # about a third of the outputs
    img, g = _data(shape), _grid(gshape)
    theirs = TF.grid_sample(torch.from_numpy(img), torch.from_numpy(g),
                            padding_mode=padding_mode, align_corners=align_corners).numpy()
    ours = F.grid_sample(tg.tensor(img), tg.tensor(g), padding_mode=padding_mode,
                         align_corners=align_corners).numpy()
    torch_bits.assert_equal(ours, theirs)


@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_bilinear_gradients(align_corners, gradcheck):
    img = _data((1, 2, 5, 6), np.float64)
    g = _grid((1, 3, 4, 2)).astype(np.float64) * 0.9
    gradcheck(lambda x, y: F.grid_sample(x, y, align_corners=align_corners) ** 2, img, g)
    a, b = torch.tensor(img, requires_grad=True), torch.tensor(g, requires_grad=True)
    (TF.grid_sample(a, b, align_corners=align_corners) ** 2).sum().backward()
    c, d = tg.tensor(img, requires_grad=True), tg.tensor(g, requires_grad=True)
    (F.grid_sample(c, d, align_corners=align_corners) ** 2).sum().backward()
    np.testing.assert_allclose(c.grad.numpy(), a.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(d.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-12)
