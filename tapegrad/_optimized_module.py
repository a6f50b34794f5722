"""What `torch.compile(module)` returns: a Module wrapping the original as `_orig_mod`.

PyTorch hands back an OptimizedModule, and scripts rely on its shape: `model =
torch.compile(model)` is followed by `model.parameters()`, `model.train()`, `model.state_dict()`
(keys prefixed `_orig_mod.`) and attribute reads that reach the wrapped module.  Here its forward
is the wrapped module's call through tapegrad.compile (capture once, replay; the capture guards
every submodule's training flag)."""
from __future__ import annotations as _annotations

from ._torch_names import TorchNamedABCMeta as _TorchNamedABCMeta
from .nn.modules.module import Module


class OptimizedModule(Module, metaclass=_TorchNamedABCMeta):  # prints as torch._dynamo's
    """A compiled module: calls run `_orig_mod` through tapegrad.compile."""

    def __init__(self, mod: Module, compiled_call) -> None:
        super().__init__()
        self._orig_mod = mod                        # a submodule: parameters, train(), state
        object.__setattr__(self, "_compiled_call", compiled_call)

    def forward(self, *args, **kwargs):
        return self._compiled_call(*args, **kwargs)

    def __getattr__(self, name: str):
        # Anything the wrapper lacks is the wrapped module's (torch: model.fc after compile).
        try:
            return super().__getattr__(name)
        except AttributeError:
            modules = self.__dict__.get("_modules")
            if modules is None or "_orig_mod" not in modules:
                raise
            return getattr(modules["_orig_mod"], name)
