"""torch.Size arithmetic keeps Size, as PyTorch's (x.shape + (1,), x.shape[1:], 2 * x.shape)."""
import pytest

import tapegrad as tg


def test_size_combinations_match_torch():
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        s = lib.zeros(3, 4).shape
        for value, expected in ((s + (1,), [3, 4, 1]), ((1,) + s, [1, 3, 4]), (s[1:], [4]),
                                (s * 2, [3, 4, 3, 4]), (2 * s, [3, 4, 3, 4]),
                                (s + s, [3, 4, 3, 4])):
            assert type(value).__name__ == "Size" and list(value) == expected
            assert repr(value) == f"torch.Size({expected})"
        assert s[0] == 3 and type(s[0]) is int and s == (3, 4)
        with pytest.raises(TypeError, match="can only concatenate tuple"):
            s + [1]
