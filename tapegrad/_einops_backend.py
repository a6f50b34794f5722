"""einops on tapegrad tensors when the script says `import tapegrad as torch`.

einops picks a backend by the tensor: `einops._backends.get_backend` walks the subclasses of its
`AbstractBackend`, keeps those whose `framework_name` is a module already in sys.modules, and asks
each whether the tensor is its type.  Its torch backend is named "torch": under the corpus hook
(`import torch` loads tapegrad) that module is tapegrad and everything works, but a script that
imports tapegrad by its own name has no "torch" module (or PyTorch's, whose Tensor ours is not),
and every rearrange/repeat/reduce/pack/einsum failed with "Tensor type unknown to einops".

Here einops gets a backend named "tapegrad": einops' torch backend with our package as its
`torch`, so the calls einops makes (permute, reshape, expand, amax, torch.cat, torch.einsum, ...)
are the same ones it makes on PyTorch.  Importing einops just for this would cost every tapegrad
user its import time, so the backend is defined when einops' backends module is imported (now, if
it already was: _on_import).  einops' torch-only extras stay out: its TorchBackend.__init__
registers the einops functions with torch._dynamo, which would import PyTorch itself.
"""
from __future__ import annotations as _annotations

from ._on_import import when_imported

_BACKENDS_MODULE = "einops._backends"


def _define_backend(backends) -> None:
    """Adds the tapegrad backend to einops' backends module `backends`."""
    if "TapegradBackend" in vars(backends):
        return

    class TapegradBackend(backends.TorchBackend):
        framework_name = "tapegrad"

        def __init__(self):
            import tapegrad
            self.torch = tapegrad

    # einops finds backends through __subclasses__(), which holds its classes weakly: the module
    # attribute keeps ours alive.
    backends.TapegradBackend = TapegradBackend


def install() -> None:
    when_imported(_BACKENDS_MODULE, _define_backend)
