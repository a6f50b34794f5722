"""Regressions found by proxy task proxyav (scientific ML scripts: PINNs, neural ODEs,
Hamiltonian/Lagrangian nets, FNOs, GPs, BNNs, flows, score matching, MD with autograd forces).

Each test compares with PyTorch (the `torch` fixture skips cleanly without it).
"""
import math

import numpy as np
import pytest

import tapegrad as tg


# -- sinc's higher derivatives at 0 (SILENT: the second derivative was 0) -------------------------
# sinc was where(x == 0, 1, sin(pi x) / (pi x)): the constant branch has every derivative 0, so a
# PINN residual with u_xx, or a Hessian, through sinc at an exact 0 got 0 instead of -pi^2/3.
# PyTorch's own double backward gives nan there (its backward formula divides by x and masks the
# result, which its own gradgradcheck fails); its first derivative is right, so the reference is
# the central difference of PyTorch's first derivative.

def _sinc_derivatives(lib, fn, values):
    x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
    y = fn(lib)(x)
    g = lib.autograd.grad(y.sum(), x, create_graph=True)[0]
    h = lib.autograd.grad(g.sum(), x)[0]
    return y.detach().numpy(), g.detach().numpy(), h.numpy()


def _torch_first_derivative(torch, fn, values):
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    return torch.autograd.grad(fn(torch)(x).sum(), x)[0].numpy()


@pytest.mark.parametrize("fn", [lambda lib: lib.sinc, lambda lib: lib.special.sinc,
                                lambda lib: (lambda t: t.sinc())])
def test_sinc_second_derivative_at_zero_matches_difference_of_torch_gradient(torch, fn):
    values = [0.0, 0.37, -1.25, 0.0, 2.0]
    y, g, h = _sinc_derivatives(tg, fn, values)
    ty = fn(torch)(torch.tensor(values, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(y, ty, rtol=1e-15)
    np.testing.assert_allclose(g, _torch_first_derivative(torch, fn, values), rtol=1e-13, atol=1e-15)
    eps = 1e-5
    plus = _torch_first_derivative(torch, fn, [v + eps for v in values])
    minus = _torch_first_derivative(torch, fn, [v - eps for v in values])
    # (PyTorch's first derivative cancels near 0: (s cos s - sin s) / s^2 loses ~1e-7 there)
    np.testing.assert_allclose(h, (plus - minus) / (2 * eps), rtol=1e-5, atol=1e-9)
    assert h[0] == pytest.approx(-math.pi ** 2 / 3, rel=1e-14)


def test_sinc_fourth_derivative_at_zero_and_gradgradcheck():
    x = tg.tensor([0.0, 0.3, 0.0, -0.8], dtype=tg.float64, requires_grad=True)
    d = tg.sinc(x)
    for _ in range(4):
        d = tg.autograd.grad(d.sum(), x, create_graph=True)[0]
    assert d[0].item() == pytest.approx(math.pi ** 4 / 5, rel=1e-12)
    assert d[2].item() == pytest.approx(math.pi ** 4 / 5, rel=1e-12)
    assert tg.autograd.gradcheck(tg.sinc, (x,))
    assert tg.autograd.gradgradcheck(tg.sinc, (x,))


def test_sinc_pinn_residual_at_zero_values_unchanged(torch):
    # u(x) = sinc(a x): u_xx at x = 0 is -a^2 pi^2 / 3; the gradient reaches a through it
    def residual(lib):
        a = lib.tensor(1.5, dtype=lib.float64, requires_grad=True)
        x = lib.tensor([[0.0], [0.25]], dtype=lib.float64, requires_grad=True)
        u = lib.sinc(a * x)
        u_x = lib.autograd.grad(u, x, lib.ones_like(u), create_graph=True)[0]
        u_xx = lib.autograd.grad(u_x, x, lib.ones_like(u_x), create_graph=True)[0]
        return u_xx, a
    u_xx, a = residual(tg)
    assert u_xx[0, 0].item() == pytest.approx(-(1.5 * math.pi) ** 2 / 3, rel=1e-13)
    t_u_xx, _ = residual(torch)
    np.testing.assert_allclose(u_xx.detach().numpy()[1], t_u_xx.detach().numpy()[1], rtol=1e-13)
    (u_xx[0, 0]).backward()
    assert a.grad.item() == pytest.approx(-2 * 1.5 * math.pi ** 2 / 3, rel=1e-12)
    # values (special ones, all dtypes) and first derivatives stay PyTorch's
    for dtype in ("float32", "float64", "float16"):
        values = [0.0, 1e-30, 0.5, -3.0, 1e30, float("inf"), float("nan")]
        t = torch.sinc(torch.tensor(values, dtype=getattr(torch, dtype)))
        got = tg.sinc(tg.tensor(values, dtype=getattr(tg, dtype)))
        assert got.dtype == getattr(tg, dtype)
        np.testing.assert_array_equal(got.numpy(), t.numpy())
    x = tg.tensor([0.0, 0.5, -2.0], requires_grad=True)
    tx = torch.tensor([0.0, 0.5, -2.0], requires_grad=True)
    tg.sinc(x).sum().backward()
    torch.sinc(tx).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-7)
    assert tg.sinc(x).grad_fn.name() == "SincBackward0"


# -- ihfft's zero imaginary parts print as PyTorch's (-0.0000j) ----------------------------------
# PyTorch's ihfft is the conjugate of an rfft, so the DC (and even-length Nyquist) terms' zero
# imaginary parts are -0.0 and print as "-0.0000j"; tapegrad took a full inverse transform of the
# real signal (+0.0).  The one-sided transforms now start from numpy's rfft (half the work of a
# full complex transform, the forward rfft2 of an FNO layer about twice as fast).

@pytest.mark.parametrize("values", [[0.5, -1.0, 2.0, 0.25], [1.0, 2.0, 3.0], [4.0, -2.0]])
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_ihfft_zero_imaginary_parts_are_negative_zero_as_torch(torch, values, norm):
    got = tg.fft.ihfft(tg.tensor(values, dtype=tg.float64), norm=norm)
    expected = torch.fft.ihfft(torch.tensor(values, dtype=torch.float64), norm=norm)
    assert repr(got) == repr(expected)
    e = expected.resolve_conj().numpy()
    np.testing.assert_allclose(got.resolve_conj().numpy(), e, rtol=1e-14, atol=1e-15)
    zero = e.imag == 0
    np.testing.assert_array_equal(np.signbit(got.resolve_conj().numpy().imag[zero]),
                                  np.signbit(e.imag[zero]))


def _onesided_derivatives(lib, name, kw, norm, x):
    if name.startswith(("irfft", "hfft")):
        a = lib.fft.rfftn(lib.tensor(x)).detach().clone().requires_grad_()
    else:
        a = lib.tensor(x, requires_grad=True)
    y = getattr(lib.fft, name)(a, norm=norm, **kw)
    yr = lib.view_as_real(y.resolve_conj()) if y.is_complex() else y
    w = lib.tensor(np.cos(np.arange(yr.numel())).reshape(tuple(yr.shape)))
    g = lib.autograd.grad((yr * w).sum() + (yr ** 2).sum(), a, create_graph=True)[0]
    gr = lib.view_as_real(g.resolve_conj()) if g.is_complex() else g
    h = lib.autograd.grad((gr * gr).sum(), a)[0]
    return [t.detach().resolve_conj().numpy() for t in (g, h)]


def test_onesided_transforms_match_torch_after_rfft_rewrite(torch):
    x = np.sin(np.arange(2 * 3 * 5 * 4) * 0.7).reshape(2, 3, 5, 4)
    cases = [("rfft", {}), ("rfft", dict(n=6, dim=2)), ("rfft2", dict(s=(3, 7))),
             ("rfftn", dict(dim=(0, 1, 3))), ("ihfft", dict(n=3)), ("ihfft2", {}),
             ("ihfftn", dict(dim=(1, 3), s=(4, 4)))]
    for name, kw in cases:
        for norm in (None, "ortho", "forward"):
            got = getattr(tg.fft, name)(tg.tensor(x), norm=norm, **kw)
            expected = getattr(torch.fft, name)(torch.tensor(x), norm=norm, **kw)
            assert got.dtype == tg.complex128 and tuple(got.shape) == tuple(expected.shape)
            np.testing.assert_allclose(got.resolve_conj().numpy(),
                                       expected.resolve_conj().numpy(), rtol=1e-12, atol=1e-12)
    # first and second derivatives (the VJPs of r2c and c2r now use rfft / irfft as well)
    for name, kw in [("rfft2", dict(s=(3, 7))), ("ihfftn", dict(dim=(1, 3))), ("irfft2", dict(s=(4, 5))),
                     ("hfft", dict(n=5))]:
        for norm in (None, "ortho", "forward"):
            got, expected = (_onesided_derivatives(lib, name, kw, norm, x) for lib in (tg, torch))
            for a, b in zip(got, expected):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max())
    # the ihfft sign check above fails without the change: its repr is the test's point
    got = tg.fft.ihfft(tg.tensor([1.0, 2.0, 3.0]))
    assert repr(got) == repr(torch.fft.ihfft(torch.tensor([1.0, 2.0, 3.0])))
