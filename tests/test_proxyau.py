"""Regression tests from the computer-vision proxy scripts (proxyau): what real CV training
scripts written from scratch (augmentation as tensor ops, detection helpers, hooks, layouts)
use, each compared against PyTorch."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("nd,pad,arg", [
    (1, (5, 0), 4),
    (2, (9, 0, 0, 0), 4),
    (2, (0, 0, 9, 0), 6),
    (3, (0, 0, 9, 0, 0, 0), 6),
    (3, (0, 0, 0, 0, 0, 9), 8),
])
def test_reflect_pad_too_large_names_the_pad_pair_argument(nd, pad, arg):
    # PyTorch numbers the argument by the offending pad pair (#4 innermost, #6, #8)
    shape = [1, 2] + [3] * nd
    for lib in (torch, tapegrad):
        x = lib.zeros(*shape)
        with pytest.raises(RuntimeError, match=f"Argument #{arg}: Padding size should be less"):
            lib.nn.functional.pad(x, pad, mode="reflect")


def _conv_pair():
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Linear(5, 2))
    gm = tapegrad.nn.Sequential(tapegrad.nn.Conv2d(3, 4, 3), tapegrad.nn.BatchNorm2d(4),
                                tapegrad.nn.Linear(5, 2))
    gm.load_state_dict({k: tapegrad.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return tm, gm


def test_module_to_memory_format_converts_4d_parameters_and_grads():
    tm, gm = _conv_pair()
    for m, lib in ((tm, torch), (gm, tapegrad)):
        m[0].weight.grad = lib.ones(4, 3, 3, 3)
    tw, gw = tm[0].weight, gm[0].weight
    tg, gg = tw.grad, gw.grad
    assert tm.to(memory_format=torch.channels_last) is tm
    assert gm.to(memory_format=tapegrad.channels_last) is gm
    assert gm[0].weight is gw and gm[0].weight.grad is gg and tm[0].weight is tw
    assert gm[0].weight.stride() == tm[0].weight.stride() == (27, 1, 9, 3)
    assert gm[0].weight.grad.stride() == tm[0].weight.grad.stride()
    assert gm[2].weight.stride() == tm[2].weight.stride()          # 2-D: untouched
    assert gm[0].weight.is_contiguous(memory_format=tapegrad.channels_last)
    x = np.random.RandomState(0).randn(2, 3, 6, 7).astype(np.float32)
    tm.eval(), gm.eval()
    to = tm(torch.from_numpy(x).to(memory_format=torch.channels_last))
    go = gm(tapegrad.from_numpy(x).to(memory_format=tapegrad.channels_last))
    np.testing.assert_allclose(go.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-6)
    # with a dtype, and back to the default layout
    tm.to(torch.float64, memory_format=torch.contiguous_format)
    gm.to(tapegrad.float64, memory_format=tapegrad.contiguous_format)
    assert gm[0].weight.dtype == tapegrad.float64 and gm[0].weight.stride() == tm[0].weight.stride()


def test_module_to_channels_last_on_5d_raises_as_tensor_to():
    for lib in (torch, tapegrad):
        m = lib.nn.Conv3d(2, 3, 2)
        with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
            m.to(memory_format=lib.channels_last)
        m.to(memory_format=lib.channels_last_3d)
    assert m.weight.stride() == torch.nn.Conv3d(2, 3, 2).to(
        memory_format=torch.channels_last_3d).weight.stride()


# uint8 images resampled: PyTorch's fixed-point kernels (int16 weights, rounding once per axis);
# tapegrad rounded float passes and was off by one on some pixels (a silent value difference)
@pytest.mark.parametrize("mode,kw", [
    ("bilinear", dict(size=(3, 4))),
    ("bilinear", dict(size=(3, 4), align_corners=True)),
    ("bilinear", dict(size=(13, 11))),
    ("bilinear", dict(size=(3, 4), antialias=True)),
    ("bicubic", dict(size=(11, 13))),
    ("bicubic", dict(size=(11, 13), align_corners=True)),
    ("bicubic", dict(size=(12, 3), antialias=True)),
    ("bilinear", dict(scale_factor=(1.7, 0.6))),
    ("bicubic", dict(scale_factor=1.05)),
])
def test_uint8_interpolate_matches_pytorch_fixed_point_kernels(mode, kw):
    img = np.random.RandomState(7).randint(0, 256, (2, 3, 6, 5)).astype(np.uint8)
    want = torch.nn.functional.interpolate(torch.from_numpy(img), mode=mode, **kw)
    got = tapegrad.nn.functional.interpolate(tapegrad.from_numpy(img), mode=mode, **kw)
    assert got.dtype == tapegrad.uint8 and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_uint8_interpolate_clamped_border_taps_are_summed_before_rounding():
    # bicubic taps clamped at a border read one pixel several times: PyTorch sums their weights
    # and rounds the sum (rounding each tap gave one unit off here)
    rs = np.random.RandomState(0)
    for h, w, oh, ow in [(9, 9, 14, 18), (10, 9, 17, 16), (2, 5, 3, 14), (8, 9, 13, 14)]:
        img = rs.randint(0, 256, (1, 3, h, w)).astype(np.uint8)
        want = torch.nn.functional.interpolate(torch.from_numpy(img), size=(oh, ow), mode="bicubic")
        got = tapegrad.nn.functional.interpolate(tapegrad.from_numpy(img), size=(oh, ow),
                                                 mode="bicubic")
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("size", [[2, 3, 8, 8], [2, 3, 0, 8], "Size", (1, 3, 4)])
def test_affine_grid_messages_show_size_as_passed(size):
    import re
    for lib in (torch, tapegrad):
        s = lib.Size([2, 3, 8, 8]) if size == "Size" else size
        theta = lib.zeros(2, 3, 3) if len(s) == 4 and 0 not in s else lib.zeros(2, 2, 3)
        err = NotImplementedError if len(s) == 3 else ValueError
        with pytest.raises(err, match=re.escape(f"size {s}" if len(s) != 4 or 0 not in s
                                                else f"Got {s}")):
            lib.nn.functional.affine_grid(theta, s, align_corners=False)


def test_grid_sample_warns_about_align_corners_before_the_kernel_checks():
    import warnings
    for lib in (torch, tapegrad):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(RuntimeError, match="expected grid and input to have same batch"):
                lib.nn.functional.grid_sample(lib.zeros(1, 1, 3, 3), lib.zeros(2, 2, 2, 2))
        assert any("align_corners=False since 1.3.0" in str(w.message) for w in caught)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(ValueError, match="expected mode to be"):
                lib.nn.functional.grid_sample(lib.zeros(1, 1, 3, 3), lib.zeros(1, 2, 2, 2),
                                              mode="area")
        assert not caught
