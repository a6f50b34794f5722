"""Elementwise math names added in tapegrad/_extra_ops.py (tan, the inverse hyperbolic functions
and their arc* aliases) and the in-place method forms (exp_, clamp_, ...): torch parity of values,
dtypes and gradients, finite differences, plain values, and PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

RNG = np.random.default_rng(5)

# (name, values inside the function's domain)
UNARY = [("tan", RNG.uniform(-1.4, 1.4, (3, 4))), ("asinh", RNG.standard_normal((3, 4)) * 3),
         ("acosh", RNG.uniform(1.1, 5.0, (3, 4))), ("atanh", RNG.uniform(-0.9, 0.9, (3, 4)))]
ALIASES = {"arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh"}


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("name,x", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_values_and_gradients_match_torch(torch, name, x, dtype):
    ours = tg.tensor(x, dtype=getattr(tg, dtype), requires_grad=True)
    theirs = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
    y1, y2 = getattr(tg, name)(ours), getattr(torch, name)(theirs)
    assert str(y1.dtype) == str(y2.dtype)
    assert type(y1.grad_fn).__name__ == type(y2.grad_fn).__name__
    np.testing.assert_allclose(_np(y1), _np(y2), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(_np(getattr(ours, name)()), _np(y2), rtol=2e-6, atol=1e-7)
    (y1 * y1).sum().backward()
    (y2 * y2).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,x", UNARY, ids=[u[0] for u in UNARY])
def test_unary_gradient_matches_finite_differences(gradcheck, name, x):
    gradcheck(lambda t: getattr(tg, name)(t), x)


def test_unary_out_of_domain_integer_input_and_aliases(torch):
    x = [-2.0, -1.0, 0.0, 0.5, 1.0, 3.0]
    for name in ("tan", "asinh", "acosh", "atanh"):
        # float32 values within an ulp (ours are float64 results rounded once)
        np.testing.assert_allclose(_np(getattr(tg, name)(tg.tensor(x))),
                                   getattr(torch, name)(torch.tensor(x)).numpy(), rtol=2e-7)
        ints = getattr(tg, name)(tg.tensor([0, 1, 2]))
        assert ints.dtype == tg.float32
        np.testing.assert_allclose(_np(ints), getattr(torch, name)(torch.tensor([0, 1, 2])).numpy())
    for alias, name in ALIASES.items():
        np.testing.assert_array_equal(_np(getattr(tg, alias)(tg.tensor(x))),
                                      _np(getattr(tg, name)(tg.tensor(x))))
        assert hasattr(torch.Tensor, alias) and hasattr(tg.Tensor, alias)


def test_unary_plain_values_and_errors():
    np.testing.assert_allclose(_np(tg.tan(tg.tensor([0.0, np.pi / 4]))), [0.0, 1.0], atol=1e-7)
    np.testing.assert_allclose(_np(tg.asinh(tg.tensor([0.0, 1.0]))), [0.0, np.log(1 + 2 ** 0.5)])
    assert np.isnan(tg.acosh(tg.tensor(0.5)).item())
    assert tg.atanh(tg.tensor(1.0)).item() == np.inf
    with pytest.raises(TypeError, match=r"tan\(\): argument 'input' \(position 1\) must be Tensor"):
        tg.tan([1.0])


# -- in-place forms --------------------------------------------------------------------------------

# (method, args, input values)
IN_PLACE = [("exp_", (), RNG.standard_normal(4)), ("log_", (), RNG.uniform(0.5, 2, 4)),
            ("sigmoid_", (), RNG.standard_normal(4)), ("tanh_", (), RNG.standard_normal(4)),
            ("sqrt_", (), RNG.uniform(0.5, 2, 4)), ("neg_", (), RNG.standard_normal(4)),
            ("abs_", (), RNG.standard_normal(4)), ("relu_", (), RNG.standard_normal(4)),
            ("clamp_", (-0.5, 0.5), RNG.standard_normal(4)), ("pow_", (3,), RNG.standard_normal(4)),
            ("tan_", (), RNG.uniform(-1, 1, 4)), ("cosh_", (), RNG.standard_normal(4)),
            ("reciprocal_", (), RNG.uniform(0.5, 2, 4)), ("clamp_min_", (0.1,), RNG.standard_normal(4))]


@pytest.mark.parametrize("method,args,x", IN_PLACE, ids=[c[0] for c in IN_PLACE])
def test_in_place_matches_torch(torch, method, args, x):
    results = []
    for lib in (tg, torch):
        leaf = lib.tensor(x, requires_grad=True)
        y = leaf * 2
        out = getattr(y, method)(*args)
        assert out is y
        if lib is tg:
            assert y._version_value == 1
        (y * y).sum().backward()
        plain = lib.tensor(x)
        getattr(plain, method)(*args)
        results.append((y.detach().numpy(), leaf.grad.numpy(), plain.numpy(),
                        type(y.grad_fn).__name__))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[0][2], results[1][2], rtol=1e-6)
    if hasattr(torch, method):
        t = tg.tensor(x)
        assert getattr(tg, method)(t, *args) is t
        np.testing.assert_allclose(t.numpy(), results[1][2], rtol=1e-6)


def test_in_place_errors_match_torch(torch):
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                               "output type Long"):
            lib.tensor([1, 2]).exp_()
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            lib.tensor([1.0], requires_grad=True).exp_()
        with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the "
                                               r"broadcast shape \[2, 2\]"):
            lib.ones(2).pow_(lib.ones(2, 2))


def test_in_place_plain_values():
    t = tg.tensor([-1.0, 4.0])
    t.abs_().sqrt_()
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    ints = tg.tensor([-3, 2])
    assert ints.neg_() is ints and ints.tolist() == [3, -2] and ints.dtype == tg.int64
    assert tg.clamp_(tg.tensor([-2.0, 0.3, 2.0]), -1, 1).tolist() == pytest.approx([-1.0, 0.3, 1.0])


def test_in_place_inverse_hyperbolic_values(torch):
    # PyTorch has no derivative for asinh_/acosh_/atanh_; compare values without recording
    x = RNG.uniform(1.1, 3.0, 5)
    for method in ("asinh_", "acosh_", "arctanh_"):
        ours, theirs = tg.tensor(x / 4), torch.tensor(x / 4)
        if method == "acosh_":
            ours, theirs = tg.tensor(x), torch.tensor(x)
        getattr(ours, method)()
        getattr(theirs, method)()
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-7)
