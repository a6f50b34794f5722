"""bfloat16 compositions and refusals as PyTorch's (session 40).

Each case is checked against torch itself.  The silent ones: a composition computed on the
float32 storage and rounded once at the end rounded its last record's saved result in place,
so an extremum VJP (norm with p=+-inf, amax) found no element equal to it: zero or NaN gradients
(fuzz seed 65604069)."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

X = np.array([[0.7967843, 0.5292143, -1.47597], [0.95748, 1.0544, 0.73911]], dtype=np.float32)

CASES = {
    "pairwise_inf": lambda T, x: T.nn.functional.pairwise_distance(x[0], x[1], p=float("inf")),
    "pairwise_ninf": lambda T, x: T.nn.functional.pairwise_distance(x[0], x[1], p=-float("inf")),
    "pairwise_2": lambda T, x: T.nn.functional.pairwise_distance(x[:1], x[1:] * 1.3),
    "dist_inf": lambda T, x: T.dist(x[0], x[1] * 1.1, p=float("inf")),
    "matrix_norm_inf": lambda T, x: T.linalg.matrix_norm(x * 1.3, ord=float("inf")),
    "matrix_norm_1": lambda T, x: T.linalg.matrix_norm(x * 1.3, ord=1),
    "matrix_norm_ninf": lambda T, x: T.linalg.matrix_norm(x * 1.3, ord=-float("inf")),
    "amax_of_product": lambda T, x: (x * 1.37).amax(),
    "vector_norm_inf": lambda T, x: T.linalg.vector_norm(x * 1.3, float("inf")),
    "cosine_similarity": lambda T, x: T.nn.functional.cosine_similarity(x[:1], x[1:] * 1.3),
}


def _values_and_grad(T, name, dtype):
    x = T.tensor(X).to(dtype).requires_grad_()
    y = CASES[name](T, x)
    y.float().sum().backward()
    return y.float().detach().numpy(), x.grad.float().numpy()


@pytest.mark.parametrize("name", sorted(CASES))
def test_bfloat16_composition_values_and_gradients(name):
    want_y, want_g = _values_and_grad(torch, name, torch.bfloat16)
    got_y, got_g = _values_and_grad(tg, name, tg.bfloat16)
    np.testing.assert_array_equal(got_y, want_y)
    if name == "cosine_similarity":     # (its norm's backward computes in float32: an ulp)
        np.testing.assert_allclose(got_g, want_g, rtol=1e-2, atol=1e-2)
    else:
        np.testing.assert_array_equal(got_g, want_g)


@pytest.mark.parametrize("name", ["pairwise_inf", "matrix_norm_inf", "amax_of_product"])
def test_extremum_gradients_nonzero_float64_finite_differences(name):
    x = tg.tensor(X.astype(np.float64)).requires_grad_()
    CASES[name](tg, x).sum().backward()
    eps, fd = 1e-6, np.zeros(X.size)
    for i in range(X.size):
        for sign in (1, -1):
            a = X.astype(np.float64).ravel().copy()
            a[i] += sign * eps
            fd[i] += sign * CASES[name](tg, tg.tensor(a.reshape(X.shape))).sum().item()
    np.testing.assert_allclose(x.grad.numpy().ravel(), fd / (2 * eps), atol=1e-6)


def test_pairwise_distance_random_rows_bit_identical():
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((64, 16)).astype(np.float32) for _ in range(2))
    for p in (2.0, 1.0, float("inf")):
        (xt, yt), (xg, yg) = ((T.tensor(a).to(T.bfloat16).requires_grad_(),
                               T.tensor(b).to(T.bfloat16).requires_grad_()) for T in (torch, tg))
        rt = torch.nn.functional.pairwise_distance(xt, yt, p=p)
        rg = tg.nn.functional.pairwise_distance(xg, yg, p=p)
        rt.float().sum().backward()
        rg.float().sum().backward()
        np.testing.assert_array_equal(rg.float().detach().numpy(), rt.float().detach().numpy())
        np.testing.assert_array_equal(xg.grad.float().numpy(), xt.grad.float().numpy())
        assert rg.grad_fn.name() == rt.grad_fn.name()


REFUSED = {
    "multi_margin_loss": lambda T, x: T.nn.functional.multi_margin_loss(x, T.tensor([0, 2])),
    "multilabel_margin_loss": lambda T, x: T.nn.functional.multilabel_margin_loss(
        x, T.zeros(2, 3, dtype=T.long)),
    "pdist": lambda T, x: T.nn.functional.pdist(x),
    "quantile": lambda T, x: T.quantile(x, 0.3),
    "nanquantile": lambda T, x: T.nanquantile(x, 0.3),
    "rfft": lambda T, x: T.fft.rfft(x),
    "fft2": lambda T, x: T.fft.fft2(x),
    "histogram": lambda T, x: T.histogram(x),
    "avg_pool3d": lambda T, x: T.nn.functional.avg_pool3d(x[None, None, None], 1),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_ops_without_a_bfloat16_kernel_refused_as_pytorch(name):
    with pytest.raises(Exception) as want:
        REFUSED[name](torch, torch.tensor(X).bfloat16())
    with pytest.raises(type(want.value)) as got:
        REFUSED[name](tg, tg.tensor(X).to(tg.bfloat16))
    assert str(got.value) == str(want.value)


def test_bincount_bfloat16_weights_count_in_float64():
    w = np.array([0.1, 0.3, 0.2], dtype=np.float32)
    want = torch.bincount(torch.tensor([0, 1, 1]), weights=torch.tensor(w).bfloat16())
    got = tg.bincount(tg.tensor([0, 1, 1]), weights=tg.tensor(w).to(tg.bfloat16))
    assert str(got.dtype) == str(want.dtype) == "torch.float64"
    np.testing.assert_array_equal(got.numpy(), want.numpy())


SPECIAL_AND_LINALG_REFUSED = {
    "ndtri": lambda T, x: T.special.ndtri(x),
    "zeta": lambda T, x: T.special.zeta(x, x),
    "chebyshev_polynomial_t": lambda T, x: T.special.chebyshev_polynomial_t(x, 3),
    "hermite_polynomial_h": lambda T, x: T.special.hermite_polynomial_h(x, 2),
    "airy_ai": lambda T, x: T.special.airy_ai(x),
    "modified_bessel_k1": lambda T, x: T.special.modified_bessel_k1(x),
    "spherical_bessel_j0": lambda T, x: T.special.spherical_bessel_j0(x),
    "linalg_cond": lambda T, x: T.linalg.cond(x[:, :2]),
    "linalg_eigvals": lambda T, x: T.linalg.eigvals(x[:, :2]),
    "linalg_pinv": lambda T, x: T.linalg.pinv(x),
    "linalg_vander": lambda T, x: T.linalg.vander(x[0]),
    "linalg_ldl_factor": lambda T, x: T.linalg.ldl_factor(x[:, :2]),
}


@pytest.mark.parametrize("name", sorted(SPECIAL_AND_LINALG_REFUSED))
def test_special_and_linalg_without_bfloat16_kernel(name):
    x = np.abs(X) + 0.1
    with pytest.raises(Exception) as want:
        SPECIAL_AND_LINALG_REFUSED[name](torch, torch.tensor(x).bfloat16())
    with pytest.raises(type(want.value)) as got:
        SPECIAL_AND_LINALG_REFUSED[name](tg, tg.tensor(x).to(tg.bfloat16))
    assert str(got.value) == str(want.value)


def test_torch_cond_with_bfloat16_operands_still_runs():
    x = tg.ones(2).to(tg.bfloat16)
    out = tg.cond(tg.tensor(True), lambda v: v * 2, lambda v: v * 3, (x,))
    assert out.dtype == tg.bfloat16 and out.tolist() == [2.0, 2.0]


def test_empty_bfloat16_views_keep_their_dtype_and_shuffles_copy():
    v = tg.zeros(3, 4, 0).to(tg.bfloat16).requires_grad_()
    w = tg.atan(v * 1)
    assert w.expand_as(tg.empty((2, 3, 4, 0))).dtype == tg.bfloat16
    assert w.reshape(0, 3).dtype == tg.bfloat16
    for dt in (tg.float32, tg.bfloat16):
        leaf = tg.zeros(0, 3, 2, dtype=dt).requires_grad_()
        with tg.no_grad():
            shuffled = tg.nn.functional.pixel_shuffle(leaf, 1)
        assert not shuffled.requires_grad        # a new tensor, as PyTorch's (fuzz 65700470)


def test_fft_scales_complex_parts_as_real_numbers():
    for fn, norm in (("fft", None), ("ifft", None), ("fft", "ortho"), ("ifft", "forward")):
        for values in ([float("inf")], [float("inf"), 1.0], [1.0, -2.0, 0.5]):
            want = getattr(torch.fft, fn)(torch.tensor(values).to(torch.complex64), norm=norm)
            got = getattr(tg.fft, fn)(tg.tensor(values).to(tg.complex64), norm=norm)
            # (the transform's own rounding differs by an ulp from PyTorch's pocketfft build)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
            assert not np.isnan(got.numpy().imag).any()


def test_householder_product_checks_tau_rank_first():
    for T in (torch, tg):
        with pytest.raises(RuntimeError, match="Expected tau to have one dimension less than "
                                               "input, but got tau.ndim equal to 2"):
            T.linalg.householder_product(T.zeros(3, 3), T.zeros(3, 3))


@pytest.mark.parametrize("n", [2, 3, 4, 5, 7])
def test_matrix_power_bfloat16_as_pytorch_products(n):
    a = np.random.default_rng(n).standard_normal((4, 4)).astype(np.float32)
    results = []
    for T in (torch, tg):
        x = T.tensor(a).requires_grad_()
        r = T.linalg.matrix_power(x.to(T.bfloat16), n)
        r.float().sum().backward()
        results.append((r.float().detach().numpy(), x.grad.numpy()))
    for got, want in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, want)


def test_matrix_power_three_multiplies_in_pytorch_order_float32(torch_bits):
    a = np.random.default_rng(3).standard_normal((5, 5)).astype(np.float32)
    torch_bits.assert_equal(tg.linalg.matrix_power(tg.tensor(a), 3).numpy(),
                            torch.linalg.matrix_power(torch.tensor(a), 3).numpy())


@pytest.mark.parametrize("reduction", ["none", "sum", "batchmean"])
def test_kl_div_log_target_bfloat16_as_pytorch_composition(reduction):
    rng = np.random.default_rng(0)
    a = -np.abs(rng.standard_normal((8, 5))).astype(np.float32)
    b = -np.abs(rng.standard_normal((8, 5))).astype(np.float32)
    results = []
    for T in (torch, tg):
        x, y = (T.tensor(v).to(T.bfloat16).requires_grad_() for v in (a, b))
        r = T.nn.functional.kl_div(x, y, reduction=reduction, log_target=True)
        r.float().sum().backward()
        results.append((r.float().detach().numpy(), x.grad.float().numpy(),
                        y.grad.float().numpy()))
    for got, want in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["normalize", "triplet_margin_loss", "poisson_nll_loss",
                                  "dist", "trapezoid", "cumulative_trapezoid"])
def test_more_compositions_bfloat16_forward_as_pytorch(name):
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((6, 8)).astype(np.float32) for _ in range(2))
    calls = {
        "normalize": lambda T, x, y: T.nn.functional.normalize(x, dim=1),
        "triplet_margin_loss": lambda T, x, y: T.nn.functional.triplet_margin_loss(
            x, y, y * 0.5, reduction="none"),
        "poisson_nll_loss": lambda T, x, y: T.nn.functional.poisson_nll_loss(
            x, y.abs(), reduction="none"),
        "dist": lambda T, x, y: T.dist(x, y),
        "trapezoid": lambda T, x, y: T.trapezoid(x, dim=1),
        "cumulative_trapezoid": lambda T, x, y: T.cumulative_trapezoid(x, dim=1),
    }
    values = [calls[name](T, *(T.tensor(v).to(T.bfloat16) for v in (a, b))).float().numpy()
              for T in (torch, tg)]
    np.testing.assert_array_equal(values[1], values[0])


@pytest.mark.parametrize("call", [
    lambda T, x, y: T.nn.functional.soft_margin_loss(x, y),
    lambda T, x, y: T.nn.functional.multi_margin_loss(x, T.tensor([0, 1, 2]), weight=y[0])])
def test_loss_arguments_without_derivative_refuse_requires_grad(call):
    for T in (torch, tg):
        x, y = T.ones(3, 4, requires_grad=True), T.ones(3, 4, requires_grad=True)
        with pytest.raises(RuntimeError, match="is not differentiable with respect to argument"):
            call(T, x, y)
        with T.no_grad():
            call(T, x, y)
