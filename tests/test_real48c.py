"""Regressions found running research model zoos (real48c): PyTorch is the oracle."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _shift_s2(lib, x):
    # the spatial shift of S2-MLP: slices of a channels-last view written from themselves
    b, w, h, c = x.size()
    x[:, 1:, :, :c // 4] = x[:, :w - 1, :, :c // 4]
    x[:, :w - 1, :, c // 4:c // 2] = x[:, 1:, :, c // 4:c // 2]
    x[:, :, 1:, c // 2:c * 3 // 4] = x[:, :, :h - 1, c // 2:c * 3 // 4]
    x[:, :, :h - 1, 3 * c // 4:] = x[:, :, 1:, 3 * c // 4:]
    return x


@pytest.mark.parametrize("grad", [False, True])
def test_overlapping_strided_setitem_smears_like_torch(grad):
    # SILENT: PyTorch copies a partly overlapping non-dense source element by element (it finds
    # the overlap too hard to refuse), so the shift propagates; numpy buffered it
    data = np.arange(2 * 4 * 3 * 8, dtype=np.float32).reshape(2, 4, 3, 8)
    outs = []
    for lib in (torch, tg):
        w = lib.tensor(data, requires_grad=grad)
        x = w * 1
        _shift_s2(lib, x[:, :, :, :4])
        if grad:
            (x * lib.arange(x.numel(), dtype=lib.float32).reshape(x.shape)).sum().backward()
            outs.append((x.detach().numpy().copy(), w.grad.numpy().copy()))
        else:
            outs.append((x.numpy().copy(), None))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    if grad:
        np.testing.assert_array_equal(outs[0][1], outs[1][1])


def test_overlapping_strided_copy_and_step_slices_like_torch():
    for build in (lambda L: L.arange(8.),):
        a, b = build(torch), build(tg)
        a[::2][1:] = a[::2][:3]
        b[::2][1:] = b[::2][:3]
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    a = torch.arange(40.).reshape(5, 8)[:, :4]
    b = tg.arange(40.).reshape(5, 8)[:, :4]
    a[1:] = a[:4]
    b[1:] = b[:4]
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    a = torch.arange(16.).reshape(2, 8)
    b = tg.arange(16.).reshape(2, 8)
    a[:, 1:4].copy_(a[:, 0:3])
    b[:, 1:4].copy_(b[:, 0:3])
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    a = torch.arange(12.).reshape(3, 4)[:, :2].t()
    b = tg.arange(12.).reshape(3, 4)[:, :2].t()
    a[:, 1:] = a[:, :2]
    b[:, 1:] = b[:, :2]
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_dense_overlap_still_refused():
    for lib in (torch, tg):
        x = lib.arange(8.).reshape(1, 8)
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            x[:, 1:] = x[:, :7]
