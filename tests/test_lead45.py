"""Lead's fixes of session 45, each against PyTorch."""
import pytest

torch = pytest.importorskip("torch")
import tapegrad as tg  # noqa: E402

_IN_PLACE = ["add_", "sub_", "mul_", "div_", "pow_", "fmod_", "atan2_", "copysign_", "hypot_"]


def _outcome(lib, name, dtype):
    a = lib.tensor([1, 0]).to(getattr(lib, dtype))
    b = lib.tensor([1.0, 2.0], dtype=lib.bfloat16)
    try:
        return "ok", str(getattr(a, name)(b).dtype)
    except Exception as error:  # noqa: BLE001 - the error is the result compared
        return type(error).__name__, str(error)


@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool"])
@pytest.mark.parametrize("name", _IN_PLACE)
def test_in_place_op_of_an_integer_self_with_a_bfloat16_operand_names_bfloat16(name, dtype):
    # the bfloat16 operand promotes the result to bfloat16, which cannot be cast into the
    # integer or bool self: PyTorch names BFloat16 (tapegrad's float32 storage said Float once
    # every Tensor method dispatched to the bfloat16 class)
    assert _outcome(tg, name, dtype) == _outcome(torch, name, dtype)


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2", "bfloat16"])
def test_shape_of_a_dtype_class_tensor(dtype):
    # Tensor.shape's compiled getter (factory45) answers to "shape", the name the dtype classes'
    # dispatch allows: a float8 tensor's .shape raised '"shape_of" not implemented'
    t = tg.ones(2, 3).to(getattr(tg, dtype))
    assert tuple(t.shape) == tuple(torch.ones(2, 3).to(getattr(torch, dtype)).shape) == (2, 3)
    assert t.size() == t.shape
