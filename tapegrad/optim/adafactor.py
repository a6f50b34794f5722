"""Adafactor (PyTorch's single-tensor update): Adam-like steps whose second-moment estimate of a
matrix gradient is factored into per-row and per-column running means (memory O(rows + cols)),
with a relative step size and update clipping."""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core
from .optimizer import Optimizer, _step_tensor, _to_scalar, lerp_scalar

__all__ = ["Adafactor"]


def _rms(a: np.ndarray) -> float:
    """Root mean square of a (its 2-norm over sqrt(numel))."""
    return float(np.linalg.norm(a.reshape(-1).astype(np.float64))) / (a.size ** 0.5) \
        if a.size else 0.0


class Adafactor(Optimizer):
    """Implements Adafactor, as torch.optim.Adafactor.

    Args:
        params: iterable of parameters or of dicts defining parameter groups
        lr (float): the cap of the relative step size ``min(lr, 1/sqrt(step))`` (default: 1e-2)
        beta2_decay (float): the second-moment decay rate is ``1 - step ** beta2_decay``
            (default: -0.8)
        eps (tuple[float | None, float]): eps1 floors the second-moment estimate (None: the
            dtype's machine epsilon), eps2 floors the parameter scale (default: (None, 1e-3))
        d (float): clipping threshold of the update's root mean square (default: 1.0)
        weight_decay (float): decoupled weight decay (default: 0)
        maximize (bool): maximize the objective instead of minimizing it (default: False)
    """

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False) -> None:
        if isinstance(lr, _core.TensorBase) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    _GROUP_DEFAULTS = {"foreach": None, "maximize": False}
    _STEP_KEYS = ("step",)

    def _update_group(self, group) -> None:
        lr = _to_scalar(group["lr"])
        eps1, eps2 = group["eps"]
        d, weight_decay = group["d"], group["weight_decay"]
        for p, param, grad in self._params_with_grad(group):
            if p.is_complex():
                raise RuntimeError("Adafactor does not support complex parameters")
            _core._mark_written(p)      # in-place update: saved copies are now stale
            state = self.state[p]
            factored = grad.ndim > 1
            if len(state) == 0:
                state["step"] = _step_tensor()
                if factored:
                    state["row_var"] = _core.wrap_array(
                        np.zeros(grad.shape[:-1] + (1,), dtype=grad.dtype))
                    state["col_var"] = _core.wrap_array(
                        np.zeros(grad.shape[:-2] + (1,) + grad.shape[-1:], dtype=grad.dtype))
                else:
                    state["variance"] = _core.wrap_array(np.zeros_like(grad))
            if group["maximize"]:
                grad = -grad
            step_t = state["step"]._array
            np.add(step_t, 1, out=step_t)
            step = float(step_t.item())
            floor = float(np.finfo(param.dtype).eps) if eps1 is None else eps1
            decay = step ** group["beta2_decay"]                 # this step's 1 - beta2
            rho = min(lr, 1 / step ** 0.5)
            alpha = max(eps2, _rms(param)) * rho
            if weight_decay != 0:
                np.multiply(param, param.dtype.type(1 - lr * weight_decay), out=param)
            if factored:
                row_var, col_var = state["row_var"]._array, state["col_var"]._array
                square = grad.astype(np.float64) ** 2
                lerp_scalar(row_var, square.mean(-1, keepdims=True).astype(grad.dtype), decay,
                            out=row_var)
                lerp_scalar(col_var, square.mean(-2, keepdims=True).astype(grad.dtype), decay,
                            out=col_var)
                # The rank-1 estimate: row x column means over the mean of the row means.
                estimate = np.matmul(row_var, col_var)
                estimate = estimate / np.maximum(row_var.mean(-2, keepdims=True),
                                                 row_var.dtype.type(floor))
            else:
                variance = state["variance"]._array
                lerp_scalar(variance, grad * grad, decay, out=variance)
                estimate = variance.copy()
            update = (1 / np.sqrt(np.maximum(estimate, estimate.dtype.type(floor * floor)))
                      ).astype(param.dtype) * grad
            denom = max(1.0, _rms(update) / d)
            param -= (update * param.dtype.type(alpha / denom)).astype(param.dtype)
