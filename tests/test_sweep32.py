"""Cases from PyTorch's split-out nn tests (test/nn/test_init.py, test_pruning.py, ...) that
tapegrad got wrong, each checked against torch."""
import warnings

import pytest

import tapegrad
import tapegrad.nn.init as init


def test_deprecated_eye_and_dirac_warn_and_call_the_underscore_versions():
    torch = pytest.importorskip("torch")
    for old, new in [("eye", "eye_"), ("dirac", "dirac_")]:
        shape = (2, 3) if old == "eye" else (4, 2, 3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = getattr(init, old)(tapegrad.empty(*shape))
        with warnings.catch_warnings(record=True) as expected_caught:
            warnings.simplefilter("always")
            expected = getattr(torch.nn.init, old)(torch.empty(*shape))
        assert got.tolist() == expected.tolist()
        assert [(w.category, str(w.message)) for w in caught] == \
            [(w.category, str(w.message)) for w in expected_caught]
        assert f"nn.init.{new}" in str(caught[0].message)
