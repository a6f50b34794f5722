"""Muon (momentum orthogonalized by Newton-Schulz), as torch.optim.Muon computes it.

PyTorch runs the Newton-Schulz iteration in bfloat16.  numpy has no bfloat16, so the iteration
here keeps float32 arrays holding bfloat16 values: every result PyTorch stores in bfloat16 is
rounded to bfloat16 (to nearest, ties to even) at the same point, with float32 accumulation in
between, as PyTorch's CPU bfloat16 kernels do.  Most results agree with PyTorch's bit for bit;
where the float32 sums inside a product run in another order than PyTorch's kernels run them, a
result can differ in its last bfloat16 bit (and the iteration carries that on): a few bfloat16
ulps of the orthogonalized update, times the learning rate.
"""
from __future__ import annotations as _annotations

import math

import numpy as np

from .. import _core
from .optimizer import Optimizer, _to_scalar, add_alpha, lerp_scalar, mul_scalar

__all__ = ["Muon"]

# Keller Jordan's quintic Newton-Schulz coefficients and defaults (PyTorch's).
EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5

_F32 = np.float32


def _round_to_bfloat16(a) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), kept as float32; NaN stays
    NaN.  (float64 goes through float32 first, as PyTorch's conversion does.)"""
    a = np.asarray(a, dtype=_F32)
    bits = a.view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) \
        & np.uint32(0xFFFF0000)
    return np.where(np.isnan(a), a, rounded.view(_F32))


def _zeropower_via_newtonschulz(grad: np.ndarray, ns_coefficients, ns_steps: int,
                                eps: float) -> np.ndarray:
    """The (approximate) orthogonalization U S' V^T of grad = U S V^T, S' ~ 1, in bfloat16
    values: ns_steps quintic Newton-Schulz iterations on grad scaled to spectral norm <= 1."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = (_F32(v) for v in ns_coefficients)
    bf16 = _round_to_bfloat16
    x = bf16(grad)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    # scale to Frobenius norm 1 (an upper bound of the spectral norm)
    norm = bf16(np.sqrt(np.sum(np.square(x, dtype=_F32), dtype=_F32)))
    x = bf16(x / max(norm, bf16(_F32(eps))))
    for _ in range(ns_steps):
        gram = bf16(x @ x.T)
        gram_update = bf16(b * gram + c * (gram @ gram))      # addmm(gram, gram, gram, b, c)
        x = bf16(a * x + gram_update @ x)                     # addmm(x, gram_update, x, a)
    return x.T if tall else x


def _adjust_lr(lr: float, adjust_lr_fn, param_shape) -> float:
    """The update's scale for a (A, B) matrix: Keller Jordan's sqrt(max(1, A/B)) ('original',
    the default) or Moonshot's 0.2 * sqrt(max(A, B)) ('match_rms_adamw', AdamW's update RMS)."""
    rows, cols = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """Implements Muon, as torch.optim.Muon: SGD with (Nesterov) momentum whose update is
    orthogonalized by a Newton-Schulz iteration, for the 2-D parameters of hidden layers (use
    AdamW for biases, embeddings and other parameters).

    Args:
        params: iterable of 2-D parameters or of dicts defining parameter groups
        lr (float): learning rate (default: 1e-3)
        weight_decay (float): decoupled weight decay (default: 0.1)
        momentum (float): momentum factor (default: 0.95)
        nesterov (bool): use Nesterov momentum (default: True)
        ns_coefficients (tuple[float, float, float]): the quintic iteration's coefficients
            (default: (3.4445, -4.7750, 2.0315))
        eps (float): lower bound of the norm the update is divided by (default: 1e-7)
        ns_steps (int): Newton-Schulz iterations (default: 5)
        adjust_lr_fn (str | None): "original" (default) or "match_rms_adamw"
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS,
                 ns_steps=DEFAULT_NS_STEPS, adjust_lr_fn=None) -> None:
        if isinstance(lr, _core.TensorBase) and lr._array.size != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= _to_scalar(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                    "nesterov": nesterov, "ns_coefficients": ns_coefficients, "eps": eps,
                    "ns_steps": ns_steps, "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def _update_group(self, group) -> None:
        lr = _to_scalar(group["lr"])
        weight_decay = group["weight_decay"]
        momentum = group["momentum"]
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.is_complex():
                raise RuntimeError("Muon does not support complex parameters")
            param, grad = p._array, p.grad._array
            if grad.ndim != 2:
                raise ValueError("Param gradient must be a 2D matrix")
            _core._mark_written(p)      # in-place update: saved copies are now stale
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = _core.wrap_array(np.zeros_like(grad))
            buf = state["momentum_buffer"]._array
            lerp_scalar(buf, grad, 1 - momentum, out=buf)
            update = lerp_scalar(grad, buf, momentum) if group["nesterov"] else buf
            update = _zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                                 group["ns_steps"], group["eps"])
            adjusted_lr = _adjust_lr(lr, group["adjust_lr_fn"], param.shape)
            mul_scalar(param, 1 - lr * weight_decay, out=param)
            add_alpha(param, update.astype(param.dtype), -adjusted_lr, out=param)
