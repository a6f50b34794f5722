"""The compiled window and recurrent kernels (nn_kernels.c) and the records built on them: im2col,
col2im and max pooling against PyTorch's unfold, fold and max_pool2d over a grid of geometries;
the recurrent sequence record (one per layer and direction) against PyTorch, against the per-step
composite it replaces, under create_graph and in float64 finite differences; batch_norm as its own
record (NativeBatchNormBackward0), with every gradient, second order and running statistics."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _core
from tapegrad.nn.modules import rnn as rnn_module

# (N, C, H, W, kh, kw, sh, sw, pt, pl, dh, dw)
WINDOWS = [
    (2, 3, 7, 8, 3, 2, 1, 1, 1, 0, 1, 1),
    (2, 3, 9, 8, 3, 3, 2, 3, 1, 1, 2, 1),
    (1, 2, 5, 5, 2, 2, 2, 2, 0, 0, 1, 1),
    (1, 1, 4, 6, 3, 3, 1, 2, 1, 1, 2, 3),
    (3, 1, 1, 9, 1, 4, 1, 3, 0, 2, 1, 2),
]


def _geometry(N, C, H, W, kh, kw, sh, sw, pt, pl, dh, dw):
    Ho = (H + 2 * pt - dh * (kh - 1) - 1) // sh + 1
    Wo = (W + 2 * pl - dw * (kw - 1) - 1) // sw + 1
    return (N, C, H, W, Ho, Wo, kh, kw, sh, sw, pt, pl, dh, dw)


def _window_case(win, dtype, seed):
    """(geometry tuple, a random input of its shape, the rng that drew it)."""
    rng = np.random.default_rng(seed)
    return _geometry(*win), rng.standard_normal(win[:4]).astype(dtype), rng


@pytest.mark.parametrize("win", WINDOWS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_im2col_and_col2im_match_unfold_and_fold(torch, win, dtype):
    N, C, H, W, kh, kw, sh, sw, pt, pl, dh, dw = win
    geom, x, rng = _window_case(win, dtype, 0)
    args = dict(kernel_size=(kh, kw), dilation=(dh, dw), padding=(pt, pl), stride=(sh, sw))
    ref = torch.nn.functional.unfold(torch.from_numpy(x), **args).numpy()
    np.testing.assert_array_equal(_core._im2col(x, geom, True), ref)
    by_tap = _core._im2col(x, geom, False)              # (C*kh*kw, N*L)
    np.testing.assert_array_equal(by_tap.reshape(-1, N, ref.shape[2]).transpose(1, 0, 2), ref)
    g = rng.standard_normal(ref.shape).astype(dtype)
    folded = torch.nn.functional.fold(torch.from_numpy(g), (H, W), **args).numpy()
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(_core._col2im(g, geom, True), folded, rtol=tol, atol=tol)
    np.testing.assert_allclose(
        _core._col2im(np.ascontiguousarray(g.transpose(1, 0, 2)), geom, False), folded,
        rtol=tol, atol=tol)


@pytest.mark.parametrize("win", WINDOWS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_window_kernels_without_torch(win, dtype):
    """col2im is im2col's adjoint (<im2col x, g> = <x, col2im g>), and max pooling is the brute
    maximum over each window's real taps, with its gradient at the argmax."""
    geom, x, rng = _window_case(win, dtype, 7)
    N, C, H, W, Ho, Wo, kh, kw, sh, sw, pt, pl, dh, dw = geom
    for by_sample in (True, False):
        cols = _core._im2col(x, geom, by_sample)
        g = rng.standard_normal(cols.shape).astype(dtype)
        lhs = np.vdot(cols.astype(np.float64), g.astype(np.float64))
        rhs = np.vdot(x.astype(np.float64), _core._col2im(g, geom, by_sample).astype(np.float64))
        assert abs(lhs - rhs) <= 1e-4 * max(1.0, abs(lhs))
    y, idx = _core._max_pool2d_arrays(x, geom)
    for n, c, i, j in itertools.product(range(N), range(C), range(Ho), range(Wo)):
        taps = [(h, w) for h in range(i * sh - pt, i * sh - pt + kh * dh, dh)
                for w in range(j * sw - pl, j * sw - pl + kw * dw, dw)
                if 0 <= h < H and 0 <= w < W]
        if taps:
            best = max(taps, key=lambda t: (x[n, c][t], -t[0], -t[1]))
            assert y[n, c, i, j] == x[n, c][best] and idx[n, c, i, j] == best[0] * W + best[1]
        else:
            assert y[n, c, i, j] == -np.inf
    gy = rng.standard_normal(y.shape).astype(dtype)
    gx = _core._max_pool2d_grad_array(gy, idx, geom)
    expected = np.zeros((N * C, H * W))
    inside = (idx >= 0) & (idx < H * W)
    np.add.at(expected, (np.repeat(np.arange(N * C), Ho * Wo)[inside.ravel()],
                         idx.ravel()[inside.ravel()]), gy.ravel()[inside.ravel()])
    np.testing.assert_allclose(gx.reshape(N * C, -1), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("win", [w for w in WINDOWS if w[8] <= w[4] // 2 and w[9] <= w[5] // 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_kernel_matches_torch(torch, win, dtype):
    kh, kw, sh, sw, pt, pl, dh, dw = win[4:]
    geom, x, rng = _window_case(win, dtype, 1)
    x.flat[::7] = x.flat[1]                              # ties: the first position wins
    x.flat[5] = np.nan                                   # a NaN wins over numbers
    xt = torch.from_numpy(x).requires_grad_()
    y, idx = torch.nn.functional.max_pool2d(xt, (kh, kw), (sh, sw), (pt, pl), (dh, dw),
                                            return_indices=True)
    ours, ours_idx = _core._max_pool2d_arrays(x, geom)
    np.testing.assert_array_equal(ours, y.detach().numpy())
    np.testing.assert_array_equal(ours_idx, idx.numpy())
    gy = rng.standard_normal(tuple(y.shape)).astype(dtype)
    y.backward(torch.from_numpy(gy))
    np.testing.assert_allclose(_core._max_pool2d_grad_array(gy, ours_idx, geom),
                               xt.grad.numpy(), rtol=1e-6)


def test_max_pool_window_wholly_in_padding_values_and_grad(torch):
    # dilation 2, padding 1: the first window's only taps in a 2-wide input both lie in padding
    x = np.arange(8, dtype=np.float64).reshape(1, 1, 2, 4)
    xt = torch.from_numpy(x).requires_grad_()
    y, idx = torch.nn.functional.max_pool2d(xt, 2, 1, 1, 3, return_indices=True)
    gx = tg.tensor(x, requires_grad=True)
    ours, ours_idx = tg.nn.functional.max_pool2d(gx, 2, 1, 1, 3, return_indices=True)
    np.testing.assert_array_equal(ours.detach().numpy(), y.detach().numpy())
    np.testing.assert_array_equal(ours_idx.numpy(), idx.numpy())
    finite = torch.isfinite(y)
    (y[finite]).sum().backward()
    (ours[tg.from_numpy(finite.numpy())]).sum().backward()
    np.testing.assert_array_equal(gx.grad.numpy(), xt.grad.numpy())


def test_kernel_drivers_refuse_what_the_c_code_cannot_read():
    geom = _geometry(1, 1, 4, 4, 2, 2, 1, 1, 0, 0, 1, 1)
    x = np.zeros((1, 1, 4, 4), dtype=np.float64)
    with pytest.raises(ValueError, match="C-contiguous"):
        _core._im2col(x[:, :, :, ::-1], geom, True)
    with pytest.raises(TypeError, match="float32 or float64"):
        _core._im2col(x.astype(np.int64), geom, True)
    with pytest.raises(ValueError, match="size"):
        _core._im2col(x[:, :, :3], geom, True)
    with pytest.raises(ValueError, match="geometry"):
        _core._im2col(x, geom[:8] + (0,) + geom[9:], True)
    y, idx = _core._max_pool2d_arrays(x, geom)
    with pytest.raises(ValueError, match="int64"):
        _core._max_pool2d_grad_array(y, idx.astype(np.int32), geom)


def test_max_pool_grad_fn_name_as_torch(torch):
    x = tg.randn(1, 2, 4, 4, requires_grad=True)
    assert type(tg.nn.functional.max_pool2d(x, 2).grad_fn).__name__ == \
        type(torch.nn.functional.max_pool2d(torch.randn(1, 2, 4, 4, requires_grad=True),
                                            2).grad_fn).__name__


# -- the recurrent sequence record ------------------------------------------------------------

@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_one_record_per_layer_and_direction(kind):
    m = getattr(tg.nn, kind)(3, 4, num_layers=2, bidirectional=True)
    x = tg.randn(9, 2, 3)
    before = {rec[0] for rec in _core.tape().records()}
    out, _ = m(x)
    names = [rec[1] for rec in _core.tape().records() if rec[0] not in before]
    assert names.count("FunctionBackward") == 4          # the sequence records
    assert not {"SigmoidBackward0", "TanhBackward0", "ReluBackward0"} & set(names)
    assert names.count("StackBackward0") <= 2            # only the final states h_n (and c_n)
    ops = [n for n in names if n != "AccumulateGrad"]
    assert len(ops) < 36                                 # not one per step (9 steps x 4)
    del out


@pytest.mark.parametrize("kind,kw", [("RNN", {"nonlinearity": "relu"}), ("RNN", {}),
                                     ("LSTM", {}), ("GRU", {}), ("GRU", {"bias": False})])
@pytest.mark.parametrize("reverse", [False, True])
def test_sequence_record_matches_the_per_step_composite(kind, kw, reverse):
    """The compiled record and the step functions it replaces give the same values and gradients
    (the composite is what packed sequences and create_graph still use)."""
    tg.manual_seed(0)
    m = getattr(tg.nn, kind)(3, 5, dtype=tg.float64, bidirectional=reverse, **kw)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 2, 3))
    results = []
    for compiled in (True, False):
        if not compiled:
            saved = rnn_module._compiles
            rnn_module._compiles = lambda *a: False
        try:
            m.zero_grad()
            xt = tg.tensor(x, requires_grad=True)
            out, h = m(xt)
            h = h[0] if kind == "LSTM" else h
            ((out * out).sum() + h.sum()).backward()
            results.append([out.detach().numpy(), xt.grad.numpy()]
                           + [p.grad.numpy() for p in m.parameters()])
        finally:
            if not compiled:
                rnn_module._compiles = saved
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_sequence_create_graph_matches_torch(torch, kind):
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(2, 3, num_layers=2, dtype=torch.float64)
    gm = getattr(tg.nn, kind)(2, 3, num_layers=2, dtype=tg.float64)
    gm.load_state_dict({k: tg.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    x = torch.randn(4, 2, 2, dtype=torch.float64, requires_grad=True)
    gx = tg.tensor(x.detach().numpy(), requires_grad=True)
    (tx,) = torch.autograd.grad(tm(x)[0].pow(2).sum(), x, create_graph=True)
    (ux,) = tg.autograd.grad(gm(gx)[0].pow(2).sum(), gx, create_graph=True)
    np.testing.assert_allclose(ux.detach().numpy(), tx.detach().numpy(), rtol=1e-10)
    tx.pow(2).sum().backward()
    ux.pow(2).sum().backward()
    np.testing.assert_allclose(gx.grad.numpy(), x.grad.numpy(), rtol=1e-8, atol=1e-12)
    for p, q in zip(tm.parameters(), gm.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_sequence_finite_differences_of_weights_and_state(gradcheck, kind):
    tg.manual_seed(1)
    m = getattr(tg.nn, kind)(2, 3, dtype=tg.float64)
    rng = np.random.default_rng(3)
    w_hh = m.weight_hh_l0.detach().numpy().copy()

    def run(x, h0, c0, w):
        m._parameters["weight_hh_l0"] = w            # the module reads this tensor's graph
        out, h = m(x, (h0, c0) if kind == "LSTM" else h0)
        if kind != "LSTM":
            h = h + 0 * c0                            # (c0 is LSTM's; keep the signature)
        return (out * out).sum() + (h[1] if kind == "LSTM" else h).sum()

    gradcheck(run, rng.standard_normal((4, 2, 2)), rng.standard_normal((1, 2, 3)),
              rng.standard_normal((1, 2, 3)), w_hh)


def test_sequence_record_in_place_change_of_output_keeps_the_gradient():
    # PyTorch's layer saves what its backward reads: a write into the output is no error
    m = tg.nn.GRU(2, 3)
    x = tg.randn(4, 1, 2, requires_grad=True)
    out, _ = m(x)
    out.sum().backward()
    want = x.grad.clone()
    x.grad = None
    out, _ = m(x)
    out.add_(1.0)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), want.numpy(), rtol=1e-6)


# -- batch_norm as one record ------------------------------------------------------------------

@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 3, 2, 2)])
def test_batch_norm_record_matches_torch(torch, training, affine, shape):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape)
    C = shape[1]
    rm, rv = rng.standard_normal(C), rng.random(C) + 0.5
    w, b = rng.standard_normal(C), rng.standard_normal(C)
    results = []
    for lib in (torch, tg):
        xt = lib.tensor(x, requires_grad=True)
        wt = lib.tensor(w, requires_grad=True) if affine else None
        bt = lib.tensor(b, requires_grad=True) if affine else None
        rmt, rvt = lib.tensor(rm.copy()), lib.tensor(rv.copy())
        y = lib.nn.functional.batch_norm(xt, rmt, rvt, wt, bt, training, 0.3, 1e-4)
        name = type(y.grad_fn).__name__
        (y * lib.tensor(np.arange(y.numel(), dtype=np.float64).reshape(shape))).sum().backward()
        grads = [xt.grad.numpy()] + ([wt.grad.numpy(), bt.grad.numpy()] if affine else [])
        results.append((name, y.detach().numpy(), rmt.numpy(), rvt.numpy(), grads))
    (tn, ty, trm, trv, tgr), (gn, gy, grm, grv, ggr) = results
    assert gn == tn == "NativeBatchNormBackward0"
    for a, b in [(gy, ty), (grm, trm), (grv, trv)] + list(zip(ggr, tgr)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_finite_differences(gradcheck, training):
    rng = np.random.default_rng(5)
    rm, rv = tg.tensor(rng.standard_normal(3)), tg.tensor(rng.random(3) + 0.5)

    def fn(x, w, b):
        y = tg.nn.functional.batch_norm(x, rm.clone(), rv.clone(), w, b, training)
        return y * y * tg.tensor(np.linspace(-1, 2, y.numel()).reshape(y.shape))

    gradcheck(fn, rng.standard_normal((3, 3, 2)), rng.standard_normal(3), rng.standard_normal(3))


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_second_order_matches_torch(torch, training):
    rng = np.random.default_rng(6)
    x, w, b = rng.standard_normal((4, 2, 3)), rng.standard_normal(2), rng.standard_normal(2)
    rm, rv = rng.standard_normal(2), rng.random(2) + 0.5
    grads = []
    for lib in (torch, tg):
        xt, wt, bt = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
        y = lib.nn.functional.batch_norm(xt, lib.tensor(rm), lib.tensor(rv), wt, bt, training)
        gx, gw = lib.autograd.grad((y ** 3).sum(), (xt, wt), create_graph=True)
        ((gx * gx).sum() + gw.sum()).backward()
        grads.append([gx.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


def test_batch_norm_values_without_torch():
    x = tg.tensor([[1.0, 10.0], [3.0, 30.0]], requires_grad=True)
    # (eps=0 in training is PyTorch's ValueError; 1e-300 is lost against variances 1 and 100)
    y = tg.nn.functional.batch_norm(x, None, None, training=True, eps=1e-300)
    np.testing.assert_allclose(y.detach().numpy(), [[-1.0, -1.0], [1.0, 1.0]])
    (y * tg.tensor([[1.0, 0.0], [0.0, 0.0]])).sum().backward()
    # d/dx0 of (x0 - m) / s over a pair: the pair's gradient is zero-sum and zero at the mean
    np.testing.assert_allclose(x.grad.numpy(), [[0.0, 0.0], [0.0, 0.0]], atol=1e-12)
    y = tg.nn.functional.batch_norm(tg.tensor([[2.0], [4.0], [9.0]]), tg.tensor([1.0]),
                                    tg.tensor([4.0]), tg.tensor([2.0]), tg.tensor([1.0]),
                                    eps=0.0)
    np.testing.assert_allclose(y.numpy(), [[2.0], [4.0], [9.0]])     # (x - 1) / 2 * 2 + 1
