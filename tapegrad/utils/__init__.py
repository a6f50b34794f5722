"""tapegrad.utils: data loading (utils.data), DLPack exchange (utils.dlpack), timing (utils.benchmark), graph drawing
(utils.viz), activation checkpointing (utils.checkpoint), hook handles (utils.hooks), identity-keyed
weak dictionaries (utils.weak), the deterministic-mode memory fill (utils.deterministic), and
swap_tensors."""
import copyreg
import weakref

from . import benchmark, checkpoint, data, deterministic, dlpack, hooks, viz, weak

__all__ = ["benchmark", "checkpoint", "data", "deterministic", "dlpack", "hooks", "viz", "weak",
           "swap_tensors"]


def swap_tensors(t1, t2):
    """Exchange the contents of tensors t1 and t2 (class, attributes, slots, value and autograd
    state): each object keeps its identity, so whatever holds it (an optimizer, a container)
    sees the other's content.  Refused, as PyTorch refuses, when either has a weak reference or
    their classes have different slots."""
    from .. import _core
    if weakref.getweakrefs(t1):
        raise RuntimeError("Cannot swap t1 because it has weakref associated with it")
    if weakref.getweakrefs(t2):
        raise RuntimeError("Cannot swap t2 because it has weakref associated with it")
    t1_slots = set(copyreg._slotnames(t1.__class__))
    t2_slots = set(copyreg._slotnames(t2.__class__))
    if t1_slots != t2_slots:
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")
    if not (isinstance(t1, _core.TensorBase) and isinstance(t2, _core.TensorBase)):
        # PyTorch's binding refuses a non-tensor (after the Python-level checks above)
        bad = t1 if not isinstance(t1, _core.TensorBase) else t2
        raise TypeError(f"_swap_tensor_impl(): argument 'a' (position 1) must be Tensor, "
                        f"not {type(bad).__name__}")

    def swap_attr(name):
        tmp = getattr(t1, name)
        setattr(t1, name, getattr(t2, name))
        setattr(t2, name, tmp)

    swap_attr("__class__")
    swap_attr("__dict__")
    for slot in t1_slots:
        if hasattr(t1, slot) and hasattr(t2, slot):
            swap_attr(slot)
        elif hasattr(t1, slot):
            setattr(t2, slot, getattr(t1, slot))
            delattr(t1, slot)
        elif hasattr(t2, slot):
            setattr(t1, slot, getattr(t2, slot))
            delattr(t2, slot)
    _core._swap_tensor_impl(t1, t2)


def __getattr__(name):
    # torch.utils.collect_env is an attribute after a bare `import torch`; loaded on first use
    # here (it imports subprocess and locale, which nothing else at import needs)
    if name == "collect_env":
        import importlib
        return importlib.import_module(".collect_env", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

# A missing name is reported under PyTorch's module name (module 'torch...' has no attribute).
from .._torch_names import report_missing_names_as_torch as _report_missing_names_as_torch  # noqa: E402
_report_missing_names_as_torch(__name__)
