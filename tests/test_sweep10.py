"""Regressions found by the tenth argument-form sweep (sorting and sets, the random API, numpy
interop and conversions) against PyTorch."""
import array

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _both(fn):
    """fn(lib) for tapegrad and torch: (tapegrad's result, torch's result)."""
    return fn(tg), fn(torch)


def _raises_like(fn):
    """fn(lib) raises the same exception type, with the same first line, in both libraries."""
    with pytest.raises(Exception) as want:
        fn(torch)
    with pytest.raises(want.type) as got:
        fn(tg)
    assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]


# -- tensor(): the dtype of nested data holding complex numbers ----------------------------------

@pytest.mark.parametrize("data", [
    lambda: [np.complex128(1j)],
    lambda: [np.complex128(1j), np.complex128(2)],
    lambda: [np.complex128(1j), 1.0],
    lambda: [np.float64(1.0), 1j],
    lambda: [np.complex64(1j), np.float64(2.0)],
    lambda: [np.float32(1.0), 1j],
    lambda: [np.float16(1.0), 1j],
    lambda: [np.complex64(1j), 1.0],
    lambda: [1j, 2],
    lambda: [[1j], [2.0]],
    lambda: [np.array([1j, 2])],
    lambda: [np.array([1j], dtype=np.complex64), [2j]],
], ids=range(12))
def test_tensor_of_complex_data_keeps_the_widest_precision(data):
    # a complex element made every result complex64: complex128 numpy values (and float64 ones
    # beside a Python complex) were silently narrowed
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (the slow list-of-arrays warning)
        got, want = _both(lambda lib: lib.tensor(data()))
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_tensor_of_complex128_tensors_stays_complex128():
    got = tg.tensor([tg.tensor(1 + 2j, dtype=tg.complex128), 1])
    want = torch.tensor([torch.tensor(1 + 2j, dtype=torch.complex128), 1])
    assert str(got.dtype) == str(want.dtype) == "torch.complex128"
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_python_complex_under_float16_default_is_refused_not_complex64():
    # PyTorch makes complex32 (chalf) here, which tapegrad cannot hold: a refusal, never a
    # silent complex64
    old = tg.get_default_dtype()
    tg.set_default_dtype(tg.float16)
    try:
        for make in (lambda: tg.tensor([1j]), lambda: tg.tensor(1j),
                     lambda: tg.full((1,), 1j)):
            with pytest.raises(TypeError, match="complex32"):
                make()
        assert tg.tensor([1.5]).dtype == tg.float16
    finally:
        tg.set_default_dtype(old)


# -- numpy() of a tensor with the conjugate bit ----------------------------------------------------

def test_numpy_of_conj_view_is_refused_as_in_pytorch():
    _raises_like(lambda lib: lib.tensor([1j, 2]).conj().numpy())
    _raises_like(lambda lib: np.asarray(lib.tensor([1j, 2]).conj()))
    got, want = _both(lambda lib: lib.tensor([1j, 2]).conj().numpy(force=True))
    np.testing.assert_array_equal(got, want)
    got, want = _both(lambda lib: lib.tensor([1j, 2]).conj().resolve_conj().numpy())
    np.testing.assert_array_equal(got, want)
    # a real tensor's conj() is the tensor itself, with no conjugate bit
    got, want = _both(lambda lib: lib.tensor([1.0, 2.0]).conj().numpy())
    np.testing.assert_array_equal(got, want)


# -- finfo and dtype.to_complex / to_real --------------------------------------------------------

@pytest.mark.parametrize("name", ["complex32", "complex64", "complex128"])
def test_finfo_of_complex_dtype_is_its_parts(name):
    got, want = _both(lambda lib: lib.finfo(getattr(lib, name)))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(got, attr) == getattr(want, attr), attr
    assert repr(got) == repr(want)


@pytest.mark.parametrize("name", ["float16", "float32", "float64", "bfloat16", "complex32",
                                  "complex64", "complex128", "int64", "int8", "uint8", "bool"])
def test_dtype_to_complex_and_to_real(name):
    got, want = _both(lambda lib: getattr(lib, name).to_real())
    assert str(got) == str(want)
    if getattr(torch, name).is_floating_point or getattr(torch, name).is_complex:
        got, want = _both(lambda lib: getattr(lib, name).to_complex())
        assert str(got) == str(want)
    else:
        _raises_like(lambda lib: getattr(lib, name).to_complex())


# -- argument checks -------------------------------------------------------------------------------

def test_unique_consecutive_of_0d_with_dim_is_index_error():
    _raises_like(lambda lib: lib.unique_consecutive(lib.tensor(3), dim=0))
    _raises_like(lambda lib: lib.unique_consecutive(lib.tensor(3.0), return_counts=True, dim=-1))


def test_diff_checks_prepend_and_append_like_pytorch():
    _raises_like(lambda lib: lib.diff(lib.ones(2, 3), dim=0, prepend=lib.zeros(1, 2)))
    _raises_like(lambda lib: lib.diff(lib.ones(2, 3), dim=1, append=lib.zeros(1, 2)))
    _raises_like(lambda lib: lib.diff(lib.ones(2), prepend=1.0))
    got, want = _both(lambda lib: lib.diff(lib.arange(6.0).reshape(2, 3) ** 2, dim=1,
                                           prepend=lib.zeros(2, 1), append=lib.ones(2, 2)))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# -- asarray of a tensor: requires_grad given or not -----------------------------------------------

@pytest.mark.parametrize("requires_grad", [None, False, True])
@pytest.mark.parametrize("leaf", [True, False])
@pytest.mark.parametrize("copy", [None, True])
@pytest.mark.parametrize("dtype", [None, "float64"])
def test_asarray_of_tensor_requires_grad_forms(requires_grad, leaf, copy, dtype):
    # requires_grad=False on a tensor in a graph kept the graph (gradients flowed where
    # PyTorch cuts them); an unspecified one on a grad leaf now warns as PyTorch's
    import warnings

    def run(lib):
        base = lib.ones(2, requires_grad=True)
        t = base if leaf else base * 2
        kwargs = {} if requires_grad is None else {"requires_grad": requires_grad}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            u = lib.asarray(t, copy=copy, dtype=None if dtype is None else getattr(lib, dtype),
                            **kwargs)
        grad = None
        if u.requires_grad:
            (grad,) = lib.autograd.grad((u * lib.arange(1.0, 3.0)).sum(), base)
        return (u.requires_grad, u is t, u.is_leaf, t.requires_grad, len(caught),
                None if grad is None else grad.tolist())
    got, want = _both(run)
    assert got == want


# -- isin: both sides meet in PyTorch's result type ------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda lib: lib.isin(lib.tensor([0.1]), 0.1),
    lambda lib: lib.isin(lib.tensor([0.1, 0.2]), 0.1, invert=True),
    lambda lib: lib.isin(lib.tensor([0.1], dtype=lib.float16), 0.1),
    lambda lib: lib.isin(0.1, lib.tensor([0.1, 0.3])),
    lambda lib: lib.isin(lib.tensor([44], dtype=lib.int8), 300),
    lambda lib: lib.isin(300, lib.tensor([44], dtype=lib.int8)),
    lambda lib: lib.isin(lib.tensor([255], dtype=lib.uint8), -1),
    lambda lib: lib.isin(lib.tensor([44], dtype=lib.int8), lib.tensor(300)),
    lambda lib: lib.isin(lib.tensor([0.1]), lib.tensor(0.1, dtype=lib.float64)),
    lambda lib: lib.isin(lib.tensor(0.1), lib.tensor([0.1], dtype=lib.float64)),
    lambda lib: lib.isin(lib.tensor([44], dtype=lib.int8), lib.tensor([300])),
    lambda lib: lib.isin(lib.tensor([16777216.0]), 16777217),
    lambda lib: lib.isin(lib.tensor([1, 2]), 2.5),
    lambda lib: lib.isin(lib.tensor([1, 2]), lib.tensor(2.0)),
    lambda lib: lib.isin(lib.tensor([float("inf")]), 1e39),
    lambda lib: lib.isin(lib.tensor([0.1]), np.float64(0.1)),
], ids=range(16))
def test_isin_converts_a_number_or_0d_tensor_to_the_result_type(call):
    # a Python number was compared in numpy's promotion (0.1 as float64 against float32 0.1):
    # silently False where PyTorch says True
    got, want = _both(call)
    assert str(got.dtype) == str(want.dtype) and tuple(got.shape) == tuple(want.shape)
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("call", [
    lambda lib: lib.isin(lib.tensor([1j, 2]), lib.tensor([2.0])),
    lambda lib: lib.isin(lib.tensor([1, 2]), 1 + 0j),
    lambda lib: lib.isin(1j, lib.tensor([1])),
    lambda lib: lib.isin(lib.tensor([1j]), lib.tensor([True])),
    lambda lib: lib.isin(lib.tensor([True]), lib.tensor([1j])),
    lambda lib: lib.mode(lib.tensor([1j, 2])),
    lambda lib: lib.mode(lib.tensor([[1j, 2]]), 0),
    lambda lib: lib.mode(lib.zeros(0, dtype=lib.complex64)),
], ids=range(8))
def test_isin_and_mode_refuse_complex_as_pytorch(call):
    _raises_like(call)


def test_mode_of_0d_complex_is_allowed_as_in_pytorch():
    got, want = _both(lambda lib: lib.mode(lib.tensor(1 + 2j)))
    assert got.values.item() == want.values.item() and got.indices.item() == want.indices.item()


# -- searchsorted / bucketize: a number or 0-d tensor of values meets the boundaries' dtype --------

@pytest.mark.parametrize("call", [
    lambda lib: lib.searchsorted(lib.tensor([0.1, 0.2, 0.3]), 0.1, right=True),
    lambda lib: lib.searchsorted(lib.tensor([0.1, 0.2, 0.3]), 0.1),
    lambda lib: lib.bucketize(0.1, lib.tensor([0.1, 0.2, 0.3]), right=True),
    lambda lib: lib.searchsorted(lib.tensor([0.1, 0.2, 0.3], dtype=lib.float16), 0.1),
    lambda lib: lib.searchsorted(lib.tensor([0.1, 0.2, 0.3], dtype=lib.float16), lib.tensor(0.1)),
    lambda lib: lib.bucketize(lib.tensor(0.1), lib.tensor([0.1, 0.2], dtype=lib.float16)),
    lambda lib: lib.searchsorted(lib.tensor([0.1, 0.2]), lib.tensor(0.1, dtype=lib.float64),
                                 right=True),
    lambda lib: lib.searchsorted(lib.tensor([0.1, 0.2]), lib.tensor([0.1], dtype=lib.float64),
                                 right=True),
    lambda lib: lib.searchsorted(lib.tensor([1, 2, 44], dtype=lib.int8), 300),
    lambda lib: lib.searchsorted(lib.tensor([1, 3, 5]), 2.5),
    lambda lib: lib.searchsorted(lib.tensor([0.1, 0.2]), np.float64(0.1), right=True),
], ids=range(11))
def test_searchsorted_compares_in_the_result_type(call):
    # numpy's promotion compared a Python 0.1 with float32 0.1 in float64: another index, silently
    got, want = _both(call)
    assert str(got.dtype) == str(want.dtype) and got.tolist() == want.tolist()


# -- integer contractions keep their dtype -------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8", "int32", "float16"])
def test_addbmm_and_bilinear_keep_an_integer_dtype(dtype):
    # both summed their product with sum's integer rule (int64): an int8 addbmm or bilinear was
    # silently int64, and did not wrap as PyTorch's
    def run(lib):
        dt = getattr(lib, dtype)
        m = lib.ones(2, 2, dtype=dt)
        b = lib.full((2, 2, 2), 3, dtype=dt)
        return (lib.addbmm(m, b, b), lib.addbmm(m, b, b, beta=2, alpha=3), m.clone().addbmm_(b, b),
                lib.nn.functional.bilinear(m, m, b), lib.nn.functional.bilinear(m * 9, m * 9, b))
    for got, want in zip(*_both(run)):
        assert str(got.dtype) == str(want.dtype)
        assert got.tolist() == want.tolist()


# -- add/sub alpha and the contractions' scalars are converted checked ----------------------------

@pytest.mark.parametrize("call", [
    lambda lib: lib.add(lib.ones(2, dtype=lib.int8), lib.ones(2, dtype=lib.int8), alpha=300),
    lambda lib: lib.sub(lib.ones(2, dtype=lib.int8), 1, alpha=300),
    lambda lib: lib.ones(2, dtype=lib.int8).add_(lib.ones(2, dtype=lib.int8), alpha=-300),
    lambda lib: lib.add(lib.ones(2, dtype=lib.uint8), lib.ones(2, dtype=lib.uint8), alpha=-256),
    lambda lib: lib.sub(lib.ones(2, dtype=lib.uint8), lib.ones(2, dtype=lib.uint8), alpha=256),
    lambda lib: lib.add(lib.ones(2, dtype=lib.int32), lib.ones(2, dtype=lib.int32), alpha=2**31),
    lambda lib: lib.add(lib.ones(2, dtype=lib.float16), lib.ones(2, dtype=lib.float16),
                        alpha=70000),
    lambda lib: lib.sub(lib.ones(2, dtype=lib.float16), lib.ones(2, dtype=lib.float16),
                        alpha=1e5),
    lambda lib: lib.add(lib.ones(2), lib.ones(2), alpha=1e39),
    lambda lib: lib.addcmul(lib.ones(2, dtype=lib.int8), lib.ones(2, dtype=lib.int8),
                            lib.ones(2, dtype=lib.int8), value=300),
    lambda lib: lib.addmm(lib.ones(2, 2, dtype=lib.int8), lib.ones(2, 2, dtype=lib.int8),
                          lib.ones(2, 2, dtype=lib.int8), beta=300),
    lambda lib: lib.addbmm(lib.ones(2, 2, dtype=lib.int8), lib.ones(1, 2, 2, dtype=lib.int8),
                           lib.ones(1, 2, 2, dtype=lib.int8), alpha=300),
], ids=range(12))
def test_out_of_range_scale_is_pytorch_overflow_error(call):
    # int8's alpha=300 wrapped silently (and float16's 70000 made inf)
    _raises_like(call)


@pytest.mark.parametrize("call", [
    lambda lib: lib.sub(lib.ones(2, dtype=lib.int32), lib.ones(2, dtype=lib.int32), alpha=2**31),
    lambda lib: lib.rsub(lib.ones(2, dtype=lib.int32), lib.ones(2, dtype=lib.int32), alpha=2**31),
    lambda lib: lib.sub(lib.ones(2, dtype=lib.uint8), lib.ones(2, dtype=lib.uint8), alpha=255),
    lambda lib: lib.sub(lib.ones(2, dtype=lib.uint8), lib.ones(2, dtype=lib.uint8), alpha=-255),
    lambda lib: lib.add(lib.ones(2, dtype=lib.uint8), lib.ones(2, dtype=lib.uint8), alpha=-255),
    lambda lib: lib.add(lib.ones(2, dtype=lib.int8), lib.ones(2, dtype=lib.int8),
                        alpha=np.int64(-128)),
    lambda lib: lib.add(lib.ones(2, dtype=lib.float16), lib.ones(2, dtype=lib.float16),
                        alpha=float("inf")),
    lambda lib: lib.add(lib.ones(2, dtype=lib.float16), lib.ones(2, dtype=lib.float16), alpha=0.5),
    lambda lib: lib.add(lib.ones(2, dtype=lib.float16), 1e5),
    lambda lib: lib.add(lib.ones(2, dtype=lib.float64), lib.ones(2), alpha=1e300),
], ids=range(10))
def test_in_range_scale_computes_as_pytorch(call):
    got, want = _both(call)
    assert str(got.dtype) == str(want.dtype) and got.tolist() == want.tolist()


@pytest.mark.parametrize("call", [
    lambda lib: lib.add(lib.ones(2, dtype=lib.int64), lib.full((2,), 3, dtype=lib.int8), alpha=100),
    lambda lib: lib.sub(lib.zeros(1, dtype=lib.int32), lib.tensor([100], dtype=lib.uint8), alpha=3),
    lambda lib: lib.ones(1, dtype=lib.int64).add_(lib.tensor([100], dtype=lib.int8), alpha=2),
    lambda lib: lib.add(lib.ones(1, dtype=lib.float64), lib.tensor([0.1]), alpha=0.1),
    lambda lib: lib.add(lib.ones(2, dtype=lib.float64), lib.ones(2), alpha=1e300),
    lambda lib: lib.add(lib.tensor([1.0]), lib.tensor([True]), alpha=0.5),
    lambda lib: lib.add(lib.tensor([1 + 1j]), lib.tensor([2.0]), alpha=1j),
], ids=range(7))
def test_alpha_scales_other_in_the_result_dtype(call):
    # other * alpha was computed in other's own dtype: an int8 other wrapped (add(int64 1,
    # int8 3, alpha=100) was 45, not 301) and a float32 one lost float64's precision
    got, want = _both(call)
    assert str(got.dtype) == str(want.dtype) and got.tolist() == want.tolist()


def test_alpha_gradient_reaches_other_of_another_dtype():
    def run(lib):
        a = lib.ones(2, dtype=lib.float64, requires_grad=True)
        b = lib.tensor([0.1, 0.2], requires_grad=True)
        out = lib.sub(a, b, alpha=0.3)
        ga, gb = lib.autograd.grad((out * lib.tensor([1.0, 2.0], dtype=lib.float64)).sum(),
                                   (a, b))
        return out, ga, gb
    for got, want in zip(*_both(run)):
        assert str(got.dtype) == str(want.dtype)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("call", [
    lambda lib: lib.addcmul(lib.ones(1, dtype=lib.int64), lib.tensor([100], dtype=lib.int8),
                            lib.tensor([3], dtype=lib.int8)),
    lambda lib: lib.addcmul(lib.ones(1, dtype=lib.int64), lib.tensor([100], dtype=lib.int8),
                            lib.tensor([3], dtype=lib.int8), value=2),
    lambda lib: lib.ones(1, dtype=lib.int64).addcmul_(lib.tensor([100], dtype=lib.int8),
                                                      lib.tensor([3], dtype=lib.int8)),
    lambda lib: lib.addcmul(lib.ones(1, dtype=lib.float64), lib.tensor([0.1]), lib.tensor([0.1])),
    lambda lib: lib.addcmul(lib.ones(1, dtype=lib.float64), lib.tensor([1e30]),
                            lib.tensor([1e30])),
    lambda lib: lib.addcdiv(lib.ones(1, dtype=lib.float64), lib.tensor([0.1]), lib.tensor([0.3]),
                            value=0.5),
    lambda lib: lib.addcdiv(lib.ones(1, dtype=lib.float64), lib.tensor([1], dtype=lib.int8),
                            lib.tensor([3.0])),
    lambda lib: lib.addcmul(lib.ones(1), lib.tensor([100], dtype=lib.int8),
                            lib.tensor([3], dtype=lib.int8)),
    lambda lib: lib.addcmul(lib.ones(2, dtype=lib.int8), lib.tensor(1.5, dtype=lib.float64),
                            lib.tensor(3, dtype=lib.int8)),
    lambda lib: lib.addcmul(lib.tensor(1, dtype=lib.int8), lib.tensor([100], dtype=lib.int8),
                            lib.tensor([3], dtype=lib.int16)),
    lambda lib: lib.ones(1, dtype=lib.int8).addcmul_(lib.tensor([100], dtype=lib.int64),
                                                     lib.tensor([3], dtype=lib.int8)),
    lambda lib: lib.addcdiv(lib.tensor([1.0, 2.0]), lib.tensor([100, -3], dtype=lib.int8),
                            lib.tensor(0.5, dtype=lib.float64)),
    lambda lib: lib.addcmul(lib.tensor(1, dtype=lib.float64), lib.tensor(2.0),
                            lib.tensor([3], dtype=lib.int16)),
    lambda lib: lib.addcmul(lib.tensor(1, dtype=lib.uint8), lib.tensor(2, dtype=lib.int8),
                            lib.tensor(3, dtype=lib.uint8)),
], ids=range(14))
def test_addcmul_addcdiv_compute_in_the_common_dtype_of_all_three(call):
    # tensor1 * tensor2 was computed in their own pair's dtype before meeting input's
    got, want = _both(call)
    assert str(got.dtype) == str(want.dtype) and got.tolist() == want.tolist()


def test_addcmul_gradient_through_the_conversion():
    def run(lib):
        x = lib.ones(2, dtype=lib.float64, requires_grad=True)
        a = lib.tensor([0.1, 0.2], requires_grad=True)
        b = lib.tensor([0.3, 0.4], dtype=lib.float64, requires_grad=True)
        out = lib.addcmul(x, a, b, value=0.5)
        return (out,) + lib.autograd.grad((out * lib.tensor([1.0, 2.0], dtype=lib.float64)).sum(),
                                          (x, a, b))
    for got, want in zip(*_both(run)):
        assert str(got.dtype) == str(want.dtype)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)


# -- losses and cov with mixed dtypes --------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.functional.kl_div(lib.tensor([1, 2]), lib.tensor([0.5, 0.5]),
                                         reduction="sum"),
    lambda lib: lib.nn.functional.kl_div(lib.tensor([1.0, 2.0]), lib.tensor([1, 0]),
                                         reduction="sum", log_target=True),
    lambda lib: lib.nn.functional.soft_margin_loss(lib.tensor([1, 2], dtype=lib.int8),
                                                   lib.tensor([1, -1])),
    lambda lib: lib.nn.functional.soft_margin_loss(lib.tensor([1, 2], dtype=lib.int8),
                                                   lib.tensor([1.0, -1.0])),
    lambda lib: lib.cov(lib.ones(2, 2), aweights=lib.tensor([1, 2])),
    lambda lib: lib.cov(lib.ones(2, 2), fweights=lib.tensor([1.0, 2.0])),
    lambda lib: lib.cov(lib.ones(2, 2), fweights=lib.tensor([True, True])),
    lambda lib: lib.cov(lib.ones(2, 2), aweights=lib.tensor([-1.0, 2.0])),
    lambda lib: lib.cov(lib.ones(2, 2), fweights=lib.tensor([-1, 2])),
    lambda lib: lib.cov(lib.ones(2, 2), fweights=lib.tensor([[1, 2]])),
    lambda lib: lib.cov(lib.ones(2, 2), aweights=lib.tensor([1.0, 2.0, 3.0])),
    lambda lib: lib.cov(lib.ones(2, 2), fweights=lib.tensor(2)),
], ids=range(12))
def test_loss_and_cov_argument_refusals(call):
    # each was computed (kl_div of integers, cov with integer aweights, negative weights, ...)
    _raises_like(call)


@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.functional.soft_margin_loss(lib.tensor([0.1, 0.7]),
                                                   lib.tensor([1.0, -1.0], dtype=lib.float64)),
    lambda lib: lib.nn.functional.soft_margin_loss(lib.tensor([0.1, 0.7], dtype=lib.float64),
                                                   lib.tensor([1.0, -1.0]), reduction="none"),
    lambda lib: lib.cov(lib.tensor([[0.1, 0.7], [0.2, 0.3]]),
                        aweights=lib.tensor([1.0, 3.0], dtype=lib.float64)),
    lambda lib: lib.cov(lib.tensor([[0.1, 0.7], [0.2, 0.3]]), correction=0,
                        fweights=lib.tensor([1, 2]),
                        aweights=lib.tensor([0.5, 2.0], dtype=lib.float64)),
    lambda lib: lib.cov(lib.tensor([[1, 2], [3, 5]]), fweights=lib.tensor([1, 2])),
    lambda lib: lib.cov(lib.tensor([1.0, 2.0, 4.0]), fweights=lib.tensor([1, 1, 2])),
], ids=range(6))
def test_loss_and_cov_result_dtype(call):
    # soft_margin_loss took target's wider dtype (PyTorch's has input's); cov rounded float64
    # aweights to a float32 input's dtype
    got, want = _both(call)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("make", [
    lambda lib: lib.tensor(array.array("f", [1.5, 2.25])),
    lambda lib: lib.as_tensor(array.array("f", [1.5, 2.0])),
    lambda lib: lib.tensor([array.array("f", [1.5]), array.array("f", [2.5])]),
    lambda lib: lib.tensor([array.array("b", [1]), [2.5]]),
    lambda lib: lib.tensor(array.array("B", [200])),
    lambda lib: lib.tensor(array.array("i", [1, 2])),
    lambda lib: lib.tensor(array.array("d", [0.1])),
], ids=range(7))
def test_tensor_of_array_array_reads_python_numbers(make):
    # an array.array('f') was walked as one int leaf: tensor(array.array('f', [1.5])) was
    # silently int64 [1]
    got, want = _both(make)
    assert str(got.dtype) == str(want.dtype) and got.tolist() == want.tolist()
