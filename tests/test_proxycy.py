"""Implicit layers, bilevel optimisation and architecture search idioms, compared with PyTorch:
what the proxy-corpus scripts of that domain (DEQ, DARTS, hypergradients, torch.func
Jacobians of functional_call) printed differently from PyTorch."""
from __future__ import annotations

import pytest

import tapegrad as tg

# importing torch.func under torch warns that torch.jit.script is deprecated
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")


def _jacobians(T):
    """torch.func Jacobians / Hessian of a function of a weight that itself requires grad (as
    in hypergradient code that differentiates through them again)."""
    from importlib import import_module
    func = import_module(T.__name__ + ".func")
    w = T.tensor([[0.5, -0.3, 0.2]], requires_grad=True)
    x = T.tensor([[1., 2., 3.], [0., 1., -1.]])

    def f(w):
        return (x @ w.t()).pow(3)

    return [func.jacrev(f)(w), func.jacfwd(f)(w), func.hessian(lambda w: f(w).sum())(w)]


def test_func_jacobians_are_views_as_in_pytorch():
    # jacfwd splits the transposed basis columns back into output and input dims with view():
    # grad_fn is ViewBackward0 (it was ReshapeAliasBackward0), with PyTorch's strides
    torch = pytest.importorskip("torch")
    for ours, theirs in zip(_jacobians(tg), _jacobians(torch)):
        assert ours.grad_fn.name() == theirs.grad_fn.name()
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert ours.stride() == theirs.stride()
        assert ours.is_contiguous() == theirs.is_contiguous()
        assert ours.detach().numpy() == pytest.approx(theirs.detach().numpy())


def _unwrapped_shapes(T):
    from importlib import import_module
    func = import_module(T.__name__ + ".func")
    seen = []
    func.vmap(lambda r: seen.append(tuple(func.debug_unwrap(r).shape)) or r)(T.ones(3, 2))
    func.vmap(func.vmap(lambda r: seen.extend([tuple(func.debug_unwrap(r).shape),
                                               tuple(func.debug_unwrap(r, recurse=False).shape)])
                        or r))(T.ones(4, 3, 2))
    plain = T.ones(2)
    seen.append(func.debug_unwrap(plain) is plain)
    return seen


def test_func_debug_unwrap_removes_vmap_levels():
    torch = pytest.importorskip("torch")
    assert _unwrapped_shapes(tg) == _unwrapped_shapes(torch) == [(3, 2), (4, 3, 2), (3, 2), True]
