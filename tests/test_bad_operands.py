"""A named binary op (add, a.mul, add_, fmod, ...) given an operand that is neither a tensor nor a
number raises PyTorch's TypeError; only the operators return NotImplemented, so that Python can
try the reflected op (and then raises its own TypeError)."""
import pytest

import tapegrad as tg

# The ops with a Number overload in PyTorch's signature say "invalid combination of arguments".
COMBINATION = {"pow", "true_divide", "fmod", "remainder", "floor_divide", "eq", "ne", "lt", "le",
               "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor"}
NAMES = ["add", "sub", "mul", "div", "true_divide", "pow", "maximum", "minimum", "atan2", "fmod",
         "remainder", "floor_divide", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
         "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"]
IN_PLACE = ["add_", "sub_", "mul_", "div_"]
BAD = [(3, 3), "x", None, [1, 2]]


def key_phrase(name):
    return "invalid combination of arguments" if name in COMBINATION else "must be Tensor"


def call_forms(L, name, bad):
    """(function form, method form) of `name` on a float tensor and `bad`."""
    a = L.ones(2)
    return (lambda: getattr(L, name)(a, bad)), (lambda: getattr(a, name)(bad))


@pytest.mark.parametrize("bad", BAD, ids=lambda b: type(b).__name__)
@pytest.mark.parametrize("name", NAMES)
def test_named_binary_op_raises_type_error(name, bad):
    for form in call_forms(tg, name, bad):
        with pytest.raises(TypeError) as info:
            form()
        message = str(info.value)
        assert message.startswith(name + "()") and type(bad).__name__ in message
        if name in ("add", "sub", "mul", "div", "atan2", "maximum", "minimum"):
            assert "'other'" in message and "must be Tensor, not " + type(bad).__name__ in message


@pytest.mark.parametrize("bad", BAD, ids=lambda b: type(b).__name__)
@pytest.mark.parametrize("name", IN_PLACE)
def test_named_in_place_op_raises_type_error(name, bad):
    a = tg.ones(2)
    with pytest.raises(TypeError, match=rf"{name}\(\): argument 'other' \(position 1\) must be "
                                        rf"Tensor, not {type(bad).__name__}"):
        getattr(a, name)(bad)
    assert a.tolist() == [1.0, 1.0] and a._version_value == 0


@pytest.mark.parametrize("name", ["add", "sub"])
def test_alpha_does_not_repeat_a_sequence(name):
    # (3, 3) * 2 would be (3, 3, 3, 3): the operand is refused before alpha scales it.
    with pytest.raises(TypeError, match="must be Tensor, not tuple"):
        getattr(tg, name)(tg.ones(2), (3, 3), alpha=2)


def test_non_tensor_input_is_named():
    with pytest.raises(TypeError, match=r"add\(\): argument 'input' \(position 1\) must be Tensor, "
                                        r"not NoneType"):
        tg.add(None, tg.ones(2))


@pytest.mark.parametrize("dunder", ["__add__", "__radd__", "__sub__", "__rsub__", "__mul__",
                                    "__rmul__", "__truediv__", "__rtruediv__", "__pow__",
                                    "__mod__", "__floordiv__", "__iadd__", "__imul__"])
def test_operators_keep_the_protocol(dunder):
    a = tg.ones(2)
    method = getattr(a, dunder)
    assert (method((3, 3)) if dunder != "__pow__" else method((3, 3), None)) is NotImplemented
    with pytest.raises(TypeError, match="unsupported operand"):
        a + (3, 3)
    with pytest.raises(TypeError, match="unsupported operand"):
        a *= "x"


@pytest.mark.parametrize("bad", BAD, ids=lambda b: type(b).__name__)
@pytest.mark.parametrize("name", NAMES + IN_PLACE)
def test_matches_torch(torch, name, bad):
    for ours, theirs in zip(call_forms(tg, name, bad) if name[-1] != "_" else
                            [lambda: getattr(tg.ones(2), name)(bad)],
                            call_forms(torch, name, bad) if name[-1] != "_" else
                            [lambda: getattr(torch.ones(2), name)(bad)]):
        with pytest.raises(TypeError) as expected:
            theirs()
        with pytest.raises(TypeError) as got:
            ours()
        assert key_phrase(name) in str(expected.value)
        assert key_phrase(name) in str(got.value), (str(got.value), str(expected.value))
