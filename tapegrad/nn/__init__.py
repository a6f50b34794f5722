"""tapegrad.nn: layers, losses, initialisers and the functional API, as torch.nn has them."""
from . import common_types, functional, init, utils
from . import grad  # noqa: E402  (torch.nn.grad, which is also F.grad)
functional.grad = grad
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter
from .modules import *  # noqa: F401,F403  (the layer classes, as torch.nn exports them)
from .modules import __all__ as _modules_all  # noqa: F401
from . import parallel  # noqa: E402
from .parallel import DataParallel  # noqa: E402

from .._public_calls import redirect_layers as _redirect_layers  # noqa: E402
from . import modules as _modules  # noqa: E402
_redirect_layers(_modules)  # layers holding F.relu & co. hold the objects F holds

# torch.nn.quantized, intrinsic and qat (the older names of torch.ao.nn's): loaded on first
# use, as they import the quantization package.
from .. import _lazy  # noqa: E402
_LAZY = _lazy.table({"quantized": (), "intrinsic": (), "qat": ()})


def __getattr__(name):
    return _lazy.load(globals(), _LAZY, name)

# A missing name is reported under PyTorch's module name (module 'torch...' has no attribute).
from .._torch_names import report_missing_names_as_torch as _report_missing_names_as_torch  # noqa: E402
_report_missing_names_as_torch(__name__)
