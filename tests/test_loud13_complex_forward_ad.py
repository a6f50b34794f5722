"""Forward-mode AD with complex primals (torch.func.jvp, torch.autograd.forward_ad), against
PyTorch.  tapegrad computes a tangent by two reverse passes through a dummy cotangent u; for
complex values the pairing of J^T u with the tangent must be Re sum(g conj(t)), whose gradient in
u under PyTorch's conjugate convention is ds/dz t + ds/dconj(z) conj(t) (it was sum(g t): wrong
tangents for complex primals).  make_dual refused complex primals ("Expected primal to be
floating point or complex, but got: torch.complex128"), and the complex ops, custom Functions
without a jvp, raised under an open dual level.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

# (torch.func's first use imports code that calls the deprecated torch.jit.script)
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")

_RNG = np.random.default_rng(0)
Z = _RNG.standard_normal((3, 4)) + 1j * _RNG.standard_normal((3, 4))
T = _RNG.standard_normal((3, 4)) + 1j * _RNG.standard_normal((3, 4))

CASES = {
    "mul": lambda lib, z: z * z * (1 + 2j),
    "conj": lambda lib, z: z.conj() * z + z,
    "abs": lambda lib, z: z.abs(),
    "exp": lambda lib, z: z.exp(),
    "sum": lambda lib, z: (z * z.conj()).sum(),
    "real_imag": lambda lib, z: z.real * z.imag,
    "matmul": lambda lib, z: z @ z.mT,
    "sin_log": lambda lib, z: z.sin() + (z + 3).log(),
    "angle": lambda lib, z: z.angle(),
    "div": lambda lib, z: 1 / (z + 3),
    "view_as_real": lambda lib, z: lib.view_as_real(z * 2),
    "view_as_complex": lambda lib, z: lib.view_as_complex(lib.view_as_real(z) * 2) * z,
    "complex": lambda lib, z: lib.complex(z.real, z.real * 2) * z,
    "sqrt": lambda lib, z: z.sqrt(),
    "pow": lambda lib, z: z ** 3,
    "tanh": lambda lib, z: z.tanh(),
    "logsumexp": lambda lib, z: lib.logsumexp(z * 1.5, 1),
}


def _func_jvp(lib, name):
    out, tangent = lib.func.jvp(lambda a: CASES[name](lib, a), (lib.tensor(Z),),
                                (lib.tensor(T),))
    return out.detach().numpy(), tangent.detach().numpy()


def _forward_ad(lib, name):
    fa = lib.autograd.forward_ad
    with fa.dual_level():
        y = CASES[name](lib, fa.make_dual(lib.tensor(Z), lib.tensor(T)))
        primal, tangent = fa.unpack_dual(y)
        return primal.detach().numpy(), tangent.detach().numpy()


@pytest.mark.parametrize("how", [_func_jvp, _forward_ad], ids=["func.jvp", "forward_ad"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_primal_tangents_match_torch(torch, name, how):
    ours, theirs = how(tg, name), how(torch, name)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_complex_tangent_by_finite_differences():
    """No torch needed: the tangent of a non-holomorphic function, (f(z + h t) - f(z - h t)) /
    2h."""
    f = CASES["conj"]
    fa = tg.autograd.forward_ad
    with fa.dual_level():
        tangent = fa.unpack_dual(f(tg, fa.make_dual(tg.tensor(Z), tg.tensor(T)))).tangent
    h = 1e-6
    fd = (f(tg, tg.tensor(Z + h * T)) - f(tg, tg.tensor(Z - h * T))).numpy() / (2 * h)
    np.testing.assert_allclose(tangent.numpy(), fd, rtol=1e-6, atol=1e-8)


# -- complex logsumexp under create_graph (it raised NotImplementedError) ------------------------

def _logsumexp_second(lib, dims, keepdim):
    z = lib.tensor(Z, requires_grad=True)
    y = lib.logsumexp(z, dims, keepdim=keepdim)
    loss = (y * (0.5 - 1.5j)).real.sum() + (y * y.conj()).real.sum()
    g, = lib.autograd.grad(loss, [z], create_graph=True)
    s = (g * g.conj()).real.sum() + (g * lib.tensor(T)).real.sum()
    g2, = lib.autograd.grad(s, [z])
    return g.detach().numpy(), g2.numpy()


@pytest.mark.parametrize("dims,keepdim", [(1, False), (0, True), ((0, 1), False), ((1, 0), True)])
def test_complex_logsumexp_second_derivative_matches_torch(torch, dims, keepdim):
    for a, b in zip(_logsumexp_second(tg, dims, keepdim), _logsumexp_second(torch, dims, keepdim)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_complex_logsumexp_gradient_by_finite_differences():
    """The create_graph gradient of Re sum(w logsumexp(z)) against central differences along
    the real and imaginary axes (PyTorch's convention: d/dRe + i d/dIm)."""
    w = 0.5 - 1.5j
    z = tg.tensor(Z, requires_grad=True)
    g, = tg.autograd.grad((tg.logsumexp(z, 1) * w).real.sum(), [z], create_graph=True)
    assert g.requires_grad

    def f(a):
        return float((tg.logsumexp(tg.tensor(a), 1) * w).real.sum())
    h, fd = 1e-6, np.zeros_like(Z)
    for idx in np.ndindex(Z.shape):
        e = np.zeros_like(Z)
        e[idx] = h
        fd[idx] = (f(Z + e) - f(Z - e)) / (2 * h) + 1j * (f(Z + 1j * e) - f(Z - 1j * e)) / (2 * h)
    np.testing.assert_allclose(g.detach().numpy(), fd, rtol=1e-6, atol=1e-8)
