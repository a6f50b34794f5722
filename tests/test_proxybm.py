"""Regressions found running quantitative-finance / Monte Carlo PyTorch scripts (proxybm)."""
import tracemalloc

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _fill_paths(m, steps, n):
    """A path tensor filled column by column from a parameter that requires grad (the Euler loop
    of a short-rate / GBM simulation); returns the parameter's gradient and the paths."""
    rng = np.random.default_rng(7)
    noise = m.tensor(rng.standard_normal((n, steps)).astype(np.float32))
    a = m.tensor(0.3, requires_grad=True)
    paths = m.zeros(n, steps)
    paths[:, 0] = m.log(a + 1)
    for t in range(1, steps):
        prev = paths[:, t - 1].clone()
        paths[:, t] = prev - a * prev * 0.1 + 0.05 * noise[:, t]
    loss = (paths[:, -1] ** 2).mean() + paths.sum() * 0.01
    loss.backward()
    return paths.detach().numpy(), a.grad.numpy()


def test_column_fill_of_recorded_paths_matches_torch():
    got_p, got_g = _fill_paths(tapegrad, 12, 5)
    exp_p, exp_g = _fill_paths(torch, 12, 5)
    np.testing.assert_allclose(got_p, exp_p, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got_g, exp_g, rtol=1e-5)


def test_recorded_setitem_writes_in_place_without_copying_the_tensor():
    # A recorded x[:, t] = v copied all of x per write: a path loop of T columns was quadratic
    # in T (a 1000 x 7560 Black-Karasinski simulation ran for many minutes).  The write must not
    # allocate anything of the size of x.
    a = tapegrad.tensor(0.5, requires_grad=True)
    x = tapegrad.zeros(1000, 2000)
    x[:, 0] = a * 2
    v = a * tapegrad.ones(1000)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        x[:, 1] = v
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < x.numel() * 4 // 10, peak
    assert x.grad_fn.name().endswith("CopySlices")
    x.sum().backward()
    assert a.grad.item() == pytest.approx(1000 * 2 + 1000)


def test_recorded_setitem_of_interleaved_views_matches_torch():
    # x[::2] = x[1::2]: the written view and the value's view share the storage (not elements)
    for m in (tapegrad, torch):
        w = m.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], requires_grad=True)
        x = w * 1
        x[::2] = x[1::2]
        x[1::2] = x[::2] * 3
        (x * m.tensor([1.0, 10.0, 100.0, 1000.0, 1e4, 1e5])).sum().backward()
        res = (x.detach().numpy(), w.grad.numpy(), x.grad_fn.name().split("::")[-1])
        if m is tapegrad:
            got = res
        else:
            exp = res
    np.testing.assert_array_equal(got[0], exp[0])
    np.testing.assert_array_equal(got[1], exp[1])
    assert got[2] == exp[2]


def test_recorded_setitem_advanced_and_cast_values_match_torch():
    for m in (tapegrad, torch):
        w = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        v = m.tensor([7.0, 8.0], dtype=m.float64, requires_grad=True)
        x = w * 2
        x[[1, 0], [2, 1]] = v.float()
        x[0, 0] = 1e30
        x.masked_fill_(x > 100, -1.0)
        (x * m.arange(6.0).reshape(2, 3)).sum().backward()
        res = (x.detach().numpy(), w.grad.numpy(), v.grad.numpy())
        if m is tapegrad:
            got = res
        else:
            exp = res
    for g, e in zip(got, exp):
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("shape, key", [
    ((0,), (Ellipsis, 0)),                  # VaR of an empty return series: sorted[..., k]
    ((2, 3, 4), (Ellipsis, 7)),
    ((3,), (Ellipsis, 3)),
    ((2, 3, 4), (None, 5)),
    ((2, 3, 4), (None, None, 0, 7)),
    ((2, 3, 4), (True, 5)),
    ((2, 3, 4), (0, Ellipsis, 0, -9)),
    ((2, 3, 4), (1, -5)),
])
def test_int_index_out_of_range_names_the_key_position_as_torch(shape, key):
    with pytest.raises(IndexError) as exp:
        torch.zeros(shape)[key]
    with pytest.raises(IndexError) as got:
        tapegrad.zeros(shape)[key]
    assert str(got.value) == str(exp.value)
