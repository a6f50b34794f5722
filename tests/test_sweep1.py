"""Regressions found by differential sweeps of argument forms against PyTorch (in-place dtype
rules, integer powers, div_'s rounding_mode, out= aliasing an input), each checked against torch."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def same(ours, theirs):
    assert str(ours.dtype) == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# -- PyTorch's canCast: a signed integer result may be written into an unsigned tensor -------------

@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "floor_divide_", "remainder_",
                                "clamp_min_", "maximum_out", "iadd", "ior", "copy_"])
@pytest.mark.parametrize("self_dt, other_dt", [("uint8", "int64"), ("uint8", "int8"),
                                               ("uint8", "int32"), ("int8", "uint8")])
def test_in_place_integer_result_into_other_signedness(op, self_dt, other_dt):
    def run(lib):
        s = lib.tensor([1, 2, 3, 7], dtype=getattr(lib, self_dt))
        o = lib.tensor([-3, 2, 5, 2], dtype=getattr(lib, other_dt)) if other_dt != "uint8" \
            else lib.tensor([3, 2, 5, 2], dtype=lib.uint8)
        if op == "maximum_out":
            lib.maximum(s, o, out=s)
        elif op == "iadd":
            s += o
        elif op == "ior":
            s |= o
        else:
            getattr(s, op)(o)
        return s
    same(run(tapegrad), run(torch))


@pytest.mark.parametrize("src", ["int64", "uint8", "int8", "bool", "float32", "float64",
                                 "complex64", "float16"])
@pytest.mark.parametrize("dst", ["int64", "uint8", "int8", "bool", "float32", "float64",
                                 "complex64", "float16"])
def test_can_cast_matches_torch(src, dst):
    assert tapegrad.can_cast(getattr(tapegrad, src), getattr(tapegrad, dst)) == \
        torch.can_cast(getattr(torch, src), getattr(torch, dst))


def test_in_place_still_refuses_a_cast_down_the_kinds():
    for lib in (tapegrad, torch):
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type Bool"):
            lib.tensor([True]).add_(lib.tensor([1]))
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
            lib.tensor([1]).mul_(lib.tensor([1.5]))


# -- integer powers with a tensor of exponents: PyTorch's powi, no error -----------------------

@pytest.mark.parametrize("case", [
    lambda T: T.tensor([-3, -2, -1, 0, 1, 2, 3]) ** T.tensor([-1]),
    lambda T: T.tensor([-3, -2, -1, 0, 1, 2, 3]) ** T.tensor([-2]),
    lambda T: T.tensor([-3, -1, 1, 2]) ** T.tensor(-3),
    lambda T: 2 ** T.tensor([-1, 0, 2]),
    lambda T: (-1) ** T.tensor([-1, -2, 3]),
    lambda T: 0 ** T.tensor([-1, 0, 2]),
    lambda T: T.pow(1, T.tensor([-5, 5])),
    lambda T: T.tensor([0, 1, 2], dtype=T.uint8) ** T.tensor([-1]),
    lambda T: T.tensor([-1, 1, 2], dtype=T.int8) ** T.tensor([-3], dtype=T.int8),
    lambda T: T.tensor([[2, 1], [-1, 5]]).pow(T.tensor([-1, -1])),
    lambda T: T.tensor([2, 1, -1]).pow_(T.tensor([-1, -1, -1])),
    lambda T: T.tensor(2) ** T.tensor(-2),
    lambda T: T.tensor([3]) ** T.tensor([50]),                     # wraps as int64 does
    lambda T: T.pow(T.tensor([2, -1]), T.tensor([-1, -7]), out=T.empty(2, dtype=T.int64)),
])
def test_integer_tensor_exponents_below_zero(case):
    same(case(tapegrad), case(torch))


def test_integer_number_exponent_below_zero_still_raises():
    for lib in (tapegrad, torch):
        with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
            lib.tensor([2, 3]) ** -1


# -- div_ takes rounding_mode as div does --------------------------------------------------------

@pytest.mark.parametrize("mode", ["floor", "trunc"])
@pytest.mark.parametrize("values, other", [([5., -5., 7.5], 2), ([5, -5, 7], 2),
                                           ([5, -5, 7], [2, 3, -2]), ([5., -5., 7.5], [2., 3., -2.])])
def test_div_in_place_rounding_mode(mode, values, other):
    def run(lib):
        s = lib.tensor(values)
        o = lib.tensor(other) if isinstance(other, list) else other
        r = s.div_(o, rounding_mode=mode)
        assert r is s
        return s
    same(run(tapegrad), run(torch))


def test_div_in_place_rounding_mode_refuses_what_torch_refuses():
    for lib in (tapegrad, torch):
        with pytest.raises(RuntimeError):
            lib.tensor([5, 4]).div_(lib.tensor([2.5, 2.]), rounding_mode="floor")
        with pytest.raises(RuntimeError, match="rounding_mode"):
            lib.tensor([5., 4.]).div_(2, rounding_mode="round")
