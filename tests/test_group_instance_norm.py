"""GroupNorm / F.group_norm and InstanceNorm1d/2d / F.instance_norm: values, gradients (float64
finite differences), running statistics, repr, errors, against torch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F


def test_group_norm_values():
    x = tg.arange(8.0).reshape(2, 4)
    assert np.allclose(F.group_norm(x, 2).numpy(), [[-1, 1, -1, 1]] * 2, atol=1e-4)
    m = tg.nn.GroupNorm(2, 4)
    assert repr(m) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    assert m.weight.tolist() == [1.0] * 4 and m.bias.tolist() == [0.0] * 4
    assert sorted(m.state_dict()) == ["bias", "weight"]
    y = m(tg.randn(3, 4, 5))
    per_group = y.detach().numpy().reshape(3, 2, -1)
    assert np.allclose(per_group.mean(-1), 0, atol=1e-5) and np.allclose(per_group.std(-1), 1, atol=1e-3)


def test_group_norm_errors():
    with pytest.raises(ValueError, match=r"num_channels \(4\) must be divisible by num_groups \(3\)"):
        tg.nn.GroupNorm(3, 4)
    with pytest.raises(RuntimeError, match="divisible by num_groups, but got input of shape"):
        F.group_norm(tg.zeros(2, 4, 3), 3)
    with pytest.raises(RuntimeError, match="Expected weight to be a vector of size equal"):
        tg.nn.GroupNorm(2, 4)(tg.zeros(2, 6, 3))
    with pytest.raises(RuntimeError, match="Expected at least 2 dimensions"):
        F.group_norm(tg.zeros(4), 2)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        F.group_norm(tg.zeros(1, 2), 2)


def test_instance_norm_values_and_running_stats():
    m = tg.nn.InstanceNorm1d(2, track_running_stats=True)
    assert repr(m) == ("InstanceNorm1d(2, eps=1e-05, momentum=0.1, affine=False, bias=False, "
                       "track_running_stats=True)")
    x = tg.tensor([[[1.0, 3.0], [0.0, 4.0]]])
    y = m(x)
    assert np.allclose(y.numpy(), [[[-1, 1], [-1, 1]]], atol=1e-4)
    assert np.allclose(m.running_mean.numpy(), [0.2, 0.2])
    assert np.allclose(m.running_var.numpy(), [0.9 + 0.1 * 2, 0.9 + 0.1 * 8])
    m.eval()
    assert np.allclose(m(x).numpy(), ((x.numpy() - 0.2) / np.sqrt(m.running_var.numpy()[:, None] + 1e-5)), atol=1e-5)
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        m(tg.zeros(3))
    with pytest.raises(ValueError, match="Expected more than 1 spatial element"):
        tg.nn.InstanceNorm1d(3)(tg.zeros(2, 3, 1))
    with pytest.raises(ValueError, match="to match num_features"):
        tg.nn.InstanceNorm1d(3, affine=True)(tg.zeros(2, 4, 5))
    with pytest.warns(UserWarning, match="does not match num_features"):
        tg.nn.InstanceNorm2d(3)(tg.zeros(2, 4, 2, 2))


def test_gradcheck_norms(gradcheck):
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((2, 4, 3)), rng.standard_normal(4), rng.standard_normal(4)
    gradcheck(lambda a, c, d: F.group_norm(a, 2, c, d), x, w, b)
    gradcheck(lambda a, c, d: F.instance_norm(a, weight=c, bias=d), x, w, b)
    gradcheck(lambda a: tg.nn.InstanceNorm2d(4)(a), rng.standard_normal((4, 3, 2)))


def _compare(lib, make, x, train):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = make(lib)
        if getattr(m, "weight", None) is not None:
            with lib.no_grad():
                m.weight.copy_(lib.tensor(np.linspace(0.5, 1.5, m.weight.numel())))
                m.bias.copy_(lib.tensor(np.linspace(-1, 1, m.bias.numel())))
        m.train(train)
        xs = lib.tensor(x, requires_grad=True)
        y = m(xs)
        y = m(xs)           # twice: running statistics move
        (y * lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))).sum().backward()
    return ([y.detach().numpy(), xs.grad.numpy()] + [p.grad.numpy() for p in m.parameters()]
            + [t.numpy() for t in m.buffers()], repr(m), [str(w.message) for w in caught])


def test_random_against_torch(torch):
    rng = np.random.default_rng(2)
    for trial in range(30):
        n, c = int(rng.integers(1, 4)), int(rng.choice([2, 4, 6]))
        g = int(rng.choice([k for k in (1, 2, 3, 6) if c % k == 0]))
        spatial = tuple(int(s) for s in rng.integers(2, 4, int(rng.integers(1, 3))))
        x = rng.standard_normal((n, c) + spatial) * 3 + 1
        x1 = rng.standard_normal((n, c, int(rng.integers(2, 6))))
        x2 = rng.standard_normal((n, c, 2, 3))
        cases = [(lambda L: L.nn.GroupNorm(g, c, affine=trial % 3 != 0, dtype=L.float64), x, True),
                 (lambda L: L.nn.InstanceNorm1d(c, affine=trial % 2 == 0, dtype=L.float64,
                                                track_running_stats=trial % 3 == 0), x1, trial % 4 != 0),
                 (lambda L: L.nn.InstanceNorm1d(c, dtype=L.float64), x1[0], True),
                 (lambda L: L.nn.InstanceNorm2d(c, affine=True, track_running_stats=True,
                                                dtype=L.float64), x2, trial % 2 == 0)]
        for make, data, train in cases:
            ours, theirs = _compare(tg, make, data, train), _compare(torch, make, data, train)
            assert ours[1:] == theirs[1:]
            for a, b in zip(ours[0], theirs[0]):
                np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)
