"""Regressions found by the differential sweep of PyTorch's own reduction, sort/select and shape
tests (test_reductions.py, test_sort_and_select.py, test_shape_ops.py) against tapegrad (sweep26)."""
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _outcome(lib, call):
    """call(lib)'s result as (dtype, values), or its exception as (type name, message)."""
    try:
        r = call(lib)
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return type(e).__name__, str(e)
    return str(r.dtype).split(".")[-1], r.tolist()


# -- dtype= together with out= --------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda T: T.sum(T.ones(3, 4), 0, dtype=T.int32, out=T.ones(4, dtype=T.int16)),
    lambda T: T.prod(T.ones(3, 4), 0, dtype=T.int32, out=T.ones(4, dtype=T.int16)),
    lambda T: T.cumsum(T.ones(3), 0, dtype=T.float64, out=T.ones(3)),
    lambda T: T.cumprod(T.ones(3), 0, dtype=T.float64, out=T.ones(3)),
    lambda T: T.mean(T.ones(3, 4), 0, dtype=T.float64, out=T.ones(4)),
    lambda T: T.nansum(T.ones(3, 4), 0, dtype=T.float64, out=T.ones(4)),
    lambda T: T.nanmean(T.ones(3, 4), 0, dtype=T.float64, out=T.ones(4)),
    lambda T: T.zeros(3, dtype=T.int32, out=T.ones(3, dtype=T.int16)),
    lambda T: T.ones(3, dtype=T.float64, out=T.ones(3)),
    lambda T: T.full((3,), 1, dtype=T.int32, out=T.ones(3, dtype=T.int16)),
    lambda T: T.eye(3, dtype=T.int32, out=T.ones(3, 3, dtype=T.int16)),
    lambda T: T.arange(3, dtype=T.float32, out=T.ones(3, dtype=T.int64)),
    lambda T: T.linspace(0, 1, 3, dtype=T.float64, out=T.ones(3)),
    lambda T: T.logspace(0, 1, 3, dtype=T.float64, out=T.ones(3)),
])
def test_a_dtype_other_than_outs_is_refused(call):
    # before: the result was computed in dtype= and cast into out (or made in out's dtype, the
    # factories) where PyTorch refuses the contradiction
    expected = _outcome(torch, call)
    got = _outcome(tg, call)
    assert expected[0] == "RuntimeError"
    assert got == expected


@pytest.mark.parametrize("call", [
    lambda T: T.sum(T.ones(3, 4), 0, dtype=T.int32, out=T.ones(4, dtype=T.int32)),
    lambda T: T.sum(T.ones(3, 4), 0, out=T.ones(4, dtype=T.int64)),
    lambda T: T.cumsum(T.ones(3), 0, dtype=T.float64, out=T.ones(3, dtype=T.float64)),
    lambda T: T.mean(T.ones(3, 4), 0, out=T.ones(4, dtype=T.float64)),
    lambda T: T.zeros(3, dtype=T.int16, out=T.ones(3, dtype=T.int16)),
])
def test_a_dtype_equal_to_outs_or_none_is_accepted(call):
    assert _outcome(tg, call) == _outcome(torch, call)


# -- exception types and words ------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda T: T.aminmax(T.tensor(1.0 + 0j)),
    lambda T: T.aminmax(T.tensor(1.0 + 0j), dim=0),
    lambda T: T.aminmax(T.tensor([1.0 + 0j, 2j]), dim=0, keepdim=True),
    lambda T: T.aminmax(T.ones(2, 2, dtype=T.complex128)),
    lambda T: T.median(T.ones(3, dtype=T.bool)),
    lambda T: T.nanmedian(T.ones(3, dtype=T.bool)),
    lambda T: T.nanmedian(T.ones(3, dtype=T.bool), 0),
    lambda T: T.median(T.ones(2, 3), dim=[0, 1]),
    lambda T: T.nanmedian(T.ones(2, 3), dim=[0, 1]),
    lambda T: T.mode(T.ones(2, 3), dim=[0, 1]),
    lambda T: T.logcumsumexp(T.ones(2, 3), dim=[0, 1]),
    lambda T: T.cummax(T.ones(2, 3), dim=[0, 1]),
    lambda T: T.kthvalue(T.ones(2, 3), 1, dim=[0, 1]),
])
def test_refusals_have_pytorchs_type_and_words(call):
    expected = _outcome(torch, call)
    got = _outcome(tg, call)
    assert got == expected


# -- histc / histogram / histogramdd ----------------------------------------------------------------

def _float_max(T, dtype):
    return T.finfo(dtype).max


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("call", [
    lambda T, d: T.histc(T.tensor([T.finfo(d).min] * 3, dtype=d), bins=4),
    lambda T, d: T.histc(T.tensor([T.finfo(d).max] * 3, dtype=d), bins=4),
    lambda T, d: T.histc(T.tensor([T.finfo(d).min, T.finfo(d).max], dtype=d), bins=4),
    lambda T, d: T.histc(T.tensor([T.finfo(d).max, 0.0, T.finfo(d).max / 2], dtype=d), bins=4),
    lambda T, d: T.histc(T.tensor([0.5, 1.0], dtype=d), bins=3, min=-T.finfo(d).max,
                         max=T.finfo(d).max),
    lambda T, d: T.histc(T.tensor([float("inf")], dtype=d)),
    lambda T, d: T.histc(T.tensor([float("-inf")], dtype=d)),
    lambda T, d: T.histc(T.tensor([1.0, 2.0, float("-inf")], dtype=d)),
    lambda T, d: T.histc(T.tensor([float("nan")], dtype=d)),
    lambda T, d: T.histc(T.ones(5, dtype=d), bins=5),
])
def test_histc_at_the_dtypes_extremes(dtype, call):
    # before: a ValueError from numpy's bincount (the bin position overflowed or was 0/0), and
    # an equal min and max widened by 1 where PyTorch widens by a representable step at least
    expected = _outcome(torch, lambda T: call(T, getattr(T, dtype)))
    got = _outcome(tg, lambda T: call(T, getattr(T, dtype)))
    assert got == expected


@pytest.mark.parametrize("call", [
    lambda T: T.histogram(T.tensor(1.0), 1, out=(T.ones(1, dtype=T.float64), T.ones(2))),
    lambda T: T.histogram(T.tensor(1.0), 1, out=(T.ones(1), T.ones(2, dtype=T.float64))),
    lambda T: T.histogram(T.tensor(1.0), T.tensor([0.0, 2.0]),
                          out=(T.ones(1), T.ones(2, dtype=T.float64))),
    lambda T: T.histogram(T.tensor(1.0), T.tensor([0.0, 1.0]), range=(0, 1)),
])
def test_histogram_refusals(call):
    # before: an out of another dtype was cast into, and a range beside given edges ignored
    expected = _outcome(torch, call)
    got = _outcome(tg, call)
    assert got[0] == expected[0]
    assert got[1].split("\n")[0] == expected[1].split("\n")[0]


@pytest.mark.parametrize("shape", [(5, 0), (2, 3, 0)])
@pytest.mark.parametrize("density", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_histogramdd_of_points_without_coordinates(shape, density, weighted):
    # before: ValueError (cannot reshape array of size 0 into shape (0))
    def call(T):
        w = T.ones(shape[:-1]) if weighted else None
        hist, edges = T.histogramdd(T.ones(shape), [], weight=w, density=density)
        assert edges == ()
        return hist
    assert repr(_outcome(tg, call)) == repr(_outcome(torch, call))


# -- which of several equal values answers --------------------------------------------------------

@pytest.mark.parametrize("rows, k", [
    ([[1.0, 2.0, 2.0, 3.0, 2.0], [4.0, 4.0, 4.0, 4.0, 1.0]], 2),
    ([[3.0, 3.0, 3.0, 1.0, 3.0, float("nan"), 2.0, 0.0, 3.0, 1.0, 2.0, 2.0, 2.0, 0.0]], 6),
    ([[float("nan"), 1.0, float("nan"), 0.0, float("nan")]], 4),
    ([[0.0, 3.0, 3.0, 1.0, 3.0, 0.0] * 4], 13),
    ([[2.0, 2.0]], 1),
])
def test_kthvalue_of_tied_values_answers_pytorchs_index_and_gradient(rows, k):
    # SILENT before: the first of the tied elements in input order answered (a stable sort), where
    # PyTorch's quickselect answers another one: another index, and the gradient on another element
    def call(T):
        x = T.tensor(rows, dtype=T.float64, requires_grad=True)
        values, indices = T.kthvalue(x, k, 1)
        (values * T.arange(1.0, len(rows) + 1, dtype=T.float64)).sum().backward()
        return [values.tolist(), indices.tolist(), x.grad.tolist()]
    assert repr(call(tg)) == repr(call(torch))


def test_kthvalue_along_other_dims_and_integers():
    a = [[3, 1, 3, 3], [3, 3, 0, 3], [1, 3, 3, 2]]
    for dtype in ("int64", "float32"):
        for dim, k in ((0, 2), (1, 3), (-1, 4), (0, 3)):
            expected = torch.kthvalue(torch.tensor(a, dtype=getattr(torch, dtype)), k, dim, True)
            got = tg.kthvalue(tg.tensor(a, dtype=getattr(tg, dtype)), k, dim, True)
            assert got.values.tolist() == expected.values.tolist()
            assert got.indices.tolist() == expected.indices.tolist()


def test_kthvalue_of_a_1d_tensor_with_ties():
    # (a row of its own: the replay first failed on a 1-d input)
    y = [3.0, 5.0, 4.0, 1.0, 1.0, 5.0]
    for k in range(1, 7):
        expected = torch.kthvalue(torch.tensor(y, dtype=torch.float64), k)
        got = tg.kthvalue(tg.tensor(y, dtype=tg.float64), k)
        assert (got.values.item(), got.indices.item()) == (expected.values.item(),
                                                           expected.indices.item())


@pytest.mark.parametrize("call", [
    lambda T, a: T.kthvalue(a, 2, out=(a, T.empty((), dtype=T.long))),
    lambda T, a: T.kthvalue(a, 2, 0, True, out=(a[:1], T.empty(1, dtype=T.long))),
    lambda T, a: T.nanmedian(a, 0, True, out=(a[:1], T.empty(1, dtype=T.long))),
    lambda T, a: T.median(a, 0, True, out=(a[:1], T.empty(1, dtype=T.long))),
])
def test_selection_into_an_out_sharing_the_inputs_memory_is_refused(call):
    # before: kthvalue wrote into its own input (resized to the 0-d answer) and nanmedian into
    # part of it, where PyTorch refuses ("unsupported operation: some elements of the input ...")
    def run(T):
        a = T.tensor([3.0, 1.0, 2.0, 5.0, 4.0])
        outcome = _outcome(T, lambda T: call(T, a)[0])
        return outcome[0], outcome[1][:60], a.tolist()
    assert run(tg) == run(torch)


# -- shape ops ----------------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda T: T.repeat_interleave(T.tensor([2, 0, 1], dtype=T.int32)),
    lambda T: T.repeat_interleave(T.tensor([2, 0, 1])),
    lambda T: T.repeat_interleave(T.tensor(3)),
    lambda T: T.repeat_interleave(T.tensor([[2]])),
    lambda T: T.repeat_interleave(T.tensor([2, 1], dtype=T.uint8)),
    lambda T: T.repeat_interleave(T.tensor([5, 6]), T.tensor([2, 1], dtype=T.int16)),
    lambda T: T.repeat_interleave(T.tensor([5, 6]), T.tensor([2, 1], dtype=T.int8), dim=0),
    lambda T: T.repeat_interleave(T.tensor([5, 6]), T.tensor([2, 1], dtype=T.int32), dim=0),
    lambda T: T.repeat_interleave(T.tensor([5, 6]), T.tensor([[1, 2]]), dim=0),
    lambda T: T.roll(T.ones(2), [], []),
    lambda T: T.roll(T.ones(2), []),
    lambda T: T.roll(T.ones(2), [], 0),
])
def test_repeat_interleave_counts_and_roll_shifts(call):
    # before: int32 counts gave int64 indices (SILENT dtype), a 0-d count tensor and 8/16-bit
    # counts were taken where PyTorch refuses them, and roll without shifts returned its input
    assert _outcome(tg, call) == _outcome(torch, call)


# -- out= of max/min's single-result overloads, nuclear norm over one dim ------------------------

@pytest.mark.parametrize("call", [
    lambda T: T.max(T.tensor([1.0, 4.0]), T.tensor([2.0, 3.0]), out=T.empty(2, dtype=T.float64)),
    lambda T: T.min(T.tensor([1.0, 4.0]), T.tensor([2, 3]), out=T.empty(2, dtype=T.float16)),
    lambda T: T.max(T.tensor([1.0, 4.0]), out=T.empty((), dtype=T.float64)),
    lambda T: T.min(T.tensor([1.0, 4.0]), out=T.empty((), dtype=T.float64)),
    lambda T: T.max(T.tensor([1.0, 4.0]), T.tensor([2.0, 3.0]), out=T.empty(2, dtype=T.int64)),
    lambda T: T.max(T.ones(3, 2), 1, out=(T.empty(3, dtype=T.float64), T.empty(3, dtype=T.long)))[0],
    lambda T: T.min(T.ones(3, 2), 1, out=(T.empty(3), T.empty(3, dtype=T.int32)))[0],
    lambda T: T.norm(T.tensor([[3.0, -4.0], [0.0, 1.0]]), "nuc", 1),
])
def test_max_min_out_casts_except_along_a_dim(call):
    # before: max(x, y, out=) and max(x, out=) refused an out of another dtype (the rule of
    # max(x, dim, out=)'s values) where PyTorch casts into it; norm(x, 'nuc', int) was a TypeError
    assert _outcome(tg, call) == _outcome(torch, call)


@pytest.mark.parametrize("values_dtype, indices_dtype", [
    ("float64", "int32"), ("float32", "int64"), ("float32", "int32"), ("float64", "float64")])
def test_kthvalue_out_names_the_wrong_output(values_dtype, indices_dtype):
    # before: an indices out of another dtype was blamed on the values
    def call(T):
        return T.kthvalue(T.tensor([3.0, 1.0, 2.0], dtype=T.float64), 2,
                          out=(T.empty(0, dtype=getattr(T, values_dtype)),
                               T.empty(0, dtype=getattr(T, indices_dtype))))[0]
    assert _outcome(tg, call) == _outcome(torch, call)


@pytest.mark.parametrize("n", [1, 3, 4, 6, 7, 13, 40])
def test_nanmedian_of_a_row_of_nans_answers_pytorchs_index(n):
    # SILENT before: the first element answered (index and gradient), where PyTorch's
    # nth_element leaves another of the equal NaNs first
    def call(T):
        x = T.tensor([[float("nan")] * n, [1.0] + [float("nan")] * (n - 1)], dtype=T.float64,
                     requires_grad=True)
        values, indices = T.nanmedian(x, 1)
        values.sum().backward()
        return indices.tolist(), x.grad.tolist()
    assert call(tg) == call(torch)


# -- dtype= of the NaN-skipping reductions and of cumprod ---------------------------------------

@pytest.mark.parametrize("call", [
    lambda T: T.nanmean(T.tensor([[1.5, float("nan")], [3.0, 0.5]]), dtype=T.float16),
    lambda T: T.nanmean(T.tensor([[1.5, float("nan")], [3.0, 0.5]]), 1, dtype=T.float16),
    lambda T: T.nanmean(T.tensor([[1.5, float("nan")], [3.0, 0.5]]), 1, keepdim=True),
    lambda T: T.nanmean(T.tensor([float("nan"), 1.0, 2.0], dtype=T.float16)),
    lambda T: T.nanmean(T.tensor([1.5, 2.0]), dtype=T.int32),
    lambda T: T.nanmean(T.tensor([1.5, 2.0]), dtype=T.bool),
    lambda T: T.nansum(T.tensor([1.5, float("nan")]), dtype=T.complex128),
    lambda T: T.nansum(T.tensor([1, 2]), dtype=T.complex64),
    lambda T: T.cumprod(T.tensor([1.0, 2.0]), 0, dtype=T.bool),
    lambda T: T.cumprod(T.tensor([1, 0, 2]), 0, dtype=T.bool),
    lambda T: T.cumprod(T.tensor([True, False]), 0),
])
def test_nanmean_nansum_cumprod_dtype_argument(call):
    # SILENT before: nanmean ignored a dtype below float32 (its count, in the input's dtype,
    # promoted the quotient back) and computed for an integer dtype PyTorch refuses; nansum of a
    # float input in a complex dtype and cumprod in bool computed where PyTorch has no kernel
    assert repr(_outcome(tg, call)) == repr(_outcome(torch, call))


@pytest.mark.parametrize("call", [
    lambda T, y: T.eq(y, y, out=T.empty(3, dtype=T.bool)),
    lambda T, y: T.lt(y, 2.0, out=T.empty(3, dtype=T.bool)),
    lambda T, y: T.greater_equal(y, y, out=T.empty(3, dtype=T.bool)),
    lambda T, y: T.logical_not(y, out=T.empty(3, dtype=T.bool)),
    lambda T, y: T.isin(y, y, out=T.empty(3, dtype=T.bool)),
    lambda T, y: T.histc(y, bins=4, out=T.empty(4)),
    lambda T, y: T.argmax(y, 0, out=T.empty((), dtype=T.long)),
    lambda T, y: T.signbit(y, out=T.empty(3, dtype=T.bool)),
    lambda T, y: T.any(y, 0, out=T.empty((), dtype=T.bool)),
    lambda T, y: T.floor(y, out=T.empty(3)),
    lambda T, y: T.logsumexp(y, 0, out=T.empty(())),
])
def test_out_of_a_result_pytorch_never_differentiates_takes_an_input_requiring_grad(call):
    # before: every out= call with an operand requiring grad was refused; PyTorch refuses only
    # where the result is differentiable (floor, logsumexp), not comparisons, argmax, isin, histc
    def run(T):
        y = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        outcome = _outcome(T, lambda T: call(T, y))
        return outcome[0], str(outcome[1])[:40]
    assert run(tg) == run(torch)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("kwargs", [
    dict(out_dtype="float32"), dict(out_dtype="float64"), dict(dtype="float64", out_dtype="float64"),
    dict(dtype="float64", out_dtype="float32"), dict(out_dtype="int64"), dict(out_shape=(0,)),
])
def test_softmax_and_log_softmax_take_out(name, kwargs):
    # before: TypeError (no out= keyword); PyTorch's out must have the result's dtype
    def call(T):
        x = T.tensor([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]])
        out = T.empty(kwargs.get("out_shape", (2, 3)), dtype=getattr(T, kwargs["out_dtype"])
                      if "out_dtype" in kwargs else T.float32)
        extra = {"dtype": getattr(T, kwargs["dtype"])} if "dtype" in kwargs else {}
        result = getattr(T, name)(x, 1, out=out, **extra)
        assert result is out
        return out
    expected = _outcome(torch, call)
    got = _outcome(tg, call)
    assert got[0] == expected[0]
    if expected[0].startswith("float"):
        flat = [v for row in got[1] for v in row]
        assert flat == pytest.approx([v for row in expected[1] for v in row], rel=1e-6)
    else:
        assert got[1] == expected[1]
