"""Eager ops that scripts call every batch, made fast without changing a result bit (session 33,
perf25): cumsum / cumprod of float32 / float64 in a C scan (scan_kernels.c), index_select by slice
copies when its index is a few runs (flip, roll, the reflect / replicate / circular pads; a run
backwards along the last dim by index_kernels.c), triu / tril by row-wise zeroing, unique of
integers by a sort.  Each case is checked against PyTorch (values, dtypes, shapes, gradients,
grad_fn names) and the kernels against numpy's own formula, bit for bit (NaN signs included)."""
import numpy as np
import pytest

import tapegrad
import tapegrad.nn.functional as TF

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402


def _pair(a, requires_grad=False):
    ours = tapegrad.tensor(a.copy(), requires_grad=requires_grad)
    theirs = torch.tensor(a.copy(), requires_grad=requires_grad)
    return ours, theirs


def _same(ours, theirs):
    assert str(ours.dtype) == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.itemsize == 4 else np.uint64)


def _numpy_running(a, axis, product):
    """numpy's running sum (product) in double, rounded to a's dtype; + 0 on a sum."""
    acc = (np.multiply if product else np.add).accumulate(a.astype(np.float64), axis=axis)
    out = acc.astype(a.dtype)
    if not product:
        np.add(out, a.dtype.type(0), out=out)
    return out


# -- cumsum / cumprod -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, dim", [((64, 1000), 1), ((1000,), 0), ((7, 5, 3), 0),
                                        ((7, 5, 3), 1), ((2, 9), -1), ((5, 1), 0), ((1, 6), 1)])
def test_cumsum_cumprod_match_torch(dtype, shape, dim):
    rng = np.random.default_rng(3301)
    a = rng.uniform(0.5, 1.5, shape).astype(dtype)
    a.flat[0] = -0.0                    # PyTorch's running sum starts from +0: -0 reads +0
    x, t = _pair(a)
    _same(tapegrad.cumsum(x, dim), torch.cumsum(t, dim))
    ours, theirs = tapegrad.cumprod(x, dim), torch.cumprod(t, dim)
    assert str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6 if dtype == np.float32
                               else 1e-14)
    assert not np.signbit(tapegrad.cumsum(x, dim).numpy().flat[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_running_kernel_is_numpys_accumulate_bit_for_bit(dtype):
    """NaNs of both signs, infinities, signed zeros, tiny and huge values along every dim: the C
    scan keeps numpy's values and its NaN (a -NaN from inf - inf or 0 * inf stays -NaN past a
    later +NaN element; a vectorised loop that swapped the operands gave +NaN)."""
    rng = np.random.default_rng(3302)
    values = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.0, 1e-30, 3e38])
    for _ in range(40):
        shape = tuple(rng.integers(1, 9, rng.integers(1, 4)))
        a = values[rng.integers(0, len(values), shape)].astype(dtype)
        for axis in range(a.ndim):
            for product in (False, True):
                with np.errstate(all="ignore"):
                    want = _numpy_running(a, axis, product)
                got = tapegrad._core._running(a, axis, product)
                assert got.flags.c_contiguous and got.dtype == a.dtype
                np.testing.assert_array_equal(_bits(got), _bits(want))
    # the public ops take the same path
    a = values[rng.integers(0, len(values), (6, 7))].astype(dtype)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(_bits(tapegrad.cumprod(tapegrad.tensor(a), 0).numpy()),
                                      _bits(_numpy_running(a, 0, True)))
        np.testing.assert_array_equal(_bits(tapegrad.cumsum(tapegrad.tensor(a), 1).numpy()),
                                      _bits(_numpy_running(a, 1, False)))


def test_running_kernel_leaves_other_arrays_to_numpy():
    a = np.arange(12.0).reshape(3, 4)
    assert tapegrad._core._running(a.T, 0, False) is None                 # not C-contiguous
    assert tapegrad._core._running(a.astype(np.float16), 0, False) is None
    assert tapegrad._core._running(np.arange(5), 0, False) is None          # integers
    assert tapegrad._core._running(np.zeros((0, 3)), 1, False) is None
    assert tapegrad._core._running(np.float64(2.0) * np.ones(()), 0, False) is None
    # and those still match PyTorch
    for arr in (a.T, a.astype(np.float16), np.arange(5), np.zeros((0, 3))):
        x, t = _pair(np.ascontiguousarray(arr) if arr.ndim else arr)
        x = x.T if arr is a.T else x
        t = t.T if arr is a.T else t
        _same(tapegrad.cumsum(x, -1), torch.cumsum(t, -1))


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_cumsum_cumprod_gradients_match_torch(dim):
    rng = np.random.default_rng(3303)
    a = rng.uniform(0.5, 1.5, (3, 4, 5))
    g = rng.standard_normal((3, 4, 5))
    for op in ("cumsum", "cumprod"):
        x, t = _pair(a, requires_grad=True)
        y, u = getattr(tapegrad, op)(x, dim), getattr(torch, op)(t, dim)
        assert type(y.grad_fn).__name__ == type(u.grad_fn).__name__
        y.backward(tapegrad.tensor(g))
        u.backward(torch.tensor(g))
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)
        x64 = tapegrad.tensor(a, requires_grad=True)
        assert tapegrad.autograd.gradcheck(lambda v: getattr(tapegrad, op)(v, dim), (x64,))
        assert tapegrad.autograd.gradgradcheck(lambda v: getattr(tapegrad, op)(v, dim), (x64,))


# -- index_select by runs: flip, roll, pads -------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.int8,
                                   np.bool_, np.complex64])
def test_index_select_by_runs_matches_torch(dtype):
    rng = np.random.default_rng(3304)
    a = (rng.standard_normal((4, 6, 9)) * 5).astype(dtype)
    x, t = _pair(a)
    views = [(x, t), (x.transpose(0, 2), t.transpose(0, 2)), (x[:, ::2], t[:, ::2])]
    for xv, tv in views:
        for dim in range(3):
            n = xv.shape[dim]
            for index in (np.arange(n)[::-1], (np.arange(n) + 2) % n, np.zeros(4, np.int64),
                          np.r_[2, 1, np.arange(n), n - 2, n - 3], np.repeat(np.arange(n), 2),
                          np.r_[np.arange(n), n - 1, n - 1], rng.integers(0, n, 11),
                          np.arange(n - 1, 0, -1), np.arange(1, n)[::-1]):
                index = np.ascontiguousarray(index)
                ours = xv.index_select(dim, tapegrad.tensor(index))
                _same(ours, tv.index_select(dim, torch.tensor(index)))
                assert ours.is_contiguous()


@pytest.mark.parametrize("shape", [(64, 1000), (3, 4, 5), (7,), (2, 1, 3, 1)])
def test_flip_roll_match_torch_with_gradients(shape):
    rng = np.random.default_rng(3305)
    a = rng.standard_normal(shape)
    g = rng.standard_normal(shape)
    nd = len(shape)
    calls = [(lambda m, v, d=d: m.flip(v, (d,))) for d in range(-nd, nd)]
    calls += [lambda m, v: m.flip(v, tuple(range(nd)))]
    calls += [(lambda m, v, d=d: m.roll(v, 3, d)) for d in range(nd)]
    calls += [lambda m, v: m.roll(v, -2), lambda m, v: m.roll(v, (1, -1), (0, -1))]
    for call in calls:
        x, t = _pair(a, requires_grad=True)
        y, u = call(tapegrad, x), call(torch, t)
        _same(y, u)
        assert type(y.grad_fn).__name__ == type(u.grad_fn).__name__
        y.backward(tapegrad.tensor(g))
        u.backward(torch.tensor(g))
        _same(x.grad, t.grad)
        with tapegrad.no_grad():
            _same(call(tapegrad, x), u)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("pad", [(2, 2, 2, 2), (1, 0, 0, 3), (-1, 2, 1, -1), (3, 1)])
def test_pad_modes_match_torch_with_gradients(mode, pad):
    rng = np.random.default_rng(3306)
    a = rng.standard_normal((2, 3, 6, 7)[4 - len(pad):]).astype(np.float32)
    x, t = _pair(a, requires_grad=True)
    y, u = TF.pad(x, pad, mode=mode), F.pad(t, pad, mode=mode)
    _same(y, u)
    if mode != "circular":      # (PyTorch's circular pad is slice copies: CopySlices)
        assert type(y.grad_fn).__name__ == type(u.grad_fn).__name__
    g = rng.standard_normal(tuple(u.shape)).astype(np.float32)
    y.backward(tapegrad.tensor(g))
    u.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-6)
    if a.ndim == 4:
        xc = x.detach().contiguous(memory_format=tapegrad.channels_last)
        tc = t.detach().contiguous(memory_format=torch.channels_last)
        yc, uc = TF.pad(xc, pad, mode=mode), F.pad(tc, pad, mode=mode)
        _same(yc, uc)
        assert yc.stride() == uc.stride()


def test_flip_roll_pad_second_derivatives():
    rng = np.random.default_rng(3307)
    a = rng.standard_normal((2, 3, 5, 6))
    x = tapegrad.tensor(a, requires_grad=True)
    for f in (lambda v: tapegrad.flip(v * v, (3,)), lambda v: tapegrad.roll(v * v, 2, 3),
              lambda v: TF.pad(v * v, (2, 1, 1, 2), mode="reflect")):
        assert tapegrad.autograd.gradcheck(f, (x,))
        assert tapegrad.autograd.gradgradcheck(f, (x,))


# -- triu / tril ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_, np.complex128,
                                   np.float16, np.uint8])
def test_triu_tril_match_torch(dtype):
    rng = np.random.default_rng(3308)
    for shape in [(64, 64), (5, 7), (7, 5), (2, 3, 4, 6), (1, 1), (3, 0, 4)]:
        a = (rng.standard_normal(shape) * 3).astype(dtype)
        x, t = _pair(a)
        views = [(x, t), (x.transpose(-1, -2), t.transpose(-1, -2)),
                 (x[..., :1].expand(*shape), t[..., :1].expand(*shape))]
        for xv, tv in views:
            for k in (0, 1, -1, 3, -5, 100, -100):
                for op in ("triu", "tril"):
                    ours = getattr(tapegrad, op)(xv, k)
                    _same(ours, getattr(torch, op)(tv, k))
                    assert ours.is_contiguous()


def test_triu_tril_write_into_a_copy_and_gradients():
    rng = np.random.default_rng(3309)
    a = rng.standard_normal((3, 5, 5))
    x, t = _pair(a, requires_grad=True)
    y, u = tapegrad.triu(x, 1), torch.triu(t, 1)
    assert type(y.grad_fn).__name__ == type(u.grad_fn).__name__
    np.testing.assert_array_equal(x.detach().numpy(), a)        # input untouched
    g = rng.standard_normal((3, 5, 5))
    (y * 2).backward(tapegrad.tensor(g))
    (u * 2).backward(torch.tensor(g))
    _same(x.grad, t.grad)
    assert tapegrad.autograd.gradcheck(lambda v: tapegrad.tril(v, -1), (x.detach().requires_grad_(),))


# -- unique of integers ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.bool_, np.int8])
def test_unique_integers_match_torch(dtype):
    rng = np.random.default_rng(3310)
    for shape in [(1000,), (8, 9), (), (0,), (3, 0)]:
        a = rng.integers(0, 7, shape).astype(dtype)
        x, t = _pair(a)
        for inverse in (False, True):
            for counts in (False, True):
                ours = tapegrad.unique(x, return_inverse=inverse, return_counts=counts)
                theirs = torch.unique(t, return_inverse=inverse, return_counts=counts)
                if not isinstance(theirs, tuple):
                    ours, theirs = (ours,), (theirs,)
                assert len(ours) == len(theirs)
                for o, h in zip(ours, theirs):
                    _same(o, h)


def test_compiled_function_replays_the_fast_paths():
    """tapegrad.compile re-runs these ops in its replay: the same values as eager, gradients
    included."""
    rng = np.random.default_rng(3311)
    w = tapegrad.tensor(rng.standard_normal((4, 6)), requires_grad=True)

    def step(x):
        y = tapegrad.flip(x * w, (1,)) + tapegrad.roll(x, 2, 1)
        y = tapegrad.cumsum(y, 1) + tapegrad.cumprod(x, 0) + tapegrad.triu(x * w, 1)
        return TF.pad(y[None], (2, 1), mode="reflect").sum()

    compiled = tapegrad.compile(step)
    for _ in range(3):
        x = tapegrad.tensor(rng.uniform(0.5, 1.5, (4, 6)))
        w.grad = None
        eager = step(x)
        eager.backward()
        want = w.grad.numpy().copy()
        w.grad = None
        got = compiled(x)
        got.backward()
        np.testing.assert_array_equal(got.detach().numpy(), eager.detach().numpy())
        np.testing.assert_array_equal(w.grad.numpy(), want)
