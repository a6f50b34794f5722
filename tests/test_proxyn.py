"""Faults found by held-out proxy scripts (session proxyn), each checked against PyTorch.

torch.cuda on a machine without CUDA: JarvisLee0423/Pytorch_Practice's TorchNN.py tests
`if torch.cuda.is_available:` (never called, so always true) and then calls
`torch.cuda.set_device(0)`.  PyTorch's CPU build fails there with an AttributeError (its
`torch._C._cuda_setDevice` binding is absent), not the AssertionError of the functions that
initialise CUDA first; the memory-statistics functions have their own CPU-build answers.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg

CUDA_CALLS = [
    "set_device(0)", "set_device(1)", "set_device(-1)", "set_device('cuda:0')",
    "set_device(T.device('cuda', 1))", "set_device('cuda')", "set_device('cpu')",
    "set_device(None)", "set_device(1.5)",
    "reset_peak_memory_stats()", "reset_peak_memory_stats(0)", "reset_peak_memory_stats('cpu')",
    "reset_accumulated_memory_stats()", "reset_max_memory_allocated()",
    "reset_max_memory_cached('cuda:0')", "memory_snapshot()",
    "memory_stats()", "memory_stats('cpu')", "memory_stats_as_nested_dict()",
    "memory_summary()", "memory_summary(0, abbreviated=True)", "memory_summary('cpu')",
    "memory_cached()", "max_memory_cached()", "memory_allocated('cpu')",
    "set_per_process_memory_fraction(0.5)", "list_gpu_processes()", "utilization()",
]


def outcome(T, call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = ("value", repr(eval(f"T.cuda.{call}", {"T": T})))
        except Exception as e:              # noqa: BLE001  (the exception is the outcome)
            result = (type(e).__name__, str(e))
    return result, [(w.category.__name__, str(w.message)) for w in caught]


@pytest.mark.parametrize("call", CUDA_CALLS)
def test_cuda_call_matches_torch_cpu_build(torch, call):
    if torch.cuda.is_available():
        pytest.skip("the oracle must be a PyTorch build (or machine) without CUDA")
    assert outcome(tg, call) == outcome(torch, call)


def test_unchecked_is_available_then_set_device_raises_attribute_error():
    # The script's own guard: a script may catch exactly this type.
    with pytest.raises(AttributeError, match="_cuda_setDevice"):
        if tg.cuda.is_available:
            tg.cuda.set_device(0)


# -- channels_last results -------------------------------------------------------------------------
# kiyeonj21/deep-learning-pytorch-tutorial's cnn1.py feeds `images.permute(0, 3, 1, 2)` (NHWC
# numpy images, so a channels_last tensor) to Conv2d/MaxPool2d and then calls `x.view(-1, 6272)`.
# PyTorch allocates the convolution's and pooling's results in the input's channels_last layout,
# so that view raises; tapegrad returned row-major results and the view silently worked.


LAYOUT_OPS = {
    "conv2d": lambda T, x: T.nn.functional.conv2d(x, T.ones(2, 3, 3, 3, dtype=x.dtype), T.ones(2, dtype=x.dtype)),
    "conv2d_depthwise": lambda T, x: T.nn.functional.conv2d(x, T.ones(3, 1, 3, 3, dtype=x.dtype), groups=3),
    "conv2d_strided_padded": lambda T, x: T.nn.functional.conv2d(x, T.ones(4, 3, 3, 3, dtype=x.dtype),
                                                                 stride=2, padding=1),
    "conv_transpose2d": lambda T, x: T.nn.functional.conv_transpose2d(x, T.ones(3, 2, 2, 2, dtype=x.dtype),
                                                                      stride=2),
    "max_pool2d": lambda T, x: T.nn.functional.max_pool2d(x, 2),
    "max_pool2d_indices": lambda T, x: T.nn.functional.max_pool2d(x, 2, return_indices=True)[1],
    "avg_pool2d": lambda T, x: T.nn.functional.avg_pool2d(x, 2),
    "adaptive_avg_pool2d": lambda T, x: T.nn.functional.adaptive_avg_pool2d(x, 2),
    "adaptive_max_pool2d": lambda T, x: T.nn.functional.adaptive_max_pool2d(x, 3),
    "interpolate_nearest": lambda T, x: T.nn.functional.interpolate(x, scale_factor=2),
    "interpolate_bilinear": lambda T, x: T.nn.functional.interpolate(x, size=(5, 7), mode="bilinear"),
    # siblings: the other ops whose CPU kernels allocate in the input's suggested layout
    "pad_constant": lambda T, x: T.nn.functional.pad(x, (1, 2, 0, 1)),
    "pad_reflect": lambda T, x: T.nn.functional.pad(x, (1, 1, 2, 2), mode="reflect"),
    "pad_replicate": lambda T, x: T.nn.functional.pad(x, (1, 1, 1, 1), mode="replicate"),
    "batch_norm_batch_stats": lambda T, x: T.nn.functional.batch_norm(x, None, None, training=True),
    "batch_norm_module": lambda T, x: T.nn.BatchNorm2d(3, dtype=x.dtype)(x),
    "group_norm": lambda T, x: T.nn.functional.group_norm(x, 3),
    "pixel_unshuffle": lambda T, x: T.nn.functional.pixel_unshuffle(x, 2),
    "channel_shuffle": lambda T, x: T.nn.functional.channel_shuffle(
        T.cat([x, x], 1), 2),
    "conv3d_float64": lambda T, x: T.nn.functional.conv3d(_ndhwc(T, x), T.ones(2, 3, 2, 2, 2, dtype=x.dtype)),
    "conv3d_float32": lambda T, x: T.nn.functional.conv3d(_ndhwc(T, x).float(), T.ones(2, 3, 2, 2, 2)),
    "conv_transpose3d_float64": lambda T, x: T.nn.functional.conv_transpose3d(
        _ndhwc(T, x), T.ones(3, 2, 2, 2, 2, dtype=x.dtype)),
    "conv_transpose3d_float32": lambda T, x: T.nn.functional.conv_transpose3d(
        _ndhwc(T, x).float(), T.ones(3, 2, 2, 2, 2)),
    "max_pool3d": lambda T, x: T.nn.functional.max_pool3d(_ndhwc(T, x), 2),
    "max_pool3d_indices": lambda T, x: T.nn.functional.max_pool3d(_ndhwc(T, x), 2, return_indices=True)[1],
    "avg_pool3d_stays_row_major": lambda T, x: T.nn.functional.avg_pool3d(_ndhwc(T, x), 2),
    "interpolate_3d": lambda T, x: T.nn.functional.interpolate(_ndhwc(T, x), scale_factor=2),
}


def _ndhwc(T, x):
    """A 5-D channels_last_3d tensor made from x (N, C, H, W) by the same permute idiom: when x is
    row-major, the 5-D tensor is row-major too."""
    if x.is_contiguous():
        return x.unsqueeze(2).expand(-1, -1, 4, -1, -1).contiguous()
    return x.permute(0, 2, 3, 1).unsqueeze(1).expand(-1, 4, -1, -1, -1).contiguous().permute(0, 4, 1, 2, 3)


def _nhwc_input(T, dtype):
    data = np.random.RandomState(0).rand(2, 6, 6, 3)
    return T.tensor(data, dtype=dtype).permute(0, 3, 1, 2)


@pytest.mark.parametrize("name", sorted(LAYOUT_OPS))
@pytest.mark.parametrize("layout", ["channels_last", "contiguous"])
def test_result_layout_follows_input_as_torch(torch, name, layout):
    results = []
    for T in (tg, torch):
        x = _nhwc_input(T, T.float64)
        if layout == "contiguous":
            x = x.contiguous()
        out = LAYOUT_OPS[name](T, x)
        results.append((out.detach().numpy().copy(), out.stride(),
                        out.is_contiguous(), out.is_contiguous(memory_format=T.channels_last)))
    (tv, ts, tc, tcl), (pv, ps, pc, pcl) = results
    np.testing.assert_allclose(tv, pv, rtol=1e-6)
    assert (ts, tc, tcl) == (ps, pc, pcl)


def test_channels_last_weight_makes_conv_result_channels_last(torch):
    strides = []
    for T in (tg, torch):
        w = T.ones(2, 3, 3, 3).contiguous(memory_format=T.channels_last)
        strides.append(T.nn.functional.conv2d(T.ones(1, 3, 5, 5), w).stride())
    assert strides[0] == strides[1]


def test_view_of_channels_last_conv_output_raises_as_torch(torch):
    for T in (tg, torch):
        conv, pool = T.nn.Conv2d(3, 4, 3), T.nn.MaxPool2d(2)
        y = pool(conv(_nhwc_input(T, T.float32)))
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            y.view(-1, 16)
        assert y.reshape(2, -1).shape == (2, 16)


def test_gradients_through_channels_last_conv_and_pool_match_torch(torch):
    grads = []
    for T in (tg, torch):
        x = _nhwc_input(T, T.float64).requires_grad_()
        w = T.tensor(np.random.RandomState(1).rand(4, 3, 3, 3), requires_grad=True)
        y = T.nn.functional.max_pool2d(T.nn.functional.conv2d(x, w, padding=1), 2)
        y = T.nn.functional.interpolate(y, scale_factor=2, mode="bilinear")
        (y * T.arange(y.numel(), dtype=T.float64).reshape(y.shape)).sum().backward()
        grads.append((x.grad.numpy().copy(), w.grad.numpy().copy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_channels_last_conv_gradcheck():
    x = _nhwc_input(tg, tg.float64)[:, :, :4, :4].contiguous(memory_format=tg.channels_last)
    x.requires_grad_()
    w = tg.tensor(np.random.RandomState(2).rand(2, 3, 2, 2), requires_grad=True)
    assert tg.autograd.gradcheck(lambda a, b: tg.nn.functional.avg_pool2d(
        tg.nn.functional.conv2d(a, b), 2, stride=1), (x, w))
