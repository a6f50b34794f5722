"""PyTorch's deprecated scalar-first overloads of the scaled elementwise ops.

PyTorch still accepts the old positional forms with the scale before the tensors, e.g.
``torch.add(a, 10, b)`` (= ``torch.add(a, b, alpha=10)``), ``p.data.add_(-lr, grad)`` and
``exp_avg_sq.addcmul_(1 - beta2, grad, grad)``, which pre-1.5 optimizer and tutorial code use
everywhere; it warns once ("This overload of add is deprecated").  One wrapper per name reads
that form (told apart from the current one by its extra positional argument) and calls the
current signature with the scale as its keyword.
"""
import warnings
from numbers import Number

# name: (the scale's keyword, the names of the tensors after it in PyTorch's deprecated signature)
_FORMS = {
    "add": ("alpha", ("other",)), "sub": ("alpha", ("other",)),
    "add_": ("alpha", ("other",)), "sub_": ("alpha", ("other",)),
    "addcmul": ("value", ("tensor1", "tensor2")), "addcdiv": ("value", ("tensor1", "tensor2")),
    "addcmul_": ("value", ("tensor1", "tensor2")), "addcdiv_": ("value", ("tensor1", "tensor2")),
}
FUNCTIONS = ("add", "sub", "addcmul", "addcdiv")

_warned = []          # PyTorch warns once per process for all of these overloads


def _warn(name, scale, tensors):
    if _warned:
        return
    _warned.append(name)
    base = name.rstrip("_")
    old = ", ".join(f"Tensor {t}" for t in tensors)
    warnings.warn(f"This overload of {name} is deprecated:\n\t{name}(Tensor input, Number {scale}, "
                  f"{old}{', *, Tensor out = None' if base == name else ''})\nConsider using one "
                  f"of the following signatures instead:\n\t{name}(Tensor input, {old}, *, "
                  f"Number {scale} = 1{', Tensor out = None' if base == name else ''})",
                  UserWarning, stacklevel=3)


def _scalar_first(fn, name):
    scale, tensors = _FORMS[name]

    def op(input, *args, **kwargs):
        # (the deprecated form has one positional argument more: the scale, then the tensors)
        if (len(args) == len(tensors) + 1 and isinstance(args[0], Number)
                and not isinstance(args[0], bool) and scale not in kwargs):
            _warn(name, scale, tensors)
            kwargs[scale] = args[0]
            args = args[1:]
        return fn(input, *args, **kwargs)
    op.__name__ = op.__qualname__ = getattr(fn, "__name__", name)
    op.__doc__ = fn.__doc__
    op.__wrapped__ = fn
    return op


def register(namespace, tensor_cls):
    for name in FUNCTIONS:
        namespace[name] = _scalar_first(namespace[name], name)
    for name in _FORMS:
        setattr(tensor_cls, name, _scalar_first(getattr(tensor_cls, name), name))
