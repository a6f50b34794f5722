"""The layer steps' replay savings (perflayers41): the max-pool gradients' relu test made without a
branch, and the recurrent layers' states kept in one buffer with weight gradients of their own.
Each keeps eager's values bit for bit, compiled equals eager, and both follow PyTorch."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _core


def _torch():
    return pytest.importorskip("torch")


def _pool_geom(N, C, H, W):
    return (N, C, H, W, H // 2, W // 2, 2, 2, 2, 2, 0, 0, 1, 1)


# -- max pooling's gradient with relu's test as a mask --------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pool_grad_masks_like_the_branch(dtype):
    """The kept / xmask variants add +0 where relu's test fails: the same bits as skipping the
    window, -0 and NaN gradients included (a masked NaN must not leak, a kept -0 lands as +0 as
    it does when added to a zeroed buffer)."""
    rng = np.random.default_rng(1)
    N, C, H, W = 2, 3, 7, 9                     # odd: a last row and column no window reads
    x = rng.standard_normal((N, C, H, W)).astype(dtype)
    g = _pool_geom(N, C, H, W)
    _, idx = _core._max_pool2d_arrays(x, g)
    gy = rng.standard_normal(idx.shape).astype(dtype)
    gy.flat[::5] = -0.0
    gy.flat[1::7] = np.nan
    keep = (rng.random(idx.shape) < 0.6).astype(np.uint8)
    # the reference: zeros, then each passing window's gradient added at its index
    ref_keep = np.zeros((N * C, H * W), dtype)
    ref_mask = np.zeros((N * C, H * W), dtype)
    flat_x = x.reshape(N * C, H * W)
    for p in range(N * C):
        for k in range(idx.shape[2] * idx.shape[3]):
            at = idx.reshape(N * C, -1)[p, k]
            v = gy.reshape(N * C, -1)[p, k]
            if keep.reshape(N * C, -1)[p, k]:
                ref_keep[p, at] += v
            if not flat_x[p, at] <= 0:
                ref_mask[p, at] += v
    got_keep = _core._max_pool2d_grad_array(gy, idx, g, keep=keep)
    got_mask = _core._max_pool2d_grad_array(gy, idx, g, xmask=x)
    for got, ref in ((got_keep, ref_keep), (got_mask, ref_mask)):
        got = got.reshape(N * C, H * W)
        assert np.array_equal(got, ref, equal_nan=True)
        assert not np.signbit(got[got == 0]).any()      # no -0 anywhere


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_relu_pool_grad_matches_torch(dtype):
    torch = _torch()
    rng = np.random.default_rng(2)
    xa = rng.standard_normal((3, 4, 8, 10))
    xa[0, 0, :2, :2] = -1.0                     # a window relu zeroes whole
    gya = rng.standard_normal((3, 4, 4, 5))
    gya[1, 1, 0, 0] = -0.0
    tdt = torch.float32 if dtype == tg.float32 else torch.float64
    x = tg.tensor(xa, dtype=dtype, requires_grad=True)
    tg.nn.functional.max_pool2d(tg.relu(x), 2).backward(tg.tensor(gya, dtype=dtype))
    tx = torch.tensor(xa, dtype=tdt, requires_grad=True)
    torch.nn.functional.max_pool2d(torch.relu(tx), 2).backward(torch.tensor(gya, dtype=tdt))
    assert np.array_equal(x.grad.numpy(), tx.grad.numpy())
    assert np.array_equal(np.signbit(x.grad.numpy()), np.signbit(tx.grad.numpy()))


def _conv_pool_net(dtype):
    tg.manual_seed(0)
    nn = tg.nn
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 6, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(6 * 2 * 2, 5)).to(dtype)


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_conv_relu_pool_compiled_equals_eager(dtype):
    """The fused conv-relu-pool replay step (its gradient is the kept variant) against eager,
    over several calls with changing inputs."""
    eager_net, replay_net = _conv_pool_net(dtype), _conv_pool_net(dtype)
    loss_fn = tg.nn.CrossEntropyLoss()
    compiled = tg.compile(lambda x, y: loss_fn(replay_net(x), y))
    rng = np.random.default_rng(3)
    for _ in range(4):
        x = tg.tensor(rng.standard_normal((5, 2, 13, 13)), dtype=dtype)
        y = tg.tensor(rng.integers(0, 5, 5))
        for net in (eager_net, replay_net):
            net.zero_grad()
        le = loss_fn(eager_net(x), y)
        le.backward()
        lc = compiled(x, y)
        lc.backward()
        assert le.item() == lc.item()
        for pe, pc in zip(eager_net.parameters(), replay_net.parameters()):
            assert np.array_equal(pe.grad.numpy(), pc.grad.numpy())
    assert compiled.stats["replays"] == 3, compiled.explain()


# -- recurrent layers: one states buffer, weight gradients of their own ---------------------------

def _rnn_pair(mode, bidirectional, dtype):
    torch = _torch()
    kind = {"LSTM": "LSTM", "GRU": "GRU", "RNN_TANH": "RNN", "RNN_RELU": "RNN"}[mode]
    extra = {"nonlinearity": "relu"} if mode == "RNN_RELU" else {}
    tg.manual_seed(0)
    m = getattr(tg.nn, kind)(5, 6, num_layers=2, bidirectional=bidirectional, **extra).to(dtype)
    tm = getattr(torch.nn, kind)(5, 6, num_layers=2, bidirectional=bidirectional, **extra)
    tm = tm.double() if dtype == tg.float64 else tm
    with torch.no_grad():
        for (_, p), (_, tp) in zip(m.named_parameters(), tm.named_parameters()):
            tp.copy_(torch.from_numpy(p.detach().numpy().copy()))
    return m, tm


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_recurrent_gradients_match_torch(mode, bidirectional):
    """Both directions read the previous states from the forward's buffer (h0 at its front, or
    at its end when reverse): the gradients of the weights, the input and h0 follow PyTorch."""
    torch = _torch()
    m, tm = _rnn_pair(mode, bidirectional, tg.float64)
    rng = np.random.default_rng(4)
    D = 2 if bidirectional else 1
    xa, ha = rng.standard_normal((4, 3, 5)), rng.standard_normal((2 * D, 3, 6))
    x, tx = tg.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    h, th = tg.tensor(ha, requires_grad=True), torch.tensor(ha, requires_grad=True)
    if mode == "LSTM":
        ca = rng.standard_normal((2 * D, 3, 6))
        out = m(x, (h, tg.tensor(ca)))[0]
        tout = tm(tx, (th, torch.tensor(ca)))[0]
    else:
        out, tout = m(x, h)[0], tm(tx, th)[0]
    ga = rng.standard_normal(tuple(out.shape))
    out.backward(tg.tensor(ga))
    tout.backward(torch.tensor(ga))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h.grad.numpy(), th.grad.numpy(), rtol=1e-10, atol=1e-12)
    for (n, p), (_, tp) in zip(m.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=n)


def test_recurrent_grads_survive_the_next_step():
    """A weight gradient is an array of its own (no longer a workspace one copied on delivery):
    a .grad kept from one step keeps its values through the next step's forward and backward."""
    m = tg.nn.LSTM(4, 8, num_layers=2)
    rng = np.random.default_rng(5)
    x1 = tg.tensor(rng.standard_normal((6, 2, 4)), dtype=tg.float32)
    m(x1)[0].sum().backward()
    kept = {n: p.grad for n, p in m.named_parameters()}
    values = {n: g.numpy().copy() for n, g in kept.items()}
    m.zero_grad()                               # (set_to_none: the next step makes new ones)
    x2 = tg.tensor(rng.standard_normal((6, 2, 4)), dtype=tg.float32)
    (m(x2)[0] * 3.0).sum().backward()
    for n, p in m.named_parameters():
        assert np.array_equal(kept[n].numpy(), values[n]), n
        assert not np.shares_memory(kept[n].numpy(), p.grad.numpy()), n


def test_recurrent_output_written_in_place_keeps_gradients():
    """The returned output is a copy of the states buffer: an in-place write into it changes
    nothing the backward reads (PyTorch's layer saves its own too)."""
    torch = _torch()
    m, tm = _rnn_pair("LSTM", False, tg.float64)
    xa = np.random.default_rng(6).standard_normal((5, 2, 5))
    out = m(tg.tensor(xa))[0]
    tout = tm(torch.tensor(xa))[0]
    loss = (out * out).sum()
    tloss = (tout * tout).sum()
    with tg.no_grad():
        out.mul_(0.0)
    with torch.no_grad():
        tout.mul_(0.0)
    # the product's saved output changed: both raise; the layer's own gradient path is intact
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tloss.backward()
    out2 = m(tg.tensor(xa))[0]
    tout2 = tm(torch.tensor(xa))[0]
    out2.sum().backward()
    with tg.no_grad():
        out2.add_(1.0)                          # after backward: no effect on .grad
    tout2.sum().backward()
    for (n, p), (_, tp) in zip(m.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=n)


def _lstm_model(dtype):
    tg.manual_seed(0)
    nn = tg.nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(4, 8, num_layers=2)
            self.head = nn.Linear(8, 3)

        def forward(self, x):
            return self.head(self.lstm(x)[0])

    return Model().to(dtype)


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_lstm_compiled_equals_eager(dtype):
    eager_m, replay_m = _lstm_model(dtype), _lstm_model(dtype)
    loss_fn = tg.nn.CrossEntropyLoss()

    def step(m, x, y):
        out = m(x)
        return loss_fn(out.reshape(-1, 3), y.reshape(-1))

    compiled = tg.compile(lambda x, y: step(replay_m, x, y))
    rng = np.random.default_rng(7)
    for _ in range(4):
        x = tg.tensor(rng.standard_normal((6, 3, 4)), dtype=dtype)
        y = tg.tensor(rng.integers(0, 3, (6, 3)))
        eager_m.zero_grad()
        replay_m.zero_grad()
        le = step(eager_m, x, y)
        le.backward()
        lc = compiled(x, y)
        lc.backward()
        assert le.item() == lc.item()
        for pe, pc in zip(eager_m.parameters(), replay_m.parameters()):
            assert np.array_equal(pe.grad.numpy(), pc.grad.numpy())
    assert compiled.stats["replays"] == 3, compiled.explain()


def test_lstm_gradcheck_float64():
    lstm = tg.nn.LSTM(2, 3, num_layers=2, bidirectional=True).double()
    x = tg.randn(3, 2, 2, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(lambda x: lstm(x)[0], (x,))
