"""Faults found by replaying PyTorch's OpInfo samples for second derivatives, in-place variants
and complex first derivatives (sweep 18); each case is written out explicitly and checked against
torch (no torch.testing._internal needed)."""
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _pair(array, requires_grad=True):
    """The same values as a torch tensor and a tapegrad tensor."""
    return (torch.tensor(array, requires_grad=requires_grad),
            tapegrad.tensor(array, requires_grad=requires_grad))


def _close(want, got, rtol=1e-7, atol=1e-9):
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().resolve_conj().numpy(),
                               rtol=rtol, atol=atol)


def _complex(rng, *shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _real_loss(lib, out, weights):
    loss = (out * lib.tensor(weights)).sum()
    return loss.real if loss.is_complex() else loss


# -- addcdiv of complex operands: tensor1's and tensor2's gradients take the conjugate of their
#    partial derivatives (SILENT: they were the unconjugated ones) -------------------------------

@pytest.mark.parametrize("kinds", ["ccc", "rcr", "crr", "rrc", "ccr"])
@pytest.mark.parametrize("value", [1, 3.14, 0.5 + 0.25j])
def test_addcdiv_complex_gradients(kinds, value):
    rng = np.random.default_rng(0)
    arrays = [_complex(rng, 2, 3) if k == "c" else rng.standard_normal((2, 3)) for k in kinds]
    if value.__class__ is complex and kinds != "ccc":
        pytest.skip("PyTorch's backward refuses a complex value with a real operand")
    weights = _complex(rng, 2, 3)
    grads = []
    for lib in (torch, tapegrad):
        tensors = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = lib.addcdiv(*tensors, value=value)
        grads.append(lib.autograd.grad(_real_loss(lib, out, weights), tensors))
    for want, got in zip(*grads):
        _close(want, got)


def test_complex_gradient_of_a_real_input_keeps_its_real_part_without_a_warning():
    # (a custom Function's complex gradient for a real input: PyTorch's engine takes the real
    # part silently; numpy's complex-to-real cast warned)
    rng = np.random.default_rng(1)
    x = tapegrad.tensor(rng.standard_normal(3), requires_grad=True)
    t1 = tapegrad.tensor(_complex(rng, 3), requires_grad=True)
    t2 = tapegrad.tensor(rng.standard_normal(3) + 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (g,) = tapegrad.autograd.grad(tapegrad.addcdiv(x, t1, t2).abs().sum(), (x,))
    xt = torch.tensor(x.detach().numpy(), requires_grad=True)
    (want,) = torch.autograd.grad(
        torch.addcdiv(xt, torch.tensor(t1.detach().numpy()), torch.tensor(t2.numpy())).abs().sum(),
        (xt,))
    _close(want, g)


# -- the upper Cholesky factor of a complex matrix: PyTorch's gradient, not its adjoint
#    (SILENT: differentiating through A^H adjointed it) ------------------------------------------

@pytest.mark.parametrize("call", ["linalg.cholesky", "cholesky", "linalg.cholesky_ex"])
@pytest.mark.parametrize("dtype", ["complex128", "float64"])
@pytest.mark.parametrize("upper", [True, False])
def test_cholesky_gradient_for_either_factor(call, dtype, upper):
    rng = np.random.default_rng(2)
    m = _complex(rng, 2, 3, 3) if dtype == "complex128" else rng.standard_normal((2, 3, 3))
    a = m @ np.conj(np.swapaxes(m, -1, -2)) + 3 * np.eye(3)
    a = a + np.triu(_complex(rng, 3, 3) if dtype == "complex128" else rng.standard_normal((3, 3)), 1)
    weights = _complex(rng, 2, 3, 3) if dtype == "complex128" else rng.standard_normal((2, 3, 3))
    results = []
    for lib in (torch, tapegrad):
        x = lib.tensor(a, requires_grad=True)
        if call == "cholesky":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)     # (its deprecation notice)
                factor = lib.cholesky(x, upper)
        elif call == "linalg.cholesky":
            factor = lib.linalg.cholesky(x, upper=upper)
        else:
            factor = lib.linalg.cholesky_ex(x, upper=upper)[0]
        (g,) = lib.autograd.grad(_real_loss(lib, factor, weights), (x,), create_graph=True)
        (gg,) = lib.autograd.grad(_real_loss(lib, g, weights), (x,))
        results.append((factor, g, gg))
    for want, got in zip(*results):
        _close(want, got, rtol=1e-6, atol=1e-8)


# -- istft: the window's gradient has a part through the overlap-add envelope it divides by
#    (SILENT: the envelope was computed under no_grad) ---------------------------------------

@pytest.mark.parametrize("frames, n_fft, hop, onesided", [
    (4, 10, None, None), (8, 10, None, None), (5, 16, 4, None), (5, 10, None, False)])
def test_istft_window_gradient_includes_the_envelope(frames, n_fft, hop, onesided):
    rng = np.random.default_rng(3)
    freq = n_fft if onesided is False else n_fft // 2 + 1
    spectrum = _complex(rng, freq, frames)
    window = rng.standard_normal(n_fft) + 2
    results = []
    for lib in (torch, tapegrad):
        x, w = lib.tensor(spectrum, requires_grad=True), lib.tensor(window, requires_grad=True)
        kwargs = dict(n_fft=n_fft, hop_length=hop, window=w, center=True)
        if onesided is False:
            kwargs.update(onesided=False, return_complex=True)
        y = lib.istft(x, **kwargs)
        weights = np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape))
        results.append((y,) + lib.autograd.grad(_real_loss(lib, y, weights), (x, w)))
    for want, got in zip(*results):
        _close(want, got)


def test_istft_complex_window_gradient():
    rng = np.random.default_rng(4)
    spectrum, window = _complex(rng, 10, 6), _complex(rng, 10) + 3
    weights = _complex(rng, 10)        # (hop 2 times 5 frame steps: 10 samples)
    results = []
    for lib in (torch, tapegrad):
        x, w = lib.tensor(spectrum, requires_grad=True), lib.tensor(window, requires_grad=True)
        y = lib.istft(x, n_fft=10, window=w, center=True, onesided=False, return_complex=True)
        results.append((y,) + lib.autograd.grad(_real_loss(lib, y, weights), (x, w)))
    for want, got in zip(*results):
        _close(want, got)


# -- unsafe_split / unsafe_chunk / unsafe_split_with_sizes of complex tensors differentiate as
#    split does (they raised NotImplementedError) ---------------------------------------------

@pytest.mark.parametrize("call, arg", [("unsafe_split", 2), ("unsafe_chunk", 2),
                                       ("unsafe_split_with_sizes", [1, 3])])
def test_unsafe_split_of_complex_tensors_differentiates(call, arg):
    rng = np.random.default_rng(5)
    values, weights = _complex(rng, 4, 3), _complex(rng, 4, 3)
    results = []
    for lib in (torch, tapegrad):
        x = lib.tensor(values, requires_grad=True)
        parts = getattr(lib, call)(x, arg)
        loss = sum(_real_loss(lib, p, weights[:p.shape[0]]) for p in parts)
        results.append(lib.autograd.grad(loss, (x,)))
    _close(results[0][0], results[1][0])


# -- (log_)softmax of a complex input with a real dtype: the cast is recorded first, so the real
#    part of the input gets the gradient (it raised NotImplementedError) -------------------------

@pytest.mark.parametrize("call", ["softmax", "log_softmax"])
def test_softmax_of_complex_input_with_real_dtype_differentiates(call):
    values, weights = np.array([1 + 2j, 3 - 1j, 0.5j]), np.array([1.0, 2.0, 3.0])
    results = []
    for lib in (torch, tapegrad):
        x = lib.tensor(values, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)      # (the cast's discarded imag part)
            y = getattr(lib, call)(x, 0, dtype=lib.float64)
        assert y.grad_fn.name() == ("LogSoftmaxBackward0" if call == "log_softmax"
                                    else "SoftmaxBackward0")
        results.append((y,) + lib.autograd.grad((y * lib.tensor(weights)).sum(), (x,)))
    for want, got in zip(*results):
        _close(want, got)
