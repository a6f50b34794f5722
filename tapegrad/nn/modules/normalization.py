"""LayerNorm, BatchNorm1d/2d, GroupNorm, InstanceNorm1d/2d, LocalResponseNorm, CrossMapLRN2d."""
from __future__ import annotations as _annotations

import numbers
import warnings

from ... import creation, distributed
from ..._device import check_device
from ...grad_mode import no_grad
from .. import functional as F
from .. import init
from .._norm_extra import CrossMapLRN2d as _cross_map_lrn2d
from ..parameter import Parameter
from .module import Module


class LayerNorm(Module):
    """Normalises over the trailing `normalized_shape` dims, then scales and shifts."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.ones(self.normalized_shape, device=device,
                                                  dtype=dtype))
            if bias:
                self.bias = Parameter(creation.zeros(self.normalized_shape, device=device,
                                                     dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        """The scale back to ones and the shift (if any) to zeros."""
        if self.elementwise_affine:
            _reset_affine(self)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


def _reset_affine(module) -> None:
    init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class _NormBase(Module):
    """What batch and instance normalisation share (PyTorch's _NormBase): the parameters and
    running-statistics buffers, and resetting them."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        check_device(device, allow_meta=True)
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        # bias=False (PyTorch 2.13): a scale without a shift
        _register_affine(self, num_features, affine, bias, device, dtype)
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

    def reset_running_stats(self) -> None:
        """Running mean back to zeros, running variance to ones, the batch count to 0."""
        if self.track_running_stats and self.running_mean is not None:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                if self.num_batches_tracked is not None:
                    self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """reset_running_stats(), and the scale back to ones and the shift to zeros."""
        self.reset_running_stats()
        if self.affine:
            _reset_affine(self)


class _BatchNorm(_NormBase):
    """Batch normalisation over dim 1 with running statistics; subclasses name the input ranks
    they accept (PyTorch's _BatchNorm)."""

    _ranks: tuple = ()
    # Version 2 added num_batches_tracked.
    _version = 2
    # A buffer (registered by _NormBase.__init__), declared here so the public stubs list it.
    num_batches_tracked: "Tensor | None"

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        # A dict from before num_batches_tracked existed (version < 2, or no versions at all, as
        # for a hand-built dict) loads keeping the current count instead of reporting it missing.
        version = local_metadata.get("version")
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked is not None
                               else creation.tensor(0))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def _check_input_dim(self, input) -> None:
        if input.dim() not in self._ranks:
            ranks = " or ".join(f"{r}D" for r in self._ranks)
            raise ValueError(f"expected {ranks} input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        return self._normalise(input, self._count_batch())

    def _count_batch(self) -> float:
        """Count a training batch; return the running statistics' update factor."""
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                # A public in-place op, which tapegrad.compile sees: its replay performs the
                # count again after each replayed forward (with momentum=None the count is read
                # below, and the step runs eagerly).
                self.num_batches_tracked.add_(1)
            # momentum=None: a cumulative moving average over the batches seen.
            factor = (1.0 / float(self.num_batches_tracked.item()) if self.momentum is None
                      else self.momentum)
        return factor

    def _normalise(self, input, factor: float):
        use_batch_stats = self.training or (self.running_mean is None
                                            and self.running_var is None)
        keep_running = not self.training or self.track_running_stats
        # (through F, the namespace: a vmap over the module reaches F's batching)
        return F.batch_norm(input, self.running_mean if keep_running else None,
                            self.running_var if keep_running else None, self.weight, self.bias,
                            use_batch_stats, factor, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L) inputs."""
    _ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W) inputs, per channel."""
    _ranks = (4,)


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation whose statistics, under data-parallel training, are gathered across
    the processes of ``process_group``.  Without a process group (or in eval mode) it computes
    exactly what PyTorch's does: plain batch normalisation over dim 1 of an input of any rank
    >= 2.  With one, PyTorch syncs only accelerator tensors and rejects CPU ones after counting
    the batch; every tapegrad tensor is on the CPU, so training mode raises the same error."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        if affine and not bias:
            self.register_parameter("bias", None)
        self.process_group = process_group

    def _check_input_dim(self, input) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input):
        self._check_input_dim(input)
        factor = self._count_batch()
        if self.training and distributed.is_initialized():
            raise ValueError("SyncBatchNorm expected input tensor to be on GPU or XPU or "
                             "privateuseone")
        return self._normalise(input, factor)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every batch-norm layer (itself included) replaced by a SyncBatchNorm
        sharing its parameters and running statistics."""
        converted = module
        if isinstance(module, _BatchNorm):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group)
            if module.affine:
                converted.weight = module.weight
                converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
            if hasattr(module, "qconfig"):
                converted.qconfig = module.qconfig
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted



def _register_affine(module, n: int, affine: bool, bias: bool, device, dtype) -> None:
    """The per-channel scale (ones) and shift (zeros) of a norm layer, or None entries when the
    layer has no affine part (or no bias), registered as PyTorch names them."""
    if affine:
        module.weight = Parameter(creation.ones(n, device=device, dtype=dtype))
        if bias:
            module.bias = Parameter(creation.zeros(n, device=device, dtype=dtype))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


class GroupNorm(Module):
    """Group normalisation: the channels split into num_groups groups, each normalised over its
    channels and the spatial dims, then a per-channel scale and shift (affine)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        check_device(device, allow_meta=True)
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _register_affine(self, num_channels, affine, bias, device, dtype)

    def reset_parameters(self) -> None:
        """The scale back to ones and the shift (if any) to zeros."""
        if self.affine:
            _reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _InstanceNorm(_NormBase):
    """Instance normalisation: each channel of each sample normalised over its spatial dims;
    optional per-channel affine and running statistics (used in eval mode when tracked).
    Subclasses name the batched rank; one less is an unbatched input."""

    _rank: int = 0
    _version = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        # PyTorch's defaults differ from batch norm's: no affine, no running statistics.
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def forward(self, input):
        if input.dim() not in (self._rank - 1, self._rank):
            raise ValueError(f"expected {self._rank - 1}D or {self._rank}D input (got "
                             f"{input.dim()}D input)")
        feature_dim = input.dim() - (self._rank - 1)      # 0 when unbatched
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You "
                          "can silence this warning by not passing in num_features, which is "
                          "not used because affine=False", UserWarning, stacklevel=2)
        unbatched = input.dim() == self._rank - 1
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats, self.momentum,
                              self.eps)
        return out.squeeze(0) if unbatched else out

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or unbatched (C, L) inputs."""
    _rank = 3


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or unbatched (C, H, W) inputs."""
    _rank = 4


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over (N, C, D, H, W) inputs, per channel."""
    _ranks = (5,)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or unbatched (C, D, H, W) inputs."""
    _rank = 5


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing ``normalized_shape`` dims, then a scale
    by ``weight`` (ones at first) when ``elementwise_affine`` (``F.rms_norm``; ``eps=None`` uses
    the input dtype's machine epsilon)."""

    def __init__(self, normalized_shape, eps: float | None = None,
                 elementwise_affine: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        check_device(device, allow_meta=True)
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.ones(self.normalized_shape, device=device,
                                                  dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        """Set the weight back to ones."""
        if self.weight is not None:
            with no_grad():
                self.weight.fill_(1.0)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class _ResponseNormalization(Module):
    """The parameters, and their repr, of the two cross-channel response normalisations: a
    window of `size` channels, out = x / (k + alpha * mean of squares) ** beta."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(_ResponseNormalization):
    """PyTorch's legacy cross-channel LRN of 4-D input (Lua torch's SpatialCrossMapLRN)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__(size, alpha, beta, k)

    def forward(self, input):
        return _cross_map_lrn2d.apply(input, self.size, self.alpha, self.beta, self.k)


class LocalResponseNorm(_ResponseNormalization):
    """Local response normalisation across neighbouring channels (``F.local_response_norm``)."""

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)
