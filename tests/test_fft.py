"""torch.fft's real-valued helpers and the complex dtypes (the transforms: test_complex.py)."""
import numpy as np
import pytest

import tapegrad as tg


@pytest.mark.parametrize("n", [0, 1, 4, 5, 10])
@pytest.mark.parametrize("d", [1.0, 0.1, 3])
def test_frequencies_match_torch(torch, n, d):
    for name, kw in [("fftfreq", {}), ("rfftfreq", {}), ("fftfreq", {"dtype": "float64"}),
                     ("rfftfreq", {"dtype": "float64"})]:
        ours = getattr(tg.fft, name)(n, d, **{k: getattr(tg, v) for k, v in kw.items()})
        theirs = getattr(torch.fft, name)(n, d, **{k: getattr(torch, v) for k, v in kw.items()})
        assert repr(ours.dtype) == repr(theirs.dtype)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_frequencies_without_torch():
    assert tg.fft.fftfreq(4).tolist() == [0.0, 0.25, -0.5, -0.25]
    assert tg.fft.rfftfreq(5, 0.5).tolist() == pytest.approx([0.0, 0.4, 0.8])
    assert tg.fft.fftfreq(3).dtype == tg.float32
    with pytest.raises(RuntimeError, match="requires a floating point or complex dtype"):
        tg.fft.fftfreq(3, dtype=tg.int64)


@pytest.mark.parametrize("dim", [None, 1, (0,), (0, 1)])
def test_shifts_match_torch(torch, dim):
    values = np.arange(12.0).reshape(3, 4)
    out = []
    for T in (tg, torch):
        x = T.tensor(values, requires_grad=True)
        y = T.fft.fftshift(x, dim)
        z = T.fft.ifftshift(y, dim)
        (y * T.arange(12.0).reshape(3, 4).double()).sum().backward()
        out.append((y.tolist(), z.tolist(), x.grad.tolist()))
    assert out[0] == out[1]
    assert out[0][1] == values.tolist()       # ifftshift undoes fftshift


def test_shift_gradcheck(gradcheck):
    gradcheck(lambda x: tg.fft.fftshift(x).exp(), np.linspace(-1, 1, 15).reshape(3, 5))


def test_complex_dtypes_match_torch(torch):
    for name in ("complex64", "complex128", "cfloat", "cdouble"):
        ours, theirs = getattr(tg, name), getattr(torch, name)
        assert repr(ours) == repr(theirs)
        assert (ours.is_complex, ours.is_floating_point, ours.itemsize) == \
            (theirs.is_complex, theirs.is_floating_point, theirs.itemsize)
    assert not tg.float32.is_complex


def test_complex32_is_a_name_only():
    with pytest.raises(TypeError, match="no complex32"):
        tg.zeros(2, dtype=tg.complex32)


def test_complex_default_dtype_is_refused():
    with pytest.raises(TypeError, match="only floating-point types"):
        tg.set_default_dtype(tg.complex64)
