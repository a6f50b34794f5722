"""What the signal-processing proxy (FIR/IIR filters, windows, stft/istft, torch.fft, wavelets,
complex tensors and their gradients) found tapegrad getting wrong, checked against PyTorch."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tapegrad as tg


def _torch():
    return pytest.importorskip("torch")


# -- zero gradients are zeros, whatever the upstream gradient --------------------------------------

_UPSTREAM = [-1.0, math.inf, 2.0]


@pytest.mark.parametrize("make", [
    lambda lib, x: lib.angle(x),
    lambda lib, x: lib.fill(x, 3.0),
    lambda lib, x: x.clone().fill_(lib.tensor(2.0)),
], ids=["angle", "fill", "fill_tensor"])
def test_constant_outputs_give_zero_not_nan_or_negative_zero_gradients(make):
    torch = _torch()
    results = []
    for lib in (tg, torch):
        x = lib.tensor([-1.0, 2.0, 0.0], requires_grad=True)
        (make(lib, x) * lib.tensor(_UPSTREAM)).sum().backward()
        results.append(x.grad.numpy())
    ours, theirs = results
    np.testing.assert_array_equal(ours, theirs)
    assert not np.signbit(ours).any()        # (assert_array_equal takes -0.0 == 0.0)


# -- the nodes and views torch.fft and stft return -------------------------------------------------

def _grad_fn_name(t):
    return type(t.grad_fn).__name__


@pytest.mark.parametrize("fn", ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "ihfft"])
def test_transforms_of_a_real_signal_have_pytorchs_nodes_and_conjugate_bit(fn):
    torch = _torch()
    seen = []
    for lib in (tg, torch):
        x = lib.arange(8.0).reshape(2, 4).requires_grad_()
        y = getattr(lib.fft, fn)(x)
        seen.append((_grad_fn_name(y), y.is_conj()))
    assert seen[0] == seen[1]


def test_ifft_of_a_real_signal_is_a_conjugate_view_as_pytorchs():
    x = tg.arange(4.0, requires_grad=True)
    y = tg.fft.ifft(x)
    assert y.is_conj() and not y.conj().is_conj()
    np.testing.assert_allclose(y.detach().resolve_conj().numpy(), np.fft.ifft(np.arange(4.0)), atol=1e-6)
    with pytest.raises(RuntimeError, match="unresolved conjugated tensors"):
        tg.view_as_real(y)
    (y.real * tg.tensor([1.0, 2.0, 3.0, 4.0]) + y.imag ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.5, -1.0, -0.5, 0.0], atol=1e-6)


def test_stft_of_a_1d_signal_squeezes_in_place_as_pytorchs():
    x = tg.arange(16.0, requires_grad=True)
    spec = tg.stft(x, 4, 1, window=tg.ones(4), return_complex=True)
    assert _grad_fn_name(spec) == "SqueezeBackward4" and spec.shape == (3, 17)


# -- complex running sums accumulate in complex128 -------------------------------------------------

@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_complex64_running_sums_and_products_accumulate_in_double_as_pytorchs(op):
    torch = _torch()
    rng = np.random.default_rng(0)
    values = (rng.standard_normal((4, 300)) + 1j * rng.standard_normal((4, 300))) * 0.1 + 1
    values = values.astype(np.complex64)
    for requires_grad in (False, True):
        ours = getattr(tg.tensor(values, requires_grad=requires_grad), op)(1)
        theirs = getattr(torch.tensor(values, requires_grad=requires_grad), op)(1)
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    # the running sum of a symmetric linspace ends at exactly 0 (in complex64: 1.19e-07)
    z = tg.complex(tg.linspace(-1, 1, 6), tg.linspace(-1, 1, 6)).cumsum(0)
    assert z[-1].item() == 0


# -- convolution dtype mismatches: PyTorch's words -------------------------------------------------

def _conv_error(lib, fn, x_dtype, w_dtype, x_shape=(1, 1, 8), w_shape=(1, 1, 3), bias_dtype=None):
    x = lib.ones(*x_shape, dtype=getattr(lib, x_dtype))
    w = lib.ones(*w_shape, dtype=getattr(lib, w_dtype))
    bias = None if bias_dtype is None else lib.ones(1, dtype=getattr(lib, bias_dtype))
    with pytest.raises(RuntimeError) as info:
        getattr(lib.nn.functional, fn)(x, w, bias=bias)
    return str(info.value)


@pytest.mark.parametrize("fn", ["conv1d", "conv_transpose1d"])
@pytest.mark.parametrize("x_dtype, w_dtype, bias_dtype, w_shape", [
    ("cfloat", "float32", None, (1, 1, 3)),
    ("cfloat", "cdouble", None, (1, 1, 3)),
    ("cfloat", "float64", None, (1, 1, 3)),
    ("cdouble", "cfloat", None, (1, 1, 3)),
    ("cfloat", "float32", None, (1, 3)),            # (before the weight's rank)
    ("cfloat", "cfloat", "float32", (1, 1, 3)),     # (the bias first)
    ("float32", "cfloat", None, (1, 1, 3)),
    ("float16", "float32", None, (1, 1, 3)),        # (MKLDNN's words only with AVX-512 FP16)
])
def test_conv_dtype_mismatch_messages_are_pytorchs(fn, x_dtype, w_dtype, bias_dtype, w_shape):
    torch = _torch()
    if fn == "conv_transpose1d" and bias_dtype is not None:
        pytest.skip("the transposed convolution checks its bias elsewhere")
    ours = _conv_error(tg, fn, x_dtype, w_dtype, w_shape=w_shape, bias_dtype=bias_dtype)
    theirs = _conv_error(torch, fn, x_dtype, w_dtype, w_shape=w_shape, bias_dtype=bias_dtype)
    assert ours == theirs


@pytest.mark.parametrize("fn", ["var", "std"])
def test_complex_var_and_std_show_pytorchs_node(fn):
    z = tg.complex(tg.arange(6.0), tg.linspace(-1, 1, 6)).requires_grad_()
    for result in (getattr(z, fn)(), getattr(tg, fn)(z.view(2, 3), 1)):
        assert _grad_fn_name(result) == fn.capitalize() + "Backward0"
        assert f"grad_fn=<{fn.capitalize()}Backward0>" in repr(result)
