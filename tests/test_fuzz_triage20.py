"""Regressions of the session-20 fuzz findings (seeds 60613500-, 62605000-, 63004000-).

Each test asserts the right values without torch where it can and, where torch is installed,
compares with it (the `torch` fixture skips cleanly without it).
"""
import math
import re

import numpy as np
import pytest

import tapegrad as tg


# -- the batch-size checks of the norms count from the shape (seed 63004037) ------------------
# PyTorch refuses a batch of one value per channel: batch_norm when N * prod(spatial) == 1,
# instance_norm when prod(spatial) == 1.  tapegrad counted numel // C (0 when C is 0) and
# refused <= 1, so an empty batch or one without channels raised where PyTorch normalises; and
# an empty batch must leave batch_norm's running statistics as they are (instance_norm's
# average of its per-instance copies is NaN over no instance).

NORM_SHAPES = [(1, 0, 3), (0, 2, 3), (1, 2, 1), (2, 0), (1, 0), (0, 3), (2, 3, 0), (0, 0, 3),
               (3, 0, 2), (2, 3, 1), (1, 1, 2), (0, 3, 2)]


def _norm_run(L, shape, which):
    F = L.nn.functional
    x = L.ones(shape, requires_grad=True)
    try:
        if which == "batch_norm":
            y = F.batch_norm(x, None, None, training=True)
        else:
            y = F.instance_norm(x)
    except ValueError as e:
        return "ValueError", str(e).split(",")[0]
    y.sum().backward()
    return tuple(y.shape), tuple(x.grad.shape), y.detach().numpy().tolist()


@pytest.mark.parametrize("shape", NORM_SHAPES)
@pytest.mark.parametrize("which", ["batch_norm", "instance_norm"])
def test_norm_batch_size_check_counts_from_the_shape(which, shape):
    counts = {"batch_norm": math.prod(shape[:1] + shape[2:]), "instance_norm": math.prod(shape[2:])}
    res = _norm_run(tg, shape, which)
    if counts[which] == 1:
        assert res == ("ValueError", "Expected more than 1 " +
                       ("value per channel when training" if which == "batch_norm"
                        else "spatial element when training"))
    else:
        assert res[:2] == (shape, shape)


@pytest.mark.parametrize("shape", NORM_SHAPES)
@pytest.mark.parametrize("which", ["batch_norm", "instance_norm"])
def test_norm_batch_size_check_matches_torch(torch, which, shape):
    assert _norm_run(tg, shape, which) == _norm_run(torch, shape, which)


@pytest.mark.parametrize("shape", [(0, 3), (0, 3, 2), (2, 3, 0)])
def test_running_statistics_of_an_empty_batch(torch, shape):
    def run(L, which):
        rm, rv = L.zeros(3), L.ones(3)
        x = L.ones(shape, requires_grad=True)
        if which == "batch_norm":
            L.nn.functional.batch_norm(x, rm, rv, training=True)
        else:
            L.nn.functional.instance_norm(x, rm, rv)
        return rm.numpy().tolist(), rv.numpy().tolist()
    for which in ("batch_norm", "instance_norm"):
        if which == "instance_norm" and len(shape) < 3:
            continue
        got, want = run(tg, which), run(torch, which)
        np.testing.assert_array_equal(np.array(got), np.array(want))
    # batch_norm: no value, no move
    assert run(tg, "batch_norm") == ([0.0] * 3, [1.0] * 3)


# -- SILENT: spectral gradients at repeated singular values / eigenvalues (seed 60613697) -------
# The gradient of the singular values alone is U diag(gS) Vh (of eigvalsh's, V diag(gλ) V^H;
# of eigvals', V^-H diag(gλ) V^H): PyTorch takes this shortcut when the vectors got no gradient.
# tapegrad's Functions received zeros for the unused vectors and ran the full formula, whose
# 0 / (s_i^2 - s_j^2) made every gradient NaN at a repeated value: the identity, a zero or
# rank-deficient matrix, matrix_norm(A, 'nuc') of an expanded (rank-1) input.

SPECTRAL = {
    "svdvals": lambda L, A: L.linalg.svdvals(A).sum(),
    "svd S": lambda L, A: L.linalg.svd(A)[1].sum(),
    "svd S thin": lambda L, A: L.linalg.svd(A, full_matrices=False).S.sum(),
    "nuc": lambda L, A: L.linalg.matrix_norm(A, "nuc"),
    "2-norm": lambda L, A: L.linalg.matrix_norm(A, 2),
    "cond": lambda L, A: L.linalg.cond(A + L.eye(A.shape[-1], dtype=A.dtype)),
    "eigvalsh": lambda L, A: L.linalg.eigvalsh(A).sum(),
    "eigh values": lambda L, A: (L.linalg.eigh(A)[0] * 2).sum(),
    "eigvals": lambda L, A: L.linalg.eigvals(A).real.sum(),
    "eig values": lambda L, A: L.linalg.eig(A)[0].real.sum(),
}


def _spectral_grad(L, name, arr):
    A = L.tensor(arr, requires_grad=True)
    SPECTRAL[name](L, A).backward()
    return A.grad.numpy()


@pytest.mark.parametrize("name", sorted(SPECTRAL))
def test_spectral_gradient_of_the_identity_is_finite(name):
    g = _spectral_grad(tg, name, np.eye(3))
    # (cond: S[0] / S[-1] of 2 I, d/dS = (1/2, 0, -1/2))
    want = {"2-norm": np.eye(3) / 3, "eigh values": 2 * np.eye(3),
            "cond": np.diag([0.5, 0.0, -0.5])}.get(name, np.eye(3))
    np.testing.assert_allclose(g, want, atol=1e-12)


@pytest.mark.parametrize("name", sorted(SPECTRAL))
@pytest.mark.parametrize("arr", [np.eye(3), np.zeros((3, 3)), np.diag([2.0, 2.0, 5.0]),
                                 np.ones((3, 3))], ids=["eye", "zeros", "repeated", "ones"])
def test_spectral_gradient_at_repeated_values_matches_torch(torch, name, arr):
    if name in ("svdvals", "svd S", "svd S thin", "nuc") and np.linalg.matrix_rank(arr) < 2 \
            and arr.any():
        # (the sum of the singular values of a rank-1 matrix has no gradient: U Vh over the
        # zero ones depends on the basis LAPACK picks for them, in each library its own)
        pytest.skip("a subgradient: basis-dependent")
    want = _spectral_grad(torch, name, arr)
    got = _spectral_grad(tg, name, arr)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, atol=1e-10)


@pytest.mark.parametrize("name", ["svdvals", "eigvalsh", "eigvals"])
def test_spectral_gradient_at_repeated_values_matches_finite_differences(gradcheck, name):
    # the trace-like sums are smooth through a repeated value: eigenvalue sums are the trace,
    # the singular values of a symmetric positive definite matrix its eigenvalues
    base = np.diag([2.0, 2.0, 5.0])
    gradcheck(lambda A: SPECTRAL[name](tg, A), base)


def test_nuclear_norm_of_an_expanded_rank_one_input_has_a_gradient(torch):
    # seed 60613697's program (shrunk): matrix_norm(x.expand(...), 'nuc'); the gradient reaching
    # x sums U Vh over the expanded copies, basis-independent here
    def run(L):
        x = L.tensor(np.array([1.0, -1.5, -2.5, 1.0]).reshape(1, 4, 1), requires_grad=True)
        y = L.linalg.matrix_norm((x * 3).expand(2, 1, 4, 3), "nuc")
        (y * L.tensor([[0.5], [-1.0]])).sum().backward()
        return x.grad.numpy()
    got = run(tg)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, run(torch), rtol=1e-6, atol=1e-9)


# -- SILENT: multi_margin_loss's weight of the wrong size (seed 60614136) ---------------------
# PyTorch checks weight against the number of classes ("inconsistent weight size"), a 2-D
# weight in Python ("weight must be one-dimensional") and the targets ("target out of range");
# tapegrad indexed weight[y] and returned a loss for any weight long enough for the targets.

@pytest.mark.parametrize("wshape,error", [
    ((2,), (RuntimeError, "inconsistent weight size, expected 3 but got [2]")),
    ((0,), (RuntimeError, "inconsistent weight size, expected 3 but got [0]")),
    ((4,), (RuntimeError, "inconsistent weight size, expected 3 but got [4]")),
    ((), (ValueError, "weight must be one-dimensional")),
    ((1, 3), (ValueError, "weight must be one-dimensional")),
])
def test_multi_margin_loss_checks_the_weight(wshape, error):
    x, t = tg.zeros(2, 3, requires_grad=True), tg.tensor([2, 1])
    with pytest.raises(error[0]) as info:
        tg.nn.functional.multi_margin_loss(x, t, weight=tg.ones(wshape))
    assert error[1] in str(info.value)


@pytest.mark.parametrize("target", [[0, -1], [0, 3]])
def test_multi_margin_loss_checks_the_targets(target):
    with pytest.raises(RuntimeError, match="target out of range"):
        tg.nn.functional.multi_margin_loss(tg.zeros(2, 3), tg.tensor(target))


def test_multi_margin_loss_with_weight_matches_torch(torch):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 3)), rng.random(3) + 0.5
    t = np.array([0, 2, 1, 2])

    def run(L):
        xx = L.tensor(x, requires_grad=True)
        y = L.nn.functional.multi_margin_loss(xx, L.tensor(t), p=2, margin=0.7, weight=L.tensor(w))
        y.backward()
        return y.item(), xx.grad.numpy()
    (a, ga), (b, gb) = run(tg), run(torch)
    assert a == pytest.approx(b, rel=1e-12)
    np.testing.assert_allclose(ga, gb, rtol=1e-12)


# -- copysign / ldexp promote both operands; hypot refuses integers (seed 60614138) ----------

PROMOTED = [
    ("copysign", [3, -2], "int64", [-1.0, 0.0], "float64", "float64"),
    ("copysign", [1.5, -2.0], "float16", [-1.0, -0.0], "float32", "float32"),
    ("copysign", [1.5, 0.0], "float64", [-1, 1], "int64", "float64"),
    ("copysign", [-1], "int64", [1.0], "float16", "float16"),
    ("ldexp", [1e-3, 3.0, -2.5], "float16", [20, -30, 2], "int64", "float16"),
    ("ldexp", [1.5, -0.25], "float32", [2.5, -1.0], "float64", "float64"),
    ("ldexp", [1, 2], "int64", [3, 4], "int64", "float32"),
    ("ldexp", [1, 2], "int64", [0.5, 1.0], "float16", "float16"),
]


@pytest.mark.parametrize("name,a,adt,b,bdt,want", PROMOTED)
def test_float_binary_ops_promote_both_operands(name, a, adt, b, bdt, want):
    x = tg.tensor(a, dtype=getattr(tg, adt))
    y = getattr(tg, name)(x, tg.tensor(b, dtype=getattr(tg, bdt)))
    assert y.dtype == getattr(tg, want)


@pytest.mark.parametrize("name,a,adt,b,bdt,want", PROMOTED)
def test_float_binary_ops_promote_both_operands_as_torch(torch, name, a, adt, b, bdt, want):
    def run(L):
        x = L.tensor(a, dtype=getattr(L, adt))
        e = L.tensor(b, dtype=getattr(L, bdt))
        x.requires_grad_(x.is_floating_point())
        y = getattr(L, name)(x, e)
        if x.requires_grad:
            (y * 0.5).sum().backward()
        return str(y.dtype), y.detach().double().numpy(), \
            None if x.grad is None else x.grad.double().numpy()
    (d1, v1, g1), (d2, v2, g2) = run(tg), run(torch)
    assert d1 == d2
    np.testing.assert_array_equal(v1, v2)
    if g2 is not None:
        np.testing.assert_array_equal(g1, g2)


def test_ldexp_of_float16_does_not_overflow_its_scale():
    y = tg.ldexp(tg.tensor([1e-3], dtype=tg.float16), tg.tensor([20]))
    assert y.dtype == tg.float16 and y.item() == 1049.0


@pytest.mark.parametrize("a,b", [([3], [4]), ([True], [4])])
def test_hypot_refuses_integers(a, b):
    with pytest.raises(NotImplementedError, match='"hypot_cpu" not implemented for \'Long\''):
        tg.hypot(tg.tensor(a), tg.tensor(b))


# -- prelu of a 0-d input keeps its shape; its weight checks (seeds 62605113, 62605414) --------

@pytest.mark.parametrize("xshape,wshape,want", [
    ((), (1,), ()), ((), (), ()), ((3,), (1,), (3,)), ((2, 3), (3,), (2, 3)), ((2, 3), (), (2, 3)),
])
def test_prelu_shapes(xshape, wshape, want):
    x = tg.linspace(-1, 1, int(np.prod(xshape))).reshape(xshape).double().requires_grad_()
    w = (tg.ones(wshape, dtype=tg.float64) * 0.25).requires_grad_()
    y = tg.nn.functional.prelu(x, w)
    (y * 1.5).sum().backward()
    assert tuple(y.shape) == want and tuple(x.grad.shape) == xshape
    assert tuple(w.grad.shape) == wshape
    xs = x.detach().numpy()
    assert w.grad.sum().item() == pytest.approx(1.5 * xs[xs < 0].sum())


@pytest.mark.parametrize("xshape,wshape,message", [
    ((), (2,), "Not allow zero-dim input tensor."),
    ((2, 3), (1, 1), "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = 2"),
])
def test_prelu_refuses(xshape, wshape, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        tg.nn.functional.prelu(tg.ones(xshape), tg.ones(wshape))


# -- mode over an empty dim: PyTorch's IndexError (seed 62605081) ------------------------------

@pytest.mark.parametrize("shape,dim", [((2, 0), -1), ((0, 3), 0), ((0,), 0)])
def test_mode_over_an_empty_dim_raises_index_error(shape, dim):
    with pytest.raises(IndexError, match=r"mode\(\): Expected reduction dim \d to have non-zero"):
        tg.mode(tg.zeros(shape), dim)


# -- histogram takes any weight with one value per element (seed 62605054) --------------------
# PyTorch's 1-D histogram is histogramdd of the (N, 1) samples with the flattened weight.

@pytest.mark.parametrize("wshape", [(2,), (2, 1), (1, 1, 2), (1, 2)])
def test_histogram_weight_of_any_shape_with_one_value_per_element(wshape):
    x = tg.tensor([[0.1, 0.5]])
    w = tg.tensor([1.0, 2.0]).reshape(wshape)
    hist = tg.histogram(x, 5, weight=w, range=(-1.0, 1.0)).hist
    assert hist.tolist() == [0.0, 0.0, 1.0, 2.0, 0.0]


@pytest.mark.parametrize("wshape", [(3,), (), (2, 2)])
def test_histogram_weight_of_another_size_raises(wshape):
    x = tg.tensor([[0.1, 0.5]])
    with pytest.raises(RuntimeError, match=re.escape(
            f"but got input with shape [2, 1] and weight with shape [{int(np.prod(wshape))}]")):
        tg.histogram(x, 5, weight=tg.ones(wshape), range=(-1.0, 1.0))


# -- SILENT: Tensor.unfold is a view, as PyTorch's (seed 60614393) ---------------------------
# It was a copy: an in-place write into the windows did not reach self (torch's does), and one
# on the windows of a leaf that requires grad ran instead of raising.

def test_unfold_is_a_view_whose_writes_reach_self():
    x = tg.arange(6.0)
    u = x.unfold(0, 2, 3)           # windows [0, 1], [3, 4]: no overlap
    u.mul_(10)
    assert x.tolist() == [0.0, 10.0, 2.0, 30.0, 40.0, 5.0]
    assert u._base is x


def test_in_place_on_the_unfold_of_a_leaf_raises():
    x = tg.ones(2, 2, 1, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is "
                                           "being used in an in-place operation"):
        x.unfold(-1, 1, 2).div_(0.5)


@pytest.mark.parametrize("shape,dim,size,step", [((4,), 0, 2, 1), ((2, 5), 1, 3, 1),
                                                 ((5, 2), 0, 2, 3), ((3, 4, 2), 1, 2, 2),
                                                 ((), 0, 1, 1), ((0, 3), 1, 2, 1)])
def test_unfold_of_a_strided_input_matches_torch(torch, shape, dim, size, step):
    n = int(np.prod(shape))

    def run(L):
        base = L.arange(float(2 * max(n, 1)), dtype=L.float64).requires_grad_()
        x = base[: 2 * n].reshape((2 * shape[0],) + shape[1:])[::2] if shape else base[0]
        u = x.unfold(dim, size, step)
        w = L.linspace(-1, 1, u.numel(), dtype=L.float64).reshape(u.shape)
        (u * w).sum().backward()
        return tuple(u.shape), u.detach().numpy().tolist(), base.grad.numpy().tolist()
    assert run(tg) == run(torch)


# -- linalg.vecdot of two vectors does not broadcast (seed 63005192) ---------------------------

@pytest.mark.parametrize("a,b", [(27, 1), (1, 3), (0, 1)])
def test_vecdot_of_two_vectors_of_different_sizes_raises(a, b):
    with pytest.raises(RuntimeError, match=re.escape(
            f"inconsistent tensor size, expected tensor [{a}] and src [{b}]")):
        tg.linalg.vecdot(tg.ones(a, requires_grad=True), tg.ones(b))


def test_vecdot_still_broadcasts_batches():
    assert tg.linalg.vecdot(tg.ones(2, 3), tg.ones(1)).tolist() == [3.0, 3.0]
    assert tg.linalg.vecdot(tg.ones(3), tg.ones(2, 3)).tolist() == [3.0, 3.0]


# -- index_copy's count checks are IndexErrors, as PyTorch's (seed 60700073) -------------------

@pytest.mark.parametrize("index,sshape,dim,phrase", [
    ([0], (2, 3), -1, "Number of indices (1) should be equal to source.size(dim) (3)"),
    ([0], (1,), 0, "When source and destination are not scalars, their dimensionality must"),
    ([0, 1], (), 0, "When source is scalar, index should have one element (got 2)"),
])
def test_index_copy_count_checks(index, sshape, dim, phrase):
    with pytest.raises(IndexError, match=re.escape(phrase)):
        tg.zeros(2, 3).index_copy(dim, tg.tensor(index), tg.ones(sshape))


# -- SILENT (precision): hypot squares in the promoted dtype (seed 60700501) -------------------

def test_hypot_of_float64_and_float16_squares_in_float64(torch):
    a = np.array([1.1, 0.3, 2.7])
    b = np.array([1.7, -0.9, 0.11], dtype=np.float16)
    y = tg.hypot(tg.tensor(a), tg.tensor(b))
    assert y.dtype == tg.float64
    np.testing.assert_allclose(y.numpy(), np.hypot(a, b.astype(np.float64)), rtol=1e-15)
    want = torch.hypot(torch.tensor(a), torch.tensor(b)).numpy()
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-15)


# -- the norms check their dims as PyTorch (seed 60700859) ------------------------------------

@pytest.mark.parametrize("call,error,phrase", [
    (lambda x: tg.linalg.vector_norm(x, 0.5, dim=(2, 1, 0, 2)), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda x: tg.linalg.vector_norm(x, 2, dim=(0, -1, 1)), RuntimeError,
     "dim 1 appears multiple times in the list of dims"),
    (lambda x: tg.linalg.norm(x, dim=(0, 0)), RuntimeError,
     "dim 0 appears multiple times in the list of dims"),
    (lambda x: tg.linalg.matrix_norm(x, dim=(1, -1)), RuntimeError,
     "linalg.matrix_norm: dims must be different. Got (1, 1)"),
    (lambda x: tg.linalg.matrix_norm(x, dim=(-3,)), RuntimeError,
     "linalg.matrix_norm: dim must be a 2-tuple. Got -3"),
])
def test_norm_dim_checks(call, error, phrase):
    with pytest.raises(error, match=re.escape(phrase)):
        call(tg.zeros(2, 3))


def test_linalg_norm_without_ord_is_the_vector_two_norm():
    x = tg.tensor([[3.0, 0.0], [0.0, 4.0]], requires_grad=True)
    y = tg.linalg.norm(x, dim=(0, 1))
    y.backward()
    assert y.item() == 5.0 and np.allclose(x.grad.numpy(), [[0.6, 0.0], [0.0, 0.8]])


# -- the special functions PyTorch has no float16 CPU kernel for refuse it (seed 60700684) -----

NO_HALF = ["erfcx", "ndtri", "log_ndtr", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
           "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
           "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "spherical_bessel_j0", "airy_ai"]


@pytest.mark.parametrize("name", NO_HALF)
def test_special_function_without_a_half_kernel_refuses_float16(name):
    with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for \'Half\''):
        getattr(tg.special, name)(tg.tensor([0.5, 1.5], dtype=tg.float16))
    assert getattr(tg.special, name)(tg.tensor([0.5], dtype=tg.float32)).dtype == tg.float32


def test_zeta_refuses_float16_and_i0e_takes_it():
    with pytest.raises(NotImplementedError, match="\"zeta_cpu\" not implemented for 'Half'"):
        tg.special.zeta(tg.tensor([2.0], dtype=tg.float16), 1.0)
    assert tg.special.zeta(tg.tensor([2.0], dtype=tg.float16), tg.tensor([1.0])).dtype == tg.float32
    assert tg.special.i0e(tg.tensor([0.5], dtype=tg.float16)).dtype == tg.float16
