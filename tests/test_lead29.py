"""The lead's own fixes of session 29, each checked against PyTorch."""
import warnings

import numpy as np
import pytest

import tapegrad as tg


def _conversions(m):
    """Every way a complex tensor or array becomes a bool (or real) one."""
    z = m.tensor([1j, 0j, 2 + 0j, -0.5j])
    b = m.zeros(4, dtype=m.bool)
    b2 = m.zeros(4, dtype=m.bool)
    b2[:] = z
    return {
        "to": z.to(m.bool), "bool": z.bool(), "type_as": z.type_as(b),
        "copy_": b.copy_(z), "setitem": b2,
        "tensor": m.tensor(np.array([1j, 0j, 3 + 0j]), dtype=m.bool),
        "as_tensor": m.as_tensor(np.array([1j, 0j, 3 + 0j]), dtype=m.bool),
        "list": m.tensor([1j, 0j], dtype=m.bool),
    }


def test_complex_to_bool_tests_nonzero_without_a_warning():
    # SILENT before: every path took the real part first, so 1j became False (PyTorch: True)
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # PyTorch warns for complex -> real, not -> bool
        ours = _conversions(tg)
    theirs = _conversions(torch)
    for key in theirs:
        assert ours[key].dtype == tg.bool, key
        assert ours[key].tolist() == theirs[key].tolist(), key
    assert ours["to"].tolist() == [True, False, True, True]
