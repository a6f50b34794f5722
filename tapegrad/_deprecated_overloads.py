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
import warnings
from numbers import Number


class _NotGiven:
    """The default of the deprecated form's extra positional parameter."""

    def __repr__(self):
        return "<not given>"


NOT_GIVEN = _NotGiven()

_warned = []          # PyTorch warns once per process for all of these overloads


def scalar_first(name: str, scale_keyword: str, scale, scale_given, tensors: tuple):
    """The scale and the tensors of an old-form call name(input, scale, *tensors): the scale in
    the first tensor's place must be a number (not a bool), and the scale's keyword must be left
    at its default (`scale_given` is its value).  Warns once, as PyTorch does."""
    if not isinstance(scale, Number) or isinstance(scale, bool) or scale_given != 1:
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
        from ._core import user_stacklevel
        # (at the line that called in: the compiled add_/sub_ have no frames of their own)
        warnings.warn(f"This overload of {name} is deprecated:\n\t{name}({deprecated})\n"
                      f"Consider using one of the following signatures instead:\n\t{name}("
                      f"{current})", UserWarning, stacklevel=user_stacklevel())
    return scale, tensors


_NAMES = {"add": ("other",), "sub": ("other",), "addcmul": ("tensor1", "tensor2"),
          "addcdiv": ("tensor1", "tensor2")}
