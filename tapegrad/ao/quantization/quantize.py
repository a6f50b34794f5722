"""quantize_dynamic: swap a model's Linear, LSTM and GRU layers for dynamically quantized ones
(torch.ao.nn.quantized.dynamic.Linear / LSTM / GRU), as PyTorch's eager-mode API does: give each submodule a
qconfig (by type or by dotted name, inherited from its parent), then replace the children whose
type has a dynamic counterpart and a qconfig."""
from __future__ import annotations

import copy
import functools
import itertools
import warnings

import tapegrad as torch
from tapegrad import nn

from .qconfig import (default_dynamic_qconfig, float16_dynamic_qconfig,
                      float_qparams_weight_only_qconfig, per_channel_dynamic_qconfig)

# The recurrent cells PyTorch's default dynamic mapping also quantizes: tapegrad has no
# quantized kernels for them, and leaving them in float would silently change the numbers a
# PyTorch script prints, so converting one raises.
_UNSUPPORTED = ("LSTMCell", "RNNCell", "GRUCell")


_DEPRECATION = (
    "torch.ao.quantization is deprecated and will be removed in 2.10. \nFor migrations of users: "
    "\n1. Eager mode quantization (torch.ao.quantization.quantize, "
    "torch.ao.quantization.quantize_dynamic), please migrate to use torchao eager mode quantize_ "
    "API instead \n2. FX graph mode quantization (torch.ao.quantization.quantize_fx.prepare_fx,"
    "torch.ao.quantization.quantize_fx.convert_fx, please migrate to use torchao pt2e "
    "quantization API instead (prepare_pt2e, convert_pt2e) \n3. pt2e quantization has been "
    "migrated to torchao (https://github.com/pytorch/ao/tree/main/torchao/quantization/pt2e) "
    "\nsee https://github.com/pytorch/ao/issues/2259 for more details")


def _deprecated(function):
    # PyTorch 2.13 marks its eager-mode entry points deprecated: a DeprecationWarning per call,
    # attributed to the caller (so a script's own calls show it, under Python's default filters)
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        warnings.warn(_DEPRECATION, DeprecationWarning, stacklevel=2)
        return function(*args, **kwargs)
    return wrapper


def get_default_static_quant_module_mappings() -> dict:
    """Float (or fused) module type -> its static quantized counterpart (those tapegrad has)."""
    from tapegrad.ao.nn import intrinsic as nni
    from tapegrad.ao.nn import quantized as nnq
    from tapegrad.ao.nn.intrinsic import quantized as nniq

    from tapegrad.ao.nn import qat as nnqat

    from .stubs import DeQuantStub, QuantStub
    return {QuantStub: nnq.Quantize, DeQuantStub: nnq.DeQuantize, nn.Linear: nnq.Linear,
            nn.Conv2d: nnq.Conv2d, nni.LinearReLU: nniq.LinearReLU,
            nni.ConvReLU2d: nniq.ConvReLU2d, nnqat.Linear: nnq.Linear,
            nnqat.Conv2d: nnq.Conv2d, nnqat.LinearReLU: nniq.LinearReLU,
            nnqat.ConvReLU2d: nniq.ConvReLU2d}


def get_default_qat_module_mappings() -> dict:
    """Float (or fused) module type -> its quantization-aware-training counterpart."""
    from tapegrad.ao.nn import intrinsic as nni
    from tapegrad.ao.nn import qat as nnqat
    return {nn.Linear: nnqat.Linear, nn.Conv2d: nnqat.Conv2d, nni.LinearReLU: nnqat.LinearReLU,
            nni.ConvReLU2d: nnqat.ConvReLU2d}


# The float module types PyTorch's static mapping also quantizes, which tapegrad has no
# quantized modules for: prepare observes them as PyTorch does, and convert raises rather than
# leave them in float (which would change the numbers a PyTorch script prints).
_STATIC_UNSUPPORTED = (
    "BatchNorm2d", "BatchNorm3d", "Dropout", "Conv1d", "Conv3d", "ConvTranspose1d",
    "ConvTranspose2d", "ConvTranspose3d", "ELU", "Embedding", "EmbeddingBag", "GroupNorm",
    "Hardswish", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LayerNorm", "LeakyReLU",
    "ReLU6", "PReLU", "BNReLU2d", "BNReLU3d", "ConvReLU1d", "ConvReLU3d", "LinearLeakyReLU",
    "LinearTanh", "ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d",
    "ConvBnReLU3d", "LinearBn1d", "FloatFunctional")
# What PyTorch's QAT mapping also swaps, which tapegrad has no QAT modules for: prepare_qat
# raises rather than train them without fake quantization.
_QAT_UNSUPPORTED = ("Conv3d", "Embedding", "EmbeddingBag", "ConvBn1d", "ConvBn2d", "ConvBn3d",
                    "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d", "ConvReLU1d", "ConvReLU3d",
                    "LinearBn1d")


def _is_static_unsupported(mod) -> bool:
    from tapegrad.ao.nn import intrinsic as nni
    from tapegrad.ao.nn import quantized as nnq
    name = type(mod).__name__
    return name in _STATIC_UNSUPPORTED and type(mod) in (
        getattr(nn, name, None), getattr(nni, name, None), getattr(nnq, name, None))


def get_default_qconfig_propagation_list() -> set:
    """The module types prepare gives an activation observer (when they have a qconfig)."""
    from tapegrad.ao.nn import intrinsic as nni
    from tapegrad.ao.nn import quantized as nnq
    unsupported = {getattr(ns, name) for name in _STATIC_UNSUPPORTED
                   for ns in (nn, nni, nnq) if hasattr(ns, name)}
    qat = set(get_default_qat_module_mappings().values())
    return (set(get_default_static_quant_module_mappings())
            | set(get_default_dynamic_quant_module_mappings()) | unsupported | qat)


def get_default_dynamic_quant_module_mappings() -> dict:
    """Float module type -> its dynamic quantized counterpart."""
    from tapegrad.ao.nn.quantized import dynamic
    return {nn.Linear: dynamic.Linear, nn.LSTM: dynamic.LSTM, nn.GRU: dynamic.GRU}


def _default_spec(dtype) -> dict:
    types = [nn.Linear, nn.LSTM, nn.GRU] + [getattr(nn, name) for name in _UNSUPPORTED]
    if dtype is torch.qint8:
        return dict.fromkeys(types, default_dynamic_qconfig)
    if dtype is torch.float16:
        return dict.fromkeys(types, float16_dynamic_qconfig)
    raise ValueError(f"Don't know how to quantize with default settings for {dtype}. Provide "
                     "full qconfig please")


def propagate_qconfig_(module, qconfig_dict=None, prepare_custom_config_dict=None) -> None:
    """Set `qconfig` on module and every submodule: its type's entry, else its dotted name's,
    else its own qconfig attribute, else its parent's."""
    qconfig_dict = qconfig_dict or {}
    stack = [(module, None, "")]
    while stack:
        mod, parent_qconfig, prefix = stack.pop()
        qconfig = qconfig_dict.get(type(mod), parent_qconfig)
        qconfig = qconfig_dict.get(prefix, qconfig)
        qconfig = getattr(mod, "qconfig", qconfig)
        mod.qconfig = qconfig
        for name, child in reversed(list(mod.named_children())):
            stack.append((child, qconfig, f"{prefix}.{name}" if prefix else name))


def _remove_qconfig(module) -> None:
    for mod in module.modules():
        if "qconfig" in mod.__dict__:
            del mod.qconfig


def swap_module(mod, mapping):
    """mod's quantized counterpart when mapping has its type and it has a qconfig, else mod."""
    if getattr(mod, "qconfig", None) is None:
        return mod
    if type(mod).__name__ in _UNSUPPORTED and type(mod) is getattr(nn, type(mod).__name__):
        raise NotImplementedError(f"tapegrad: dynamic quantization of nn.{type(mod).__name__} "
                                  "is not supported (nn.Linear, nn.LSTM and nn.GRU are)")
    if type(mod) in mapping:
        new = mapping[type(mod)].from_float(mod)
        # hooks other than the observer's stay with the module
        for hook in mod._forward_pre_hooks.values():
            new.register_forward_pre_hook(hook)
        for hook in mod._forward_hooks.values():
            if hook is not _observer_forward_hook:
                new.register_forward_hook(hook)
        return new
    if _is_static_unsupported(mod) and hasattr(mod, "activation_post_process"):
        raise NotImplementedError(f"tapegrad: static quantization of {type(mod).__name__} is "
                                  "not supported (QuantStub, DeQuantStub, Linear, Conv2d, "
                                  "LinearReLU and ConvReLU2d are)")
    return mod


@_deprecated
def convert(module, mapping=None, inplace: bool = False, remove_qconfig: bool = True):
    """Replace module's descendants (not module itself, as in PyTorch) by their quantized
    counterparts."""
    from tapegrad.ao.nn.intrinsic import _FusedModule
    if mapping is None:
        mapping = get_default_static_quant_module_mappings()
    if not inplace:
        module = copy.deepcopy(module)
    stack = [module]
    while stack:
        mod = stack.pop()
        for name, child in list(mod.named_children()):
            new = swap_module(child, mapping)
            if new is not child:
                setattr(mod, name, new)
            elif not isinstance(child, _FusedModule):   # (a fused module converts whole)
                stack.append(child)
    if remove_qconfig:
        _remove_qconfig(module)
    return module


# -- prepare: observers for calibration -----------------------------------------------------
def _observer_forward_hook(module, input, output):  # noqa: A002
    return module.activation_post_process(output)


def _add_observer(module, propagation_list, non_leaf_types) -> None:
    from tapegrad.ao.nn.intrinsic import _FusedModule

    from .stubs import DeQuantStub
    stack = [module]
    while stack:
        mod = stack.pop()
        observed = (isinstance(mod, _FusedModule) or type(mod) in non_leaf_types
                    or (not list(mod.children()) and type(mod) in propagation_list))
        if observed:
            if getattr(mod, "qconfig", None) is not None and not isinstance(mod, DeQuantStub):
                mod.add_module("activation_post_process", mod.qconfig.activation())
                mod.register_forward_hook(_observer_forward_hook, prepend=True)
        else:
            stack.extend(reversed(list(mod.children())))


@_deprecated
def prepare(model, inplace=False, allow_list=None, observer_non_leaf_module_list=None,
            prepare_custom_config_dict=None):
    """The model (a copy unless inplace) with an activation observer on each quantizable leaf
    module (and fused module) that has a qconfig; running calibration data through it records
    the ranges that convert turns into output scales and zero points."""
    if not inplace:
        model = copy.deepcopy(model)
    propagation_list = allow_list if allow_list is not None \
        else get_default_qconfig_propagation_list()
    propagate_qconfig_(model, qconfig_dict=None)
    if not any(getattr(m, "qconfig", None) for m in model.modules()):
        warnings.warn("None of the submodule got qconfig applied. Make sure you passed correct "
                      "configuration through `qconfig_dict` or by assigning the `.qconfig` "
                      "attribute directly on submodules", stacklevel=2)
    _add_observer(model, propagation_list, set(observer_non_leaf_module_list or ()))
    return model


def _check_qat_supported(model) -> None:
    from tapegrad.ao.nn import intrinsic as nni
    for mod in model.modules():
        name = type(mod).__name__
        if (getattr(mod, "qconfig", None) is not None and name in _QAT_UNSUPPORTED
                and type(mod) in (getattr(nn, name, None), getattr(nni, name, None))):
            raise NotImplementedError(f"tapegrad: quantization-aware training of {name} is not "
                                      "supported (Linear, Conv2d, LinearReLU and ConvReLU2d "
                                      "are)")


@_deprecated
def prepare_qat(model, mapping=None, inplace=False):
    """The model (a copy unless inplace) ready for quantization-aware training: its layers
    swapped for QAT modules (fake-quantized weights) and fake-quantizing activation observers
    attached, as the qconfigs say."""
    if not model.training:
        raise AssertionError("prepare_qat only works on models in training mode")
    if mapping is None:
        mapping = get_default_qat_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model, qconfig_dict=None)
    _check_qat_supported(model)
    convert.__wrapped__(model, mapping=mapping, inplace=True, remove_qconfig=False)
    prepare.__wrapped__(model, observer_non_leaf_module_list=set(mapping.values()),
                        inplace=True)
    return model


@_deprecated
def quantize_dynamic(model, qconfig_spec=None, dtype=torch.qint8, mapping=None,
                     inplace: bool = False):
    """A copy of model (or model itself, inplace=True) in eval mode whose Linear, LSTM and GRU
    layers (those qconfig_spec selects: a set of types or dotted names, or a dict of them to
    QConfigs; by default all of them) are dynamically quantized: int8 weights, inputs quantized
    per call (or, dtype=torch.float16, float16 weights)."""
    if qconfig_spec is None:
        qconfig_spec = _default_spec(dtype)
    elif isinstance(qconfig_spec, set):
        if dtype is torch.qint8:
            default = default_dynamic_qconfig
        elif dtype is torch.quint8:
            default = float_qparams_weight_only_qconfig    # (for embeddings, as PyTorch's)
        elif dtype is torch.float16:
            default = float16_dynamic_qconfig
        else:
            raise RuntimeError(f"Unknown dtype specified for quantize_dynamic: {dtype}")
        qconfig_spec = dict(zip(qconfig_spec, itertools.repeat(default)))
    if mapping is None:
        mapping = get_default_dynamic_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    propagate_qconfig_(model, qconfig_spec)
    convert(model, mapping, inplace=True)
    return model
