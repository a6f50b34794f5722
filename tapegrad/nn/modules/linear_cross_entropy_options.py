"""torch.nn.LinearCrossEntropyOptions: the chunking options of F.linear_cross_entropy.

PyTorch's chunked path exists to avoid materialising the (N, C) logits on an accelerator.
tapegrad evaluates linear_cross_entropy by its reference definition (linear, then
cross_entropy) whatever the options say, so the options only need to be validated and resolved
as PyTorch does: a script that builds them, or passes conflicting ones, sees PyTorch's errors.
"""
from __future__ import annotations as _annotations

import dataclasses

from ... import _core

__all__ = ["LinearCrossEntropyOptions"]

_POLICIES = ("auto", "accurate", "balanced", "compact")
# PyTorch's picks for the "auto" sentinels per (device type, input dtype); unlisted pairs fall
# back to ("compact", "aspect_ratio:2").  tapegrad is a CPU library, so only the CPU rows apply.
_AUTO_CPU_LOW_PRECISION = ("accurate", "aspect_ratio")
_AUTO_FALLBACK = ("compact", "aspect_ratio:2")


def _valid_chunking_method(method) -> bool:
    name, sep, factor = method.partition(":")
    if not sep:
        factor = "1"
    return name == "aspect_ratio" and factor.isdigit() and int(factor) > 0


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """Configuration of the chunked form of :func:`torch.nn.functional.linear_cross_entropy`:
    ``allow_retain_graph``, ``batch_chunk_size`` (rows per chunk, or None),
    ``chunking_method`` ("auto", "aspect_ratio", "aspect_ratio:N" or None), ``acc_policy``
    ("auto", "accurate", "balanced", "compact") and ``acc_dtype`` (None or a floating dtype).

    Values are validated as PyTorch does (ValueError).  tapegrad computes the loss by its
    reference definition whatever the options, so values and gradients are those of
    ``cross_entropy(linear(input, weight, bias), target, ...)``.
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in _POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if (self.chunking_method is not None and self.chunking_method != "auto"
                and not _valid_chunking_method(self.chunking_method)):
            raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None
                or (isinstance(self.batch_chunk_size, int)
                    and not isinstance(self.batch_chunk_size, bool)
                    and self.batch_chunk_size > 0)):
            raise ValueError("batch_chunk_size must be positive int or None, got "
                             f"{self.batch_chunk_size!r}")
        supported = (_core.float16, _core.bfloat16, _core.float32, _core.float64)
        if self.acc_dtype is not None and self.acc_dtype not in supported:
            raise ValueError(
                "acc_dtype must be one of {None, torch.float16, torch.bfloat16, "
                f"torch.float32, torch.float64}}, got {self.acc_dtype!r}. Pass "
                "acc_dtype=None to let the op pick automatically.")

    def _chunk_size(self, num_batches, in_features, num_classes, method) -> int:
        # "aspect_ratio[:N]": a (chunk, C) logits block about the size of the (N, in) input,
        # rounded up to a power of two, divided by N.
        factor = int(method.split(":", 1)[1]) if ":" in method else 1
        inc = -(-num_classes // in_features)
        target = -(-num_batches // inc)
        return min((1 << (target - 1).bit_length()) // factor, num_batches)

    def _adjust(self, num_batches, in_features, num_classes, dtype, device=None):
        """The options with "auto" and None resolved for one call (PyTorch's resolution, and
        its ValueError when batch_chunk_size and chunking_method disagree)."""
        policy, method = self.acc_policy, self.chunking_method
        if method == "auto" and self.batch_chunk_size is not None:
            method = None
        if policy == "auto" or method == "auto":
            low = dtype in (_core.float16, _core.bfloat16)
            cpu = device is not None and getattr(device, "type", "cpu") == "cpu"
            ap, cm = _AUTO_CPU_LOW_PRECISION if (cpu and low) else _AUTO_FALLBACK
            policy = ap if policy == "auto" else policy
            method = cm if method == "auto" else method
        size = (num_batches if self.batch_chunk_size is None
                else min(self.batch_chunk_size, num_batches))
        if method is not None:
            size = self._chunk_size(num_batches, in_features, num_classes, method)
            if self.batch_chunk_size is not None and self.batch_chunk_size != size:
                raise ValueError(
                    f"batch_chunk_size (={self.batch_chunk_size}) and chunking_method "
                    f"('{method}') give different chunk sizes ({self.batch_chunk_size} vs "
                    f"{size}); pass only one.")
        acc = self.acc_dtype
        if acc is None:
            low = dtype in (_core.float16, _core.bfloat16)
            acc = _core.float32 if (self.acc_policy == "auto" and low and device is not None) \
                else dtype
        return dataclasses.replace(self, acc_policy=policy, chunking_method=method,
                                   batch_chunk_size=max(1, size), acc_dtype=acc)
