"""Regressions found by the differential sweep of PyTorch's test/nn/test_convolution.py,
test_pooling.py, test_embedding.py and test_dropout.py (sweep31)."""
import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _raises_like(call_torch, call_tg):
    """Both raise the same exception type with the same message."""
    with pytest.raises(Exception) as expected:
        call_torch()
    with pytest.raises(type(expected.value)) as got:
        call_tg()
    assert str(got.value) == str(expected.value)


# -- embedding_bag -------------------------------------------------------------------------------

BAGS = np.array([[1, 3, 2], [0, 2, 1]])
WEIGHT = np.arange(12.0).reshape(4, 3) / 7


@pytest.mark.parametrize("padding_idx", [-6, -5, 4, 5])
def test_embedding_bag_refuses_a_padding_idx_outside_the_table(padding_idx):
    # SILENT before: the index was taken modulo the table size, so some other row was left out
    _raises_like(lambda: TF.embedding_bag(torch.tensor(BAGS), torch.tensor(WEIGHT),
                                          padding_idx=padding_idx),
                 lambda: F.embedding_bag(tg.tensor(BAGS), tg.tensor(WEIGHT),
                                         padding_idx=padding_idx))


@pytest.mark.parametrize("padding_idx", [-4, -1, 0, 3, "tensor"])
def test_embedding_bag_padding_idx_in_range_matches(padding_idx):
    def run(lib, fn):
        p = lib.tensor(2) if padding_idx == "tensor" else padding_idx
        w = lib.tensor(WEIGHT, requires_grad=True)
        out = fn(lib.tensor(BAGS), w, padding_idx=p, mode="mean")
        out.backward(lib.ones_like(out))
        return out.detach().numpy(), w.grad.numpy()
    for e, g in zip(run(torch, TF.embedding_bag), run(tg, F.embedding_bag)):
        np.testing.assert_allclose(g, e, rtol=1e-12)


def test_embedding_bag_padding_idx_of_a_wrong_type():
    for bad in (1.0, True):
        _raises_like(lambda: TF.embedding_bag(torch.tensor(BAGS), torch.tensor(WEIGHT),
                                              padding_idx=bad),
                     lambda: F.embedding_bag(tg.tensor(BAGS), tg.tensor(WEIGHT), padding_idx=bad))


def test_embedding_bag_refuses_floating_offsets():
    # SILENT before: float offsets were truncated to integers and the bags computed
    _raises_like(lambda: TF.embedding_bag(torch.tensor([1, 2, 3]), torch.tensor(WEIGHT),
                                          torch.tensor([0.0, 2.0])),
                 lambda: F.embedding_bag(tg.tensor([1, 2, 3]), tg.tensor(WEIGHT),
                                         tg.tensor([0.0, 2.0])))


@pytest.mark.parametrize("mode, padding_idx", [("sum", 0), ("mean", 0), ("max", None),
                                               ("max", 0), ("sum", None)])
@pytest.mark.parametrize("index", [[[-1, 1]], [[1, 11]]])
def test_embedding_bag_out_of_range_index_message(mode, padding_idx, index):
    # PyTorch's max mode and padding_idx kernels say "Expected idx >= 0 && idx < num_embeddings"
    _raises_like(lambda: TF.embedding_bag(torch.tensor(index), torch.ones(10, 2),
                                          padding_idx=padding_idx, mode=mode),
                 lambda: F.embedding_bag(tg.tensor(index), tg.ones(10, 2),
                                         padding_idx=padding_idx, mode=mode))


# -- feature dropout -----------------------------------------------------------------------------

def test_feature_alpha_dropout_refuses_a_1d_input():
    # SILENT before: F.feature_alpha_dropout of a 1-D input dropped single elements
    _raises_like(lambda: TF.feature_alpha_dropout(torch.ones(5), 0.5, True),
                 lambda: F.feature_alpha_dropout(tg.ones(5), 0.5, True))


@pytest.mark.parametrize("name", ["feature_dropout", "feature_alpha_dropout"])
@pytest.mark.parametrize("shape, p", [((3,), 0.0), ((3,), 1.0), ((0,), 0.5), ((), 1.0),
                                      ((3,), 0.5), ((), 0.5)])
def test_feature_dropout_checks_the_dims_only_when_it_draws(name, shape, p):
    # ATen returns the input (p == 0, no elements) or zeros (p == 1) before the check
    x = np.full(shape, 1.5)
    try:
        expected = getattr(torch, name)(torch.tensor(x), p, True)
    except RuntimeError as exc:
        with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
            getattr(tg, name)(tg.tensor(x), p, True)
        assert "at least 2 dimensions" in str(exc)
        return
    got = getattr(tg, name)(tg.tensor(x), p, True)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    if name == "feature_alpha_dropout":     # F's checks follow the same order
        np.testing.assert_array_equal(F.feature_alpha_dropout(tg.tensor(x), p, True).numpy(),
                                      TF.feature_alpha_dropout(torch.tensor(x), p, True).numpy())


# -- pooling with empty inputs -------------------------------------------------------------------

@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_of_an_empty_batch(nd):
    # raised a numpy ValueError (reshape(0, -1)) where PyTorch gives an empty result
    def run(lib, nn):
        x = lib.ones(0, 10, *([10] * nd), requires_grad=True)
        out, idx = getattr(nn, f"MaxPool{nd}d")(2, stride=2, return_indices=True)(x)
        up = getattr(nn, f"MaxUnpool{nd}d")(2, stride=2)(out, idx)
        up.sum().backward()
        return tuple(up.shape), tuple(x.grad.shape)
    assert run(tg, tg.nn) == run(torch, torch.nn)


@pytest.mark.parametrize("shape, kwargs", [
    ((0, 4, 50, 32), dict(kernel_size=3, output_ratio=(0.5, 0.5))),
    ((0, 50, 32), dict(kernel_size=3, output_ratio=(0.5, 0.5))),
    ((4, 5, 8, 8), dict(kernel_size=2, output_size=(0, 1))),
    ((2, 3, 8, 8), dict(kernel_size=2, output_size=(1, 0))),
])
def test_fractional_max_pool2d_empty_batch_or_output(shape, kwargs):
    def run(lib, fn):
        x = lib.ones(*shape, requires_grad=True)
        out, idx = fn(x, return_indices=True, **kwargs)
        out.sum().backward()
        return tuple(out.shape), tuple(idx.shape), str(idx.dtype), tuple(x.grad.shape)
    assert run(tg, F.fractional_max_pool2d) == run(torch, TF.fractional_max_pool2d)


@pytest.mark.parametrize("shape, kwargs", [
    ((0, 4, 20, 12, 12), dict(kernel_size=3, output_ratio=(0.5, 0.5, 0.5))),
    ((4, 5, 8, 8), dict(kernel_size=(3, 2, 2), output_size=(0, 1, 1))),
])
def test_fractional_max_pool3d_empty_batch_or_output(shape, kwargs):
    def run(lib, fn):
        out, idx = fn(lib.ones(*shape), return_indices=True, **kwargs)
        return tuple(out.shape), tuple(idx.shape)
    assert run(tg, F.fractional_max_pool3d) == run(torch, TF.fractional_max_pool3d)


@pytest.mark.parametrize("fn, shape", [
    ("fractional_max_pool2d", (1, 0, 50, 32)), ("fractional_max_pool2d", (2, 3, 0, 32)),
    ("fractional_max_pool3d", (1, 0, 20, 12, 12)), ("fractional_max_pool3d", (2, 0, 12, 12)),
])
def test_fractional_max_pool_refuses_empty_planes(fn, shape):
    # the 3-d pool silently returned an empty result for (1, 0, D, H, W)
    _raises_like(lambda: getattr(TF, fn)(torch.ones(*shape), 2, output_size=1),
                 lambda: getattr(F, fn)(tg.ones(*shape), 2, output_size=1))


@pytest.mark.parametrize("samples_shape", [(3, 3, 2), (1, 3, 2), (2, 4, 2), (2, 3, 3), (2, 3)])
def test_fractional_max_pool2d_random_samples_checks(samples_shape):
    # PyTorch takes more samples than the batch needs (the first N), as the 3-d pool
    samples = np.linspace(0.05, 0.95, int(np.prod(samples_shape))).reshape(samples_shape)
    x = np.arange(2 * 3 * 8 * 8, dtype=np.float64).reshape(2, 3, 8, 8) % 11

    def run(lib, fn):
        return fn(lib.tensor(x), 2, output_size=3, _random_samples=lib.tensor(samples))
    try:
        expected = run(torch, TF.fractional_max_pool2d)
    except RuntimeError:
        _raises_like(lambda: run(torch, TF.fractional_max_pool2d),
                     lambda: run(tg, F.fractional_max_pool2d))
        return
    np.testing.assert_array_equal(run(tg, F.fractional_max_pool2d).numpy(), expected.numpy())


# -- convolution ---------------------------------------------------------------------------------

@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_transpose_refuses_a_padding_mode_set_after_construction(nd):
    # SILENT before: padding_mode = "reflect" set on the module was ignored (zeros padding)
    def call(nn, lib):
        m = getattr(nn, f"ConvTranspose{nd}d")(2, 2, 3)
        m.padding_mode = "reflect"
        return m(lib.ones(1, 2, *([4] * nd)))
    _raises_like(lambda: call(torch.nn, torch), lambda: call(tg.nn, tg))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_transpose_module_values(nd):
    def run(nn, lib):
        m = getattr(nn, f"ConvTranspose{nd}d")(2, 3, 3, stride=2, output_padding=1).double()
        with lib.no_grad():
            m.weight.copy_(lib.tensor(np.linspace(-1, 1, m.weight.numel()).reshape(m.weight.shape)))
            m.bias.copy_(lib.tensor([0.5, -0.25, 1.0], dtype=lib.float64))
        x = lib.tensor(np.linspace(-2, 3, 2 * 4 ** nd).reshape(1, 2, *([4] * nd)))
        return m(x).detach().numpy()
    np.testing.assert_allclose(run(tg.nn, tg), run(torch.nn, torch), rtol=1e-12, atol=1e-12)


COMPLEX_CONVS = [
    ("conv1d", (2, 4, 7), (4, 2, 3), dict(groups=2, padding=1, stride=2)),
    ("conv2d", (2, 2, 5, 6), (3, 2, 3, 2), dict(padding="same", dilation=2)),
    ("conv3d", (1, 2, 4, 5, 4), (2, 2, 2, 3, 2), dict(padding=1)),
    ("conv_transpose1d", (2, 2, 5), (2, 3, 3), dict(stride=2, output_padding=1)),
    ("conv_transpose2d", (2, 4, 3, 4), (4, 1, 3, 2), dict(groups=2)),
    ("conv_transpose3d", (1, 2, 3, 3, 2), (2, 2, 2, 2, 2), dict(stride=2)),
]


def _complex(rs, shape):
    return rs.randn(*shape) + 1j * rs.randn(*shape)


@pytest.mark.parametrize("name, x_shape, w_shape, kwargs", COMPLEX_CONVS)
@pytest.mark.parametrize("with_bias", [False, True])
def test_complex_convolution_values_and_gradients(name, x_shape, w_shape, kwargs, with_bias):
    # raised NotImplementedError ("slow_conv2d_cpu" not implemented for 'ComplexDouble')
    rs = np.random.RandomState(0)
    x, w = _complex(rs, x_shape), _complex(rs, w_shape)
    out_channels = w_shape[0] if "transpose" not in name else w_shape[1] * kwargs.get("groups", 1)
    b = _complex(rs, (out_channels,))

    def run(lib):
        X, W = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        B = lib.tensor(b, requires_grad=True) if with_bias else None
        out = getattr(lib.nn.functional, name)(X, W, B, **kwargs)
        (out.abs() ** 2).sum().backward()
        grads = [X.grad.numpy(), W.grad.numpy()] + ([B.grad.numpy()] if with_bias else [])
        return out.detach().numpy(), grads, str(out.dtype), out.grad_fn.name()
    expected, got = run(torch), run(tg)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-10, atol=1e-12)
    for g, e in zip(got[1], expected[1]):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
    assert got[2:] == expected[2:]


@pytest.mark.parametrize("name, x_shape, w_shape, kwargs", COMPLEX_CONVS)
def test_complex_convolution_unbatched(name, x_shape, w_shape, kwargs):
    rs = np.random.RandomState(1)
    x, w = _complex(rs, x_shape[1:]), _complex(rs, w_shape)

    def run(lib):
        out = getattr(lib.nn.functional, name)(lib.tensor(x, requires_grad=True),
                                               lib.tensor(w), **kwargs)
        return out.detach().numpy(), out.grad_fn.name()
    expected, got = run(torch), run(tg)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-10, atol=1e-12)
    assert got[1] == expected[1]


@pytest.mark.filterwarnings("ignore:Complex modules are a new feature")
def test_complex_convolution_module_and_mixed_dtypes():
    rs = np.random.RandomState(2)
    x, w, b = _complex(rs, (1, 2, 5, 5)), _complex(rs, (3, 2, 3, 3)), _complex(rs, (3,))

    def run(nn, lib):
        m = nn.Conv2d(2, 3, 3, padding=1, padding_mode="circular").to(lib.complex128)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(w))
            m.bias.copy_(lib.tensor(b))
        return m(lib.tensor(x)).detach().numpy()
    np.testing.assert_allclose(run(tg.nn, tg), run(torch.nn, torch), rtol=1e-10)
    # a complex input with a real weight is still a dtype error (PyTorch's words differ)
    with pytest.raises(RuntimeError):
        TF.conv2d(torch.tensor(x), torch.tensor(w.real))
    with pytest.raises(RuntimeError):
        F.conv2d(tg.tensor(x), tg.tensor(w.real))


# -- in-place dropout into a view ----------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda F, lib, v: F.dropout(v, 1.0, True, inplace=True),
    lambda F, lib, v: lib.dropout_(v, 1.0, True),
])
def test_inplace_dropout_into_a_view_of_a_non_leaf(call):
    # raised "in-place operations on a view of a tensor that requires grad are not supported"
    # where PyTorch records the write on the base (CopySlices), as its mul_ does
    def run(lib, F):
        x = lib.tensor(np.arange(12.0).reshape(4, 3) - 5, requires_grad=True)
        y = x * 1.5
        out = call(F, lib, y[1:3])
        y.pow(2).sum().backward()
        return out._version, y.detach().numpy(), x.grad.numpy(), y.grad_fn.name()
    expected, got = run(torch, TF), run(tg, F)
    assert got[0] == expected[0] and got[3] == expected[3]
    np.testing.assert_array_equal(got[1], expected[1])
    np.testing.assert_array_equal(got[2], expected[2])


def test_inplace_dropout_into_a_view_of_a_leaf_still_refused():
    _raises_like(lambda: TF.dropout(torch.ones(4, 4, requires_grad=True)[1:3], 0.5, True, True),
                 lambda: F.dropout(tg.ones(4, 4, requires_grad=True)[1:3], 0.5, True, True))


# -- dropout layout and argument order -----------------------------------------------------------

def _is_contiguous_in(t, perm):
    return t.permute(*perm).is_contiguous()


@pytest.mark.parametrize("perm", [(0, 1, 2, 3), (0, 2, 3, 1), (3, 1, 0, 2), (1, 3, 2, 0)])
@pytest.mark.parametrize("shift", [(0, 0), (1, 1)])
def test_dropout_result_keeps_the_input_dim_order(perm, shift):
    # the result was always row-major; PyTorch's (empty_like) follows the input's dim order
    inverse = tuple(perm.index(d) for d in range(4))

    def run(lib, F):
        x = lib.ones(2, 3, 4, 5).permute(*perm).contiguous().permute(*inverse)
        x = x[shift[0]:, shift[1]:]
        out = F.dropout(x, 0.3, True)
        return _is_contiguous_in(out, perm), sorted(set(np.round(out.numpy().ravel(), 5)))
    assert run(tg, F) == run(torch, TF)


@pytest.mark.parametrize("memory_format", ["contiguous_format", "channels_last"])
def test_dropout_of_a_strided_input_keeps_its_memory_format(memory_format):
    def run(lib, F):
        fmt = getattr(lib, memory_format)
        x = lib.empty(2, 3, 3, 6, memory_format=fmt)[..., ::2]
        x.copy_(lib.ones(2, 3, 3, 3))
        out = F.dropout(x, 1e-10, True)
        return out.stride(), out.is_contiguous(memory_format=fmt), out.numpy().tolist()
    assert run(tg, F) == run(torch, TF)


@pytest.mark.parametrize("fn, shape", [("dropout1d", (2,)), ("dropout2d", (1, 2, 2)),
                                       ("dropout2d", (1, 2)), ("dropout3d", (2, 2))])
def test_channel_dropout_checks_p_before_the_rank(fn, shape):
    # a rank warning or error came before the ValueError for p
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _raises_like(lambda: getattr(TF, fn)(torch.ones(*shape), 2.0),
                     lambda: getattr(F, fn)(tg.ones(*shape), 2.0))


# -- adaptive pooling checks ---------------------------------------------------------------------

@pytest.mark.parametrize("fn, shape, size", [
    ("adaptive_max_pool1d", (2, 2, 2), 0x3FFFFFFFFFFFFFFF),
    ("adaptive_avg_pool1d", (2, 2, 2), 0x3FFFFFFFFFFFFFFF),
    ("adaptive_max_pool2d", (2, 2, 2), (0x3FFFFFFFFFFFFFFF, 4)),
    ("adaptive_max_pool1d", (1, 0, 4), 3),
    ("adaptive_max_pool1d", (1, 2, 0), 3),
    ("adaptive_avg_pool1d", (1, 2, 0), 3),
])
def test_adaptive_pool_size_errors(fn, shape, size):
    # an overflowing output size was numpy's ValueError ("array is too big"); the 1-d max pool's
    # empty-input error named the 2-d pool
    _raises_like(lambda: getattr(TF, fn)(torch.ones(*shape), size),
                 lambda: getattr(F, fn)(tg.ones(*shape), size))


def test_max_unpool2d_keeps_channels_last():
    x = np.random.RandomState(3).randn(2, 3, 9, 9)

    def run(lib, nn):
        inp = lib.tensor(x).contiguous(memory_format=lib.channels_last)
        out, ind = nn.MaxPool2d(3, stride=2, return_indices=True)(inp)
        out.requires_grad_()
        up = nn.MaxUnpool2d(3, stride=2)(out, ind)
        up.backward(lib.ones_like(up))
        return (up.is_contiguous(memory_format=lib.channels_last), up.detach().numpy(),
                out.grad.numpy())
    expected, got = run(torch, torch.nn), run(tg, tg.nn)
    assert got[0] == expected[0]
    np.testing.assert_array_equal(got[1], expected[1])
    np.testing.assert_array_equal(got[2], expected[2])


# -- torch.convolution, torch.conv_tbc (new public names) ----------------------------------------

@pytest.mark.parametrize("args", [
    ((1, 2, 5, 5), (3, 2, 3, 3), False, [1, 1], [0, 0], [1, 1], [0, 0], 1),
    ((1, 2, 5, 5), (2, 3, 3, 3), True, [2, 2], [1, 1], [1, 1], [1, 1], 1),
    ((2, 4, 7), (4, 2, 3), False, [2], [1], [2], [0], 2),
    ((1, 2, 3, 4, 3), (2, 2, 2, 2, 2), True, [1, 2, 1], [0, 1, 0], [1, 1, 2], [0, 1, 0], 1),
])
def test_torch_convolution(args):
    x_shape, w_shape, transposed, stride, padding, dilation, output_padding, groups = args
    rs = np.random.RandomState(4)
    x, w = rs.randn(*x_shape), rs.randn(*w_shape)

    def run(lib):
        X, W = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        out = lib.convolution(X, W, None, stride, padding, dilation, transposed, output_padding,
                              groups)
        out.backward(lib.ones_like(out))
        return out.detach().numpy(), X.grad.numpy(), W.grad.numpy(), out.grad_fn.name()
    expected, got = run(torch), run(tg)
    for g, e in zip(got[:3], expected[:3]):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
    assert got[3] == expected[3]


def test_torch_convolution_refuses_unbatched_input():
    _raises_like(lambda: torch.convolution(torch.ones(2, 5, 5), torch.ones(2, 3, 3, 3), None,
                                           [2, 2], [1, 1], [1, 1], True, [1, 1], 1),
                 lambda: tg.convolution(tg.ones(2, 5, 5), tg.ones(2, 3, 3, 3), None,
                                        [2, 2], [1, 1], [1, 1], True, [1, 1], 1))


@pytest.mark.parametrize("pad", [0, 1, 2])
def test_torch_conv_tbc(pad):
    rs = np.random.RandomState(5)
    x, w, b = rs.randn(5, 2, 3), rs.randn(3, 3, 4), rs.randn(4)

    def run(lib):
        X, W, B = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
        out = lib.conv_tbc(X, W, B, pad)
        out.backward(lib.tensor(np.linspace(-1, 1, out.numel()).reshape(out.shape)))
        return (out.detach().numpy(), X.grad.numpy(), W.grad.numpy(), B.grad.numpy(),
                out.grad_fn.name(), out.stride())
    expected, got = run(torch), run(tg)
    for g, e in zip(got[:4], expected[:4]):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
    assert got[4:] == expected[4:]
    _raises_like(lambda: torch.conv_tbc(torch.tensor(x[0]), torch.tensor(w), torch.tensor(b)),
                 lambda: tg.conv_tbc(tg.tensor(x[0]), tg.tensor(w), tg.tensor(b)))
