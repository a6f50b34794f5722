"""LayerNorm and BatchNorm1d."""
from __future__ import annotations

from ... import _core, creation
from ...grad_mode import no_grad
from .. import functional as F
from ..parameter import Parameter
from .module import Module


class LayerNorm(Module):
    """Normalises over the trailing `normalized_shape` dims, then scales and shifts."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.ones(*self.normalized_shape, device=device,
                                                  dtype=dtype))
            if bias:
                self.bias = Parameter(creation.zeros(*self.normalized_shape, device=device,
                                                     dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class BatchNorm1d(Module):
    """Batch normalisation over (N, C) or (N, C, L) inputs, with running statistics."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(creation.ones(num_features, device=device, dtype=dtype))
            self.bias = Parameter(creation.zeros(num_features, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", creation.zeros(num_features, device=device,
                                                                dtype=dtype))
            self.register_buffer("running_var", creation.ones(num_features, device=device,
                                                              dtype=dtype))
            self.register_buffer("num_batches_tracked", creation.tensor(0, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def forward(self, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")
        if input.shape[1] != self.num_features:
            raise ValueError(f"running_mean should contain {input.shape[1]} elements not "
                             f"{self.num_features}")
        dims = (0,) if input.dim() == 2 else (0, 2)
        shape = (1, self.num_features) if input.dim() == 2 else (1, self.num_features, 1)
        use_batch_stats = self.training or not self.track_running_stats
        if use_batch_stats:
            count = input.numel() // self.num_features
            if self.training and count <= 1:
                raise ValueError(f"Expected more than 1 value per channel when training, got "
                                 f"input size {input.shape}")
            mean = input.mean(dims, keepdim=True)
            var = ((input - mean) ** 2).mean(dims, keepdim=True)
            if self.training and self.track_running_stats:
                self._update_running_stats(mean, var, count)
        else:
            mean = _core.wrap_array(self.running_mean._array.reshape(shape))
            var = _core.wrap_array(self.running_var._array.reshape(shape))
        out = (input - mean) / (var + self.eps).sqrt()
        if self.affine:
            out = out * self.weight.reshape(shape) + self.bias.reshape(shape)
        return out

    def _update_running_stats(self, mean, var, count: int) -> None:
        with no_grad():
            self.num_batches_tracked._array[...] += 1
            momentum = (1.0 / float(self.num_batches_tracked.item()) if self.momentum is None
                        else self.momentum)
            batch_mean = mean.detach()._array.reshape(-1)
            unbiased = var.detach()._array.reshape(-1) * (count / (count - 1))
            rm, rv = self.running_mean._array, self.running_var._array
            rm[...] = (1 - momentum) * rm + momentum * batch_mean.astype(rm.dtype)
            rv[...] = (1 - momentum) * rv + momentum * unbiased.astype(rv.dtype)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.affine}, "
                f"track_running_stats={self.track_running_stats}")

