"""Real PyTorch tensors reaching tapegrad.

A script that says `import tapegrad as torch` may import a library (torchvision, a dataset
package) that imports the real torch: its torch.Tensor objects (and torch.nn.Parameter, any
subclass) then reach tapegrad's functions, operators, indexing and DataLoader.  To tapegrad such
a tensor is an array-like, read through its numpy() (memory shared, dtype kept; bfloat16, which
numpy lacks, through its float32 values): it is never dispatched through its
__torch_function__, as PyTorch does not dispatch for a plain torch.Tensor either (calling it
sent the call back to tapegrad, which called it again: a RecursionError).

One mechanism, asked only off the ordinary paths (a call that refused its arguments, an index
item or setitem value of no known kind, a sequence or collate element of no known type), so
tapegrad's own calls pay nothing:

* `real_tensor_or_none(obj)`: obj as a tapegrad tensor when it is a real torch tensor.
* `with_real_tensors_read(args, kwargs)`: a call's arguments with those tensors replaced.
* `call_counterpart(func, args, kwargs)`: the tapegrad function of real torch's `func`, for
  the real torch's calls that dispatch to a tapegrad tensor's __torch_function__
  (`real + tg`, `torch.flip(tg)` inside a library).  Tapegrad's own operators read a real
  operand where they read numbers (as_operand in the core), so `tg += real` writes into tg.

torch is never imported here: a real tensor is recognised by its type's classes (torch._C's
TensorBase among them), and the real module is read from sys.modules when a call needs it.
"""
from __future__ import annotations

import sys

_TYPE_VERDICTS: dict = {}       # type -> whether its instances are real torch tensors
_COUNTERPARTS: dict = {}        # real torch callable -> tapegrad callable (or None)
_MAX_COUNTERPARTS = 4096        # (bound callables arrive as new objects: keep the cache bounded)


def is_real_tensor_type(cls) -> bool:
    """Whether `cls` is torch.Tensor of the real PyTorch or a subclass of it (Parameter)."""
    verdict = _TYPE_VERDICTS.get(cls)
    if verdict is None:
        verdict = any(k.__name__ == "TensorBase" and k.__module__ == "torch._C"
                      for k in getattr(cls, "__mro__", ()))
        _TYPE_VERDICTS[cls] = verdict
    return verdict


def real_tensor_or_none(obj):
    """`obj` as a tapegrad tensor sharing its memory when it is a real torch tensor, else None.

    A real tensor that requires grad is refused: its values could be read, but the gradient a
    tapegrad backward computes for it could never reach PyTorch's graph, and dropping it
    silently would train nothing."""
    if not is_real_tensor_type(type(obj)):
        return None
    if obj.requires_grad:
        raise TypeError(
            f"a PyTorch tensor that requires grad (shape {list(obj.shape)}, dtype {obj.dtype}) "
            "reached tapegrad: gradients cannot flow into PyTorch's own graph; pass "
            "tensor.detach() to use its values")
    if obj.device.type != "cpu":
        raise TypeError(f"a PyTorch tensor on device '{obj.device}' reached tapegrad, which "
                        "reads CPU tensors only: move it with .cpu() first")
    from . import creation
    # (numpy() refuses a tensor with a pending conjugate or negative bit: resolve them first)
    obj = obj.resolve_conj().resolve_neg()
    if str(obj.dtype) == "torch.bfloat16":
        # numpy has no bfloat16: its float32 values hold every bfloat16 exactly
        from ._bfloat16 import bfloat16
        return creation.from_numpy(obj.float().numpy()).to(bfloat16)
    return creation.from_numpy(obj.numpy())


def real_tensor_or_item(item):
    """`item` read as a tapegrad tensor when it is a real torch tensor, else `item` itself."""
    real = real_tensor_or_none(item)
    return item if real is None else real


def _read(value):
    """`value` with a real tensor, or the real tensors directly inside a list or tuple (stack's
    and cat's sequences), read as tapegrad tensors; None when there is none."""
    real = real_tensor_or_none(value)
    if real is not None:
        return real
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        items = [real_tensor_or_none(v) for v in value]
        if any(item is not None for item in items):
            return type(value)(v if item is None else item for v, item in zip(value, items))
    return None


def with_real_tensors_read(args: tuple, kwargs: dict | None):
    """(args, kwargs) with the real torch tensors among them read as tapegrad tensors, or None
    when there is none (the call's refusal stands)."""
    found = False
    new_args = []
    for value in args:
        read = _read(value)
        found = found or read is not None
        new_args.append(value if read is None else read)
    new_kwargs = {}
    for key, value in (kwargs or {}).items():
        read = _read(value)
        found = found or read is not None
        new_kwargs[key] = value if read is None else read
    return (tuple(new_args), new_kwargs) if found else None


def _resolved(func):
    """(PyTorch's public name of `func`, the tapegrad callable of that name or None); the name
    is None when `func` is not a callable of the real torch (tapegrad's own dispatch)."""
    try:
        return _COUNTERPARTS[func]
    except KeyError:
        pass
    except TypeError:           # (an unhashable callable: not one of torch's)
        return None, None
    real = sys.modules.get("torch")
    tapegrad = sys.modules[__package__]
    if real is None or real is tapegrad or not hasattr(real, "overrides"):
        return None, None       # (nothing cached: the real torch may be imported later)
    name = real.overrides.resolve_name(func)
    found = None
    if name is not None and name.startswith("torch."):
        found = tapegrad
        for part in name.split(".")[1:]:
            found = getattr(found, part, None)
            if found is None:
                break
    if len(_COUNTERPARTS) >= _MAX_COUNTERPARTS:
        _COUNTERPARTS.clear()
    _COUNTERPARTS[func] = name, found
    return name, found


def call_counterpart(func, args: tuple, kwargs: dict | None):
    """(result,) of the tapegrad function of the same public name as `func`, a callable of the
    real torch (torch.add, torch.Tensor.__radd__, torch.nn.functional.relu), called on `args`
    with their real tensors read as tapegrad tensors; None when `func` is not the real torch's.
    A name tapegrad lacks is a TypeError naming it, never a call back into the real torch."""
    name, counterpart = _resolved(func)
    if name is None:
        return None
    if counterpart is None:
        raise TypeError(f"PyTorch's {name} was called on tapegrad tensors, and tapegrad has "
                        "no function of that name")
    read = with_real_tensors_read(args, kwargs)
    if read is not None:
        args, kwargs = read
    return (counterpart(*args, **(kwargs or {})),)
