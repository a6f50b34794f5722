"""What the session-14 proxy of public course and book notebooks (jeffheaton/app_deep_learning,
udlbook, xbresson/CE7454_2019, PacktPublishing's PyTorch books) found tapegrad doing differently
from PyTorch, each checked against torch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg


# -- torch.tensor(tensor) / t.new_tensor(tensor): PyTorch's message, at the user's line ---------

def _copy_construct_warnings(lib):
    src = lib.ones(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib.tensor(src)
        src.new_tensor(src)
    return [(str(w.message), w.category, w.filename) for w in caught]


def test_copy_construct_warning_names_the_users_line():
    got = _copy_construct_warnings(tg)
    assert [w[2] for w in got] == [__file__, __file__]
    assert all(w[1] is UserWarning for w in got)
    assert "sourceTensor.detach().clone() or" in got[0][0]


def test_copy_construct_warning_matches_torch():
    torch = pytest.importorskip("torch")
    assert _copy_construct_warnings(tg) == _copy_construct_warnings(torch)


# -- w[key] = v on a leaf requiring grad: PyTorch indexes first, so a key that takes a view ------
# -- is refused as "a view of a leaf Variable" (CE7454 lab: mod.weight[0, 0] = 0) ---------------

def _keys(lib):
    return [(0, 0), 0, slice(0, 2), Ellipsis, None, lib.tensor(0), [0, 1], lib.tensor([0]), (0, [1, 2]),
            slice(None), (slice(None), slice(None)), slice(0, 3), (slice(None), 0), (Ellipsis, 0),
            (Ellipsis, slice(None)), (slice(None), [0, 1]), ([0, 1], slice(None)), (Ellipsis, [1]),
            True, (None, Ellipsis), slice(0, 10), (slice(None), slice(0, 5)), lib.tensor(True),
            (lib.tensor(1), [0]), (0, Ellipsis), ([0], 0), (slice(None), None), (Ellipsis, None),
            (Ellipsis, slice(1, 3)), (slice(None), slice(None, None, 2)), (slice(None), -1),
            (lib.ones(3, dtype=lib.bool), slice(1, 2)), (lib.ones(3, 5, dtype=lib.bool),),
            (lib.ones(3, dtype=lib.bool), slice(None)), (slice(None), slice(-5, None))]


def _leaf_write_outcomes(lib):
    out = []
    for key in _keys(lib):
        w = lib.zeros(3, 5, requires_grad=True)
        try:
            w[key] = 1.0
            out.append("ok")
        except RuntimeError as e:
            out.append(str(e))
    return out


def test_leaf_write_message_names_the_view():
    got = _leaf_write_outcomes(tg)
    view = "a view of a leaf Variable that requires grad is being used in an in-place operation."
    leaf = "a leaf Variable that requires grad is being used in an in-place operation."
    assert got[0] == got[1] == got[2] == view
    assert got[3] == got[6] == got[9] == leaf


def test_leaf_write_messages_match_torch():
    torch = pytest.importorskip("torch")
    assert _leaf_write_outcomes(tg) == _leaf_write_outcomes(torch)


def test_writes_that_are_allowed_still_write():
    w = tg.zeros(2, 3, requires_grad=True)
    with tg.no_grad():
        w[0, 1] = 5.0
    y = w * 2
    y[1, :2] = 7.0
    y.sum().backward()
    assert w[0, 1].item() == 5.0
    np.testing.assert_array_equal(w.grad.numpy(), [[2, 2, 2], [0, 0, 2]])
    plain = tg.zeros(2, 3)
    plain[1, 1:] = 3.0
    np.testing.assert_array_equal(plain.numpy(), [[0, 0, 0], [0, 3, 3]])
