"""Tensor functions and methods that public tutorial scripts use and tapegrad lacked (issue 15).

`div(..., rounding_mode=)`, strides and storage offsets, `unique_consecutive`; each checked
against PyTorch 2.13.  Composed from recorded ops where a gradient flows, computed in numpy
where the result is an integer or index tensor (which never requires grad).

`register` (called from tapegrad/__init__.py) adds the functions to the tapegrad namespace and
the methods to Tensor; `div` and `Tensor.div_` replace the compiled ones there, which take no
`rounding_mode`, and hand every call without one straight back to them (with one, to
tapegrad.divide and Tensor.divide_).
"""
from __future__ import annotations as _annotations

import numpy as np

from ._deprecated_overloads import NOT_GIVEN, scale_first_product
from . import _core
from ._class_members import has_member
from .creation import has_numpy_strides
from ._extra_ops import (_check_broadcast, _check_tensor, _check_unique_dim_of_empty, _dim,
                         _no_dims, _refuse_if_complex, _wrap, _wrap_like, divide, register_family,
                         values_at)

_core_div = _core.div


def div(input, other, *, rounding_mode=None):
    """``input / other`` elementwise; ``rounding_mode='floor'`` rounds the quotient down,
    ``'trunc'`` toward zero (both keep integer dtypes and have zero gradient, as PyTorch's:
    the rounding is tapegrad.divide's)."""
    if rounding_mode is None:
        return _core_div(input, other)
    return divide(input, other, rounding_mode=rounding_mode)


# -- memory layout -------------------------------------------------------------------------------

def stride(self, dim=None):
    """The step in elements between neighbours along each dim (a tuple), or along ``dim``."""
    array = self._array
    if array.size == 0 and not any(array.strides) and not has_numpy_strides(array):
        # numpy gives a new empty array zero strides; PyTorch's are the row-major ones, each
        # dim counted as at least 1 (zeros(0, 16).stride() is (16, 1)), but for a tensor read
        # from an ndarray (creation.keep_numpy_strides)
        steps, step = [], 1
        for size in reversed(array.shape):
            steps.append(step)
            step *= max(size, 1)
        steps = tuple(reversed(steps))
    else:
        steps = tuple(s // array.itemsize for s in array.strides)
    if dim is None:
        return steps
    if not steps:
        from ._extra_ops import _no_dims_of_scalar
        _no_dims_of_scalar(dim, "stride")
    return steps[_dim(dim, self.ndim)]


def storage_offset(self) -> int:
    """How many elements (of this tensor's dtype) into its storage this tensor's first element
    lies: the distance from the start of untyped_storage(), which is the memory's owner even
    when this tensor reinterprets it (x.imag, x.view(dtype)), so a[5:].imag is 11 elements in."""
    from .storage import _address, untyped_storage_of
    array = self._array
    return (_address(array) - untyped_storage_of(array).data_ptr()) // array.itemsize


# -- cross ---------------------------------------------------------------------------------------

def cross(input, other, dim=None):
    """The cross product of 3-vectors along ``dim``; without ``dim``, along the first dim of
    size 3 (deprecated in PyTorch, which warns), unlike ``linalg.cross``'s last dim."""
    _check_tensor(input, "cross")
    _check_tensor(other, "cross", "other", 2)
    if dim is None:
        # (TORCH_WARN_ONCE in PyTorch: once per process, not once per calling line)
        _core.warn_once("Using torch.cross without specifying the dim arg is deprecated.\n"
                        "Please either pass the dim explicitly or simply use torch.linalg.cross.\n"
                        "The default value of dim will change to agree with that of linalg.cross "
                        "in a future release.", "aten/src/ATen/native/Cross.cpp:63")
        sizes = list(input.shape)
        if 3 not in sizes:
            raise RuntimeError("no dimension of size 3 in input")
        dim = sizes.index(3)
    from .linalg import cross as linalg_cross
    return linalg_cross(input, other, dim=dim)


# -- mode ----------------------------------------------------------------------------------------

def _mode_index(row: np.ndarray, replay_allowed: bool) -> int:
    """Position in row of its most frequent value (the smallest among equally frequent ones),
    as PyTorch's CPU kernel answers: at that value's last occurrence in the order std::sort
    leaves the row's (value, position) pairs in (_stl_order.mode_position), which is the
    value's last position in the row when std::sort sorts by insertion (up to 16 elements) or
    the value occurs once.  The replay runs only when `replay_allowed` (the call's rows to
    replay fit _stl_order's budget)."""
    values, counts = np.unique(row, return_counts=True)
    if replay_allowed and _mode_needs_replay(row, counts):
        from ._stl_order import mode_position
        return mode_position(row)
    winner = values[np.argmax(counts)]
    return int(np.flatnonzero(row == winner)[-1])


def _mode_needs_replay(row: np.ndarray, counts: np.ndarray) -> bool:
    """Whether std::sort's order of the row's pairs can move the answer off the last position."""
    return bool((row.dtype.kind == "f" and np.isnan(row).any())
                or (row.shape[0] > 16 and counts.max() > 1))


def _mode_replay_allowed(rows: np.ndarray) -> bool:
    """Whether the rows of one mode call that need std::sort's replay fit its budget in all
    (counted per call, as for sort and topk: a per-row budget let a 1000 x 1000 mode replay
    every row in Python, seconds where PyTorch takes milliseconds)."""
    from ._stl_order import compiled_dtype, within_budget
    if compiled_dtype(rows.dtype):
        return True                     # (replayed in C: no budget)
    width = rows.shape[1]
    if width <= 16:
        needing = int(np.isnan(rows).any(axis=1).sum()) if rows.dtype.kind == "f" else 0
    else:
        ordered = np.sort(rows, axis=1)
        tied = (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
        if rows.dtype.kind == "f":
            tied |= np.isnan(rows).any(axis=1)
        needing = int(tied.sum())
    return within_budget(needing, width)


def mode(input, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` and its index (named tuple ``values, indices``);
    the values are gathered by a recorded op, so the gradient reaches the chosen element."""
    _check_tensor(input, "mode")
    _core.check_bool("mode", "keepdim", keepdim)
    if input.ndim == 0:
        index = _wrap(np.zeros((), dtype=np.int64))
        return _core.return_types.mode((_core._name_grad_fn(input.clone(), "ModeBackward0"),
                                        index))
    axis = _dim(dim, input.ndim, "mode")
    if input.shape[axis] == 0:
        raise IndexError(f"mode(): Expected reduction dim {axis} to have non-zero size.")
    _refuse_if_complex("mode", input)     # (a 0-d complex input is PyTorch's too, above)
    moved = np.moveaxis(input._array, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    replay_allowed = _mode_replay_allowed(rows)
    picked = np.array([_mode_index(r, replay_allowed) for r in rows],
                      dtype=np.int64).reshape(moved.shape[:-1])
    position = np.expand_dims(picked, axis)
    index = _wrap(position if keepdim else picked)
    # (PyTorch's ModeBackward0 saves only the indices: no gather, whose record guards input)
    values = values_at(input, axis, index, keepdim)
    if not keepdim:         # (in place: PyTorch's values are no view, as median's)
        values = values.squeeze_(axis)
    return _core.return_types.mode((_core._name_grad_fn(values, "ModeBackward0"), index))


# -- atleast_nd ----------------------------------------------------------------------------------

# How each of PyTorch's atleast_{1,2,3}d reshapes a tensor of fewer dims (a recorded view).
_ATLEAST_SHAPES = {
    1: {0: lambda s: (1,)},
    2: {0: lambda s: (1, 1), 1: lambda s: (1,) + s},
    3: {0: lambda s: (1, 1, 1), 1: lambda s: (1,) + s + (1,), 2: lambda s: s + (1,)},
}


def _atleast(ndim: int, tensors):
    as_sequence = len(tensors) == 1 and isinstance(tensors[0], (list, tuple))
    if as_sequence:
        tensors = tuple(tensors[0])
    results = []
    for t in tensors:
        _check_tensor(t, f"atleast_{ndim}d")
        grow = _ATLEAST_SHAPES[ndim].get(t.ndim)
        if grow is None:
            results.append(t)
            continue
        grown = t.reshape(grow(tuple(t.shape)))
        # (PyTorch views a 0-d tensor with reshape, a 1-d or 2-d one with unsqueeze)
        results.append(_core._name_grad_fn(grown, "UnsqueezeBackward0") if t.ndim else grown)
    return results[0] if len(results) == 1 and not as_sequence else tuple(results)


def atleast_1d(*tensors):
    """Each tensor viewed with at least one dim (a 0-d tensor becomes shape (1,))."""
    return _atleast(1, tensors)


def atleast_2d(*tensors):
    """Each tensor viewed with at least two dims: (n,) becomes (1, n)."""
    return _atleast(2, tensors)


def atleast_3d(*tensors):
    """Each tensor viewed with at least three dims: (n,) becomes (1, n, 1), (m, n) (m, n, 1)."""
    return _atleast(3, tensors)


# -- dist ----------------------------------------------------------------------------------------

def dist(input, other, p=2):
    """The ``p``-norm of ``input - other`` (broadcast, flattened): a 0-d tensor."""
    _check_tensor(input, "dist")
    _check_tensor(other, "dist", "other", 2)
    from .linalg import vector_norm
    difference = _core.sub(input, other)
    if difference._array.dtype.kind not in "fc":      # (PyTorch's dist is its norm() of it)
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                           f"Got {_core.scalar_type_name_of(difference._array.dtype)} instead.")
    result = _core._name_grad_fn(vector_norm(difference, ord=p), "DistBackward0")
    # PyTorch's DistBackward0 saves both operands and the result: a later write into one
    # refuses the backward (the difference this norm saved is tapegrad's own).  The operands
    # are guarded on the subtraction's record, which saves nothing: the norm's had one free
    # slot, and a write into `other` went unnoticed.
    _core._guard_saved_version(difference, input, other)
    _core._guard_saved_version(result, result)
    return result


# -- elementwise compositions -------------------------------------------------------------------

def _floating(input, name):
    """input as a float or complex tensor (integers and bools take the default float dtype, as
    PyTorch)."""
    _check_tensor(input, name)
    if input.dtype.is_floating_point or input.dtype.is_complex:
        return input
    from . import get_default_dtype
    return input.to(get_default_dtype())


def _floating_result_type(input, other):
    """The dtype of a binary op that computes in floats (copysign, ldexp): the two operands'
    promoted dtype, the default float dtype when that is integral or bool."""
    from . import get_default_dtype, result_type
    dtype = result_type(input, other)
    return dtype if dtype.is_floating_point or dtype.is_complex else get_default_dtype()


def logit(input, eps=None):
    """log(p / (1 - p)); with ``eps``, p is first clamped to [eps, 1 - eps] (zero gradient
    outside)."""
    p = _floating(input, "logit")
    if p.is_complex():
        raise NotImplementedError(f"\"logit_cpu\" not implemented for "
                                  f"'{_core.scalar_type_name_of(p._array.dtype)}'")
    if eps is not None:
        from .creation import _number_argument
        eps = float(_number_argument(eps, "logit", "eps", None, "float"))
    result = _Logit.apply(p, eps)
    return result


from .autograd.function import Function as _Function  # noqa: E402


class _Logit(_Function):
    """PyTorch's logit: log(x / (1 - x)) of x clamped to [eps, 1 - eps] when eps is given; the
    gradient g / (x (1 - x)) inside [eps, 1 - eps] (or [0, 1]) and 0 (NaN without eps)
    outside, in recorded ops so that its own derivative is PyTorch's too.  (Composed as
    log(x) - log1p(-x), the gradient was finite where the value is NaN, x < 0 or x > 1.)"""

    @staticmethod
    def forward(ctx, input, eps):
        ctx.save_for_backward(input)
        ctx.eps = eps
        x = input._array
        if eps is not None:
            # PyTorch's clamp: x < eps gives eps, then x > 1 - eps gives 1 - eps; eps > 0.5
            # crosses the bounds, and np.clip (max first) would give 1 - eps for both ends
            lo, hi = x.dtype.type(eps), x.dtype.type(1 - eps)
            x = np.where(x < lo, lo, np.where(x > hi, hi, x))
        with np.errstate(divide="ignore", invalid="ignore"):
            return _wrap_like(np.log(x / (1 - x)).astype(x.dtype, copy=False), input)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        lo, hi, outside = (0.0, 1.0, np.nan) if ctx.eps is None else (ctx.eps, 1 - ctx.eps, 0.0)
        inside = (x >= lo).logical_and(x <= hi)
        return _core.where(inside, grad / (x * (1 - x)), outside), None


class _Copysign(_Function):
    """|x| with the sign bit of other (broadcast).  PyTorch's gradients: grad * result / x (0
    where x is 0, masked after the division: +-1, NaN at +-inf and NaN), and for other a
    constant zeros tensor: it requires no grad, so a second derivative does not reach other's
    side (fuzz 63007556: a where that kept other in the graph made the first gradient depend on
    the upstream one).
    The quotient reads the saved result, as PyTorch's: a create_graph gradient then depends on
    the result's node, so a second pass reaches it (a retained .grad of the result gets that
    pass's share, other its zeros; 62664062).  The result is version-checked: copysign_ writes
    it into its input, and a later write there raises rather than change the gradient
    (63011679)."""

    @staticmethod
    def forward(ctx, x, other):
        magnitude = np.abs(x._array)
        negative = np.signbit(other._array)
        result = _wrap_like(np.where(negative, -magnitude, magnitude).astype(magnitude.dtype,
                                                                               copy=False), x, other)
        # x only where its gradient is wanted, as PyTorch saves self (its version is then
        # checked: a later write into x refuses only a backward that reads it; the result always)
        ctx.save_for_backward(*((x,) if ctx.needs_input_grad[0] else ()), result)
        ctx.other_shape = tuple(other.shape)
        return result

    @staticmethod
    def backward(ctx, grad):
        *x, result = ctx.saved_tensors
        x = x[0] if x else None
        grad_x = grad_other = None
        if ctx.needs_input_grad[0]:
            from ._scatter_functions import _sum_to
            # PyTorch's masked quotient result / x (NaN at +-inf): its own derivative, 0 / 0 at
            # x = 0, makes second derivatives NaN there (62654947)
            ratio = _core.where(x == 0, 0.0, result / x)
            grad_x = _sum_to(grad * ratio, x.shape)
        if ctx.needs_input_grad[1]:
            from .creation import zeros
            grad_other = zeros(ctx.other_shape, dtype=grad.dtype)
        return grad_x, grad_other


def _name_logit_backward():
    from ._extra_functions import _torch_grad_fn_name
    _torch_grad_fn_name(_Logit, "LogitBackward0")
    _torch_grad_fn_name(_Copysign, "CopysignBackward0")


_name_logit_backward()


def hypot(input, other):
    """sqrt(input ** 2 + other ** 2) elementwise."""
    from ._extra_ops import _check_tensor, _check_broadcast
    _check_tensor(input, "hypot")
    _check_tensor(other, "hypot", "other", 2)
    _check_broadcast(input, other)      # (PyTorch's RuntimeError, not numpy's ValueError)
    from . import result_type
    dtype = result_type(input, other)
    if not dtype.is_floating_point:
        raise NotImplementedError(f'"hypot_cpu" not implemented for '
                                  f"'{_core.scalar_type_name_of(dtype.np_dtype)}'")
    # (in the promoted dtype: a float16 operand of a float64 one is not rounded first)
    input, other = input.to(dtype), other.to(dtype)
    result = _Hypot.apply(input, other)
    return result


class _Hypot(_Function):
    """C's hypot, as PyTorch's kernel: no overflow of the squares (float32 3e19 and 4e19 give
    5e19, not inf) and an infinite operand gives inf even beside a NaN (the composite
    sqrt(x^2 + y^2) gave inf and NaN there; fuzz 63016766).  Gradients x / h and y / h with h the
    saved result, as PyTorch's: a create_graph gradient then depends on the result's node, so a
    second pass reaches it (a retained .grad of the result gets that pass's share; 62671646).
    hypot_ writes the result into x: the version check refuses a later write."""

    @staticmethod
    def forward(ctx, x, y):
        with _core.IeeeResults():          # (beyond the dtype's range: inf, silently)
            h = _wrap_like(np.hypot(x._array, y._array), x, y)
        # an operand only where its own gradient is wanted (that gradient is the only one that
        # reads it), as PyTorch saves them: a later write into the other refuses nothing
        x_grad, y_grad = ctx.needs_input_grad[:2]
        ctx.save_for_backward(x if x_grad else None, y if y_grad else None, h)
        return h

    @staticmethod
    def backward(ctx, grad):
        from ._scatter_functions import _sum_to
        x, y, h = ctx.saved_tensors
        grad_x = _sum_to(grad * x / h, x.shape) if ctx.needs_input_grad[0] else None
        grad_y = _sum_to(grad * y / h, y.shape) if ctx.needs_input_grad[1] else None
        return grad_x, grad_y


def _name_hypot_backward():
    from ._extra_functions import _torch_grad_fn_name
    _torch_grad_fn_name(_Hypot, "HypotBackward0")


_name_hypot_backward()


class _LogAddExp(_Function):
    """log(e^x + e^y) by numpy's logaddexp (no overflow; the same infinity twice gives itself).
    PyTorch's gradients grad / (1 + e^(y - x)) for x and grad / (1 + e^(x - y)) for y, in
    recorded ops: both NaN where x and y are the same infinity, as PyTorch's.  (A composite
    max + log1p(exp(-|x - y|)) sent the whole gradient to x there: 1 and 0.)"""
    values = staticmethod(np.logaddexp)

    @staticmethod
    def power(t):
        return t.exp()

    @classmethod
    def forward(cls, ctx, x, y):
        ctx.save_for_backward(x, y)
        with np.errstate(all="ignore"):
            return _wrap_like(cls.values(x._array, y._array), x, y)

    @classmethod
    def backward(cls, ctx, grad):
        from ._scatter_functions import _sum_to
        x, y = ctx.saved_tensors
        grad_x = _sum_to(grad / (1 + cls.power(y - x)), x.shape) if ctx.needs_input_grad[0] \
            else None
        grad_y = _sum_to(grad / (1 + cls.power(x - y)), y.shape) if ctx.needs_input_grad[1] \
            else None
        return grad_x, grad_y


class _LogAddExp2(_LogAddExp):
    """log2(2^x + 2^y): _LogAddExp in base 2 (gradients grad / (1 + 2^(y - x)) ...)."""
    values = staticmethod(np.logaddexp2)

    @staticmethod
    def power(t):
        return t.exp2()


def _name_logaddexp_backward():
    from ._extra_functions import _torch_grad_fn_name
    _torch_grad_fn_name(_LogAddExp, "LogaddexpBackward0")
    _torch_grad_fn_name(_LogAddExp2, "Logaddexp2Backward0")


_name_logaddexp_backward()


def rad2deg(input):
    """Radians to degrees (integers give the default float dtype)."""
    _check_tensor(input, "rad2deg")
    _refuse_if_complex("rad2deg", input)
    result = _floating(input, "rad2deg") * (180.0 / np.pi)
    return _core._name_grad_fn(result, "Rad2DegBackward0")


def deg2rad(input):
    """Degrees to radians (integers give the default float dtype)."""
    _check_tensor(input, "deg2rad")
    _refuse_if_complex("deg2rad", input)
    result = _floating(input, "deg2rad") * (np.pi / 180.0)
    return _core._name_grad_fn(result, "Deg2RadBackward0")


def float_power(input, exponent):
    """``input ** exponent`` computed in float64 (the result is float64 whatever the inputs;
    complex128 when either is complex)."""
    from . import float64, complex128
    from ._extra_ops import _check_tensor_or_number
    operands = (input, exponent)
    _check_tensor_or_number("float_power", operands, (
        "Tensor input, Tensor exponent, *, Tensor out = None",
        "Number self, Tensor exponent, *, Tensor out = None",
        "Tensor input, Number exponent, *, Tensor out = None"))
    wide = (complex128 if any(x.is_complex() if isinstance(x, _core.TensorBase)
                              else isinstance(x, complex) for x in operands) else float64)
    base = input.to(wide) if isinstance(input, _core.TensorBase) else input
    power = exponent.to(wide) if isinstance(exponent, _core.TensorBase) else exponent
    if not isinstance(base, _core.TensorBase):
        base = _wrap(np.asarray(base, dtype=wide.np_dtype))
    result = _core.pow(base, power)
    return result


def copysign(input, other):
    """|input| with the sign (sign bit, so -0.0 counts as negative) of other, broadcast."""
    from ._extra_ops import _check_tensor_or_number, _check_broadcast
    _check_tensor_or_number("copysign", (input, other), (
        "Tensor input, Tensor other, *, Tensor out = None",
        "Tensor input, Number other, *, Tensor out = None"), first_is_tensor=True)
    _check_broadcast(input, other)      # (PyTorch's RuntimeError, not numpy's ValueError)
    # (the dtype of the two operands promoted, as a binary op: copysign(int, float64) is float64)
    dtype = _floating_result_type(input, other)
    if dtype.is_complex:                # (no complex kernel: a cast would drop the imaginary part)
        raise NotImplementedError(f"\"copysign_cpu\" not implemented for "
                                  f"'{_core.scalar_type_name_of(dtype.np_dtype)}'")
    x = input.to(dtype)
    node = "CopysignBackward0"          # (the Tensor overload's; a Number's is ...Backward1)
    if not isinstance(other, _core.TensorBase):
        other = _wrap(np.asarray(other, dtype=np.float64))
        node = "CopysignBackward1"
    result = _Copysign.apply(x, other)
    # PyTorch's node saves the result (its formula reads it): a write into it makes backward
    # raise; the gradient here is computed without it
    _core._guard_saved_version(result, result)
    return _core._name_grad_fn(result, node)


def _sinc_values(x):
    at_zero = _core.eq(x, 0)
    from .creation import ones_like, zeros_like
    one = ones_like(x)
    # The division runs on a copy with 1 at the zeros, so its gradient there is finite (where
    # would pass 0 * inf = nan back otherwise).
    scaled = _core.where(at_zero, one, x) * np.pi
    # At the zeros, sin(s)/s's Taylor polynomial 1 - s^2/6 + s^4/120 in s = pi x, on x itself
    # (0 there; 0 elsewhere, so no large power can overflow into the masked gradient): value
    # 1 and derivatives exact up to order 5, where a constant 1 made the second derivative
    # (a PINN's u_xx, a Hessian) silently 0 instead of -pi^2/3.  PyTorch's is nan there.
    s = _core.where(at_zero, x, zeros_like(x)) * np.pi
    s2 = s * s
    series = 1 - s2 / 6 * (1 - s2 / 20)
    return _core.where(at_zero, series, scaled.sin() / scaled)


def sinc(input):
    """sin(pi x) / (pi x), 1 at x = 0 (with gradient 0 there, as PyTorch's, and the true higher
    derivatives: -pi^2/3 for the second, where PyTorch's double backward gives nan)."""
    x = _floating(input, "sinc")
    from ._half_precision import in_float32_if_half
    # (float16 in float32, as PyTorch: pi * x rounded to float16 lost sin's argument)
    result = in_float32_if_half(_sinc_values, x)
    # PyTorch's node saves the input: a write into it makes backward raise (the records here
    # hold copies: the where's operand and the product)
    _core._guard_saved_version(result, x)
    return _core._name_grad_fn(result, "SincBackward0")


def addmv(input, mat, vec, old_third=NOT_GIVEN, old_fourth=NOT_GIVEN, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec): all three of one dtype, as PyTorch (no promotion)."""
    if old_third is not NOT_GIVEN:      # PyTorch's deprecated scale-first forms
        input, mat, vec, beta, alpha = scale_first_product(
            "addmv", input, mat, vec, old_third, old_fourth, beta, alpha)
    _check_addmv(input, mat, vec)
    from .contractions import _scaled_sum, in_float32_if_half
    return _core._name_grad_fn(in_float32_if_half(
        lambda i, m, v: _scaled_sum(i, _core.matmul(m, v), beta, alpha, drop_zero_alpha=True,
                                    empty_sum=mat.shape[1] == 0), input, mat, vec),
        "AddmvBackward0")


def _check_addmv(input, mat, vec) -> None:
    """PyTorch's addmv checks, in its order: the ranks, the sizes, then one dtype for all."""
    if mat.dim() != 2 or vec.dim() != 1 or input.dim() > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.dim()}, {mat.dim()}, "
                           f"{vec.dim()}")
    rows, cols = mat.shape
    if cols != vec.shape[0] or (input.numel() != rows and input.numel() != 1):
        if input.dim() == 0:        # PyTorch's message reads input.size(0)
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        raise RuntimeError(f"size mismatch, got input ({input.shape[0]}), mat ({rows}x{cols}), "
                           f"vec ({vec.shape[0]})")
    from .contractions import _dtype_key, _type_name
    if not _dtype_key(input) == _dtype_key(mat) == _dtype_key(vec):
        names = [_type_name(t) for t in (input, mat, vec)]
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {names[0]}, "
                           f"{names[1]}, and {names[2]}")


def addr(input, vec1, vec2, old_third=NOT_GIVEN, old_fourth=NOT_GIVEN, *, beta=1, alpha=1):
    """beta * input + alpha * outer(vec1, vec2); PyTorch checks beta and alpha against the
    result's dtype as add's alpha (no float factor for integers, bool ones only for bool)."""
    if old_third is not NOT_GIVEN:      # PyTorch's deprecated scale-first forms
        input, vec1, vec2, beta, alpha = scale_first_product(
            "addr", input, vec1, vec2, old_third, old_fourth, beta, alpha)
    product = _core.mul(vec1.unsqueeze(1), vec2.unsqueeze(0))
    from .contractions import _scaled_sum
    kind = np.result_type(input._array.dtype, product._array.dtype).kind
    for name, value in (("beta", beta), ("alpha", alpha)):
        _check_factor(name, value, kind)
    return _core._name_grad_fn(_scaled_sum(input, product, beta, alpha), "AddrBackward0")


def _check_factor(name: str, value, kind: str) -> None:
    """PyTorch's alpha_check of a scalar factor against a result of dtype kind ``kind``."""
    if isinstance(value, (bool, np.bool_)):
        if kind != "b":
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
    elif kind in "iub" and not isinstance(value, (int, np.integer)):
        raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating "
                           f"point number.")


def _integer_pair(name, fn, input, other):
    _check_tensor(input, name)
    _check_tensor(other, name, "other", 2)
    _check_broadcast(input, other)
    b = other._array if isinstance(other, _core.TensorBase) else np.asarray(other)
    # PyTorch's promotion, not numpy's: a zero-dim operand does not widen a dimensioned one;
    # the missing kernel is the promoted dtype's (float16 with float32: 'Float')
    dt = np.dtype(_core.np_dtype_of(_core.result_type(input, other)))
    if dt.kind not in "iu":
        raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                  f"'{_core.scalar_type_name_of(dt)}'")
    return _wrap_like(np.asarray(fn(input._array.astype(dt, copy=False), b.astype(dt, copy=False))),
                      input, other)


def gcd(input, other):
    """The greatest common divisor of integer tensors, elementwise (non-negative)."""
    result = _integer_pair("gcd", np.gcd, input, other)
    return result


def _lcm(a, b):
    # PyTorch's |a / gcd * b|: the product wraps on overflow before the absolute value is taken,
    # numpy's |a| / gcd * |b| after, so a wrapped int32 / int64 result differs in sign (int8 /
    # int16 are computed in C's int there, which does not wrap, and narrowed as numpy's are)
    result = np.lcm(a, b)
    if result.dtype in (np.int32, np.int64):
        result = np.abs(result)
    return result


def lcm(input, other):
    """The least common multiple of integer tensors, elementwise (non-negative)."""
    result = _integer_pair("lcm", _lcm, input, other)
    return result


# -- statistics of variables in rows --------------------------------------------------------------

def _at_most_2d(input, name: str) -> None:
    if input.ndim > 2:
        raise RuntimeError(f"{name}(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of ``input`` (observations in columns;
    a 1-D input is one variable), divided by ``N - correction``."""
    _check_tensor(input, "cov")
    if input._array.dtype == np.bool_:         # (PyTorch's corrcoef too, through cov)
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = _floating(input, "cov")
    _at_most_2d(x, "cov")
    if x.ndim < 2:
        x = x.reshape(1, -1)
    weights = None
    for name, w, kinds, kind_name in (("fweights", fweights, "iu", "integral"),
                                      ("aweights", aweights, "f", "floating point")):
        if w is None:
            continue
        _check_cov_weights(name, w, kinds, kind_name, x.shape[1])
        weights = w if weights is None else weights * w
    if weights is not None:
        # (a float64 aweights makes the result float64, as PyTorch's promotion does; casting
        # the weights to a float32 input's dtype had silently rounded them)
        common = _core.result_type(x, weights)
        if common != x.dtype:
            x = x.to(common)
    if weights is None:
        mean = x.mean(1, keepdim=True)
        centred = x - mean
        result = _cov_product(centred, centred) / _cov_norm(x.shape[1] - correction)
    else:
        # (the weights' total and the divisor stay in the weights' dtype, as PyTorch computes
        # them: a float32 aweights of a float64 input rounds the divisor to float32; casting
        # the weights up first gave a divisor PyTorch does not use, off by ~1e-5 relative)
        total = weights.sum()
        mean = (x * weights).sum(1, keepdim=True) / total
        centred = x - mean
        if aweights is None or correction == 0:
            norm = total - correction
        else:
            norm = total - correction * (weights * aweights).sum() / total
        result = _cov_product(centred, centred * weights) / _cov_norm(norm)
    # (PyTorch squeezes every result: a matrix of two or more variables keeps its shape, and
    # its node is that squeeze)
    return result.squeeze()


def _cov_product(centred, weighted):
    """PyTorch's mm(centred, weighted^H): a listed op reached through the dispatcher, so
    autocast casts its operands (cov of float32 under a bfloat16 autocast is bfloat16; it
    stayed float32 here: fuzz 66200106)."""
    from ._autocast import lower_precision_operands
    cast_centred, cast_weighted = lower_precision_operands("mm", centred, weighted)
    if cast_centred is centred and cast_weighted is weighted:
        return _core.matmul(centred, _adjoint(weighted))
    # (a bfloat16 cast needs the public mm, which computes bfloat16 tensors)
    from . import mm
    return mm(cast_centred, _adjoint(cast_weighted))


def _cov_norm(norm):
    """cov's divisor as PyTorch's: one of no degrees of freedom (<= 0) warns and is clamped to
    0, so the result is NaN (0 / 0) or inf, not the sums divided by a negative count (an empty
    observation dim gave -0 where PyTorch's is NaN; fuzz 65002644)."""
    if float(norm) <= 0:
        _core.torch_warn("cov(): degrees of freedom is <= 0. Correction should be strictly "
                         "less than the number of observations.",
                         "aten/src/ATen/native/Correlation.cpp:129")
        return norm - norm          # (+0 as PyTorch's zero_(); norm * 0 of a negative is -0)
    return norm


def _check_cov_weights(name, w, kinds, kind_name, observations):
    """PyTorch's checks of cov's fweights (integers) and aweights (floats): at most 1-d, one per
    observation, none negative."""
    _check_tensor(w, "cov")
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {w.ndim} dimensions")
    if w._array.dtype.kind not in kinds:
        raise RuntimeError(f"cov(): expected {name} to have {kind_name} dtype but got {name} "
                           f"with {_core.scalar_type_name_of(w._array.dtype)} dtype")
    if w._array.size != observations:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {w._array.size} != {observations}")
    if observations and w._array.min() < 0:
        raise RuntimeError(f"cov(): {name} cannot be negative")


def _adjoint(m):
    """The conjugate transpose of matrix m (its transpose when real)."""
    return m.t().conj() if m.is_complex() else m.t()


def corrcoef(input):
    """Pearson correlation coefficients of the variables in the rows of ``input``, clipped to
    [-1, 1]."""
    _check_tensor(input, "corrcoef")
    _at_most_2d(input, "corrcoef")           # (checked under its own name, as PyTorch's)
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal().sqrt()
    r = c / d.unsqueeze(1) / d.unsqueeze(0)
    if r.is_complex():          # PyTorch clips the real and imaginary parts
        from ._complex import complex as make_complex
        return make_complex(r.real.clamp(-1, 1), r.imag.clamp(-1, 1))
    return r.clamp(-1, 1)


# -- Tensor.unfold ---------------------------------------------------------------------------------

def unfold(self, dimension: int, size: int, step: int):
    """Every window of ``size`` elements along ``dimension``, ``step`` apart: that dim becomes
    the number of windows and a last dim of ``size`` is appended.  A view of self's storage, as
    PyTorch's (as_strided: the windows' dim strides step elements, the new last dim one;
    gradients add up where windows overlap), so writes into it reach self."""
    dim = _dim(dimension, max(self.ndim, 1))
    length = self.shape[dim] if self.ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {dim} is {length} but size is "
                           f"{size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    windows = (length - size) // step + 1
    from ._strided import strided
    if self.ndim == 0:
        return strided(self, (size,), (1,), self.storage_offset(), unfold=True)
    strides = self.stride()
    shape = tuple(self.shape[:dim]) + (windows,) + tuple(self.shape[dim + 1:]) + (size,)
    stride = strides[:dim] + (strides[dim] * step,) + strides[dim + 1:] + (strides[dim],)
    # (the windows stand for the gradient's index: each window element's index in self, from
    # the indices, not from storage positions, which an expanded self shares between elements;
    # fuzz 60621067, 60622377)
    windows = _core.UnfoldWindows(tuple(self.shape), dim, size, step)
    return strided(self, shape, stride, self.storage_offset(), unfold=True, key=windows)


# -- unique_consecutive --------------------------------------------------------------------------

def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse each run of equal neighbours to one element (over the flattened tensor, or of
    slices along ``dim``); optionally the run index of every element and each run's length."""
    _check_tensor(input, "unique_consecutive")
    _core.check_bool("unique_consecutive", "return_inverse", return_inverse)
    _core.check_bool("unique_consecutive", "return_counts", return_counts)
    # (PyTorch's unique_consecutive takes its flat kernel for a 1-d input even given a dim)
    _refuse_if_complex("unique_dim" if dim is not None and input.ndim > 1 else "unique", input)
    arr = input._array
    if dim is None:
        flat = arr.reshape(-1)
        starts = np.ones(flat.shape[0], dtype=bool)
        starts[1:] = flat[1:] != flat[:-1]
        values = flat[starts]
        inverse_shape = arr.shape
    else:
        if arr.ndim == 0:
            _no_dims(dim)
        axis = _dim(dim, arr.ndim)
        _check_unique_dim_of_empty(arr.shape, axis)
        moved = np.moveaxis(arr, axis, 0)
        starts = np.ones(moved.shape[0], dtype=bool)
        if moved.shape[0] > 1:
            starts[1:] = (moved[1:] != moved[:-1]).reshape(moved.shape[0] - 1, -1).any(axis=1)
        values = np.moveaxis(moved[starts], 0, axis)
        inverse_shape = (arr.shape[axis],)
    run_index = np.cumsum(starts) - 1
    from ._more_math import without_derivative
    outputs = [without_derivative((input,), np.ascontiguousarray(values),
                                  "the derivative for 'unique_consecutive' is not implemented.",
                                  node="UniqueConsecutiveBackward0")]
    if return_inverse:
        outputs.append(_wrap(run_index.reshape(inverse_shape).astype(np.int64)))
    if return_counts:
        outputs.append(_wrap(np.bincount(run_index, minlength=int(starts.sum())).astype(np.int64)))
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


# -- registration --------------------------------------------------------------------------------

FUNCTIONS = ("unique_consecutive", "cross", "mode", "atleast_1d", "atleast_2d", "atleast_3d", "dist",
             "logit", "hypot", "rad2deg", "deg2rad", "float_power", "copysign", "sinc", "addmv",
             "addr", "gcd", "lcm", "cov", "corrcoef")
METHODS = ("unique_consecutive", "cross", "mode", "dist", "logit", "hypot", "rad2deg", "deg2rad",
           "float_power", "copysign", "sinc", "addmv", "addr", "gcd", "lcm", "cov", "corrcoef")
RETURN_TYPES = {"mode": ("values", "indices")}


def register(namespace: dict, tensor_cls) -> None:
    """Add the functions to `namespace` (tapegrad's globals) and the methods to `tensor_cls`;
    `div` (function and method) replaces the compiled one, adding `rounding_mode`."""
    register_family(namespace, tensor_cls, globals(), FUNCTIONS, METHODS, RETURN_TYPES)
    for name, method in (("stride", stride), ("storage_offset", storage_offset), ("unfold", unfold)):
        if not has_member(tensor_cls, name):
            setattr(tensor_cls, name, method)
    namespace["div"] = div
    compiled_div_ = tensor_cls.div_

    def div_(self, other, *, rounding_mode=None):
        """In-place div; with ``rounding_mode`` it is divide_'s (one rounding rule for both)."""
        if rounding_mode is None:
            return compiled_div_(self, other)
        return self.divide_(other, rounding_mode=rounding_mode)
    tensor_cls.div_ = div_
    from ._public_calls import method_entry     # (the method: div without its out=)
    tensor_cls.div = method_entry("div", div, refuses_out=True)
