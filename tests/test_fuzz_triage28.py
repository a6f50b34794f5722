"""Regressions of the session-28 fuzz run of fuzz13 (programs 62674736-, 60666679-; surface
60790443-).

Each test compares with PyTorch (the `torch` fixture skips cleanly without it).
"""
import numpy as np
import pytest

import tapegrad as tg


# -- gather with an empty index (62675549, 62676183: RuntimeError where PyTorch runs) ----------------
# The result was a view of the input (an empty slice of it), so an in-place write into it was a
# write into a leaf's view.  PyTorch's is a new tensor whose GatherBackward0 saves the input.

def _empty_gather_then_write(lib, write):
    x = lib.tensor(np.arange(12.0).reshape(3, 2, 2), requires_grad=True)
    g = lib.gather(x, 2, lib.zeros((2, 0, 0), dtype=lib.int64))
    write(g)
    (g.sum() + (x * 2).sum()).backward()
    return (g._base is None, g._is_view(), type(g.grad_fn).__name__, tuple(g.shape),
            x.grad.numpy().tolist())


@pytest.mark.parametrize("write", [
    lambda g: g.__setitem__(slice(None, None, 2), 0.5),
    lambda g: g.sigmoid_(),
    lambda g: g.add_(1.0),
], ids=["setitem", "sigmoid_", "add_"])
def test_gather_with_empty_index_is_a_new_tensor_as_torch(torch, write):
    assert _empty_gather_then_write(tg, write) == _empty_gather_then_write(torch, write)


def test_gather_with_empty_index_saves_the_input_as_torch(torch):
    # GatherBackward0 saves self: a write into the input before backward raises in both
    def run(lib):
        x = lib.ones(3, 2, 2, dtype=lib.float64, requires_grad=True)
        y = x * 1
        g = lib.gather(y, 2, lib.zeros((2, 0, 2), dtype=lib.int64))
        y.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            g.sum().backward()
        return type(g.grad_fn).__name__
    assert run(tg) == run(torch)


@pytest.mark.parametrize("index", [[], [[]], 0], ids=["1d", "2d", "0d-input"])
def test_gather_with_empty_index_gradient_is_zeros_as_torch(torch, index):
    def run(lib):
        x = lib.tensor(2.5 if index == 0 else [[1.0, 2.0]], dtype=lib.float64, requires_grad=True)
        idx = lib.zeros(0, dtype=lib.int64) if index == 0 else lib.tensor(index, dtype=lib.int64)
        g = lib.gather(x, 0, idx)
        G, = lib.autograd.grad(g.sum(), [x], create_graph=True)
        return g.dtype == lib.float64, tuple(g.shape), G.detach().numpy().tolist()
    assert run(tg) == run(torch)


# -- take: a new tensor, not a view of a gathered temporary (sibling of 62675549) -------------------

@pytest.mark.parametrize("index", [-3, [[0, 5], [1, 1]], [-1, 2, 2], np.zeros((0, 2), np.int64)],
                         ids=["0d", "2d", "1d", "empty"])
def test_take_result_is_no_view_and_records_in_place_ops_as_torch(torch, index):
    def run(lib):
        x = lib.arange(6.0, dtype=lib.float64).reshape(2, 3).requires_grad_()
        r = lib.take(x, lib.tensor(index, dtype=lib.int64))
        before = (r._is_view(), type(r.grad_fn).__name__)
        r.mul_(2)
        (r * r).sum().backward()
        return before, type(r.grad_fn).__name__, r.detach().numpy().tolist(), x.grad.numpy().tolist()
    assert run(tg) == run(torch)


# -- in-place op on a view under saved-tensor hooks that copy (62675653; a retained .grad differs) --
# The op computed out of place saves its output; written back into the view, the record reads that
# output through the view (so a create_graph backward's second pass reaches the view's history).
# A pack hook had already replaced the saved output by its packed copy when the write-back looked
# for it, so the second pass went around the view: its retained .grad missed that pass's part.

def _hooked_in_place_on_view(lib, op):
    v0 = lib.tensor([-1.29, 1.37, -0.979, -0.0, 0.5, 2.0], dtype=lib.float64, requires_grad=True)
    base = v0.repeat(2) * 1
    hooks = lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach().numpy().copy(),
                                                   lambda a: lib.from_numpy(a))
    with hooks:
        out = getattr(base[1:], op)()
    out.retain_grad()
    base.retain_grad()
    w = lib.linspace(-1, 1, 11, dtype=lib.float64)
    G, = lib.autograd.grad((out * w).sum(), [v0], create_graph=True)
    S = (G * lib.arange(1.0, 7.0, dtype=lib.float64)).sum()
    G2, = lib.autograd.grad(S, [v0])
    return out.grad.numpy(), base.grad.numpy(), G.detach().numpy(), G2.numpy()


@pytest.mark.parametrize("op", ["sigmoid_", "exp_", "tanh_", "sqrt_", "reciprocal_"])
def test_in_place_op_on_view_under_copying_saved_hooks_second_pass_matches_torch(torch, op):
    got = _hooked_in_place_on_view(tg, op)
    expected = _hooked_in_place_on_view(torch, op)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)


# -- complex tensor ** number (62676977; SILENT: (-inf + 0.69j) ** 0.5 was inf+nanj, PyTorch's infj) -
# PyTorch's kernel computes the exponents 0.5, -0.5 and -1 as sqrt, rsqrt and reciprocal, and other
# whole exponents (but 2, 3, -2) as C's cpow, exp(b log z); numpy's power (repeated products for a
# whole exponent, exp(b log z) for 0.5) differs at infinities and NaNs.  The gradient's a^(b-1) is
# the same power of a number (rsqrt for b = 0.5), eager and under create_graph.

_INF = float("inf")
_SPECIAL = [complex(a, b) for a in (-_INF, _INF, 0.0, -0.0, 1.5, -2.0, float("nan"))
            for b in (_INF, -_INF, 0.0, -0.0, 0.69, -1.0, float("nan"))]


def _complex_pow(lib, exponent, dtype, form):
    z = lib.tensor(np.array(_SPECIAL, dtype=dtype), requires_grad=True)
    w = lib.tensor(np.linspace(-1, 1, len(_SPECIAL)) + 0.3j, dtype=getattr(lib, dtype))
    y = {"pow": lambda: z.pow(exponent), "operator": lambda: z ** exponent,
         "in-place": lambda: (z * 1).pow_(exponent)}[form]()
    g, = lib.autograd.grad((y * w).real.sum(), [z], create_graph=True)
    g2, = lib.autograd.grad((g * w).real.sum(), [z])
    return y.detach().numpy(), g.detach().numpy(), g2.numpy()


@pytest.mark.parametrize("form", ["pow", "operator", "in-place"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("exponent", [0.5, -0.5, -1, -1.0, 0.5 + 0j, -3, 4, 1.5, 2])
def test_complex_pow_of_a_number_at_special_values_matches_torch(torch, exponent, dtype, form):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = _complex_pow(tg, exponent, dtype, form)
        expected = _complex_pow(torch, exponent, dtype, form)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=0)     # (NaNs in the same places)


def test_complex_pow_first_derivative_eager_at_minus_infinity_matches_torch(torch):
    def run(lib):
        z = lib.tensor([complex(-_INF, _INF), complex(-_INF, 0.69)], requires_grad=True)
        g, = lib.autograd.grad(z.pow(0.5).real.sum(), [z])
        return z.detach().pow(0.5).numpy(), g.numpy()
    for a, b in zip(run(tg), run(torch)):
        np.testing.assert_array_equal(a, b)


# -- complex tensor ** tensor (sibling of 62676977; SILENT): PyTorch's is C's cpow everywhere ------
# numpy's power multiplied out whole exponents: (-inf+infj) ** -1 was NaN (PyTorch -0), inf ** 0
# was 1 (PyTorch NaN), other last bits elsewhere.  The exponent's gradient at a zero base is 0 only
# for a real exponent >= 0 (PyTorch's pow_backward_exponent): NaN for 1+1j.

def _complex_pow_tensor(lib, exponent, dtype, real_base):
    values = np.array(_SPECIAL, dtype=dtype)
    z = lib.tensor(values.real if real_base else values, requires_grad=True)
    b = lib.tensor(np.full(len(_SPECIAL), exponent, dtype=dtype), requires_grad=True)
    w = lib.tensor(np.linspace(-1, 1, len(_SPECIAL)) + 0.3j, dtype=getattr(lib, dtype))
    y = z ** b
    g = lib.autograd.grad((y * w).real.sum(), [z, b], create_graph=True)
    g2 = lib.autograd.grad(sum((gi * w).real.sum() for gi in g), [z, b])
    return [y.detach().numpy()] + [t.detach().numpy() for t in g] + [t.numpy() for t in g2]


@pytest.mark.parametrize("real_base", [False, True])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("exponent", [0.5, -1, 2, -3, 1.5, 0, 1 + 1j])
def test_complex_pow_of_a_tensor_at_special_values_matches_torch(torch, exponent, dtype, real_base):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = _complex_pow_tensor(tg, exponent, dtype, real_base)
        expected = _complex_pow_tensor(torch, exponent, dtype, real_base)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=0)


def test_complex_pow_of_a_tensor_is_bit_exact_with_torch(torch):
    rng = np.random.default_rng(3)
    z = rng.standard_normal(64) * 3 + 1j * rng.standard_normal(64) * 3
    for dtype in ("complex64", "complex128"):
        for e in (4.0, -3.0, 2 + 1j, 0.5):
            exponent = np.full(64, e, dtype=dtype)
            got = tg.tensor(z.astype(dtype)) ** tg.tensor(exponent)
            expected = torch.tensor(z.astype(dtype)) ** torch.tensor(exponent)
            np.testing.assert_array_equal(got.numpy(), expected.numpy())


# -- mish with an infinite upstream gradient (62678047; NaN where PyTorch's is +-inf) ---------------
# Composed as x * tanh(softplus(x)), its gradient met the two partial derivatives separately
# (inf - inf); PyTorch's is grad * mish'(x), and its second derivative that formula's derivative.

_MISH_X = [-1.0, 2.0, -3.0, 0.0, -0.0, 25.0, -30.0, float("inf"), -float("inf"), float("nan"),
           1e-8, 0.7]
_MISH_UP = [_INF, -_INF, _INF, 1.0, -2.0, 0.5, _INF, 1.0, 1.0, 1.0, -_INF, 0.0]


def _mish_gradients(lib, dtype, inplace):
    x = lib.tensor(_MISH_X, dtype=getattr(lib, dtype), requires_grad=True)
    y = lib.nn.functional.mish(x * 1 if inplace else x, inplace=inplace)
    g, = lib.autograd.grad(y, [x], lib.tensor(_MISH_UP, dtype=getattr(lib, dtype)),
                           create_graph=True)
    w = lib.tensor(np.linspace(-1, 1, len(_MISH_X)), dtype=getattr(lib, dtype))
    g2, = lib.autograd.grad((g * w).sum(), [x])
    return y.detach().numpy(), g.detach().numpy(), g2.numpy(), type(y.grad_fn).__name__


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mish_gradients_with_infinite_upstream_match_torch(torch, dtype, inplace):
    got = _mish_gradients(tg, dtype, inplace)
    expected = _mish_gradients(torch, dtype, inplace)
    assert got[3] == expected[3]
    for a, b in zip(got[:3], expected[:3]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_mish_backward_after_writing_its_input_raises_as_torch(torch):
    # PyTorch's MishBackward0 saves self
    for lib in (tg, torch):
        x = lib.tensor([0.5, -1.0], requires_grad=True)
        h = x * 2
        y = lib.nn.functional.mish(h)
        h.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
