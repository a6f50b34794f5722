"""Image-classification training recipes (proxy corpus ci): the layouts PyTorch gives
channels_last tensors whose height and width are 1, as a global pool's output or a
(N, C, 1, 1) SE-block tensor moved with .to(memory_format=)."""
import pytest

import tapegrad as tg
import tapegrad.nn.functional as TF

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _pair(shape):
    values = torch.arange(float(torch.tensor(shape).prod())).reshape(shape)
    return values, tg.tensor(values.numpy())


@pytest.mark.parametrize("shape", [(2, 8, 1, 1), (2, 8, 1, 3), (2, 3, 4, 4), (1, 1, 1, 1)])
def test_to_and_clone_channels_last_allocate_dense_strides(shape):
    t, g = _pair(shape)
    for convert in (lambda x, m: x.to(memory_format=m.channels_last),
                    lambda x, m: x.clone(memory_format=m.channels_last)):
        expected, got = convert(t, torch), convert(g, tg)
        assert got.stride() == expected.stride()
        assert got.tolist() == expected.tolist()


def test_contiguous_keeps_a_tensor_that_already_reads_as_channels_last():
    t, g = _pair((2, 8, 1, 1))          # (8, 1, 1, 1) reads as both layouts
    assert (g.contiguous(memory_format=tg.channels_last).stride()
            == t.contiguous(memory_format=torch.channels_last).stride())


@pytest.mark.parametrize("pool", ["adaptive_avg_pool2d", "adaptive_max_pool2d", "avg_pool2d",
                                  "max_pool2d"])
def test_pools_to_one_pixel_allocate_channels_last_results(pool):
    t, g = _pair((2, 8, 4, 4))
    t = t.contiguous(memory_format=torch.channels_last)
    g = g.contiguous(memory_format=tg.channels_last)
    size = 1 if pool.startswith("adaptive") else 4
    expected, got = getattr(F, pool)(t, size), getattr(TF, pool)(g, size)
    assert got.stride() == expected.stride() == (8, 1, 8, 8)
    assert got.tolist() == expected.tolist()


_ONE_PIXEL_OPS = {
    "conv": lambda m, x: m.nn.Conv2d(8, 4, 1)(x),
    # (no depthwise 1x1 conv: PyTorch picks its kernel by thread count, and one thread gives a
    # row-major result, more threads a channels_last one)
    "depthwise_3x3": lambda m, x: m.nn.Conv2d(8, 8, 3, padding=1, groups=8)(x),
    "conv_transpose": lambda m, x: m.nn.ConvTranspose2d(8, 4, 1)(x),
    "group_norm": lambda m, x: m.nn.GroupNorm(2, 8)(x),
    "batch_norm": lambda m, x: m.nn.BatchNorm2d(8)(x),      # row-major: PyTorch's kernel
    "max_pool": lambda m, x: m.nn.functional.max_pool2d(x, 1),
    "adaptive_avg_pool": lambda m, x: m.nn.functional.adaptive_avg_pool2d(x, 1),
    "nearest": lambda m, x: m.nn.functional.interpolate(x, scale_factor=2),
    "bilinear": lambda m, x: m.nn.functional.interpolate(x, scale_factor=2, mode="bilinear"),
    "pad": lambda m, x: m.nn.functional.pad(x, (1, 1, 1, 1)),
    "pixel_shuffle": lambda m, x: m.nn.functional.pixel_shuffle(x, 2),
    "dropout2d": lambda m, x: m.nn.functional.dropout2d(x, 0.0),
}


@pytest.mark.parametrize("op", sorted(_ONE_PIXEL_OPS))
def test_a_one_pixel_channels_last_input_gives_pytorchs_layout(op):
    # numpy calls a (2, 8, 1, 1) array with strides (8, 1, 8, 8) C-contiguous as well, which
    # hid its layout from the ops that allocate by their input's
    t, g = _pair((2, 8, 1, 1))
    t, g = t.to(memory_format=torch.channels_last), g.to(memory_format=tg.channels_last)
    expected, got = _ONE_PIXEL_OPS[op](torch, t), _ONE_PIXEL_OPS[op](tg, g)
    assert got.stride() == expected.stride()
    assert got.shape == expected.shape


def test_layout_copies_carry_pytorchs_nodes_and_gradients():
    t, g = _pair((2, 3, 4, 4))
    t.requires_grad_()
    g.requires_grad_()
    outs = []
    for x, m in ((t, torch), (g, tg)):
        a = x.to(memory_format=m.channels_last)
        b = x.clone(memory_format=m.channels_last)
        c = x.contiguous(memory_format=m.channels_last)
        outs.append([type(v.grad_fn).__name__ for v in (a, b, c)])
        (a * 1 + b * 2 + c * 3).pow(2).sum().backward()
    assert outs[0] == outs[1] == ["ToCopyBackward0", "CloneBackward0", "CloneBackward0"]
    assert g.grad.tolist() == t.grad.tolist()


@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16, None])
def test_cpu_autocast_runs_float16_and_bfloat16(dtype):
    # (CPU autocast casts: tests/test_autocast38.py; bfloat16 is the default)
    x = tg.ones(2, 2)
    with tg.autocast("cpu", dtype=dtype):
        assert (x + 1).dtype == tg.float32
        assert (x @ x).dtype == (tg.float16 if dtype is tg.float16 else tg.bfloat16)
