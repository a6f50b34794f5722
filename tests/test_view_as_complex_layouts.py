"""view_as_complex / view_as_real of tensors whose memory was allocated in a permuted layout (the
clone of a permuted tensor keeps its strides): numpy takes only contiguous arrays as buffers, so
view_as_complex raised numpy's ValueError "ndarray is not contiguous" where PyTorch returns the
view (held-out fuzz 59910464)."""
import numpy as np
import pytest

import tapegrad as tg


def _floats(lib):
    yield lib.tensor(np.arange(8, dtype="float32").reshape(2, 2, 2)).permute(1, 0, 2).clone()
    yield lib.tensor(np.arange(24, dtype="float64").reshape(2, 3, 2, 2)).permute(2, 0, 1, 3).clone()
    yield lib.tensor(np.arange(12, dtype="float32").reshape(3, 2, 2)).transpose(0, 1).clone()


def _complexes(lib):
    z = lib.tensor((np.arange(12) + 1j * np.arange(12)).reshape(2, 3, 2).astype(np.complex64))
    yield z.permute(1, 0, 2).clone()
    yield z.transpose(0, 2).clone()
    yield z.permute(2, 0, 1)


@pytest.mark.parametrize("i", range(3))
def test_view_as_complex_of_a_permuted_allocation_is_a_view_as_torch(i):
    torch = pytest.importorskip("torch")
    for lib in (torch, tg):
        x = list(_floats(lib))[i]
        z = lib.view_as_complex(x)
        with lib.no_grad():
            x.mul_(2)               # the view sees the write
        if lib is torch:
            want = (z.numpy().copy(), tuple(z.stride()))
        else:
            np.testing.assert_array_equal(z.numpy(), want[0])
            assert tuple(z.stride()) == want[1]


@pytest.mark.parametrize("i", range(3))
def test_view_as_real_of_a_permuted_allocation_is_a_view_as_torch(i):
    torch = pytest.importorskip("torch")
    for lib in (torch, tg):
        w = list(_complexes(lib))[i]
        r = lib.view_as_real(w)
        with lib.no_grad():
            w.mul_(2)
        if lib is torch:
            want = (r.numpy().copy(), tuple(r.stride()))
        else:
            np.testing.assert_array_equal(r.numpy(), want[0])
            assert tuple(r.stride()) == want[1]


def test_gradient_through_view_as_complex_of_a_permuted_clone():
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (torch, tg):
        v = lib.tensor(np.arange(8, dtype="float32").reshape(2, 2, 2), requires_grad=True)
        z = lib.view_as_complex(v.permute(1, 0, 2).clone())
        (z.abs() * lib.tensor([[1., 2], [3, 4]])).sum().backward()
        grads.append(v.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)
    compiled = tg.compile(lambda v: tg.view_as_complex(v.permute(1, 0, 2).clone()))
    v = tg.tensor(np.arange(8, dtype="float32").reshape(2, 2, 2))
    for _ in range(3):
        np.testing.assert_array_equal(compiled(v).numpy(),
                                      tg.view_as_complex(v.permute(1, 0, 2).clone()).numpy())
