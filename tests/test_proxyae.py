"""Gaps found by running numerical / scientific PyTorch scripts (PINNs, Hamiltonian networks,
Gaussian processes) unchanged under tapegrad (helper proxyae)."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

SPARSE_ONLY = ["values", "indices", "coalesce", "is_coalesced", "crow_indices", "col_indices",
               "ccol_indices", "row_indices"]


@pytest.mark.parametrize("name", SPARSE_ONLY)
def test_sparse_accessor_on_dense_tensor_raises_torchs_error(name):
    # ShotaDeguchi/PINN_Torch reads `torch.mean(x, dim=0).values` (never calls it): the attribute
    # must exist, and calling it on a dense tensor raises PyTorch's layout RuntimeError.
    with pytest.raises(RuntimeError) as expected:
        getattr(torch.ones(2), name)()
    assert callable(getattr(tg.ones(2), name))
    with pytest.raises(RuntimeError) as got:
        getattr(tg.ones(2), name)()
    assert str(got.value) == str(expected.value)


def test_dense_tensor_sparse_and_dense_dims():
    for shape in [(), (3,), (2, 3)]:
        t, g = torch.zeros(shape), tg.zeros(shape)
        assert (g.sparse_dim(), g.dense_dim()) == (t.sparse_dim(), t.dense_dim())


def test_sparse_tensor_keeps_its_own_accessors():
    a = np.array([[0., 2.], [3., 0.]])
    t, g = torch.tensor(a).to_sparse(), tg.tensor(a).to_sparse()
    np.testing.assert_array_equal(g.values().numpy(), t.values().numpy())
    np.testing.assert_array_equal(g.indices().numpy(), t.indices().numpy())
    assert g.is_coalesced() == t.is_coalesced()
    assert (g.sparse_dim(), g.dense_dim()) == (t.sparse_dim(), t.dense_dim())


def _first_grads(lib, fn, shapes):
    xs = [lib.tensor(np.linspace(0.1, 1.0, int(np.prod(s))).reshape(s), dtype=lib.float64,
                     requires_grad=True) for s in shapes]
    return lib.autograd.grad((fn(lib, *xs) ** 3).sum(), xs, create_graph=True)


CREATE_GRAPH_CASES = {
    "stack": (lambda lib, a, b: lib.stack((a, b), 1), [(2, 3), (2, 3)]),
    "cat": (lambda lib, a, b: lib.cat((a, b), 1), [(2, 3), (2, 2)]),
    "hstack": (lambda lib, a, b: lib.hstack((a, b)), [(6, 1), (6, 1)]),
    "stack_mixed_dtypes": (lambda lib, a, b: lib.stack((a, b.float())), [(6,), (6,)]),
    "t": (lambda lib, a: a.t(), [(2, 3)]),
    "transpose": (lambda lib, a: a.transpose(0, 1), [(2, 3)]),
    "permute": (lambda lib, a: a.permute(1, 0), [(2, 3)]),
    "mm": (lambda lib, a, b: a.mm(b), [(2, 3), (3, 2)]),
    "matmul_1d": (lambda lib, a, b: a @ b, [(6,), (6,)]),
}


@pytest.mark.parametrize("case", sorted(CREATE_GRAPH_CASES))
def test_create_graph_adjoint_nodes_named_as_torch(case):
    # PINNs print u_x = grad(u, x, create_graph=True) for an input built with cat/stack or fed
    # straight into a Linear: the adjoint's node is PyTorch's (SliceBackward0, SelectBackward0,
    # MmBackward0, TransposeBackward0...), not the generic index/view that computes it.
    fn, shapes = CREATE_GRAPH_CASES[case]
    expected = _first_grads(torch, fn, shapes)
    got = _first_grads(tg, fn, shapes)
    for e, g in zip(expected, got):
        assert type(g.grad_fn).__name__ == type(e.grad_fn).__name__
        assert g.dtype == tg.float64 and g.shape == e.shape
        np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=1e-12)


def _mlp_input_derivatives(lib):
    x = lib.tensor(np.linspace(-1.0, 1.0, 7).reshape(7, 1), requires_grad=True)
    w1 = lib.tensor(np.linspace(-0.8, 0.9, 5).reshape(5, 1))
    b1 = lib.tensor(np.linspace(0.1, 0.3, 5))
    w2 = lib.tensor(np.linspace(0.5, -0.4, 5).reshape(1, 5))
    u = lib.nn.functional.linear(lib.tanh(lib.nn.functional.linear(x, w1, b1)), w2)
    ux = lib.autograd.grad(u, x, lib.ones_like(u), create_graph=True)[0]
    uxx = lib.autograd.grad(ux, x, lib.ones_like(ux), create_graph=True)[0]
    return ux, uxx


def test_mlp_input_derivatives_match_torch_with_mm_nodes():
    for e, g in zip(_mlp_input_derivatives(torch), _mlp_input_derivatives(tg)):
        assert type(g.grad_fn).__name__ == type(e.grad_fn).__name__ == "MmBackward0"
        np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=1e-12)


def test_backend_flags_and_pointer_queries_of_a_cpu_tensor():
    t, g = torch.arange(3.), tg.arange(3.)
    for flag in ["is_nested", "is_mkldnn", "is_xla", "is_ipu", "is_vulkan", "is_mtia", "is_maia"]:
        assert getattr(g, flag) is getattr(t, flag) is False
    assert g.is_distributed() is t.is_distributed() is False
    assert g.const_data_ptr() == g.data_ptr()
    assert g[1:].const_data_ptr() - g.const_data_ptr() == t[1:].const_data_ptr() - t.const_data_ptr()


def _raised(fn):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = fn()
        except Exception as exc:   # noqa: BLE001 - the type and message are what is compared
            return type(exc).__name__, str(exc)
    return "returned", str(result.dtype) if hasattr(result, "dtype") else type(result).__name__


def _solver_calls(lib):
    A = lib.tensor([[4., 1.], [0., 3.]], dtype=lib.float64)
    LU, piv = lib.linalg.lu_factor(A)
    b32, b64 = lib.ones(2, 1), lib.ones(2, 1, dtype=lib.float64)
    return [
        lambda: lib.linalg.lstsq(A, b32),
        lambda: lib.linalg.lstsq(A.float(), b64, driver="gelsd"),
        lambda: lib.linalg.lstsq(A[0], b64[:, 0]),
        lambda: lib.linalg.lstsq(A.long(), b32),
        lambda: lib.linalg.lstsq(A, lib.ones(3, 1, dtype=lib.float64), driver="bad"),
        lambda: lib.triangular_solve(b32, A),
        lambda: lib.triangular_solve(b64, A.float()),
        lambda: lib.triangular_solve(b64[:, 0], A),
        lambda: lib.triangular_solve(b64, A[0]),
        lambda: lib.triangular_solve(b64, A[:, :1]),
        lambda: lib.triangular_solve(lib.ones(3, 1, dtype=lib.float64), A),
        lambda: lib.cholesky_solve(b32, A),
        lambda: lib.linalg.lu_solve(LU, piv, b32),
        lambda: lib.linalg.lu_solve(LU, piv, b32[:, 0]),
        lambda: lib.linalg.lu_solve(LU, piv, b32.mT, left=False),
        lambda: lib.lu_solve(b32, LU, piv),
    ]


def test_solvers_refuse_mixed_dtypes_as_torch():
    # SILENT before: triangular_solve and lu_solve with a float32 right-hand side and a float64
    # factor (or the reverse) returned a solution where PyTorch refuses; lstsq's refusal named
    # matmul's operands.
    for expected, got in zip(_solver_calls(torch), _solver_calls(tg)):
        assert _raised(got) == _raised(expected)


def _bilinear_calls(lib):
    F = lib.nn.functional
    f = lib.ones(1, 3)
    w = lib.ones(2, 3, 3)
    return [
        lambda: F.bilinear(f, f, w, lib.ones(2, dtype=lib.float64)),
        lambda: F.bilinear(f, f.double(), w),
        lambda: F.bilinear(f, f, w.double()[0]),
        lambda: F.bilinear(f.int(), f.int(), w.int(), lib.ones(2)),
        lambda: F.bilinear(f, f, w, lib.ones(2)),
    ]


def test_bilinear_refuses_mixed_dtypes_first():
    # SILENT before: a float64 bias made a float32 bilinear's result float64.
    for expected, got in zip(_bilinear_calls(torch), _bilinear_calls(tg)):
        assert _raised(got) == _raised(expected)


def _undefined_moments(lib):
    D = lib.distributions
    loc = lib.tensor([0.1, -0.2], dtype=lib.float64, requires_grad=True)
    scale = lib.tensor([0.5, 2.0], dtype=lib.float64, requires_grad=True)
    return [D.Cauchy(loc, scale).mean, D.Cauchy(loc, scale).variance,
            D.Cauchy(loc, scale).expand((3, 2)).mean, D.HalfCauchy(scale).mean]


def test_undefined_moments_are_constants_as_torch():
    # Cauchy's mean/variance and HalfCauchy's mean were recorded from the parameters
    # (requires_grad True, a grad_fn); PyTorch returns tensors filled with nan / inf
    for e, g in zip(_undefined_moments(torch), _undefined_moments(tg)):
        assert (g.requires_grad, g.grad_fn, tuple(g.shape)) == (e.requires_grad, None, tuple(e.shape))
        np.testing.assert_array_equal(g.numpy(), e.numpy())


def _moment_and_cdf_nodes(lib):
    D = lib.distributions
    a = lib.tensor([0.5, 3.0], dtype=lib.float64, requires_grad=True)
    x = lib.tensor([-0.5, 1.0], dtype=lib.float64)
    return [D.InverseGamma(a, a).mean, D.InverseGamma(a, a).variance,
            D.HalfNormal(a, validate_args=False).log_prob(x),
            D.HalfCauchy(a, validate_args=False).log_prob(x),
            D.Gamma(a, a).cdf(x.abs()), D.Chi2(a).cdf(x.abs())]


def test_distribution_nodes_named_as_torch():
    for e, g in zip(_moment_and_cdf_nodes(torch), _moment_and_cdf_nodes(tg)):
        assert type(g.grad_fn).__name__ == type(e.grad_fn).__name__
        np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=1e-12)


def _student_t_moments(lib):
    D = lib.distributions
    df = lib.tensor([0.5, 2.0, 1.5, 3.0], dtype=lib.float64, requires_grad=True)
    loc = lib.tensor([0.1, 0.2, 0.3, 0.4], dtype=lib.float64, requires_grad=True)
    scale = lib.tensor([1.0, 2.0, 0.5, 1.5], dtype=lib.float64, requires_grad=True)
    d = D.StudentT(df, loc, scale)
    mean, variance = d.mean, d.variance
    grads = lib.autograd.grad(variance.sum(), [df, scale]) + lib.autograd.grad(mean.sum(), [loc])
    return [mean, variance] + list(grads)


def test_student_t_variance_gradient_at_df_two_is_zero_as_torch():
    # SILENT before: the variance formula was computed for every df and masked after, so at
    # df == 2 its gradient was 0 * inf = nan in df and in scale
    for e, g in zip(_student_t_moments(torch), _student_t_moments(tg)):
        np.testing.assert_array_equal(g.detach().numpy(), e.detach().numpy())
        assert type(g.grad_fn).__name__ == type(e.grad_fn).__name__


def _zero_modes(lib):
    D = lib.distributions
    a = lib.tensor([0.5, 1.0], dtype=lib.float64, requires_grad=True)
    p = lib.tensor([0.2, 0.7], requires_grad=True)
    return [D.HalfCauchy(a).mode, D.HalfNormal(a).mode, D.Exponential(a).mode, D.Geometric(p).mode]


def test_zero_modes_are_constants_as_torch():
    # they were `parameter * 0`: a graph to the parameter (requires_grad True), PyTorch's are
    # zeros_like
    for e, g in zip(_zero_modes(torch), _zero_modes(tg)):
        assert (g.requires_grad, g.grad_fn, g.dtype) == (e.requires_grad, None, g.dtype)
        assert str(g.dtype) == str(e.dtype)
        np.testing.assert_array_equal(g.numpy(), e.numpy())
