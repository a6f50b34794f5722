"""torch.autograd.grad_mode: where PyTorch defines its grad-mode guards (scripts import them from
here, and their objects print under this module's name); ours live in tapegrad.grad_mode."""
from ..grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode"]
