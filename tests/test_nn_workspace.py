"""The nn kernels' workspace (convolution, pooling; the recurrent and attention cases are in
test_rnn.py and test_attention.py): a pooled output or scratch buffer is reused only once nothing
refers to it, so graphs alive at once, retained graphs and outputs kept by the caller are never
overwritten by later calls on the same shapes."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F


def _net(dtype):
    tg.manual_seed(0)
    nn = tg.nn
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.MaxPool2d(2), nn.Conv2d(4, 3, 3),
                         nn.Flatten()).to(dtype)


def _data(dtype, n):
    rng = np.random.default_rng(4)
    return [(rng.standard_normal((3, 2, 8, 8)).astype(dtype),
             rng.standard_normal((3, 12)).astype(dtype)) for _ in range(n)]


def _grads(m, x):
    return [p.grad.numpy().copy() for p in m.parameters()] + [x.grad.numpy().copy()]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv_pool_graphs_alive_at_once(dtype):
    tdt = tg.float32 if dtype == np.float32 else tg.float64
    data = _data(dtype, 3)
    expect = []
    for xa, wa in data:                         # one graph at a time
        m = _net(tdt)
        x = tg.tensor(xa, requires_grad=True)
        (m(x) * tg.tensor(wa)).sum().backward()
        expect.append(_grads(m, x))
    models = [_net(tdt) for _ in data]          # all forwards first, backwards in another order
    xs = [tg.tensor(xa, requires_grad=True) for xa, _ in data]
    losses = [(m(x) * tg.tensor(wa)).sum() for m, x, (_, wa) in zip(models, xs, data)]
    losses[0].backward(retain_graph=True)
    losses[2].backward()
    losses[1].backward()
    for m, x, want in zip(models, xs, expect):
        for a, b in zip(_grads(m, x), want):
            np.testing.assert_array_equal(a, b)
    models[0].zero_grad()
    xs[0].grad = None
    for xa, wa in data[1:]:                     # whole steps in between
        m = _net(tdt)
        (m(tg.tensor(xa, requires_grad=True)) * tg.tensor(wa)).sum().backward()
    losses[0].backward()                        # the retained graph again
    for a, b in zip(_grads(models[0], xs[0]), expect[0]):
        np.testing.assert_array_equal(a, b)


def test_conv_and_pool_outputs_kept_by_the_caller():
    rng = np.random.default_rng(6)
    w = tg.tensor(rng.standard_normal((4, 2, 3, 3)).astype(np.float32))
    x0 = tg.tensor(rng.standard_normal((3, 2, 8, 8)).astype(np.float32))
    y0 = F.conv2d(x0, w)
    p0, i0 = F.max_pool2d(y0, 2, return_indices=True)
    view = y0.numpy()[:, 1]
    kept = [t.numpy().copy() for t in (y0, p0, i0)]
    for _ in range(3):                          # later calls on the same shapes, with backward
        x = tg.tensor(rng.standard_normal((3, 2, 8, 8)).astype(np.float32), requires_grad=True)
        F.max_pool2d(F.conv2d(x, w), 2).sum().backward()
    for t, k in zip((y0, p0, i0), kept):
        np.testing.assert_array_equal(t.numpy(), k)
    np.testing.assert_array_equal(view, kept[0][:, 1])


def test_workspace_buffers_are_released_with_their_graph():
    from tapegrad import _core
    m = _net(tg.float32)
    (xa, wa), = _data(np.float32, 1)
    out = m(tg.tensor(xa, requires_grad=True))
    assert _core._nn_workspace_bytes()[1] > 0
    (out * tg.tensor(wa)).sum().backward()
    del out
    m.zero_grad()                               # a gradient may be a workspace array too
    pooled, used = _core._nn_workspace_bytes()
    assert used == 0 and 0 < pooled <= 64 << 20
