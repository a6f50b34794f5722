"""HistogramObserver: keeps a running histogram (2048 bins by default) of everything observed,
and picks the clipping range [min, max] that minimises the L2 quantisation error of that
histogram (outliers in the tails are cut off when that lowers the error); the scale and zero
point of that range are then the min/max observers'.

The histogram follows the observed range: when a new tensor widens it, the old histogram is
spread onto the new bins (each old bin split into 16 equal parts placed by their centres).
The search walks the range inwards from the tail holding less mass, in steps of 1e-5 of the
total count, and stops when the error starts to grow (caffe2's norm minimisation, as PyTorch).
The search runs on float32 numpy arrays with PyTorch's float32 arithmetic, so the clipping
range, hence the scale, is PyTorch's."""
from __future__ import annotations

import warnings

import numpy as np

import tapegrad as torch

from .observer import UniformQuantizationObserverBase, is_per_tensor

__all__ = ["HistogramObserver"]

_F32 = np.float32


def _l2_norm(delta_begin, delta_end, density):
    # The squared error of values spread uniformly (with this density) over
    # [delta_begin, delta_end] around their quantized value: density * (end^3 - begin^3) / 3.
    return density * ((delta_end * delta_end * delta_end
                       - delta_begin * delta_begin * delta_begin) / _F32(3))


class HistogramObserver(UniformQuantizationObserverBase):
    histogram: torch.Tensor
    min_val: torch.Tensor
    max_val: torch.Tensor

    def __init__(self, bins: int = 2048, dtype=torch.quint8, qscheme=torch.per_tensor_affine,
                 reduce_range=False, quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=torch.finfo(torch.float32).eps, is_dynamic=False, **kwargs):
        if not is_per_tensor(qscheme):
            raise NotImplementedError(
                "HistogramObserver's qscheme only support torch.per_tensor_symmetric "
                "                    and torch.per_tensor_affine.")
        if is_dynamic:
            raise NotImplementedError("HistogramObserver doesn't support dynamic quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max,
                         factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.bins = bins
        self.register_buffer("histogram", torch.zeros(self.bins))
        self.register_buffer("min_val", torch.tensor(float("inf")))
        self.register_buffer("max_val", torch.tensor(float("-inf")))
        self.dst_nbins = 2 ** torch.iinfo(self.dtype).bits
        # How finely an old bin is split when the histogram is spread onto a wider range.
        self.upsample_rate = 16

    # -- observing --------------------------------------------------------------------------
    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach()
        x_min, x_max = torch.aminmax(x)
        if x_min == -torch.inf or x_max == torch.inf:
            warnings.warn("torch.inf detected in input tensor, ignoring input", stacklevel=2)
            x = x[x.abs() != torch.inf]
            if x.numel() == 0:
                return x_orig
            x_min, x_max = torch.aminmax(x)
        if self.min_val == float("inf") or self.max_val == float("-inf"):
            self._store(torch.histc(x, self.bins, min=x_min, max=x_max), x_min, x_max)
            return x_orig
        new_min = torch.min(self.min_val, x_min)
        new_max = torch.max(self.max_val, x_max)
        update = torch.histc(x, self.bins, min=new_min, max=new_max)
        if new_min == self.min_val and new_max == self.max_val:
            self._store(self.histogram + update, new_min, new_max)
        else:
            self._store(update + self._respread(new_min, new_max), new_min, new_max)
        return x_orig

    def _store(self, histogram, min_val, max_val) -> None:
        for buffer, value in ((self.histogram, histogram.to(self.histogram.dtype)),
                              (self.min_val, min_val), (self.max_val, max_val)):
            if buffer.shape != value.shape:
                buffer.resize_(value.shape)
            buffer.copy_(value)

    def _respread(self, new_min, new_max):
        """The current histogram over [min_val, max_val] moved onto `bins` bins over the wider
        [new_min, new_max]."""
        old_min, old_max = self.min_val, self.max_val
        if old_min == old_max:
            # All mass at one point: it lands in that point's new bin.
            return torch.histc(old_min, bins=self.bins, min=new_min, max=new_max) \
                * torch.sum(self.histogram)
        fine = self.bins * self.upsample_rate
        pieces = self.histogram.repeat_interleave(self.upsample_rate) / self.upsample_rate
        piece_width = (old_max - old_min) / fine
        centres = torch.linspace(old_min, old_max, fine + 1)[:-1] + 0.5 * piece_width
        edges = torch.linspace(new_min, new_max, self.bins + 1)
        target = (torch.bucketize(centres, edges, right=True) - 1).clamp(0, self.bins - 1)
        return torch.bincount(target, weights=pieces, minlength=self.bins)

    # -- choosing the range -----------------------------------------------------------------
    def _quantization_error(self, start_bin: int, end_bin: int) -> float:
        """The L2 error of quantizing the histogram with [start_bin, end_bin] as the range."""
        bin_width = (self.max_val.item() - self.min_val.item()) / self.bins
        dst_bin_width = bin_width * (end_bin - start_bin + 1) / self.dst_nbins
        if dst_bin_width == 0.0:
            return 0.0
        width, dst_width = _F32(bin_width), _F32(dst_bin_width)
        last_dst = _F32(self.dst_nbins - 1)
        src_begin = (np.arange(self.bins) - start_bin).astype(_F32) * width
        src_end = src_begin + width
        dst_of_begin = np.clip(np.floor(src_begin / dst_width), _F32(0), last_dst)
        dst_of_end = np.clip(np.floor(src_end / dst_width), _F32(0), last_dst)
        density = self._histogram_np / width
        half = _F32(dst_bin_width / 2)
        # The source bin's first part (up to its first quantized bin's end), the quantized bins
        # it covers whole, and its last part.
        norm = _l2_norm(src_begin - (dst_of_begin + _F32(0.5)) * dst_width, half, density)
        norm = norm + (dst_of_end - dst_of_begin - _F32(1)) * _l2_norm(-half, half, density)
        norm = norm + _l2_norm(-half, src_end - (dst_of_end * dst_width + half), density)
        return float(norm.sum(dtype=_F32))

    def _non_linear_param_search(self):
        if self.histogram.size()[0] != self.bins:
            raise AssertionError("bins mismatch")
        self._histogram_np = self.histogram.numpy().astype(_F32)
        bin_width = (self.max_val - self.min_val) / self.bins
        total = float(self._histogram_np.sum(dtype=_F32))
        cumulative = np.cumsum(self._histogram_np, dtype=_F32)
        stepsize = 1e-5
        alpha, beta = 0.0, 1.0  # the fractions of the mass below / above the range
        start_bin, end_bin = 0, self.bins - 1
        norm_min = float("inf")
        while alpha < beta:
            next_alpha, next_beta = alpha + stepsize, beta - stepsize
            low_limit, high_limit = _F32(next_alpha * total), _F32(next_beta * total)
            left, right = start_bin, end_bin
            while left < end_bin and cumulative[left] < low_limit:
                left += 1
            while right > start_bin and cumulative[right] > high_limit:
                right -= 1
            next_start, next_end = start_bin, end_bin
            # Cut the tail that moves less far for the same mass.
            if (left - start_bin) > (end_bin - right):
                next_start, alpha = left, next_alpha
            else:
                next_end, beta = right, next_beta
            if next_start == start_bin and next_end == end_bin:
                continue
            norm = self._quantization_error(next_start, next_end)
            if norm > norm_min:
                break
            norm_min = norm
            start_bin, end_bin = next_start, next_end
        del self._histogram_np
        return self.min_val + bin_width * start_bin, self.min_val + bin_width * (end_bin + 1)

    def calculate_qparams(self):
        if self.min_val == float("inf") and self.max_val == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams.                    "
                          "                Returning default scale and zero point ",
                          stacklevel=2)
            return torch.tensor([1.0]), torch.tensor([0])
        if self.bins != len(self.histogram):
            raise AssertionError(
                "The number of bins in histogram should be equal to the number of bins "
                "supplied while making this observer")
        return self._calculate_qparams(*self._non_linear_param_search())

    def reset_min_max_vals(self):
        self.min_val.copy_(torch.tensor(float("inf")))
        self.max_val.copy_(torch.tensor(float("-inf")))

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"


# Scripts (and qconfig reprs) know it as a member of the observer module.
HistogramObserver.__module__ = "tapegrad.ao.quantization.observer"
default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
