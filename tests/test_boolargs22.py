"""Argument-type strictness checked against PyTorch: a bool parameter takes a bool alone (an int
there is PyTorch's TypeError, never a truth value: a.topk(2, 1, 0) must not quietly mean the
smallest), the torch namespace's shape functions take no varargs, and small divergences found
with them (clamp's complex bounds, linspace's complex endpoints, index_fill's value)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def outcome(lib, expr: str):
    """The expression's result (dtype, shape, values) under lib as `torch`, or its exception's
    type and the key of its message: the first line, up to the arguments an "invalid
    combination" lists (PyTorch's list the positional arguments its Python code passed on)."""
    F = lib.nn.functional
    a = lib.arange(12.).reshape(3, 4)
    v = lib.arange(6.)
    x = lib.arange(48.).reshape(2, 3, 8)
    img = lib.arange(16.).reshape(1, 1, 4, 4)
    vol = lib.arange(64.).reshape(1, 1, 4, 4, 4)
    eye = lib.eye(2)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # (deprecations, stft's missing window ...)
            r = eval(expr, {"torch": lib, "F": F, "a": a, "v": v, "x": x, "img": img,
                            "vol": vol, "eye": eye, "np": np})
    except Exception as e:          # noqa: BLE001 - the outcome is what is compared
        line = str(e).splitlines()[0] if str(e) else ""
        return type(e).__name__, line.split(" - got ")[0]
    if isinstance(r, tuple):
        return tuple(outcome_of(t) for t in r)
    return outcome_of(r)


def outcome_of(r):
    if isinstance(r, (tg.Tensor, torch.Tensor)):
        return str(r.dtype).split(".")[-1], tuple(r.shape), repr(r.detach().numpy().tolist())
    return r


def same(expr: str):
    expected, got = outcome(torch, expr), outcome(tg, expr)
    assert got == expected, (expr, got, expected)


# -- 1. one bool check for every bool parameter ---------------------------------------------------

# Each passes an int (or numpy bool) where PyTorch's parser takes a bool: all were quiet truth
# values before (topk(largest=0) gave the smallest, var(0, 0) the population variance ...).
REFUSED = [
    "a.topk(2, largest=0)", "a.topk(2, sorted=0)", "a.topk(2, 1, 0)", "a.topk(2, 1, True, 0)",
    "torch.topk(a, 2, 1, 0)", "a.topk(2, largest=np.False_)",
    "a.var(0, 0)", "a.var(0, 1)", "a.std(0, 0)", "a.var(unbiased=0)", "a.var(0, unbiased=0)",
    "a.std(0, unbiased=1)", "torch.var(a, 0, 0)", "torch.std_mean(a, 0, 0)",
    "torch.var_mean(a, unbiased=1)", "a.var(0, True, 1)", "torch.var_mean(a, 0, True, 1)",
    "torch.unique(v, sorted=1)", "torch.unique(v, return_inverse=1)",
    "torch.unique(v, return_counts=1)", "v.unique(sorted=1)", "torch.unique(v, 1)",
    "torch.unique(v, sorted=1, dim=0)", "torch.unique_consecutive(v, return_inverse=1)",
    "torch.unique_consecutive(v, return_counts=1, dim=0)", "v.unique_consecutive(return_inverse=1)",
    "a.requires_grad_(1)", "a.requires_grad_(0)", "a.requires_grad_(np.True_)",
    "setattr(a, 'requires_grad', 1)",
    "torch.zeros(2, requires_grad=1)", "torch.zeros(2, requires_grad=np.True_)",
    "torch.ones(2, requires_grad=1)", "torch.empty(2, requires_grad=1)",
    "torch.full((2,), 1., requires_grad=1)", "torch.tensor([1.], requires_grad=1)",
    "torch.zeros_like(a, requires_grad=1)", "torch.ones_like(a, requires_grad=1)",
    "torch.full_like(a, 2, requires_grad=1)", "torch.empty_like(a, requires_grad=1)",
    "torch.arange(3., requires_grad=1)", "torch.linspace(0, 1, 3, requires_grad=1)",
    "torch.logspace(0, 1, 3, requires_grad=1)", "torch.rand(2, requires_grad=1)",
    "torch.randn(2, requires_grad=1)", "torch.eye(2, requires_grad=1)",
    "torch.rand_like(a, requires_grad=1)", "torch.randn_like(a, requires_grad=1)",
    "torch.randint(0, 3, (2,), requires_grad=1)", "torch.randperm(3, requires_grad=1)",
    "a.new_zeros(2, requires_grad=1)", "a.new_ones(2, requires_grad=1)",
    "a.new_full((2,), 3., requires_grad=1)", "a.new_empty(2, requires_grad=1)",
    "a.new_tensor([1.], requires_grad=1)", "torch.as_tensor([1.], requires_grad=1)",
    "torch.isclose(a, a, equal_nan=1)", "torch.allclose(a, a, equal_nan=1)",
    "a.isclose(a, equal_nan=1)", "torch.isclose(a, a, 1e-5, 1e-8, 1)",
    "torch.isin(v, v, invert=1)", "torch.isin(v, v, assume_unique=1)",
    "torch.searchsorted(v, v, right=1)", "torch.searchsorted(v, v, out_int32=1)",
    "torch.bucketize(v, v, right=1)", "torch.bucketize(v, v, out_int32=1)",
    "a.to(copy=1)", "a.to(torch.float64, copy=1)", "a.to(torch.float64, 1)",
    "a.to(torch.float64, False, 1)", "a.to(non_blocking=1)", "a.to('cpu', copy=1)",
    "torch.stft(v, 4, return_complex=1)", "torch.stft(v, 4, return_complex=True, onesided=1)",
    "torch.stft(v, 4, return_complex=True, normalized=1)",
    "torch.nonzero(a, as_tuple=1)", "a.nonzero(as_tuple=0)", "torch.histogram(v, 3, density=1)",
    "F.dropout(a, training=0)", "F.dropout(a, 0.5, 0)", "F.dropout(a, training=np.False_)",
    "F.dropout(a, 0.5, training=1, inplace=True)", "F.dropout1d(x, training=0)",
    "F.dropout2d(img, 0.5, 0)", "F.dropout3d(vol, training=0)", "F.alpha_dropout(a, 0.5, 0)",
    "F.feature_alpha_dropout(img, 0.5, 1)", "torch.dropout(a, 0.5, 1)",
    "torch.dropout(a, 0.5, train=0)", "torch.alpha_dropout(a, 0.5, 0)",
    "torch.feature_dropout(img, 0.5, 0)", "torch.feature_alpha_dropout(img, 0.5, 0)",
    "F.max_pool1d(x, 2, ceil_mode=1)", "F.max_pool1d(x, 2, ceil_mode=np.True_)",
    "F.max_pool2d(img, 2, ceil_mode=1)", "F.max_pool2d(img, 2, 2, 0, 1, 1)",
    "F.max_pool2d(img, 2, ceil_mode=1, return_indices=True)", "F.max_pool3d(vol, 2, ceil_mode=1)",
    "F.avg_pool1d(x, 2, ceil_mode=1)", "F.avg_pool1d(x, 2, count_include_pad=0)",
    "F.avg_pool1d(x, 2, 2, 0, 1)", "F.avg_pool2d(img, 2, ceil_mode=1)",
    "F.avg_pool2d(img, 2, count_include_pad=0)", "F.avg_pool3d(vol, 2, ceil_mode=1)",
    "F.lp_pool1d(x, 2, 2, ceil_mode=1)",
    "F.embedding(torch.tensor([0, 1]), a, scale_grad_by_freq=1)",
    "F.embedding(torch.tensor([0, 5]), a, scale_grad_by_freq=1)",
    "F.embedding(torch.tensor([0, 1]), a, sparse=1)",
    "torch.embedding(a, torch.tensor([0, 1]), -1, 1)",
    "F.embedding_bag(torch.tensor([0, 1]), a, torch.tensor([0]), scale_grad_by_freq=1)",
    "F.embedding_bag(torch.tensor([0, 1]), a, torch.tensor([0]), include_last_offset=1)",
    "F.embedding_bag(torch.tensor([0, 1]), a, torch.tensor([0]), sparse=1)",
    "F.batch_norm(img, torch.zeros(1), torch.ones(1), training=1)",
    "F.batch_norm(img, torch.zeros(1), torch.ones(1), training=0)",
    "F.instance_norm(img, use_input_stats=1)",
    "F.grid_sample(img, torch.zeros(1, 2, 2, 2), align_corners=1)",
    "F.affine_grid(torch.eye(2, 3)[None], (1, 1, 2, 2), align_corners=1)",
    "F.interpolate(img, scale_factor=2., mode='bilinear', align_corners=1)",
    "F.interpolate(x, scale_factor=2., mode='linear', align_corners=0)",
    "F.poisson_nll_loss(a, a, log_input=1)", "F.poisson_nll_loss(a, a, full=1)",
    "F.ctc_loss(torch.zeros(5, 1, 3), torch.tensor([[1]]), torch.tensor([5]), torch.tensor([1]),"
    " zero_infinity=1)",
    "F.scaled_dot_product_attention(img, img, img, is_causal=1)",
    "F.scaled_dot_product_attention(img, img, img, enable_gqa=1)",
    "F.triplet_margin_loss(a, a, a, swap=1)", "F.rrelu(a, training=1)", "F.rrelu(a, training=0)",
    "F.kl_div(a, a, log_target=1)",
    "torch.linalg.svd(a, full_matrices=1)", "torch.svd(a, some=1)", "torch.svd(a, compute_uv=0)",
    "torch.linalg.cholesky(eye, upper=1)", "torch.cholesky(eye, upper=1)",
    "torch.linalg.solve(eye, torch.ones(2, 1), left=1)",
    "torch.linalg.solve_triangular(eye, torch.ones(2, 1), upper=1)",
    "torch.triangular_solve(torch.ones(2, 1), eye, upper=1)",
    "torch.linalg.pinv(eye, hermitian=1)", "torch.linalg.matrix_rank(eye, hermitian=1)",
    "torch.linalg.lu_factor(eye, pivot=1)", "torch.linalg.lu(eye, pivot=1)",
    "torch.linalg.lu_factor_ex(eye, check_errors=1)", "torch.lu(eye, 1)",
    "torch.cholesky_solve(torch.ones(2, 1), eye, upper=1)", "torch.cholesky_inverse(eye, upper=1)",
    "torch.multinomial(torch.ones(4), 2, replacement=1)", "torch.multinomial(torch.ones(4), 2, 1)",
    "a.clone().index_put_((torch.tensor([0]),), torch.tensor(1.), accumulate=1)",
    "torch.index_put(a, (torch.tensor([0]),), torch.tensor(1.), 1)",
    "a.clone().put_(torch.tensor([0]), torch.tensor([1.]), accumulate=1)",
    "torch.put(a, torch.tensor([0]), torch.tensor([1.]), accumulate=1)",
    "a.scatter_reduce(0, torch.zeros(1, 4, dtype=torch.long), a[:1], 'sum', include_self=0)",
    "torch.combinations(v[:3], with_replacement=1)", "torch.histogramdd(a[:, :2], 3, density=1)",
    "torch.istft(torch.stft(v, 4, return_complex=True), 4, center=1)",
    "torch.istft(torch.stft(v, 4, return_complex=True), 4, normalized=1)",
    "torch.istft(torch.stft(v, 4, return_complex=True), 4, onesided=1)",
    "a.type(torch.float64, non_blocking=1)", "torch.set_grad_enabled(1)",
    "torch.nn.Parameter(a, requires_grad=1)", "torch.nn.Parameter(a, np.True_)",
    "torch.nn.UninitializedParameter(requires_grad=1)",
    "torch.linalg.inv_ex(eye, check_errors=1)", "torch.linalg.cholesky_ex(eye, upper=1)",
    "torch.linalg.cholesky_ex(eye, check_errors=1)", "torch.linalg.solve_ex(eye, eye, left=1)",
    "torch.linalg.lu_solve(*torch.linalg.lu_factor(eye), eye, left=1)",
    "torch.linalg.lu_solve(*torch.linalg.lu_factor(eye), eye, adjoint=1)",
    "torch.lu_unpack(*torch.linalg.lu_factor(eye), unpack_data=1)", "torch.qr(eye, some=1)",
    # (keepdim's check, generalised from, stays as it was)
    "a.sum(1, 1)", "a.max(1, keepdim=1)", "a.mean(1, np.True_)",
]


@pytest.mark.parametrize("expr", REFUSED)
def test_a_non_bool_for_a_bool_parameter_is_refused_as_pytorch(expr):
    assert outcome(torch, expr)[0] in ("TypeError", "RuntimeError"), expr   # (the premise)
    same(expr)


# Python's truth values where PyTorch's Python code reads them itself (or passes nothing on)
ACCEPTED = [
    "F.dropout(a, 0.5, False, 1)", "F.relu(a, inplace=1)", "F.max_pool1d(x, 2, return_indices=1)",
    "F.adaptive_max_pool1d(x, 2, return_indices=1)", "torch.lu(eye, True, 1)",
    "F.gaussian_nll_loss(a, a, torch.ones(3, 4), full=1)", "F.mse_loss(a, a, size_average=1)",
    "torch.stft(v, 4, return_complex=True, center=1)", "F.interpolate(img, scale_factor=2., "
    "mode='nearest', recompute_scale_factor=1)",
    # and the bools themselves
    "a.topk(2, 1, False, True)", "a.var(0, False)", "a.var(0, True, True)", "a.var(True)",
    "torch.var_mean(a, 0, False)", "torch.unique(v, True, True, True)",
    "torch.isin(v, v, invert=True)", "torch.searchsorted(v, v, right=True)",
    "a.to(torch.float64, False, True)", "torch.zeros(2, requires_grad=True)",
    "torch.arange(3., requires_grad=False)", "F.max_pool1d(x, 2, ceil_mode=True)",
    "F.avg_pool2d(img, 3, 2, 1, True, False)", "F.batch_norm(img, torch.zeros(1), torch.ones(1),"
    " training=True).round(decimals=4)",
    "F.grid_sample(img, torch.zeros(1, 2, 2, 2), align_corners=True)",
    "F.interpolate(img, scale_factor=2., mode='bilinear', align_corners=True).round(decimals=4)",
    "torch.linalg.svd(eye, full_matrices=False)[1]", "torch.nonzero(a, as_tuple=True)",
]


@pytest.mark.parametrize("expr", ACCEPTED)
def test_bools_and_pythons_truth_values_work_where_pytorch_takes_them(expr):
    same(expr)


def test_topk_positional_bools_keep_their_meaning():
    a = np.array([[3., 1., 2.], [0., 5., 4.]])
    for largest in (True, False):
        got = tg.tensor(a).topk(2, 1, largest)
        want = torch.tensor(a).topk(2, 1, largest)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())


def test_requires_grad_setter_takes_a_bool():
    t = tg.zeros(2)
    t.requires_grad = True
    assert t.requires_grad
    t.requires_grad = False
    assert not t.requires_grad


# -- 2. varargs: the Tensor methods take them, the torch functions do not -------------------------

@pytest.mark.parametrize("expr", [
    "a.count_nonzero(1, 0)", "a.count_nonzero(0, 1)", "a.count_nonzero((0, 1))",
    "a.count_nonzero(dim=(0, 1))", "a.count_nonzero(1)", "a.count_nonzero()",
    "a.count_nonzero(axis=0)", "torch.count_nonzero(a, 1)",
    "torch.tile(a, 2, 2)", "torch.permute(a, 1, 0)", "torch.reshape(a, 2, 6)",
    "torch.reshape(a, 12)", "torch.permute(v, 0)", "torch.tile(a, (2,))",
    "torch.reshape(a, (2, 6))", "torch.reshape(a, shape=[6, 2])", "torch.permute(a, dims=(1, 0))",
    "torch.tile(a, dims=[2, 1])", "a.tile(2, 2)", "a.permute(1, 0)", "a.reshape(2, 6)",
    "a.reshape(12)",
])
def test_varargs_as_pytorch(expr):
    same(expr)


# -- 3. small leftovers -----------------------------------------------------------------------------

@pytest.mark.parametrize("expr", [
    # a complex bound: its real part for a floating input when the imaginary part is 0
    "torch.clamp(a, 3+0j)", "torch.clamp(a, None, 3+0j)", "torch.clamp(a, 3+0j, 4+0j)",
    "a.clamp(3+0j)", "a.clone().clamp_(3+0j)", "torch.clip(a, 3+0j)",
    "torch.clamp(a.double(), min=3+0j)", "torch.clamp(a, 3+1j)", "a.clone().clamp_(3+1j)",
    "torch.arange(6).clamp(3+0j)", "a.clamp_min(3+0j)", "a.clamp_max(3+0j)",
    # an integer output of clamp's Number overload is named by its C++ type
    "torch.arange(6).clamp_(0.5)", "torch.arange(6).clamp_(None, 0.5)",
    "torch.arange(6).clamp_min_(0.5)", "torch.arange(6).clamp_max_(0.5)",
    "torch.arange(6).clip_(0.5)", "torch.arange(6, dtype=torch.int32).clamp_(0.5)",
    "torch.arange(6, dtype=torch.uint8).clamp_(0.5)", "torch.ones(3, dtype=torch.bool).clamp_(2)",
    "torch.arange(6).clamp_(torch.tensor(0.5))", "torch.clamp(torch.arange(6), 0.5)",
    "torch.clamp(n := torch.arange(6), 0.5, out=n)",
    "torch.clamp(n := torch.arange(6), torch.tensor(0.5), out=n)",
    "torch.arange(6).add_(0.5)",
    # index_fill's value is a Tensor or a Number
    "a.index_fill_(0, torch.tensor([0]), 'a')", "a.index_fill(0, torch.tensor([0]), 'a')",
    "torch.index_fill(a, 0, torch.tensor([0]), 'a')", "a.index_fill_(0, torch.tensor([0]), None)",
    "a.index_fill_(0, torch.tensor([0]), [1])", "a.index_fill_(0, torch.tensor([0]), 1+1j)",
    "a.index_fill(0, torch.tensor([1]), 2.5)",
    # new_full's fill value
    "a.new_full((2,), None)",
    # index_add_ out of range (a RuntimeError in PyTorch, eager or not)
    "a.index_add_(0, torch.tensor([5]), torch.ones(1, 4))",
    "a.index_add(0, torch.tensor([-4]), torch.ones(1, 4))",
])
def test_leftovers_as_pytorch(expr):
    same(expr)


def test_index_add_out_of_range_under_no_grad():
    for lib in (torch, tg):
        with lib.no_grad():
            with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 "
                                                   "with size 3"):
                lib.zeros(3, 2).index_add_(0, lib.tensor([5]), lib.ones(1, 2))


@pytest.mark.parametrize("expr", [
    "torch.linspace(0, 1+1j, 5)", "torch.linspace(0j, 1, 5)", "torch.linspace(0.1, 1.3+0.7j, 7)",
    "torch.linspace(-2.5+1j, 3-4j, 11)", "torch.linspace(0, 1+1j, 1)", "torch.linspace(0, 1+1j, 0)",
    "torch.linspace(0, 1+1j, 5, dtype=torch.complex128)", "torch.linspace(0, 1, 5, "
    "dtype=torch.complex64)", "torch.linspace(torch.tensor(0), torch.tensor(1+1j), 3)",
    "torch.linspace(0, 1+1j, 5, dtype=torch.float32)",
    "torch.linspace(0, 1+1j, 5, dtype=torch.int64)",
    "torch.logspace(0, 1+1j, 3)", "torch.logspace(0, 1+1j, 3, base=2)",
    "torch.logspace(0.5j, 1, 1)",
])
def test_linspace_with_complex_endpoints(expr):
    # (values to a few ulps: PyTorch's vectorised complex kernel rounds its own way)
    env = {"np": np}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = eval(expr, dict(env, torch=torch))
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match=str(e).replace("(", r"\(").replace(")", r"\)")):
            eval(expr, dict(env, torch=tg))
        return
    got = eval(expr, dict(env, torch=tg))
    assert str(got.dtype) == str(want.dtype) and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def test_linspace_complex_follows_the_default_dtype():
    previous = tg.get_default_dtype()
    try:
        for lib in (torch, tg):
            lib.set_default_dtype(lib.float64)
        assert tg.linspace(0, 1 + 1j, 3).dtype == tg.complex128
        np.testing.assert_allclose(tg.linspace(0.1, 1 + 1j, 7).numpy(),
                                   torch.linspace(0.1, 1 + 1j, 7).numpy(), rtol=1e-14)
    finally:
        torch.set_default_dtype(torch.float32)
        tg.set_default_dtype(previous)
