"""Sweep 25: type promotion and elementwise arithmetic against the hand-written cases of
PyTorch's test_type_promotion.py, test_binary_ufuncs.py and test_unary_ufuncs.py; each case runs
the same code under tapegrad and torch and compares values, dtypes and exception types."""
import math

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _same(want, got):
    assert str(got.dtype) == str(want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


def _close(want, got, rtol=1e-6, atol=0.0):
    assert str(got.dtype) == str(want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=rtol, atol=atol)


@pytest.fixture
def default_double():
    """set_default_dtype(float64) in both libraries for the test, restored after it."""
    tapegrad.set_default_dtype(tapegrad.float64)
    torch.set_default_dtype(torch.float64)
    yield
    tapegrad.set_default_dtype(tapegrad.float32)
    torch.set_default_dtype(torch.float32)


# -- integer inputs of float functions follow the default dtype ---------------------------------

@pytest.mark.parametrize("name", ["tan", "asinh", "acosh", "atanh", "arcsinh", "arccosh",
                                  "arctanh", "log2", "log10", "sin", "exp"])
def test_float_function_of_integers_gives_the_default_dtype(default_double, name):
    # (tan, asinh, acosh and atanh gave float32 whatever the default dtype)
    for values, dtype in (([1, 2, 3], "int64"), ([True, False], "bool"), ([1, 2], "uint8")):
        want = getattr(torch, name)(torch.tensor(values, dtype=getattr(torch, dtype)))
        got = getattr(tapegrad, name)(tapegrad.tensor(values, dtype=getattr(tapegrad, dtype)))
        assert got.dtype == tapegrad.float64
        _close(want, got, rtol=1e-12)


def test_isclose_of_integers_compares_in_the_default_dtype(default_double):
    # float32 cannot tell 2**40 from 2**40 + 1; the default float64 can
    args = dict(rtol=0, atol=0.5)
    want = torch.isclose(torch.tensor([2 ** 40, 3]), torch.tensor([2 ** 40 + 1, 3]), **args)
    got = tapegrad.isclose(tapegrad.tensor([2 ** 40, 3]), tapegrad.tensor([2 ** 40 + 1, 3]),
                           **args)
    _same(want, got)
    assert got.tolist() == [False, True]


# -- special values -------------------------------------------------------------------------------

def test_heaviside_of_nan_is_zero():
    values = [-1.5, 0.0, -0.0, 2.0, math.nan, math.inf, -math.inf]
    for dtype in ("float32", "float64"):
        want = torch.heaviside(torch.tensor(values, dtype=getattr(torch, dtype)),
                               torch.tensor([0.5], dtype=getattr(torch, dtype)))
        got = tapegrad.heaviside(tapegrad.tensor(values, dtype=getattr(tapegrad, dtype)),
                                 tapegrad.tensor([0.5], dtype=getattr(tapegrad, dtype)))
        _same(want, got)
        assert got.tolist()[4] == 0.0


@pytest.mark.parametrize("dtype, tiny", [("float16", 1e-7), ("float32", 1e-40),
                                         ("float64", 1e-310)])
def test_frexp_of_subnormals_has_a_finite_mantissa(dtype, tiny):
    # the mantissa was input * 2**-exponent, and that power overflowed the dtype
    values = [tiny, -tiny, 0.0, -0.0, 3.0, math.inf, math.nan]
    want = torch.frexp(torch.tensor(values, dtype=getattr(torch, dtype)))
    got = tapegrad.frexp(tapegrad.tensor(values, dtype=getattr(tapegrad, dtype)))
    _same(want.mantissa, got.mantissa)
    _same(want.exponent, got.exponent)


def test_frexp_gradient_of_a_subnormal():
    # (1 / 2**exponent: inf in float32 for 2**132, as PyTorch's)
    x = tapegrad.tensor([1e-40, 1e-30, 3.0], requires_grad=True)
    tx = torch.tensor([1e-40, 1e-30, 3.0], requires_grad=True)
    tapegrad.frexp(x).mantissa.sum().backward()
    torch.frexp(tx).mantissa.sum().backward()
    _same(tx.grad, x.grad)


def test_logit_with_eps_above_a_half_clamps_the_low_bound_first():
    # PyTorch: x < eps gives eps, else x > 1 - eps gives 1 - eps (np.clip gave 1 - eps for both)
    for eps in (0.6, 0.2):
        values = [0.0, 0.3, 0.5, 1.0, math.nan]
        _close(torch.logit(torch.tensor(values), eps=eps),
               tapegrad.logit(tapegrad.tensor(values), eps=eps))
    x = tapegrad.tensor([0.0, 0.5, 1.0], dtype=tapegrad.float64, requires_grad=True)
    tx = torch.tensor([0.0, 0.5, 1.0], dtype=torch.float64, requires_grad=True)
    tapegrad.logit(x, eps=0.6).sum().backward()
    torch.logit(tx, eps=0.6).sum().backward()
    _same(tx.grad, x.grad)


# -- shapes that do not broadcast -----------------------------------------------------------------

@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2", "bitwise_left_shift",
                                  "bitwise_right_shift"])
@pytest.mark.parametrize("shapes", [((2,), (3,)), ((3, 1, 2), (2, 1, 2))])
def test_binary_op_of_shapes_that_do_not_broadcast_raises_runtime_error(name, shapes):
    dtype = "int64" if "shift" in name else "float32"
    with pytest.raises(RuntimeError) as want:
        getattr(torch, name)(torch.ones(shapes[0], dtype=getattr(torch, dtype)),
                             torch.ones(shapes[1], dtype=getattr(torch, dtype)))
    with pytest.raises(RuntimeError) as got:
        getattr(tapegrad, name)(tapegrad.ones(shapes[0], dtype=getattr(tapegrad, dtype)),
                                tapegrad.ones(shapes[1], dtype=getattr(tapegrad, dtype)))
    assert str(got.value) == str(want.value)


# -- out= of a complex-to-real op -----------------------------------------------------------------

@pytest.mark.parametrize("name", ["abs", "absolute"])
@pytest.mark.parametrize("out_dtype", ["float16", "float32", "float64", "complex64",
                                       "complex128", "int64"])
def test_abs_of_complex_into_an_out_of_any_float_dtype_or_the_input_dtype(name, out_dtype):
    # (a complex64 out of complex64 input was refused; float64 and float16 outs too)
    values = [3 + 4j, -1j, 0j]

    def run(lib):
        out = lib.empty(3, dtype=getattr(lib, out_dtype))
        try:
            return getattr(lib, name)(lib.tensor(values, dtype=lib.complex64), out=out)
        except RuntimeError as e:
            return str(e)
    want, got = run(torch), run(tapegrad)
    if isinstance(want, str):
        assert got == want
    else:
        _same(want, got)


@pytest.mark.parametrize("mantissa, exponent", [("float64", "int32"), ("float16", "int32"),
                                                ("float32", "int64"), ("float32", "float32"),
                                                ("float64", "int64")])
def test_frexp_out_of_another_dtype_raises(mantissa, exponent):
    # (outs of any dtype were written with a cast)
    def run(lib):
        out = (lib.empty(2, dtype=getattr(lib, mantissa)), lib.empty(2, dtype=getattr(lib, exponent)))
        with pytest.raises(RuntimeError) as info:
            lib.frexp(lib.tensor([3.0, 4.0]), out=out)
        return str(info.value)
    assert run(tapegrad) == run(torch)


# -- out= partly overlapping an input ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["bitwise_not", "logical_not", "conj_physical", "float_power",
                                  "bitwise_and", "bitwise_or", "bitwise_xor",
                                  "bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm",
                                  "ldexp", "igamma", "igammac"])
def test_out_partly_overlapping_an_input_raises(name):
    # (these wrote the result, read from elements already overwritten in other orders of work)
    def run(lib):
        if name in ("bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "gcd", "lcm",
                    "bitwise_left_shift", "bitwise_right_shift"):
            data = lib.arange(1, 7)
        elif name == "logical_not":
            data = lib.tensor([True, False, True, True, False, False])
        else:
            data = lib.tensor([0.3, 0.6, 0.9, 1.2, 1.5, 1.8], dtype=lib.float64)
        args = (data[1:4],) if name in ("bitwise_not", "logical_not", "conj_physical") else (
            data[1:4], data[3:6].clone())
        with pytest.raises(RuntimeError) as info:
            getattr(lib, name)(*args, out=data[0:3])
        whole = data.clone()        # an out that is all of an input stays allowed
        getattr(lib, name)(*((whole[0:3],) + args[1:]), out=whole[0:3])
        return str(info.value), whole
    want, got = run(torch), run(tapegrad)
    assert got[0] == want[0]
    _close(want[1], got[1], rtol=1e-12)


# -- complex operands PyTorch has no kernel for ---------------------------------------------------

def _error_of(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("case", [
    lambda L: L.special.zeta(L.tensor([True]), L.tensor([1j])),    # (gave float32 values)
    lambda L: L.special.zeta(L.tensor([2.0]), L.tensor([1 + 1j])),
    lambda L: L.special.zeta(L.tensor([2.0]), 1j),
    lambda L: L.special.zeta(1j, L.tensor([2.0])),
    lambda L: L.heaviside(L.tensor([1j]), L.tensor([1j])),          # (gave a complex step)
    lambda L: L.heaviside(L.tensor([1j]), L.tensor([1.0])),
    lambda L: L.heaviside(L.tensor([1.0]), L.tensor([1j])),
    lambda L: L.ldexp(L.tensor([1.0]), L.tensor([True])),           # (computed)
    lambda L: L.ldexp(L.tensor([1.0], dtype=L.float64), L.tensor(True)),
    lambda L: L.atan2(L.tensor([1.0]), 1j),                         # (NotImplementedError)
    lambda L: L.atan2(L.tensor([1]), 1j),
])
def test_refusals_as_pytorch(case):
    assert _error_of(lambda: case(tapegrad)) == _error_of(lambda: case(torch))


def test_ldexp_of_integer_or_complex_input_with_bool_exponent_computes():
    for make in (lambda L: L.ldexp(L.tensor([1, 2]), L.tensor([True, False])),
                 lambda L: L.ldexp(L.tensor([True]), L.tensor([True])),
                 lambda L: L.ldexp(L.tensor([1j]), L.tensor([True]))):
        _same(make(torch), make(tapegrad))


# -- in-place casting refusals and missing-kernel names -------------------------------------------

@pytest.mark.parametrize("case", [
    # igamma_ checks the cast before the kernel; it takes no number
    lambda L: L.tensor([True, False]).igamma_(L.tensor([2, 1], dtype=L.uint8)),
    lambda L: L.tensor([1.0, 2.0], dtype=L.float64).igammac_(L.tensor([1j, 1j])),
    lambda L: L.tensor([1.0]).igamma_(2.5),
    # atan2_ computes in floats: the refused result type is Float
    lambda L: L.tensor([True, False]).atan2_(L.tensor([2, 1], dtype=L.uint8)),
    lambda L: L.tensor([True, False]).arctan2_(L.tensor([2, 1])),
    # ldexp_ refuses an integer self in its own words, a float self's complex exponent as any op
    lambda L: L.tensor([1, 2]).ldexp_(L.tensor([1, 1])),
    lambda L: L.tensor([True]).ldexp_(L.tensor([1.0])),
    lambda L: L.tensor([1.0]).ldexp_(L.tensor([1j])),
    # the missing kernel is the promoted dtype's
    lambda L: L.gcd(L.tensor([1.0], dtype=L.float16), L.tensor([1.0])),
    lambda L: L.lcm(L.tensor([1.0], dtype=L.float16), L.tensor([1.0])),
    lambda L: L.nextafter(L.tensor([1], dtype=L.uint8), L.tensor([1], dtype=L.int32)),
    lambda L: L.igamma(L.tensor([1], dtype=L.uint8), L.tensor(1, dtype=L.int32)),
    lambda L: L.xlogy(L.tensor([1j]), L.tensor([1.0], dtype=L.float64)),
    lambda L: L.tensor([1j]).xlogy_(L.tensor([True])),
    lambda L: L.special.xlog1py(L.tensor([1]), L.tensor([1j], dtype=L.complex128)),
    lambda L: L.floor_divide(L.tensor([True]), L.tensor([True])),
    lambda L: L.tensor([True]).__ifloordiv__(L.tensor([True])),
])
def test_in_place_and_kernel_refusals_as_pytorch(case):
    assert _error_of(lambda: case(tapegrad)) == _error_of(lambda: case(torch))


def test_in_place_ops_that_compute_still_match():
    for make in (lambda L: L.tensor([1.0, 2.0]).igamma_(L.tensor([1.0, 3.0])),
                 lambda L: L.tensor([1.0, 2.0]).atan2_(L.tensor([2, 1])),
                 lambda L: L.tensor([1.0, 2.0]).ldexp_(L.tensor([True, False]).long())):
        _close(make(torch), make(tapegrad), rtol=1e-6)


# -- out= refused before the kernel is looked up ----------------------------------------------------

@pytest.mark.parametrize("case", [
    lambda L: L.floor(L.tensor([True]), out=L.empty(1, dtype=L.uint8)),        # exact rule
    lambda L: L.frac(L.tensor([True]), out=L.empty(1, dtype=L.int64)),
    lambda L: L.abs(L.tensor([True]), out=L.empty(1, dtype=L.int32)),
    lambda L: L.bitwise_not(L.tensor([1.0], dtype=L.float16), out=L.empty(1, dtype=L.bool)),
    lambda L: L.hypot(L.tensor([3], dtype=L.uint8), L.tensor([4], dtype=L.uint8),
                      out=L.empty(1, dtype=L.bool)),                            # cast rule
    lambda L: L.erf(L.tensor([1j]), out=L.empty(1)),
    lambda L: L.fmod(L.tensor([1j]), L.tensor([1j]), out=L.empty(1, dtype=L.int32)),
    lambda L: L.gcd(L.tensor([1.0], dtype=L.float16), L.tensor([2.0], dtype=L.float16),
                    out=L.empty(1, dtype=L.uint8)),
    # the kernel's error stays where the out is fine, where the op refuses first, and for the
    # comparisons (an out of any dtype)
    lambda L: L.floor(L.tensor([True]), out=L.empty(1, dtype=L.bool)),
    lambda L: L.hypot(L.tensor([3]), L.tensor([4]), out=L.empty(1, dtype=L.float32)),
    lambda L: L.floor(L.tensor([1j]), out=L.empty(1, dtype=L.bool)),
    lambda L: L.sign(L.tensor([1j]), out=L.empty(1, dtype=L.int32)),
    lambda L: L.lt(L.tensor([1j]), L.tensor([1j]), out=L.empty(1, dtype=L.uint8)),
])
def test_out_of_an_op_without_a_kernel_is_checked_first(case):
    # (the missing kernel's NotImplementedError came first)
    assert _error_of(lambda: case(tapegrad)) == _error_of(lambda: case(torch))


@pytest.mark.parametrize("args", [
    lambda L: (L.tensor([1]), "a"), lambda L: ("a", L.tensor([1])), lambda L: (None, 1),
    lambda L: (L.tensor([1]), [1]), lambda L: (L.tensor([1]), L.float32),
    lambda L: (L.tensor([1]), np.array([1.0])),
])
def test_result_type_refuses_what_is_neither_tensor_nor_number(args):
    # (None, a string or a list gave float32)
    def first_line(lib):
        kind, message = _error_of(lambda: lib.result_type(*args(lib)))
        return kind, message.split("\n")[0]
    assert first_line(tapegrad) == first_line(torch)
    assert tapegrad.result_type(tapegrad.tensor([1]), np.float32(1)) == tapegrad.float32


@pytest.mark.parametrize("case", [
    lambda L: L.tensor([1.0]) + 2 ** 64,                # (computed, as a float)
    lambda L: L.tensor([1.0]) * (-(2 ** 63) - 1),
    lambda L: L.add(L.tensor([1.0]), 2 ** 70),
    lambda L: L.tensor([1.0], dtype=L.float64).add_(2 ** 70),
    lambda L: L.tensor([1.0]) ** (2 ** 70),
    lambda L: 2 ** 70 - L.tensor([1.0]),
    lambda L: L.tensor([1.0]) < 2 ** 70,
    lambda L: L.result_type(L.tensor([1.0]), 2 ** 70),
])
def test_int_number_beyond_64_bits_overflows(case):
    assert _error_of(lambda: case(tapegrad)) == _error_of(lambda: case(torch))


def test_int_numbers_within_64_bits_still_compute_beside_a_float_tensor():
    for make in (lambda L: L.tensor([1.0]) + 2 ** 63, lambda L: L.tensor([1.0]) + (2 ** 64 - 1),
                 lambda L: L.tensor([1.0]) * -(2 ** 63), lambda L: L.tensor([1.0]) + 5):
        _close(make(torch), make(tapegrad))


@pytest.mark.parametrize("case", [
    lambda L: L.lerp(L.ones(2), L.ones(3), 0.5),           # (named end a and input b)
    lambda L: L.lerp(L.ones(3, 1), L.ones(2, 1), L.ones(3, 1)),
    lambda L: L.lerp(L.ones(2), L.ones(2), L.ones(3)),
    lambda L: L.lerp(L.ones(2, 1), L.ones(1, 2), L.ones(3)),
    lambda L: L.ones(2).lerp_(L.ones(3), 0.5),
])
def test_lerp_size_mismatch_names_the_operands_as_pytorch(case):
    assert _error_of(lambda: case(tapegrad)) == _error_of(lambda: case(torch))
