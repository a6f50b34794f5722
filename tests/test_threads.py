"""Threads: per-thread grad mode, independent training in parallel, a concurrent stress test."""
import gc
import threading

import numpy as np

import tapegrad as tg


def _train(seed, steps=200):
    rng = np.random.default_rng(seed)
    w = tg.tensor(rng.standard_normal((4, 1)), requires_grad=True)
    x = tg.tensor(rng.standard_normal((32, 4)))
    y = tg.tensor(rng.standard_normal((32, 1)))
    losses = []
    for _ in range(steps):
        pred = (x * w[:, 0]).sum(1, keepdim=True)
        loss = ((pred - y) ** 2).mean()
        loss.backward()
        with tg.no_grad():
            w -= 0.05 * w.grad
        w.grad = None
        losses.append(loss.item())
    return losses, w.detach().numpy().copy()


def test_two_threads_get_the_results_of_sequential_runs():
    expected = [_train(1), _train(2)]
    results = [None, None]

    def run(i):
        results[i] = _train(i + 1)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (losses, w), (exp_losses, exp_w) in zip(results, expected):
        assert losses == exp_losses
        np.testing.assert_array_equal(w, exp_w)


def test_stress_many_threads_recording_and_sweeping():
    errors = []
    gc.collect()
    live_before = tg._core.tape().live_records   # what earlier tests in this process still hold

    def worker(seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(100):
                n = int(rng.integers(1, 4000))     # large sizes release the GIL in kernels
                x = tg.tensor(rng.standard_normal(n), requires_grad=True)
                y = x
                for k in range(int(rng.integers(1, 20))):
                    y = (y * 0.9 + 0.1).tanh() if k % 2 else y.exp() * 0.5
                y.sum().backward()
                assert x.grad.shape == (n,)
                assert np.isfinite(x.grad.numpy()).all()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    gc.collect()
    # Everything the workers recorded was released: relative to what the process held before,
    # since earlier tests may keep tensors alive in module globals or caches.
    assert tg._core.tape().live_records <= live_before + 8
