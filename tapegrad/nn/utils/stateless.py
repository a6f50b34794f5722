"""torch.nn.utils.stateless: the pre-2.0 home of `functional_call`, deprecated in favour of
`torch.func.functional_call` (the same function, after PyTorch's FutureWarning)."""
from __future__ import annotations as _annotations

import warnings


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Call `module` with its parameters and buffers replaced by `parameters_and_buffers`."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    from ...func import functional_call as call
    return call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights,
                strict=strict)


__all__ = ["functional_call"]
