"""Tabular data wrangling with tensors (group-by, unique, bucketing, imputation, data
round trips), each checked against PyTorch itself."""
import collections

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")
try:
    import pandas as pd
except ImportError:         # (CI's venv has no pandas: only the Series tests need it)
    pd = None
needs_pandas = pytest.mark.skipif(pd is None, reason="pandas is not installed")


def _same(ours, theirs):
    assert str(ours.dtype) == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# ---- torch.tensor of sequences that are not lists (a pandas Series, a deque) ------------------

@pytest.mark.parametrize("make", [
    lambda: pd.Series([1.5, 2.5]),
    lambda: pd.Series([1, 2], dtype="int32"),
    lambda: pd.Series([1, 2], dtype="Int16"),
    lambda: pd.Series([True, False], dtype="boolean"),
    lambda: pd.Series([1.5, np.nan]),
    lambda: pd.Index([1.5, 2.5]),
    lambda: collections.deque([np.float64(1.5), np.float64(2.0)]),
    lambda: [pd.Series([1.5, 2.5]), pd.Series([1.0, 2.0])],
    lambda: pd.Series([], dtype="float64"),
])
@needs_pandas
def test_tensor_of_foreign_sequence_keeps_item_dtypes(make):
    # SILENT before: numpy's __array__ reading made a float64 Series float32, int32 int64
    _same(tapegrad.tensor(make()), torch.tensor(make()))
    _same(tapegrad.as_tensor(make()), torch.as_tensor(make()))


@needs_pandas
def test_tensor_of_series_with_missing_value_refused():
    s = pd.Series([1.5, None], dtype="Float64")
    with pytest.raises(RuntimeError, match="Could not infer dtype of NAType"):
        torch.tensor(s)
    with pytest.raises(RuntimeError, match="Could not infer dtype of NAType"):
        tapegrad.tensor(s)


@needs_pandas
def test_tensor_of_series_with_string_index_refused():
    s = pd.Series([1.5], index=["a"])
    with pytest.raises(ValueError, match="could not determine the shape of object type 'Series'"):
        torch.tensor(s)
    with pytest.raises(ValueError, match="could not determine the shape of object type 'Series'"):
        tapegrad.tensor(s)


@needs_pandas
def test_tensor_of_string_series_refused():
    s = pd.Series(["NY", "SF"])
    with pytest.raises(ValueError, match="too many dimensions 'str'"):
        torch.tensor(s)
    with pytest.raises(ValueError, match="too many dimensions 'str'"):
        tapegrad.tensor(s)


# ---- histc of a bool tensor: PyTorch's linspace refusal ----------------------------------

@pytest.mark.parametrize("kwargs", [dict(bins=3), dict(bins=3, min=0, max=1)])
def test_histc_bool_refused_as_linspace(kwargs):
    t = [True, False]
    with pytest.raises(NotImplementedError, match="\"linspace_cpu\" not implemented for 'Bool'"):
        torch.histc(torch.tensor(t), **kwargs)
    with pytest.raises(NotImplementedError, match="\"linspace_cpu\" not implemented for 'Bool'"):
        tapegrad.histc(tapegrad.tensor(t), **kwargs)


# ---- the integer minimum divided by -1 wraps silently -------------------------------------

# (int32 and int64 are left out: PyTorch's own kernels die of SIGFPE on some of these)
@pytest.mark.parametrize("dt", ["int8", "int16"])
def test_integer_minimum_floor_divided_by_minus_one_no_warning(dt, recwarn):
    import warnings
    m = np.iinfo(dt).min
    ours_a = tapegrad.tensor([m, m + 1], dtype=getattr(tapegrad, dt))
    theirs_a = torch.tensor([m, m + 1], dtype=getattr(torch, dt))
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # numpy's overflow RuntimeWarning leaked
        for f in (lambda a: a // -1, lambda a: a % -1, lambda a: tapegrad.div(a, -1, rounding_mode="trunc")
                  if isinstance(a, tapegrad.Tensor) else torch.div(a, -1, rounding_mode="trunc"),
                  lambda a: a.floor_divide(-1)):
            _same(f(ours_a), f(theirs_a))


# ---- cummax / cummin: vectorised running extremes ----------------------------------------

_NAN = float("nan")


@pytest.mark.parametrize("data", [
    [1., 3., 3., 2., 5., 5.], [1., _NAN, 2., _NAN, 0.], [_NAN, 1., 2.], [0.0, -0.0, 0.0, -1.0],
    [[1, 5, 2], [3, 3, 9], [0, 7, 7]], [True, False, True],
    [[1., _NAN], [0., 2.], [_NAN, 1.]], [-float("inf"), -float("inf"), 1.],
])
@pytest.mark.parametrize("fn", ["cummax", "cummin"])
def test_cumulative_extreme_ties_and_nan(data, fn):
    ours_t, theirs_t = tapegrad.tensor(data), torch.tensor(data)
    for d in range(ours_t.ndim):
        ours, theirs = getattr(tapegrad, fn)(ours_t, d), getattr(torch, fn)(theirs_t, d)
        _same(ours.values, theirs.values)
        _same(ours.indices, theirs.indices)
        # (the sign of a zero comes from the position taken)
        np.testing.assert_array_equal(np.signbit(ours.values.numpy()), np.signbit(theirs.values.numpy()))


def test_cumulative_extreme_long_row_fast_and_exact():
    import time
    n = 200_000
    base = (np.arange(n) % 1000 - 500) * ((np.arange(n) // 7) % 3 - 1)
    ours_t, theirs_t = tapegrad.tensor(base), torch.tensor(base)
    start = time.perf_counter()
    ours = tapegrad.cummax(ours_t, 0)
    assert time.perf_counter() - start < 2.0        # (a Python loop per position took ~5 s)
    theirs = torch.cummax(theirs_t, 0)
    _same(ours.indices, theirs.indices)
    _same(tapegrad.cummin(ours_t.view(200, -1), 1).indices, torch.cummin(theirs_t.view(200, -1), 1).indices)


def test_cummax_gradient_goes_to_taken_positions():
    data = [1., 3., 2., 3., 0.]
    ours_x = tapegrad.tensor(data, dtype=tapegrad.float64, requires_grad=True)
    theirs_x = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    w = [1., 2., 3., 4., 5.]
    (tapegrad.cummax(ours_x, 0).values * tapegrad.tensor(w, dtype=tapegrad.float64)).sum().backward()
    (torch.cummax(theirs_x, 0).values * torch.tensor(w, dtype=torch.float64)).sum().backward()
    _same(ours_x.grad, theirs_x.grad)


# ---- mode of many rows: std::sort's replay budget counted per call ------------------------

def test_mode_many_tied_rows_fast():
    import time
    rows = np.random.RandomState(0).randint(0, 50, (1000, 1000))
    start = time.perf_counter()
    ours = tapegrad.tensor(rows).mode(1)
    assert time.perf_counter() - start < 2.0        # (every row was replayed in Python: ~4 s)
    theirs = torch.tensor(rows).mode(1)
    _same(ours.values, theirs.values)           # (the index among ties is std::sort's choice)


@pytest.mark.parametrize("shape, high", [((5, 40), 5), ((50, 17), 4), ((2, 2000), 10), ((3, 10), 3)])
def test_mode_tied_rows_within_budget_match(shape, high):
    rows = np.random.RandomState(1).randint(0, high, shape).astype(np.float64)
    rows[0, 3] = np.nan
    ours, theirs = tapegrad.tensor(rows).mode(1), torch.tensor(rows).mode(1)
    _same(ours.values, theirs.values)
    _same(ours.indices, theirs.indices)


# ---- torch.tensor's messages name a compiled type as its tp_name ---------------------------

@pytest.mark.parametrize("make, error, phrase", [
    (lambda: [__import__("decimal").Decimal("1.5")], RuntimeError, "Could not infer dtype of decimal.Decimal"),
    (lambda: [__import__("datetime").date(2020, 1, 1)], RuntimeError, "Could not infer dtype of datetime.date"),
    (lambda: [np.str_("ab")], ValueError, "too many dimensions 'str'"),
])
def test_tensor_inference_error_names(make, error, phrase):
    import re
    with pytest.raises(error, match=re.escape(phrase)):
        torch.tensor(make())
    with pytest.raises(error, match=re.escape(phrase) + "$"):
        tapegrad.tensor(make())


# ---- bincount's float32 weights summed in float32, one by one, as PyTorch's loop ----------

@pytest.mark.parametrize("n", [100, 1000, 100_000])
def test_bincount_float32_weights_bits(n):
    rs = np.random.RandomState(n)
    idx, w = rs.randint(0, 7, n), rs.rand(n).astype(np.float32)
    # SILENT before: summed in float64 and rounded once, the last bits differed
    ours = tapegrad.bincount(tapegrad.tensor(idx), weights=tapegrad.tensor(w), minlength=9)
    theirs = torch.bincount(torch.tensor(idx), weights=torch.tensor(w), minlength=9)
    _same(ours, theirs)
    # float64 (and other) weights: float64 sums
    ours = tapegrad.bincount(tapegrad.tensor(idx), weights=tapegrad.tensor(w).half())
    theirs = torch.bincount(torch.tensor(idx), weights=torch.tensor(w).half())
    _same(ours, theirs)
    ours = tapegrad.bincount(tapegrad.tensor(idx), weights=tapegrad.tensor(w).double())
    theirs = torch.bincount(torch.tensor(idx), weights=torch.tensor(w).double())
    _same(ours, theirs)


# ---- histogram / histogramdd: PyTorch's per-thread float sums and float density ----------

@pytest.mark.parametrize("n", [100, 10_000, 300_001])
def test_histogram_weighted_and_density_bits(n, torch_threads_as_ours):
    rs = np.random.RandomState(n)
    a, w = rs.rand(n).astype(np.float32), rs.rand(n).astype(np.float32)
    ta, tw = torch.tensor(a), torch.tensor(w)
    ga, gw = tapegrad.tensor(a), tapegrad.tensor(w)
    # SILENT before: float64 sums and a float64 density, rounded once: last bits differed
    if torch.get_num_threads() == tapegrad.get_num_threads():
        _same(tapegrad.histogram(ga, bins=5, weight=gw).hist, torch.histogram(ta, bins=5, weight=tw).hist)
        _same(tapegrad.histogram(ga, bins=5, weight=gw, density=True).hist,
              torch.histogram(ta, bins=5, weight=tw, density=True).hist)
        _same(tapegrad.histogramdd(tapegrad.stack([ga, gw], 1), bins=[2, 3], weight=gw).hist,
              torch.histogramdd(torch.stack([ta, tw], 1), bins=[2, 3], weight=tw).hist)
    _same(tapegrad.histogram(ga, bins=5, density=True).hist, torch.histogram(ta, bins=5, density=True).hist)
    _same(tapegrad.histogram(ga.double(), bins=7).hist, torch.histogram(ta.double(), bins=7).hist)


# ---- var / std of a whole float tensor: PyTorch's two-pass std_var_all_cpu, bit for bit ----

@pytest.mark.parametrize("n", [2, 5, 100, 32_768, 70_001])
def test_std_var_all_elements_bits(n, torch_threads_as_ours):
    a = np.random.RandomState(n).randn(n) * 3 + 1
    for dt in ("float64", "float32"):
        ours, theirs = tapegrad.tensor(a, dtype=getattr(tapegrad, dt)), torch.tensor(a, dtype=getattr(torch, dt))
        # SILENT before: a float64 std differed in the last bits from PyTorch's
        _same(ours.std(), theirs.std())
        _same(ours.var(correction=0), theirs.var(correction=0))
        _same(ours.view(1, -1).std(1), theirs.view(1, -1).std(1))
        # (std_mean runs PyTorch's vectorised Welford kernel instead: close, not bit for bit)
        np.testing.assert_allclose(tapegrad.std_mean(ours)[0].numpy(), torch.std_mean(theirs)[0].numpy(),
                                   rtol=1e-6 if dt == "float32" else 1e-14)


def test_std_all_elements_gradient_unchanged():
    a = np.random.RandomState(0).randn(7)
    ours = tapegrad.tensor(a, requires_grad=True)
    theirs = torch.tensor(a, requires_grad=True)
    ours.std().backward()
    theirs.std().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)
    assert tapegrad.autograd.gradcheck(lambda x: x.var(), (tapegrad.tensor(a, requires_grad=True),))
