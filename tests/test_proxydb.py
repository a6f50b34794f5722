"""Forum-thread snippets (Stack Overflow, discuss.pytorch.org, GitHub issue reproductions) whose
printed errors or values differed from PyTorch's: each test pins the fixed behaviour."""
from __future__ import annotations

import pytest

import tapegrad as tg
import tapegrad.nn as nn


def _plain_function(x):
    return x


class _Plain:
    def method(self):
        return self


def test_typename_names_functions_and_classes_by_their_own_qualified_name():
    # PyTorch's typename takes an object's own __qualname__ when it has one (functions, lambdas,
    # classes, bound methods), so `nn.Sequential(lambda x: x)` names the lambda, not 'function'.
    assert tg.typename(_plain_function) == f"{__name__}._plain_function"
    assert tg.typename(lambda x: x) == f"{__name__}.test_typename_names_functions_and_classes_by_" \
                                       "their_own_qualified_name.<locals>.<lambda>"
    assert tg.typename(_Plain) == f"{__name__}._Plain"
    assert tg.typename(_Plain()) == f"{__name__}._Plain"
    assert tg.typename(_Plain().method) == f"{__name__}._Plain.method"
    assert tg.typename(len) == "len"
    assert tg.typename(3) == "int"
    assert tg.typename(nn.Linear) == "torch.nn.modules.linear.Linear"
    assert tg.typename(nn.Linear(1, 1)) == "torch.nn.modules.linear.Linear"
    assert tg.typename(tg.float32) == "torch.dtype"


def test_sequential_of_a_lambda_names_it_as_pytorch_does():
    with pytest.raises(TypeError, match=r"\.<locals>\.<lambda> is not a Module subclass$"):
        nn.Sequential(nn.Linear(1, 1), lambda x: x)
    with pytest.raises(TypeError, match=rf"^{__name__}\._plain_function is not a Module subclass$"):
        nn.ModuleList([_plain_function])


def test_typename_matches_torch(torch):
    for obj in (_plain_function, _Plain, _Plain(), _Plain().method, len, 3, [1], None):
        assert tg.typename(obj) == torch.typename(obj)
    assert tg.typename(tg.float32) == torch.typename(torch.float32)
    assert tg.typename(nn.Linear(1, 1)) == torch.typename(torch.nn.Linear(1, 1))


@pytest.mark.parametrize("module, torch_name", [
    ("tapegrad", "torch"), ("tapegrad.nn", "torch.nn"), ("tapegrad.nn.functional", "torch.nn.functional"),
    ("tapegrad.optim", "torch.optim"), ("tapegrad.linalg", "torch.linalg"),
    ("tapegrad.autograd", "torch.autograd"), ("tapegrad.utils.data", "torch.utils.data"),
    ("tapegrad.distributions", "torch.distributions"),
])
def test_missing_module_attribute_names_the_torch_module(module, torch_name):
    # "AttributeError: module 'torch' has no attribute 'X'" is what version-mismatch threads quote.
    import importlib
    mod = importlib.import_module(module)
    with pytest.raises(AttributeError, match=rf"^module '{torch_name}' has no attribute 'flattern'$"):
        getattr(mod, "flattern")
    assert not hasattr(mod, "flattern")


def test_lazy_names_still_load_behind_the_missing_name_report():
    assert tg.optim.Adam.__name__ == "Adam"
    assert callable(tg.nn.functional.relu)
    assert "Tensor" in tg.__all__ and "nn" not in tg.__all__


def test_public_modules_report_their_own_module_path():
    # The module class lives in tapegrad._torch_names; a tool reading `module.__module__` (griffe,
    # for the API reference) must not place tapegrad's members there.
    import tapegrad.nn
    import tapegrad.nn.functional
    for module in (tapegrad, tapegrad.nn, tapegrad.nn.functional):
        assert module.__module__ == module.__name__
