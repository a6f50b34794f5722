"""Elementwise math, special functions and small linear algebra of tapegrad._more_math, checked
against PyTorch, finite differences and known values."""
import math
import warnings

import numpy as np
import pytest

import tapegrad as tg

rng = np.random.default_rng(1)
nan = float("nan")


def _randn(*shape):
    return rng.standard_normal(shape)


def _spd_factor(n, batch=()):
    m = rng.standard_normal(batch + (n, n))
    return np.linalg.cholesky(m @ np.swapaxes(m, -1, -2) + n * np.eye(n))


_L = _spd_factor(3)
_U = np.triu(_randn(3, 3)) + 3 * np.eye(3)

# (name, args, kwargs): numpy float arrays become differentiable inputs
CASES = [
    ("fmax", (np.array([1.0, nan, 3, nan, 2]), np.array([2.0, 1, nan, nan, 2])), {}),
    ("fmin", (np.array([1.0, nan, 3, nan, 2]), np.array([2.0, 1, nan, nan, 2])), {}),
    ("fmax", (np.array([1, 2]), np.array([1.5, nan])), {}),
    ("heaviside", (np.array([-1, 0, 2]), np.array([7])), {}),
    ("logaddexp2", (_randn(3, 4), _randn(4)), {}),
    ("ldexp", (_randn(3), _randn(3)), {}),
    ("ldexp", (np.array([1, 2, 3]), np.array([1, 2, -3])), {}),
    ("nextafter", (_randn(3), np.array([5.0])), {}),
    ("vdot", (_randn(3), _randn(3)), {}),
    ("i0", (np.array([0.0, 1, -30, 100, 35, -40, 1e-3]),), {}),
    ("i0", (np.array([1, 2]),), {}),
    ("polygamma", (0, _randn(5)), {}),
    ("polygamma", (1, np.abs(_randn(5))), {}),
    ("polygamma", (2, _randn(5)), {}),
    ("polygamma", (3, _randn(5) * 10), {}),
    ("polygamma", (2, np.array([1, 2])), {}),
    ("mvlgamma", (np.abs(_randn(5)) + 2, 3), {}),
    ("igamma", (np.abs(_randn(6)) * 3, np.abs(_randn(6)) * 3), {}),
    ("igammac", (np.abs(_randn(6)) * 3, np.abs(_randn(6)) * 3), {}),
    ("rsub", (_randn(3), 3.0), {"alpha": 2}),
    ("rsub", (_randn(3), _randn(3)), {"alpha": 2}),
    ("angle", (np.array([-1.0, 0, 2, nan, -0.0]),), {}),
    ("angle", (np.array([-1, 0, 2]),), {}),
    ("isreal", (_randn(3),), {}),
    ("renorm", (_randn(3, 4), 2, 0, 1.0), {}),
    ("renorm", (_randn(3, 4, 2), 1, 1, 0.5), {}),
    ("addbmm", (_randn(2, 2), _randn(3, 2, 4), _randn(3, 4, 2)), {"beta": 0.5, "alpha": 2}),
    ("addbmm", (_randn(2), _randn(3, 2, 4), _randn(3, 4, 2)), {}),
    ("matrix_exp", (_randn(3, 3),), {}),
    ("matrix_exp", (_randn(2, 4, 4) * 3,), {}),
    ("cholesky_solve", (_randn(3, 2), _L), {}),
    ("cholesky_solve", (_randn(3, 2), _L.T.copy(), True), {}),
    ("cholesky_solve", (_randn(2, 3, 2), _L), {}),
    ("cholesky_solve", (_randn(3, 2), _spd_factor(3, (2,))), {}),
    ("cholesky_inverse", (_L,), {}),
    ("cholesky_inverse", (_L.T.copy(), True), {}),
    ("triangular_solve", (_randn(3, 2), _U), {}),
    ("triangular_solve", (_randn(3, 2), _U, True, True), {}),
    ("triangular_solve", (_randn(3, 2), _U.T.copy(), False, False, True), {}),
    ("qr", (_randn(4, 3),), {}),
]


def _args(lib, args):
    return [lib.tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray) else a
            for a in args]


@pytest.mark.parametrize("name,args,kwargs", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_matches_torch(torch, name, args, kwargs):
    theirs, ours = _args(torch, args), _args(tg, args)
    if name in ("igamma", "igammac"):       # no derivative in the first argument
        theirs[0].requires_grad_(False)
        ours[0].requires_grad_(False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # the deprecated ones warn (tested below)
        expected, got = getattr(torch, name)(*theirs, **kwargs), getattr(tg, name)(*ours, **kwargs)
    if isinstance(expected, tuple):
        expected, got = expected[0], got[0]
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-6,
                               atol=1e-9)
    if not expected.requires_grad:
        return
    weights = rng.standard_normal(tuple(expected.shape))
    differentiable = [i for i, a in enumerate(theirs)
                      if isinstance(a, torch.Tensor) and a.requires_grad]
    inputs_t = [theirs[i] for i in differentiable]
    inputs_g = [ours[i] for i in differentiable]
    grads_t = torch.autograd.grad((expected * torch.tensor(weights)).sum(), inputs_t)
    grads_g = tg.autograd.grad((got * tg.tensor(weights)).sum(), inputs_g)
    for a, b in zip(grads_t, grads_g):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("fn,arrays", [
    (lambda x, y: tg.fmax(x, y), (_randn(4), _randn(4))),
    (lambda x, y: tg.logaddexp2(x, y), (_randn(4), _randn(4))),
    (lambda x, y: tg.ldexp(x, y), (_randn(4), _randn(4))),
    (lambda x: tg.i0(x), (_randn(5) * 3,)),
    (lambda x: tg.polygamma(2, x), (np.abs(_randn(4)) + 0.5,)),
    (lambda x: tg.mvlgamma(x, 2), (np.abs(_randn(4)) + 2,)),
    (lambda x: tg.igamma(tg.tensor([0.5, 1.5, 3.0, 7.0], dtype=tg.float64), x),
     (np.array([0.3, 2.0, 4.5, 6.0]),)),
    (lambda x: tg.igammac(tg.tensor([0.5, 1.5, 3.0, 7.0], dtype=tg.float64), x),
     (np.array([0.3, 2.0, 4.5, 6.0]),)),
    (lambda x: tg.renorm(x, 2, 0, 1.0), (_randn(3, 4),)),
    (lambda x: tg.matrix_exp(x), (_randn(3, 3),)),
    # the factor's gradient is PyTorch's full-matrix one; the forward reads one triangle, so
    # finite differences see the triangle's part only
    (lambda b, l: tg.cholesky_solve(b, l.tril()), (_randn(3, 2), _L)),
    (lambda l: tg.cholesky_inverse(l.triu(), upper=True), (_L.T.copy(),)),
    (lambda i, a, b: tg.addbmm(i, a, b, beta=0.5), (_randn(2, 2), _randn(3, 2, 4),
                                                    _randn(3, 4, 2))),
])
def test_gradcheck(gradcheck, fn, arrays):
    gradcheck(fn, *arrays)


def test_values_without_torch():
    x = tg.tensor([1.0, nan, 3.0])
    y = tg.tensor([2.0, 1.0, nan])
    np.testing.assert_array_equal(tg.fmax(x, y).numpy(), [2.0, 1.0, 3.0])
    np.testing.assert_array_equal(tg.fmin(x, y).numpy(), [1.0, 1.0, 3.0])
    np.testing.assert_array_equal(tg.heaviside(tg.tensor([-1.0, 0.0, 2.0]),
                                               tg.tensor([0.5])).numpy(), [0.0, 0.5, 1.0])
    np.testing.assert_allclose(tg.logaddexp2(tg.tensor([1.0]), tg.tensor([1.0])).numpy(), [2.0])
    np.testing.assert_array_equal(tg.ldexp(tg.tensor([1.0, 3.0]), tg.tensor([3, -1])).numpy(),
                                  [8.0, 1.5])
    assert tg.nextafter(tg.tensor([1.0], dtype=tg.float64),
                        tg.tensor([2.0], dtype=tg.float64)).item() == np.nextafter(1.0, 2.0)
    assert tg.vdot(tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0])).item() == 11.0
    np.testing.assert_allclose(tg.i0(tg.tensor([0.0, 1.0])).numpy(), [1.0, 1.2660658777520082])
    # polygamma(1, 1) = pi^2 / 6, polygamma(2, 1) = -2 zeta(3), polygamma(3, 1) = pi^4 / 15
    np.testing.assert_allclose(tg.polygamma(1, tg.tensor([1.0], dtype=tg.float64)).numpy(),
                               [math.pi ** 2 / 6], rtol=1e-12)
    np.testing.assert_allclose(tg.polygamma(2, tg.tensor([1.0], dtype=tg.float64)).numpy(),
                               [-2 * 1.2020569031595942], rtol=1e-12)
    np.testing.assert_allclose(tg.polygamma(3, tg.tensor([1.0], dtype=tg.float64)).numpy(),
                               [math.pi ** 4 / 15], rtol=1e-12)
    # mvlgamma(x, 1) is lgamma; igamma(1, x) = 1 - exp(-x)
    np.testing.assert_allclose(tg.mvlgamma(tg.tensor([4.0]), 1).numpy(), [math.log(6)],
                               rtol=1e-6)
    xs = np.array([0.1, 1.0, 5.0, 30.0])
    np.testing.assert_allclose(tg.igamma(tg.ones(4, dtype=tg.float64), tg.tensor(xs)).numpy(),
                               1 - np.exp(-xs), rtol=1e-12)
    np.testing.assert_allclose(tg.igammac(tg.ones(4, dtype=tg.float64), tg.tensor(xs)).numpy(),
                               np.exp(-xs), rtol=1e-12)
    np.testing.assert_array_equal(tg.rsub(tg.tensor([1, 2]), 10).numpy(), [9, 8])
    np.testing.assert_allclose(tg.matrix_exp(tg.tensor([[0.0, 1.0], [-1.0, 0.0]],
                                                       dtype=tg.float64)).numpy(),
                               [[math.cos(1), math.sin(1)], [-math.sin(1), math.cos(1)]],
                               rtol=1e-12)
    rows = tg.renorm(tg.tensor([[3.0, 4.0], [0.3, 0.4]]), 2, 0, 1.0).numpy()
    np.testing.assert_allclose(rows, [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)


def test_complex_queries_on_real_tensors():
    x = tg.tensor([-1.0, 2.0], requires_grad=True)
    assert tg.real(x) is x and x.real is x and tg.conj(x) is x and x.conj() is x
    assert tg.resolve_conj(x) is x and tg.resolve_neg(x) is x and tg.conj_physical(x) is x
    assert not tg.is_conj(x) and not x.is_neg()
    assert tg.isreal(x).dtype == tg.bool and bool(tg.isreal(x).all())
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex"):
        tg.imag(x)
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex"):
        x.imag
    angle = tg.angle(x)
    np.testing.assert_allclose(angle.detach().numpy(), [math.pi, 0.0], rtol=1e-6)
    angle.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])


def test_errors():
    with pytest.raises(RuntimeError, match="heaviside is not yet implemented for tensors with "
                                           "different dtypes"):
        tg.heaviside(tg.tensor([1.0]), tg.tensor([1]))
    h = tg.heaviside(tg.tensor([1.0], requires_grad=True), tg.tensor([0.5]))
    with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not implemented"):
        h.sum().backward()
    with pytest.raises(TypeError, match="argument 'other' .* must be Tensor, not int"):
        tg.fmax(tg.ones(2), 3)
    with pytest.raises(NotImplementedError, match='"logaddexp2_cpu" not implemented for \'Long\''):
        tg.logaddexp2(tg.tensor([1]), tg.tensor([1]))
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 1D tensors"):
        tg.vdot(tg.ones(2, 2), tg.ones(2))
    with pytest.raises(RuntimeError, match="does not support negative n"):
        tg.polygamma(-1, tg.ones(2))
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        tg.mvlgamma(tg.ones(2), 0)
    with pytest.raises(NotImplementedError, match='"igamma_cpu" not implemented for \'Long\''):
        tg.igamma(tg.tensor([1]), tg.tensor([1]))
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input' is not"):
        tg.igamma(a, tg.tensor([0.5, 1.0])).sum().backward()
    with pytest.raises(RuntimeError, match="argument alpha must not be a floating point"):
        tg.rsub(tg.tensor([1]), tg.tensor([1]), alpha=0.5)
    with pytest.raises(RuntimeError, match="renorm: input needs at least 2 dimensions, got 1"):
        tg.renorm(tg.ones(3), 2, 0, 1.0)
    with pytest.raises(RuntimeError, match="renorm: non-positive-norm not supported"):
        tg.renorm(tg.ones(3, 3), 0, 0, 1.0)
    with pytest.raises(RuntimeError, match="renorm: expected maxnorm to be >= 0 but got -1"):
        tg.renorm(tg.ones(3, 3), 2, 0, -1)
    with pytest.raises(RuntimeError, match="must be batches of square matrices, but they are 2 "
                                           "by 3 matrices"):
        tg.matrix_exp(tg.ones(2, 3))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input"
                                           ". Got Long"):
        tg.matrix_exp(tg.ones(2, 2, dtype=tg.int64))
    with pytest.raises(RuntimeError, match="Incompatible matrix sizes for cholesky_solve"):
        tg.cholesky_solve(tg.ones(3, 2), tg.ones(2, 2))
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        with pytest.raises(RuntimeError, match="Expected one or more matrices"):
            tg.chain_matmul()


def test_geqrf_and_deprecations(torch):
    a = _randn(4, 3)
    expected = torch.geqrf(torch.tensor(a))
    got = tg.geqrf(tg.tensor(a))
    assert got.__match_args__ == ("a", "tau")
    np.testing.assert_allclose(got.a.numpy(), expected.a.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got.tau.numpy(), expected.tau.numpy(), rtol=1e-10, atol=1e-12)
    leaf = tg.tensor(a, requires_grad=True)
    with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not implemented"):
        tg.geqrf(leaf).a.sum().backward()
    with pytest.warns(UserWarning, match="torch.qr is deprecated in favor of torch.linalg.qr"):
        q, r = tg.qr(tg.tensor(a), some=False)
    assert tuple(q.shape) == (4, 4) and tuple(r.shape) == (4, 3)
    with pytest.warns(UserWarning, match="triangular_solve is deprecated"):
        result = tg.triangular_solve(tg.ones(3, 1), tg.eye(3))
    assert result.__match_args__ == ("solution", "cloned_coefficient")
    for name in ("solve", "lstsq", "symeig", "eig"):
        for fn in (getattr(tg, name), getattr(tg.ones(2, 2), name)):
            with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now "
                                                   "removed"):
                fn(tg.eye(2))


IN_PLACE = [
    ("addbmm_", (_randn(2, 2), _randn(3, 2, 4), _randn(3, 4, 2)), {"beta": 0.5}),
    ("addmv_", (_randn(2), _randn(2, 3), _randn(3)), {}),
    ("addr_", (_randn(2, 3), _randn(2), _randn(3)), {}),
    ("copysign_", (_randn(3), _randn(3)), {}),
    ("deg2rad_", (_randn(3),), {}),
    ("rad2deg_", (_randn(3),), {}),
    ("erfc_", (_randn(3),), {}),
    ("erfinv_", (_randn(3) / 3,), {}),
    ("exp2_", (_randn(3),), {}),
    ("lgamma_", (_randn(3),), {}),
    ("digamma_", (_randn(3),), {}),
    ("logit_", (rng.random(3),), {}),
    ("sinc_", (_randn(3),), {}),
    ("gcd_", (np.array([4, 6]), np.array([6, 4])), {}),
    ("lcm_", (np.array([4, 6]), np.array([6, 4])), {}),
    ("hypot_", (_randn(3), _randn(3)), {}),
    ("float_power_", (_randn(3), 2), {}),
    ("heaviside_", (_randn(3), _randn(3)), {}),
    ("ldexp_", (_randn(3), np.array([1, 2, 3])), {}),
    ("nextafter_", (_randn(3), _randn(3)), {}),
    ("i0_", (_randn(3),), {}),
    ("polygamma_", (_randn(3), 2), {}),
    ("mvlgamma_", (_randn(3) + 3, 2), {}),
    ("igamma_", (rng.random(3), rng.random(3)), {}),
    ("igammac_", (rng.random(3), rng.random(3)), {}),
    ("renorm_", (_randn(3, 3), 2, 0, 1.0), {}),
    ("conj_physical_", (_randn(3),), {}),
]


@pytest.mark.parametrize("name,args,kwargs", IN_PLACE, ids=[c[0] for c in IN_PLACE])
def test_in_place_matches_torch(torch, name, args, kwargs):
    theirs = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    ours = [tg.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    assert getattr(theirs[0], name)(*theirs[1:], **kwargs) is theirs[0]
    assert getattr(ours[0], name)(*ours[1:], **kwargs) is ours[0]
    np.testing.assert_allclose(ours[0].numpy(), theirs[0].numpy(), rtol=1e-7, atol=1e-12)


def test_in_place_rules():
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        tg.tensor([1, 2]).erfc_()
    with pytest.raises(RuntimeError, match="the base given to float_power_ has dtype Float but "
                                           "the operation's result requires dtype Double"):
        tg.ones(2).float_power_(2)
    x = tg.tensor([0.0, 90.0])
    assert tg.deg2rad_(x) is x
    np.testing.assert_allclose(x.numpy(), [0.0, math.pi / 2], rtol=1e-6)
    leaf = tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.lgamma_()
    # on a graph tensor the in-place op records: the gradient flows through it
    y = leaf * 2
    y.exp2_()
    y.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), [8 * math.log(2)] * 2, rtol=1e-6)


def _lu_inputs():
    return [_randn(4, 4), _randn(2, 3, 3), _randn(3, 5), _randn(5, 3), np.zeros((2, 2)),
            np.array([[1.0, 2, 3], [4, 5, 6], [7, 8, 10]])]


def test_lu_family_matches_torch(torch):
    # (each deprecation warning appears once per process, as PyTorch's TORCH_WARN_ONCE)
    with pytest.warns(UserWarning, match="torch.lu is deprecated"):
        tg.lu(tg.eye(2))
    with pytest.warns(UserWarning, match="torch.lu_solve is deprecated"):
        tg.lu_solve(tg.ones(2, 1), *tg.lu(tg.eye(2)))
    for a in _lu_inputs():
        lu, pivots = tg.lu(tg.tensor(a))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lu_t, pivots_t = torch.lu(torch.tensor(a))
        np.testing.assert_allclose(lu.numpy(), lu_t.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(pivots.numpy(), pivots_t.numpy())
        assert pivots.dtype == tg.int32
        for flags in ((True, True), (True, False), (False, True)):
            for got, expected in zip(tg.lu_unpack(lu, pivots, *flags),
                                     torch.lu_unpack(lu_t, pivots_t, *flags)):
                assert tuple(got.shape) == tuple(expected.shape)
                np.testing.assert_allclose(got.numpy(), expected.numpy(), atol=1e-12)
        if a.shape[-1] == a.shape[-2] and (np.linalg.matrix_rank(a) == a.shape[-1]).all():
            b = _randn(*a.shape[:-1], 2)
            x = tg.lu_solve(tg.tensor(b), lu, pivots)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = torch.lu_solve(torch.tensor(b), lu_t, pivots_t)
            np.testing.assert_allclose(x.numpy(), expected.numpy(), rtol=1e-10)


def test_lu_gradients(torch, gradcheck):
    a = _randn(3, 3)
    weights = _randn(3, 3)
    theirs = torch.tensor(a, requires_grad=True)
    ours = tg.tensor(a, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (torch.lu(theirs)[0] * torch.tensor(weights)).sum().backward()
        (tg.lu(ours)[0] * tg.tensor(weights)).sum().backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-8)
        gradcheck(lambda x: tg.lu(x)[0] * tg.tensor(weights), a)
        lu, pivots = tg.lu(tg.tensor(a))
        gradcheck(lambda b, packed: tg.lu_solve(b, packed, pivots), _randn(3, 2), lu.numpy())


def test_lu_values_and_errors():
    a = tg.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=tg.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lu, pivots = tg.lu(a)
        p, lower, upper = tg.lu_unpack(lu, pivots)
        np.testing.assert_allclose((p @ lower @ upper).numpy(), a.numpy(), rtol=1e-12)
        assert pivots.tolist() == [2, 2]
        np.testing.assert_allclose(tg.lu_solve(tg.tensor([[5.0], [11.0]], dtype=tg.float64),
                                               lu, pivots).numpy(), [[1.0], [2.0]], rtol=1e-12)
        info = tg.lu(tg.zeros(2, 2), get_infos=True).info
        assert info.item() == 1
        with pytest.raises(RuntimeError, match="Expected tensor with 2 or more dimensions"):
            tg.lu(tg.ones(3))
        with pytest.raises(RuntimeError, match="LU without pivoting is not implemented on the "
                                               "CPU"):
            tg.lu(tg.ones(2, 2), pivot=False)
        with pytest.raises(NotImplementedError, match='"lu_cpu" not implemented for \'Long\''):
            tg.lu(tg.ones(2, 2, dtype=tg.int64))
        with pytest.raises(RuntimeError, match="LU_pivots is expected to be a contiguous tensor "
                                               "of torch.int32"):
            tg.lu_unpack(lu, pivots.long())
        with pytest.raises(RuntimeError, match="Incompatible shapes of A and B for the equation"):
            tg.lu_solve(tg.ones(3, 1, dtype=tg.float64), lu, pivots)


def test_torchscript_norms_and_ger(torch):
    a = _randn(2, 3)
    with pytest.warns(UserWarning, match="frobenius_norm is deprecated"):
        got = tg.frobenius_norm(tg.tensor(a), [1], True)
    np.testing.assert_allclose(got.numpy(), np.linalg.norm(a, axis=1, keepdims=True))
    m = _randn(3, 3)
    with pytest.warns(UserWarning, match="nuclear_norm is deprecated"):
        assert math.isclose(tg.nuclear_norm(tg.tensor(m)).item(),
                            np.linalg.svd(m, compute_uv=False).sum(), rel_tol=1e-10)
    np.testing.assert_allclose(tg.norm_except_dim(tg.tensor(a), 2, 0).numpy(),
                               torch.norm_except_dim(torch.tensor(a), 2, 0).numpy())
    assert tg.norm_except_dim(tg.tensor(a), 2, -1).dim() == 0
    np.testing.assert_allclose(tg.tensor([1.0, 2.0]).ger(tg.tensor([3.0, 4.0])).numpy(),
                               [[3, 4], [6, 8]])
    with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now removed.\n"
                                           "Please use the `torch.linalg.matrix_rank`"):
        tg.matrix_rank(tg.eye(2))


GRADIENT_CASES = [
    ((5,), {}),
    ((5,), {"spacing": 2.0, "edge_order": 2}),
    ((4, 5), {"spacing": [0.5, 2.0]}),
    ((4, 5), {"dim": 1, "edge_order": 2}),
    ((3, 4, 5), {"dim": (0, 2), "spacing": 1.5}),
]


@pytest.mark.parametrize("shape,kwargs", GRADIENT_CASES)
def test_gradient_matches_torch(torch, shape, kwargs):
    a = _randn(*shape)
    theirs, ours = torch.tensor(a, requires_grad=True), tg.tensor(a, requires_grad=True)
    expected, got = torch.gradient(theirs, **kwargs), tg.gradient(ours, **kwargs)
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=1e-10)
    sum(e.sum() * (i + 1) for i, e in enumerate(expected)).backward()
    sum(g.sum() * (i + 1) for i, g in enumerate(got)).backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_coordinates(torch, gradcheck, edge_order):
    a, x = _randn(6), np.array([0.0, 0.5, 1.7, 2.0, 3.5, 4.0])
    expected = torch.gradient(torch.tensor(a), spacing=(torch.tensor(x),), edge_order=edge_order)
    got = tg.gradient(tg.tensor(a), spacing=(tg.tensor(x),), edge_order=edge_order)
    np.testing.assert_allclose(got[0].numpy(), expected[0].numpy(), rtol=1e-10)
    gradcheck(lambda t: tg.gradient(t, spacing=(tg.tensor(x),), edge_order=edge_order)[0], a)


def test_gradient_values_and_errors():
    squares = tg.tensor([1.0, 4.0, 9.0, 16.0, 25.0])
    np.testing.assert_allclose(tg.gradient(squares)[0].numpy(), [3, 4, 6, 8, 9])
    np.testing.assert_allclose(tg.gradient(squares, edge_order=2)[0].numpy(), [2, 4, 6, 8, 10])
    assert tg.gradient(tg.tensor([1, 4, 9]))[0].dtype == tg.float32
    assert tg.gradient(tg.ones(())) == ()
    with pytest.raises(RuntimeError, match="only supports edge_order=1 and edge_order=2"):
        tg.gradient(squares, edge_order=3)
    with pytest.raises(RuntimeError, match="expected each dimension size to be at least "
                                           "edge_order\\+1"):
        tg.gradient(tg.tensor([1.0, 2.0]), edge_order=2)
    with pytest.raises(RuntimeError, match="a list of length equal to 'self.dim\\(\\) = 2'"):
        tg.gradient(tg.ones(2, 3), spacing=[1.0])


# P(a, x) to 20 digits (a 40-digit mpmath sum of the power series, run once by hand): large a
# next to the centre, where the capped series and continued fraction stopped short
_IGAMMA_LARGE_A = [
    (1e6, 1e6, 0.50013298076087259124),
    (2.5e7, 2.5e7 - 2.6e4, 9.8717197613253463551e-8),
    (3e5, 3e5 + 2e3, 0.99986578796672873784),
    (4e6, 4e6 - 1.2e4, 9.5169678030915064288e-10),
    (50.0, 41.5, 0.1093476101965515381),
]


@pytest.mark.parametrize("a, x, expected", _IGAMMA_LARGE_A)
def test_igamma_large_a_near_the_centre(a, x, expected):
    # SILENT before: P(1e6, 1e6) was 0.477 (the 2000-term series cut off), P(1e8, 1e8) 0.079
    a_t, x_t = tg.tensor([a], dtype=tg.float64), tg.tensor([x], dtype=tg.float64)
    assert tg.igamma(a_t, x_t).item() == pytest.approx(expected, rel=1e-13)
    assert tg.igammac(a_t, x_t).item() == pytest.approx(1 - expected, rel=1e-13)
    assert tg.special.gammainc(a_t, x_t).item() == pytest.approx(expected, rel=1e-13)


def test_igamma_large_a_against_torch(torch):
    # where torch's own expansion applies (|x - a| / a < 4.5 / sqrt(a)) it is accurate to ~1e-9
    # (it takes pi in float for the expansion's sqrt(2 pi a)); at 1e8 and 1e10 tapegrad was off
    # by 0.4 and 0.5
    a = np.array([1e3, 1e5, 1e6, 1e7, 1e8, 1e10, 1e10])
    x = np.array([1e3 + 20, 1e5 - 300, 1e6, 1e7 + 3e3, 1e8, 1e10, 1e10 + 3e5])
    expected = torch.igamma(torch.tensor(a), torch.tensor(x)).numpy()
    got = tg.igamma(tg.tensor(a), tg.tensor(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-8)
    expected = torch.igammac(torch.tensor(a), torch.tensor(x)).numpy()
    np.testing.assert_allclose(tg.igammac(tg.tensor(a), tg.tensor(x)).numpy(), expected, rtol=1e-8)


def test_gamma_cdf_large_concentration(torch):
    # the sibling: Gamma.cdf shares the incomplete gamma function (SILENT before as igamma's)
    concentration = [1e6, 1e8]
    values = [1e6 + 500.0, 1e8 - 4e3]
    expected = torch.distributions.Gamma(torch.tensor(concentration, dtype=torch.float64),
                                         1.0).cdf(torch.tensor(values, dtype=torch.float64))
    got = tg.distributions.Gamma(tg.tensor(concentration, dtype=tg.float64),
                                 1.0).cdf(tg.tensor(values, dtype=tg.float64))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-8)


def test_temme_coefficients_regenerate():
    # the table is tools/igamma_coeffs.py's output (exact rationals rounded once), and its first
    # entries are the known ones: c_0 = -1/3 + eta/12 - 2 eta^2/135 ..., c_1 = -1/540 - ...
    import importlib.util
    import pathlib
    from tapegrad._temme_coeffs import TEMME_D
    path = pathlib.Path(__file__).resolve().parents[1] / "tools" / "igamma_coeffs.py"
    if not path.exists():
        pytest.skip("tools/ is not beside the tests (installed-wheel run)")
    spec = importlib.util.spec_from_file_location("igamma_coeffs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.temme_coefficients()
    assert [[float(v) for v in row] for row in rows] == [list(row) for row in TEMME_D]
    assert rows[0][:3] == [-module.Fraction(1, 3), module.Fraction(1, 12),
                           -module.Fraction(2, 135)]
    assert rows[1][0] == -module.Fraction(1, 540)
