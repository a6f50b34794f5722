"""set_printoptions: the repr of tensors under changed precision, threshold, edgeitems, linewidth,
profiles and forced sci_mode, compared with torch's repr character for character, and plain
expected strings."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

RNG = np.random.default_rng(11)

# Values spanning the notation choices: plain decimals, integral floats, wide ranges, tiny and
# huge magnitudes, non-finite entries, and a tensor long enough to be summarized.
VALUES = [
    RNG.standard_normal((2, 3)),
    RNG.standard_normal(7) * 1e5,
    np.round(RNG.standard_normal((3, 2)) * 100),
    RNG.standard_normal(5) * np.exp(RNG.uniform(-12, 12, size=5)),
    np.array([np.nan, 1.5, -np.inf, 0.0]),
    np.array([1e-10, 1.0, np.inf]),
    np.round(RNG.standard_normal(4) * 1e9),
    np.arange(2000.0).reshape(40, 50) / 7,
    np.arange(30.0) / 3,
    np.zeros(3),
    np.array(3.14159265),
]

OPTIONS = [dict(precision=2), dict(precision=6), dict(precision=8), dict(sci_mode=True),
           dict(sci_mode=False), dict(precision=2, sci_mode=True),
           dict(precision=8, sci_mode=False), dict(profile="short"), dict(profile="full"),
           dict(threshold=5, edgeitems=1), dict(linewidth=40), dict(edgeitems=0, threshold=3),
           dict(profile="short", precision=5), dict(profile="no-such-profile")]


@pytest.fixture(autouse=True)
def _default_print_options():
    yield
    tg.set_printoptions(profile="default")


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_repr_matches_torch(torch, options):
    torch.set_printoptions(**options)
    try:
        for values in VALUES:
            for dtype in ("float32", "float64"):
                ours = tg.tensor(values, dtype=getattr(tg, dtype))
                theirs = torch.tensor(values, dtype=getattr(torch, dtype))
                tg.set_printoptions(**options)
                assert repr(ours) == repr(theirs)
                assert repr(ours.requires_grad_()) == repr(theirs.requires_grad_())
        assert repr(tg.arange(20)) == repr(torch.arange(20))
    finally:
        torch.set_printoptions(profile="default")


def test_precision_and_sci_mode_values():
    t = tg.tensor([1.123456789, -20.5])
    tg.set_printoptions(precision=2)
    assert repr(t) == "tensor([  1.12, -20.50])"
    tg.set_printoptions(precision=6)
    assert repr(t) == "tensor([  1.123457, -20.500000])"
    tg.set_printoptions(precision=2, sci_mode=True)
    assert repr(t) == "tensor([ 1.12e+00, -2.05e+01])"
    tg.set_printoptions(sci_mode=False)     # precision stays 2, sci_mode back to forced-off
    assert repr(tg.tensor([1e-6, 1.0])) == "tensor([0.00, 1.00])"
    tg.set_printoptions()                   # sci_mode=None: automatic again
    assert repr(tg.tensor([1e-6, 1.0])) == "tensor([1.00e-06, 1.00e+00])"


def test_profiles_threshold_and_edgeitems():
    tg.set_printoptions(threshold=5)
    assert repr(tg.arange(10)) == "tensor([0, 1, 2,  ..., 7, 8, 9])"
    tg.set_printoptions(profile="short", threshold=5)
    assert repr(tg.arange(10)) == "tensor([0, 1,  ..., 8, 9])"
    tg.set_printoptions(profile="full")
    assert "..." not in repr(tg.arange(5000))
    tg.set_printoptions(profile="default")
    assert repr(tg.arange(5000)).startswith("tensor([   0,    1,    2,  ..., 4997, 4998, 4999])")
    assert repr(tg.tensor([1.12345])) == "tensor([1.1235])"


def test_linewidth_wraps_rows():
    tg.set_printoptions(linewidth=20)
    assert repr(tg.arange(8)) == "tensor([0, 1, 2, 3,\n        4, 5, 6, 7])"
