"""Function approximation and scientific-ML idioms (KANs, implicit neural representations),
checked against PyTorch: out-of-bounds grid_sample taps, vmap over a training-mode batch_norm."""
import math

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F
from tapegrad.func import vmap


def _signbits(t):
    return np.signbit(t.detach().numpy())


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
@pytest.mark.parametrize("dims", [2, 3])
def test_grid_sample_zeros_padding_outside_is_positive_zero(mode, dims):
    # An outside tap adds nothing, so a point outside a negative-valued input samples +0
    # (PyTorch prints "0.", not "-0."), and its input gradient is zero.
    shape = (1, 1) + (3,) * dims
    image = (-tg.arange(1.0, 1.0 + math.prod(shape))).reshape(shape).requires_grad_()
    points = tg.tensor([[1.7] * dims, [-3.0] * dims, [0.0] * dims]).reshape((1,) * dims + (3, dims))
    out = F.grid_sample(image, points, mode=mode, padding_mode="zeros", align_corners=False)
    flat = out.detach().reshape(-1)
    assert flat[:2].tolist() == [0.0, 0.0]
    assert not _signbits(flat[:2]).any()
    assert "-0." not in repr(flat)
    out.sum().backward()
    centre = tuple([0, 0] + [1] * dims)
    assert image.grad.sum().item() == pytest.approx(1.0)
    assert image.grad[centre].item() == pytest.approx(1.0)


def test_grid_sample_outside_matches_torch():
    torch = pytest.importorskip("torch")
    vol = np.sin(np.arange(2 * 3 * 4 * 5)).reshape(1, 2, 3, 4, 5)
    pts = np.array([[0.1, -0.3, 0.5], [0.9, 0.9, -0.9], [-1.0, 1.0, 0.0], [1.2, 0.0, 0.0],
                    [3.0, -2.0, 0.5]]).reshape(1, 1, 1, 5, 3)
    for mode in ("nearest", "bilinear"):
        for ac in (True, False):
            ours = F.grid_sample(tg.tensor(vol), tg.tensor(pts), mode=mode, align_corners=ac)
            theirs = torch.nn.functional.grid_sample(torch.tensor(vol), torch.tensor(pts),
                                                     mode=mode, align_corners=ac)
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-12)
            np.testing.assert_array_equal(_signbits(ours), np.signbit(theirs.numpy()))


def test_vmap_training_batch_norm_of_one_value_per_channel_raises_value_error():
    # F.batch_norm checks the per-sample size before vmap's running-statistics check.
    bn = tg.nn.BatchNorm1d(3)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        vmap(lambda a: bn(a[None]))(tg.ones(4, 3))
    with pytest.raises(RuntimeError, match="Batch norm got a batched tensor"):
        vmap(lambda a: bn(a))(tg.ones(4, 2, 3))
    bn.eval()
    assert vmap(lambda a: bn(a[None]))(tg.ones(4, 3)).shape == (4, 1, 3)
