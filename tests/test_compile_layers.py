"""tapegrad.compile on the layers built on kernel Functions (convolutions, pooling, recurrent
layers, attention: one replay step each, src/tapegrad/ops_function.pxi): training steps equal
eager ones bit for bit, and the guards hold (in-place writes, random ops between layers,
create_graph)."""
import numpy as np
import pytest

import tapegrad as tg

F = tg.nn.functional


def lenet(seed, dtype):
    tg.manual_seed(seed)
    nn = tg.nn
    model = nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(3, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(4, 5))
    return model.double() if dtype == np.float64 else model


class Recurrent(tg.nn.Module):
    def __init__(self, cls, dtype, **kwargs):
        super().__init__()
        tg.manual_seed(5)
        self.rnn = cls(3, 4, num_layers=2, **kwargs)
        self.head = tg.nn.Linear(4, 2)
        if dtype == np.float64:
            self.double()

    def forward(self, x):
        return self.head(self.rnn(x)[0])


def train(model, compiled, x, y, steps=4):
    """SGD steps of model on (x, y), the forward (model and loss) compiled or not: the losses
    and the final parameters."""
    opt = tg.optim.SGD(model.parameters(), lr=0.1)

    def forward(xs, ys):
        out = model(xs)
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), ys.reshape(-1))

    fn = tg.compile(forward) if compiled else forward
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = fn(x, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return fn, losses, [p.detach().numpy().copy() for p in model.parameters()]


def encoder(dtype):
    tg.manual_seed(2)
    nn = tg.nn
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    model = nn.Sequential(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False),
                          nn.Linear(8, 3))
    return model.double() if dtype == np.float64 else model


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["lenet", "lstm", "gru", "rnn_dropout", "encoder"])
def test_training_steps_replay_as_eager(kind, dtype):
    rng = np.random.default_rng(0)
    if kind == "encoder":
        build = lambda: encoder(dtype)  # noqa: E731
        x = tg.tensor(rng.standard_normal((2, 5, 8)).astype(dtype))
        y = tg.tensor(rng.integers(0, 3, (2, 5)))
    elif kind == "lenet":
        build = lambda: lenet(1, dtype)  # noqa: E731
        x = tg.tensor(rng.standard_normal((2, 1, 10, 10)).astype(dtype))
        y = tg.tensor(rng.integers(0, 5, 2))
    else:
        cls = tg.nn.LSTM if kind == "lstm" else tg.nn.GRU if kind == "gru" else tg.nn.RNN
        kwargs = {"dropout": 0.5} if kind == "rnn_dropout" else {}
        build = lambda: Recurrent(cls, dtype, **kwargs)  # noqa: E731
        x = tg.tensor(rng.standard_normal((5, 2, 3)).astype(dtype))
        y = tg.tensor(rng.integers(0, 2, (5, 2)))
    tg.manual_seed(9)
    fn, losses_c, params_c = train(build(), True, x, y)
    tg.manual_seed(9)
    _, losses_e, params_e = train(build(), False, x, y)
    assert fn.stats["replays"] == 3, fn.explain()
    for layer_op in ("apply", "conv2d", "max_pool2d", "multi_head_attention_forward"):
        assert layer_op not in fn.explain(), fn.explain()
    assert losses_c == losses_e
    for pc, pe in zip(params_c, params_e):
        assert np.array_equal(pc, pe)


def test_inplace_write_to_a_saved_weight_raises_as_eager():
    """The convolution's backward reads its weight: writing it in place between the replayed
    forward and the backward raises PyTorch's error, as in eager (the step's version check)."""
    w = tg.randn(2, 1, 3, 3, requires_grad=True)
    fn = tg.compile(lambda x: F.conv2d(x, w).sum())
    for k in range(3):
        out = fn(tg.randn(1, 1, 5, 5, requires_grad=True))
        if k < 2:
            out.backward()
            continue
        with tg.no_grad():
            w.mul_(2.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.backward()
    assert fn.stats["replays"] == 2, fn.explain()


def test_lstm_output_written_in_place_keeps_gradients():
    """The LSTM layer's backward reads its own copy of the outputs (as PyTorch's): a replayed
    call's output written in place still gives eager's gradients."""
    lstm = Recurrent(tg.nn.LSTM, np.float64)
    x = tg.randn(4, 2, 3, dtype=tg.float64)

    def f(x):
        return lstm.rnn(x)[0]
    fn = tg.compile(f)
    grads = []
    for run in (fn, fn, fn, f):
        lstm.zero_grad()
        out = run(x)
        with tg.no_grad():
            out.mul_(0.0)
        (out * 1.0).sum().backward()        # d/d(out) through the write: zero gradients
        grads.append(lstm.rnn.weight_hh_l0.grad.numpy().copy())
    assert fn.stats["replays"] == 2
    for g in grads[1:]:
        assert np.array_equal(g, grads[0])


def test_create_graph_through_a_replayed_convolution():
    """A second derivative through a replayed conv / max-pool call equals eager's."""
    w = tg.randn(2, 1, 3, 3, dtype=tg.float64, requires_grad=True)

    def f(x):
        return F.max_pool2d(F.conv2d(x, w).tanh(), 2).pow(2).sum()
    fn = tg.compile(f)
    x0 = tg.randn(1, 1, 6, 6, dtype=tg.float64)
    results = []
    for run in (fn, fn, fn, f):
        x = x0.clone().requires_grad_()
        gx, = tg.autograd.grad(run(x), x, create_graph=True)
        gw, = tg.autograd.grad(gx.sum(), w)
        results.append((gx.detach().numpy(), gw.numpy()))
    assert fn.stats["replays"] == 2
    for gx, gw in results[:3]:
        assert np.allclose(gx, results[3][0], rtol=1e-12, atol=1e-12)
        assert np.allclose(gw, results[3][1], rtol=1e-12, atol=1e-12)


def test_max_pool_indices_returned_by_a_replay():
    """max_pool2d's indices (an int64 output of the kernel step) come back from replays too."""
    fn = tg.compile(lambda x: F.max_pool2d(x, 2, return_indices=True))
    for k in range(3):
        x = tg.randn(1, 2, 4, 4)
        (v, i), (ve, ie) = fn(x), F.max_pool2d(x, 2, return_indices=True)
        assert i.dtype == tg.int64 and np.array_equal(i.numpy(), ie.numpy())
        assert np.array_equal(v.numpy(), ve.numpy())
    assert fn.stats["replays"] == 2, fn.explain()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_broadcast_gradient_of_a_view_sums_as_eager(dtype):
    """A gradient that eager hands a VJP as a view (a transpose's) arrives contiguous in a
    replay; summed down to a broadcast operand (linear's bias) it must give the same bits (it
    differed in the last place: numpy's summation order follows the layout)."""
    rng = np.random.default_rng(0)
    W = tg.tensor(rng.standard_normal((7, 8)).astype(dtype), requires_grad=True)
    b = tg.tensor(rng.standard_normal(7).astype(dtype), requires_grad=True)
    c = tg.tensor(rng.standard_normal(7).astype(dtype), requires_grad=True)

    def f(x):
        return (F.linear(x, W, b) + c).transpose(0, 1)
    fn = tg.compile(f)
    for _ in range(3):
        x = tg.tensor(rng.standard_normal((5, 33, 8)).astype(dtype))
        g = tg.tensor(rng.standard_normal((33, 5, 7)).astype(dtype))
        grads = []
        for run in (fn, f):
            W.grad = b.grad = c.grad = None
            run(x).backward(g)
            grads.append([p.grad.numpy().copy() for p in (W, b, c)])
        for gc, ge in zip(*grads):
            assert np.array_equal(gc, ge)
    assert fn.stats["replays"] == 2, fn.explain()


def test_retain_graph_and_overlapping_calls():
    """Two replayed calls alive at once (each its own buffers and kernel states), the first
    backward twice with retain_graph: the gradients of the eager calls, and a third backward
    raises as eager's does."""
    model = Recurrent(tg.nn.LSTM, np.float64)
    conv = tg.nn.Conv2d(1, 2, 3).double()

    def f(x, img):
        return model(x).sum() + F.max_pool2d(conv(img), 2).sum()
    fn = tg.compile(f)
    rng = np.random.default_rng(4)
    inputs = [(tg.tensor(rng.standard_normal((4, 2, 3))), tg.tensor(rng.standard_normal(
        (1, 1, 6, 6)))) for _ in range(4)]
    params = list(model.parameters()) + list(conv.parameters())

    def grads(run, calls):
        for p in params:
            p.grad = None
        outs = [run(*inputs[k]) for k in calls]
        outs[0].backward(retain_graph=True)
        outs[0].backward(retain_graph=True)
        outs[1].backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            outs[1].backward()
        return [p.grad.numpy().copy() for p in params]
    fn(*inputs[3]).backward()              # the capture
    got, want = grads(fn, (0, 1)), grads(f, (0, 1))
    assert fn.stats["replays"] == 2, fn.explain()
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
