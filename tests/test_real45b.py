"""Real-script proxy session real45b: numpy's reductions handed a tensor (np.mean(x) calls
x.mean(axis=None, dtype=None, out=None)) and other calls that fit none of a reduction's or a
split's signatures raise PyTorch's TypeError listing PyTorch's signatures, never a sentinel's
address; an argument of a wrong type keeps the op's own words, as PyTorch's."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _message(lib, call):
    with pytest.raises(TypeError) as info:
        call(lib)
    return str(info.value)


UNFIT_CALLS = [
    lambda L: L.ones(4, 4).mean(bogus=1),
    lambda L: L.ones(4, 4).sum(bogus=1),
    lambda L: L.ones(4, 4).prod(bogus=1),
    lambda L: L.mean(L.ones(4, 4), bogus=1),
    lambda L: L.sum(L.ones(4, 4), bogus=1),
    lambda L: L.prod(L.ones(4, 4), bogus=1),
    lambda L: L.ones(4, 4).tensor_split(bogus=1),
    lambda L: L.tensor_split(L.ones(4, 4), bogus=1),
]


@pytest.mark.parametrize("call", UNFIT_CALLS)
def test_unfit_call_lists_pytorchs_signatures(call):
    ours, theirs = _message(tg, call), _message(torch, call)
    assert "object at 0x" not in ours
    assert ours == theirs


@pytest.mark.parametrize("fn", ["mean", "sum", "prod"])
def test_numpy_reduction_of_a_tensor_is_a_type_error_without_addresses(fn):
    x = tg.arange(6.0).reshape(2, 3)
    with pytest.raises(TypeError) as info:
        getattr(np, fn)(x)
    message = str(info.value)
    assert "object at 0x" not in message
    assert message.startswith(f"{fn}() received an invalid combination of arguments")
    with pytest.raises(TypeError):
        getattr(np, fn)(torch.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("call", [
    lambda L: L.ones(4, 4).sum(0, keepdim=1),
    lambda L: L.ones(4, 4).sum("a"),
    lambda L: L.ones(4, 4).hsplit(1.5),
])
def test_wrong_typed_argument_keeps_its_kind_of_message(call):
    # Typed refusals were not touched: PyTorch words the first in the op's own words.
    ours, theirs = _message(tg, call), _message(torch, call)
    assert ours.split("(")[0] == theirs.split("(")[0]
    assert ("received an invalid combination" in ours) == (
        "received an invalid combination" in theirs)


def test_reductions_still_take_numpy_names_and_values():
    x = torch.arange(12.0).reshape(3, 4)
    y = tg.arange(12.0).reshape(3, 4)
    for name in ("mean", "sum", "prod"):
        np.testing.assert_allclose(getattr(y, name)(axis=0).numpy(),
                                   getattr(x, name)(axis=0).numpy())
        np.testing.assert_allclose(getattr(y, name)(1, keepdims=True).numpy(),
                                   getattr(x, name)(1, keepdims=True).numpy())
