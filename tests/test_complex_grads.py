"""Complex gradients of the ops beyond the arithmetic core (the math functions, prod,
logsumexp, outer/linear, and torch.linalg): values and gradients against PyTorch (its
conjugate-Wirtinger convention) and gradcheck in complex128 (central differences along the real
and imaginary directions)."""
import numpy as np
import pytest

import tapegrad as tg

RNG = np.random.default_rng(7)
Z = (RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))) * 0.5 + (0.3 + 0.2j)
SQ = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3)) + 2 * np.eye(3)
HPD = SQ @ SQ.conj().T + np.eye(3)                      # Hermitian positive-definite
TALL = RNG.standard_normal((4, 3)) + 1j * RNG.standard_normal((4, 3))
V = RNG.standard_normal(4) + 1j * RNG.standard_normal(4)


def _hpd(l, a):
    """A Hermitian positive-definite matrix made of a (so that finite differences stay on
    Hermitian matrices, as PyTorch's own gradchecks of these functions do)."""
    return a @ a.mH + l.eye(a.shape[-1], dtype=a.dtype)


def _gauge_free(l, U, Vh, weights):
    """A loss of singular (or eigen) vectors that does not depend on their phases."""
    return (U @ l.diag(weights.to(U.dtype)) @ Vh).abs().sum()


def _vectors_gauge_free(l, vectors, unitary):
    inverse = vectors.mH if unitary else l.linalg.inv(vectors)
    return _gauge_free(l, vectors, inverse, l.tensor([1.0, 2.0, 4.0], dtype=l.float64))


# name -> (function of (library, *tensors), operands); each output gives a real loss through a
# fixed complex weighting (or its abs where the op's phases are free)
CASES = {
    **{name: (lambda l, z, name=name: getattr(l, name)(z), (Z,)) for name in (
        "sinh", "cosh", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh", "log10",
        "log2", "exp2", "sinc", "tanh", "sigmoid", "rsqrt")},
    "prod": (lambda l, z: l.prod(z), (Z,)),
    "prod_dim": (lambda l, z: l.prod(z, 1), (Z,)),
    "prod_dim_keepdim_zero": (lambda l, z: l.prod(z * l.tensor([[1.0, 0, 1, 1]]), 0, True),
                              (Z,)),
    "logsumexp": (lambda l, z: l.logsumexp(z, 1), (Z,)),
    "logsumexp_all": (lambda l, z: l.logsumexp(z, (0, 1), keepdim=True), (Z,)),
    "logaddexp": (lambda l, z: l.logaddexp(z, z * 0.5), (Z,)),
    "cumprod": (lambda l, z: l.cumprod(z, 1), (Z,)),
    "cumsum": (lambda l, z: l.cumsum(z, 0), (Z,)),
    "outer": (lambda l, a, b: l.outer(a, b), (V, V[::-1].copy())),
    "linear": (lambda l, x, w, b: l.nn.functional.linear(x, w, b), (Z, Z[:2] * 2, Z[0, :2])),
    "l1_loss": (lambda l, a, b: l.nn.functional.l1_loss(a, b), (Z, Z[::-1].copy())),
    "float_power": (lambda l, z: l.float_power(z, 2), (Z,)),
    "vecdot": (lambda l, a, b: l.linalg.vecdot(a, b), (Z, Z * 1j + 1)),
    "cov": (lambda l, z: l.cov(z), (Z,)),
    "inv": (lambda l, a: l.linalg.inv(a), (SQ,)),
    "det": (lambda l, a: l.linalg.det(a), (SQ,)),
    "slogdet": (lambda l, a: l.linalg.slogdet(a), (SQ,)),
    "logdet_abs": (lambda l, a: l.linalg.slogdet(a)[1], (SQ,)),
    "solve": (lambda l, a, b: l.linalg.solve(a, b), (SQ, TALL[:3, :2].copy())),
    "solve_right": (lambda l, a, b: l.linalg.solve(a, b, left=False), (SQ, TALL[:2, :3].copy())),
    "cholesky": (lambda l, a: l.linalg.cholesky(_hpd(l, a)), (SQ,)),
    "cholesky_upper": (lambda l, a: l.linalg.cholesky(_hpd(l, a), upper=True), (SQ,)),
    "eigvalsh": (lambda l, a: l.linalg.eigvalsh(_hpd(l, a)), (SQ,)),
    "eigh": (lambda l, a: _vectors_gauge_free(l, l.linalg.eigh(_hpd(l, a))[1], True), (SQ,)),
    "eigvals": (lambda l, a: l.linalg.eigvals(a), (SQ,)),
    "eig": (lambda l, a: _vectors_gauge_free(l, l.linalg.eig(a)[1], False), (SQ,)),
    "svdvals": (lambda l, a: l.linalg.svdvals(a), (TALL,)),
    "svd": (lambda l, a: _gauge_free(l, *l.linalg.svd(a, full_matrices=False)[::2],
                                     l.tensor([1.0, 2.0, 4.0], dtype=l.float64)), (TALL,)),
    "svd_wide": (lambda l, a: _gauge_free(l, *l.linalg.svd(a, full_matrices=False)[::2],
                                          l.tensor([1.0, 3.0, 2.0], dtype=l.float64)),
                 (TALL.T.copy(),)),
    "qr": (lambda l, a: l.linalg.qr(a), (TALL,)),
    "qr_wide": (lambda l, a: l.linalg.qr(a), (TALL.T.copy(),)),
    "pinv": (lambda l, a: l.linalg.pinv(a), (TALL,)),
    "matrix_norm_fro": (lambda l, a: l.linalg.matrix_norm(a), (SQ,)),
    "matrix_norm_nuc": (lambda l, a: l.linalg.matrix_norm(a, "nuc"), (SQ,)),
    "matrix_norm_2": (lambda l, a: l.linalg.matrix_norm(a, 2), (SQ,)),
    "matrix_norm_1": (lambda l, a: l.linalg.matrix_norm(a, 1), (SQ,)),
    "norm": (lambda l, a: l.linalg.norm(a), (SQ,)),
    "matrix_exp": (lambda l, a: l.linalg.matrix_exp(a * 0.3), (SQ,)),
    "matrix_power": (lambda l, a: l.linalg.matrix_power(a, -2), (SQ,)),
}


def _loss(lib, out):
    outs = out if isinstance(out, tuple) else (out,)
    total = 0
    for k, o in enumerate(outs):
        weights = np.cos(np.arange(o.numel()) + k).reshape(tuple(o.shape))
        if o.is_complex():
            weights = weights + 1j * np.sin(np.arange(o.numel()) * 0.7).reshape(weights.shape)
            total = total + (o * lib.tensor(weights).conj()).real.sum()
        else:
            total = total + (o * lib.tensor(weights, dtype=o.dtype)).sum()
    return total


def _values_and_grads(lib, name):
    fn, operands = CASES[name]
    leaves = [lib.tensor(x, dtype=lib.complex128, requires_grad=True) for x in operands]
    out = fn(lib, *leaves)
    grads = lib.autograd.grad(_loss(lib, out), leaves)
    outs = out if isinstance(out, tuple) else (out,)
    return ([o.detach().resolve_conj().numpy() for o in outs],
            [g.resolve_conj().numpy() for g in grads])


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    values, grads = _values_and_grads(tg, name)
    expected_values, expected_grads = _values_and_grads(torch, name)
    for got, want in zip(values + grads, expected_values + expected_grads):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", sorted(set(CASES) - {"l1_loss"}))
def test_gradcheck_complex128(name):
    fn, operands = CASES[name]
    leaves = tuple(tg.tensor(x, dtype=tg.complex128, requires_grad=True) for x in operands)
    assert tg.autograd.gradcheck(lambda *a: fn(tg, *a), leaves, atol=1e-6, rtol=1e-5)


def test_gradcheck_catches_an_unconjugated_gradient():
    class Square(tg.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z * z

        @staticmethod
        def backward(ctx, g):
            z, = ctx.saved_tensors
            return g * 2 * z                            # should be g * conj(2 z)

    z = tg.tensor([1 + 2j, 0.3 - 0.5j], dtype=tg.complex128, requires_grad=True)
    assert not tg.autograd.gradcheck(Square.apply, (z,), raise_exception=False)


def test_real_input_of_eig_gets_a_real_gradient():
    torch = pytest.importorskip("torch")
    a = np.array([[2.0, 1.0, 0.0], [-1.0, 1.0, 3.0], [0.5, 0.0, 1.0]])
    grads = []
    for lib in (tg, torch):
        A = lib.tensor(a, requires_grad=True)
        values = lib.linalg.eigvals(A)
        assert values.dtype == lib.complex128
        (values * lib.tensor([1, 2j, 3])).real.sum().backward()
        assert A.grad.dtype == lib.float64
        grads.append(A.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-9, atol=1e-12)


def test_phase_dependent_loss_of_eigenvectors_raises_as_torch():
    for lib in (tg, pytest.importorskip("torch")):
        A = lib.tensor(SQ, requires_grad=True)
        vectors = lib.linalg.eigh(_hpd(lib, A))[1]
        with pytest.raises(RuntimeError, match="specified up to multiplication by e\\^\\{i phi\\}"):
            vectors.real.sum().backward()


@pytest.mark.parametrize("name", ["tan", "asinh", "acosh", "atanh", "exp2", "sinc", "gradient"])
def test_complex_input_is_not_cast_to_real(name):
    z = tg.tensor([0.3 + 0.2j, -1 + 2j])
    out = getattr(tg, name)(z)
    out = out[0] if isinstance(out, tuple) else out
    assert out.is_complex()


@pytest.mark.parametrize("name", ["lgamma", "digamma", "erfinv", "erfc"])
def test_real_only_special_functions_refuse_complex(name):
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
        getattr(tg, name)(tg.tensor([0.3 + 0.2j]))


# -- create_graph=True (second derivatives) ---------------------------------------------------------

SECOND_ORDER = {
    "logsumexp": lambda lib, z, w: (lib.logsumexp(z * w, 0) * (1 - 2j)).real
    + lib.logsumexp(z.reshape(2, 2), 1).abs().sum(),
    "mul_div": lambda l, z, w: (z * w / (w + 2)).abs().sum(),
    "holomorphic": lambda l, z, w: (z.sin() * w.exp() + z.sqrt() + z.tanh() + w.log()).real.sum(),
    "pow": lambda l, z, w: ((z ** 3) + z ** w).imag.sum(),
    "conj_real_imag": lambda l, z, w: (z.conj() * w).real.sum() + (z * z).imag.sum(),
    "sgn_abs": lambda l, z, w: (z.sgn() * w).real.sum() + (z * w).abs().pow(3).sum(),
    "matmul": lambda l, z, w: (z.reshape(2, 2) @ w.reshape(2, 2)).abs().pow(2).sum(),
    "view_as_real": lambda l, z, w: l.view_as_real(z * w).pow(3).sum(),
    "linalg_det": lambda l, z, w: l.linalg.det(z.reshape(2, 2) + w.reshape(2, 2) * 2).abs(),
    "in_place": lambda l, z, w: _written_in_place(z, w).abs().pow(2).sum(),
    "dead_intermediates": lambda l, z, w: ((z * w).exp() / (z + 1)).log().abs().sum(),
}


def _written_in_place(z, w):
    y = (z * w).clone()
    y.mul_(w)
    return y.sin()


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_create_graph_second_derivatives_match_torch(name):
    torch = pytest.importorskip("torch")
    z0 = np.array([1 + 2j, -0.5 + 0.3j, 2 - 1j, 0.4 + 0.1j])
    w0 = np.array([0.3 - 1j, 1.5 + 0.2j, -1 + 1j, 0.7 - 0.2j])
    results = []
    for lib in (tg, torch):
        z = lib.tensor(z0, requires_grad=True)
        w = lib.tensor(w0, requires_grad=True)
        gz, gw = lib.autograd.grad(SECOND_ORDER[name](lib, z, w), (z, w), create_graph=True)
        assert gz.requires_grad
        second = lib.autograd.grad((gz * lib.tensor(z0).conj()).real.sum()
                                   + gw.abs().sum(), (z, w), allow_unused=True)
        results.append([g.resolve_conj().numpy() for g in (gz.detach(), gw.detach()) + second])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_create_graph_keeps_no_record_alive():
    w = tg.tensor([1 + 1j, 2 - 1j], requires_grad=True)

    def step():
        z = tg.tensor([1 + 2j, 0.5 - 1j], requires_grad=True)
        gz, = tg.autograd.grad(_written_in_place(z, w).abs().sum(), z, create_graph=True)
        gz.abs().sum().backward()

    step()
    tape = tg._core.tape()
    before = tape.live_records
    for _ in range(20):
        step()
    assert tape.live_records == before


@pytest.mark.parametrize("call", [
    lambda l, z: l.xlogy(z, z), lambda l, z: l.logit(z), lambda l, z: l.nansum(z),
    lambda l, z: l.cdist(z.reshape(1, 1), z.reshape(1, 1)),
])
def test_ops_torch_refuses_for_complex_raise_its_error(call):
    torch = pytest.importorskip("torch")
    errors = []
    for lib in (tg, torch):
        with pytest.raises((RuntimeError, NotImplementedError)) as info:
            call(lib, lib.tensor([0.3 + 0.2j]))
        errors.append((type(info.value), str(info.value)))
    assert errors[0] == errors[1]


# -- views share their base's version counter -------------------------------------------------------

@pytest.mark.parametrize("case", ["write_real", "write_view_as_real", "write_base_after_imag"])
def test_writes_through_real_imag_views_are_detected_as_torch(case):
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        a = lib.tensor([1 + 2j, 3 - 1j], requires_grad=True)
        b = a * 1
        if case == "write_base_after_imag":
            r = b.imag
            loss = (r * r).sum()                        # saves r, a view of b's storage
            b.mul_(2)
        else:
            loss = (b * b).abs().sum()                  # saves b
            view = b.real if case == "write_real" else lib.view_as_real(b)
            if lib is tg:
                # a recorded write into a complex view is refused (PyTorch records it on b as
                # CopySlices; docs/differences.md), rather than lost from b's gradient
                with pytest.raises(RuntimeError, match="not supported by tapegrad"):
                    view.mul_(2)
                continue
            view.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()
