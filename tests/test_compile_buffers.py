"""tapegrad.compile: in-place writes into module buffers replay (BatchNorm in training).

A write that records nothing into a tensor the call did not make (BatchNorm's
num_batches_tracked.add_(1), a counter buffer's +=) is performed again by the replay after its
forward; everything else about it must equal eager: values, gradients, the buffers' values and
version counters, over several calls.  Guards: the buffers' identity; a write into a tensor the
call also reads stays eager."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


def _cnn(momentum=0.1, seed=0):
    tg.manual_seed(seed)
    return tg.nn.Sequential(tg.nn.Conv2d(3, 4, 3), tg.nn.BatchNorm2d(4, momentum=momentum),
                            tg.nn.ReLU(), tg.nn.Flatten(), tg.nn.Linear(4 * 6 * 6, 5))


def _same_state(me, mc):
    for (name, a), (_, b) in zip(me.state_dict().items(), mc.state_dict().items()):
        assert np.array_equal(a.numpy(), b.numpy()), name
    for a, b in zip(me.buffers(), mc.buffers()):
        assert a._version == b._version


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_batchnorm_training_step_replays_as_eager(dtype):
    me, mc = _cnn().to(dtype), _cnn().to(dtype)
    loss_fn = tg.nn.CrossEntropyLoss()
    compiled = tg.compile(lambda x, y: loss_fn(mc(x), y))
    rng = np.random.default_rng(1)
    for _ in range(4):
        x = tg.tensor(rng.standard_normal((2, 3, 8, 8)), dtype=dtype)
        y = tg.tensor(rng.integers(0, 5, 2))
        le, lc = loss_fn(me(x), y), compiled(x, y)
        le.backward()
        lc.backward()
        assert le.item() == lc.item()
        _same_state(me, mc)
        for a, b in zip(me.parameters(), mc.parameters()):
            assert np.array_equal(a.grad.numpy(), b.grad.numpy())
    assert compiled.stats["replays"] == 3, compiled.explain()
    assert int(mc[1].num_batches_tracked) == 4


def test_batchnorm_training_forward_without_grad_replays():
    me, mc = _cnn(), _cnn()
    compiled = tg.compile(mc)
    x = tg.randn(2, 3, 8, 8)
    with tg.no_grad():
        for _ in range(3):
            assert np.array_equal(me(x).numpy(), compiled(x).numpy())
    _same_state(me, mc)
    assert compiled._compiled_call.stats["replays"] == 2
    assert int(mc[1].num_batches_tracked) == 3


def test_counter_buffer_iadd_replays():
    class Counting(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = tg.nn.Linear(3, 2)
            self.register_buffer("calls", tg.zeros((), dtype=tg.int64))
            self.register_buffer("seen", tg.zeros(3))

        def forward(self, x):
            self.calls += 1
            with tg.no_grad():
                self.seen.add_(x.sum(0))        # an operand the forward computes
            return self.lin(x).sum()

    tg.manual_seed(0)
    m = Counting()
    compiled = tg.compile(m)._compiled_call
    xs = [tg.randn(4, 3) for _ in range(3)]
    for x in xs:
        compiled(x).backward()
    assert compiled.stats["replays"] == 2, compiled.explain()
    assert int(m.calls) == 3
    expect = np.zeros(3, np.float32)
    for x in xs:
        expect += x.numpy().sum(0)
    assert np.array_equal(m.seen.numpy(), expect)


def test_rebound_buffer_is_a_guard_failure():
    mc = _cnn()
    loss_fn = tg.nn.CrossEntropyLoss()
    compiled = tg.compile(lambda x, y: loss_fn(mc(x), y))
    x, y = tg.randn(2, 3, 8, 8), tg.tensor([0, 1])
    compiled(x, y)
    compiled(x, y)
    old = mc[1].num_batches_tracked
    mc[1].num_batches_tracked = tg.tensor(10)       # a new tensor under the same name
    compiled(x, y)
    assert compiled.stats["guard_failures"] == 1
    assert int(old) == 2 and int(mc[1].num_batches_tracked) == 11
    compiled(x, y)
    assert int(mc[1].num_batches_tracked) == 12 and compiled.stats["replays"] == 2


def test_write_into_a_tensor_the_call_reads_stays_eager():
    # momentum=None: the factor is 1 / num_batches_tracked.item(), read after the write
    me, mc = _cnn(momentum=None), _cnn(momentum=None)
    loss_fn = tg.nn.CrossEntropyLoss()
    compiled = tg.compile(lambda x, y: loss_fn(mc(x), y))
    for _ in range(3):
        x, y = tg.randn(2, 3, 8, 8), tg.tensor([0, 1])
        assert loss_fn(me(x), y).item() == compiled(x, y).item()
    _same_state(me, mc)
    assert compiled.stats["replays"] == 0 and "writes in place" in compiled.explain()


def test_write_into_an_argument_stays_eager():
    def f(x, counter):
        counter.add_(1)
        return x * 2

    compiled = tg.compile(f)
    counters = [tg.zeros(()) for _ in range(3)]
    for c in counters:
        compiled(tg.ones(2), c)
    assert [float(c) for c in counters] == [1, 1, 1] and compiled.stats["replays"] == 0


def test_random_fill_of_a_buffer_stays_eager():
    noise = tg.zeros(3)

    def f(x):
        noise.normal_()
        return x * 2

    compiled = tg.compile(f)
    tg.manual_seed(0)
    for _ in range(2):
        compiled(tg.ones(3))
    assert compiled.stats["replays"] == 0 and "in-place" in compiled.explain()


def test_create_graph_through_a_batchnorm_replay_leaves_the_buffers_as_eager():
    me, mc = _cnn(), _cnn()
    compiled = tg.compile(mc)
    for _ in range(3):
        x = tg.randn(2, 3, 8, 8, requires_grad=True)
        ge, = tg.autograd.grad(me(x).sum(), x, create_graph=True)
        gc, = tg.autograd.grad(compiled(x).sum(), x, create_graph=True)
        assert np.array_equal(ge.detach().numpy(), gc.detach().numpy())
        _same_state(me, mc)
    assert compiled._compiled_call.stats["replays"] == 2


class _Ema(tg.nn.Module):
    """A buffer updated in place from values the forward computes (an EMA of features, a slot of
    a queue): the writes read the replay's slots, after its forward."""

    def __init__(self):
        super().__init__()
        self.lin = tg.nn.Linear(4, 3)
        self.register_buffer("ema", tg.zeros(3))
        self.register_buffer("queue", tg.zeros(2, 3))
        self.register_buffer("seen", tg.zeros((), dtype=tg.int64))
        self.slot = 1

    def forward(self, x):
        feat = (self.lin(x) * 0.5 + 1.0).tanh()       # an elementwise run (fused in the replay)
        with tg.no_grad():
            self.ema.mul_(0.9).add_(feat.mean(0), alpha=0.1)
            self.queue[self.slot] = feat.detach()[0]
            self.seen.fill_(x.shape[0])
        return feat.sum()


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_buffers_updated_from_computed_values_replay_as_eager(dtype):
    tg.manual_seed(0)
    me = _Ema().to(dtype)
    tg.manual_seed(0)
    mc = _Ema().to(dtype)
    compiled = tg.compile(mc)._compiled_call
    rng = np.random.default_rng(3)
    for _ in range(4):
        x = tg.tensor(rng.standard_normal((5, 4)), dtype=dtype)
        le, lc = me(x), compiled(x)
        le.backward()
        lc.backward()
        assert le.item() == lc.item()
        _same_state(me, mc)
        for a, b in zip(me.parameters(), mc.parameters()):
            assert np.array_equal(a.grad.numpy(), b.grad.numpy())
    assert compiled.stats["replays"] == 3, compiled.explain()


def test_write_that_reads_its_own_target_stays_eager():
    class Shift(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("queue", tg.zeros(2, 3))

        def forward(self, x):
            with tg.no_grad():
                self.queue[1] = self.queue[0]       # reads the tensor it writes
                self.queue[0] = x.detach()
            return (x * 2.0).sum()

    me, mc = Shift(), Shift()
    compiled = tg.compile(mc)._compiled_call
    for k in range(3):
        x = tg.full((3,), float(k), requires_grad=True)
        assert me(x).item() == compiled(x).item()
    assert np.array_equal(me.queue.numpy(), mc.queue.numpy())
    assert compiled.stats["replays"] == 0
