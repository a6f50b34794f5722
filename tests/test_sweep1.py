"""Regressions found by differential sweeps of argument forms against PyTorch (in-place dtype
rules, integer powers, div_'s rounding_mode, out= aliasing an input), each checked against torch."""
import re

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


# -- promotion: a zero-dim tensor or a number does not widen a dimensioned operand --------------

@pytest.mark.parametrize("case", [
    lambda T: T.gcd(T.tensor([4, 6], dtype=T.int8), T.tensor(2)),
    lambda T: T.gcd(T.tensor(4, dtype=T.int16), T.tensor([6, 9], dtype=T.uint8)),
    lambda T: T.lcm(T.tensor([4, 6], dtype=T.int8), T.tensor(3, dtype=T.int64)),
    lambda T: T.tensor([3, -2], dtype=T.int8) << T.tensor([True, False]),
    lambda T: T.tensor([True, False]) << T.tensor([1, 2], dtype=T.int16),
    lambda T: T.bitwise_right_shift(T.tensor([-8, 8], dtype=T.int32), T.tensor(True)),
    lambda T: T.tensor(3) << 1,                                   # stays zero-dim
    lambda T: T.tensor(-8, dtype=T.int8) >> np.int64(2),
    lambda T: T.add(T.tensor([1, 2], dtype=T.int8), T.tensor([True, False]), alpha=2),
    lambda T: T.add(T.tensor([1, 2], dtype=T.uint8), T.tensor(True), alpha=3),
    lambda T: T.tensor([1, 2], dtype=T.int16).add(T.tensor([True, True]), alpha=-1),
    lambda T: T.xlogy(T.tensor([1, 2]), np.float64(2.0)),
    lambda T: T.xlogy(np.float64(3.0), T.tensor([1, 2], dtype=T.int32)),
    lambda T: T.div(T.tensor([7, -7], dtype=T.int8), np.int64(2), rounding_mode="trunc"),
    lambda T: T.tensor([True, False]) ** True,
    lambda T: T.tensor([True, False]) ** False,
])
def test_promotion_of_zero_dim_and_number_operands(case):
    same(case(tapegrad), case(torch))


@pytest.mark.parametrize("other", [np.int64(3), np.uint8(3), np.int32(-1)])
def test_result_type_numpy_integer_scalar_is_an_integer(other):
    for dt in ("int8", "uint8", "int32", "bool", "float16"):
        assert str(tapegrad.result_type(tapegrad.ones(2, dtype=getattr(tapegrad, dt)), other)) == \
            str(torch.result_type(torch.ones(2, dtype=getattr(torch, dt)), other))


# -- ops without a complex (or bool) kernel refuse it instead of dropping the imaginary part ---

@pytest.mark.parametrize("case", [
    lambda T: T.atan2(T.ones(2), T.ones(2, dtype=T.complex64)),
    lambda T: T.atan2(T.ones(2, dtype=T.complex64), T.ones(2)),
    lambda T: T.fmod(T.ones(2), T.ones(2, dtype=T.complex64)),
    lambda T: T.remainder(T.ones(2, dtype=T.complex128), T.ones(2)),
    lambda T: T.ones(2, dtype=T.complex64) // 2,
    lambda T: T.copysign(T.ones(2), T.ones(2, dtype=T.complex64)),
    lambda T: T.copysign(T.ones(2, dtype=T.complex64), T.ones(2)),
    lambda T: T.div(T.ones(2, dtype=T.complex64), 2, rounding_mode="trunc"),
    lambda T: T.div(T.ones(2, dtype=T.int64), T.ones(2, dtype=T.complex64), rounding_mode="floor"),
    lambda T: T.clamp(T.ones(2), min=T.ones(2, dtype=T.complex128)),
    lambda T: T.clamp(T.ones(2, dtype=T.int64), max=T.ones(2, dtype=T.complex64)),
    lambda T: T.tensor([True]) ** T.tensor([True]),
    lambda T: T.tensor([True, False]) << T.tensor([True, True]),
])
def test_no_complex_or_bool_kernel_raises(case):
    with pytest.raises(NotImplementedError) as theirs:
        case(torch)
    with pytest.raises(NotImplementedError, match=str(theirs.value).split("\n")[0]):
        case(tapegrad)


# -- factories -----------------------------------------------------------------------------------

def test_rand_complex_has_uniform_real_and_imaginary_parts():
    for dt, part in (("complex64", np.float32), ("complex128", np.float64)):
        z = tapegrad.rand(1000, dtype=getattr(tapegrad, dt))
        assert str(z.dtype) == f"torch.{dt}" and tuple(z.shape) == (1000,)
        for values in (z.numpy().real, z.numpy().imag):
            assert values.dtype == part and values.min() >= 0 and values.max() < 1
            assert 0.4 < values.mean() < 0.6
        like = tapegrad.rand_like(z)
        assert str(like.dtype) == f"torch.{dt}"


def test_eye_takes_an_integer_tensor_size():
    same(tapegrad.eye(tapegrad.tensor(2)), torch.eye(torch.tensor(2)))
    same(tapegrad.eye(2, tapegrad.tensor([3])), torch.eye(2, torch.tensor([3])))
    for lib in (tapegrad, torch):
        with pytest.raises(TypeError):
            lib.eye(lib.tensor(2.0))


def test_full_numpy_bool_fill_is_a_float_as_in_torch():
    same(tapegrad.full((2,), np.bool_(True)), torch.full((2,), np.bool_(True)))
    same(tapegrad.full((2,), True), torch.full((2,), True))


# -- out= that is also an input of an elementwise op is never resized --------------------------

@pytest.mark.parametrize("case", [
    lambda T, x: T.mul(x, T.ones(2, 2), out=x),
    lambda T, x: T.maximum(T.ones(3, 2), x, out=x),
    lambda T, x: T.add(x, T.ones(2, 2), alpha=2, out=x),
    lambda T, x: T.where(T.ones(2, 2) > 0, x, T.zeros(2, 2), out=x),
    lambda T, x: T.clamp(x, T.zeros(2, 2), out=x),
    lambda T, x: T.addcmul(x, x, T.ones(2, 2), out=x),
    lambda T, x: T.lerp(x, T.ones(2, 2), 0.5, out=x),
])
def test_out_aliasing_an_elementwise_input_is_not_resized(case):
    for lib in (tapegrad, torch):
        x = lib.ones(2)
        with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the "
                                               r"broadcast shape"):
            case(lib, x)
        assert tuple(x.shape) == (2,)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_out_resized_where_torch_resizes():
    # an out that is not an input is resized
    same(*[lib.mul(lib.ones(2, 2, 3), 2, out=lib.ones(2, 3)) for lib in (tapegrad, torch)])
    # a reduction's out is resized even when it is the input (PyTorch then reads the resized
    # memory, so only the shape is compared)
    shapes = [tuple(lib.sum(x, 0, out=x).shape) for lib in (tapegrad, torch)
              for x in [lib.ones(2, 3)]]
    assert shapes[0] == shapes[1] == (3,)


# -- logaddexp, true_divide and div(rounding_mode) take PyTorch's operand forms ---------------

@pytest.mark.parametrize("case", [
    lambda T: T.logaddexp(T.tensor([3, -2], dtype=T.int8), T.tensor([0.5, 1.0], dtype=T.float16)),
    lambda T: T.logaddexp(T.tensor(1, dtype=T.int64), T.tensor([0.5, 1.0], dtype=T.float16)),
    lambda T: T.logaddexp(T.tensor([1.0, 2.0]), T.tensor(1 + 1j, dtype=T.complex128)),
    lambda T: T.logaddexp(T.tensor([3.0, 5.0], dtype=T.float16), T.tensor([0.5, 5.0], dtype=T.float16)),
    lambda T: T.true_divide(T.tensor([3, -2], dtype=T.int8), 1 + 1j),
    lambda T: T.true_divide(2j, T.tensor([3.0, -2.0])),
    lambda T: T.div(1.5, T.tensor([1, 2], dtype=T.int8), rounding_mode="floor"),
    lambda T: T.div(7, T.tensor([2, -2], dtype=T.int8), rounding_mode="floor"),
    lambda T: T.div(-7, T.tensor([2, -2], dtype=T.int16), rounding_mode="trunc"),
    lambda T: T.div(300, T.tensor([1, 2], dtype=T.int8), rounding_mode="trunc"),
    lambda T: T.div(7.5, T.tensor([2.0, -2.0], dtype=T.float64), rounding_mode="trunc"),
    lambda T: T.div(T.tensor([3, 2, 0, 5], dtype=T.uint8), T.tensor(-2, dtype=T.int8),
                    rounding_mode="trunc"),
    lambda T: T.div(T.tensor([200, 7], dtype=T.uint8), -2, rounding_mode="trunc"),
    lambda T: T.div(T.tensor([-100, 7], dtype=T.int8), T.tensor(300, dtype=T.int64),
                    rounding_mode="trunc"),
])
def test_operand_forms_of_logaddexp_and_divisions(case):
    ours, theirs = case(tapegrad), case(torch)
    assert str(ours.dtype) == str(theirs.dtype) and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-3)


@pytest.mark.parametrize("case", [
    lambda T: T.logaddexp(T.tensor([1], dtype=T.int8), T.tensor([1], dtype=T.int8)),
    lambda T: T.div(T.tensor([True]), T.tensor([True]), rounding_mode="floor"),
    lambda T: T.div(True, T.tensor([True]), rounding_mode="trunc"),
    lambda T: T.tensor([True]).div_(True, rounding_mode="trunc"),
])
def test_operand_forms_without_a_kernel_raise(case):
    with pytest.raises(NotImplementedError) as theirs:
        case(torch)
    with pytest.raises(NotImplementedError, match=str(theirs.value)):
        case(tapegrad)


# -- exception types PyTorch raises for these operand forms ------------------------------------

@pytest.mark.parametrize("case, error", [
    (lambda T: T.copysign(2, T.tensor([3, -2], dtype=T.int8)), TypeError),
    (lambda T: T.copysign(1j, T.tensor([3.0])), TypeError),
    (lambda T: T.gcd(T.tensor([True]), T.tensor([True])), NotImplementedError),
    (lambda T: T.lcm(T.tensor([True]), T.tensor(False)), NotImplementedError),
    (lambda T: T.tensor([3, -2], dtype=T.int8) // 1j, NotImplementedError),
    (lambda T: T.tensor([3.0]) % 1j, NotImplementedError),
    (lambda T: 1j % T.tensor([3, -2]), NotImplementedError),
    (lambda T: T.fmod(T.tensor([3, -2]), 2j), NotImplementedError),
    (lambda T: T.remainder(T.tensor([3.0], dtype=T.float64), 1j), NotImplementedError),
    (lambda T: T.tensor([2], dtype=T.uint8) ** -3, RuntimeError),
    (lambda T: T.tensor([2], dtype=T.uint8) ** 300, RuntimeError),
])
def test_exception_types_of_operand_forms(case, error):
    with pytest.raises(error) as theirs:
        case(torch)
    with pytest.raises(error, match=re.escape(str(theirs.value).split("\n")[0])):
        case(tapegrad)


@pytest.mark.parametrize("case", [
    lambda T: T.zeros(), lambda T: T.ones(), lambda T: T.empty(), lambda T: T.zeros(size=None),
    lambda T: T.rand_like([1, 2]), lambda T: T.randn_like(3.0), lambda T: T.randint_like([1], 5),
])
def test_factory_argument_type_errors(case):
    with pytest.raises(TypeError):
        case(torch)
    with pytest.raises(TypeError):
        case(tapegrad)


def test_factory_without_a_size_names_the_missing_argument():
    for fn in ("zeros", "ones", "empty"):
        with pytest.raises(TypeError, match='missing 1 required positional arguments: "size"'):
            getattr(tapegrad, fn)()


# -- in-place binary ops check the operand (shape, then cast) before the kernel ----------------

@pytest.mark.parametrize("case", [
    lambda T: T.tensor([1, 2]).__iand__(T.tensor([1.5, 2.0])),
    lambda T: T.tensor([1, 2]).__ior__(1.5),
    lambda T: T.tensor([1.0, 2.0]).__ixor__(T.ones(3, 2)),
    lambda T: T.tensor([1.0, 2.0]).__ilshift__(1j),
    lambda T: T.tensor([1.0, 2.0]).bitwise_and_(T.tensor([1, 2])),
    lambda T: T.tensor([1.0, 2.0]).remainder_(T.tensor([1j, 2j])),
    lambda T: T.tensor([1.0, 2.0]).fmod_(T.ones(2, 2)),
    lambda T: T.tensor([1, 2]).hypot_(T.tensor([1j, 2j])),
    lambda T: T.tensor([1.0, 2.0]).divide_(T.tensor([1j, 2j]), rounding_mode="floor"),
])
def test_in_place_operand_checked_before_the_kernel(case):
    with pytest.raises(RuntimeError) as theirs:
        case(torch)
    with pytest.raises(RuntimeError, match=re.escape(str(theirs.value).split("\n")[0])):
        case(tapegrad)


# -- fills with a zero-dim tensor value --------------------------------------------------------

@pytest.mark.parametrize("value", [lambda T: T.tensor(7), lambda T: T.tensor(True),
                                   lambda T: T.tensor(2.5, dtype=T.float64)])
@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8", "float16"])
def test_index_fill_casts_a_zero_dim_value_of_another_dtype(value, dtype):
    def run(lib):
        s = lib.tensor([[1, 0, 3], [4, 5, 0]], dtype=getattr(lib, dtype))
        s.index_fill_(1, lib.tensor([2, 0]), value(lib))
        return s, lib.index_fill(s, 0, lib.tensor([1]), value(lib))
    for ours, theirs in zip(run(tapegrad), run(torch)):
        same(ours, theirs)


def test_index_fill_value_gradient_through_the_cast():
    v = tapegrad.tensor(2.0, dtype=tapegrad.float64, requires_grad=True)
    out = tapegrad.index_fill(tapegrad.zeros(2, 3), 1, tapegrad.tensor([2, 0]), v)
    out.sum().backward()
    assert v.grad.item() == 4.0
    assert str(out.dtype) == "torch.float32"


def test_masked_setitem_refuses_a_complex_zero_dim_value_for_a_real_tensor():
    for lib in (tapegrad, torch):
        s = lib.tensor([[1.0, 0.0, 3.0], [4.0, 5.0, 0.0]])
        with pytest.raises(RuntimeError, match="value cannot be converted to type float"):
            s[s > 1] = lib.tensor(1j)
        assert s.tolist() == [[1.0, 0.0, 3.0], [4.0, 5.0, 0.0]]


# -- norm(p='nuc') is the nuclear norm (it raised NotImplementedError) --------------------------

@pytest.mark.parametrize("case", [
    lambda T, x: x.norm("nuc"),
    lambda T, x: T.norm(x, "nuc", keepdim=True),
    lambda T, x: T.norm(x.reshape(2, 1, 3).expand(2, 2, 3), p="nuc", dim=(0, 2)),
    lambda T, x: x.norm("nuc", dtype=T.float64),
])
def test_norm_nuclear(case):
    values = [[3.0, -1.0, 2.0], [0.5, 4.0, -2.0]]
    ours, theirs = case(tapegrad, tapegrad.tensor(values)), case(torch, torch.tensor(values))
    assert str(ours.dtype) == str(theirs.dtype) and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5)


def test_norm_nuclear_refuses_what_torch_refuses():
    for lib in (tapegrad, torch):
        with pytest.raises(RuntimeError, match="dim must be a 2-tuple"):
            lib.norm(lib.ones(2, 3, 4), "nuc")


def test_norm_nuclear_gradient(gradcheck):
    gradcheck(lambda x: x.norm("nuc"), [[3.0, -1.0, 2.0], [0.5, 4.0, -2.0]])
