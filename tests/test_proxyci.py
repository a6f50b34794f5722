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


def test_a_one_pixel_channels_last_input_still_suggests_its_layout():
    # numpy calls a (2, 8, 1, 1) array with strides (8, 1, 8, 8) C-contiguous as well
    t, g = _pair((2, 8, 1, 1))
    t, g = t.to(memory_format=torch.channels_last), g.to(memory_format=tg.channels_last)
    assert TF.max_pool2d(g, 1).stride() == F.max_pool2d(t, 1).stride() == (8, 1, 8, 8)


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
