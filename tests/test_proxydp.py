"""What the session-42 proxy of public neural-process and probabilistic meta-regression scripts
(conditional / latent / attentive neural processes, Set Transformers, mixture density networks,
GP-like regressors, conformal intervals, calibration curves) found tapegrad doing differently
from PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _zero_signs(array):
    """Where an array holds -0.0 (the printed `-0.`)."""
    array = np.asarray(array)
    return (array == 0) & np.signbit(array.real)


# -- cholesky_inverse: LAPACK potri's signed zeros -----------------------------------------------

_FACTORS = [
    np.eye(2), np.eye(4), np.diag([2.0, 3.0, 4.0]),
    np.array([[2.0, 0, 0], [1.0, 3, 0], [0, 0, 4]]),
    np.array([[2.0, 0, 0, 0], [0, 3, 0, 0], [1, 0, 4, 0], [0, 2, 0, 5]]),
    np.array([[1.0, 0, 0], [0, 1, 0], [-1, 0, 1]]),
    np.array([[1.0, 0, 0], [-0.0, 1, 0], [-0.0, -0.0, 1]]),
]


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("index", range(len(_FACTORS)))
def test_cholesky_inverse_zeros_carry_lapacks_sign(index, dtype, upper):
    # PyTorch's potri leaves -0. in the last row and column of the inverse of a diagonal factor
    # (and wherever its sums hold only -0. terms); two triangular solves gave +0. everywhere
    lower = _FACTORS[index].astype(dtype)
    factor = lower.T.copy() if upper else lower
    theirs = torch.cholesky_inverse(torch.tensor(factor), upper=upper).numpy()
    ours = tg.cholesky_inverse(tg.tensor(factor), upper=upper).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    np.testing.assert_array_equal(_zero_signs(ours), _zero_signs(theirs))


def test_cholesky_inverse_batched_and_complex_values_match():
    rs = np.random.RandomState(0)
    batch = np.tril(rs.randn(3, 4, 4)) + 3 * np.eye(4)
    for upper in (False, True):
        factor = np.swapaxes(batch, -1, -2).copy() if upper else batch
        np.testing.assert_allclose(tg.cholesky_inverse(tg.tensor(factor), upper=upper).numpy(),
                                   torch.cholesky_inverse(torch.tensor(factor), upper=upper).numpy(),
                                   rtol=1e-12)
    lower = np.tril(rs.randn(3, 3) + 1j * rs.randn(3, 3))
    np.fill_diagonal(lower, [2.0, 3.0, 1.5])
    np.testing.assert_allclose(tg.cholesky_inverse(tg.tensor(lower)).numpy(),
                               torch.cholesky_inverse(torch.tensor(lower)).numpy(), rtol=1e-12)
    # the result is column-major, as PyTorch's LAPACK output
    assert tg.cholesky_inverse(tg.eye(3)).stride() == torch.cholesky_inverse(torch.eye(3)).stride()


def test_cholesky_inverse_gradient(gradcheck):
    rs = np.random.RandomState(1)
    lower = np.tril(rs.randn(3, 3)) + 3 * np.eye(3)
    weights = rs.randn(3, 3)
    gradcheck(lambda l: tg.cholesky_inverse(l.tril()) * tg.tensor(weights), lower)
    gradcheck(lambda u: tg.cholesky_inverse(u.triu(), upper=True) * tg.tensor(weights), lower.T)
    assert tg.autograd.gradgradcheck(lambda l: tg.cholesky_inverse(l.tril()),
                                     (tg.tensor(lower, requires_grad=True),))
    assert type(tg.cholesky_inverse(tg.tensor(lower, requires_grad=True)).grad_fn).__name__ \
        == "CholeskyInverseBackward0"


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("factor, message", [
    ([[0.0]], "The diagonal element 1 is zero"),
    ([[2.0, 0.0], [0.0, 0.0]], "The diagonal element 2 is zero"),
    ([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, -0.0]]],
     r"\(Batch element 1\): The diagonal element 2 is zero"),
])
def test_cholesky_inverse_of_a_singular_factor_raises(factor, message, upper):
    # potri reports a zero pivot and PyTorch raises; tapegrad returned inf and nan silently
    for lib in (torch, tg):
        with pytest.raises(lib.linalg.LinAlgError, match="cholesky_inverse: " + message):
            lib.cholesky_inverse(lib.tensor(factor), upper=upper)


def test_cholesky_inverse_of_empty_and_subnormal_factors():
    for shape in [(0, 0), (2, 0, 0), (0, 2, 2), (3, 0, 2, 2)]:
        assert tg.cholesky_inverse(tg.zeros(shape)).shape == torch.Size(shape)
    tiny = [[1.0, 0.0], [0.0, 1e-45]]                    # (an inf, not an error, and no warning)
    with np.errstate(all="raise"):
        ours = tg.cholesky_inverse(tg.tensor(tiny)).numpy()
    np.testing.assert_array_equal(ours, torch.cholesky_inverse(torch.tensor(tiny)).numpy())


def test_multivariate_normal_precision_matrix_prints_as_pytorch():
    # the GP tutorial's print(mvn.precision_matrix) of a diagonal covariance shows -0.
    printed = [str(lib.distributions.MultivariateNormal(lib.zeros(2), lib.eye(2) * 4)
                   .precision_matrix) for lib in (torch, tg)]
    assert printed[1] == printed[0]
    assert "-0.0000" in printed[0]


# -- MixtureSameFamily's argument errors ---------------------------------------------------------

def test_mixture_same_family_component_error_message():
    for lib in (torch, tg):
        D = lib.distributions
        with pytest.raises(ValueError, match="The Component distribution needs to be an instance "
                                             "of torch.distributions.Distribution"):
            D.MixtureSameFamily(D.Categorical(logits=lib.zeros(3)), lib.zeros(3))


# -- a builtin called without a required argument: PyTorch's parser's words ---------------------

_MISSING_ARGUMENT_CALLS = [
    "lib.logsumexp(x)", "x.logsumexp()", "lib.cumsum(x)", "x.cumprod()", "lib.logcumsumexp(x)",
    "lib.kthvalue(x)", "x.kthvalue()", "x.topk()", "x.chunk()", "x.roll()", "lib.cummax(x)",
    "x.scatter_add(0, lib.zeros(1, 2, dtype=lib.long))", "x.renorm(2, 0)", "lib.histc()",
]


@pytest.mark.parametrize("call", _MISSING_ARGUMENT_CALLS)
def test_missing_argument_of_a_builtin_in_the_parsers_words(call):
    # 'cumsum() missing 1 required positional arguments: "dim"'; tapegrad said Python's
    # "... argument: 'dim'" (and logsumexp(x) "argument 'dim' must be tuple of ints, not NoneType")
    messages = []
    for lib in (torch, tg):
        x = lib.ones(3, 2)
        with pytest.raises(TypeError) as caught:
            eval(call, {"lib": lib, "x": x})
        messages.append(str(caught.value))
    assert messages[1] == messages[0]


def test_python_level_functions_keep_pythons_words_and_logsumexp_keeps_its_none_error():
    for lib in (torch, tg):
        with pytest.raises(TypeError, match="missing 2 required positional arguments: 'target' "
                                            "and 'var'"):
            lib.nn.functional.gaussian_nll_loss(lib.ones(2))
        with pytest.raises(TypeError, match=r"logsumexp\(\): argument 'dim' \(position 2\) must "
                                            "be tuple of ints, not NoneType"):
            lib.logsumexp(lib.ones(2), None)
    assert float(tg.logsumexp(tg.zeros(2), axis=0)) == pytest.approx(np.log(2.0))
