"""Testing helpers (as torch.testing is to PyTorch): finite differences and a count of the
Python-level calls a piece of code makes, used by tapegrad's own tests."""
from __future__ import annotations as _annotations

import gc as _gc
import sys as _sys

import numpy as _np

from ._extra_ops import magnitude as _magnitude, unrounded as _unrounded


def numeric_grad(f, arrays, eps: float = 1e-6):
    """Central finite differences of scalar f(*arrays) with respect to each float64 array.

    The arrays are perturbed in place, one element at a time, and restored."""
    grads = []
    for a in arrays:
        g = _np.zeros_like(a)
        it = _np.nditer(a, flags=["multi_index"])
        for _ in it:
            i = it.multi_index
            old = a[i]
            a[i] = old + eps
            hi = f(*arrays)
            a[i] = old - eps
            lo = f(*arrays)
            a[i] = old
            g[i] = (hi - lo) / (2 * eps)
        grads.append(g)
    return grads


def count_python_calls(fn) -> int:
    """How many Python-level calls (Python functions and builtins called from Python code) fn()
    makes: the sweep's per-node work is compiled, so backward's count does not grow with the
    graph.  The garbage collector is paused so unrelated finalizers do not count."""
    calls = 0

    def profiler(frame, event, arg):
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    _gc.disable()
    _sys.setprofile(profiler)
    try:
        fn()
    finally:
        _sys.setprofile(None)
        _gc.enable()
    return calls


# ---------------------------------------------------------------------------------------------
# torch.testing.assert_close / make_tensor: the drop-in comparison helpers of test scripts.
# ---------------------------------------------------------------------------------------------

# Default (rtol, atol) per dtype name, the values torch documents for assert_close; dtypes not
# listed (integers, bool) compare exactly.
_DEFAULT_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5),
                       "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
                       "complex32": (1e-3, 1e-5), "complex64": (1.3e-6, 1e-5),
                       "complex128": (1e-7, 1e-7)}


class _ComparisonError(AssertionError):
    """An assert_close failure whose message a caller-supplied `msg` may replace or rewrite."""


def _dtype_name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _default_tolerances(*dtype_names):
    """The loosest default tolerance among the compared dtypes (torch takes the max of both)."""
    pairs = [_DEFAULT_TOLERANCES.get(name, (0.0, 0.0)) for name in dtype_names]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _fail(default_msg, msg):
    if msg is None:
        raise _ComparisonError(default_msg)
    raise _ComparisonError(msg(default_msg) if callable(msg) else msg)


def _is_tensor_like(value) -> bool:
    from . import is_tensor
    return is_tensor(value) or isinstance(value, _np.ndarray)


def _as_tensor(value):
    from . import as_tensor, is_tensor
    return value.detach() if is_tensor(value) else as_tensor(value)


def _comparable_arrays(actual, expected):
    """The two tensors' values as numpy arrays, and the rounding each arithmetic result takes.

    numpy has no bfloat16: a bfloat16 tensor is compared on its float32 storage, every
    intermediate rounded to bfloat16, because PyTorch computes isclose and the mismatch report
    with bfloat16 ops (rounding the difference can move it across the tolerance)."""
    if _dtype_name(actual.dtype) == "bfloat16":
        from ._bfloat16 import round_to_bfloat16
        return actual.float().numpy(), expected.float().numpy(), round_to_bfloat16
    return actual.numpy(), expected.numpy(), _unrounded


def _mismatch_report(kind, actual, expected, mismatch, rtol, atol, equal, rounded=_unrounded):
    """torch's failure text: how many elements differ and where the greatest differences are.

    Only mismatching elements take part in the maxima (matches count as difference 0), so a
    0/0 relative difference of two equal zeros never hides the real one.  `rounded` is the
    rounding of the compared dtype when numpy computes in a wider one (bfloat16)."""
    check = "equal" if equal else "close"
    if actual.ndim == 0:  # a 0-dim tensor is reported like a pair of Python scalars
        a, e = actual.item(), expected.item()
        diff = abs(a - e)
        with _np.errstate(divide="ignore", invalid="ignore"):
            rel = float(_np.float64(diff) / _np.float64(abs(e)))
        suffix = ("", "") if equal else (f" (up to {atol} allowed)", f" (up to {rtol} allowed)")
        return (f"Scalars are not {check}!\n\nExpected {e} but got {a}.\nAbsolute difference: "
                f"{diff}{suffix[0]}\nRelative difference: {rel}{suffix[1]}")
    else:
        header = (f"{kind} are not {check}!\n\nMismatched elements: {int(mismatch.sum())} / "
                  f"{mismatch.size} ({int(mismatch.sum()) / mismatch.size:.1%})\n")
    exact = not (_np.issubdtype(actual.dtype, _np.floating) or _np.issubdtype(actual.dtype, _np.complexfloating))
    if exact:  # integers and bool: differences as int64, relative ones in the default float
        a, e = actual.astype(_np.int64), expected.astype(_np.int64)
        abs_diff = _np.asarray(_np.abs(a - e))
        abs_diff[~mismatch] = 0
        with _np.errstate(divide="ignore", invalid="ignore"):
            rel_diff = _np.asarray(abs_diff / _np.abs(e), dtype=_np.float32)
    else:
        with _np.errstate(invalid="ignore", over="ignore"):
            abs_diff = _np.asarray(rounded(_magnitude(actual - expected)))
        abs_diff[~mismatch] = 0
        with _np.errstate(divide="ignore", invalid="ignore"):
            rel_diff = _np.asarray(rounded(abs_diff / _magnitude(expected)), dtype=abs_diff.dtype)
    rel_diff[~mismatch] = 0
    lines = []
    for name, diff, tol in (("absolute", abs_diff, atol), ("relative", rel_diff, rtol)):
        flat = diff.reshape(-1)
        nan = _np.isnan(flat) if flat.dtype.kind == "f" else _np.zeros(flat.shape, bool)
        where = int(_np.argmax(nan)) if nan.any() else int(_np.argmax(flat))   # max propagates NaN
        index = tuple(int(i) for i in _np.unravel_index(where, diff.shape))
        line = f"Greatest {name} difference: {flat[where].item()} at index {index}"
        if not equal:
            line += f" (up to {tol} allowed)"
        lines.append(line)
    return header + "\n".join(lines)


def _compare_tensors(actual, expected, *, rtol, atol, equal_nan, check_device, check_dtype,
                     check_layout, check_stride, msg):
    actual, expected = _as_tensor(actual), _as_tensor(expected)

    def attribute(name, a, e):
        if a != e:
            _fail(f"The values for attribute '{name}' do not match: {a} != {e}.", msg)

    attribute("shape", actual.shape, expected.shape)
    if check_device:
        attribute("device", actual.device, expected.device)
    if check_dtype:
        attribute("dtype", actual.dtype, expected.dtype)
    if check_layout:
        attribute("layout", actual.layout, expected.layout)
    strided = _dtype_named("strided")
    if check_stride and actual.layout == strided:
        attribute("stride()", actual.stride(), expected.stride())
    if rtol is None:
        rtol, atol = _default_tolerances(_dtype_name(actual.dtype), _dtype_name(expected.dtype))
    from ._extra_ops import check_tolerances
    check_tolerances(rtol, atol)       # PyTorch compares tensors with isclose, which refuses
    if actual.dtype != expected.dtype:  # only with check_dtype=False: compare in the promoted dtype
        from . import promote_types
        common = promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(common), expected.to(common)
    if actual.layout != expected.layout:    # only with check_layout=False: compare dense
        actual = actual if actual.layout == strided else actual.to_dense()
        expected = expected if expected.layout == strided else expected.to_dense()
    if actual.is_sparse:
        # sparse COO: the stored entries, not the dense tensors they stand for
        for what, a, e in (("sparse dimensions", actual.sparse_dim(), expected.sparse_dim()),
                           ("specified values", actual._nnz(), expected._nnz())):
            if a != e:
                _fail(f"The number of {what} in sparse COO tensors does not match: {a} != {e}",
                      msg)
        _compare_values(actual._indices(), expected._indices(), 0, 0, False, msg,
                        "Sparse COO indices")
        _compare_values(actual._values(), expected._values(), rtol, atol, equal_nan, msg,
                        "Sparse COO values")
        return
    _compare_values(actual, expected, rtol, atol, equal_nan, msg, "Tensor-likes")


def _compare_values(actual, expected, rtol, atol, equal_nan, msg, kind):
    a, e, rounded = _comparable_arrays(actual, expected)
    mismatch = ~_isclose(a, e, rtol, atol, equal_nan, rounded)
    if mismatch.any():
        _fail(_mismatch_report(kind, a, e, mismatch, rtol, atol,
                               equal=(rtol == 0 and atol == 0), rounded=rounded), msg)


def _isclose(a, e, rtol, atol, equal_nan, rounded=_unrounded):
    """torch.isclose on arrays: |a - e| <= atol + |rtol * e|, each result rounded as `rounded`."""
    if not _np.issubdtype(a.dtype, _np.inexact):
        if rtol == 0 and atol == 0:
            return a == e
        a, e = a.astype(_np.float64), e.astype(_np.float64)
    with _np.errstate(invalid="ignore", over="ignore"):
        error = rounded(_magnitude(a - e))
        allowed = rounded(atol + rounded(_magnitude(rtol * e)))
        close = (a == e) | (_np.isfinite(a) & _np.isfinite(e) & (error <= allowed))
    if equal_nan:
        close |= _np.isnan(a) & _np.isnan(e)
    return close


def _compare_scalars(actual, expected, *, rtol, atol, equal_nan, check_dtype, msg):
    if isinstance(actual, bool) and isinstance(expected, bool):
        if actual is not expected:
            _fail(f"Booleans mismatch: {actual} is not {expected}", msg)
        return
    if check_dtype and type(actual) is not type(expected):
        _fail(f"The (d)types do not match: {type(actual)} != {type(expected)}.", msg)
    floating = isinstance(actual, (float, complex)) or isinstance(expected, (float, complex))
    if rtol is None:
        rtol, atol = (1e-7, 1e-7) if floating else (0.0, 0.0)
    if actual == expected or (equal_nan and actual != actual and expected != expected):
        return
    import cmath
    finite = cmath.isfinite(actual) and cmath.isfinite(expected)
    if not (floating and finite and abs(actual - expected) <= atol + rtol * abs(expected)):
        equal = rtol == 0 and atol == 0
        diff = abs(actual - expected)
        rel = diff / abs(expected) if expected != 0 else float("inf")
        suffix = ("", "") if equal else (f" (up to {atol} allowed)", f" (up to {rtol} allowed)")
        _fail(f"Scalars are not {'equal' if equal else 'close'}!\n\nExpected {expected} but got "
              f"{actual}.\nAbsolute difference: {diff}{suffix[0]}\n"
              f"Relative difference: {rel}{suffix[1]}", msg)


def _tensor_pair(actual, expected, allow_subclasses) -> bool:
    """Whether PyTorch compares the two as tensors: both tensors or both numpy arrays (a tensor
    is never paired with an array), of one type unless subclasses are allowed."""
    from . import is_tensor
    if not (is_tensor(actual) and is_tensor(expected) or
            isinstance(actual, _np.ndarray) and isinstance(expected, _np.ndarray)):
        return False
    return allow_subclasses or type(actual) is type(expected)


def _compare(actual, expected, path, allow_subclasses=True, **options):
    from collections.abc import Mapping, Sequence
    # numpy scalars compare as the Python numbers they hold (np.float32(1) is close to 1.0)
    actual = actual.item() if isinstance(actual, _np.generic) else actual
    expected = expected.item() if isinstance(expected, _np.generic) else expected
    if actual is None or expected is None:
        if actual is not expected:
            raise AssertionError(f"None mismatch: {actual} is not {expected}")
        return
    try:
        if _tensor_pair(actual, expected, allow_subclasses):
            return _compare_tensors(actual, expected, **options)
        if _is_tensor_like(actual) and _is_tensor_like(expected):
            raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} "
                            f"and {type(expected)}.")
        scalar = (bool, int, float, complex)
        if isinstance(actual, scalar) and isinstance(expected, scalar):
            options = {k: v for k, v in options.items() if k in ("rtol", "atol", "equal_nan",
                                                                 "check_dtype", "msg")}
            return _compare_scalars(actual, expected, **options)
    except _ComparisonError as error:
        where = "".join(f"[{key!r}]" for key in path)
        text = str(error) if not path or options.get("msg") is not None else \
            f"{error}\n\nThe failure occurred for item {where}"
        raise _ComparisonError(text) from None
    strings = (str, bytes)
    if (isinstance(actual, Sequence) and isinstance(expected, Sequence)
            and not isinstance(actual, strings) and not isinstance(expected, strings)):
        if len(actual) != len(expected):
            raise AssertionError(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, path + (i,), allow_subclasses, **options)
        return
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        missing = [k for k in expected if k not in actual]
        extra = [k for k in actual if k not in expected]
        if missing or extra:
            raise AssertionError("The keys of the mappings do not match:\n"
                                 f"Missing keys in the actual mapping: {sorted(missing)}\n"
                                 f"Additional keys in the actual mapping: {sorted(extra)}")
        for key in actual:
            _compare(actual[key], expected[key], path + (key,), allow_subclasses, **options)
        return
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} "
                    f"and {type(expected)}.")


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Assert that `actual` and `expected` are close, as torch.testing.assert_close does.

    Tensors (and numpy arrays), Python scalars, and sequences / mappings of them are compared
    element by element: |actual - expected| <= atol + rtol * |expected| (NaN equal only with
    ``equal_nan``).  Omitted tolerances default per dtype (float32: rtol 1.3e-6, atol 1e-5;
    float64: 1e-7 both; float16: 1e-3 / 1e-5; integers and bool: exact).  Shape, device,
    dtype and layout must match (the ``check_*`` flags relax them; ``check_stride`` adds the
    strides).  A failure raises AssertionError with torch's report ("Tensor-likes are not close!",
    the mismatch count, the greatest absolute and relative differences and their indices);
    ``msg`` (a string, or a callable given the default message) replaces it.  Pairing a tensor
    with a Python scalar or a numpy array, or two unsupported types, raises TypeError, as does
    a tensor subclass paired with another type when ``allow_subclasses`` is False.  numpy
    scalars compare as Python numbers; None matches only None.
    """
    if (rtol is None) != (atol is None):
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'rtol' if rtol is None else 'atol'}.")
    try:
        _compare(actual, expected, (), allow_subclasses, rtol=rtol, atol=atol,
                 equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype,
                 check_layout=check_layout, check_stride=check_stride, msg=msg)
    except _ComparisonError as error:
        raise AssertionError(str(error)) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """The deprecated torch.testing.assert_allclose: assert_close with NaNs equal, dtypes
    compared after promotion, non-tensors converted (expected to actual's dtype), and its own
    looser default tolerances (float16 1e-3/1e-3, float32 1e-4/1e-5, float64 1e-5/1e-8)."""
    import warnings

    from . import is_tensor, tensor
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed "
                  "in a future release. Please use `torch.testing.assert_close()` instead. You "
                  "can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    if not is_tensor(actual):
        actual = tensor(actual)
    if not is_tensor(expected):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        precisions = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}
        pairs = [precisions.get(_dtype_name(t.dtype), (0.0, 0.0)) for t in (actual, expected)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of the given shape and dtype filled with uniform random values (torch.testing).

    Floats are drawn from [low, high) (default [-9, 9)), complex numbers have real and imaginary
    parts drawn so, integers come from [low, high) (default [-9, 10)), bool is a fair coin; the
    bounds are clamped to the dtype's range.  ``exclude_zero`` replaces zeros by the smallest
    positive step of the dtype (1 for integers, tiny for floats); ``noncontiguous`` returns a
    strided view of a tensor twice as long in its last dimension; ``memory_format`` lays the
    result out so (exclusive with ``noncontiguous``).  ``requires_grad`` is only allowed for
    floating and complex dtypes.
    """
    import math
    import warnings

    from . import empty, finfo, iinfo, randint, rand
    if len(shape) == 1 and hasattr(shape[0], "__len__"):   # make_tensor((2, 3), ...)
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    is_bool = dtype == _dtype_named("bool")
    inexact = dtype.is_floating_point or dtype.is_complex
    if requires_grad and not inexact:
        raise ValueError("`requires_grad=True` is not supported for boolean and integral dtypes, "
                         f"but got dtype={dtype}")
    if is_bool:
        lowest, highest, default = 0, 2, (0, 2)
    elif inexact:
        info = finfo(dtype)
        lowest, highest, default = info.min, info.max, (-9, 9)
    else:
        info = iinfo(dtype)
        # randint's bounds are int64: its exclusive top cannot be int64's maximum + 1
        lowest = info.min
        highest = info.max + (0 if dtype == _dtype_named("int64") else 1)
        default = (-9, 10)
    low = default[0] if low is None else low
    high = default[1] if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and inexact:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. Use "
                      "`torch.full(...)` instead.", FutureWarning, stacklevel=2)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    full = shape
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:       # twice as wide, so the strided view holds distinct values
        full = shape[:-1] + (shape[-1] * 2,)
    if not inexact:
        result = randint(math.ceil(low), math.ceil(high), full, dtype=dtype)
    else:
        # uniform in [low, high) computed in float64 (an infinite bound's span overflows: a
        # float64 draw from the finite part of the range keeps it finite), then rounded
        parts = 2 if dtype.is_complex else 1
        f64 = _dtype_named("float64")
        u = rand(full + (parts,), dtype=f64)
        values = u * float(high) - u * float(low) + float(low)
        if dtype.is_complex:
            values = _dtype_named("complex")(values[..., 0], values[..., 1])
        else:
            values = values[..., 0]
        result = values.to(dtype)
    if noncontiguous:       # offset by one, so an offset mistake shows too
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result = result.masked_fill(result == 0, 1 if not inexact else finfo(dtype).tiny)
    if inexact:
        result.requires_grad_(requires_grad)
    return result


def _dtype_named(name):
    import tapegrad
    return getattr(tapegrad, name)
