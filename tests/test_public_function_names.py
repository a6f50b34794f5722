"""The functions of torch.nn.functional and torch print PyTorch's names (`print(F.softmax)`, a
script listing `act.__name__` of its activations), where the compiled op families name them
apart from a sibling (functional_softmax beside the tensor op softmax)."""
import pytest

import tapegrad
import tapegrad.nn.functional as G

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

# PyTorch's own builtins whose names are not their public ones (F.logsigmoid is the builtin
# log_sigmoid, F.threshold the Python _threshold, has_torch_function* the C helpers): tapegrad's
# keep the public name; torch's aliases (torch.absolute is its own builtin, tapegrad's the abs
# function) share one object here.
_DIFFERENT_IN_PYTORCH = {"logsigmoid", "threshold", "has_torch_function",
                         "has_torch_function_unary", "has_torch_function_variadic"}


def test_nn_functional_names_match_torch():
    differing = [(n, getattr(F, n).__name__, getattr(G, n).__name__) for n in dir(F)
                 if not n.startswith("_") and n not in _DIFFERENT_IN_PYTORCH
                 and callable(getattr(F, n)) and hasattr(getattr(F, n), "__name__")
                 and hasattr(G, n) and getattr(G, n).__name__ != getattr(F, n).__name__]
    assert differing == []


@pytest.mark.parametrize("name", ["embedding", "layer_norm", "softmax", "log_softmax"])
def test_torch_function_names_match_torch(name):
    assert getattr(tapegrad, name).__name__ == getattr(torch, name).__name__ == name
    assert repr(getattr(G, name)).startswith(f"<function {name}")
