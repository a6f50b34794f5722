"""The reverse sweep is compiled: no Python call per node, no recursion, any depth."""

import numpy as np

import tapegrad as tg
from tapegrad.testing import count_python_calls as _python_calls_during


def _chain(x, n):
    y = x
    for i in range(n):
        y = y * 1.0001 if i % 3 == 0 else (y + 0.5 if i % 3 == 1 else y.tanh())
    return y.sum()


def test_backward_makes_no_python_call_per_node():
    x = tg.tensor(np.linspace(-1, 1, 8), requires_grad=True)
    small, big = _chain(x, 100), _chain(x, 10_000)
    small_calls = _python_calls_during(small.backward)
    big_calls = _python_calls_during(big.backward)
    # Same constant overhead (argument handling, errstate) whatever the graph's size.
    assert big_calls == small_calls
    assert small_calls < 50


def test_deep_chain_has_no_recursion_limit():
    x = tg.tensor([0.5], requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 1e-6
    y.backward()
    assert x.grad.tolist() == [1.0]
    del y                      # releasing 100,000 records is iterative too


def test_sweep_skips_unrelated_records_and_stops_early():
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = tg.tensor([3.0], requires_grad=True)
    unrelated = [b * i for i in range(50)]
    out = (a * 3).sum()
    out.backward()
    assert a.grad.tolist() == [3.0, 3.0]
    assert b.grad is None
    assert len(unrelated) == 50


def test_fan_out_and_fan_in_accumulate():
    x = tg.tensor([2.0], requires_grad=True, dtype=tg.float64)
    h = x * x                     # used three times below
    out = (h + h * 3 + h.exp()).sum()
    out.backward()
    expected = 2 * 2.0 + 3 * 2 * 2.0 + np.exp(4.0) * 2 * 2.0
    np.testing.assert_allclose(x.grad.numpy(), [expected])
