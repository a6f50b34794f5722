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


def test_backward_pre_hook_alone_warns_when_no_input_requires_grad():
    # PyTorch warns whenever the module's hooks fire from the output side, pre-hooks included
    torch = pytest.importorskip("torch")
    for lib in (torch, tapegrad):
        lin = lib.nn.Linear(2, 2)
        seen = []
        lin.register_full_backward_pre_hook(lambda m, grad_output: seen.append(len(grad_output)))
        with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are "
                                             "computed with respect to module outputs"):
            lin(lib.ones(1, 2)).sum().backward()
        assert seen == [1]
