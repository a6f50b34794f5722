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
