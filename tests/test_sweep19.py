"""Leftovers of two sweeps (sweep 19): refusals where PyTorch computes, computations where
PyTorch refuses, and empty edge cases; each checked against torch."""
import numpy as np
import pytest

import tapegrad
import tapegrad.nn.functional as F

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402


def _close(want, got, rtol=1e-7, atol=1e-9):
    assert str(got.dtype) == str(want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().resolve_conj().numpy(),
                               rtol=rtol, atol=atol)


# -- two Python numbers: every overload of these takes a Tensor ------------------------------

TWO_NUMBER_REFUSALS = [
    ("pow", lambda lib: lib.pow),
    ("remainder", lambda lib: lib.remainder),
    ("xlogy", lambda lib: lib.xlogy),
    ("float_power", lambda lib: lib.float_power),
    ("xlog1py", lambda lib: lib.special.xlog1py),
    ("clamp_max", lambda lib: lib.clamp_max),
    ("clamp_min", lambda lib: lib.clamp_min),
    ("zeta", lambda lib: lib.special.zeta),
]


@pytest.mark.parametrize("name,get", TWO_NUMBER_REFUSALS, ids=[n for n, _ in TWO_NUMBER_REFUSALS])
def test_two_numbers_are_refused_as_torch(name, get):
    with pytest.raises(TypeError):
        get(torch)(2, 3)
    with pytest.raises(TypeError):
        get(tapegrad)(2, 3)


@pytest.mark.parametrize("name,get", TWO_NUMBER_REFUSALS[:5], ids=[n for n, _ in
                                                                  TWO_NUMBER_REFUSALS[:5]])
def test_a_number_beside_a_tensor_still_computes(name, get):
    for a, b in ((2, 3.0), (2.0, 3)):
        want = get(torch)(torch.tensor(a), b)
        _close(want, get(tapegrad)(tapegrad.tensor(a), b))
        want = get(torch)(a, torch.tensor(b))
        _close(want, get(tapegrad)(a, tapegrad.tensor(b)))


# -- empty edge cases --------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(0,), (2, 0)])
def test_gather_of_an_empty_index_checks_neither_dtype_nor_shape(shape):
    x_t = torch.ones(5, requires_grad=True)
    x_g = tapegrad.ones(5, requires_grad=True)
    want = torch.gather(x_t, 0, torch.zeros(shape, dtype=torch.uint8))
    got = tapegrad.gather(x_g, 0, tapegrad.zeros(shape, dtype=tapegrad.uint8))
    _close(want, got)
    assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__ == "GatherBackward0"
    want.sum().backward()
    got.sum().backward()
    _close(x_t.grad, x_g.grad)
    with pytest.raises(IndexError):
        tapegrad.gather(x_g, 3, tapegrad.zeros(shape, dtype=tapegrad.uint8))


def test_batch_norm_of_a_1d_input_has_no_channels():
    want = TF.batch_norm(torch.ones(0), torch.ones(0), torch.ones(0), None, None, training=False)
    got = F.batch_norm(tapegrad.ones(0), tapegrad.ones(0), tapegrad.ones(0), None, None,
                       training=False)
    _close(want, got)
    with pytest.raises(RuntimeError, match="running_mean should contain 0 elements not 3"):
        TF.batch_norm(torch.ones(3), torch.zeros(3), torch.ones(3))
    with pytest.raises(RuntimeError, match="running_mean should contain 0 elements not 3"):
        F.batch_norm(tapegrad.ones(3), tapegrad.zeros(3), tapegrad.ones(3))
    with pytest.raises(IndexError):
        TF.batch_norm(torch.ones(3), torch.ones(0), torch.ones(0))
    with pytest.raises(IndexError):
        F.batch_norm(tapegrad.ones(3), tapegrad.ones(0), tapegrad.ones(0))


# -- complex inputs PyTorch computes -----------------------------------------------------------

def _complex_grads(fn_t, fn_g, array, weights):
    """Values and the gradient of a real loss (sum of re/im parts times weights) in both."""
    x_t = torch.tensor(array, requires_grad=True)
    x_g = tapegrad.tensor(array, requires_grad=True)
    y_t, y_g = fn_t(x_t), fn_g(x_g)
    _close(y_t, y_g)
    w = np.asarray(weights)
    (torch.view_as_real(y_t) * torch.tensor(w)).sum().backward()
    (tapegrad.view_as_real(y_g) * tapegrad.tensor(w)).sum().backward()
    _close(x_t.grad, x_g.grad)


def test_logcumsumexp_of_complex_matches_torch():
    rng = np.random.default_rng(19)
    array = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    array[0, 1] += 40          # (a large real part: the running sum must not lose the small ones)
    weights = rng.standard_normal((3, 4, 2))
    for dim in (0, 1, -1):
        _complex_grads(lambda x: torch.logcumsumexp(x, dim),
                       lambda x: tapegrad.logcumsumexp(x, dim), array, weights)
    _close(torch.logcumsumexp(torch.tensor([1 + 1j, 2 - 1j]), 0),
           tapegrad.logcumsumexp(tapegrad.tensor([1 + 1j, 2 - 1j]), 0))
    c64 = np.array([1 + 1j, 2 - 1j, -3j], dtype=np.complex64)
    _close(torch.logcumsumexp(torch.tensor(c64), 0), tapegrad.logcumsumexp(tapegrad.tensor(c64), 0),
           rtol=1e-5, atol=1e-6)


def test_rms_norm_of_complex_matches_torch():
    rng = np.random.default_rng(191)
    array = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    weights = rng.standard_normal((2, 3, 2))
    _complex_grads(lambda x: TF.rms_norm(x, [3]), lambda x: F.rms_norm(x, [3]), array, weights)
    _complex_grads(lambda x: TF.rms_norm(x, [2, 3], eps=0.5),
                   lambda x: F.rms_norm(x, [2, 3], eps=0.5), array, weights)
    w = np.array([1.0, 2.0, 3.0])
    _complex_grads(lambda x: TF.rms_norm(x, [3], weight=torch.tensor(w)),
                   lambda x: F.rms_norm(x, [3], weight=tapegrad.tensor(w)), array, weights)
    _close(TF.rms_norm(torch.tensor([1 + 1j, 2, 3j]), [3]),
           F.rms_norm(tapegrad.tensor([1 + 1j, 2, 3j]), [3]), rtol=1e-6, atol=1e-7)


# -- requires_grad of outputs PyTorch records --------------------------------------------------

def test_slogdet_sign_is_recorded_as_torch():
    for lib in (torch, tapegrad):
        A = lib.zeros(0, 0, requires_grad=True)
        sign, logabsdet = lib.linalg.slogdet(A)
        assert sign.requires_grad and logabsdet.requires_grad
        assert type(sign.grad_fn).__name__ == "LinalgSlogdetBackward0"
    array = [[1.0, 2.0], [3.0, 5.0]]
    A_t = torch.tensor(array, dtype=torch.float64, requires_grad=True)
    A_g = tapegrad.tensor(array, dtype=tapegrad.float64, requires_grad=True)
    (lambda s, l: (s * l).sum().backward())(*torch.linalg.slogdet(A_t))
    (lambda s, l: (s * l).sum().backward())(*tapegrad.linalg.slogdet(A_g))
    _close(A_t.grad, A_g.grad)


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape", [(3, 2), (2, 3)])
def test_lstsq_residuals_require_grad_as_torch(driver, shape):
    rng = np.random.default_rng(7)
    a = rng.standard_normal(shape)
    b = rng.standard_normal((shape[0], 2))
    want = torch.linalg.lstsq(torch.tensor(a, requires_grad=True), torch.tensor(b),
                              driver=driver)
    got = tapegrad.linalg.lstsq(tapegrad.tensor(a, requires_grad=True), tapegrad.tensor(b),
                                driver=driver)
    for field in ("solution", "residuals", "singular_values"):
        _close(getattr(want, field), getattr(got, field))
        assert getattr(got, field).requires_grad == getattr(want, field).requires_grad, field
    assert not tapegrad.linalg.lstsq(tapegrad.tensor(a), tapegrad.tensor(b),
                                     driver=driver).residuals.requires_grad


@pytest.mark.parametrize("shape", [(0, 0), (2, 0), (3, 2)])
def test_householder_product_without_reflectors_is_recorded(shape):
    for lib in (torch, tapegrad):
        A = lib.zeros(*shape, requires_grad=True)
        Q = lib.linalg.householder_product(A, lib.zeros(0, requires_grad=True))
        assert Q.requires_grad
        assert type(Q.grad_fn).__name__ == "LinalgHouseholderProductBackward0"
        _close(torch.eye(*shape), torch.tensor(Q.detach().numpy()))


# -- two Python numbers where PyTorch computes: its dtypes (the default float, not float64) ----

TWO_NUMBER_OPS = [
    ("add", lambda lib: lib.add), ("sub", lambda lib: lib.sub), ("mul", lambda lib: lib.mul),
    ("div", lambda lib: lib.div), ("true_divide", lambda lib: lib.true_divide),
    ("divide", lambda lib: lib.divide), ("multiply", lambda lib: lib.multiply),
    ("subtract", lambda lib: lib.subtract),
    ("div_floor", lambda lib: lambda a, b: lib.div(a, b, rounding_mode="floor")),
    ("divide_trunc", lambda lib: lambda a, b: lib.divide(a, b, rounding_mode="trunc")),
]


@pytest.mark.parametrize("name,get", TWO_NUMBER_OPS, ids=[n for n, _ in TWO_NUMBER_OPS])
@pytest.mark.parametrize("a,b", [(7, 2), (7.0, 2), (7, 2.5), (True, 2), (-7.5, 2.0)])
def test_two_numbers_compute_as_torch(name, get, a, b):
    try:
        want = get(torch)(a, b)
    except RuntimeError:                    # (a bool subtracted: both refuse)
        with pytest.raises(RuntimeError, match="Subtraction"):
            get(tapegrad)(a, b)
        return
    _close(want, get(tapegrad)(a, b))
