"""Differences found by running vision-backbone scripts (ViT, Swin, ConvNeXt, MLP-Mixer,
MobileNet/EfficientNet, RepVGG; timm-style init and training idioms) under tapegrad and
PyTorch: each test replays the idiom in both and compares."""
import warnings

import numpy as np
import pytest

import tapegrad as tg


def _outcome(fn):
    """(exception type name, message) of fn(), or ("ok", result)."""
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__, str(e)


# -- nn.init.trunc_normal_ far in a tail ----------------------------------------------------------
# PyTorch redraws normals only when [a, b] holds more than 0.3 of the mass; otherwise it keeps
# uniform proposals on [a, b] by the pdf ratio.  Redrawing normals for a far tail never ended.

@pytest.mark.parametrize("mean,std,a,b,n", [(10.0, 1.0, -2.0, 2.0, 2000), (0.0, 1.0, 1.0, 3.0, 50000),
                                            (0.0, 1.0, -1.0, 3.0, 50000)])
def test_trunc_normal_in_a_tail_matches_torch(torch, mean, std, a, b, n):
    # (PyTorch's own uniform proposals are slow far out: few draws for the first case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tg.manual_seed(0)
        w = tg.nn.init.trunc_normal_(tg.empty(n, dtype=tg.float64), mean, std, a, b)
        t = torch.nn.init.trunc_normal_(torch.empty(n, dtype=torch.float64), mean, std, a, b)
    assert a <= w.min().item() and w.max().item() <= b
    spread = (b - a) * 0.01
    assert abs(w.mean().item() - t.mean().item()) < spread
    assert abs(w.std().item() - t.std().item()) < spread


def test_trunc_normal_far_tail_terminates_with_the_truncated_mean():
    # N(0, 0.02^2) on [-2, -1.9]: 95 std out; the truncated law is nearly exponential from -1.9
    # with rate (1.9 / 0.02^2), so its mean is -1.9 - 0.02^2 / 1.9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tg.manual_seed(0)
        w = tg.nn.init.trunc_normal_(tg.empty(20000, dtype=tg.float64), 0.0, 0.02, -2.0, -1.9)
    assert -2.0 <= w.min().item() and w.max().item() <= -1.9
    assert abs(w.mean().item() - (-1.9 - 0.02 ** 2 / 1.9)) < 1e-5


def test_trunc_normal_warns_when_mean_is_far_from_the_interval(torch):
    for lib in (tg, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.nn.init.trunc_normal_(lib.empty(4), mean=5.0, std=1.0, a=-2.0, b=2.0)
            lib.nn.init.trunc_normal_(lib.empty(4), std=0.02)
        assert [str(c.message) for c in caught] == [
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
            "The distribution of values may be incorrect."]


@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.init.trunc_normal_(lib.empty(3), std=0.0),
    lambda lib: lib.nn.init.trunc_normal_(lib.empty(3, dtype=lib.int64), a=3.0, b=4.0),
    lambda lib: lib.nn.init.trunc_normal_(lib.empty(0, dtype=lib.int64), a=3.0, b=4.0),
    lambda lib: lib.nn.init.trunc_normal_(lib.empty(0, dtype=lib.int64)).shape,
    lambda lib: lib.nn.init.trunc_normal_(lib.empty(3, dtype=lib.bool)),
    lambda lib: lib.nn.init.trunc_normal_(lib.empty(3), a=3.0, b=2.0),
    lambda lib: lib.nn.init.trunc_normal_(lib.empty(3), a=-float("inf"), b=-5.0),
    lambda lib: lib.nn.init.trunc_normal_(lib.empty(3), a=2.0, b=2.0).tolist(),
    lambda lib: lib.nn.init.trunc_normal_(lib.empty(3), std=-1.0).abs().max().item() <= 2,
])
def test_trunc_normal_edge_cases_match(torch, call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = _outcome(lambda: call(tg)), _outcome(lambda: call(torch))
    assert ours[0] == theirs[0]
    assert str(ours[1]) == str(theirs[1])
