"""Regressions of the session-20 fuzz findings (seeds 60613500-, 62605000-, 63004000-).

Each test asserts the right values without torch where it can and, where torch is installed,
compares with it (the `torch` fixture skips cleanly without it).
"""
import math

import numpy as np
import pytest

import tapegrad as tg


# -- the batch-size checks of the norms count from the shape (seed 63004037) ------------------
# PyTorch refuses a batch of one value per channel: batch_norm when N * prod(spatial) == 1,
# instance_norm when prod(spatial) == 1.  tapegrad counted numel // C (0 when C is 0) and
# refused <= 1, so an empty batch or one without channels raised where PyTorch normalises; and
# an empty batch must leave batch_norm's running statistics as they are (instance_norm's
# average of its per-instance copies is NaN over no instance).

NORM_SHAPES = [(1, 0, 3), (0, 2, 3), (1, 2, 1), (2, 0), (1, 0), (0, 3), (2, 3, 0), (0, 0, 3),
               (3, 0, 2), (2, 3, 1), (1, 1, 2), (0, 3, 2)]


def _norm_run(L, shape, which):
    F = L.nn.functional
    x = L.ones(shape, requires_grad=True)
    try:
        if which == "batch_norm":
            y = F.batch_norm(x, None, None, training=True)
        else:
            y = F.instance_norm(x)
    except ValueError as e:
        return "ValueError", str(e).split(",")[0]
    y.sum().backward()
    return tuple(y.shape), tuple(x.grad.shape), y.detach().numpy().tolist()


@pytest.mark.parametrize("shape", NORM_SHAPES)
@pytest.mark.parametrize("which", ["batch_norm", "instance_norm"])
def test_norm_batch_size_check_counts_from_the_shape(which, shape):
    counts = {"batch_norm": math.prod(shape[:1] + shape[2:]), "instance_norm": math.prod(shape[2:])}
    res = _norm_run(tg, shape, which)
    if counts[which] == 1:
        assert res == ("ValueError", "Expected more than 1 " +
                       ("value per channel when training" if which == "batch_norm"
                        else "spatial element when training"))
    else:
        assert res[:2] == (shape, shape)


@pytest.mark.parametrize("shape", NORM_SHAPES)
@pytest.mark.parametrize("which", ["batch_norm", "instance_norm"])
def test_norm_batch_size_check_matches_torch(torch, which, shape):
    assert _norm_run(tg, shape, which) == _norm_run(torch, shape, which)


@pytest.mark.parametrize("shape", [(0, 3), (0, 3, 2), (2, 3, 0)])
def test_running_statistics_of_an_empty_batch(torch, shape):
    def run(L, which):
        rm, rv = L.zeros(3), L.ones(3)
        x = L.ones(shape, requires_grad=True)
        if which == "batch_norm":
            L.nn.functional.batch_norm(x, rm, rv, training=True)
        else:
            L.nn.functional.instance_norm(x, rm, rv)
        return rm.numpy().tolist(), rv.numpy().tolist()
    for which in ("batch_norm", "instance_norm"):
        if which == "instance_norm" and len(shape) < 3:
            continue
        got, want = run(tg, which), run(torch, which)
        np.testing.assert_array_equal(np.array(got), np.array(want))
    # batch_norm: no value, no move
    assert run(tg, "batch_norm") == ([0.0] * 3, [1.0] * 3)
