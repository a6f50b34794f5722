"""Reductions: sum, mean, prod, max/min, amax/amin, var/std, logsumexp, norm, argmax/argmin,
count_nonzero.  Finite differences (float64, contiguous and non-contiguous inputs), ties and zeros,
empty reductions, bad input, and parity with PyTorch (values, dtypes, gradients, grad_fn names)."""
import gc
import math
import pickle
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.testing import numeric_grad
from tapegrad.testing import count_python_calls as _python_calls_during

RNG = np.random.default_rng(20240601)
INF = float("inf")
NAN = float("nan")


# -- helpers --------------------------------------------------------------------------------------

def layout_view(a, layout):
    """The same values as `a`, stored C-contiguous ("C"), transposed in memory ("T": Fortran order)
    or as every other element of a larger buffer ("S")."""
    if layout == "C" or a.ndim == 0:
        return a.copy()
    if layout == "T":
        v = np.asfortranarray(a)
    else:
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), dtype=a.dtype)
        big[..., ::2] = a
        v = big[..., ::2]
    assert np.array_equal(v, a)
    return v


def first(out):
    return out[0] if isinstance(out, tuple) else out


def check(fn, *arrays, layout="C", atol=1e-6, rtol=1e-5):
    """tapegrad's gradient of sum(w * fn(*inputs)) (w a fixed non-uniform weight) against central
    differences, with the inputs stored in `layout`."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    tensors = [tg.from_numpy(layout_view(a, layout)).requires_grad_() for a in arrays]
    if layout == "T":
        assert any(not t._array.flags.c_contiguous for t in tensors if t._array.ndim >= 2)
    out = first(fn(*tensors))
    w = np.linspace(0.5, 1.5, out.numel()).reshape(out.shape)
    (out * tg.tensor(w)).sum().backward()

    def scalar(*arrs):
        o = first(fn(*[tg.tensor(a) for a in arrs]))
        return float((o.detach().numpy() * w).sum())

    for t, e in zip(tensors, numeric_grad(scalar, arrays)):
        assert t.grad is not None, "no gradient reached an input"
        assert t.grad.shape == t.shape and t.grad.dtype == tg.float64
        np.testing.assert_allclose(t.grad.numpy(), e, atol=atol, rtol=rtol)


def randn(*shape):
    return RNG.standard_normal(shape)


def grad_of(fn, data, dtype=tg.float32):
    x = tg.tensor(data, dtype=dtype, requires_grad=True)
    first(fn(x)).sum().backward()
    return x.grad.numpy()


def name(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


# -- finite differences ---------------------------------------------------------------------------

FD_CASES = [
    ("sum", lambda x: x.sum(), (3, 4)),
    ("sum dim", lambda x: x.sum(1), (3, 4)),
    ("sum -1 keepdim", lambda x: x.sum(-1, keepdim=True), (2, 1, 3)),
    ("sum tuple", lambda x: tg.sum(x, (0, 2)), (2, 3, 4)),
    ("sum ()", lambda x: x.sum(()), (2, 3)),
    ("sum dtype", lambda x: tg.sum(x, 0, dtype=tg.float64), (3, 4)),
    ("mean", lambda x: x.mean(), (3, 4)),
    ("mean tuple keepdim", lambda x: x.mean((-1, 0), keepdim=True), (2, 3, 4)),
    ("prod", lambda x: x.prod(), (2, 3)),
    ("prod dim", lambda x: x.prod(1), (3, 4)),
    ("prod -1 keepdim", lambda x: x.prod(-1, keepdim=True), (2, 1, 3)),
    ("prod dim of size 1", lambda x: x.prod(1), (2, 1, 3)),
    ("max", lambda x: x.max(), (3, 4)),
    ("min", lambda x: x.min(), (3, 4)),
    ("max dim", lambda x: x.max(1), (3, 4)),
    ("min -1 keepdim", lambda x: x.min(-1, keepdim=True), (2, 1, 3)),
    ("max dim 0", lambda x: tg.max(x, 0).values, (4, 3)),
    ("amax", lambda x: x.amax(), (3, 4)),
    ("amax tuple", lambda x: x.amax((0, -1)), (2, 3, 4)),
    ("amin dim keepdim", lambda x: tg.amin(x, 1, keepdim=True), (3, 4)),
    ("amin size-1 dim", lambda x: x.amin(1), (2, 1, 3)),
    ("var", lambda x: x.var(), (3, 4)),
    ("var dim", lambda x: x.var(1), (3, 4)),
    ("var correction 0 keepdim", lambda x: x.var(0, keepdim=True, correction=0), (3, 4)),
    ("var unbiased=False tuple", lambda x: x.var((0, 2), unbiased=False), (2, 3, 4)),
    ("var correction 2", lambda x: tg.var(x, -1, correction=2), (2, 5)),
    ("std", lambda x: x.std(), (3, 4)),
    ("std dim", lambda x: x.std(-1), (2, 1, 3)),
    ("std keepdim", lambda x: tg.std(x, 0, keepdim=True), (4, 3)),
    ("logsumexp", lambda x: x.logsumexp(1), (3, 4)),
    ("logsumexp tuple keepdim", lambda x: tg.logsumexp(x, (0, 2), keepdim=True), (2, 3, 4)),
    ("logsumexp -1", lambda x: x.logsumexp(-1), (4,)),
    ("norm", lambda x: x.norm(), (3, 4)),
    ("norm dim", lambda x: x.norm(dim=1), (3, 4)),
    ("norm 1", lambda x: x.norm(1), (3, 4)),
    ("norm inf", lambda x: x.norm(INF), (3, 4)),
    ("norm -inf dim", lambda x: x.norm(-INF, dim=0), (3, 4)),
    ("norm 3 keepdim", lambda x: tg.norm(x, 3, dim=-1, keepdim=True), (2, 1, 3)),
    ("norm 0.5", lambda x: x.norm(0.5), (3, 4)),
    ("norm -1", lambda x: x.norm(-1, dim=(0, 1)), (2, 3)),
    ("norm fro tuple", lambda x: x.norm("fro", dim=(0, 2)), (2, 3, 4)),
]


@pytest.mark.parametrize("layout", ["C", "T", "S"])
@pytest.mark.parametrize("fn,shape", [c[1:] for c in FD_CASES], ids=[c[0] for c in FD_CASES])
def test_finite_differences(fn, shape, layout):
    x = randn(*shape)
    if layout != "C" and len(shape) < 2:
        layout = "S"
    check(fn, x, layout=layout)


def test_finite_differences_0d_and_size_1():
    for fn in (lambda x: x.sum(), lambda x: x.prod(), lambda x: x.amax(), lambda x: x.max(),
               lambda x: x.logsumexp(0), lambda x: x.norm(), lambda x: x.max(0),
               lambda x: x.mean(-1)):
        check(fn, np.array(-0.7))
        check(fn, np.array([-0.7]))


def test_prod_finite_differences_with_zeros():
    # prod is multilinear, so central differences are exact even at zeros
    for data in ([[0.0, 2.0, -3.0], [1.5, 0.5, 2.0]],          # one zero
                 [[0.0, 2.0, 0.0], [1.5, 0.5, 2.0]],           # two zeros in a row
                 [[0.0, 2.0, 3.0], [0.0, 0.0, 2.0]]):          # zeros in several rows/columns
        for fn in (lambda x: x.prod(), lambda x: x.prod(1), lambda x: x.prod(0, keepdim=True)):
            check(fn, np.array(data))
            check(fn, np.array(data), layout="T")


# -- ties, zeros, special values ------------------------------------------------------------------

TIES = [[1.0, 3.0, 3.0], [2.0, 0.0, 3.0]]


def test_max_min_amax_amin_split_ties_evenly():
    third = 1 / 3
    np.testing.assert_allclose(grad_of(lambda x: x.max(), TIES),
                               [[0, third, third], [0, 0, third]], rtol=1e-6)
    np.testing.assert_allclose(grad_of(lambda x: x.amax(), TIES),
                               [[0, third, third], [0, 0, third]], rtol=1e-6)
    np.testing.assert_allclose(grad_of(lambda x: x.amax(1), TIES), [[0, .5, .5], [0, 0, 1]])
    np.testing.assert_allclose(grad_of(lambda x: x.amin(0), [[1.0, 2.0], [1.0, 3.0]]),
                               [[.5, 1], [.5, 0]])
    np.testing.assert_allclose(grad_of(lambda x: x.min(), [1.0, 1.0, 3.0]), [.5, .5, 0])


def test_max_min_along_dim_send_the_gradient_to_the_returned_index():
    r = tg.tensor(TIES, requires_grad=True).max(1)
    assert r.indices.tolist() == [1, 2]                        # first maximal element
    np.testing.assert_array_equal(grad_of(lambda x: x.max(1), TIES), [[0, 1, 0], [0, 0, 1]])
    np.testing.assert_array_equal(grad_of(lambda x: x.min(1, keepdim=True), [[3.0, 1.0, 1.0]]),
                                  [[0, 1, 0]])


def test_nan_propagates_and_max_gives_its_gradient_to_the_nans():
    x = tg.tensor([1.0, NAN, 3.0], requires_grad=True)
    y = x.max()
    assert math.isnan(y.item())
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 1, 0])
    r = tg.tensor([1.0, NAN, 3.0]).max(0)
    assert math.isnan(r.values.item()) and r.indices.item() == 1
    g = grad_of(lambda x: x.amax(), [1.0, NAN, 3.0])
    assert np.isnan(g).all()                                   # as PyTorch


def test_prod_gradient_with_zeros_matches_the_product_of_the_others():
    np.testing.assert_array_equal(grad_of(lambda x: x.prod(), [[0.0, 2.0, 5.0], [1.0, 4.0, 3.0]]),
                                  [[120, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(grad_of(lambda x: x.prod(), [[0.0, 2.0, 0.0], [1.0, 2.0, 3.0]]),
                                  np.zeros((2, 3)))
    np.testing.assert_array_equal(grad_of(lambda x: x.prod(1), [[0.0, 2.0, 0.0], [1.0, 0.0, 3.0]]),
                                  [[0, 0, 0], [0, 3, 0]])
    np.testing.assert_array_equal(grad_of(lambda x: x.prod(0), [[0.0, 2.0, 0.0], [1.0, 0.0, 3.0]]),
                                  [[1, 0, 3], [0, 2, 0]])
    np.testing.assert_array_equal(grad_of(lambda x: x.prod(), 0.0), 1.0)


def test_norm_std_gradients_at_zero_are_zero_and_p0_has_none():
    for p in (2, 1, INF, 3, 0.5):
        np.testing.assert_array_equal(grad_of(lambda x: x.norm(p), [0.0, 0.0]), [0, 0])
    np.testing.assert_array_equal(grad_of(lambda x: x.norm(dim=1), [[0.0, 0.0], [3.0, 4.0]]),
                                  np.array([[0, 0], [.6, .8]], dtype=np.float32))
    np.testing.assert_array_equal(grad_of(lambda x: x.std(), [2.0, 2.0, 2.0]), [0, 0, 0])
    x = tg.tensor([1.0, 0.0, 2.0], requires_grad=True)
    y = x.norm(0)
    assert y.item() == 2 and name(y) == "LinalgVectorNormBackward0"
    y.backward()
    assert x.grad is None                                      # PyTorch defines no gradient


def test_logsumexp_is_stable_and_handles_infinities():
    x = tg.tensor([1000.0, 1000.0], requires_grad=True)
    y = x.logsumexp(0)
    np.testing.assert_allclose(y.item(), 1000 + math.log(2), rtol=1e-6)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [.5, .5], rtol=1e-4)   # float32 rounding
    assert tg.tensor([-1000.0, -1000.0]).logsumexp(0).item() == pytest.approx(-1000 + math.log(2))
    assert tg.tensor([-INF, -INF]).logsumexp(0).item() == -INF
    assert tg.tensor([INF, 1.0]).logsumexp(0).item() == INF
    np.testing.assert_array_equal(grad_of(lambda x: x.logsumexp(0), [-INF, 1.0]), [0, 1])
    assert tg.zeros(0, 3).logsumexp(0).tolist() == [-INF] * 3


def test_special_values_give_ieee_results_without_warnings():
    # pytest turns warnings into errors: numpy's "invalid value encountered in reduce" would fail
    x = tg.tensor([[INF, -INF], [NAN, 1.0]], requires_grad=True)
    assert math.isnan(x.sum().item()) and math.isnan(x.mean().item())
    assert x.sum(0).tolist()[1] == -INF and math.isnan(x.prod().item())
    assert x.amax(1).tolist()[0] == INF and math.isnan(x.var().item())
    big = tg.tensor([3e38, 3e38], requires_grad=True)
    assert big.sum().item() == INF and big.norm().item() == INF and big.prod().item() == INF
    assert big.logsumexp(0).item() == pytest.approx(3e38)
    big.sum().backward()


# -- empty reductions -----------------------------------------------------------------------------

def test_reductions_over_empty_dims():
    e = tg.zeros(0, 3)
    assert e.sum().item() == 0 and e.sum(0).tolist() == [0, 0, 0]
    assert math.isnan(e.mean().item())
    assert e.prod().item() == 1 and e.prod(0).tolist() == [1, 1, 1]
    assert e.norm().item() == 0 and e.norm(dim=0).tolist() == [0, 0, 0]
    assert e.count_nonzero().item() == 0
    assert e.amax(1).shape == (0,) and e.max(1).indices.dtype == tg.int64
    assert e.argmin(1).shape == (0,)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        assert math.isnan(e.var().item())


EMPTY_ERRORS = [
    (lambda e: e.max(), RuntimeError,
     r"max\(\): Expected reduction dim to be specified for input.numel\(\) == 0\. Specify the "
     r"reduction dim with the 'dim' argument\."),
    (lambda e: e.min(), RuntimeError, r"min\(\): Expected reduction dim to be specified"),
    (lambda e: e.amax(), RuntimeError, r"amax\(\): Expected reduction dim to be specified"),
    (lambda e: e.amin(()), RuntimeError, r"amin\(\): Expected reduction dim to be specified"),
    (lambda e: e.max(0), IndexError, r"max\(\): Expected reduction dim 0 to have non-zero size\."),
    (lambda e: e.min(-2), IndexError, r"min\(\): Expected reduction dim 0 to have non-zero size"),
    (lambda e: e.amax((0, 1)), IndexError, r"amax\(\): Expected reduction dim 0 to have non-zero"),
    (lambda e: e.argmax(), IndexError, r"argmax\(\): Expected reduction dim to be specified for "
                                       r"input.numel\(\) == 0\."),
    (lambda e: e.argmin(0), IndexError, r"argmin\(\): Expected reduction dim 0 to have non-zero"),
    (lambda e: e.norm(INF), RuntimeError, r"linalg.vector_norm cannot compute the inf norm on an "
                                          r"empty tensor because the operation does not have an "
                                          r"identity"),
    (lambda e: e.norm(-1, dim=0), RuntimeError, r"cannot compute the -1 norm on the dimension "
                                                r"0because this dimension is empty"),
]


@pytest.mark.parametrize("fn,exc,msg", EMPTY_ERRORS)
def test_empty_reduction_errors(fn, exc, msg):
    with pytest.raises(exc, match=msg):
        fn(tg.zeros(0, 3))


# -- return types, dtypes, signatures -------------------------------------------------------------

def test_max_min_with_dim_return_a_named_tuple():
    x = tg.tensor(TIES, requires_grad=True)
    r = x.max(dim=1, keepdim=True)
    assert type(r) is tg.return_types.max and isinstance(r, tuple) and len(r) == 2
    assert r.values is r[0] and r.indices is r[1]
    values, indices = r
    assert values.shape == (2, 1) and indices.dtype == tg.int64 and not indices.requires_grad
    assert name(values) == "MaxBackward0"
    assert repr(r).startswith("torch.return_types.max(\nvalues=tensor([[3.],")
    assert repr(r).endswith("indices=tensor([[1],\n        [2]]))")
    assert str(r) == repr(r)
    m = tg.min(tg.tensor([[1.0, 0.0]]), 1)
    assert type(m).__name__ == "min" and m.indices.tolist() == [1]
    assert repr(m) == "torch.return_types.min(\nvalues=tensor([0.]),\nindices=tensor([1]))"
    import tapegrad.return_types as rt
    assert rt.max is tg.return_types.max
    again = pickle.loads(pickle.dumps(tg.return_types.max((1, 2))))
    assert type(again) is tg.return_types.max and again.indices == 2


def test_0d_reductions():
    x = tg.tensor(3.0, requires_grad=True)
    r = x.max(0)
    assert r.values.item() == 3 and r.indices.item() == 0 and r.values.shape == ()
    assert x.amax(-1).item() == 3 and x.sum(-1).item() == 3 and x.argmin(0).item() == 0
    assert x.norm().item() == 3 and x.prod(0).item() == 3


def test_result_dtypes():
    i = tg.tensor([[1, 2, 3], [4, 5, 6]])
    b = tg.tensor([True, False, True])
    assert i.sum().dtype == tg.int64 and b.sum().dtype == tg.int64
    assert tg.tensor([1, 2], dtype=tg.int32).sum().dtype == tg.int64
    assert i.prod().item() == 720 and b.prod().dtype == tg.int64
    assert i.max().dtype == tg.int64 and b.amax().dtype == tg.bool
    assert i.max(1).values.tolist() == [3, 6]
    assert i.logsumexp(1).dtype == tg.float32
    assert i.count_nonzero(1).tolist() == [3, 3] and i.argmin().item() == 0
    assert tg.mean(i, dtype=tg.float32).item() == 3.5
    assert tg.sum(i, dtype=tg.float64).dtype == tg.float64
    assert tg.prod(i, 1, dtype=tg.float64).tolist() == [6.0, 120.0]
    h = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float16)
    for out in (h.sum(), h.var(), h.norm(), h.logsumexp(0), h.amax(), h.prod(), h.std()):
        assert out.dtype == tg.float16
    assert tg.norm(tg.tensor([3.0, 4.0]), dtype=tg.float64).dtype == tg.float64


def test_sum_with_dtype_gives_the_gradient_in_the_input_dtype():
    x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = tg.sum(x, dtype=tg.float64)
    assert y.dtype == tg.float64 and name(y) == "SumBackward0"
    y.backward()
    assert x.grad.dtype == tg.float32 and x.grad.tolist() == [[1, 1], [1, 1]]
    z = tg.mean(x, 1, dtype=tg.float64)
    assert name(z) == "MeanBackward1"
    x.grad = None
    z.sum().backward()
    assert x.grad.dtype == tg.float32 and x.grad.tolist() == [[.5, .5], [.5, .5]]


def test_var_std_signatures_and_degrees_of_freedom():
    x = tg.tensor([[1.0, 3.0, 3.0], [2.0, 0.0, 3.0]])
    assert x.var().item() == pytest.approx(1.6)
    assert x.var(False).item() == pytest.approx(4 / 3)                       # var(unbiased)
    assert x.var(1, False, True).shape == (2, 1)                 # dim, unbiased, keepdim
    assert x.var(1, correction=0.5).tolist() == pytest.approx([1.0666667, 1.8666667])
    assert x.std(unbiased=False).item() == pytest.approx(math.sqrt(4 / 3))
    assert x.var(None, keepdim=True).shape == (1, 1)
    with pytest.warns(UserWarning, match=r"std\(\): degrees of freedom is <= 0"):
        assert math.isnan(tg.ones(1).std().item())
    with pytest.warns(UserWarning, match=r"var\(\): degrees of freedom"):
        assert tg.tensor([1.0, 2.0]).var(correction=2).item() == INF


def test_count_nonzero_and_argmin():
    x = tg.tensor([[0.0, 1.0, 2.0], [0.0, 0.0, 5.0]])
    assert x.count_nonzero().item() == 3 and x.count_nonzero().dtype == tg.int64
    assert x.count_nonzero(0).tolist() == [0, 1, 2]
    assert tg.count_nonzero(x, dim=(-1,)).tolist() == [2, 1]
    assert x.count_nonzero(()).item() == 3
    assert x.argmin().item() == 0 and x.argmin(1, True).tolist() == [[0], [0]]
    assert x.argmax(None, True).tolist() == [[5]]
    y = x.requires_grad_().argmin(1)
    assert not y.requires_grad and y.grad_fn is None


def test_dim_conventions():
    x = tg.tensor(randn(2, 3, 4))
    np.testing.assert_allclose(x.sum(()).item(), x.numpy().sum(), rtol=1e-5)   # () = all dims
    np.testing.assert_allclose(x.amax([]).item(), x.numpy().max())
    np.testing.assert_allclose(x.var(()).item(), x.numpy().var(ddof=1), rtol=1e-5)
    np.testing.assert_allclose(x.norm(dim=()).item(), np.linalg.norm(x.numpy()), rtol=1e-5)
    np.testing.assert_allclose(x.sum(np.int64(1)).numpy(), x.numpy().sum(1), rtol=1e-5)
    assert x.sum([0, -1]).shape == (3,) and x.amax((-1, 0), True).shape == (1, 3, 1)
    assert x.sum(None, True).shape == (1, 1, 1) and x.norm(2, None, True).shape == (1, 1, 1)


def test_no_record_without_grad_mode_or_grad_inputs():
    x = tg.tensor(randn(3, 4), requires_grad=True)
    with tg.no_grad():
        for y in (x.amax(), x.prod(1), x.var(), x.logsumexp(0), x.norm(), x.max(1).values):
            assert y.grad_fn is None and not y.requires_grad
    assert tg.tensor(randn(3)).norm().grad_fn is None


def test_backward_twice_through_saved_values_raises():
    x = tg.tensor(randn(3, 4), requires_grad=True)
    for y in (x.prod(), x.amax(), x.std(), x.norm(), x.logsumexp(1).sum(), x.max(0)[0].sum()):
        y.backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            y.backward()


# -- bad input ------------------------------------------------------------------------------------

X = tg.ones(2, 3)
I = tg.tensor([[1, 2, 3], [4, 5, 6]])
BAD = [
    (lambda: X.max(2), IndexError,
     r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
    (lambda: X.amin(-3), IndexError, r"expected to be in range of \[-2, 1\], but got -3"),
    (lambda: X.amax((0, 0)), RuntimeError, r"dim 0 appears multiple times in the list of dims"),
    (lambda: X.amax((1, -1)), RuntimeError, r"dim 1 appears multiple times"),
    (lambda: X.sum((0, -2)), RuntimeError, r"dim 0 appears multiple times"),
    (lambda: X.count_nonzero((0, 0)), RuntimeError, r"dim 0 appears multiple times"),
    (lambda: X.prod(-3), IndexError, r"Dimension out of range"),
    (lambda: X.logsumexp(None), TypeError, r"logsumexp\(\): argument 'dim' \(position 1\) must "
                                           r"be tuple of ints, not NoneType"),
    (lambda: X.prod((0, 1)), TypeError, r"prod\(\) received an invalid combination of arguments "
                                        r"- got \(tuple\)"),
    (lambda: X.max((0, 1)), TypeError, r"max\(\) received an invalid combination of arguments - "
                                       r"got \(tuple\)"),
    (lambda: X.max(1.0), TypeError, r"max\(\) received an invalid combination .* got \(float\)"),
    (lambda: X.max(True), TypeError, r"got \(bool\)"),
    (lambda: X.sum("a"), TypeError, r"sum\(\) received an invalid combination .* got \(str\)"),
    (lambda: X.amax(True), TypeError, r"amax\(\): argument 'dim' \(position 1\) must be tuple of "
                                      r"ints, not bool"),
    (lambda: X.max(keepdim=True), TypeError, r"got \(keepdim=bool, \)"),
    (lambda: X.var(0, unbiased=True, correction=1), TypeError,
     r"var\(\) received an invalid combination of arguments"),
    (lambda: I.var(), RuntimeError, r"std and var only support floating point and complex dtypes"),
    (lambda: I.std(1), RuntimeError, r"std and var only support floating point"),
    (lambda: I.norm(), RuntimeError, r"linalg.vector_norm: Expected a floating point or complex "
                                     r"tensor as input. Got Long"),
    (lambda: I.mean(), RuntimeError, r"mean\(\): could not infer output dtype. Input dtype must "
                                     r"be either a floating point or complex dtype. Got: Long"),
    (lambda: tg.mean(X, dtype=tg.int64), RuntimeError,
     r"Optional dtype must be either a floating point or complex dtype. Got: Long"),
    (lambda: X.norm("abc"), RuntimeError, r"linalg.matrix_norm: Order abc not supported\."),
    (lambda: tg.ones(2, 2, 2).norm("fro", dim=(0, 1, 2)), RuntimeError,
     r"linalg.matrix_norm: dim must be a 2-tuple. Got 0 1 2"),
    (lambda: tg.tensor([True, False]).argmax(), RuntimeError,
     r"argmax\(\): does not support bool input"),
    (lambda: tg.tensor([True, False]).argmin(0), RuntimeError, r"argmin\(\): does not support"),
    (lambda: tg.sum(tg.ones(2, requires_grad=True), dtype=tg.int32), RuntimeError,
     r"Autograd not support dtype: Int"),
]


@pytest.mark.parametrize("fn,exc,msg", BAD)
def test_bad_input(fn, exc, msg):
    with pytest.raises(exc, match=msg):
        fn()


def test_failed_op_leaves_no_record():
    x = tg.tensor(randn(2, 3), requires_grad=True)
    gc.collect()  # earlier tests' cyclic garbage must not be freed mid-test
    before = tg._core.tape().live_records
    for fn in (lambda: x.max(5), lambda: x.amax((0, 0)), lambda: x.prod((0, 1)),
               lambda: x.norm("abc"), lambda: x.logsumexp(None)):
        with pytest.raises((IndexError, RuntimeError, TypeError)):
            fn()
    assert tg._core.tape().live_records == before


# -- the sweep stays compiled ---------------------------------------------------------------------

CHAIN_STEPS = {
    "amax": lambda y: y + y.amax(1, keepdim=True) * 0.01,
    "max": lambda y: y + y.max() * 0.01,
    "max dim": lambda y: y + y.max(1, keepdim=True).values * 0.01,
    "prod": lambda y: y + y.prod(1, keepdim=True) * 0.01,
    "prod all": lambda y: y + y.prod() * 0.01,
    "var": lambda y: y + y.var(1, keepdim=True) * 0.01,
    "std": lambda y: y + y.std(0, keepdim=True) * 0.01,
    "logsumexp": lambda y: y + y.logsumexp(1, keepdim=True) * 0.01,
    "norm": lambda y: y + y.norm(dim=1, keepdim=True) * 0.01,
    "norm inf": lambda y: y + y.norm(INF) * 0.01,
    "norm 3": lambda y: y + y.norm(3) * 0.01,
    "sum dtype": lambda y: y + tg.sum(y, 1, True, dtype=tg.float32) * 0.01,
}


@pytest.mark.parametrize("step", list(CHAIN_STEPS.values()), ids=list(CHAIN_STEPS))
@pytest.mark.parametrize("start", [np.linspace(-1, 1, 12).reshape(3, 4) + 0.05,
                                   np.array([[0.0, 1.0, 2.0, 3.0], [1.0, 0.0, 0.0, 2.0],
                                             [2.0, 2.0, 1.0, 1.0]])], ids=["plain", "zeros-ties"])
def test_backward_makes_no_python_call_per_reduction(step, start):
    counts = []
    for n in (3, 12):
        y = x = tg.tensor(start, requires_grad=True)
        for _ in range(n):
            y = step(y)
        loss = y.sum()
        counts.append(_python_calls_during(loss.backward))
        assert x.grad is not None
    assert counts[0] == counts[1]


# -- parity with PyTorch --------------------------------------------------------------------------

def _run(mod, fn, arrays, req):
    ts = []
    for a, r in zip(arrays, req):
        t = mod.from_numpy(a)
        ts.append(t.requires_grad_() if r and a.dtype.kind == "f" else t)
    try:
        out = fn(mod, *ts)
    except Exception as e:                                    # noqa: BLE001 - compared below
        return ("raised", type(e).__name__, str(e).split("\n")[0])
    outs = list(out) if isinstance(out, tuple) else [out]
    vals = [(o.detach().numpy().copy(), str(o.dtype), name(o), type(out).__name__) for o in outs]
    grads = None
    if outs[0].requires_grad:
        w = np.linspace(-1, 2, outs[0].numel()).reshape(tuple(outs[0].shape))
        w = mod.from_numpy(w.astype(outs[0].detach().numpy().dtype))
        (outs[0] * w).sum().backward()
        grads = [None if t.grad is None else t.grad.numpy().copy() for t in ts if t.requires_grad]
    return vals, grads


def assert_parity(torch, fn, *arrays, req=None, rtol=1e-4, atol=1e-5):
    req = req or [True] * len(arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _run(torch, fn, arrays, req)
        got = _run(tg, fn, arrays, req)
    if expected[0] == "raised" or got[0] == "raised":
        assert got == expected
        return
    (ev, eg), (gv, gg) = expected, got
    assert len(ev) == len(gv)
    for (a, da, na, ta), (b, db, nb, tb) in zip(ev, gv):
        assert (db, nb, tb) == (da, na, ta)
        assert b.shape == a.shape
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, equal_nan=True)
    assert (gg is None) == (eg is None)
    for a, b in zip(eg or [], gg or []):
        assert (a is None) == (b is None)
        if a is not None:
            assert b.shape == a.shape and b.dtype == a.dtype
            np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, equal_nan=True)


PARITY_FNS = {
    "sum": lambda m, x: x.sum(),
    "sum dim": lambda m, x: x.sum(1),
    "sum ()": lambda m, x: x.sum(()),
    "sum -1 keepdim": lambda m, x: m.sum(x, -1, keepdim=True),
    "sum dtype": lambda m, x: m.sum(x, (0, 1), dtype=m.float64),
    "mean": lambda m, x: x.mean(),
    "mean tuple": lambda m, x: x.mean((1, 0)),
    "mean dtype": lambda m, x: m.mean(x, 0, dtype=m.float64),
    "prod": lambda m, x: x.prod(),
    "prod dim": lambda m, x: x.prod(1),
    "prod keepdim": lambda m, x: x.prod(0, True),
    "prod dtype": lambda m, x: x.prod(1, dtype=m.float64),
    "max": lambda m, x: x.max(),
    "min": lambda m, x: x.min(),
    "max dim": lambda m, x: x.max(1),
    "min dim keepdim": lambda m, x: m.min(x, 0, keepdim=True),
    "max -1": lambda m, x: x.max(-1),
    "amax": lambda m, x: x.amax(),
    "amax dim": lambda m, x: x.amax(1),
    "amin tuple": lambda m, x: m.amin(x, (0, 1)),
    "amin keepdim": lambda m, x: x.amin(-1, True),
    "var": lambda m, x: x.var(),
    "var dim": lambda m, x: x.var(1),
    "var unbiased": lambda m, x: x.var(0, unbiased=False),
    "var keepdim": lambda m, x: x.var(1, keepdim=True),
    "var correction": lambda m, x: m.var(x, 1, correction=2),
    "var positional": lambda m, x: x.var(1, False, True),
    "std": lambda m, x: x.std(),
    "std dim": lambda m, x: x.std(1),
    "std tuple": lambda m, x: x.std((0, 1), correction=0),
    "logsumexp": lambda m, x: x.logsumexp(1),
    "logsumexp tuple": lambda m, x: m.logsumexp(x, (0, 1)),
    "logsumexp keepdim": lambda m, x: x.logsumexp(-1, True),
    "norm": lambda m, x: x.norm(),
    "norm 1": lambda m, x: x.norm(1),
    "norm inf": lambda m, x: x.norm(INF),
    "norm -inf": lambda m, x: x.norm(-INF),
    "norm 3 dim": lambda m, x: x.norm(3, dim=1),
    "norm 0.5": lambda m, x: x.norm(0.5),
    "norm 0": lambda m, x: x.norm(0),
    "norm fro": lambda m, x: m.norm(x, "fro", dim=(0, 1), keepdim=True),
    "norm keepdim": lambda m, x: x.norm(dim=0, keepdim=True),
    "norm dtype": lambda m, x: x.norm(dtype=m.float64),
    "norm -1": lambda m, x: x.norm(-1, dim=0),
    "argmax": lambda m, x: x.argmax(),
    "argmin": lambda m, x: x.argmin(),
    "argmin keepdim": lambda m, x: x.argmin(1, True),
    "count_nonzero": lambda m, x: x.count_nonzero(),
    "count_nonzero dim": lambda m, x: m.count_nonzero(x, (0,)),
}

PARITY_DATA = {
    "random": RNG.standard_normal((3, 4)).astype(np.float32),
    "ties": np.array(TIES, dtype=np.float32),
    "zeros": np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 3.0], [2.0, 2.0, 2.0]]),
    "transposed": np.asfortranarray(RNG.standard_normal((4, 3)).astype(np.float32)),
    "sliced": RNG.standard_normal((3, 8)).astype(np.float32)[:, ::2],
    "empty": np.zeros((0, 3), np.float32),
}


@pytest.mark.parametrize("data", list(PARITY_DATA), ids=list(PARITY_DATA))
@pytest.mark.parametrize("fn", list(PARITY_FNS.values()), ids=list(PARITY_FNS))
def test_parity_with_torch(torch, fn, data):
    assert_parity(torch, fn, PARITY_DATA[data])


SPECIAL = [
    ([1.0, NAN, 3.0], lambda m, x: x.amax()), ([1.0, NAN, 3.0], lambda m, x: x.max()),
    ([1.0, NAN, 3.0], lambda m, x: x.max(0)), ([NAN, NAN, 3.0], lambda m, x: x.max()),
    ([1.0, NAN, 3.0], lambda m, x: x.argmax()), ([-INF, -INF], lambda m, x: x.logsumexp(0)),
    ([INF, 1.0], lambda m, x: x.logsumexp(0)), ([NAN, 1.0], lambda m, x: x.logsumexp(0)),
    ([1000.0, 1000.0], lambda m, x: x.logsumexp(0)), ([2.0, 2.0], lambda m, x: x.std()),
    ([2.0], lambda m, x: x.std()), ([0.0, 0.0], lambda m, x: x.norm(3)),
    ([0.0, -2.0, 1.0], lambda m, x: x.norm(0.5)), ([-3.0, 1.0, 3.0], lambda m, x: x.norm(INF)),
    ([1e-30, 0.0], lambda m, x: x.norm()), ([1.0, 2.0], lambda m, x: x.std(correction=2)),
    (0.0, lambda m, x: x.prod(0)), (3.0, lambda m, x: x.max(0)), (3.0, lambda m, x: x.var()),
    (-3.0, lambda m, x: x.norm()), (3.0, lambda m, x: x.logsumexp(0)),
]


@pytest.mark.parametrize("data,fn", SPECIAL)
def test_parity_special_values(torch, data, fn):
    assert_parity(torch, fn, np.array(data, dtype=np.float32))


@pytest.mark.parametrize("fn", [lambda m, x: x.sum(), lambda m, x: x.max(1),
                                lambda m, x: x.prod(), lambda m, x: x.logsumexp(1),
                                lambda m, x: x.amax(), lambda m, x: x.var(),
                                lambda m, x: x.norm(), lambda m, x: x.mean(),
                                lambda m, x: m.mean(x, dtype=m.float32),
                                lambda m, x: x.count_nonzero(1), lambda m, x: x.argmin(0)])
def test_parity_integer_inputs(torch, fn):
    assert_parity(torch, fn, np.array([[1, 2, 3], [4, 5, 6]]))


@pytest.mark.parametrize("fn", [e[0] for e in EMPTY_ERRORS] + [
    lambda e: e.norm(-INF), lambda e: e.amax((1, 0)), lambda e: e.norm(-1.5)])
def test_parity_of_empty_errors(torch, fn):
    assert_parity(torch, lambda m, x: fn(x), np.zeros((0, 3), np.float32), req=[False])


def test_parity_of_empty_norm_error_on_a_later_dim(torch):
    assert_parity(torch, lambda m, x: x.norm(-2, dim=1), np.zeros((2, 0), np.float32), req=[False])


@pytest.mark.parametrize("fn", [
    lambda m, x: x.max(2), lambda m, x: x.max(-3), lambda m, x: x.amax((0, 0)),
    lambda m, x: x.amax((1, -1)), lambda m, x: x.sum((0, -2)), lambda m, x: x.prod(-3),
    lambda m, x: x.norm("abc"), lambda m, x: x.count_nonzero(2), lambda m, x: x.argmax(2),
    lambda m, x: x.sum(5), lambda m, x: x.mean((0, 7)), lambda m, x: x.count_nonzero((0, 0))])
def test_parity_of_errors(torch, fn):
    assert_parity(torch, fn, np.ones((2, 3), np.float32), req=[False])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["amax", "amin"])
def test_split_among_ties_in_c_equals_the_numpy_formula(dtype, name):
    """amax/amin over trailing dims of a contiguous input split the gradient among ties in C;
    over a leading dim the numpy formula does it.  Same values to the bit, NaN rows included."""
    rng = np.random.default_rng(8)
    a = rng.integers(0, 3, (7, 5)).astype(dtype)             # many ties
    a[2, 3] = np.nan                                          # a NaN row: NaN gradients
    w = rng.standard_normal(7).astype(dtype)
    rows = tg.tensor(a, requires_grad=True)
    (getattr(rows, name)(1) * tg.tensor(w)).sum().backward()  # trailing dim: C
    cols = tg.tensor(np.ascontiguousarray(a.T), requires_grad=True)
    (getattr(cols, name)(0) * tg.tensor(w)).sum().backward()  # leading dim: numpy
    g_c, g_np = rows.grad.numpy(), cols.grad.numpy().T
    assert np.array_equal(g_c, g_np, equal_nan=True)
    assert np.isnan(g_c[2]).all() and not np.isnan(np.delete(g_c, 2, 0)).any()
    keep = np.delete(a, 2, 0)
    ext = getattr(np, name)(keep, 1, keepdims=True)
    want = (keep == ext) * (np.delete(w, 2)[:, None] / (keep == ext).sum(1, keepdims=True))
    np.testing.assert_allclose(np.delete(g_c, 2, 0), want, rtol=1e-6)
    x = tg.tensor(a, requires_grad=True)                      # max of all: NaN is the result
    x.max().backward()
    assert x.grad.numpy()[2, 3] == 1.0 and np.count_nonzero(x.grad.numpy()) == 1


# -- numpy's spellings: axis= for dim, keepdims= for keepdim ---------------------------------------

def test_axis_and_keepdims_aliases():
    counts = tg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert counts.sum(1, keepdims=True).tolist() == [[6.0], [15.0]]
    assert counts.sum(axis=0).tolist() == [5.0, 7.0, 9.0]
    assert tg.sum(counts, axis=1).tolist() == [6.0, 15.0]
    assert counts.mean(axis=1, keepdims=True).tolist() == [[2.0], [5.0]]
    assert counts.max(axis=1).values.tolist() == [3.0, 6.0]
    assert counts.argmax(axis=1, keepdims=True).tolist() == [[2], [2]]
    assert counts.amax(axis=0).tolist() == [4.0, 5.0, 6.0]
    assert tg.prod(counts, axis=1).tolist() == [6.0, 120.0]
    assert counts.count_nonzero(axis=0).tolist() == [2, 2, 2]
    with pytest.raises(TypeError, match="multiple values for argument 'dim'"):
        counts.sum(1, axis=1)
    with pytest.raises(TypeError, match="multiple values for argument 'keepdim'"):
        counts.sum(1, True, keepdims=True)


def test_axis_and_keepdims_aliases_match_torch(torch):
    a = np.random.default_rng(3).standard_normal((3, 4))
    names = ["sum", "mean", "max", "min", "argmax", "argmin", "std", "var", "prod", "amax",
             "amin", "logsumexp", "all", "any"]
    for name in names:
        for kw in ({"axis": 1}, {"dim": 0, "keepdims": True}, {"axis": -1, "keepdims": True}):
            for form in ("method", "function"):
                x = tg.tensor(a, requires_grad=name not in ("argmax", "argmin", "all", "any"))
                tx = torch.tensor(a, requires_grad=x.requires_grad)
                y = getattr(x, name)(**kw) if form == "method" else getattr(tg, name)(x, **kw)
                ty = getattr(tx, name)(**kw) if form == "method" else getattr(torch, name)(tx, **kw)
                if isinstance(ty, tuple):
                    y, ty = y[0], ty[0]
                assert y.shape == tuple(ty.shape), (name, kw)
                np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
                if x.requires_grad:
                    y.sum().backward()
                    ty.sum().backward()
                    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
