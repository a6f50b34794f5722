"""torch.distributions.dirichlet: PyTorch's import path for Dirichlet
(``from torch.distributions.dirichlet import Dirichlet``), and its ``_Dirichlet_backward``."""
import numpy as np

from ..creation import _make
from ._dirichlet import dirichlet_vjp
from ._gamma_family import Dirichlet

__all__ = ["Dirichlet"]


def _Dirichlet_backward(x, concentration, grad_output):
    """PyTorch's helper, exposed for testing: the gradient with respect to ``concentration``
    (broadcast to x's shape) of a loss whose gradient with respect to the Dirichlet draw ``x``
    is ``grad_output`` (Dirichlet.rsample's backward; not itself differentiable)."""
    x_, alpha, up = np.broadcast_arrays(x._array, concentration._array, grad_output._array)
    out = dirichlet_vjp(x_.astype(np.float64), alpha, up)
    dtype = np.result_type(x._array.dtype, concentration._array.dtype, grad_output._array.dtype)
    return _make(np.ascontiguousarray(out.astype(dtype)), False)
