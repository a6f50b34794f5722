"""Faults found by replaying PyTorch's own torch.distributions test examples (EXAMPLES,
BAD_EXAMPLES, TestKL's pairs, test_transforms.py, test_constraints.py) against tapegrad
(sweep 22); each case is written out explicitly and checked against torch."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _both(build):
    """build(lib) evaluated with torch and with tapegrad."""
    return build(torch), build(tapegrad)


# -- constraint bounds print as PyTorch formats them: a 0-d tensor as its Python number (an
#    integer stays an integer), any other tensor in full, shape (1,) included (a one-element
#    tensor printed as a float, an integer bound as 3.0) ---------------------------------------

@pytest.mark.parametrize("build", [
    lambda lib: lib.distributions.Uniform(lib.zeros(1, requires_grad=True),
                                          lib.ones(1, requires_grad=True)).support,
    lambda lib: lib.distributions.Uniform(lib.zeros(1, dtype=lib.float64),
                                          lib.ones(1, dtype=lib.float64)).support,
    lambda lib: lib.distributions.Pareto(lib.tensor([1.0]), 1.0).support,
    lambda lib: lib.distributions.Pareto(lib.tensor(1.5), 1.0).support,
    lambda lib: lib.distributions.Pareto(1.0, 1.0).support,
    lambda lib: lib.distributions.constraints.integer_interval(0, lib.tensor(3)),
    lambda lib: lib.distributions.constraints.greater_than(lib.tensor(2.0)),
    lambda lib: lib.distributions.constraints.less_than(lib.tensor([-1.0, 2.0])),
    lambda lib: lib.distributions.constraints.interval(0, 1),
    lambda lib: lib.distributions.constraints.half_open_interval(-2.5, lib.tensor(1)),
])
def test_constraint_bound_repr(build):
    want, got = _both(build)
    assert repr(got) == repr(want)


def test_bad_uniform_message_shows_tensor_bound():
    def message(lib):
        with pytest.raises(ValueError) as info:
            lib.distributions.Uniform(lib.tensor([2.0]), lib.tensor([2.0]), validate_args=True)
        return str(info.value)
    want, got = _both(message)
    assert "LessThan(upper_bound=tensor([2.]))" in want
    assert got == want


# -- KL(Pareto || Exponential / Gamma / Chi2 / Normal) where Pareto's mean (variance for Normal)
#    is infinite: the entry is inf and sends no gradient, as in PyTorch (SILENT: computed from
#    the infinite moments it sent inf, -inf or arbitrary finite gradients to p and q) ----------

_Q_FAMILIES = {
    "Exponential": lambda lib, t: lib.distributions.Exponential(t([0.5, 1.0, 2.0, 1.5])),
    "Gamma": lambda lib, t: lib.distributions.Gamma(t([2.0, 1.0, 0.5, 3.0]), t([1.0, 2.0, 0.7, 1.0])),
    "Chi2": lambda lib, t: lib.distributions.Chi2(t([2.0, 1.0, 0.5, 3.0])),
    "Normal": lambda lib, t: lib.distributions.Normal(t([0.5, -1.0, 2.0, 0.0]), t([1.0, 2.0, 0.7, 3.0])),
}


@pytest.mark.parametrize("family", sorted(_Q_FAMILIES))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_kl_pareto_heavy_tail_gradients(family, dtype):
    def run(lib):
        leaves = []

        def t(values):
            leaves.append(lib.tensor(values, dtype=getattr(lib, dtype), requires_grad=True))
            return leaves[-1]
        # alpha <= 1 (no mean), 1 < alpha <= 2 (no variance), and finite moments
        # (PyTorch's formulas give NaN gradients at exactly alpha == 1 or 2: avoided)
        p = lib.distributions.Pareto(t([1.0, 0.5, 2.0, 1.5]), t([0.5, 1.5, 3.0, 0.9]))
        q = _Q_FAMILIES[family](lib, t)
        kl = lib.distributions.kl_divergence(p, q)
        grads = lib.autograd.grad(kl.sum(), leaves)
        return kl.detach().numpy(), [g.numpy() for g in grads]
    (want, want_grads), (got, got_grads) = _both(run)
    tol = dict(rtol=1e-6, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, **tol)
    for g, w in zip(got_grads, want_grads):
        np.testing.assert_allclose(g, w, **tol)


# -- positive_definite / positive_semidefinite check of non-square matrices: False, as PyTorch
#    (raised numpy's broadcasting ValueError) ---------------------------------------------------

@pytest.mark.parametrize("name", ["positive_definite", "positive_semidefinite", "symmetric"])
@pytest.mark.parametrize("shape", [(4, 5), (3, 2, 4), (2, 3, 1)])
def test_matrix_constraints_non_square(name, shape):
    value = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    want, got = _both(lambda lib: getattr(lib.distributions.constraints, name).check(lib.tensor(value)))
    assert str(got.dtype) == str(want.dtype)
    assert got.shape == want.shape
    assert got.tolist() == want.tolist()


# -- CatTransform / StackTransform refuse a wrong size or dim with PyTorch's AssertionError and
#    message (raised ValueError) ----------------------------------------------------------------

def _cat(lib):
    T = lib.distributions.transforms
    return T.CatTransform([T.ExpTransform(), T.AffineTransform(1, 2)], dim=1, lengths=[2, 3])


def _stack(lib):
    T = lib.distributions.transforms
    return T.StackTransform([T.ExpTransform(), T.SigmoidTransform()], dim=1)


@pytest.mark.parametrize("make", [_cat, _stack])
@pytest.mark.parametrize("call", ["forward", "inverse", "ladj"])
@pytest.mark.parametrize("shape", [(4, 6), (4,), (4, 3, 3)])
def test_cat_stack_transform_size_errors(make, call, shape):
    value = np.linspace(0.1, 0.9, int(np.prod(shape))).reshape(shape)

    def message(lib):
        t, x = make(lib), lib.tensor(value)
        with pytest.raises(AssertionError) as info:
            if call == "forward":
                t(x)
            elif call == "inverse":
                t.inv(x)
            else:
                t.log_abs_det_jacobian(x, x)
        return str(info.value)
    want, got = _both(message)
    if call == "ladj":
        # PyTorch names the argument ("for x with"); the size message is the same
        assert got.split(" = ")[0] == want.split(" = ")[0] or "out of range" in want
    else:
        assert got == want


@pytest.mark.parametrize("make", [_cat, _stack])
def test_cat_stack_transform_valid_values(make):
    value = np.linspace(0.1, 0.9, 20).reshape(4, 5)[:, :5 if make is _cat else 2]

    def run(lib):
        t, x = make(lib), lib.tensor(value, requires_grad=True)
        y = t(x)
        ladj = t.log_abs_det_jacobian(x, y)
        grad, = lib.autograd.grad((y.sum() + ladj.sum()), x)
        return y.detach().numpy(), t.inv(y).detach().numpy(), ladj.detach().numpy(), grad.numpy()
    for w, g in zip(*_both(run)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


# -- positive_definite decides as PyTorch does, by whether the Cholesky factorisation succeeds
#    (it compared the smallest eigenvalue with 0: the singular [[2, 2], [2, 2]], which LAPACK
#    factors, was refused, so Wishart.log_prob with validate_args raised where PyTorch computes)

@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("matrix", [
    [[2.0, 2.0], [2.0, 2.0]], [[1.0, 1.0], [1.0, 1.0]], [[1e-20, 0.0], [0.0, 1.0]],
    [[1.0, 0.0], [0.0, 0.0]], [[4.0, 2.0], [2.0, 1.000000001]], [[float("nan"), 0.0], [0.0, 1.0]],
    [[[1.0, 0.0], [0.0, 1.0]], [[2.0, 2.0], [2.0, 2.0]], [[1.0, 0.0], [0.0, -1.0]]],
    [[3.0]],
])
def test_positive_definite_check_is_cholesky(matrix, dtype):
    want, got = _both(lambda lib: lib.distributions.constraints.positive_definite.check(
        lib.tensor(matrix, dtype=getattr(lib, dtype))))
    assert got.tolist() == want.tolist()


def test_wishart_log_prob_validates_singular_as_torch():
    value = [[2.0, 2.0], [2.0, 2.0]]

    def run(lib):
        d = lib.distributions.Wishart(df=lib.tensor(3.0, dtype=lib.float64),
                                      covariance_matrix=lib.tensor([[5.0, -0.5], [-0.5, 1.5]],
                                                                   dtype=lib.float64),
                                      validate_args=True)
        return d.log_prob(lib.tensor(value, dtype=lib.float64)).item()
    want, got = _both(run)
    assert got == pytest.approx(want, nan_ok=True)


# -- Geometric(probs=0) with validation raises PyTorch's ValueError ("to be positive"): a success
#    probability of 0 never stops (it was accepted: mean and log_prob gave inf/NaN) -------------

@pytest.mark.parametrize("probs", [[0.0, 0.0], [0.3, 0.0, 0.2], 0.0, [[0.5], [0.0]]])
def test_geometric_zero_probs_refused(probs):
    def message(lib):
        value = lib.tensor(probs, requires_grad=True) if isinstance(probs, list) else probs
        with pytest.raises(ValueError) as info:
            lib.distributions.Geometric(probs=value)
        return str(info.value)
    want, got = _both(message)
    assert got == want


def test_geometric_zero_probs_without_validation_and_logits():
    def run(lib):
        a = lib.distributions.Geometric(probs=lib.zeros(2), validate_args=False).probs
        b = lib.distributions.Geometric(logits=lib.tensor([-1e4, 0.0]), validate_args=True).probs
        return a.tolist(), b.tolist()
    want, got = _both(run)
    assert got == want


# -- Wishart.rsample takes PyTorch's max_try_correction keyword (TypeError before) -------------

@pytest.mark.filterwarnings("ignore:Singular sample detected")   # PyTorch's, on every draw
@pytest.mark.parametrize("tries", [None, 0, 3])
def test_wishart_rsample_max_try_correction(tries):
    def run(lib):
        d = lib.distributions.Wishart(lib.tensor([3.0, 4.0]), lib.eye(2))
        return tuple(d.rsample((5,), max_try_correction=tries).shape)
    want, got = _both(run)
    assert got == want


# -- CorrCholeskyTransform.log_abs_det_jacobian takes PyTorch's (unused) intermediates argument --

def test_corr_cholesky_ladj_intermediates():
    x = np.linspace(-1.5, 1.5, 12).reshape(2, 6)

    def run(lib):
        t = lib.distributions.transforms.CorrCholeskyTransform()
        X = lib.tensor(x)
        return t.log_abs_det_jacobian(X, t(X), intermediates=None).numpy()
    want, got = _both(run)
    np.testing.assert_allclose(got, want, rtol=1e-12)


# -- HalfCauchy.log_prob reads the value in the scale's dtype, as PyTorch (a float64 value of a
#    float32 HalfCauchy gave a float64 density); HalfNormal keeps promoting -------------------

@pytest.mark.parametrize("family", ["HalfCauchy", "HalfNormal"])
@pytest.mark.parametrize("scale_dtype,value_dtype", [("float32", "float64"), ("float64", "float32"),
                                                     ("float32", "float32")])
def test_folded_log_prob_value_dtype(family, scale_dtype, value_dtype):
    def run(lib):
        scale = lib.tensor([[0.5], [2.0]], dtype=getattr(lib, scale_dtype), requires_grad=True)
        d = getattr(lib.distributions, family)(scale)
        out = d.log_prob(lib.tensor([0.25, 3.0, 0.0], dtype=getattr(lib, value_dtype)))
        grad, = lib.autograd.grad(out.sum(), scale)
        return str(out.dtype), out.detach().numpy(), grad.numpy()
    want, got = _both(run)
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-6)


# -- Gamma.cdf (and Chi2's) differentiates twice in the value and the rate as PyTorch's igamma
#    (SILENT: under create_graph its gradient was a constant, so a Hessian lost the cdf's part);
#    its values and gradients off the domain are PyTorch's (NaN for x < 0, inf/NaN/0 at x = 0)
#    and P(alpha, inf) no longer warns ----------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_gamma_cdf_second_derivative(dtype):
    def run(lib):
        f = getattr(lib, dtype)
        value = lib.tensor([0.5, 2.0, 3.5], dtype=f, requires_grad=True)
        rate = lib.tensor([1.5, 0.7, 2.0], dtype=f, requires_grad=True)
        gamma = lib.distributions.Gamma(lib.tensor([2.0, 3.0, 0.6], dtype=f), rate)
        chi2 = lib.distributions.Chi2(lib.tensor([3.0, 1.0, 5.0], dtype=f))
        out = gamma.cdf(value) + chi2.cdf(value) + (value * value).sum()
        g_value, g_rate = lib.autograd.grad(out.sum(), [value, rate], create_graph=True)
        hess = lib.autograd.grad((g_value * g_value).sum() + g_rate.sum(), [value, rate])
        return [t.detach().numpy() for t in (g_value, g_rate, *hess)]
    want, got = _both(run)
    tol = 1e-5 if dtype == "float32" else 1e-12
    for w, g in zip(want, got):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.filterwarnings("error")
def test_gamma_cdf_off_domain_values_and_gradients():
    def run(lib):
        value = lib.tensor([-1.0, 0.0, 0.0, 0.0, float("inf"), 0.7, 2.0], dtype=lib.float64,
                           requires_grad=True)
        conc = lib.tensor([2.0, 0.5, 1.0, 2.0, 2.0, 0.3, 4.0], dtype=lib.float64)
        d = lib.distributions.Gamma(conc, lib.tensor(1.0, dtype=lib.float64), validate_args=False)
        out = d.cdf(value)
        grad, = lib.autograd.grad(out.sum(), value)
        edge = lib.distributions.Gamma(lib.tensor([2.0, 0.0, -1.0, 0.0, 3.0]), 1.0,
                                       validate_args=False)
        return out.detach().numpy(), grad.numpy(), edge.cdf(
            lib.tensor([float("inf"), 1.0, 1.0, 0.0, float("nan")])).numpy()
    for w, g in zip(*_both(run)):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_gamma_rsample_second_derivative_raises_as_torch():
    def run(lib):
        conc = lib.tensor([2.0, 3.0], requires_grad=True)
        sample = lib.distributions.Gamma(conc, 1.0).rsample((4,))
        grad, = lib.autograd.grad(sample.sum(), conc, create_graph=True)
        assert grad.requires_grad
        with pytest.raises(NotImplementedError) as info:
            lib.autograd.grad(grad.sum(), conc)
        return str(info.value)
    want, got = _both(run)
    assert got == want


def test_gamma_cdf_concentration_gradient_second_derivative_raises():
    # PyTorch raises already at first order (tapegrad extends it with a numerical gradient);
    # a second derivative through it must raise, not treat it as constant
    conc = tapegrad.tensor([2.0, 3.0], dtype=tapegrad.float64, requires_grad=True)
    out = tapegrad.distributions.Gamma(conc, 1.0).cdf(tapegrad.tensor([1.0, 2.5]))
    grad, = tapegrad.autograd.grad(out.sum(), conc, create_graph=True)
    with pytest.raises(NotImplementedError, match="second derivative of Gamma.cdf"):
        tapegrad.autograd.grad(grad.sum(), conc)


# -- MultivariateNormal's repr names the given parameter after sampling, log_prob, entropy,
#    variance or a KL, as PyTorch's; scale_tril joins it only once read (it showed after any
#    sample or log_prob) ---------------------------------------------------------------------

@pytest.mark.parametrize("given", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_mvn_repr_after_use(given):
    matrix = [[2.0, 0.0], [0.3, 1.0]] if given == "scale_tril" else [[2.0, 0.3], [0.3, 1.0]]

    def run(lib):
        D = lib.distributions
        d = D.MultivariateNormal(lib.zeros(3, 2), **{given: lib.tensor(matrix)})
        d.sample((2,))
        d.rsample()
        d.log_prob(lib.zeros(2))
        d.entropy()
        d.variance
        D.kl_divergence(d, d)
        shown = [repr(d)]
        d.scale_tril
        shown.append(repr(d))
        d.covariance_matrix
        shown.append(repr(d))
        return shown
    want, got = _both(run)
    assert got == want
