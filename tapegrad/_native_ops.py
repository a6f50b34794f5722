"""PyTorch's tuple-returning `native_*` entry points, built on the functional ops:
native_layer_norm -> (output, mean, rstd), native_dropout -> (output, mask).  Only the output
carries a gradient (PyTorch's mean, rstd and mask do not require grad)."""
from __future__ import annotations as _annotations


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    import tapegrad
    from tapegrad.nn import functional as F
    shape = tuple(normalized_shape)
    output = F.layer_norm(input, shape, weight, bias, eps)
    dims = tuple(range(input.dim() - len(shape), input.dim()))
    x = input.detach()
    mean = x.mean(dim=dims, keepdim=True)
    rstd = tapegrad.rsqrt(x.var(dim=dims, unbiased=False, keepdim=True) + eps)
    return output, mean, rstd


def native_dropout(input, p, train):
    import tapegrad
    if train is False or p == 0:
        return input.clone(), tapegrad.ones_like(input, dtype=tapegrad.bool)
    mask = tapegrad.rand_like(input.detach()) >= p
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    return input * mask.to(input.dtype) * scale, mask


def register(namespace: dict) -> None:
    for fn in (native_layer_norm, native_dropout):
        namespace.setdefault(fn.__name__, fn)
