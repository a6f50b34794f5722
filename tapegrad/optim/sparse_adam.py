"""SparseAdam: Adam for parameters whose gradients are sparse (rows of an embedding), updating
only the moments and the parameter rows a gradient touches, as torch.optim.SparseAdam.

The gradients it takes are the sparse COO ones ``nn.Embedding(sparse=True)`` gives its weight
(tapegrad/_sparse_embedding.py); a step coalesces one into (row indices, row values) and
``sparse_adam_rows`` updates those rows, PyTorch's operations in its order.  A dense gradient
raises PyTorch's error."""
from __future__ import annotations as _annotations

import math

import numpy as np

from .. import _core
from .optimizer import Optimizer, _to_scalar

__all__ = ["SparseAdam"]


def sparse_adam_rows(param: np.ndarray, rows: tuple, values: np.ndarray, state: dict,
                     lr: float, beta1: float, beta2: float, eps: float) -> None:
    """One SparseAdam step in place on ``param`` for the gradient whose entries ``rows`` (unique,
    coalesced; a tuple of index arrays, one per sparse dimension) hold ``values``; ``state``
    holds ``step`` (int) and the dense moments ``exp_avg``/``exp_avg_sq`` (arrays).  Written as
    PyTorch's moment updates (old += (1 - b) (new - old)) so float32 results round alike."""
    dtype = param.dtype.type
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    old_avg, old_sq = exp_avg[rows], exp_avg_sq[rows]
    avg_update = (values - old_avg) * dtype(1 - beta1)
    sq_update = (values ** 2 - old_sq) * dtype(1 - beta2)
    exp_avg[rows] += avg_update
    exp_avg_sq[rows] += sq_update
    numer = avg_update + old_avg
    denom = np.sqrt(sq_update + old_sq) + dtype(eps)
    step = state["step"]
    step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    param[rows] += dtype(-step_size) * (numer / denom)


class SparseAdam(Optimizer):
    """Adam for sparse gradients (lazy Adam): only the rows a gradient has are updated.

    Args:
        params: iterable of parameters or of dicts defining parameter groups (dense tensors)
        lr (float): learning rate (default: 1e-3)
        betas (tuple[float, float]): coefficients of the running averages (default: (0.9, 0.999))
        eps (float): term added to the denominator (default: 1e-8)
        maximize (bool): maximize the objective instead of minimizing it (default: False)
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False) -> None:
        if not 0.0 < _to_scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize})
        sparse_params = [[i, j] for i, group in enumerate(self.param_groups)
                         for j, p in enumerate(group["params"]) if p.is_sparse]
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires "
                             "dense parameter tensors")
        complex_params = [[i, j] for i, group in enumerate(self.param_groups)
                          for j, p in enumerate(group["params"]) if p.is_complex()]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not "
                             "support complex parameters")

    _GROUP_DEFAULTS = {"maximize": False}

    def _update_group(self, group) -> None:
        beta1, beta2 = group["betas"]
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if not getattr(grad, "is_sparse", False):
                raise RuntimeError("SparseAdam does not support dense gradients, please consider "
                                   "Adam instead")
            grad = grad.coalesce()
            # one index array per sparse dimension: an embedding's gradient has one (rows), a
            # gradient made by to_sparse() has one per dimension (single elements)
            rows = tuple(grad._indices()._array)
            values = grad._values()._array
            if group["maximize"]:
                values = -values
            state = self.state[p]
            if len(state) == 0:
                state["step"] = 0
                state["exp_avg"] = _core.wrap_array(np.zeros_like(p._array))
                state["exp_avg_sq"] = _core.wrap_array(np.zeros_like(p._array))
            state["step"] += 1
            _core._mark_written(p)
            sparse_adam_rows(p._array, rows, values,
                             {"step": state["step"], "exp_avg": state["exp_avg"]._array,
                              "exp_avg_sq": state["exp_avg_sq"]._array},
                             _to_scalar(group["lr"]), beta1, beta2, group["eps"])
