"""What the session-32 proxy of public probabilistic / Bayesian deep-learning scripts (Gaussian
processes by hand, MMD, Sinkhorn, HMC, Bayes by backprop, mixture density networks) found
tapegrad doing differently from PyTorch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


# -- cdist / pdist: the row kernel's p = 2 derivative ------------------------------------------

def _grid(lib, requires_grad=True):
    return lib.arange(6.0).view(3, 2).requires_grad_(requires_grad)


def test_cdist_squared_gradient_rounds_as_the_kernel():
    # PyTorch's kernel gives grad * diff / dist: the gradient of a squared distance of points on
    # a grid is a whole number there (the norm's diff * (grad / dist) was one ulp off: -23.9999981)
    got = []
    for lib in (torch, tg):
        x = _grid(lib)
        (g,) = lib.autograd.grad((lib.cdist(x, x) ** 2).sum(), x)
        got.append(g.numpy())
    np.testing.assert_array_equal(got[1], got[0])
    np.testing.assert_array_equal(got[1], [[-24.0, -24.0], [0.0, 0.0], [24.0, 24.0]])
    _check_cdist_gradient_is_zero_at_coincident_rows_and_twice_differentiable()
    _check_cdist_keeps_its_grad_fn_name()


def test_pdist_squared_gradient_rounds_as_the_kernel():
    got = []
    for lib in (torch, tg):
        x = _grid(lib)
        (g,) = lib.autograd.grad((lib.nn.functional.pdist(x) ** 2).sum(), x)
        got.append(g.numpy())
    np.testing.assert_array_equal(got[1], got[0])


def _check_cdist_gradient_is_zero_at_coincident_rows_and_twice_differentiable():
    x = tg.tensor([[0.0, 1.0], [2.0, 3.0]], dtype=tg.float64, requires_grad=True)
    y = tg.tensor([[0.0, 1.0], [1.0, -1.0], [0.5, 0.5]], dtype=tg.float64, requires_grad=True)
    (gx,) = tg.autograd.grad(tg.cdist(x, y)[0, 0], x)      # rows 0 of x and y coincide
    np.testing.assert_array_equal(gx.numpy(), np.zeros((2, 2)))
    xt = torch.tensor(x.detach().numpy(), requires_grad=True)
    yt = torch.tensor(y.detach().numpy(), requires_grad=True)
    want = torch.autograd.grad(torch.cdist(xt, yt).sum(), (xt, yt))
    have = tg.autograd.grad(tg.cdist(x, y).sum(), (x, y))
    for h, w in zip(have, want):
        np.testing.assert_allclose(h.numpy(), w.numpy(), rtol=1e-12, atol=1e-15)
    x2 = tg.tensor([[0.3, 1.0], [2.0, -3.0]], dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(lambda a, b: tg.cdist(a, b), (x2, y))
    # (PyTorch refuses a second derivative here; tapegrad's is right)
    assert tg.autograd.gradgradcheck(lambda a, b: tg.cdist(a, b), (x2, y))
    assert tg.autograd.gradgradcheck(lambda a: tg.nn.functional.pdist(a), (x2,))


def _check_cdist_keeps_its_grad_fn_name():
    x = _grid(tg)
    assert type(tg.cdist(x, x + 1).grad_fn).__name__ == "CdistBackward0"
    with tg.no_grad():
        assert tg.cdist(x, x + 1).grad_fn is None


# -- Distribution.sample_n: deprecated in PyTorch, which warns -----------------------------------

def test_sample_n_warns_future_warning():
    for lib in (torch, tg):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            s = lib.distributions.Normal(lib.zeros(2), 1.0).sample_n(3)
        assert tuple(s.shape) == (3, 2)
        assert [w.category for w in caught] == [FutureWarning]
        assert "`sample_n(n)` will be deprecated. Use `sample((n,))` instead." in str(caught[0].message)
        assert caught[0].filename == __file__


# -- grad_fn names of the triangular / Cholesky helpers of hand-written GPs --------------------

def _names(lib):
    A = (lib.eye(3) * 2 + 0.1 * lib.ones(3, 3)).requires_grad_()
    L = lib.linalg.cholesky(A).detach().requires_grad_()
    b = lib.ones(3, 2, requires_grad=True)
    name = lambda t: type(t.grad_fn).__name__
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = lib.triangular_solve(b, L, upper=False)
        ts_t = lib.triangular_solve(b, L, upper=False, transpose=True)
        return [name(ts.solution), name(ts.cloned_coefficient), name(ts_t.solution),
                name(lib.cholesky_inverse(L)), name(lib.cholesky_inverse(L.mT, upper=True)),
                name(lib.linalg.cholesky(A, upper=True)), name(lib.cholesky(A, upper=True)),
                name(lib.linalg.cholesky_ex(A, upper=True).L),
                name(lib.linalg.solve_triangular(L, b.mT, upper=False, left=False)),
                name(lib.linalg.solve_triangular(L, b, upper=False))]


def test_linalg_grad_fn_names_match():
    assert _names(tg) == _names(torch)
    _check_renamed_linalg_results_keep_their_gradients()


def _check_renamed_linalg_results_keep_their_gradients():
    rs = np.random.RandomState(3)
    a = rs.randn(3, 3)
    spd = a @ a.T + 3 * np.eye(3)
    b = rs.randn(2, 3)
    for upper in (False, True):
        grads = []
        for lib in (torch, tg):
            A = lib.tensor(spd, requires_grad=True)
            B = lib.tensor(b, requires_grad=True)
            U = lib.linalg.cholesky(A, upper=upper)
            X = lib.linalg.solve_triangular(U, B, upper=upper, left=False)
            inv = lib.cholesky_inverse(U, upper=upper)
            loss = (X ** 2).sum() + (inv * lib.tensor(b.T @ b)).sum()
            grads.append([g.numpy() for g in lib.autograd.grad(loss, (A, B))])
        for h, w in zip(grads[1], grads[0]):
            np.testing.assert_allclose(h, w, rtol=1e-10, atol=1e-12)
    L = tg.linalg.cholesky(tg.tensor(spd)).requires_grad_()
    bb = tg.tensor(b.T, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (triangular_solve's deprecation)
        assert tg.autograd.gradcheck(
            lambda l, y: tg.triangular_solve(y, l, upper=False).solution, (L, bb))


# -- TanhTransform (SAC-style squashed Gaussians): the inverse is atanh itself ------------------

def test_tanh_transform_inverse_is_atanh():
    ys = np.linspace(-0.999, 0.999, 4001).astype(np.float32)
    want = torch.distributions.transforms.TanhTransform().inv(torch.tensor(ys)).numpy()
    have = tg.distributions.transforms.TanhTransform().inv(tg.tensor(ys)).numpy()
    # (atanh's own kernel still differs from PyTorch's SLEEF one in the last place now and then;
    # the log1p form of the same function rounded differently in a quarter of these inputs)
    assert np.mean(have == want) > 0.99
    np.testing.assert_allclose(have, want, rtol=2e-7)
    for lib in (torch, tg):
        y = lib.tensor([-1.0, 1.0, 0.5, 0.0], dtype=lib.float64, requires_grad=True)
        x = lib.distributions.transforms.TanhTransform().inv(y)
        (g,) = lib.autograd.grad(x.sum(), y)
        np.testing.assert_array_equal(x.detach().numpy()[:2], [-np.inf, np.inf])
        np.testing.assert_allclose(g.numpy(), [np.inf, np.inf, 4 / 3, 1.0])
    td = lambda loc, scale: tg.distributions.TransformedDistribution(
        tg.distributions.Normal(loc, scale), [tg.distributions.transforms.TanhTransform()]
    ).log_prob(tg.tensor([0.2, -0.7], dtype=tg.float64))
    loc = tg.tensor([0.3, -0.2], dtype=tg.float64, requires_grad=True)
    scale = tg.tensor([0.9, 1.3], dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(td, (loc, scale))


# -- old SGLD optimizers: torch.optim.optimizer's private helpers, the scalar-first add_ --------

def test_use_grad_for_differentiable_and_private_optimizer_helpers():
    from tapegrad.optim.optimizer import (Optimizer, _default_to_fused_or_foreach, _get_scalar_dtype,
                                          _get_value, _use_grad_for_differentiable)
    seen = []

    class Langevin(Optimizer):
        def __init__(self, params, lr, differentiable=False):
            super().__init__(params, dict(lr=lr, differentiable=differentiable))

        @_use_grad_for_differentiable
        def step(self):
            """my step"""
            seen.append(tg.is_grad_enabled())
            for group in self.param_groups:
                for p in group["params"]:
                    p.add_(p.grad, alpha=-group["lr"])

    p = tg.nn.Parameter(tg.tensor([1.0, -2.0]))
    opt = Langevin([p], lr=0.25)
    (p ** 2).sum().backward()
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.5, -1.0])
    assert seen == [False] and tg.is_grad_enabled()
    assert Langevin.step.__doc__ == "my step"
    q = tg.tensor([1.0], requires_grad=True)
    r = q.clone()                              # a non-leaf parameter: its update is recorded
    r.grad = tg.tensor([2.0])
    Langevin([r], lr=0.5, differentiable=True).step()
    assert seen[-1] is True and r.grad_fn is not None
    assert _get_value(tg.tensor(3.0)) == 3.0 and _get_value(2) == 2
    assert _get_scalar_dtype() == tg.float32
    assert _default_to_fused_or_foreach([p], False) == (False, False)
    for lib in (torch, tg):
        from importlib import import_module
        mod = import_module(lib.__name__ + ".optim.optimizer")
        assert mod._get_scalar_dtype() == lib.float32
        assert mod._default_to_fused_or_foreach([lib.zeros(1)], False) == (False, False)


def test_scalar_first_inplace_add_warns_method_signature_at_the_calling_line():
    from tapegrad import _deprecated_overloads
    _deprecated_overloads._warned.clear()       # (PyTorch, and tapegrad, warn once per process)
    p = tg.zeros(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p.add_(-0.5, tg.ones(2)); line = _line()
    np.testing.assert_array_equal(p.numpy(), [-0.5, -0.5])
    # PyTorch's words for the method form (no input, no out)
    assert [str(w.message) for w in caught] == [
        "This overload of add_ is deprecated:\n\tadd_(Number alpha, Tensor other)\nConsider using "
        "one of the following signatures instead:\n\tadd_(Tensor other, *, Number alpha = 1) "
        "(Triggered internally at /__w/pytorch/pytorch/torch/csrc/utils/python_arg_parser.cpp:1841.)"]
    assert (caught[0].filename, caught[0].lineno) == (__file__, line)
    _deprecated_overloads._warned.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tg.add(tg.ones(2), 3, tg.ones(2)); line = _line()
    assert str(caught[0].message).startswith(
        "This overload of add is deprecated:\n\tadd(Tensor input, Number alpha, Tensor other, *, "
        "Tensor out = None)")
    assert (caught[0].filename, caught[0].lineno) == (__file__, line)


def _line():
    import sys
    return sys._getframe(1).f_lineno
