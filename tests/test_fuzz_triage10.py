"""Regressions of the issue-16 fuzz findings of session 10 (seeds from 56 million).

Each test asserts the right values without torch where it can and, where torch is installed,
compares with it (the `torch` fixture skips cleanly without it).
"""
import numpy as np
import pytest

import tapegrad as tg


# -- second derivatives through complex ops (seed 56000169) -----------------------------------
# The complex ops' VJPs ran on ndarrays even under create_graph=True: the gradients they gave
# were constants, so a second derivative silently missed every term through them (seed 56000169:
# polar(sinh(amin(x)).abs(), angle), G2 of x off, of the angle None where PyTorch has a tensor).

COMPLEX_CASES = {
    "mul": ("x * y", [(3,), (3,)]), "div": ("x / y", [(3,), (3,)]),
    "pow": ("x ** y", [(3,), (3,)]), "pow scalar": ("x ** 3", [(3,)]),
    "exp": ("x.exp()", [(3,)]), "log": ("x.log()", [(3,)]), "sqrt": ("x.sqrt()", [(3,)]),
    "sin": ("x.sin()", [(3,)]), "cos": ("x.cos()", [(3,)]), "tanh": ("x.tanh()", [(3,)]),
    "sigmoid": ("x.sigmoid()", [(3,)]), "reciprocal": ("x.reciprocal()", [(3,)]),
    "rsqrt": ("x.rsqrt()", [(3,)]), "log1p": ("x.log1p()", [(3,)]),
    "expm1": ("x.expm1()", [(3,)]), "abs": ("x.abs() * x.abs()", [(3,)]),
    "angle": ("x.angle() * x.abs()", [(3,)]), "sgn": ("x.sgn() * x", [(3,)]),
    "conj": ("x.conj() * x", [(3,)]), "conj_physical": ("x.conj_physical() * x", [(3,)]),
    "real imag": ("x.real * x.imag", [(3,)]), "mm": ("(x @ y) * (x @ y)", [(2, 3), (3, 2)]),
    "dot": ("(x @ y) ** 2", [(3,), (3,)]), "batched matmul": ("(x @ y) ** 2", [(2, 2, 3), (3, 2)]),
    "polar": ("torch.polar(x.abs(), y)", [(3,), (3,)], "real"),
    "complex": ("torch.complex(x, y) ** 2", [(3,), (3,)], "real"),
    "view_as_real": ("torch.view_as_real(x * x)", [(3,)]),
    "view_as_complex": ("torch.view_as_complex(x) ** 2", [(3, 2)], "real"),
    "broadcast real operand": ("x * y * y", [(3,), (2, 1)], "mixed"),
}


def _leaves(L, shapes, kind, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for i, shape in enumerate(shapes):
        a = rng.standard_normal(shape)
        if kind == "complex" or (kind == "mixed" and i == 0):
            a = a + 1j * rng.standard_normal(shape)
        out.append(L.tensor(a, requires_grad=True))
    return out


def _weights(L, t, seed):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(tuple(t.shape))
    if t.is_complex():
        w = w + 1j * rng.standard_normal(tuple(t.shape))
    return L.tensor(w)


def _real_sum(t, w):
    p = t * w
    return (p.real if p.is_complex() else p).sum()


def _first_and_second(L, expr, shapes, kind):
    """(first-order gradients with create_graph, second-order gradients of Re sum(W * G))."""
    leaves = _leaves(L, shapes, kind)
    out = eval(expr, {"torch": L, "x": leaves[0], "y": leaves[-1]})
    G = L.autograd.grad(_real_sum(out, _weights(L, out, 1)), leaves, create_graph=True)
    S = sum(_real_sum(g, _weights(L, g, 2 + i)) for i, g in enumerate(G))
    G2 = L.autograd.grad(S, leaves, allow_unused=True)
    as_np = lambda t: None if t is None else t.detach().resolve_conj().numpy()  # noqa: E731
    return [as_np(g) for g in G], [as_np(g) for g in G2]


@pytest.mark.parametrize("case", sorted(COMPLEX_CASES))
def test_complex_second_derivative_as_torch(torch, case):
    expr, shapes, *kind = COMPLEX_CASES[case]
    kind = kind[0] if kind else "complex"
    (g_t, g2_t), (g_g, g2_g) = (_first_and_second(L, expr, shapes, kind) for L in (torch, tg))
    for a, b in zip(g_t + g2_t, g_g + g2_g):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("case", ["mul", "exp", "sgn", "polar", "mm"])
def test_complex_second_derivative_matches_finite_differences(case):
    # the second-order gradient is the derivative of S(x) = Re sum(W2 * dL/dx), with respect to
    # the real and the imaginary part of each input entry (PyTorch's convention: d/dx + i d/dy)
    expr, shapes, *kind = COMPLEX_CASES[case]
    kind = kind[0] if kind else "complex"
    base = [t.detach().numpy() for t in _leaves(tg, shapes, kind)]

    def S(arrays):
        leaves = [tg.tensor(a, requires_grad=True) for a in arrays]
        out = eval(expr, {"torch": tg, "x": leaves[0], "y": leaves[-1]})
        G = tg.autograd.grad(_real_sum(out, _weights(tg, out, 1)), leaves)
        return sum(float(_real_sum(g, _weights(tg, g, 2 + i))) for i, g in enumerate(G))

    _, second = _first_and_second(tg, expr, shapes, kind)
    h = 1e-6
    for k, arr in enumerate(base):
        fd = np.zeros(arr.shape, arr.dtype)
        for idx in np.ndindex(arr.shape):
            for step in ((1, 1j) if arr.dtype.kind == "c" else (1,)):
                moved = [a.copy() for a in base]
                moved[k][idx] += h * step
                up = S(moved)
                moved[k][idx] -= 2 * h * step
                fd[idx] += step * (up - S(moved)) / (2 * h)
        np.testing.assert_allclose(second[k], fd, rtol=1e-5, atol=1e-6)


# -- zero_ / fill_ of complex tensors that require grad (seeds 56100735, 56100843) -------------
# Their VJPs (a zero gradient; for a tensor fill value, the summed gradient) are linear with real
# coefficients, right for complex values, but were refused as unimplemented for complex.

OVERWRITE_CASES = {
    "zero_": lambda L, z, v: z.zero_(),
    "fill_ number": lambda L, z, v: z.fill_(1.5 - 2j),
    "fill_ complex tensor": lambda L, z, v: z.fill_(v.sum() * (1 + 1j)),
}


@pytest.mark.parametrize("case", sorted(OVERWRITE_CASES))
def test_complex_overwrite_gradients_as_torch(torch, case):
    def run(L):
        x = L.tensor(np.array([1 + 2j, -0.5j, 3.0 + 0j]), requires_grad=True)
        v = L.tensor(np.array([0.5, -1.5]), requires_grad=True)
        z = x * (2 - 1j)
        OVERWRITE_CASES[case](L, z, v)
        w = L.tensor(np.array([1 - 1j, 2 + 0.5j, -1j]))
        (z * w).real.sum().backward()
        return (z.detach().numpy().tolist(), x.grad.numpy().tolist(),
                None if v.grad is None else v.grad.numpy().tolist())

    assert run(tg) == run(torch)


# -- a complex view used after an in-place write to its base (seed 56200222) ---------------------
# view_as_complex / view_as_real / .real / .imag shared their input's memory but were no views to
# the autograd core, so a later in-place op on the input changed their values without rebasing
# their history (PyTorch regenerates a view's grad_fn): the gradient silently ignored the write.
# Fixed in session 11 (they are views now; siblings in tests/test_fuzz_triage11_complex_views.py).

@pytest.mark.parametrize("view", ["view_as_complex", "real"])
def test_complex_view_after_a_write_to_its_base_as_torch(torch, view):
    def run(L):
        a = L.tensor(np.array([1.5, -0.5]), requires_grad=True)
        if view == "view_as_complex":
            base = a * 1.0
            v = L.view_as_complex(base)
        else:
            base = a * (1 + 1j)
            v = base.real
        base.sigmoid_()
        (v * 3.0).real.sum().backward() if v.is_complex() else (v * 3.0).sum().backward()
        return v.detach().numpy().tolist(), a.grad.numpy().tolist()

    t, g = run(torch), run(tg)
    np.testing.assert_allclose(np.array(g[0]), np.array(t[0]))
    np.testing.assert_allclose(np.array(g[1]), np.array(t[1]))


# -- what complex polar and z ** number save (seeds 56100557, 56100577, 56000294) -------------
# PyTorch's PolarBackward0 saves the result only, PowBackward0 (a number exponent) the input only:
# an in-place write to polar's abs/angle, or to z ** 3, before backward is no error, and polar's
# gradient at abs 0 / inf uses sgn(result) (0 / nan), as PyTorch's.

SAVED_CASES = {
    "polar, angle written": lambda L, r, t: (L.polar(r * 1.0, t), t.sqrt_())[0],
    "polar, abs written": lambda L, r, t: (lambda a: (L.polar(a, t * 1.0), a.mul_(2))[0])(r * 1.0),
    "pow number, result written": lambda L, r, t: ((r + (1 - 0.5j)) ** 3).sqrt_(),
    "polar at abs 0 and inf": lambda L, r, t: L.polar(r * L.tensor([0.0, float("inf"), 1.0]), t),
}


@pytest.mark.parametrize("case", sorted(SAVED_CASES))
def test_complex_saved_values_as_torch(torch, case):
    def run(L):
        r = L.tensor([0.5, 1.25, 2.0], requires_grad=True)
        t = L.tensor([0.5, -1.0, 0.25])
        z = SAVED_CASES[case](L, r, t)
        (z * L.tensor(np.array([1 + 2j, -1j, 0.5 + 0j]))).real.sum().backward()
        return z.detach().numpy(), r.grad.numpy()

    for a, b in zip(run(tg), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-6, equal_nan=True)


# -- complex x * y and x / y save only what the other operand's gradient reads (56400076) ------
# PyTorch saves y for x's gradient and x for y's: a real tensor times 1j, then written in place
# (x.exp_()) before backward, is no error.  (Fixed by the compiled complex records, which save
# as the real ones do.)

PRODUCT_CASES = {
    "tensor * 1j, tensor written": lambda L, x, c: (x * 1j, x.exp_())[0],
    "tensor * constant complex, tensor written": lambda L, x, c: (x * c, x.mul_(2))[0],
    "tensor / constant complex, tensor written": lambda L, x, c: (x / c, x.mul_(2))[0],
}


@pytest.mark.parametrize("case", sorted(PRODUCT_CASES))
def test_complex_product_saves_as_torch(torch, case):
    def run(L):
        a = L.tensor([0.5, -1.25], requires_grad=True)
        x = a * 1.0
        c = L.tensor(np.array([1 + 2j, -0.5j]))
        z = PRODUCT_CASES[case](L, x, c)
        try:
            (z * L.tensor(np.array([1 - 1j, 2 + 0.5j]))).real.sum().backward()
        except RuntimeError as e:
            return "RuntimeError", "modified by an inplace operation" in str(e)
        return z.detach().numpy().tolist(), a.grad.numpy().tolist()

    assert run(tg) == run(torch)


# -- isnan / isinf / isfinite of complex values (seed 56101440) ---------------------------------
# float_test (src/tapegrad/ops_unary.pxi) tested only float arrays (dtype kind "f"), so a complex
# tensor got the non-float answer: isfinite True and isnan / isinf False everywhere, also for inf
# or nan parts.  isposinf / isneginf refuse complex input, as PyTorch.

@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite"])
def test_complex_float_tests_as_torch(torch, name):
    values = np.array([complex(np.inf, 1), complex(1, np.nan), 1 + 2j, complex(np.nan, -np.inf)])

    def run(L):
        return getattr(L, name)(L.tensor(values.astype("complex64"))).tolist()

    assert run(tg) == run(torch)


@pytest.mark.parametrize("name", ["isposinf", "isneginf"])
def test_complex_sign_infinity_tests_refused_as_torch(torch, name):
    z = np.array([complex(np.inf, 1), 1 + 2j])
    with pytest.raises(RuntimeError, match=f"{name} does not support complex inputs"):
        getattr(torch, name)(torch.tensor(z))
    with pytest.raises(RuntimeError, match=f"{name} does not support complex inputs"):
        getattr(tg, name)(tg.tensor(z))


def test_complex_negation_second_derivative_as_torch(torch):
    # seed 154: an op that reads neither its input nor its output (neg, here in place after
    # torch.complex) kept no operands, and its create_graph backward unpacked none: ValueError
    def run(L):
        x = L.tensor([[-0.5], [2.0]], requires_grad=True)
        z = L.complex(x * 1.0, L.zeros(2, 1)).neg_()
        w = L.tensor(np.array([[1 + 2j], [0.5 - 1j]]).astype("complex64"))
        (g,) = L.autograd.grad((z * z * w).real.sum(), x, create_graph=True)
        (g2,) = L.autograd.grad((g * g).sum(), x)
        return g.detach().numpy(), g2.numpy()

    for a, b in zip(run(tg), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_fft_create_graph_keeps_the_graph():
    # the fft VJP ran on arrays: under create_graph its gradient had no graph, so a gradient
    # penalty through it silently lost its terms.  It raised until session 25, when the VJP
    # became a recorded node of its own (the transform again): the penalty's gradient as torch's
    torch = pytest.importorskip("torch")

    def penalty_gradient(lib):
        z = lib.tensor([1 + 2j, 0.5 - 1j, -0.25 + 0.5j], dtype=lib.complex128,
                       requires_grad=True)
        (g,) = lib.autograd.grad((lib.fft.fft(z).abs() ** 3).sum(), z, create_graph=True)
        assert g.requires_grad
        (gg,) = lib.autograd.grad((g.real ** 2).sum(), z)
        return gg.detach().numpy()
    np.testing.assert_allclose(penalty_gradient(tg), penalty_gradient(torch), rtol=1e-12)
