"""PyTorch's deprecated scalar-first overloads of the scaled elementwise ops.

PyTorch still accepts the old positional forms with the scale before the tensors, e.g.
``torch.add(a, 10, b)`` (= ``torch.add(a, b, alpha=10)``), ``p.data.add_(-lr, grad)`` and
``exp_avg_sq.addcmul_(1 - beta2, grad, grad)``, which pre-1.5 optimizer and tutorial code use
everywhere; it warns once ("This overload of add is deprecated").

Each of these functions (add, sub, add_, sub_ in the compiled core, Tensor.add/sub, addcmul and
addcdiv with their Tensor forms) has one positional parameter more than its current signature,
defaulting to ``NOT_GIVEN``: given, the call is the old form, and ``scalar_first`` reads it.  A
parameter with a default costs the common call next to nothing, where a wrapper around each of
them made ``p.add_(g)`` four times slower.
"""
from numbers import Number


class _NotGiven:
    """The default of the deprecated form's extra positional parameter."""

    def __repr__(self):
        return "<not given>"


NOT_GIVEN = _NotGiven()

_warned = []          # PyTorch warns once per process for all of these overloads
# where PyTorch's argument parser raises that warning (see _core.triggered_internally)
DEPRECATED_OVERLOAD_ORIGIN = "torch/csrc/utils/python_arg_parser.cpp:1841"


def _scale_value(scale):
    """The number a scale in an old-form call stands for, or None when it is none.  PyTorch's
    argument parser takes a Number there, and also a 0-dim tensor that does not require grad
    (its value read out): DARTS' architect calls ``p.data.add_(R, v)`` with R = r / v.norm()."""
    if isinstance(scale, bool):
        return None
    if isinstance(scale, Number):
        return scale
    from ._core import TensorBase
    if isinstance(scale, TensorBase) and scale.dim() == 0 and not scale.requires_grad:
        return scale.item()
    return None


def scalar_first(name: str, scale_keyword: str, scale, scale_given, tensors: tuple):
    """The scale and the tensors of an old-form call name(input, scale, *tensors): the scale in
    the first tensor's place must be a number (not a bool), and the scale's keyword must be left
    at its default (`scale_given` is its value).  Warns once, as PyTorch does."""
    value = _scale_value(scale)
    if value is None or scale_given != 1:
        from ._core import type_name
        raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, "
                        f"{', '.join(type_name(a) for a in (scale,) + tensors)}), but expected "
                        f"({name}(Tensor input, {', '.join('Tensor' for _ in tensors)}, *, "
                        f"Number {scale_keyword} = 1))")
    if not _warned:
        _warned.append(name)
        old = ", ".join(f"Tensor {t}" for t in _NAMES[name.rstrip("_")])
        if name.endswith("_"):
            # an in-place method: PyTorch's method signatures, without input or out
            deprecated, current = (f"Number {scale_keyword}, {old}",
                                   f"{old}, *, Number {scale_keyword} = 1")
        else:
            deprecated, current = (f"Tensor input, Number {scale_keyword}, {old}, *, Tensor out "
                                   f"= None", f"Tensor input, {old}, *, Number {scale_keyword} = "
                                   f"1, Tensor out = None")
        from ._core import torch_warn
        # (at the line that called in: the compiled add_/sub_ have no frames of their own)
        torch_warn(f"This overload of {name} is deprecated:\n\t{name}({deprecated})\n"
                   f"Consider using one of the following signatures instead:\n\t{name}("
                   f"{current})", DEPRECATED_OVERLOAD_ORIGIN)
    return value, tensors


_NAMES = {"add": ("other",), "sub": ("other",), "addcmul": ("tensor1", "tensor2"),
          "addcdiv": ("tensor1", "tensor2")}


# The scaled products' old forms: torch.addmm(beta, input, [alpha,] mat1, mat2) and
# input.addmm(beta, [alpha,] mat1, mat2) (and addmv, addr, addbmm, baddbmm), as pre-1.0 metric
# learning code computes squared distances: torch.addmm(1, sq + sq.t(), -2, x, x.t()).
_PRODUCT_NAMES = {"addmm": ("mat1", "mat2"), "addmv": ("mat", "vec"), "addr": ("vec1", "vec2"),
                  "addbmm": ("batch1", "batch2"), "baddbmm": ("batch1", "batch2")}
_OUT_DTYPE_FORM = ("addmm", "baddbmm")      # (their current forms include an out_dtype one)


def scale_first_product(name: str, input, first, second, third, fourth, beta, alpha):
    """(input, t1, t2, beta, alpha) of an old-form call name(input, first, second, third[,
    fourth]) (the positional arguments as the current signature received them, ``fourth``
    NOT_GIVEN for the four-argument forms).  A number in input's place is the function form
    (beta, input, [alpha,] t1, t2); a tensor there is the method form, self first (self, beta,
    [alpha,] t1, t2).  The keywords must be left at their defaults.  Warns once, as PyTorch."""
    from ._core import TensorBase, type_name
    # (a 0-dim tensor in input's place is the function form's beta unless a scale follows it:
    # then it is the method form's self)
    function_form = _scale_value(input) is not None and (
        not isinstance(input, TensorBase) or _scale_value(first) is None)
    if function_form:
        scales, tensors = ((input, second), (first, third, fourth)) if fourth is not NOT_GIVEN \
            else ((input,), (first, second, third))
    else:
        scales, tensors = ((first, second), (input, third, fourth)) if fourth is not NOT_GIVEN \
            else ((first,), (input, second, third))
    if beta != 1 or alpha != 1 or \
            any(_scale_value(s) is None for s in scales) or \
            not all(isinstance(t, TensorBase) for t in tensors):
        given = (input, first, second, third) + (() if fourth is NOT_GIVEN else (fourth,))
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({', '.join(type_name(a) for a in given)}), but expected "
                        f"({name}(Tensor input, Tensor {_PRODUCT_NAMES[name][0]}, Tensor "
                        f"{_PRODUCT_NAMES[name][1]}, *, Number beta = 1, Number alpha = 1))")
    if not _warned:
        _warned.append(name)
        t1, t2 = _PRODUCT_NAMES[name]
        numbers = "Number beta, " + ("Number alpha, " if len(scales) == 2 else "")
        if function_form:
            old = (f"Number beta, Tensor input, " + ("Number alpha, " if len(scales) == 2 else "")
                   + f"Tensor {t1}, Tensor {t2}, *, Tensor out = None")
            current = (f"Tensor input, Tensor {t1}, Tensor {t2}, *, Number beta = 1, Number "
                       f"alpha = 1, Tensor out = None")
            currents = [current]
            if name in _OUT_DTYPE_FORM:
                currents.append(current.replace(f"Tensor {t2}, *", f"Tensor {t2}, torch.dtype "
                                                                   f"out_dtype, *"))
        else:
            old = f"{numbers}Tensor {t1}, Tensor {t2}"
            currents = [f"Tensor {t1}, Tensor {t2}, *, Number beta = 1, Number alpha = 1"]
        from ._core import torch_warn
        torch_warn(f"This overload of {name} is deprecated:\n\t{name}({old})\nConsider using "
                   f"one of the following signatures instead:" +
                   "".join(f"\n\t{name}({c})" for c in currents), DEPRECATED_OVERLOAD_ORIGIN)
    beta = _scale_value(scales[0])
    alpha = _scale_value(scales[1]) if len(scales) == 2 else 1
    return tensors[0], tensors[1], tensors[2], beta, alpha
