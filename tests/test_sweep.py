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


def _traced_peak_during(fn):
    import tracemalloc
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        fn()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_fresh_weight_gradient_becomes_grad_without_a_copy():
    # A linear layer's weight gradient is a fresh array nobody else holds: the sweep hands it over
    # as .grad, so backward allocates one weight-sized array, not two.
    rng = np.random.default_rng(0)
    w = tg.tensor(rng.standard_normal((500, 500)), requires_grad=True)
    x = tg.tensor(rng.standard_normal((3, 500)))
    loss = tg.nn.functional.linear(x, w).sum()
    nbytes = w.detach().numpy().nbytes
    peak = _traced_peak_during(loss.backward)
    assert nbytes <= peak < 1.5 * nbytes
    np.testing.assert_allclose(w.grad.numpy(), np.broadcast_to(x.numpy().sum(0), (500, 500)))


class _KeepsItsGradient(tg.autograd.Function):
    kept = None

    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        _KeepsItsGradient.kept = g * 2.0          # the Function keeps the tensor it returns
        return _KeepsItsGradient.kept


def test_gradient_held_elsewhere_is_copied_into_grad():
    # Adopting an array that something else still references would alias .grad with it.
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    _KeepsItsGradient.apply(x).sum().backward()
    x.grad.mul_(10.0)                             # an in-place change to .grad ...
    assert _KeepsItsGradient.kept.tolist() == [2.0, 2.0]    # ... is not seen by the kept tensor
    assert x.grad.tolist() == [20.0, 20.0]

    seed = tg.ones(2)                             # the user's seed passes through unchanged
    y = tg.tensor([3.0, 4.0], requires_grad=True)
    (y + 0.0).backward(seed)
    y.grad.add_(1.0)
    assert seed.tolist() == [1.0, 1.0] and y.grad.tolist() == [2.0, 2.0]
