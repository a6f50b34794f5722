"""Gaps found by running held-out applied-ML scripts (stock-prediction LSTMs, recommenders, a
Titanic classifier) under tapegrad, each checked against PyTorch."""
import warnings

import pytest

import tapegrad as tg


def _outcome(lib, t, key, setting):
    """What x[key] (or x[key] = 1) does: the result's shape or the exception's type and text,
    with the number of warnings it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if setting:
                t[key] = 1
                result = "ok"
            else:
                result = tuple(t[key].shape)
        except Exception as e:      # the exception is the fact being compared
            result = (type(e).__name__, str(e))
    return result, len(caught)


STRING_KEYS = ["", "a", "ab", "abc", "confidence", "x" * 31, "x" * 32, ["ab"], ("ab",),
               (0, "abc"), (None, "a"), [0, "a"], (0, 1.5), 1.5, (0, 0, 0, 0, 0.5), b"ab"]


@pytest.mark.parametrize("shape", [(), (3,), (3, 2), (2, 2, 2, 2)])
@pytest.mark.parametrize("key", STRING_KEYS, ids=repr)
@pytest.mark.parametrize("setting", [False, True], ids=["get", "set"])
def test_string_and_float_keys_match_torch(torch, shape, key, setting):
    # extras['confidence'] on a tensor (a model returning a tensor where a dict was expected):
    # PyTorch reads a short str key as a tuple of its characters (with the non-tuple warning),
    # and counts a key's items before reading them, so too many items is an IndexError
    expected = _outcome(torch, torch.ones(shape), key, setting)
    assert _outcome(tg, tg.ones(shape), key, setting) == expected


def test_too_many_items_counted_before_a_mask_and_a_string(torch):
    for lib in (torch, tg):
        t = lib.ones(3, 2)
        key = (0, lib.ones(2, 2).bool(), "a")
        with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
            t[key]
