"""Regressions found by the fifth argument-form sweep of nn.functional against PyTorch."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _both(make):
    """Run `make(lib)` with PyTorch and with tapegrad; return the two results."""
    return make(torch), make(tg)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("x_shape, grid_shape", [((0, 3, 5, 6), (0, 4, 7, 2)),
                                                 ((2, 0, 5, 6), (2, 4, 7, 2)),
                                                 ((0, 2, 3, 4, 5), (0, 1, 2, 3, 3))])
def test_grid_sample_empty_batch_or_channels(mode, x_shape, grid_shape):
    if mode == "bicubic" and len(x_shape) == 5:
        pytest.skip("bicubic is 4-d only")

    def run(lib):
        x = lib.zeros(x_shape, requires_grad=True)
        y = lib.nn.functional.grid_sample(x, lib.zeros(grid_shape), mode=mode,
                                          align_corners=False)
        y.sum().backward()
        return tuple(y.shape), tuple(x.grad.shape)
    a, b = _both(run)
    assert a == b


def _error(make, lib):
    try:
        make(lib)
    except Exception as e:              # noqa: BLE001 - the type is what is compared
        return type(e), str(e)
    return None


@pytest.mark.parametrize("kw", [dict(kernel_size=2, stride=0), dict(kernel_size=2, padding=-1),
                                dict(kernel_size=2, dilation=0, stride=0, padding=-1),
                                dict(kernel_size=2, stride=0, padding=-1),
                                dict(kernel_size=(2, 0))])
@pytest.mark.parametrize("op", ["unfold", "fold"])
def test_fold_unfold_bad_geometry_messages(op, kw):
    def run(lib):
        if op == "unfold":
            return lib.nn.functional.unfold(lib.zeros(2, 3, 7, 8), **kw)
        return lib.nn.functional.fold(lib.zeros(2, 12, 9), (4, 4), **kw)
    assert _error(run, torch) == _error(run, tg)


@pytest.mark.parametrize("size", [(2.0, 3), (("b", 2), ("c", 3)), 6])
def test_unflatten_rejects_non_int_sizes(size):
    assert _error(lambda lib: lib.nn.Unflatten(1, size), torch) == \
        _error(lambda lib: lib.nn.Unflatten(1, size), tg)


def test_unflatten_keeps_sizes_as_given():
    assert repr(tg.nn.Unflatten(1, [2, 3])) == repr(torch.nn.Unflatten(1, [2, 3]))
    assert tuple(tg.nn.Unflatten(1, [2, -1])(tg.zeros(2, 6)).shape) == (2, 2, 3)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [False, True])
@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_uint8_weighted_modes(mode, antialias, align_corners):
    # Was silently all zeros: the fractional weights were cast to uint8.  PyTorch's uint8 kernels
    # work in fixed point, so a pixel may differ by a unit or two; the dtype and the picture agree.
    image = np.random.default_rng(0).integers(0, 256, (2, 3, 9, 7))

    def run(lib):
        return lib.nn.functional.interpolate(lib.tensor(image, dtype=lib.uint8), size=(5, 11),
                                             mode=mode, antialias=antialias,
                                             align_corners=align_corners)
    a, b = _both(run)
    assert b.dtype == tg.uint8
    diff = np.abs(a.numpy().astype(int) - b.numpy().astype(int))
    assert diff.max() <= 2 and diff.mean() < 0.2


@pytest.mark.parametrize("shape, pad, mode, value", [
    ((2, 3, 4, 5), (1,) * 10, "reflect", None),          # longer than twice the rank
    ((5,), (1, -1, -2, 1), "circular", None),
    ((2, 3, 4, 5), (1, 2), "replicate", 3.0),            # value refused before the rank check
    ((2, 3, 4, 5), (1, 1), "reflect", 0.0),
])
def test_pad_non_constant_check_order(shape, pad, mode, value):
    def run(lib):
        return lib.nn.functional.pad(lib.zeros(shape), pad, mode, value)
    assert _error(run, torch) == _error(run, tg)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_bool_input(mode):
    def run(lib):
        return lib.nn.functional.pad(lib.zeros((2, 3, 4, 5), dtype=lib.bool), (1, 1, 1, 1), mode)
    a, b = _error(run, torch), _error(run, tg)
    assert (a and a[0]) == (b and b[0])


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_channels_last_layout(mode):
    def run(lib):
        x = lib.arange(120.).reshape(2, 3, 4, 5).contiguous(memory_format=lib.channels_last)
        y = lib.nn.functional.pad(x, (1, 2, 0, 1), mode)
        return y.is_contiguous(), y.is_contiguous(memory_format=lib.channels_last), y.numpy()
    a, b = _both(run)
    assert a[:2] == b[:2]
    np.testing.assert_array_equal(a[2], b[2])


@pytest.mark.parametrize("cls, rank", [("CircularPad1d", 4), ("CircularPad2d", 5),
                                       ("CircularPad3d", 6)])
def test_circular_pad_module_rank_error(cls, rank):
    def run(lib):
        return getattr(lib.nn, cls)(1)(lib.zeros((4,) * rank))
    assert _error(run, torch) == _error(run, tg)


@pytest.mark.parametrize("kw", [dict(kernel_size=2, output_size=3),
                                dict(kernel_size=(2, 3, 1), output_size=(5, 4, 8)),
                                dict(kernel_size=(1, 2, 3), output_ratio=(0.3, 0.6, 0.5))])
def test_fractional_max_pool3d_matches_torch(kw):
    data = np.random.default_rng(3).standard_normal((2, 3, 7, 8, 9))
    samples = np.random.default_rng(4).uniform(0, 1, (2, 3, 3))

    def run(lib):
        x = lib.tensor(data, requires_grad=True)
        pool = lib.nn.FractionalMaxPool3d(return_indices=True,
                                          _random_samples=lib.tensor(samples), **kw)
        y, index = pool(x)
        weights = lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))
        (grad,) = lib.autograd.grad((y * weights).sum(), [x])
        return y.detach().numpy(), index.numpy(), grad.numpy()
    for a, b in zip(*_both(run)):
        np.testing.assert_allclose(a, b)


@pytest.mark.parametrize("make", [
    lambda lib: lib.nn.functional.fractional_max_pool3d(lib.zeros(2, 3, 7, 8, 9), 2, output_size=(6, 3, 3)),
    lambda lib: lib.nn.functional.fractional_max_pool3d(lib.zeros(2, 3, 7, 8, 9), 2, output_size=3,
                                                        _random_samples=lib.rand(1, 3, 3)),
    lambda lib: lib.nn.functional.fractional_max_pool3d(lib.zeros(2, 3, 7, 8, 9, dtype=lib.int64), 2,
                                                        output_size=3, _random_samples=lib.rand(2, 3, 3)),
    lambda lib: lib.nn.functional.fractional_max_pool3d(lib.zeros(1, 1, 2, 3, 7, 8), 2, output_size=2),
    lambda lib: lib.nn.functional.fractional_max_pool3d(lib.zeros(2, 7, 8), 2, output_size=2),
])
def test_fractional_max_pool3d_errors(make):
    a, b = _error(make, torch), _error(make, tg)
    assert a == b


@pytest.mark.parametrize("norm_type", [float("inf"), 1.0, 3.0, 0.5])
def test_embedding_max_norm_any_norm_type(norm_type):
    # Was silently wrong for inf: the power-sum formula gives a norm of 1 for every row.
    table = np.random.default_rng(6).standard_normal((10, 4)) * 2

    def run(lib):
        weight = lib.tensor(table)
        out = lib.nn.functional.embedding(lib.tensor([[1, 2, 4], [4, 9, 0]]), weight,
                                          max_norm=1.5, norm_type=norm_type)
        return out.numpy(), weight.numpy()
    for a, b in zip(*_both(run)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_max_norm_renorms_padding_row_too(mode):
    # Was silently different: PyTorch renorms every row the input names, padding_idx's included.
    table = np.random.default_rng(6).standard_normal((10, 4)) * 2

    def run(lib):
        weight = lib.tensor(table)
        out = lib.nn.functional.embedding_bag(lib.tensor([1, 2, 4, 5, 4, 3, 2, 9]), weight,
                                              lib.tensor([0, 3, 3, 6]), max_norm=1.0,
                                              mode=mode, padding_idx=2)
        return out.numpy(), weight.numpy()
    for a, b in zip(*_both(run)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("kw", [dict(scale_grad_by_freq=True), dict(sparse=True)])
def test_embedding_bag_max_mode_refusals(kw):
    def run(lib):
        return lib.nn.functional.embedding_bag(lib.tensor([1, 2]), lib.zeros(5, 3),
                                               lib.tensor([0]), mode="max", **kw)
    assert _error(run, torch) == _error(run, tg)


@pytest.mark.parametrize("dtype", ["int64", "uint8", "int16"])
def test_max_pool3d_integer_input_with_padding(dtype):
    data = np.random.default_rng(8).integers(0, 100, (1, 2, 3, 7, 8))

    def run(lib):
        x = lib.tensor(data, dtype=getattr(lib, dtype))
        out, index = lib.nn.functional.max_pool3d(x, 3, 2, 1, return_indices=True)
        return out.numpy(), index.numpy()
    for a, b in zip(*_both(run)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("make", [
    lambda lib: lib.nn.functional.max_pool1d(lib.arange(66).reshape(2, 3, 11), 3),
    lambda lib: lib.nn.functional.max_pool1d(lib.arange(66, dtype=lib.uint8).reshape(2, 3, 11), 3, padding=1),
    lambda lib: lib.nn.functional.max_unpool1d(lib.ones(1, 2, 2, dtype=lib.int64), lib.zeros(1, 2, 2, dtype=lib.int64), 2),
    lambda lib: lib.nn.functional.max_unpool2d(lib.ones(1, 2, 2, 2, dtype=lib.uint8), lib.zeros(1, 2, 2, 2, dtype=lib.int64), 2),
    lambda lib: lib.nn.functional.max_unpool3d(lib.ones(1, 2, 2, 2, 2, dtype=lib.int32), lib.zeros(1, 2, 2, 2, 2, dtype=lib.int64), 2),
    lambda lib: lib.nn.functional.max_unpool2d(lib.ones(1, 1, 2, 2, dtype=lib.complex64), lib.zeros(1, 1, 2, 2, dtype=lib.int64), 2),
])
def test_integer_max_pool1d_and_unpool_refused(make):
    assert _error(make, torch) == _error(make, tg)


def test_max_pool1d_integer_with_indices_still_works():
    def run(lib):
        out, index = lib.nn.functional.max_pool1d(lib.arange(66).reshape(2, 3, 11) % 7, 3,
                                                  return_indices=True)
        return out.numpy(), index.numpy()
    for a, b in zip(*_both(run)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("mask_shape", [(6,), ()])
def test_sdpa_mask_of_fewer_than_two_dims(mask_shape):
    def run(lib):
        return lib.nn.functional.scaled_dot_product_attention(
            lib.zeros(2, 3, 4, 5), lib.zeros(2, 3, 6, 5), lib.zeros(2, 3, 6, 2),
            attn_mask=lib.zeros(mask_shape))
    assert _error(run, torch) == _error(run, tg)


@pytest.mark.parametrize("kpm_shape", [(2, 4), (3, 4), (5, 2)])
def test_mha_key_padding_mask_shape_message(kpm_shape):
    def run(lib):
        attention = lib.nn.MultiheadAttention(8, 2)
        x = lib.zeros(5, 2, 8)
        return attention(x, x, x, key_padding_mask=lib.zeros(kpm_shape, dtype=lib.bool))
    assert _error(run, torch) == _error(run, tg)


@pytest.mark.parametrize("shapes", [((2, 1, 1), (2, 2, 1), (2, 2, 2)), ((2, 4, 5), (2, 6, 5), (2, 6, 2)),
                                    ((1, 2, 3, 4, 5), (1, 2, 3, 6, 5), (1, 2, 3, 6, 2))])
@pytest.mark.parametrize("mask_shape", [(), (6,), (2,), (1,)])
def test_sdpa_low_rank_mask_other_query_ranks(shapes, mask_shape):
    def run(lib):
        q, k, v = (lib.ones(s) for s in shapes)
        return lib.nn.functional.scaled_dot_product_attention(q, k, v,
                                                              attn_mask=lib.zeros(mask_shape))
    a, b = _error(run, torch), _error(run, tg)
    assert (a and a[0]) == (b and b[0])


@pytest.mark.parametrize("op, size", [("adaptive_avg_pool2d", (3, 4)), ("adaptive_avg_pool1d", 4),
                                      ("adaptive_avg_pool3d", (2, 3, 4))])
def test_adaptive_avg_pool_uneven_windows_gradient_is_contiguous(op, size):
    # autograd.grad handed back a strided slice of a padded buffer, so .view(-1) failed
    nd = 1 if isinstance(size, int) else len(size)
    shape = (2, 3) + (5, 7, 9)[:nd]

    def run(lib):
        x = lib.ones(shape, requires_grad=True)
        (grad,) = lib.autograd.grad(getattr(lib.nn.functional, op)(x, size).sum(), [x])
        return grad.is_contiguous(), grad.view(-1).numpy()
    a, b = _both(run)
    assert a[0] == b[0]
    np.testing.assert_allclose(a[1], b[1], rtol=1e-6)
