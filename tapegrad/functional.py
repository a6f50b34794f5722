"""torch.functional: the module PyTorch defines its tensor-level helpers in (einsum, split, norm,
meshgrid, unique, ...).  Scripts import it directly (``import torch.functional as F``); its names
are tapegrad's own top-level functions, so both spellings reach one implementation."""
from __future__ import annotations as _annotations

from . import (atleast_1d, atleast_2d, atleast_3d, block_diag, broadcast_shapes,
               broadcast_tensors, cartesian_prod, cdist, chain_matmul, einsum, lu, meshgrid,
               istft, norm, pca_lowrank, split, stft, svd_lowrank, tensordot, unique,
               unique_consecutive, unravel_index)
# torch/functional.py imports torch.nn.functional as F, and scripts reach it as
# torch.functional.F (llama3-from-scratch's `torch.functional.F.silu`)
from .nn import functional as F  # noqa: N812

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors",
           "cartesian_prod", "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu",
           "norm", "meshgrid", "pca_lowrank", "split", "stft", "svd_lowrank", "tensordot", "unique",
           "unique_consecutive", "unravel_index"]
