"""A compiled call runs every op eager runs, even one whose result nothing uses: such an op may
raise on values or draw from the random stream, and eager does both (fuzz seed 51039596: the
compiled call returned where eager raised "all elements of input should be between 0 and 1").
Only factories and shape ops, which can do neither, are skipped when dead (test_replay46.py)."""
import numpy as np
import pytest

import tapegrad as tg

F = tg.nn.functional


def test_an_unused_op_still_checks_its_values():
    target = tg.tensor([0.5, 0.5], dtype=tg.float64)

    def step(x):
        y = x.rsqrt()
        F.binary_cross_entropy(y.detach().sigmoid(), target)     # result unused
        return y.sum()

    compiled = tg.compile(step)
    for _ in range(2):
        compiled(tg.tensor([0.8, 0.2], dtype=tg.float64, requires_grad=True))
    bad = [-0.8, 0.2]       # rsqrt: NaN, which the loss refuses
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        step(tg.tensor(bad, dtype=tg.float64, requires_grad=True))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        compiled(tg.tensor(bad, dtype=tg.float64, requires_grad=True))


def test_an_unused_class_index_is_still_checked():
    def step(logits, labels):
        F.cross_entropy(logits.detach(), labels)                  # result unused
        return logits.tanh().sum()

    compiled = tg.compile(step)
    x = tg.randn(3, 4, requires_grad=True)
    for _ in range(2):
        compiled(x, tg.tensor([0, 1, 3]))
    with pytest.raises(IndexError):
        step(x, tg.tensor([0, 1, 9]))
    with pytest.raises(IndexError):
        compiled(x, tg.tensor([0, 1, 9]))


def test_an_unused_random_draw_still_advances_the_stream():
    def step(x):
        tg.randn(3)                                               # result unused
        return x * tg.rand(2)

    compiled = tg.compile(step)
    for seed in range(4):
        tg.manual_seed(seed)
        eager = step(tg.ones(2)).numpy()
        tg.manual_seed(seed)
        assert np.array_equal(compiled(tg.ones(2)).numpy(), eager)
