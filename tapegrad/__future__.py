"""tapegrad.__future__ (torch.__future__): opt-in behaviours of nn.Module conversions.

`set_swap_module_params_on_conversion(True)` makes Module.to()/float()/... and load_state_dict
swap each parameter's content with the converted (or loaded) tensor through
torch.utils.swap_tensors, so every object holding the parameter (an optimizer) sees the change and
a tensor subclass's own conversion or `Tensor.module_load` override decides the result.
`set_overwrite_module_params_on_conversion(True)` makes the conversions assign new Parameter
objects instead of changing the old ones in place.
"""

_overwrite_module_params_on_conversion: bool = False
_swap_module_params_on_conversion: bool = False


def set_overwrite_module_params_on_conversion(value: bool) -> None:
    """Whether Module.to()/float()/... assign new Parameters instead of converting in place."""
    global _overwrite_module_params_on_conversion
    _overwrite_module_params_on_conversion = value


def get_overwrite_module_params_on_conversion() -> bool:
    """The flag set_overwrite_module_params_on_conversion sets (default False)."""
    return _overwrite_module_params_on_conversion


def set_swap_module_params_on_conversion(value: bool) -> None:
    """Whether module conversions and load_state_dict swap parameters with torch.utils.swap_tensors
    (this flag wins over the overwrite one)."""
    global _swap_module_params_on_conversion
    _swap_module_params_on_conversion = value


def get_swap_module_params_on_conversion() -> bool:
    """The flag set_swap_module_params_on_conversion sets (default False)."""
    return _swap_module_params_on_conversion
