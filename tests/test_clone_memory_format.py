"""clone(memory_format=...) lays the copy out in that format, as PyTorch's (it was ignored: a
transposed tensor's contiguous_format clone kept the transposed strides, so its view(-1) raised
where PyTorch's works, and a channels_last clone stayed row-major)."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

SOURCES = {
    "row_major": lambda lib: lib.arange(24.).reshape(1, 2, 3, 4),
    "transposed": lambda lib: lib.arange(24.).reshape(1, 2, 3, 4).transpose(2, 3),
    "permuted": lambda lib: lib.arange(24.).reshape(1, 2, 3, 4).permute(0, 2, 1, 3),
    "channels_last": lambda lib: lib.arange(24.).reshape(1, 2, 3, 4).contiguous(
        memory_format=lib.channels_last),
    "strided": lambda lib: lib.arange(48.).reshape(1, 2, 3, 8)[..., ::2],
    "matrix_t": lambda lib: lib.arange(6.).reshape(2, 3).t(),
    "rank5": lambda lib: lib.arange(120.).reshape(1, 2, 3, 4, 5),
}
FORMATS = ["contiguous_format", "preserve_format", "channels_last", "channels_last_3d", None]


def _outcome(lib, source, fmt):
    x = SOURCES[source](lib).requires_grad_()
    try:
        y = x.clone() if fmt is None else x.clone(memory_format=getattr(lib, fmt))
    except RuntimeError as e:
        return ("RuntimeError", str(e))
    weights = lib.arange(float(y.numel())).reshape(y.shape)
    (y * weights).sum().backward()
    return (y.stride(), y.is_contiguous(), y.detach().numpy().tolist(), x.grad.numpy().tolist(),
            y.data_ptr() != x.data_ptr(), y.reshape(-1).data_ptr() == y.data_ptr())


@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("fmt", FORMATS)
def test_clone_memory_format_as_torch(source, fmt):
    assert _outcome(tg, source, fmt) == _outcome(torch, source, fmt)


def test_clone_memory_format_type_error():
    for lib in (tg, torch):
        with pytest.raises(TypeError, match="clone\\(\\): argument 'memory_format' must be "
                                            "torch.memory_format, not int"):
            lib.ones(2).clone(memory_format=1)


def test_contiguous_clone_of_a_transpose_views_flat():
    y = tg.arange(6.).reshape(2, 3).t().clone(memory_format=tg.contiguous_format)
    np.testing.assert_array_equal(y.view(-1).numpy(), [0., 3., 1., 4., 2., 5.])
