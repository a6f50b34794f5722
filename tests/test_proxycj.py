"""What the session-38 proxy of course notebooks (mrdbourke's Zero to Mastery PyTorch 00-04,
yunjey's pytorch-tutorial, the UvA DL tutorials 2-7, retyped as learners copy them) found
tapegrad printing differently from PyTorch."""
from __future__ import annotations

import pytest

import tapegrad as tg
import tapegrad.nn as nn


class _NotAModule:
    pass


# -- registration errors name the object as torch.typename does --------------------------------
# (a learner appending a tensor to a ModuleList reads "torch.FloatTensor is not a Module
# subclass"; the class's bare name lost the tensor's dtype and a user class's module)

@pytest.mark.parametrize("register, expected", [
    (lambda m: m.add_module("a", tg.zeros(1)), "torch.FloatTensor is not a Module subclass"),
    (lambda m: m.add_module("a", _NotAModule()),
     f"{__name__}._NotAModule is not a Module subclass"),
    (lambda m: nn.ModuleList().append(tg.zeros(2, dtype=tg.int64)),
     "torch.LongTensor is not a Module subclass"),
    (lambda m: nn.ModuleDict({"a": 1}), "int is not a Module subclass"),
    (lambda m: m.register_buffer("b", _NotAModule()),
     f"cannot assign '{__name__}._NotAModule' object to buffer 'b'"),
    (lambda m: m.register_buffer(_NotAModule(), tg.zeros(1)),
     f"buffer name should be a string. Got {__name__}._NotAModule"),
    (lambda m: m.add_module(2.5, nn.ReLU()), "module name should be a string. Got float"),
])
def test_registration_errors_use_torch_typename(register, expected):
    with pytest.raises(TypeError, match=expected.replace(".", r"\.")):
        register(nn.Module())


def test_vector_to_parameters_names_a_non_tensor_as_torch_typename():
    with pytest.raises(TypeError, match=rf"expected torch\.Tensor, but got: {__name__}\._NotAModule"):
        nn.utils.vector_to_parameters(_NotAModule(), nn.Linear(1, 1).parameters())


def test_registration_error_messages_match_torch():
    torch = pytest.importorskip("torch")

    def message(lib, register):
        with pytest.raises(TypeError) as info:
            register(lib)
        return str(info.value)

    cases = [
        lambda lib: lib.nn.Module().add_module("a", lib.zeros(2, dtype=lib.float64)),
        lambda lib: lib.nn.Sequential(lib.nn.ReLU()).append(lib.ones(3)),
        lambda lib: lib.nn.Module().register_buffer("b", 3),
        lambda lib: lib.nn.Module().register_buffer(None, lib.zeros(1)),
    ]
    for register in cases:
        assert message(tg, register) == message(torch, register)
