"""tapegrad.optim: optimizers and learning-rate schedulers, as torch.optim has them.

The updates follow PyTorch's single-tensor implementations operation for operation, on the
parameters' numpy arrays in place (float32 results agree with PyTorch's bit for bit, up to
PyTorch's own not-quite-correctly-rounded square root).
"""
from types import ModuleType as _ModuleType

from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["ASGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "Muon",
           "NAdam", "Optimizer", "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam", "lr_scheduler",
           "swa_utils"]

# The schedulers and the other optimizers load on first use (PEP 562): a training loop uses one
# optimizer, and the schedulers alone add 0.2 MB to the resident memory of every process.
_LAZY = {"lr_scheduler": None, "swa_utils": None, "Adafactor": "adafactor", "Adagrad": "adagrad",
         "Adam": "adam", "AdamW": "adam", "RMSprop": "rmsprop", "Adadelta": "adadelta",
         "Adamax": "adamax", "NAdam": "nadam", "RAdam": "radam", "ASGD": "asgd", "LBFGS": "lbfgs",
         "Muon": "muon", "Rprop": "rprop", "SparseAdam": "sparse_adam"}


def __getattr__(name):
    import importlib
    if name not in _LAZY:
        raise AttributeError(f"module 'tapegrad.optim' has no attribute '{name}'")
    module = importlib.import_module(f".{_LAZY[name] or name}", __name__)
    value = module if _LAZY[name] is None else getattr(module, name)
    globals()[name] = value
    _hide_submodules()
    return value


def _hide_submodules():
    """Drop the package attributes Python sets for each imported submodule (optimizer, sgd, adam,
    ...): torch.optim deletes its own, so `hasattr(torch.optim, "sgd")` is False there and a
    script's dir()/tab completion shows the optimizers and lr_scheduler/swa_utils only.  The
    modules stay importable (`from torch.optim.adam import adam`)."""
    namespace = globals()
    for key, value in list(namespace.items()):
        if isinstance(value, _ModuleType) and not key.startswith("_") and key not in __all__:
            del namespace[key]


_hide_submodules()


def __dir__():
    # (less a submodule imported directly, `import tapegrad.optim.adam`, before any lookup here
    # hid it)
    return sorted(name for name in set(globals()) | set(__all__)
                  if name in __all__ or not isinstance(globals().get(name), _ModuleType)
                  or name.startswith("_"))

# A missing name is reported under PyTorch's module name (module 'torch...' has no attribute).
from .._torch_names import report_missing_names_as_torch as _report_missing_names_as_torch  # noqa: E402
_report_missing_names_as_torch(__name__)
