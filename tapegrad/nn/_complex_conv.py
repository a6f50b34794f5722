"""Convolutions of complex tensors, as PyTorch computes them on CPU: by the real parts.

With x = a + ib, w = c + id (and a bias p + iq), a convolution is bilinear, so
conv(x, w) = (conv(a, c) - conv(b, d) + p) + i (conv(a, d) + conv(b, c) + q).
The four real convolutions are recorded, so gradients follow from theirs (with PyTorch's
convention for complex leaves, the one of `.real`/`.imag`/`complex`).
"""
from __future__ import annotations as _annotations

import functools

from .. import _core


def _is_complex_call(input, weight, bias) -> bool:
    """A complex input and weight of one dtype (and a bias of it, or none): anything else goes
    to the real kernel's checks, which word the mismatch as PyTorch does."""
    if not (isinstance(input, _core.TensorBase) and isinstance(weight, _core.TensorBase)):
        return False
    if not input.is_complex() or weight.dtype != input.dtype:
        return False
    return bias is None or (isinstance(bias, _core.TensorBase) and bias.dtype == input.dtype)


def by_real_parts(conv):
    """Wrap a real convolution `conv(input, weight, bias, *args, **kwargs)` to take complex
    tensors as well."""
    @functools.wraps(conv)
    def run(input, weight, bias=None, *args, **kwargs):
        if not _is_complex_call(input, weight, bias):
            return conv(input, weight, bias, *args, **kwargs)
        from .. import complex as make_complex
        if input.dim() == weight.dim() - 1:       # unbatched: as PyTorch, a batch of one
            return run(input.unsqueeze(0), weight, bias, *args, **kwargs).squeeze(0)
        a, b, c, d = input.real, input.imag, weight.real, weight.imag
        real_bias = None if bias is None else bias.real
        imag_bias = None if bias is None else bias.imag
        real = conv(a, c, real_bias, *args, **kwargs) - conv(b, d, None, *args, **kwargs)
        imag = conv(a, d, imag_bias, *args, **kwargs) + conv(b, c, None, *args, **kwargs)
        # (PyTorch's last node is its sum of the two parts, real + i * imag)
        return _core._name_grad_fn(make_complex(real, imag), "AddBackward0")
    return run
