"""fuse_modules / fuse_modules_qat: replace a run of named submodules (conv, bn, relu; linear,
relu; ...) by one fused module in the first's place and nn.Identity in the others'.

For post-training quantization (eval mode) a batch norm is folded into the preceding conv or
linear layer's weights; for quantization-aware training the modules are kept side by side in an
ao.nn.intrinsic sequence (ConvBn2d, ConvBnReLU2d, ...), so the batch norm still trains."""
from __future__ import annotations

import copy

from tapegrad import nn
from tapegrad.ao.nn import intrinsic as nni
from tapegrad.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval

__all__ = ["fuse_modules", "fuse_modules_qat", "fuse_known_modules", "get_fuser_method",
           "fuse_conv_bn", "fuse_conv_bn_relu", "fuse_linear_bn"]

# The conv's fused classes, keyed by the conv type: (with BN for QAT, with BN and ReLU for QAT,
# with ReLU).
_CONV_FUSED = {
    nn.Conv1d: (nni.ConvBn1d, nni.ConvBnReLU1d, nni.ConvReLU1d),
    nn.Conv2d: (nni.ConvBn2d, nni.ConvBnReLU2d, nni.ConvReLU2d),
    nn.Conv3d: (nni.ConvBn3d, nni.ConvBnReLU3d, nni.ConvReLU3d),
}


def _check_bn_for_qat(bn, out_channels: int, what: str) -> None:
    if bn.num_features != out_channels:
        raise AssertionError(f"Output channel of {what} must match num_features of BatchNorm2d.")
    if not bn.affine:
        raise AssertionError("Only support fusing BatchNorm2d with affine set to True")
    if not bn.track_running_stats:
        raise AssertionError(
            "Only support fusing BatchNorm2d with tracking_running_stats set to True")


def fuse_conv_bn(is_qat, conv, bn):
    if conv.training != bn.training:
        raise AssertionError("Conv and BN both must be in the same mode (train or eval).")
    if is_qat:
        _check_bn_for_qat(bn, conv.out_channels, "Conv2d")
        return _CONV_FUSED[type(conv)][0](conv, bn)
    return fuse_conv_bn_eval(conv, bn)


def fuse_conv_bn_relu(is_qat, conv, bn, relu):
    if not (conv.training == bn.training == relu.training):
        raise AssertionError("Conv and BN both must be in the same mode (train or eval).")
    if is_qat:
        _check_bn_for_qat(bn, conv.out_channels, "Conv2d")
        return _CONV_FUSED[type(conv)][1](conv, bn, relu)
    return _CONV_FUSED[type(conv)][2](fuse_conv_bn_eval(conv, bn), relu)


def fuse_linear_bn(is_qat, linear, bn):
    if linear.training != bn.training:
        raise AssertionError("Linear and BN both must be in the same mode (train or eval).")
    if is_qat:
        if bn.num_features != linear.out_features:
            raise AssertionError(
                "Output features of Linear must match num_features of BatchNorm1d")
        return nni.LinearBn1d(linear, bn)
    return fuse_linear_bn_eval(linear, bn)


def _in_sequence(fused_class):
    # A pair kept as it is, wrapped in its fused sequence (conv + relu, linear + relu, bn + relu).
    def fuser(is_qat, first, second):
        return fused_class(first, second)
    return fuser


_DEFAULT_OP_LIST_TO_FUSER_METHOD = {
    **{(conv, bn): fuse_conv_bn for conv, bn in
       ((nn.Conv1d, nn.BatchNorm1d), (nn.Conv2d, nn.BatchNorm2d), (nn.Conv3d, nn.BatchNorm3d))},
    **{(conv, bn, nn.ReLU): fuse_conv_bn_relu for conv, bn in
       ((nn.Conv1d, nn.BatchNorm1d), (nn.Conv2d, nn.BatchNorm2d), (nn.Conv3d, nn.BatchNorm3d))},
    **{(conv, nn.ReLU): _in_sequence(classes[2]) for conv, classes in _CONV_FUSED.items()},
    (nn.Linear, nn.BatchNorm1d): fuse_linear_bn,
    (nn.Linear, nn.ReLU): _in_sequence(nni.LinearReLU),
    (nn.BatchNorm2d, nn.ReLU): _in_sequence(nni.BNReLU2d),
    (nn.BatchNorm3d, nn.ReLU): _in_sequence(nni.BNReLU3d),
}


def get_fuser_method(op_list, additional_fuser_method_mapping=None):
    mapping = {**_DEFAULT_OP_LIST_TO_FUSER_METHOD, **(additional_fuser_method_mapping or {})}
    fuser = mapping.get(tuple(op_list))
    if fuser is None:
        raise AssertionError(f"did not find fuser method for: {tuple(op_list)} ")
    return fuser


def fuse_known_modules(mod_list, is_qat, additional_fuser_method_mapping=None):
    """The fused module followed by nn.Identity for each other module; the first module's
    forward pre-hooks and the last's forward hooks move to the fused module."""
    fuser = get_fuser_method(tuple(type(m) for m in mod_list), additional_fuser_method_mapping)
    fused = fuser(is_qat, *mod_list)
    for hook in mod_list[0]._forward_pre_hooks.values():
        fused.register_forward_pre_hook(hook)
    mod_list[0]._forward_pre_hooks.clear()
    for hook in mod_list[-1]._forward_hooks.values():
        fused.register_forward_hook(hook)
    mod_list[-1]._forward_hooks.clear()
    replacements = [fused]
    for _ in mod_list[1:]:
        identity = nn.Identity()
        identity.training = mod_list[0].training
        replacements.append(identity)
    return replacements


def _set_submodule(model, dotted_name: str, module) -> None:
    parent_name, _, leaf = dotted_name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, leaf, module)


def _fuse_group(model, names, is_qat, fuser_func, fuse_custom_config_dict) -> None:
    additional = (fuse_custom_config_dict or {}).get("additional_fuser_method_mapping", {})
    modules = [model.get_submodule(name) for name in names]
    for name, replacement in zip(names, fuser_func(modules, is_qat, additional)):
        _set_submodule(model, name, replacement)


def _fuse_modules(model, modules_to_fuse, is_qat, inplace, fuser_func, fuse_custom_config_dict):
    if not inplace:
        model = copy.deepcopy(model)
    # One group may be given as a flat list of names.
    groups = ([modules_to_fuse] if all(isinstance(n, str) for n in modules_to_fuse)
              else modules_to_fuse)
    for names in groups:
        _fuse_group(model, names, is_qat, fuser_func, fuse_custom_config_dict)
    return model


def fuse_modules(model, modules_to_fuse, inplace=False, fuser_func=fuse_known_modules,
                 fuse_custom_config_dict=None):
    """Fuse each group of named submodules for post-training quantization (eval mode)."""
    return _fuse_modules(model, modules_to_fuse, False, inplace, fuser_func,
                         fuse_custom_config_dict)


def fuse_modules_qat(model, modules_to_fuse, inplace=False, fuser_func=fuse_known_modules,
                     fuse_custom_config_dict=None):
    """Fuse each group of named submodules for quantization-aware training."""
    return _fuse_modules(model, modules_to_fuse, True, inplace, fuser_func,
                         fuse_custom_config_dict)
