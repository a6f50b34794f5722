"""The fused convolution kernels (nn_kernels.c, tg_conv2d*): their blocking and register tiles.

The kernels cut the output positions into L2-sized blocks (a block of output rows of one sample,
or for the weight gradient several whole samples) and multiply each block by tiles of 6 output
rows x 2 vectors (forward, input gradient) or 3 x 4 dot products (weight gradient).  These cases
put block and tile edges where the small shapes of test_conv.py do not: many column rows (a
block of one or two output rows), blocks that span samples with a partial last one, tail
columns, partial row blocks, one-row tiles (depthwise).  Each map is checked against a direct
numpy reference without torch, against PyTorch with it, and the portable (non-AVX2) tiles
against the AVX2 ones in a child process run with TAPEGRAD_SIMD=scalar.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.nn import functional as F

# (x shape, weight shape, stride, padding, groups)
CASES = [
    ((2, 64, 9, 20), (5, 64, 3, 3), 1, 1, 1),       # K = 576: a block is 1-2 output rows
    ((70, 32, 6, 6), (3, 32, 3, 3), 1, 0, 1),       # weight gradient: 32 samples a block, 3 blocks
    ((2, 128, 11, 41), (6, 64, 3, 3), 2, 1, 2),     # strided, grouped, rows split
    ((3, 5, 13, 17), (5, 1, 3, 3), 1, 1, 5),        # depthwise: one-row tiles
    ((4, 1, 28, 28), (6, 1, 5, 5), 1, 2, 1),        # LeNet's first layer
    ((4, 6, 14, 14), (16, 6, 5, 5), 1, 0, 1),       # LeNet's second layer
    ((2, 7, 5, 9), (13, 7, 1, 1), 1, 0, 1),         # 1x1, 13 output channels: 6 + 6 + 1 rows
]


def _arrays(case, dtype, seed=0):
    xs, ws, *_ = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    b = rng.standard_normal(ws[0]).astype(dtype)
    return x, w, b


def _windows(x, kh, kw, s, p):
    """(N, C, Ho, Wo, kh, kw) windows of the zero-padded x."""
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    return win[:, :, ::s, ::s]


def _reference(x, w, b, gy, s, p, G):
    """Forward, input and weight gradients by einsum over explicit windows, group by group."""
    O, Cg, kh, kw = w.shape
    Og = O // G
    win = _windows(x.astype(np.float64), kh, kw, s, p)
    w64, gy64 = w.astype(np.float64), gy.astype(np.float64)
    N, C, H, W = x.shape
    Ho, Wo = win.shape[2:4]
    y = np.empty((N, O, Ho, Wo))
    gw = np.empty(w.shape)
    gxp = np.zeros((N, C, H + 2 * p, W + 2 * p))
    for g in range(G):
        cs, os_ = slice(g * Cg, (g + 1) * Cg), slice(g * Og, (g + 1) * Og)
        y[:, os_] = np.einsum("nchwij,ocij->nohw", win[:, cs], w64[os_])
        gw[os_] = np.einsum("nchwij,nohw->ocij", win[:, cs], gy64[:, os_])
        for i in range(kh):
            for j in range(kw):
                gxp[:, cs, i:i + s * (Ho - 1) + 1:s, j:j + s * (Wo - 1) + 1:s] += np.einsum(
                    "nohw,oc->nchw", gy64[:, os_], w64[os_, :, i, j])
    return y + b.reshape(1, -1, 1, 1), gxp[:, :, p:p + H, p:p + W], gw


def _run(case, x, w, b, gy):
    _, _, s, p, G = case
    xt, wt, bt = (tg.tensor(a, requires_grad=True) for a in (x, w, b))
    y = F.conv2d(xt, wt, bt, stride=s, padding=p, groups=G)
    y.backward(tg.tensor(gy))
    return y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()


def _close(actual, desired, dtype):
    scale = max(float(np.abs(desired).max()), 1.0)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(actual, desired, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[0])))
def test_fused_maps_match_a_direct_reference(case, dtype):
    x, w, b = _arrays(case, dtype)
    _, _, s, p, G = case
    gy = _upstream(case, dtype)
    y, gx, gw, gb = _run(case, x, w, b, gy)
    ry, rgx, rgw = _reference(x, w, b, gy, s, p, G)
    assert y.dtype == gx.dtype == gw.dtype == dtype
    _close(y, ry, dtype)
    _close(gx, rgx, dtype)
    _close(gw, rgw, dtype)
    _close(gb, gy.astype(np.float64).sum((0, 2, 3)), dtype)


@pytest.fixture
def torch_one_thread(torch):
    """PyTorch at one thread for the test, restored after (it once stayed at 1 for the rest of
    the suite, so later thread-count-dependent tests skipped or compared other sums)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(threads)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES[:4], ids=lambda c: "x".join(map(str, c[0])))
def test_fused_maps_match_torch(torch_one_thread, case, dtype):
    torch = torch_one_thread
    x, w, b = _arrays(case, dtype, seed=2)
    _, _, s, p, G = case
    ts = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    yt = torch.nn.functional.conv2d(*ts, stride=s, padding=p, groups=G)
    gy = np.random.default_rng(3).standard_normal(tuple(yt.shape)).astype(dtype)
    yt.backward(torch.tensor(gy))
    ours = _run(case, x, w, b, gy)
    for a, t in zip(ours, (yt.detach(),) + tuple(t.grad for t in ts)):
        _close(a, t.numpy(), dtype)


def test_transposed_convolution_runs_the_input_gradient_kernel(torch):
    """conv_transpose2d's forward is the fused input-gradient map (rows split: K = 48*3*3)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 6, 7, 30)).astype(np.float32)
    w = rng.standard_normal((6, 48, 3, 3)).astype(np.float32)
    ours = F.conv_transpose2d(tg.tensor(x), tg.tensor(w), stride=2, padding=1).numpy()
    theirs = torch.nn.functional.conv_transpose2d(torch.tensor(x), torch.tensor(w), stride=2,
                                                  padding=1).numpy()
    _close(ours, theirs, np.float32)


_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    sys.path[:0] = [sys.argv[3], sys.argv[1]]      # the tapegrad under test, this file
    import test_conv_fused as T
    out = {}
    for k, case in enumerate(T.CASES):
        for dtype in (np.float32, np.float64):
            x, w, b = T._arrays(case, dtype)
            for m, a in enumerate(T._run(case, x, w, b, T._upstream(case, dtype))):
                out[f"{k}-{np.dtype(dtype).name}-{m}"] = a
    np.savez(sys.argv[2], **out)
""")


def _upstream(case, dtype):
    x, w, b = _arrays(case, dtype)
    _, _, s, p, G = case
    shape = F.conv2d(tg.tensor(x), tg.tensor(w), stride=s, padding=p, groups=G).shape
    return np.random.default_rng(5).standard_normal(tuple(shape)).astype(dtype)


def test_portable_tiles_match_the_avx2_ones(tmp_path):
    """TAPEGRAD_SIMD=scalar runs the portable C tiles (what a CPU without AVX2 + FMA gets); they
    compute the same maps, to rounding."""
    env = dict(os.environ, TAPEGRAD_SIMD="scalar")
    here = os.path.dirname(os.path.abspath(__file__))
    out = tmp_path / "scalar.npz"
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(tg.__file__)))
    subprocess.run([sys.executable, "-c", _CHILD, here, str(out), package_root], env=env,
                   check=True)
    child = np.load(out)
    same_bits = True
    for k, case in enumerate(CASES):
        for dtype in (np.float32, np.float64):
            x, w, b = _arrays(case, dtype)
            for m, a in enumerate(_run(case, x, w, b, _upstream(case, dtype))):
                c = child[f"{k}-{np.dtype(dtype).name}-{m}"]
                assert c.dtype == dtype
                _close(c, a, dtype)
                same_bits &= np.array_equal(c, a)
    # the AVX2 tiles fuse multiply-adds, the portable ones round twice: some bits must differ,
    # or the child did not run the portable code
    assert not same_bits
