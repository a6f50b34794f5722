"""Data augmentation on tensors (proxy corpus proxydw): argument handling that PyTorch's
kernels decide, compared against PyTorch."""
import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _outcome(lib, fn):
    try:
        return ("ok", tuple(fn(lib).shape))
    except Exception as e:         # noqa: BLE001 - the type and phrase are what we compare
        return (type(e).__name__, "received an invalid combination of arguments" in str(e)
                or "must be tuple of ints" in str(e))


def _both(fn):
    return _outcome(tg, lambda L: fn(L, F)), _outcome(torch, lambda L: fn(L, TF))


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic"])
@pytest.mark.parametrize("factor", ["tensor0d", "tensor1d", "int_tensor", "tuple_with_tensor"])
def test_interpolate_refuses_tensor_scale_factor(mode, factor):
    # PyTorch hands scale_factor to its kernel, whose parser takes numbers only: a Tensor there
    # is a TypeError (it used to be read as its value)
    def call(L, Fn):
        x = L.ones(1, 2, 4, 4)
        sf = {"tensor0d": L.tensor(2.), "tensor1d": L.tensor([2.]),
              "int_tensor": L.tensor(2), "tuple_with_tensor": (L.tensor(2.), 2.)}[factor]
        return Fn.interpolate(x, scale_factor=sf, mode=mode)
    got, want = _both(call)
    assert want == ("TypeError", True)
    assert got == want


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_interpolate_refuses_tensor_scale_factor_antialias(mode):
    got, want = _both(lambda L, Fn: Fn.interpolate(L.ones(1, 1, 8, 8), mode=mode, antialias=True,
                                                   scale_factor=L.tensor(0.5)))
    assert got == want == ("TypeError", True)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "area"])
@pytest.mark.parametrize("recompute", [None, True])
@pytest.mark.parametrize("factor", [2, 1.5, np.float32(1.5), np.int64(2), True])
def test_interpolate_numeric_scale_factors(mode, recompute, factor):
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    got = F.interpolate(tg.tensor(x), scale_factor=factor, mode=mode,
                        recompute_scale_factor=recompute)
    want = TF.interpolate(torch.tensor(x), scale_factor=factor, mode=mode,
                          recompute_scale_factor=recompute)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "area"])
def test_interpolate_tensor_scale_factor_recomputed(mode):
    # with recompute_scale_factor (and always for 'area') PyTorch computes the output size in
    # Python, where a Tensor factor works
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    rc = None if mode == "area" else True
    got = F.interpolate(tg.tensor(x), scale_factor=tg.tensor(1.5), mode=mode,
                        recompute_scale_factor=rc)
    want = TF.interpolate(torch.tensor(x), scale_factor=torch.tensor(1.5), mode=mode,
                          recompute_scale_factor=rc)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "area"])
@pytest.mark.parametrize("size", [[True, 3], [3, True], (np.int64(3), 2)])
def test_interpolate_bool_in_size_list(mode, size):
    # the kernel's int-list parser refuses a bool in first place only (a later one reads 0/1)
    got, want = _both(lambda L, Fn: Fn.interpolate(L.ones(1, 1, 4, 4), size=size, mode=mode))
    assert got == want


@pytest.mark.parametrize("call", [
    lambda L, x: L.split(x, [2, 3], dim=-1),
    lambda L, x: x.split([2, 3], -1),
    lambda L, x: L.split_with_sizes(x, [2, 3], -1),
    lambda L, x: x.unsafe_split_with_sizes([2, 3], -1),
    lambda L, x: L.split_with_sizes(x, [2, -3, 7], -1),
    lambda L, x: x.split([2, 3], 1),
])
def test_split_sizes_message_names_dim_as_given(call):
    # an augmentation splitting channels/width with dim=-1: PyTorch's message says -1
    messages = []
    for L in (tg, torch):
        with pytest.raises(RuntimeError) as info:
            call(L, L.zeros(2, 6))
        messages.append(str(info.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("kwargs", [
    dict(scale_factor=np.array(2.0), recompute_scale_factor=True),
    dict(scale_factor=np.array(2.0), mode="area"),
    dict(scale_factor=np.array(2.0)),
    dict(size=np.array(2)),
    dict(size=np.array([2, 3])),
    dict(size=(np.array(2), 3)),
])
def test_interpolate_numpy_arguments(kwargs):
    # F.interpolate is Python in PyTorch: a 0-d array works where its code or the kernel's
    # parser reads a number, the rest is a TypeError (not the generic ndarray refusal)
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    got = _outcome(tg, lambda L: F.interpolate(tg.tensor(x), **kwargs))
    want = _outcome(torch, lambda L: TF.interpolate(torch.tensor(x), **kwargs))
    assert got[0] == want[0]
    if want[0] == "ok":
        np.testing.assert_allclose(F.interpolate(tg.tensor(x), **kwargs).numpy(),
                                   TF.interpolate(torch.tensor(x), **kwargs).numpy())


def test_interpolate_ndarray_input_is_attribute_error():
    with pytest.raises(AttributeError, match="object has no attribute 'dim'"):
        TF.interpolate(np.zeros((1, 1, 4, 4)), size=2)
    with pytest.raises(AttributeError, match="object has no attribute 'dim'"):
        F.interpolate(np.zeros((1, 1, 4, 4)), size=2)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_nearest_input_grad_depends_on_grid_under_create_graph(padding_mode):
    # PyTorch's grid_sample backward is one node of (grad, input, grid): under create_graph the
    # input's gradient requires grad through the grid even for 'nearest' (derivative zero), so a
    # penalty on it backpropagates (tapegrad's was detached and pen.backward() raised)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 3, 4))
    g = rng.uniform(-1.2, 1.2, (1, 2, 3, 2))
    w = np.cos(np.arange(12.)).reshape(1, 2, 2, 3)
    results = []
    for L in (tg, torch):
        X = L.tensor(x, requires_grad=True)
        G = L.tensor(g, requires_grad=True)
        y = L.nn.functional.grid_sample(X, G, mode="nearest", padding_mode=padding_mode,
                                        align_corners=False)
        gx, = L.autograd.grad((y * L.tensor(w)).sum(), [X], create_graph=True)
        pen = (gx ** 2).sum()
        pen.backward()
        results.append((gx.requires_grad, pen.item(), G.grad.numpy().copy(), X.grad))
    (rg, pg, gg, xg), (rt, pt, gt, xt) = results
    assert rg == rt is True
    assert pg == pytest.approx(pt)
    np.testing.assert_array_equal(gg, gt)
    assert xg is None and xt is None


def test_grid_sample_nearest_grid_grad_keeps_nonfinite_out():
    # the zero-derivative weight must not turn an inf/NaN grid into NaN values or gradients
    x = np.arange(9.).reshape(1, 1, 3, 3)
    g = np.array([[[[np.inf, 0.], [0.2, np.nan]]]])
    outs = []
    for L in (tg, torch):
        X = L.tensor(x, requires_grad=True)
        G = L.tensor(g, requires_grad=True)
        y = L.nn.functional.grid_sample(X, G, mode="nearest", align_corners=True)
        y.sum().backward()
        outs.append((y.detach().numpy(), X.grad.numpy(), G.grad.numpy()))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
