"""tapegrad.compile's recomputing fused backward (src/tapegrad/fusion.pxi): a fused group whose
backward would read more saved bytes than the threshold keeps none of them; its backward runs
each block's forward steps again from copies of the group's inputs, then the VJPs.  Compiled must
equal eager bit for bit (values and gradients, float32 and float64, over calls with changing
inputs), the planner must pick recomputation past the threshold only, and the saved values must
really be gone when it does."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.replay as replay

# Elements at which a 10-cycle mixed chain's saved values (4 per cycle) pass the core's
# threshold (16 MiB) in both float32 and float64.
BIG = 120_000


def mixed_cycles(x, w, p, cycles):
    """The bench's mixed chain (* + tanh sin sigmoid exp), with a same-shaped closure tensor w
    and a 0-dim parameter p mixed in."""
    for _ in range(cycles):
        x = tg.exp(tg.sigmoid(tg.sin(tg.tanh(x * 0.5 + 0.25))))
        x = x * w - p
    return x


def program_of(compiled):
    """The Program of the compiled call's (only) plan that records gradients."""
    programs = [plan.program for plan in compiled._plans.values() if plan.program is not None]
    assert programs, compiled.explain()
    return programs[0]


def run(fn, xb, wb, pv, dt, seeds):
    x = tg.tensor(xb, dtype=dt, requires_grad=True)
    w = tg.tensor(wb, dtype=dt, requires_grad=True)
    p = tg.tensor(pv, dtype=dt, requires_grad=True)
    outs = fn(x, w, p)
    outs = outs if isinstance(outs, tuple) else (outs,)
    tg.autograd.backward(outs, [tg.tensor(s, dtype=dt) for s in seeds[:len(outs)]])
    return ([o.detach().numpy().copy() for o in outs],
            [t.grad.numpy().copy() if t.grad is not None else None for t in (x, w, p)])


def assert_same(got, want, where):
    for u, v in zip(got[0] + got[1], want[0] + want[1]):
        assert (u is None and v is None) or np.array_equal(u, v, equal_nan=True), where


@pytest.mark.parametrize("dt", [tg.float32, tg.float64])
def test_recomputing_chain_bit_identical_to_eager(dt):
    """A 70-op chain past the threshold: outputs, input gradient and the gradients of a
    full-size closure tensor and a 0-dim parameter equal eager's over calls with new values; a
    mid-chain value is also returned and also read after a step that is not fused (a sum), so it
    escapes the group and has a gradient of its own."""
    def fn(x, w, p):
        h = mixed_cycles(x, w, p, 5)
        y = mixed_cycles(h, w, p, 5)
        return y * h.sum() * 1e-5, h

    compiled = tg.compile(fn)
    rng = np.random.default_rng(0)
    for call in range(3):
        xb, wb = rng.uniform(-1, 1, BIG), rng.uniform(0.5, 1.5, BIG)
        pv = float(rng.uniform(-0.5, 0.5))
        seeds = [rng.uniform(-1, 1, BIG) for _ in range(2)]
        assert_same(run(compiled, xb, wb, pv, dt, seeds), run(fn, xb, wb, pv, dt, seeds),
                    (dt, call))
    assert compiled.stats["replays"] == 2, compiled.explain()
    assert program_of(compiled).recomputed_groups, compiled.explain()
    assert "recomputing" in compiled.explain(), compiled.explain()


@pytest.mark.parametrize("dt", [tg.float32, tg.float64])
def test_bench_chain_recomputes_and_matches(dt):
    """The bench's 300-op chain (at a size past the threshold) recomputes, exactly."""
    def fn(x, w, p):
        for _ in range(50):
            x = tg.exp(tg.sigmoid(tg.sin(tg.tanh(x * 0.5 + 0.25))))
        return x

    compiled = tg.compile(fn)
    rng = np.random.default_rng(1)
    n = 30_000
    for call in range(2):
        xb = rng.uniform(-1, 1, n)
        seeds = [rng.uniform(-1, 1, n)]
        assert_same(run(compiled, xb, xb, 0.0, dt, seeds), run(fn, xb, xb, 0.0, dt, seeds),
                    (dt, call))
    assert program_of(compiled).recomputed_groups == [0], compiled.explain()


def test_planner_recomputes_past_the_threshold_only():
    """Small groups keep today's saved values (cache-resident, faster); a group recomputes only
    when its saved bytes pass the threshold, and never when no gradient is recorded."""
    fn = lambda x: mixed_cycles(x, 1.0, 0.0, 5)
    small = tg.compile(fn)
    small(tg.ones(4096, dtype=tg.float64, requires_grad=True))
    assert program_of(small).fused_groups and program_of(small).recomputed_groups == []
    assert "recomputing" not in small.explain()
    big = tg.compile(fn)
    x = tg.ones(BIG, dtype=tg.float64, requires_grad=True)
    big(x)
    assert program_of(big).recomputed_groups == [0]
    with tg.no_grad():
        inference = tg.compile(fn)
        inference(x)
    assert program_of(inference).recomputed_groups == []


def replay_allocations(fn, x, threshold):
    """Peak bytes traced while the first replay of fn allocates its buffers."""
    before = replay._RECOMPUTE_BYTES
    replay._RECOMPUTE_BYTES = threshold
    try:
        compiled = tg.compile(fn)
        compiled(x).sum().backward()            # capture (eager)
        tracemalloc.start()
        try:
            compiled(x).sum().backward()        # first replay: its buffer set is made here
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    finally:
        replay._RECOMPUTE_BYTES = before
    assert compiled.stats["replays"] == 1, compiled.explain()
    return peak, program_of(compiled)


def test_recomputing_forward_keeps_no_saved_values():
    """Where the planner says a group recomputes, its forward must not keep the full-size values
    (else recomputation would silently not be used): the replay's buffers shrink from the chain's
    ~40 saved arrays to a few arrays (the input's copy, the output, the adjoints)."""
    fn = lambda x: mixed_cycles(x, 1.0, 0.0, 10)
    n = 50_000
    x = tg.tensor(np.linspace(-1, 1, n), requires_grad=True)
    saving, p_saving = replay_allocations(fn, x, -1)
    recomputing, p_recomputing = replay_allocations(fn, x, 0)
    assert p_saving.recomputed_groups == [] and p_recomputing.recomputed_groups == [0]
    array = n * 8                           # (both: the rows, scratch, output, adjoints)
    assert saving - recomputing > 30 * array, (saving, recomputing)   # 40 saved values


def test_inputs_written_in_place_after_the_forward():
    """The backward recomputes from the values the forward read: an in-place write to the input
    (which eager's records did not save: no error) leaves the gradient as eager's (the group
    reads a copy taken by its forward; reading the input again gave a wrong gradient, SILENT);
    one to a returned mid-chain value nothing saved changes nothing; one to a returned value
    eager saved (exp's output) raises eager's error."""
    def fn(x, w, p):
        h = x * 0.5 + 0.25                  # returned; only read by tanh, which saves its output
        return mixed_cycles(h, 1.0, 0.0, 10), h

    compiled = tg.compile(fn)
    rng = np.random.default_rng(2)
    for call in range(3):
        xb = rng.uniform(-1, 1, BIG)
        seed = rng.uniform(-1, 1, BIG)
        grads = []
        for f in (compiled, fn):
            x = tg.tensor(xb, requires_grad=True)
            xd = x.detach()
            y, h = f(x, None, None)
            xd.mul_(3.0)                    # the input, under autograd's back
            h.add_(1.0)
            y.backward(tg.tensor(seed))
            grads.append(x.grad.numpy().copy())
        assert np.array_equal(grads[0], grads[1]), call
    assert program_of(compiled).recomputed_groups == [0], compiled.explain()
    def ends_in_exp(x):
        return tg.exp(mixed_cycles(x, 1.0, 0.0, 10))

    errors = []
    for f in (tg.compile(ends_in_exp), ends_in_exp):
        for _ in range(2):                  # (the compiled call's second call is a replay)
            y = f(tg.tensor(rng.uniform(-1, 1, BIG), requires_grad=True))
        y.add_(1.0)
        with pytest.raises(RuntimeError) as info:
            y.backward(tg.ones(BIG, dtype=tg.float64))
        errors.append(str(info.value))
    assert "modified by an inplace operation" in errors[0]
    assert errors[0] == errors[1]


@pytest.fixture
def threads():
    before = tg.get_num_threads()
    yield tg.set_num_threads
    tg.set_num_threads(before)


@pytest.mark.parametrize("dt", [tg.float32, tg.float64])
def test_recomputing_groups_over_threads_and_partial_blocks(dt, threads):
    """Lanes over the thread pool each recompute their own blocks; sizes that end a block part
    way; a second group after a step that is not fused (both recompute)."""
    def fn(x, w, p):
        h = mixed_cycles(x, w, p, 3)
        return mixed_cycles(h * h.sum() * 1e-4, w, p, 3)

    rng = np.random.default_rng(3)
    n = 70_001
    xb, wb = rng.uniform(-1, 1, n), rng.uniform(0.5, 1.5, n)
    seeds = [rng.uniform(-1, 1, n)]
    threads(1)
    want = run(fn, xb, wb, 0.25, dt, seeds)
    before = replay._RECOMPUTE_BYTES
    replay._RECOMPUTE_BYTES = 0
    try:
        for count in (1, 2, 3):
            threads(count)
            compiled = tg.compile(fn)
            for call in range(2):
                assert_same(run(compiled, xb, wb, 0.25, dt, seeds), want, (count, call))
            assert program_of(compiled).recomputed_groups == [0, 1], compiled.explain()
    finally:
        replay._RECOMPUTE_BYTES = before
