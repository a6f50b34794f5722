"""A tensor with a numpy ndarray (or numpy scalar) operand, compared with PyTorch cell by cell.

PyTorch's argument parser takes no ndarray as a Tensor, so its operators return NotImplemented
and Python's protocol decides: `t + array` runs ndarray's reflected method, numpy's ufunc, which
reads the tensor through Tensor.__array__ (refused when it requires grad) and wraps the result
through __array_wrap__ (numpy's dtype, no graph, bool as uint8); `array + t` defers to Tensor's
reflected method by __array_priority__ and fails; `t += array` rebinds; Tensor.__eq__ alone
converts the array (torch.from_numpy) and compares by PyTorch's rules.  A numpy scalar is a
number.  Every cell (op, form, tensor dtype, operand, requires_grad) must give what PyTorch
gives: the result's type, dtype, shape, values, requires_grad and grad_fn, the gradient when
there is a graph, the warnings, or the exception's type and message.
`python tools/ndarray_operand_grid.py` prints the cells that differ."""
import itertools
import operator
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")

OPS = {
    "add": (operator.add, operator.iadd), "sub": (operator.sub, operator.isub),
    "mul": (operator.mul, operator.imul), "truediv": (operator.truediv, operator.itruediv),
    "floordiv": (operator.floordiv, operator.ifloordiv), "mod": (operator.mod, operator.imod),
    "pow": (operator.pow, operator.ipow), "matmul": (operator.matmul, None),
    "eq": (operator.eq, None), "ne": (operator.ne, None), "lt": (operator.lt, None),
    "le": (operator.le, None), "gt": (operator.gt, None), "ge": (operator.ge, None),
    "and": (operator.and_, operator.iand), "or": (operator.or_, operator.ior),
    "xor": (operator.xor, operator.ixor), "lshift": (operator.lshift, operator.ilshift),
    "rshift": (operator.rshift, operator.irshift),
}

TENSOR_DTYPES = ("float32", "float64", "float16", "int64", "int32", "uint8", "bool", "complex64")

OPERANDS = {
    "i64": lambda: np.arange(1, 5, dtype=np.int64).reshape(2, 2),
    "i32": lambda: np.array([[2, -1], [0, 3]], dtype=np.int32),
    "f64": lambda: np.linspace(-1, 2, 4).reshape(2, 2),
    "f32": lambda: np.full((2, 2), 0.5, np.float32),
    "f16": lambda: np.array([[0.5, 2], [-1, 4]], np.float16),
    "bool": lambda: np.array([[True, False], [True, True]]),
    "c128": lambda: np.array([[1 + 1j, 2], [0.5j, -1]]),
    "0d": lambda: np.array(2.0),
    "0d_int": lambda: np.array(3),
    "row": lambda: np.array([[1.0, 2.0]]),              # broadcasts over the rows
    "batch": lambda: np.ones((3, 1, 1)) * 2,            # broadcasts to (3, 2, 2)
    "mismatch": lambda: np.ones(3),                     # does not broadcast
    "reversed": lambda: np.arange(4.0)[::-1].reshape(2, 2),   # negative strides
    "np_f64": lambda: np.float64(2.0),
    "np_f32": lambda: np.float32(0.5),
    "np_i64": lambda: np.int64(3),
    "np_bool": lambda: np.bool_(True),
    "np_c128": lambda: np.complex128(1 + 2j),
}


# A numpy scalar is a number to PyTorch: the Python number it is read as (a numpy bool as a
# double: PyTorch's Scalar conversion takes neither a numpy int nor a Python bool from it).
PYTHON_NUMBER = {"np_f64": 2.0, "np_f32": 0.5, "np_i64": 3, "np_bool": 1.0, "np_c128": 1 + 2j}


def make_tensor(T, dtype, requires_grad):
    values = {"bool": [[True, False], [False, True]], "uint8": [[1, 2], [3, 4]],
              "complex64": [[1 + 1j, -2], [0.5j, 3]]}.get(
        dtype, [[1.5, -2.5], [0.25, 3.0]] if dtype.startswith("float") else [[1, -2], [3, 4]])
    t = T.tensor(values, dtype=getattr(T, dtype))
    return t.requires_grad_() if requires_grad else t


def describe(r, T):
    """What a result is, in terms both libraries share."""
    if isinstance(r, T.Tensor):
        values = np.asarray(r.detach())
        return ("Tensor", str(r.dtype).split(".")[-1], tuple(r.shape), r.requires_grad,
                r.grad_fn is not None, repr(np.round(values, 4).tolist()))
    if isinstance(r, np.ndarray):
        return ("ndarray", str(r.dtype), repr(np.round(r, 4).tolist()))
    return (type(r).__name__, repr(r) if isinstance(r, (bool, int, float)) else "")


def run_cell(T, op, form, dtype, kind, requires_grad, python_number=False):
    """One cell in library T: its result (or exception), warnings and gradient; with
    python_number, the numpy scalar's cell with the Python number it stands for."""
    t = make_tensor(T, dtype, requires_grad)
    a = PYTHON_NUMBER[kind] if python_number else OPERANDS[kind]()
    fn, ifn = OPS[op]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if form == "inplace":
                target = t * 1 if requires_grad else t        # a non-leaf: writable in place
                r = ifn(target, a)
                out = ("in place" if r is target else "rebound",) + describe(r, T)
            else:
                r = fn(a, t) if form == "reflected" else fn(t, a)
                out = describe(r, T)
                if isinstance(r, T.Tensor) and r.grad_fn is not None:
                    (r.real if r.is_complex() else r).sum().backward()
                    out += ("grad",) + describe(t.grad, T)
        except Exception as e:                                  # noqa: BLE001 (compared)
            out = ("raises", type(e).__name__, str(e).split("\n")[0][:70])
    return out + tuple(sorted({f"{w.category.__name__}: {str(w.message)[:50]}"
                               for w in caught}))


# Left out: a numpy complex scalar with the integer-style ops (floor division, remainder,
# bitwise, shifts), whose complex-number errors differ for Python complex numbers too (PyTorch's
# NotImplementedError "..._cpu not implemented for 'ComplexFloat'", tapegrad's TypeError), and
# with a float16 tensor (PyTorch's complex32, which tapegrad does not have).
INTEGER_STYLE = ("floordiv", "mod", "and", "or", "xor", "lshift", "rshift")


def cells(op):
    forms = ("forward", "reflected") + (("inplace",) if OPS[op][1] else ())
    for form, dtype, kind in itertools.product(forms, TENSOR_DTYPES, OPERANDS):
        if kind == "np_c128" and (op in INTEGER_STYLE or dtype == "float16"):
            continue
        for requires_grad in ((False, True) if dtype[0] in "fc" else (False,)):
            yield form, dtype, kind, requires_grad


def differing_cells(op):
    for form, dtype, kind, rg in cells(op):
        want = run_cell(torch, op, form, dtype, kind, rg)
        got = run_cell(tapegrad, op, form, dtype, kind, rg)
        if got != want and kind in PYTHON_NUMBER and (
                got == run_cell(tapegrad, op, form, dtype, kind, rg, True)
                and want == run_cell(torch, op, form, dtype, kind, rg, True)):
            continue        # a numpy scalar as its Python number: a number's own difference
        if got != want:
            yield (f"{op} {form} {dtype} {kind}{' requires_grad' if rg else ''}\n"
                   f"    torch    {want}\n    tapegrad {got}")


@pytest.mark.parametrize("op", OPS)
def test_operator_with_ndarray_operand_matches_torch(op):
    bad = list(differing_cells(op))
    n = sum(1 for _ in cells(op))
    assert not bad, f"{len(bad)} of {n} cells differ:\n" + "\n".join(bad[:20])


# -- the named forms and functions: an ndarray is no Tensor to them --------------------------------

CALLS = [
    "T.add(t, a)", "T.add(a, t)", "t.add(a)", "T.add(t, a, alpha=2)", "t.add_(a)", "T.sub(t, a)",
    "t.sub_(a)", "T.mul(t, a)", "t.mul_(a)", "T.div(t, a)", "t.div_(a)", "T.pow(t, a)",
    "t.pow(a)", "T.matmul(t, a)", "T.eq(t, a)", "t.eq(a)", "T.gt(t, a)", "T.maximum(t, a)",
    "T.atan2(t, a)", "T.remainder(t, a)", "T.fmod(t, a)", "T.floor_divide(t, a)",
    "T.logical_and(t, a)", "T.bitwise_and(t.long(), a.astype(np.int64))",
    "T.bitwise_left_shift(t.long(), a.astype(np.int64))", "T.where(t > 0, t, a)",
    "T.where(t > 0, a, t)", "T.where(a > 0, t, t)", "T.cat([t, a])", "T.stack([t, a])",
    "t.copy_(a)", "T.allclose(t, a)", "T.isclose(t, a)", "T.dot(t[0], a[0])", "T.clamp(t, a)",
    "T.clamp(t, min=a)", "t.index_select(0, ai)", "T.gather(t, 1, ai.reshape(2, 1))",
    "t.type_as(a)", "T.complex(t, a)", "F.linear(t, a)",
    # the operators' own methods
    "t.__eq__(a)", "t.__ne__(a)", "t.__lt__(a)", "t.__add__(a)", "t.__radd__(a)",
    "t.__iadd__(a)", "t.__rsub__(a)", "t.__rtruediv__(a)", "t.__rpow__(a)", "t.__matmul__(a)",
    "t.__rmatmul__(a)", "t.__ifloordiv__(a)", "t.__imod__(a)", "t.__ipow__(a)",
    "t.__lshift__(a)", "t.__iand__(a)",
    # __eq__ converts as torch.from_numpy: its refusals
    "t == a[::-1]", "t == a.astype(object)", "t == a.astype('>f8')", "t == np.array(['x', 'y'])",
    "t.__eq__(np.array(0.5))", "t.__eq__(np.ones((3, 1, 2)))",
    # numpy functions on tensors wrap back
    "np.sin(t)", "np.add(t, 1)", "np.add(t, a)", "np.greater(t, a)", "np.exp(tr)",
    "np.float64(2.0) * tr", "tr * np.float32(2.0)", "np.float64(2.0) + t", "np.array(2.0) * t",
    "tr.detach() * a",
    # creation from arrays
    "T.from_numpy(a[::-1])", "T.from_numpy(a.astype(object))", "T.from_numpy(a.astype('>f8'))",
    "T.from_numpy(a[:, ::2])", "T.from_numpy(a.astype(np.uint16))", "T.as_tensor(a[::-1])",
    # indexing with index arrays keeps working, gradients included
    "t[ai]", "t[a > 1]", "t[ai, ai]", "t[np.int64(1)]", "t[np.array(1)]", "t[:, ai]",
    "tr[ai].sum().backward() or tr.grad", "tr[a > 1].sum().backward() or tr.grad",
    "t.clone().index_put_((T.from_numpy(ai),), T.ones(2))",
]


# Refused with PyTorch's exception type but another message (PyTorch's parser reports the
# argument list: "expected Tensor as element 1 in argument 0", "received an invalid combination
# of arguments"; dist through its subtraction).
CALLS_TYPE_ONLY = ["T.broadcast_tensors(t, a)", "T.lerp(t, a, 0.5)", "t.masked_fill(a > 1, 0)",
                   "T.dist(t, a)"]


def run_call(T, expr):
    F = T.nn.functional
    t = T.tensor([[1.5, -2.0], [0.5, 3.0]])
    tr = t.clone().requires_grad_()
    a = np.array([[0.0, 1.0], [2.0, -3.0]])
    ai = np.array([1, 0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r = eval(expr, {"T": T, "F": F, "np": np},
                     {"t": t, "tr": tr, "a": a, "ai": ai})
            if isinstance(r, (tuple, list)):
                r = r[0]
            out = describe(r, T)
        except Exception as e:                                  # noqa: BLE001 (compared)
            # The exception's type and the message's key phrase (PyTorch names the ndarray
            # type numpy.ndarray, as its C parser reads tp_name; the phrase stops before it).
            out = ("raises", type(e).__name__, str(e).split("\n")[0][:22])
    return out + tuple(sorted({w.category.__name__ for w in caught}))


@pytest.mark.parametrize("expr", CALLS)
def test_call_with_ndarray_argument_matches_torch(expr):
    assert run_call(tapegrad, expr) == run_call(torch, expr)


def test_inplace_operator_with_ndarray_rebinds_and_leaves_views_alone():
    # t += array is t = t + array (numpy's result, numpy's dtype): a view of the old t keeps
    # the old values, as in PyTorch; t += number writes in place and the view sees it.
    for T in (torch, tapegrad):
        t = T.ones(2, dtype=T.float32)
        view = t[:1]
        with pytest.warns(DeprecationWarning, match="__array_wrap__"):   # numpy 2's, in both
            t += np.array([1, 2], dtype=np.int64)
        assert t.dtype == T.float64 and view.tolist() == [1.0]
        u = T.ones(2, dtype=T.int64)
        alias = u[:1]
        u //= 2
        u %= 3
        assert alias.tolist() == [0]


def test_ndarray_operand_on_the_short_path_shapes():
    # Size 1 and same-shape operands (the binary ops' short path sizes) defer as well.
    for shape in ((), (1,), (3,)):
        x = tapegrad.ones(shape)
        xt = torch.ones(shape)
        arr = np.full(shape, 2, dtype=np.int64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            got, want = x * arr, xt * arr
        assert describe(got, tapegrad) == describe(want, torch)


@pytest.mark.parametrize("expr", CALLS_TYPE_ONLY)
def test_call_with_ndarray_argument_raises_torch_type(expr):
    assert run_call(tapegrad, expr)[:2] == run_call(torch, expr)[:2]


# Functions composed in Python took a numpy array where PyTorch's argument parser raises
# TypeError (they computed through numpy: silent dtype and graph differences).
_COMPOSED = ["lib.addcmul(t, a, t)", "lib.addcmul(t, t, a)", "lib.addcdiv(t, t, a)",
             "lib.hypot(t, a)", "lib.hypot(a, t)", "lib.xlogy(t, a)", "lib.xlogy(a, t)",
             "lib.copysign(t, a)", "lib.copysign(a, t)", "lib.isin(t, a)", "lib.isin(a, t)",
             "lib.nn.functional.pairwise_distance(t, a)",
             "lib.nn.functional.pairwise_distance(a, t)", "lib.rsub(t, a)", "lib.rsub(a, t)",
             "lib.rsub(2, t)", "lib.gcd(t.long(), a.astype('int64'))", "lib.gcd(t.long(), 2)",
             "lib.lcm(t.long(), a.astype('int64'))", "lib.cross(t, a, dim=0)",
             "lib.cross(a, t, dim=0)", "lib.linalg.cross(t, a)"]


@pytest.mark.parametrize("expression", _COMPOSED)
def test_composed_functions_refuse_ndarray_arguments_as_torch(expression):
    messages = []
    for lib in (tapegrad, torch):
        namespace = {"lib": lib, "t": lib.ones(3), "a": np.ones(3)}
        with pytest.raises(TypeError) as caught:
            eval(expression, namespace)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("method", ["hypot", "copysign", "xlogy", "hypot_", "copysign_",
                                    "xlogy_", "sub_"])
def test_methods_refuse_ndarray_arguments(method):
    """(PyTorch's method messages name the argument from position 1: only the type is compared)"""
    for lib in (tapegrad, torch):
        t = lib.ones(3)
        with pytest.raises(TypeError):
            getattr(t, method)(np.ones(3))
        assert t.tolist() == [1.0, 1.0, 1.0]


_NUMPY_BOOL_SCALARS = [
    "lib.where(f > 0, np.bool_(True), 0)", "lib.where(t > 1, t, np.bool_(False))",
    "lib.where(t > 1, np.bool_(True), np.bool_(False))", "t.clamp(np.bool_(True))",
    "lib.clamp(t, min=np.bool_(False), max=np.int64(1))", "lib.clamp_min(t, np.bool_(True))",
    "f.clamp(max=np.bool_(True))", "lib.where(f > 0, np.int64(3), 0)",
    "lib.where(f > 0, np.float32(3), 0)", "t.masked_fill(t > 1, np.bool_(True))"]


@pytest.mark.parametrize("expression", _NUMPY_BOOL_SCALARS)
def test_numpy_bool_scalars_in_where_and_clamp_as_torch(expression):
    """PyTorch reads a numpy bool scalar as a double there too (silent: an integer result)."""
    results = []
    for lib in (tapegrad, torch):
        namespace = {"lib": lib, "np": np, "t": lib.tensor([1, 2]), "f": lib.tensor([1., -2.])}
        r = eval(expression, namespace)
        results.append((str(r.dtype).split(".")[-1], r.tolist()))
    assert results[0] == results[1]
