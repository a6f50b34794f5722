"""Issue 16, the remaining gaps: half precision computed as PyTorch's (in float32, rounded once),
bad arguments PyTorch refuses (NaN probabilities and deviations, in-place detach of a view,
lists in a state dict), one-element integer tensors as sizes, and compiled calls whose output
the backward needs being written in place.

Each test asserts the values without torch and compares with torch when it is installed.
"""
import math

import numpy as np
import pytest

import tapegrad as tg

F = tg.nn.functional
nan = math.nan


def _half_case(lib, name, x):
    """(value, gradient) of op `name` on float16 x, as float64 arrays."""
    t = lib.tensor(x, dtype=lib.float16, requires_grad=True)
    f = lib.nn.functional
    ops = {
        "vector_norm": lambda t: lib.linalg.vector_norm(t, dim=1),
        "vector_norm3": lambda t: lib.linalg.vector_norm(t, 3, dim=1),
        "matrix_norm": lambda t: lib.linalg.matrix_norm(t),
        "dist": lambda t: lib.dist(t, t.flip(0).detach()),
        "group_norm": lambda t: f.group_norm(t.reshape(2, 4, -1), 2),
        "instance_norm": lambda t: f.instance_norm(t.reshape(2, 4, -1)),
        "cosine_similarity": lambda t: f.cosine_similarity(t, t.flip(0).detach() + 1),
        "normalize": lambda t: f.normalize(t),
        "logsumexp": lambda t: t.logsumexp(0),
        "log_softmax": lambda t: f.log_softmax(t, 0),
        "softplus": lambda t: f.softplus(t),
        "sigmoid": lambda t: lib.sigmoid(t),
        "silu": lambda t: f.silu(t),
    }
    y = ops[name](t)
    w = lib.tensor(np.random.default_rng(3).standard_normal(tuple(y.shape)), dtype=lib.float32)
    (y.float() * w).sum().backward()
    return y.detach().double().numpy(), t.grad.double().numpy()


# Inputs whose float16 intermediates overflow or cancel: squares of 300 are beyond float16's
# 65504, a sum of 4096 exp(0) is beyond 2048's integer spacing, exp(12) and exp(17) overflow.
_HALF_INPUTS = {
    "vector_norm": np.linspace(250, 350, 32).reshape(4, 8),
    "vector_norm3": np.linspace(30, 60, 32).reshape(4, 8),
    "matrix_norm": np.linspace(250, 350, 32).reshape(4, 8),
    "dist": np.linspace(-300, 300, 32).reshape(4, 8),
    "group_norm": np.linspace(250, 350, 32).reshape(4, 8),
    "instance_norm": np.linspace(250, 350, 32).reshape(4, 8),
    "cosine_similarity": np.linspace(50, 150, 32).reshape(4, 8),
    "normalize": np.linspace(250, 350, 32).reshape(4, 8),
    "logsumexp": np.zeros((4096, 2)),
    "log_softmax": np.linspace(-1, 1, 8192).reshape(4096, 2),
    "softplus": np.linspace(10, 14, 32).reshape(4, 8),
    "sigmoid": np.linspace(-18, -14, 32).reshape(4, 8),
    "silu": np.linspace(-21, -14, 32).reshape(4, 8),
}


# PyTorch rounds an intermediate of these to float16 (batch_norm's saved mean and invstd, which
# instance_norm uses; cosine_similarity's norms): compared with PyTorch itself, bit for bit
# (sweep 16), not with the float64 reference
_HALF_ROUNDS_INTERMEDIATES = {"instance_norm", "cosine_similarity"}


@pytest.mark.parametrize("name", sorted(_HALF_INPUTS))
def test_float16_is_computed_in_float32_and_rounded_once(name):
    x = _HALF_INPUTS[name]
    value, grad = _half_case(tg, name, x)
    assert np.isfinite(value).all() and np.isfinite(grad).all()
    if name in _HALF_ROUNDS_INTERMEDIATES:
        torch = pytest.importorskip("torch")
        ref_value, ref_grad = _half_case(torch, name, x)
        np.testing.assert_array_equal(value, ref_value)
        np.testing.assert_array_equal(grad, ref_grad)
        return
    # the float64 result of the same float16 input, rounded to float16: within half's rounding
    ref_value, ref_grad = _half_case_float64(name, x.astype(np.float16))
    ref_value = ref_value.astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(value, ref_value, rtol=2e-3, atol=1e-7)
    assert np.abs(grad - ref_grad).max() <= 1e-2 * np.abs(ref_grad).max() + 1e-7


def _half_case_float64(name, x16):
    """The float64 tapegrad result on the float16 input's values (the reference)."""
    class Wide:
        def __getattr__(self, attr):
            return getattr(tg, attr)
        float16 = tg.float64            # the same program, computed in float64
        float32 = tg.float64
    return _half_case(Wide(), name, x16.astype(np.float64))


@pytest.mark.parametrize("name", sorted(_HALF_INPUTS))
def test_float16_matches_torch(torch, name):
    x = _HALF_INPUTS[name]
    value, grad = _half_case(tg, name, x)
    t_value, t_grad = _half_case(torch, name, x)
    if name == "instance_norm":         # PyTorch rounds its half statistics to half (README)
        return
    np.testing.assert_allclose(value, t_value, rtol=2e-3, atol=1e-7)
    if name not in ("cosine_similarity", "silu"):   # PyTorch's half gradients lose digits here
        assert np.abs(grad - t_grad).max() <= 1e-2 * np.abs(t_grad).max() + 1e-7


def test_float16_composites_keep_mixed_promotion():
    x = tg.ones(2, 4, 3, dtype=tg.float16)
    w = tg.ones(4)
    assert F.group_norm(x, 2, w).dtype == tg.float16       # PyTorch's mixed form: half input
    assert F.group_norm(x, 2).dtype == tg.float16
    assert tg.linalg.vector_norm(x).dtype == tg.float16


# -- NaN arguments PyTorch's kernels refuse ---------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda: F.dropout(tg.ones(3), p=nan),
    lambda: F.dropout(tg.ones(3), p=nan, training=False),
    lambda: F.dropout1d(tg.ones(2, 3), p=nan),
    lambda: F.dropout2d(tg.ones(1, 3, 2, 2), p=nan),
    lambda: F.alpha_dropout(tg.ones(3), p=nan, training=True),
    lambda: tg.nn.Dropout(nan)(tg.ones(3)),
])
def test_dropout_nan_probability_raises(call):
    with pytest.raises(RuntimeError, match="dropout probability has to be between 0 and 1, "
                                           "but got nan"):
        call()


@pytest.mark.parametrize("call", [
    lambda: tg.normal(0.0, nan, (3,)),
    lambda: tg.normal(tg.zeros(3), nan),
    lambda: tg.zeros(3).normal_(0.0, nan),
])
def test_normal_nan_std_raises(call):
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std nan"):
        call()


def test_nan_arguments_match_torch(torch):
    for lib in (torch, tg):
        with pytest.raises(RuntimeError, match="but got nan"):
            lib.nn.functional.dropout(lib.ones(3), p=nan, training=False)
        with pytest.raises(RuntimeError, match="found std nan"):
            lib.normal(0.0, nan, (3,))


# -- detach_ of a view ------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: tg.ones(3, requires_grad=True)[1:],
    lambda: tg.ones(3)[1:],
    lambda: (tg.ones(3, requires_grad=True) * 2).view(3),
    lambda: tg.ones(2, 3).t(),
])
def test_detach_in_place_of_a_view_raises(make):
    with pytest.raises(RuntimeError, match="Can't detach views in-place. Use detach\\(\\) "
                                           "instead"):
        make().detach_()


def test_detach_in_place_of_a_non_view_works():
    y = tg.ones(3, requires_grad=True) * 2
    assert y.detach_() is y and not y.requires_grad and y.grad_fn is None
    z = tg.ones(3, requires_grad=True).detach()         # detach() is no view
    assert z.detach_() is z


def test_detach_in_place_matches_torch(torch):
    for lib in (torch, tg):
        with pytest.raises(RuntimeError, match="Can't detach views in-place"):
            lib.ones(3)[1:].detach_()
        lib.ones(3).detach().detach_()


# -- sizes given as one-element integer tensors -----------------------------------------------------

def test_size_from_integer_tensors():
    assert tg.zeros(tg.tensor(3)).shape == (3,)
    assert tg.ones(tg.tensor(3), 2).shape == (3, 2)
    assert tg.zeros((tg.tensor(2), 3)).shape == (2, 3)
    assert tg.empty(tg.tensor([2])).shape == (2,)
    assert tg.randn(tg.tensor(2)).shape == (2,)
    with pytest.raises(TypeError):
        tg.zeros(tg.tensor(3.0))
    with pytest.raises(TypeError):
        tg.zeros(tg.tensor([3, 2]))


def test_size_from_integer_tensors_matches_torch(torch):
    for lib in (torch, tg):
        assert tuple(lib.zeros(lib.tensor(3), lib.tensor(2)).shape) == (3, 2)
        with pytest.raises(TypeError):
            lib.zeros(lib.tensor(3.0))


# -- load_state_dict takes tensors only -------------------------------------------------------------

def test_load_state_dict_refuses_lists():
    m = tg.nn.Linear(2, 2)
    before = m.weight.detach().clone()
    with pytest.raises(RuntimeError, match='While copying the parameter named "weight", expected '
                                           "torch.Tensor or Tensor-like object from checkpoint "
                                           "but received <class 'list'>"):
        m.load_state_dict({"weight": [[1.0, 2.0], [3.0, 4.0]], "bias": tg.zeros(2)})
    np.testing.assert_array_equal(m.weight.detach().numpy(), before.numpy())
    with pytest.raises(RuntimeError, match="received <class 'float'>"):
        m.load_state_dict({"weight": tg.ones(2, 2), "bias": 3.0})


# -- compiled calls: an in-place write to an output the backward reads ------------------------------

def test_compiled_output_written_in_place_raises_on_every_call():
    cf = tg.compile(lambda x, w: (x * w).exp())
    for _ in range(4):                  # the capture, then replays
        x, w = tg.randn(3), tg.randn(3, requires_grad=True)
        y = cf(x, w)
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_compiled_output_the_backward_does_not_read_may_be_written():
    cf = tg.compile(lambda x, w: x * w)
    for _ in range(3):
        x, w = tg.randn(3), tg.randn(3, requires_grad=True)
        y = cf(x, w)
        y.mul_(2)
        y.sum().backward()
        np.testing.assert_allclose(w.grad.numpy(), 2 * x.numpy(), rtol=1e-6)


# -- var / std without degrees of freedom (fuzz seed 900012) ----------------------------------------

@pytest.mark.filterwarnings("ignore:.*degrees of freedom is")
def test_var_gradient_without_degrees_of_freedom():
    x = tg.tensor([1.0, 2.0, 4.0], requires_grad=True)
    x.var(dim=0, correction=4).backward(tg.tensor(-2.0))      # n - c = -1: 2 / -1, finite
    np.testing.assert_allclose(x.grad.numpy(), [-5.333333, -1.333333, 6.666667], rtol=1e-5)
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x.var(correction=3).backward(tg.tensor(-2.0))             # over all elements: sign(g) inf
    np.testing.assert_array_equal(x.grad.numpy(), [-np.inf, np.nan, -np.inf])
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x.var(dim=0, correction=3).backward(tg.tensor(-2.0))      # dims given: the centred sign
    np.testing.assert_array_equal(x.grad.numpy(), [np.inf, np.nan, -np.inf])


@pytest.mark.filterwarnings("ignore:.*degrees of freedom is")
def test_var_std_without_degrees_of_freedom_match_torch(torch):
    for vals in ([1.0, 2.0, 4.0], [[-0.89], [0.1]]):
        for c in (2, 3, 4):
            for fn in ("var", "std"):
                for dim in (None, 0):
                    grads = []
                    for lib in (torch, tg):
                        x = lib.tensor(vals, requires_grad=True)
                        v = getattr(x, fn)(dim=dim, correction=c)
                        v.backward(lib.full(tuple(v.shape), -2.0))
                        grads.append(x.grad.numpy())
                    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5)


# -- fuzz findings (issue 16 triage) ------------------------------------------------------------

_NORM_X = np.array([[0.3, -1.2], [1.5, 0.7], [-0.4, 2.0]])
_NORM_W = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.25]])


def _norm_grad_after_inplace(lib, name):
    """x.grad of sum(w * op(x)) when op's output is scaled in place before the loss."""
    f = lib.nn.functional
    x = lib.tensor(_NORM_X, requires_grad=True)
    ops = {
        "batch_norm": lambda t: f.batch_norm(t, None, None, training=True, eps=0.1),
        "instance_norm": lambda t: f.instance_norm(t.T.reshape(1, 2, 3), eps=0.1).reshape(2, 3).T,
    }
    y = ops[name](x)
    y.mul_(2.0)
    (y * lib.tensor(_NORM_W)).sum().backward()
    return np.array(x.grad.tolist())


@pytest.mark.parametrize("name", ["batch_norm", "instance_norm"])
def test_norm_without_affine_output_written_in_place_keeps_gradient(name):
    # the output used to share memory with the normalised input the backward reads
    x = tg.tensor(_NORM_X, requires_grad=True)
    f = {"batch_norm": lambda t: F.batch_norm(t, None, None, training=True, eps=0.1),
         "instance_norm": lambda t: F.instance_norm(t.T.reshape(1, 2, 3), eps=0.1)
         .reshape(2, 3).T}[name]
    (f(x) * 2.0 * tg.tensor(_NORM_W)).sum().backward()
    assert np.allclose(_norm_grad_after_inplace(tg, name), np.array(x.grad.tolist()))


@pytest.mark.parametrize("name", ["batch_norm", "instance_norm"])
def test_norm_without_affine_output_written_in_place_matches_torch(torch, name):
    assert np.allclose(_norm_grad_after_inplace(tg, name), _norm_grad_after_inplace(torch, name))


def _mse_second_derivatives(lib, a):
    """d/d(input, target) of d mse/d target, for input value a (create_graph)."""
    x = lib.tensor(a, dtype=lib.float64, requires_grad=True)
    t = lib.tensor(-0.25, dtype=lib.float64, requires_grad=True)
    y = lib.nn.functional.mse_loss(x, t, reduction="none")
    _, gt = lib.autograd.grad(y * 1.5, [x, t], create_graph=True)
    return [float(g) for g in lib.autograd.grad(gt, [x, t])]


@pytest.mark.parametrize("a", [0.5, nan])
def test_mse_second_derivative_with_nan_input(a):
    # the second derivative of (x - t)^2 is constant: a NaN input used to zero it
    assert _mse_second_derivatives(tg, a) == [-3.0, 3.0]


@pytest.mark.parametrize("a", [0.5, nan, math.inf])
def test_mse_second_derivative_with_nan_input_matches_torch(torch, a):
    assert _mse_second_derivatives(tg, a) == _mse_second_derivatives(torch, a)


@pytest.mark.parametrize("args, phrase", [((0, 0, 0), "bins must be > 0"),
                                          ((1, 1, -1), "max must be larger than min")])
def test_histc_checks_arguments_before_dtype(args, phrase):
    # an int64 input: PyTorch reports the bad argument, not the unsupported dtype
    with pytest.raises(RuntimeError, match=phrase):
        tg.histc(tg.arange(4), *args)


def test_histc_checks_arguments_before_dtype_matches_torch(torch):
    for args in [(0, 0, 0), (1, 1, -1), (3, 0, 1)]:
        errs = []
        for lib in (torch, tg):
            with pytest.raises(Exception) as e:
                lib.histc(lib.arange(4), *args)
            errs.append((type(e.value), str(e.value)))
        assert errs[0] == errs[1]


@pytest.mark.parametrize("fn", ["unique", "unique_consecutive"])
def test_unique_along_dim_of_empty_tensor(fn):
    f = getattr(tg, fn)
    with pytest.raises(RuntimeError, match="aren't selected"):
        f(tg.zeros(2, 0, 3), dim=0)
    with pytest.raises(RuntimeError, match="more than one"):
        f(tg.zeros(0, 0, 3), dim=1)
    assert f(tg.zeros(2, 0, 3), dim=1).shape == (2, 0, 3)


@pytest.mark.parametrize("fn", ["unique", "unique_consecutive"])
def test_unique_along_dim_of_empty_tensor_matches_torch(torch, fn):
    for shape in [(2, 0, 3), (0, 3), (0, 0, 2), (2, 0)]:
        for d in range(len(shape)):
            res = []
            for lib in (torch, tg):
                try:
                    res.append(tuple(getattr(lib, fn)(lib.zeros(shape), dim=d).shape))
                except RuntimeError as e:
                    res.append(str(e))
            assert res[0] == res[1], (shape, d)


def test_roll_of_empty_tensor_ignores_the_dims():
    assert tg.roll(tg.zeros(2, 0, 4), (4, 6), (6, 1)).shape == (2, 0, 4)
    with pytest.raises(RuntimeError, match="must align"):
        tg.roll(tg.zeros(2, 0), (4, 6), (6,))
    with pytest.raises(IndexError):
        tg.roll(tg.zeros(2, 1), 1, 6)


def test_roll_of_empty_tensor_matches_torch(torch):
    assert tuple(torch.roll(torch.zeros(2, 0, 4), (4, 6), (6, 1)).shape) == \
        tuple(tg.roll(tg.zeros(2, 0, 4), (4, 6), (6, 1)).shape)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_autograd_grad_of_0d_softmax_is_a_readable_tensor(fn):
    # autograd.grad used to hand back a tensor holding a numpy scalar (tolist/numpy failed)
    x = tg.tensor(0.118, requires_grad=True)
    (g,) = tg.autograd.grad(getattr(F, fn)(x, dim=-1).exp() * 1.3, [x])
    assert isinstance(g.numpy(), np.ndarray) and g.shape == ()
    assert g.tolist() == 0.0
