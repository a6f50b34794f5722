"""Session 28's own fixes, each checked against PyTorch where it is installed."""
import pytest

import tapegrad as tg


def message(fn, lib):
    """The exception's type name and message, or the result's shape."""
    try:
        return tuple(fn(lib).shape)
    except Exception as e:                      # (compared by type and message)
        return type(e).__name__, str(e)


# -- expand's error names the dim PyTorch's does --------------------------------------------------
# PyTorch checks the sizes from the last dim; tapegrad checked from the first, so with two
# mismatching dims its message named the other one.

EXPAND_CASES = {
    "two mismatches": lambda L: L.ones(2, 3).expand(4, 4),
    "leading -1 after a mismatch": lambda L: L.ones(2, 3).expand(-1, 4, 4),
    "one mismatch": lambda L: L.ones(2, 3).expand(5, 3),
    "new leading dim": lambda L: L.ones(2, 3).expand(5, 2, 3),
    "keep with -1": lambda L: L.ones(3, 1).expand(-1, 4),
}


@pytest.mark.parametrize("case", EXPAND_CASES)
def test_expand_error_names_last_mismatching_dim(case):
    got = message(EXPAND_CASES[case], tg)
    if case == "two mismatches":
        assert got[1].startswith("The expanded size of the tensor (4) must match the existing "
                                 "size (3) at non-singleton dimension 1.")
    torch = pytest.importorskip("torch")
    assert got == message(EXPAND_CASES[case], torch)
