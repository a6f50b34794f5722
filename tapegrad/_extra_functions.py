"""The autograd.Functions behind _extra_ops' cumsum, log10, log2, div's rounding modes and the
inverse hyperbolic and tangent functions (loaded on first recorded use).

Each forward is the numpy kernel _extra_ops uses when nothing records, so recorded and unrecorded
calls give the same values; each backward is made of recorded ops, so create_graph works.
"""
from __future__ import annotations as _annotations

import math

import numpy as np

from . import _core
from ._extra_ops import (_cumsum_array, _cumulative_array, addcdiv_values, _log_values, _wrap, _wrap_like, _xlog, _xlogy_values,
                         cumsum, flip, nan_to_num_values, nansum_values)
from .autograd.function import Function, KernelFunction


def _torch_grad_fn_name(function_cls, name: str) -> None:
    """Give a Function's grad_fn the class name PyTorch's built-in op has (e.g. CumsumBackward0),
    and its repr PyTorch's C++ node's (no module, also for a name without a digit: the
    NotImplemented node of an op without a derivative)."""
    function_cls._backward_cls.__name__ = name
    function_cls._backward_cls.__qualname__ = name
    function_cls._backward_cls._builtin_node = True


class Cumsum(Function):
    """cumsum of a float tensor: numpy's running sum forward, reversed cumsum of the gradient
    backward (recorded when create_graph asks for it)."""

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return _wrap(_cumsum_array(x._array, dim))

    @staticmethod
    def backward(ctx, grad):
        if grad.ndim == 0:
            return grad, None
        return flip(cumsum(flip(grad, (ctx.dim,)), ctx.dim), (ctx.dim,)), None


_torch_grad_fn_name(Cumsum, "CumsumBackward0")


class Nansum(Function):
    """nansum: the sum with NaN elements as 0 forward; backward the gradient, expanded to the
    input's shape, times its non-NaN mask (PyTorch's nansum_backward: a product, so an
    infinite or NaN gradient at a NaN element gives NaN)."""

    @staticmethod
    def forward(ctx, x, dim, keepdim, dtype):
        ctx.save_for_backward(x)
        ctx.dim, ctx.keepdim = dim, keepdim
        return nansum_values(*_values_only(x), dim, keepdim, dtype)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        grad = grad.to(x.dtype)
        if ctx.dim is not None and not ctx.keepdim and x.ndim:
            dims = (ctx.dim,) if isinstance(ctx.dim, int) else tuple(ctx.dim)
            for d in sorted(d % x.ndim for d in dims):
                grad = grad.unsqueeze(d)
        return grad.expand(x.shape) * (~x.isnan()).to(x.dtype), None, None, None


_torch_grad_fn_name(Nansum, "NansumBackward0")


class NanToNum(Function):
    """nan_to_num of a real float tensor; backward grad * isfinite(x) (PyTorch's: a product, so
    an infinite or NaN gradient at a replaced element gives NaN)."""

    @staticmethod
    def forward(ctx, x, nan, posinf, neginf):
        ctx.save_for_backward(x)
        return nan_to_num_values(*_values_only(x), nan, posinf, neginf)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * x.isfinite().to(grad.dtype), None, None, None


_torch_grad_fn_name(NanToNum, "NanToNumBackward0")


def _values_only(*operands):
    """Tensor operands as fresh tensors of their arrays, outside any graph: a forward computed
    from tapegrad ops on them records nothing inside the Function (tapegrad.compile replays the
    Function's call and differentiates the records it makes)."""
    return [_wrap(t._array) if isinstance(t, _core.TensorBase) else t for t in operands]


class RoundedDivide(Function):
    """div with rounding_mode 'floor' or 'trunc' of operands that record: the unrecorded op's
    values (floor mode is floor_divide's, Python's floor division: 9 for 1 / 0.1, where the
    floor of the rounded quotient is 10) and PyTorch's zero gradient to both operands (zeros,
    not zero times the quotient's derivative, which is NaN where the divisor is 0 or the
    quotient overflows)."""

    @staticmethod
    def forward(ctx, a, b, rounding_mode):
        from ._extra_ops import divide
        ctx.operands = [(tuple(t.shape), t._array.dtype) if isinstance(t, _core.TensorBase)
                        else None for t in (a, b)]
        return divide(*_values_only(a, b), rounding_mode=rounding_mode)

    @staticmethod
    def backward(ctx, grad):
        return tuple(None if operand is None or not wanted else _wrap(np.zeros(*operand))
                     for operand, wanted in zip(ctx.operands, ctx.needs_input_grad)) + (None,)


_torch_grad_fn_name(RoundedDivide, "DivBackward2")


class Addcdiv(Function):
    """input + value * tensor1 / tensor2 of operands that record, in PyTorch's order and with its
    derivatives (AddcdivBackward0): grad * (value / tensor2), a true division (Python's
    `value / t` is reciprocal(t) * value, in PyTorch too), and
    -grad * (value * tensor1 / (tensor2 * tensor2)).  A composite of recorded ops rounds both
    gradients otherwise (an ulp in about half the elements) and keeps tensor2's finite where
    tensor2 * tensor2 overflows to inf in PyTorch's."""

    @staticmethod
    def forward(ctx, input, tensor1, tensor2, value):
        ctx.save_for_backward(tensor1, tensor2)
        ctx.value = value
        ctx.shapes = (tuple(input.shape), tuple(tensor1.shape), tuple(tensor2.shape))
        return addcdiv_values(*_values_only(input, tensor1, tensor2), value)

    @staticmethod
    def backward(ctx, grad):
        from ._scatter_functions import _sum_to
        tensor1, tensor2 = ctx.saved_tensors
        value = ctx.value
        wanted = ctx.needs_input_grad
        # Complex operands take the conjugate of each partial derivative (Wirtinger calculus, as
        # PyTorch's formula does); without it tensor1's and tensor2's gradients were silently wrong.
        def conj(t):
            return t.conj() if t.is_complex() else t
        return (_sum_to(grad, ctx.shapes[0]) if wanted[0] else None,
                _sum_to(grad * conj(_core.div(value, tensor2)), ctx.shapes[1]) if wanted[1] else None,
                _sum_to(-grad * conj(value * tensor1 / (tensor2 * tensor2)), ctx.shapes[2])
                if wanted[2] else None,
                None)


_torch_grad_fn_name(Addcdiv, "AddcdivBackward0")


class _LogBase(Function):
    """log to a fixed base (values: _extra_ops._log_values); gradient grad / (x ln base)."""

    ufunc = None
    ln_base = 1.0

    @classmethod
    def forward(cls, ctx, x):
        ctx.save_for_backward(x)
        return _wrap_like(_log_values(cls.ufunc, x._array), x)

    @classmethod
    def backward(cls, ctx, grad):
        x, = ctx.saved_tensors
        return grad / (x * cls.ln_base)


class Log10(_LogBase):
    ufunc = np.log10
    ln_base = math.log(10.0)


class Log2(_LogBase):
    ufunc = np.log2
    ln_base = math.log(2.0)


_torch_grad_fn_name(Log10, "Log10Backward0")
_torch_grad_fn_name(Log2, "Log2Backward0")


class _UnaryFloat(Function):
    """An elementwise function whose values come from a float64 numpy ufunc (_extra_ops.
    _log_values) and whose gradient `derivative(saved)` is made of recorded ops, from the one
    tensor PyTorch's node saves."""

    ufunc = None
    # which tensor PyTorch's node saves, the result or the input (its formula reads that one, so
    # a write into it, and only into it, makes backward raise): tan saves its result, asinh,
    # acosh and atanh their input (fuzz 60623752's siblings; 63015532's for tan's input)
    saves_result = True

    @classmethod
    def forward(cls, ctx, x):
        y = _wrap_like(_log_values(cls.ufunc, x._array), x)
        ctx.save_for_backward(y if cls.saves_result else x)
        return y

    @classmethod
    def backward(cls, ctx, grad):
        saved, = ctx.saved_tensors
        return grad * cls.derivative(saved)


class Tan(_UnaryFloat):
    ufunc = np.tan

    @staticmethod
    def derivative(y):
        return 1 + y * y


class Asinh(_UnaryFloat):
    saves_result = False
    ufunc = np.arcsinh

    @staticmethod
    def derivative(x):
        return (x * x + 1).rsqrt()


class Acosh(_UnaryFloat):
    saves_result = False
    ufunc = np.arccosh

    @staticmethod
    def derivative(x):
        return (x * x - 1).rsqrt()


class Atanh(_UnaryFloat):
    saves_result = False
    ufunc = np.arctanh

    @staticmethod
    def derivative(x):
        return 1 / (1 - x * x)


for _cls in (Tan, Asinh, Acosh, Atanh):
    _torch_grad_fn_name(_cls, _cls.__name__ + "Backward0")


class Xlogy(Function):
    """x * log(y), 0 where x is 0 (values: _extra_ops._xlogy_values); PyTorch's gradients:
    xlogy(grad, y) for x, except 0 where x is 0 and y <= 0, and x / y for y.  Xlog1py is the
    same with log1p(y), the pole at y = -1 and x / (y + 1)."""
    name, log, pole = "xlogy", staticmethod(np.log), 0

    @classmethod
    def forward(cls, ctx, x, y):
        ctx.save_for_backward(x, y)
        ctx.save_for_forward(x, y)
        return _wrap_like(_xlogy_values(x._array, y._array, cls.log), x, y)

    @classmethod
    def jvp(cls, ctx, tx, ty):
        """Forward-mode AD (kl_div, entropies under forward_ad): the tangents through the
        backward's formulas, as PyTorch's."""
        from . import where
        x, y = ctx.saved_tensors
        tangent = None
        if tx is not None:
            tangent = where((x == 0) & (y <= cls.pole), 0, _xlog(tx, y, cls.name))
        if ty is not None:
            term = ty * x / (y - cls.pole)
            tangent = term if tangent is None else tangent + term
        return tangent

    @classmethod
    def backward(cls, ctx, grad):
        from . import where
        from ._scatter_functions import _sum_to
        x, y = ctx.saved_tensors
        grad_x = (_sum_to(where((x == 0) & (y <= cls.pole), 0, _xlog(grad, y, cls.name)), x.shape)
                  if ctx.needs_input_grad[0] else None)
        grad_y = _sum_to(grad * x / (y - cls.pole), y.shape) if ctx.needs_input_grad[1] else None
        return grad_x, grad_y


class Xlog1py(Xlogy):
    name, log, pole = "xlog1py", staticmethod(np.log1p), -1


_torch_grad_fn_name(Xlogy, "XlogyBackward0")
_torch_grad_fn_name(Xlog1py, "SpecialXlog1PyBackward0")


def _reversed_cumsum(a: np.ndarray, axis: int) -> np.ndarray:
    return np.flip(np.cumsum(np.flip(a, axis), axis), axis)


def cumprod_grad_array(x: np.ndarray, out: np.ndarray, g: np.ndarray, axis: int) -> np.ndarray:
    """The gradient of out = cumprod(x) along axis for the upstream gradient g, as PyTorch's
    cumprod_backward computes it: reversed_cumsum(g * out) / x where x has no zero; where it has,
    each position before the first zero z1 sums only over outputs before z1, the first zero
    receives the products that leave it out (outputs z1 .. up to the second zero), and every
    position after it 0. Those products are taken directly, never as 0 * g: an infinite upstream
    gradient at an output that is exactly 0 (sqrt of it) leaves the other positions finite.
    Complex inputs: the same with conj(x) and conj(out) (the gradient is conjugate-linear)."""
    if x.dtype.kind == "c":
        x, out = np.conj(x), np.conj(out)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        is_zero = x == 0
        if not is_zero.any():
            return _reversed_cumsum(out * g, axis) / x
        zeros_so_far = np.cumsum(is_zero, axis)
        before = zeros_so_far == 0
        grad = np.where(before, _reversed_cumsum(np.where(before, out * g, 0), axis)
                        / np.where(before, x, 1), 0).astype(out.dtype, copy=False)
        upto_second = zeros_so_far == 1                 # from the first zero to the second
        first_zero = upto_second & is_zero
        after_first = upto_second & ~first_zero
        products_after = np.cumprod(np.where(after_first, x, 1), axis)
        left_out = np.sum(products_after * np.where(upto_second, g, 0), axis, keepdims=True)
        z1 = np.argmax(first_zero, axis, keepdims=True)
        before_z1 = np.take_along_axis(out, np.maximum(z1 - 1, 0), axis)
        before_z1 = np.where(z1 == 0, 1, before_z1)
        return np.where(first_zero, left_out * before_z1, grad).astype(out.dtype, copy=False)


class Cumprod(KernelFunction):
    """cumprod of a float or complex tensor: numpy's running product forward; PyTorch's
    zero-aware gradient (cumprod_grad_array). With create_graph, an input without zeros takes the
    same first form in recorded ops; one with zeros PyTorch's double-backward form,
    differentiable also in the zeros: for each position k the product of the input before k
    times its running products after k, summed against the upstream gradient from k on (O(n^2)
    along the dim, as PyTorch's)."""

    saved_args = (0,)
    saved_outputs = (0,)        # PyTorch's CumprodBackward0 saves self and its result

    @staticmethod
    def kernel_forward(x, dim):
        out = _cumulative_array(np.cumprod, x, dim)
        return out, (x, out, dim)

    @staticmethod
    def kernel_backward(state, needs, grads):
        x, out, dim = state
        g = grads[0]
        if g is None or not needs[0]:
            return None, None
        if x.shape[dim] == 1:               # the identity (PyTorch passes the gradient on)
            return g, None
        return cumprod_grad_array(x, out, g, dim), None

    @staticmethod
    def graph_backward(ctx, saved, g):
        from . import cat, cumprod, ones_like, stack
        x, out = saved
        dim = ctx.params[1]
        if x.shape[dim] == 1:               # the identity: a gradient independent of x
            return g, None
        if not bool((x == 0).any()):        # PyTorch's choice: without zeros, its first form
            # (on the saved result itself, as PyTorch's: its second derivative reaches the
            # result's history, so a hook or retained .grad on it sees that term)
            w = out * g if not x.is_complex() else out.conj() * g
            return flip(cumsum(flip(w, (dim,)), dim), (dim,)) / (x.conj() if x.is_complex() else x), None
        # position k receives sum_{j >= k} g_j * prod(x[:k]) * prod(x[k+1 : j+1]), composed
        # as PyTorch's: the product before k (prod) times the running products after k
        # (cumprod), never a running product through x_k replaced by 1 (whose own backward
        # divides by the outputs: an infinite x_j beside a zero would give NaN where PyTorch's
        # second derivative is finite)
        xc = x.conj() if x.is_complex() else x
        n = x.shape[dim]
        parts = []
        for k in range(n):
            after = cumprod(xc.narrow(dim, k + 1, n - k - 1), dim) if k < n - 1 else None
            if k == 0:
                omitted = cat([ones_like(xc.narrow(dim, 0, 1)), after], dim)
            else:
                before = xc.narrow(dim, 0, k).prod(dim, keepdim=True)
                omitted = before if after is None else cat([before, before * after], dim)
            parts.append((g.narrow(dim, k, n - k) * omitted).sum(dim))
        return stack(parts, dim), None


_torch_grad_fn_name(Cumprod, "CumprodBackward0")
