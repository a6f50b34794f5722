"""What the session-20 held-out proxy (bat67's Udacity notebooks, metehancekic's adversarial
CIFAR/MNIST research code, venkatKrishnan86's tutorials) found tapegrad doing differently from
PyTorch, each checked against torch."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


def _outcome(fn):
    """(exception type name, message) of fn(), or ('ok', result)."""
    try:
        return "ok", fn()
    except Exception as e:      # noqa: BLE001 - the exception is what is compared
        return type(e).__name__, str(e)


# -- x.type(torch.Tensor): the default tensor type (metehancekic's GaborConv2d: --------------------
# -- (-torch.randint(0, 5, shape)).type(torch.Tensor)) ---------------------------------------------

def _type_to_tensor(lib):
    x = lib.tensor([1, 2])
    out = [str(x.type(lib.Tensor).dtype), str(x.type("torch.Tensor").dtype)]
    f64 = lib.tensor([1.5], dtype=lib.float64)
    out.append(str(f64.type(lib.Tensor).dtype))
    old = lib.get_default_dtype()
    lib.set_default_dtype(lib.float64)
    try:
        out.append(str(x.type(lib.Tensor).dtype))
        out.append(f64.type(lib.Tensor) is f64)
    finally:
        lib.set_default_dtype(old)
    out.append(x.type(lib.Tensor).tolist())
    return out


def test_type_of_tensor_class_is_default_dtype():
    got = _type_to_tensor(tg)
    assert got == ["torch.float32", "torch.float32", "torch.float32", "torch.float64", True,
                   [1.0, 2.0]]


def test_type_of_tensor_class_matches_torch(torch):
    assert _type_to_tensor(tg) == _type_to_tensor(torch)


def test_type_of_tensor_class_keeps_the_graph(torch):
    for lib in (tg, torch):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = x.type(lib.Tensor)
        (y * y).sum().backward()
        assert x.grad.tolist() == [2.0, 4.0]
        assert y.dtype == lib.float32


def _type_errors(lib):
    x = lib.tensor([1, 2])
    return [_outcome(lambda t=t: x.type(t)) for t in
            (lib.nn.Parameter, lib.nn.Linear, int, np.ndarray)]


def test_type_invalid_class_names_match_torch(torch):
    got, want = _type_errors(tg), _type_errors(torch)
    assert [g[0] for g in got] == [w[0] for w in want] == ["ValueError"] * 4
    assert [g[1] for g in got] == [w[1] for w in want]


# -- conv with a weight of the wrong rank: PyTorch's words (metehancekic's GaussianConv2d ---------
# -- passes a 2-d kernel to F.conv2d) --------------------------------------------------------------

_CONV_CASES = [
    ("conv2d", (2, 1, 8, 8), (5, 5)),
    ("conv2d", (2, 1, 8, 8), (5,)),
    ("conv2d", (2, 1, 8, 8), (1, 1, 1, 3, 3)),
    ("conv1d", (2, 1, 8), (5, 5)),
    ("conv1d", (2, 1, 8), (1, 1, 3, 3)),
    ("conv1d", (1, 8), (1, 1, 3, 3)),
    ("conv1d", (2, 1, 8), (1, 1, 1, 3, 3)),
    ("conv_transpose1d", (2, 1, 8), (1, 1, 3, 3)),
    ("conv_transpose2d", (2, 1, 8, 8), (5, 5)),
    ("conv3d", (1, 1, 4, 4, 4), (3, 3)),
    ("conv3d", (1, 1, 4, 4, 4), (1, 1, 3, 3)),
]


@pytest.mark.parametrize("fn,xs,ws", _CONV_CASES)
def test_conv_weight_rank_errors_match_torch(torch, fn, xs, ws):
    def run(lib):
        return _outcome(lambda: getattr(lib.nn.functional, fn)(lib.ones(xs), lib.ones(ws)))
    got, want = run(tg), run(torch)
    assert got[0] == want[0] == "RuntimeError"
    assert got[1] == want[1]


# -- F.interpolate(mode='bicubic') (metehancekic's resize_decoder) ---------------------------------

_BICUBIC = [
    dict(size=(7, 9)), dict(size=(3, 4)), dict(size=(5, 6)), dict(scale_factor=1.7),
    dict(scale_factor=(0.6, 2.5)), dict(size=(1, 1)), dict(size=(11, 2)),
    dict(scale_factor=2.0, recompute_scale_factor=True),
]


@pytest.mark.parametrize("kw", _BICUBIC)
@pytest.mark.parametrize("align_corners", [False, True])
def test_bicubic_matches_torch_forward_and_backward(torch, kw, align_corners):
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((2, 3, 5, 6))
    outs = []
    for lib in (tg, torch):
        x = lib.tensor(x0, requires_grad=True)
        y = lib.nn.functional.interpolate(x, mode="bicubic", align_corners=align_corners, **kw)
        g = np.random.default_rng(1).standard_normal(tuple(y.shape))
        y.backward(lib.tensor(g))
        outs.append((y.detach().numpy(), x.grad.numpy()))
    (y, gx), (ty, tgx) = outs
    assert y.shape == ty.shape
    np.testing.assert_allclose(y, ty, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx, tgx, rtol=1e-12, atol=1e-12)


def test_bicubic_gradient_is_finite_differences(gradcheck):
    rng = np.random.default_rng(2)
    gradcheck(lambda x: tg.nn.functional.interpolate(x, size=(6, 4), mode="bicubic") ** 2,
              rng.standard_normal((1, 2, 4, 5)))
    gradcheck(lambda x: tg.nn.functional.interpolate(x, scale_factor=1.5, mode="bicubic",
                                                     align_corners=True).sin(),
              rng.standard_normal((1, 1, 3, 3)))


def test_bicubic_float32_and_module(torch):
    x0 = np.random.default_rng(3).random((2, 3, 8, 8), dtype=np.float32)
    outs = []
    for lib in (tg, torch):
        up = lib.nn.Upsample(scale_factor=2, mode="bicubic")
        y = up(lib.tensor(x0))
        outs.append((str(y.dtype), y.numpy()))
    assert outs[0][0] == outs[1][0] == "torch.float32"
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-5, atol=1e-6)


def test_bicubic_nonfinite_reaches_what_torch_reaches(torch):
    data = [[[[1.0, float("inf"), 3.0], [4.0, 5.0, 6.0]]]]
    got = tg.nn.functional.interpolate(tg.tensor(data), size=(2, 3), mode="bicubic")
    want = torch.nn.functional.interpolate(torch.tensor(data), size=(2, 3), mode="bicubic")
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("shape,size", [((2, 3, 4, 5, 3), (3, 7, 2)), ((1, 2, 3, 3, 3), (5, 5, 5))])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "trilinear", "area"])
def test_interpolate_5d_matches_torch(torch, shape, size, mode):
    x0 = np.random.default_rng(4).standard_normal(shape)
    outs = []
    for lib in (tg, torch):
        x = lib.tensor(x0, requires_grad=True)
        y = lib.nn.functional.interpolate(x, size=size, mode=mode)
        y.backward(lib.tensor(np.random.default_rng(5).standard_normal(tuple(y.shape))))
        outs.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-12, atol=1e-12)


def test_trilinear_gradient_is_finite_differences(gradcheck):
    gradcheck(lambda x: tg.nn.functional.interpolate(x, scale_factor=1.5, mode="trilinear",
                                                     align_corners=True) ** 2,
              np.random.default_rng(6).standard_normal((1, 1, 2, 3, 2)))


def _interp_errors(lib):
    F = lib.nn.functional
    out = []
    for mode in ["nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear",
                 "area", "lanczos"]:
        for shape in [(2, 3), (2, 3, 4), (2, 3, 4, 5), (2, 1, 4, 5), (2, 3, 4, 5, 3)]:
            nd = len(shape) - 2
            for dt in [lib.int64, lib.int32, lib.uint8, lib.bool, lib.float64]:
                def call():
                    return str(F.interpolate(lib.ones(shape, dtype=dt), size=(3,) * max(nd, 1),
                                             mode=mode).dtype)
                out.append((mode, shape, str(dt)) + _outcome(call))
            if nd >= 1:
                zero = (2,) * (nd - 1) + (0,)
                out.append((mode, shape, "zero") + _outcome(
                    lambda: F.interpolate(lib.ones(shape), size=zero, mode=mode).shape))
    out.append(_outcome(lambda: F.interpolate(lib.ones(1, 1, 3, 4), size=2, mode="lanczos",
                                              align_corners=True)))
    out.append(_outcome(lambda: F.interpolate(lib.ones(1, 1, 3, 4, 2), size=2, mode="trilinear",
                                              antialias=True)))
    return [tuple(map(str, o)) for o in out]


def test_interpolate_dtype_rank_and_size_errors_match_torch(torch):
    got, want = _interp_errors(tg), _interp_errors(torch)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g[:-1] == w[:-1], (g, w)
        if w[-2] != "ok" or "Size" not in w[-1]:
            assert g == w


# -- "X not implemented for 'T'" is PyTorch's NotImplementedError (was RuntimeError) ----------------

def _dispatch_errors(lib):
    F = lib.nn.functional
    cases = [
        lambda: F.conv2d(lib.ones(1, 1, 3, 3, dtype=lib.bool), lib.ones(1, 1, 2, 2, dtype=lib.bool)),
        lambda: F.rms_norm(lib.ones(2, 3, dtype=lib.int64), (3,)),
        lambda: F.max_pool1d(lib.ones(1, 1, 4, dtype=lib.bool), 2),
        lambda: F.max_pool2d(lib.ones(1, 1, 4, 4, dtype=lib.bool), 2),
        lambda: F.max_pool3d(lib.ones(1, 1, 4, 4, 4, dtype=lib.bool), 2),
        lambda: F.batch_norm(lib.ones(2, 3, dtype=lib.int64), None, None, training=True),
        lambda: F.ctc_loss(lib.ones(5, 2, 4, dtype=lib.float16), lib.ones(2, 3, dtype=lib.int64),
                           [5, 5], [3, 3]),
        lambda: F.avg_pool3d(lib.ones(2, 3, 4, 4, 4, dtype=lib.float16), 2),
    ]
    for name, shape in [("adaptive_avg_pool1d", (2, 3, 4)), ("adaptive_avg_pool2d", (2, 3, 4, 5)),
                        ("adaptive_avg_pool2d", (3, 4, 5)), ("adaptive_avg_pool3d", (2, 3, 4, 5, 3)),
                        ("adaptive_max_pool1d", (2, 3, 4)), ("adaptive_max_pool2d", (3, 4, 5)),
                        ("adaptive_max_pool3d", (2, 3, 4, 4, 4))]:
        for dt in (lib.int64, lib.uint8, lib.bool):
            cases.append(lambda name=name, shape=shape, dt=dt:
                         getattr(F, name)(lib.ones(shape, dtype=dt), 2))
    return [_outcome(c) for c in cases]


def test_dispatch_errors_are_not_implemented_errors_as_torch(torch):
    got, want = _dispatch_errors(tg), _dispatch_errors(torch)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert w[0] == "NotImplementedError"
        assert g == w
    assert issubclass(NotImplementedError, RuntimeError)    # old `except RuntimeError` still catches
