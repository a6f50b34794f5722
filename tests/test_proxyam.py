"""Gaps found running held-out reinforcement-learning scripts (Emanuel-Goldman/
reinforce-and-actor-critic, qihongl/demo-advantage-actor-critic, thomashirtz/soft-actor-critic)
and probing their idioms under tapegrad: what they compute must be what PyTorch computes."""
import numpy as np
import pytest

import tapegrad


# Factory sizes: PyTorch's argument parser takes any integer with __index__ as a size element, a
# 0-d integer ndarray included (`np.asarray(n_actions)`, an env attribute stored as an array).
_SIZE_CASES = {
    "zeros_0d_array": lambda L: L.zeros(np.array(2), 3),
    "zeros_only_0d_array": lambda L: L.zeros(np.array(3)),
    "zeros_uint8_0d": lambda L: L.zeros(np.array(2, dtype=np.uint8)),
    "zeros_packed": lambda L: L.zeros((np.array(2), 3)),
    "zeros_size_kw": lambda L: L.zeros(size=(np.array(2), 3)),
    "zeros_second": lambda L: L.zeros(3, np.array(2)),
    "ones_list": lambda L: L.ones([np.array(2), np.int32(3)]),
    "empty_mixed": lambda L: L.empty(np.array(2), np.int32(3)).zero_(),
    "full_packed": lambda L: L.full((np.array(2),), 1.5),
    "new_zeros": lambda L: L.zeros(2).new_zeros(np.array(2), 3),
    "new_ones_packed": lambda L: L.zeros(2).new_ones((np.array(2), 3)),
    "rand_shape": lambda L: L.rand((np.array(2), 3)) * 0,
    "randn_shape": lambda L: L.randn(np.array(2)) * 0,
    "randint_shape": lambda L: L.randint(3, (np.array(2),)) * 0,
}


@pytest.mark.parametrize("case", sorted(_SIZE_CASES))
def test_factory_takes_zero_d_integer_arrays_as_sizes(torch, case):
    want = _SIZE_CASES[case](torch)
    got = _SIZE_CASES[case](tapegrad)
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


_SIZE_ERRORS = {
    "one_d_array": lambda L: L.ones(np.array([2, 3])),
    "two_d_array": lambda L: L.zeros(np.array([[2]])),
    "array_in_list": lambda L: L.zeros([np.array([2]), 3]),
    "array_second": lambda L: L.zeros(3, np.array([2])),
    "negative_0d": lambda L: L.zeros(np.array(-1)),
}


@pytest.mark.parametrize("case", sorted(_SIZE_ERRORS))
def test_factory_size_array_errors_match_torch(torch, case):
    with pytest.raises(Exception) as want:
        _SIZE_ERRORS[case](torch)
    with pytest.raises(type(want.value)) as got:
        _SIZE_ERRORS[case](tapegrad)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin_grad_fn_names_and_gradients(torch, name):
    a, b = [1., 2., 3., float("nan")], [1., 1., 4., 2.]
    results = []
    for lib in (torch, tapegrad):
        x = lib.tensor(a, dtype=lib.float64, requires_grad=True)
        y = lib.tensor(b, dtype=lib.float64, requires_grad=True)
        out = getattr(lib, name)(x, y)
        out.sum().backward()
        results.append((type(out.grad_fn).__name__, out.detach().numpy(), x.grad.numpy(),
                        y.grad.numpy()))
    (want_name, *want), (got_name, *got) = results
    assert got_name == want_name
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


# Distribution parameters: PyTorch's broadcast_all takes Python's int, float and bool besides
# tensors; a numpy float32/int64 scalar (an action std read from a float32 array) is a ValueError.
_PARAM_CASES = {
    "np_float32_loc": lambda L: L.distributions.Normal(np.float32(0.5), 1.),
    "np_float32_scale": lambda L: L.distributions.Normal(L.zeros(2), np.float32(0.5)),
    "np_int64_loc": lambda L: L.distributions.Normal(np.int64(0), 1.),
    "zero_d_array": lambda L: L.distributions.Normal(np.array(0.), 1.),
    "complex_scale": lambda L: L.distributions.Laplace(0., 1j),
    "uniform_np_float32": lambda L: L.distributions.Uniform(np.float32(0), 1.),
    "exponential_np_float32": lambda L: L.distributions.Exponential(np.float32(1.)),
    "bernoulli_np_float32": lambda L: L.distributions.Bernoulli(np.float32(0.5)),
    "broadcast_all": lambda L: L.distributions.utils.broadcast_all(np.float32(1.), L.zeros(2)),
}


@pytest.mark.parametrize("case", sorted(_PARAM_CASES))
def test_distribution_refuses_numpy_scalar_parameters_as_torch(torch, case):
    with pytest.raises(Exception) as want:
        _PARAM_CASES[case](torch)
    with pytest.raises(type(want.value)) as got:
        _PARAM_CASES[case](tapegrad)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("loc, scale", [(np.float64(0.5), 1.), (0, 1), (True, 2.)])
def test_distribution_python_scalars_still_accepted(torch, loc, scale):
    want = torch.distributions.Normal(loc, scale)
    got = tapegrad.distributions.Normal(loc, scale)
    assert str(got.loc.dtype) == str(want.loc.dtype)
    assert float(got.loc) == float(want.loc) and float(got.scale) == float(want.scale)


# Scalar factors given as numpy integers (a soft-update tau or an interpolation weight read from
# a numpy array): the kernel computes with the number they hold.  lerp's `1 - weight` of an
# np.uint8 / np.int8 weight wrapped around in the numpy type: a silently wrong result.
_NUMPY_WEIGHT_CASES = {
    "lerp": lambda L, a, w: L.lerp(a, a * 2, w),
    "lerp_f64": lambda L, a, w: L.lerp(a.double(), a.double() * 2, w),
    "lerp_half": lambda L, a, w: L.lerp(a.half(), a.half() * 2, w),
    "lerp_": lambda L, a, w: a.clone().lerp_(a * 2, w),
    "foreach_lerp": lambda L, a, w: L._foreach_lerp([a], [a * 2], w)[0],
    "addcmul": lambda L, a, w: L.addcmul(a, a, a, value=w),
    "addcdiv": lambda L, a, w: L.addcdiv(a, a, a, value=w),
    "add_alpha": lambda L, a, w: L.add(a, a, alpha=w),
}
_NUMPY_WEIGHTS = {"uint8_2": np.uint8(2), "uint8_200": np.uint8(200), "int8_min": np.int8(-128),
                  "uint16": np.uint16(60000), "int64": np.int64(3)}


@pytest.mark.parametrize("weight", sorted(_NUMPY_WEIGHTS))
@pytest.mark.parametrize("case", sorted(_NUMPY_WEIGHT_CASES))
def test_numpy_integer_scalar_factors_match_torch(torch, case, weight):
    a = np.array([1.5, -2.5, 0.25], dtype=np.float32)
    w = _NUMPY_WEIGHTS[weight]
    want = _NUMPY_WEIGHT_CASES[case](torch, torch.tensor(a), w)
    got = _NUMPY_WEIGHT_CASES[case](tapegrad, tapegrad.tensor(a), w)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=1e-3)


def test_lerp_numpy_weight_gradients(torch):
    a, b = np.array([1.5, -2.5]), np.array([0.5, 4.0])
    grads = []
    for lib in (torch, tapegrad):
        x = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        lib.lerp(x, y, np.uint8(3)).sum().backward()
        grads.append((x.grad.numpy(), y.grad.numpy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0])
    np.testing.assert_allclose(grads[1][1], grads[0][1])


def test_arange_numpy_unsigned_bounds_match_torch(torch):
    for args in [(np.uint8(250), np.uint8(10), np.int8(-60)), (np.int8(-128), np.int8(127), 100),
                 (np.bool_(True),), (np.float32(0.5), np.float32(2.))]:
        want = torch.arange(*args)
        got = tapegrad.arange(*args)
        assert str(got.dtype) == str(want.dtype)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("clip", [np.uint8(1), np.float32(0.5), np.int8(2), 1])
def test_clip_grad_value_numpy_scalars_match_torch(torch, clip):
    # SILENT before: -np.uint8(1) wrapped to 255, so a negative gradient was clipped to +1
    grads = []
    for lib in (torch, tapegrad):
        p = lib.ones(3, requires_grad=True)
        (p * lib.tensor([-3., 0.25, 3.])).sum().backward()
        lib.nn.utils.clip_grad_value_([p], clip)
        grads.append(p.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


@pytest.mark.parametrize("kwargs", [dict(input_size=np.int64(3), hidden_size=4),
                                    dict(input_size=3, hidden_size=np.int32(4)),
                                    dict(input_size=3, hidden_size=4, bias=np.bool_(True))])
def test_rnn_size_type_errors_name_the_type_as_torch(torch, kwargs):
    with pytest.raises(TypeError) as want:
        torch.nn.LSTM(**kwargs)
    with pytest.raises(TypeError) as got:
        tapegrad.nn.LSTM(**kwargs)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("name", ["hardshrink", "softshrink"])
@pytest.mark.parametrize("lambd", [np.uint8(2), np.int8(1), np.float32(0.5)])
def test_shrink_numpy_lambda_matches_torch(torch, name, lambd):
    # SILENT before: -np.uint8(2) wrapped to 254, so no value was zeroed or shifted
    x = np.array([-3., -1., 0.25, 1.5, 3.], dtype=np.float32)
    want = getattr(torch.nn.functional, name)(torch.tensor(x), lambd)
    got = getattr(tapegrad.nn.functional, name)(tapegrad.tensor(x), lambd)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("momentum", [np.float32(0.5), np.uint8(1), np.int64(0), np.bool_(True),
                                      True, np.float16(0.5), "tensor"])
def test_batch_norm_momentum_from_numpy_or_0d_tensor(torch, momentum):
    results = []
    for lib in (torch, tapegrad):
        m = lib.tensor(0.5) if isinstance(momentum, str) else momentum
        rm, rv = lib.zeros(1), lib.ones(1)
        out = lib.nn.functional.batch_norm(lib.tensor([[1.], [3.]]), rm, rv, training=True,
                                           momentum=m, eps=np.float32(1e-5))
        results.append((out.numpy(), rm.numpy(), rv.numpy()))
    for g, w in zip(results[1], results[0]):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_batch_norm_module_with_numpy_momentum(torch):
    x = np.array([[1., 2.], [3., 5.], [0., 1.]], dtype=np.float32)
    stats = []
    for lib in (torch, tapegrad):
        bn = lib.nn.BatchNorm1d(2, momentum=np.float32(0.3))
        bn(lib.tensor(x))
        stats.append((bn.running_mean.numpy(), bn.running_var.numpy()))
    np.testing.assert_allclose(stats[1][0], stats[0][0], rtol=1e-6)
    np.testing.assert_allclose(stats[1][1], stats[0][1], rtol=1e-6)


@pytest.mark.parametrize("momentum", [np.array(0.5), "0.5", None])
def test_batch_norm_momentum_refusals_match_torch(torch, momentum):
    with pytest.raises(TypeError) as want:
        torch.nn.functional.batch_norm(torch.ones(2, 1), None, None, training=True,
                                       momentum=momentum)
    with pytest.raises(TypeError) as got:
        tapegrad.nn.functional.batch_norm(tapegrad.ones(2, 1), None, None, training=True,
                                          momentum=momentum)
    assert str(got.value) == str(want.value)
