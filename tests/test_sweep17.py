"""Faults found by replaying PyTorch's own OpInfo samples (sweep 17) against tapegrad; each case
is written out explicitly and checked against torch (no torch.testing._internal needed)."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _tg(t, requires_grad=False):
    out = tapegrad.tensor(t.detach().numpy().copy())
    return out.requires_grad_() if requires_grad else out


def _close(a, b, rtol=1e-7, atol=1e-9):
    a = a.detach().numpy() if isinstance(a, torch.Tensor) else a.detach().numpy()
    np.testing.assert_allclose(np.asarray(b.detach().numpy()), a, rtol=rtol, atol=atol)


# -- complex logaddexp: PyTorch does not wrap the imaginary part (SILENT: was off by 2*pi) ----

@pytest.mark.parametrize("x, y", [(-4.827 - 7.5824j, 5.5761 - 8.3157j), (3 + 0j, 1 + 10j),
                                  (3 + 0j, 3 + 10j), (3 + 10j, 3 + 0j),
                                  (complex("-inf"), complex("-inf")),
                                  (complex("inf"), complex("inf"))])
def test_complex_logaddexp_keeps_the_larger_operands_branch(x, y):
    a, b = torch.tensor(x, dtype=torch.complex128), torch.tensor(y, dtype=torch.complex128)
    got = tapegrad.logaddexp(_tg(a), _tg(b))
    assert got.dtype == tapegrad.complex128
    assert complex(got.item()) == pytest.approx(complex(torch.logaddexp(a, b).item()), rel=1e-12)


def test_complex_logaddexp_gradient():
    a = torch.tensor([3 + 1j, 2 - 5j, -4.8 - 7.6j], dtype=torch.complex128, requires_grad=True)
    b = torch.tensor(5.5 - 8.3j, dtype=torch.complex128)
    torch.logaddexp(a, b).abs().sum().backward()
    g = _tg(a, requires_grad=True)
    out = tapegrad.logaddexp(g, _tg(b))
    out.abs().sum().backward()
    assert type(out.grad_fn).__name__ == "LogaddexpBackward0"
    _close(a.grad, g.grad)


# -- special.entr / ndtr of integers and bool compute in the default float dtype ----------------

@pytest.mark.parametrize("name", ["entr", "ndtr"])
@pytest.mark.parametrize("values", [[1, 2, 0, 5], [True, False]])
def test_special_integer_inputs_promote(name, values):
    # SILENT: entr of an int64 tensor kept int64 (-1.386 came back as -1); bool raised
    expected = getattr(torch.special, name)(torch.tensor(values))
    got = getattr(tapegrad.special, name)(tapegrad.tensor(values))
    assert str(got.dtype) == str(expected.dtype)
    _close(expected, got, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["entr", "ndtr"])
def test_special_complex_refused_as_torch(name):
    with pytest.raises(NotImplementedError) as expected:
        getattr(torch.special, name)(torch.tensor([1 + 1j]))
    with pytest.raises(NotImplementedError) as got:
        getattr(tapegrad.special, name)(tapegrad.tensor([1 + 1j]))
    assert str(got.value) == str(expected.value)


# -- linalg.pinv's gradient comes from the pseudo-inverse, not through the SVD ------------------

def _pinv_grads(lib, a, b, w):
    """OpInfo linalg.pinv 'singular': pinv(a @ b^T), rank-deficient with repeated singular
    values, gradients with respect to a and b."""
    loss = (lib.linalg.pinv(a @ b.mT) * w).sum()
    return lib.autograd.grad(loss, (a, b))


def test_pinv_gradient_at_repeated_and_zero_singular_values():
    # SILENT: a 3x3 rank-2 matrix with singular values (1, 1, 0) had gradients off by ~0.18
    q, _ = torch.linalg.qr(torch.randn(3, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3)))
    a = q[:, :2].clone().requires_grad_()
    b = q[:, :2].flip(-1).clone().requires_grad_()
    w = torch.randn(3, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    expected = _pinv_grads(torch, a, b, w)
    got = _pinv_grads(tapegrad, _tg(a, True), _tg(b, True), _tg(w))
    for e, g in zip(expected, got):
        _close(e, g, atol=1e-10)


@pytest.mark.parametrize("shape, hermitian, dtype", [((4, 4), False, "float64"),
                                                    ((3, 5), False, "complex128"),
                                                    ((2, 5, 3), False, "float64"),
                                                    ((4, 4), True, "float64")])
def test_pinv_gradient_and_second_derivative(shape, hermitian, dtype):
    gen = torch.Generator().manual_seed(5)
    a = torch.randn(*shape, dtype=getattr(torch, dtype), generator=gen)
    w = torch.randn(*shape[:-2], shape[-1], shape[-2], dtype=a.dtype, generator=gen)
    results = []
    for lib, x, weight in ((torch, a.clone().requires_grad_(), w), (tapegrad, _tg(a, True), _tg(w))):
        out = lib.linalg.pinv(x, hermitian=hermitian)
        loss = (out * weight).sum()
        loss = loss.real if a.is_complex() else loss
        grad, = lib.autograd.grad(loss, x, create_graph=True)
        second, = lib.autograd.grad((grad.abs() ** 2).sum(), x)
        results.append((grad, second, type(out.grad_fn).__name__))
    (eg, es, ename), (gg, gs, gname) = results
    assert gname == ename
    _close(eg, gg, rtol=1e-6, atol=1e-9)
    _close(es, gs, rtol=1e-5, atol=1e-7)


# -- conv_transpose3d with a stride keeps an integer dtype (SILENT: int64 came back float32) ----

@pytest.mark.parametrize("kwargs", [dict(stride=2, padding=2, output_padding=1),
                                    dict(stride=(3, 1, 2), dilation=2), dict(stride=2, groups=3)])
def test_conv_transpose3d_integer_dtype(kwargs):
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(-3, 3, (2, 3, 4, 4, 4), generator=gen)
    w = torch.randint(-3, 3, (3, 1 if "groups" in kwargs else 2, 3, 3, 3), generator=gen)
    expected = torch.nn.functional.conv_transpose3d(x, w, **kwargs)
    got = tapegrad.nn.functional.conv_transpose3d(_tg(x), _tg(w), **kwargs)
    assert str(got.dtype) == str(expected.dtype) == "torch.int64"
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


# -- linalg.vander of a 0-d tensor is a 1 x N matrix ----------------------------------------------

def test_vander_of_a_scalar():
    x = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    expected = torch.linalg.vander(x, N=3)
    g = _tg(x, requires_grad=True)
    got = tapegrad.linalg.vander(g, N=3)
    assert tuple(got.shape) == tuple(expected.shape) == (1, 3)
    _close(expected, got)
    expected.sum().backward()
    got.sum().backward()
    _close(x.grad, g.grad)


# -- tensordot: a contracted dim of size 1 broadcasts against its partner ----------------------

@pytest.mark.parametrize("shape_a, shape_b, dims", [((1, 1, 1), (2, 1, 2), [[0, 1], [2, 0]]),
                                                    ((3, 1, 4), (2, 5, 3), [[0, 1], [2, 0]]),
                                                    ((3, 4), (1, 4), ([1], [0]))])
def test_tensordot_size_one_contracted_dims(shape_a, shape_b, dims):
    gen = torch.Generator().manual_seed(1)
    a = torch.randn(shape_a, dtype=torch.float64, generator=gen, requires_grad=True)
    b = torch.randn(shape_b, dtype=torch.float64, generator=gen, requires_grad=True)
    expected = torch.tensordot(a, b, dims=dims)
    ga, gb = _tg(a, True), _tg(b, True)
    got = tapegrad.tensordot(ga, gb, dims=dims)
    assert tuple(got.shape) == tuple(expected.shape)
    _close(expected, got)
    for e, g in zip(torch.autograd.grad((expected ** 2).sum(), (a, b)),
                    tapegrad.autograd.grad((got ** 2).sum(), (ga, gb))):
        _close(e, g)


def test_tensordot_size_one_keeps_integer_dtype():
    a, b = torch.arange(6, dtype=torch.int32).reshape(2, 3), torch.ones(3, 1, dtype=torch.int32)
    expected = torch.tensordot(a, b, dims=([0], [1]))
    got = tapegrad.tensordot(_tg(a), _tg(b), dims=([0], [1]))
    assert str(got.dtype) == str(expected.dtype)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


# -- empty matrices and 0-d layouts ------------------------------------------------------------

@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3)])
def test_cholesky_ex_of_empty_matrices(shape):
    expected = torch.linalg.cholesky_ex(torch.zeros(shape), upper=True)
    got = tapegrad.linalg.cholesky_ex(tapegrad.zeros(shape), upper=True)
    assert tuple(got.L.shape) == tuple(expected.L.shape)
    assert tuple(got.info.shape) == tuple(expected.info.shape)
    assert str(got.info.dtype) == str(expected.info.dtype)


def test_empty_permuted_zero_dims():
    assert tapegrad.empty_permuted((), ()).shape == torch.empty_permuted((), ()).shape
    assert (tapegrad.empty_permuted((2, 3, 4), (2, 0, 1)).stride()
            == torch.empty_permuted((2, 3, 4), (2, 0, 1)).stride())


# -- PyTorch's own error inputs: the exception tapegrad raised (or did not) ---------------------

def _same_error(call):
    """call(lib) raises the same exception type and message under torch and tapegrad."""
    with pytest.raises(Exception) as expected:
        call(torch)
    with pytest.raises(Exception) as got:
        call(tapegrad)
    assert type(got.value) is type(expected.value)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("margin", [-1.0, 0.0])
def test_triplet_margin_loss_refuses_a_margin_that_is_not_positive(margin):
    _same_error(lambda m: m.nn.functional.triplet_margin_loss(
        m.ones(3, 4), m.ones(3, 4), m.zeros(3, 4), margin=margin))


def test_builtin_triplet_margin_loss_takes_any_margin():
    expected = torch.triplet_margin_loss(torch.ones(3, 4), torch.ones(3, 4), torch.zeros(3, 4),
                                         margin=-1.0)
    got = tapegrad.triplet_margin_loss(tapegrad.ones(3, 4), tapegrad.ones(3, 4),
                                       tapegrad.zeros(3, 4), margin=-1.0)
    _close(expected, got)


def test_multilabel_margin_loss_checks_reduction_before_target_dtype():
    _same_error(lambda m: m.nn.functional.multilabel_margin_loss(m.ones(5, 4), m.ones(5, 4),
                                                                 reduction="abc"))


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.max_pool1d(m.ones(0, 10), 1),
    lambda m: m.nn.functional.max_pool1d(m.ones(0, 10), 2, return_indices=True),
    lambda m: m.max_pool1d(m.ones(0, 10), 2),
    lambda m: m.nn.functional.max_pool2d(m.ones(0, 4, 4), 2),
    lambda m: m.nn.functional.avg_pool1d(m.ones(0, 10), 2),
    lambda m: m.nn.functional.avg_pool2d(m.ones(0, 4, 4), 2),
    lambda m: m.nn.functional.lp_pool1d(m.ones(0, 10), 2, 2),
])
def test_pooling_refuses_unbatched_input_without_channels(call):
    # (an empty batch, (0, C, L), still pools)
    _same_error(call)


def test_pooling_keeps_an_empty_batch():
    assert (tapegrad.nn.functional.max_pool1d(tapegrad.ones(0, 3, 10), 2).shape
            == torch.nn.functional.max_pool1d(torch.ones(0, 3, 10), 2).shape)


@pytest.mark.parametrize("call", [
    lambda m: m.gradient(m.ones(3, 3), spacing=0.1, dim=[1, 1]),
    lambda m: m.gradient(m.ones(3, 3), dim=[1, -1]),
    lambda m: m.gradient(m.ones(3, 3), spacing=[1.0, 2.0], dim=[0, 0]),
])
def test_gradient_refuses_repeated_dims(call):
    # (it returned one estimate per repetition)
    _same_error(call)


@pytest.mark.parametrize("start", [lambda m: m.tensor(True), lambda m: m.tensor([1, 2]),
                                   lambda m: m.tensor(1.0), lambda m: m.tensor([1])])
def test_narrow_tensor_start_must_be_a_0d_integer(start):
    # (a 0-d bool start was read as 1; the others raised TypeError)
    _same_error(lambda m: m.narrow(m.ones(4, 3), 0, start(m), 2))
    _same_error(lambda m: m.ones(4, 3).narrow(1, start(m), 2))


def test_narrow_tensor_start_integral():
    expected = torch.ones(4, 3).narrow(1, torch.tensor(1, dtype=torch.int32), 2)
    got = tapegrad.ones(4, 3).narrow(1, tapegrad.tensor(1, dtype=tapegrad.int32), 2)
    assert tuple(got.shape) == tuple(expected.shape)


# -- silu computes complex values (PyTorch does, without autograd) -----------------------------

@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_silu_complex_values(dtype):
    x = torch.tensor([1 + 2j, -0.5 + 0.3j, 3 - 1j, 0j], dtype=getattr(torch, dtype))
    expected = torch.nn.functional.silu(x)
    got = tapegrad.nn.functional.silu(_tg(x))
    assert str(got.dtype) == str(expected.dtype)
    _close(expected, got, rtol=1e-6, atol=1e-6)
    inplace = _tg(x)
    tapegrad.nn.functional.silu(inplace, inplace=True)
    _close(expected, inplace, rtol=1e-6, atol=1e-6)


def test_silu_complex_refuses_autograd():
    _same_error(lambda m: m.nn.functional.silu(m.tensor([1 + 2j]).requires_grad_()))


# -- in-place variants on complex tensors ------------------------------------------------------

@pytest.mark.parametrize("exponent", [lambda m: m.tensor(2 + 0j, dtype=m.complex128),
                                      lambda m: 2, lambda m: m.tensor([2.0, 3.0])])
def test_float_power_inplace_on_complex128(exponent):
    # (it demanded a float64 base: the result dtype is complex128 with a complex operand)
    expected = torch.tensor([1 + 1j, 2 - 1j], dtype=torch.complex128).float_power_(exponent(torch))
    got = tapegrad.tensor([1 + 1j, 2 - 1j], dtype=tapegrad.complex128).float_power_(
        exponent(tapegrad))
    assert str(got.dtype) == str(expected.dtype)
    _close(expected, got, atol=1e-12)


@pytest.mark.parametrize("call", [
    lambda m: m.tensor([1.0, 2.0], dtype=m.float64).float_power_(2j),
    lambda m: m.tensor([1.0, 2.0]).float_power_(m.tensor(2 + 0j)),
    lambda m: m.tensor([1.0, 2.0], dtype=m.complex64).float_power_(2),
    lambda m: m.empty(3, dtype=m.complex64).cauchy_(),
    lambda m: m.empty(3, dtype=m.complex128).cauchy_(),
    lambda m: m.empty(3, dtype=m.complex64).exponential_(),
])
def test_inplace_complex_refusals(call):
    _same_error(call)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_normal_and_uniform_fill_both_parts_of_a_complex_tensor(dtype):
    # (a KeyError before) PyTorch: each part N(mean, std^2/2), each part U[from, to)
    tapegrad.manual_seed(0)
    normal = tapegrad.empty(50000, dtype=getattr(tapegrad, dtype)).normal_(5.0, 2.0).numpy()
    assert str(normal.dtype) == dtype
    for part in (normal.real, normal.imag):
        assert abs(part.mean() - 5.0) < 0.05
        assert abs(part.std() - 2.0 / np.sqrt(2)) < 0.03
    uniform = tapegrad.empty(50000, dtype=getattr(tapegrad, dtype)).uniform_(5.0, 7.0).numpy()
    for part in (uniform.real, uniform.imag):
        assert part.min() >= 5.0 and part.max() < 7.0 and abs(part.mean() - 6.0) < 0.05
    reference = torch.empty(50000, dtype=getattr(torch, dtype)).normal_(5.0, 2.0)
    assert abs(float(reference.real.std()) - 2.0 / np.sqrt(2)) < 0.03


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("call", [lambda m, d: m.zeros(3, dtype=d).bernoulli_(0.5),
                                  lambda m, d: m.zeros(3, dtype=d).bernoulli_(m.full((3,), 0.5)),
                                  lambda m, d: m.zeros(3, dtype=d).geometric_(0.5)])
def test_discrete_samplers_refuse_complex(call, dtype):
    # (they wrote 0/1 or counts into the complex tensor)
    _same_error(lambda m: call(m, getattr(m, dtype)))


# -- torch.lu (deprecated) factors complex matrices as linalg.lu_factor does --------------------

@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("shape", [(3, 5), (4, 4), (2, 5, 3)])
def test_lu_complex(shape):
    # (refused with NotImplementedError "lu_cpu" ... 'Complexdouble'; PyTorch computes)
    a = torch.randn(*shape, dtype=torch.complex128, generator=torch.Generator().manual_seed(0))
    at, ag = a.clone().requires_grad_(), _tg(a, True)
    expected, got = torch.lu(at, True, True), tapegrad.lu(ag, True, True)
    for e, g in zip(expected, got):
        assert str(g.dtype) == str(e.dtype)
        _close(e, g, atol=1e-12)
    w = torch.randn(expected[0].shape, dtype=torch.complex128)
    grad_t, = torch.autograd.grad((expected[0] * w).sum().real, at)
    grad_g, = tapegrad.autograd.grad((got[0] * _tg(w)).sum().real, ag)
    _close(grad_t, grad_g, atol=1e-12)


def test_dtype_names_in_messages_use_pytorchs_spelling():
    # ('Complexfloat' before: the lowercase name capitalised)
    _same_error(lambda m: m.binomial(m.ones(3, dtype=m.complex64), m.ones(3, dtype=m.float64)))
    _same_error(lambda m: m.binomial(m.ones(3), m.ones(3, dtype=m.complex64)))


def test_silu_complex_zero_dim():
    x = torch.tensor(1 + 2j, dtype=torch.complex128)
    got = tapegrad.nn.functional.silu(_tg(x))
    assert isinstance(got.numpy(), np.ndarray) and got.shape == ()
    _close(torch.nn.functional.silu(x), got)


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.adaptive_max_pool1d(m.ones(0, 10), 2),
    lambda m: m.nn.functional.adaptive_max_pool2d(m.ones(0, 10, 4), 2),
    lambda m: m.nn.functional.adaptive_max_pool1d(m.ones(0, 10), 2, return_indices=True)[1],
])
def test_adaptive_max_pool_unbatched_without_channels(call):
    # (numpy's reshape(-1) of the empty windows raised ValueError; PyTorch returns empty)
    expected, got = call(torch), call(tapegrad)
    assert tuple(got.shape) == tuple(expected.shape)
    assert str(got.dtype) == str(expected.dtype)
