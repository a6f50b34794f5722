"""Activations composed of differentiable ops (hardtanh, selu, mish, prelu, glu, ...): values and
gradients against PyTorch (including the breakpoints), finite differences, reprs and errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

# Breakpoints of every piecewise function below are in this grid, so the parity test checks the
# gradient PyTorch defines at a kink, not only the smooth parts.
GRID = np.array([-25.0, -6.0, -4.0, -3.0, -2.0, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 2.0, 3.0,
                 4.0, 6.0, 7.0, 25.0])

CASES = {
    "hardtanh": ({}, {"min_val": -2.0, "max_val": 0.5}),
    "relu6": ({},),
    "selu": ({},),
    "celu": ({}, {"alpha": 2.0}),
    "mish": ({},),
    "hardswish": ({},),
    "hardsigmoid": ({},),
    "logsigmoid": ({},),
    "softsign": ({},),
    "tanhshrink": ({},),
    "threshold": ({"threshold": 0.5, "value": -3.0},),
    "hardshrink": ({}, {"lambd": 1.0}),
    "softshrink": ({}, {"lambd": 1.0}),
    "rrelu": ({}, {"lower": 0.2, "upper": 0.4}),
}
PARAMS = [(name, kw) for name, kws in CASES.items() for kw in kws]


@pytest.mark.parametrize("name,kw", PARAMS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_value_and_gradient_parity(torch, name, kw, dtype):
    x = GRID.astype(dtype)
    a = tg.tensor(x, requires_grad=True)
    b = torch.tensor(x, requires_grad=True)
    ya = getattr(F, name)(a, **kw)
    yb = getattr(torch.nn.functional, name)(b, **kw)
    assert str(ya.dtype) == str(yb.dtype)
    (ya * ya).sum().backward()
    (yb * yb).sum().backward()
    tol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=tol, atol=tol)
    # PyTorch's float64 hardsigmoid backward multiplies by a float32 1/6 (error ~3e-8).
    gtol = 1e-7 if name == "hardsigmoid" else tol * 10
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=gtol, atol=gtol)


@pytest.mark.parametrize("name,kw", PARAMS)
def test_finite_differences(gradcheck, name, kw):
    # Points away from every breakpoint (finite differences are meaningless at a kink).
    x = np.array([-5.3, -2.7, -1.3, -0.7, -0.1, 0.3, 0.7, 1.6, 2.2, 3.4, 5.1])
    gradcheck(lambda t: getattr(F, name)(t, **kw), x)


def test_values_without_torch():
    x = tg.tensor([-4.0, -3.0, -1.0, 0.0, 1.0, 3.0, 7.0])
    assert F.relu6(x).tolist() == [0.0, 0.0, 0.0, 0.0, 1.0, 3.0, 6.0]
    assert F.hardtanh(x).tolist() == [-1.0, -1.0, -1.0, 0.0, 1.0, 1.0, 1.0]
    np.testing.assert_allclose(F.hardswish(x).numpy(), [0, 0, -1 / 3, 0, 2 / 3, 3, 7], rtol=1e-6)
    np.testing.assert_allclose(F.hardsigmoid(x).numpy(), [0, 0, 1 / 3, 0.5, 2 / 3, 1, 1],
                               rtol=1e-6)
    assert F.softshrink(x, 1.0).tolist() == [-3.0, -2.0, 0.0, 0.0, 0.0, 2.0, 6.0]
    assert F.hardshrink(x, 1.0).tolist() == [-4.0, -3.0, 0.0, 0.0, 0.0, 3.0, 7.0]
    assert F.threshold(x, 0.5, 9.0).tolist() == [9.0, 9.0, 9.0, 9.0, 1.0, 3.0, 7.0]
    np.testing.assert_allclose(F.softsign(x).numpy(), [-0.8, -0.75, -0.5, 0, 0.5, 0.75, 0.875])
    np.testing.assert_allclose(F.selu(tg.tensor([1.0])).numpy(), [1.0507009873554805])
    np.testing.assert_allclose(F.logsigmoid(tg.tensor([0.0])).numpy(), [-np.log(2)], rtol=1e-6)
    np.testing.assert_allclose(F.mish(tg.tensor([1.0])).numpy(), [np.tanh(np.log1p(np.e))],
                               rtol=1e-6)
    np.testing.assert_allclose(F.rrelu(tg.tensor([-2.0, 2.0])).numpy(),
                               [-2 * (1 / 8 + 1 / 3) / 2, 2.0], rtol=1e-6)
    # Hardswish's gradient at the breakpoints is PyTorch 2.13's: 0 at -3, 1 at +3.
    t = tg.tensor([-3.0, 0.0, 3.0], requires_grad=True)
    F.hardswish(t).sum().backward()
    assert t.grad.tolist() == [0.0, 0.5, 1.0]


def test_rrelu_training_draws_slopes_in_range():
    tg.manual_seed(0)
    x = tg.full((1000,), -1.0, requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slopes = -y.detach().numpy()
    assert 0.1 <= slopes.min() and slopes.max() <= 0.3 and slopes.std() > 0.03
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slopes, rtol=1e-6)
    assert F.rrelu(tg.tensor([2.0]), training=True).tolist() == [2.0]


@pytest.mark.parametrize("shape,nw", [((2, 3, 4), 3), ((2, 3), 1), ((5,), 1), ((2, 3, 2, 2), 3),
                                      ((4, 2), 2)])
def test_prelu_parity(torch, shape, nw):
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal(shape), rng.random(nw)
    a, wa = tg.tensor(x, requires_grad=True), tg.tensor(w, requires_grad=True)
    b, wb = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ya, yb = F.prelu(a, wa), torch.nn.functional.prelu(b, wb)
    (ya * ya).sum().backward()
    (yb * yb).sum().backward()
    assert tuple(ya.shape) == tuple(yb.shape)
    np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(wa.grad.numpy(), wb.grad.numpy(), rtol=1e-12)


def test_prelu_gradcheck_and_module(gradcheck):
    x = np.array([[-1.5, 0.7, -0.3], [2.0, -0.4, 0.9]])
    gradcheck(lambda t, w: F.prelu(t, w), x, np.array([0.2, 0.5, 0.1]))
    m = tg.nn.PReLU(3, init=0.1)
    assert m.weight.shape == (3,) and m.weight.requires_grad
    np.testing.assert_allclose(m(tg.tensor(x, dtype=tg.float32)).detach().numpy(),
                               np.where(x > 0, x, 0.1 * x), rtol=1e-6)
    assert list(m.state_dict()) == ["weight"]


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmin_glu_normalize_parity(torch, gradcheck, dim):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 4, 6))
    pairs = [(lambda M, t: M.nn.functional.softmin(t, dim)),
             (lambda M, t: M.nn.functional.glu(t, dim)),
             (lambda M, t: M.nn.functional.normalize(t, dim=dim)),
             (lambda M, t: M.nn.functional.normalize(t, p=1.0, dim=dim, eps=0.5))]
    for fn in pairs:
        a, b = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ya, yb = fn(tg, a), fn(torch, b)
        (ya * ya).sum().backward()
        (yb * yb).sum().backward()
        np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=1e-10)
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)
        gradcheck(lambda t: fn(tg, t), x[:2, :2, :4])


def test_softmin_without_dim_warns_like_torch():
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        y = F.softmin(tg.tensor([[1.0, 2.0]]))
    np.testing.assert_allclose(y.numpy(), [[0.7310586, 0.2689414]], rtol=1e-6)


@pytest.mark.parametrize("lib", ["tg", "torch"])
def test_errors(lib, request):
    M = tg if lib == "tg" else request.getfixturevalue("torch")
    Fn = M.nn.functional
    x = M.randn(2, 4, 3)
    cases = [
        (RuntimeError, "Mismatch of parameter numbers and input channel size. Found parameter "
                       "numbers = 3 and channel size = 4", lambda: Fn.prelu(x, M.ones(3))),
        (RuntimeError, "Halving dimension must be even, but dimension 2 is size 3",
         lambda: Fn.glu(x, -1)),
        (RuntimeError, "glu does not support scalars", lambda: Fn.glu(M.tensor(1.0))),
        (RuntimeError, "lambda must be in range", lambda: Fn.softshrink(x, -1.0)),
        (RuntimeError, "Lower bound should be less than or equal to the upper bound",
         lambda: Fn.rrelu(x, 0.5, 0.1, training=True)),
        (RuntimeError, "alpha cannot be 0 for CELU", lambda: Fn.celu(x, 0.0)),
        (ValueError, "Softmax2d: expected input to be 3D or 4D, got 2D instead",
         lambda: M.nn.Softmax2d()(M.randn(2, 2))),
    ]
    for exc, phrase, fn in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(exc, match=phrase):
                fn()


MODULES = [("PReLU", ()), ("PReLU", (3, 0.1)), ("Hardtanh", ()), ("Hardtanh", (-2, 2, True)),
           ("ReLU6", ()), ("ReLU6", (True,)), ("SELU", ()), ("SELU", (True,)), ("CELU", ()),
           ("CELU", (2.0,)), ("Mish", ()), ("Hardswish", ()), ("Hardsigmoid", ()),
           ("LogSigmoid", ()), ("Softsign", ()), ("Tanhshrink", ()), ("Threshold", (0.1, 20)),
           ("Threshold", (0.1, 20, True)), ("Softmin", ()), ("Softmin", (1,)), ("GLU", ()),
           ("GLU", (1,)), ("Hardshrink", ()), ("Softshrink", (1,)), ("RReLU", ()),
           ("RReLU", (0.1, 0.3, True)), ("Softmax2d", ())]


def test_module_reprs_and_outputs(torch):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 3, 2)).astype(np.float32)
    for name, args in MODULES:
        mt, mp = getattr(tg.nn, name)(*args), getattr(torch.nn, name)(*args)
        assert repr(mt) == repr(mp)
        if name == "RReLU":
            mt.eval(), mp.eval()
        if name == "PReLU" and args:
            xin = x[:, :3]
        else:
            xin = x
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ya = mt(tg.tensor(xin).clone())
            yb = mp(torch.tensor(xin).clone())
        np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_hardtanh_bad_bounds():
    # PyTorch asserts the bounds (AssertionError), naming both values.
    with pytest.raises(AssertionError, match=r"max_val \(1.0\) must be greater than min_val \(1.0\)"):
        tg.nn.Hardtanh(1.0, 1.0)


def test_inplace_variant_writes_into_input():
    a = tg.tensor([-1.0, 7.0], requires_grad=True)
    b = a * 1
    out = F.relu6(b, inplace=True)
    assert out is b and b.tolist() == [0.0, 6.0]
    out.sum().backward()
    assert a.grad.tolist() == [0.0, 0.0]


def test_logsigmoid_of_large_inputs_is_positive_zero():
    # where exp(-x) underflows, PyTorch's min(x, 0) - log1p(exp(-|x|)) is +0; a negation gave
    # -0, which prints as "-0." (fuzz seed 36001892)
    for dtype in (tg.float32, tg.float64):
        out = tg.nn.functional.logsigmoid(tg.tensor([800.0, float("inf"), 100.0], dtype=dtype))
        values = out.numpy()
        assert values[0] == 0.0 and not np.signbit(values[0])
        assert values[1] == 0.0 and not np.signbit(values[1])
        assert values[2] <= 0.0


def test_logsigmoid_signed_zero_matches_torch(torch):
    x = [800.0, float("inf"), 100.0, 20.0, 0.0, -3.0, -800.0]
    for dt_tg, dt_t in ((tg.float32, torch.float32), (tg.float64, torch.float64)):
        ours = tg.nn.functional.logsigmoid(tg.tensor(x, dtype=dt_tg)).numpy()
        theirs = torch.nn.functional.logsigmoid(torch.tensor(x, dtype=dt_t)).numpy()
        np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-30)
