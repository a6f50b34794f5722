"""Memory: long loops stay flat, dropped graphs are reclaimed, kept losses are cheap, deep
chains work.  Marked slow (run by .ci/run; `pytest -m "not slow"` skips them)."""
import gc
import time

import numpy as np
import pytest

import tapegrad as tg

pytestmark = pytest.mark.slow


def rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4      # resident pages * 4 KiB


def small_model(rng):
    w1 = tg.tensor(rng.standard_normal((8, 16)) * 0.1, requires_grad=True)
    w2 = tg.tensor(rng.standard_normal((16,)) * 0.1, requires_grad=True)
    return w1, w2


def forward(x, w1, w2):
    # (B, 8) -> (B, 16) via broadcasting and a sum, then tanh and a weighted sum
    h = (x[:, :, None] * w1).sum(1).tanh()
    return (h * w2).sum(1)


def test_30000_step_training_loop_keeps_rss_flat():
    rng = np.random.default_rng(0)
    w1, w2 = small_model(rng)
    x = tg.tensor(rng.standard_normal((32, 8)))
    y = tg.tensor(rng.standard_normal(32))
    for step in range(30_000):
        loss = ((forward(x, w1, w2) - y) ** 2).mean()
        loss.backward()
        with tg.no_grad():
            w1 -= 0.01 * w1.grad
            w2 -= 0.01 * w2.grad
        w1.grad = None
        w2.grad = None
        if step == 2_000:
            gc.collect()
            warm = rss_kb()
    gc.collect()
    growth = rss_kb() - warm
    print(f"RSS growth over 28,000 steps after warm-up: {growth} KiB")
    assert growth < 5 * 1024


def test_graphs_dropped_without_backward_are_reclaimed():
    rng = np.random.default_rng(1)
    w1, w2 = small_model(rng)
    x = tg.tensor(rng.standard_normal((4, 8)))
    forward(x, w1, w2)                          # creates the weights' LEAF records
    gc.collect()  # earlier tests' cyclic garbage must not be freed mid-test
    live = tg._core.tape().live_records
    for _ in range(5_000):
        out = forward(x, w1, w2)                # inference while parameters require grad
        assert out.requires_grad
    del out
    assert tg._core.tape().live_records == live


def test_kept_losses_cost_only_their_records():
    rng = np.random.default_rng(2)
    w1, w2 = small_model(rng)
    x = tg.tensor(rng.standard_normal((32, 8)))
    y = tg.tensor(rng.standard_normal(32))
    kept = []
    gc.collect()
    before_rss, before_cap = rss_kb(), tg._core.tape().capacity
    n = 20_000
    for _ in range(n):
        loss = ((forward(x, w1, w2) - y) ** 2).mean()
        loss.backward()
        kept.append(loss)                        # the habit that leaks in many frameworks
    gc.collect()
    per_loss = (rss_kb() - before_rss) * 1024 / n
    records = (tg._core.tape().capacity - before_cap) * tg._core.RECORD_SIZE / n
    print(f"per kept loss: {per_loss:.0f} bytes of RSS ({records:.0f} bytes of tape)")
    assert per_loss < 6_000                      # PyTorch holds about 6 KB per kept loss here
    del kept


def test_million_op_chain_forward_backward_and_release():
    x = tg.tensor([0.5], dtype=tg.float64, requires_grad=True)
    t0 = time.perf_counter()
    y = x
    for _ in range(1_000_000):
        y = y * 1.0
    t1 = time.perf_counter()
    y.backward()
    t2 = time.perf_counter()
    del y
    t3 = time.perf_counter()
    print(f"1,000,000-op chain: forward {t1 - t0:.2f} s, backward {t2 - t1:.2f} s, "
          f"release {t3 - t2:.2f} s")
    assert x.grad.item() == 1.0
    assert tg._core.tape().live_records < 100
