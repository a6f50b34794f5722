"""tapegrad.func (grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, functional_call,
vmap) and autograd.forward_ad: results, structures and errors against torch.func; hand values
without torch."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

XS = np.array([0.3, -1.2, 2.0])

# Expressions evaluated with lib = torch and lib = tapegrad, X a float64 tensor of XS.
SAME = [
    "lib.func.grad(lambda x: (x ** 3).sum())(X)",
    "lib.func.grad(lambda x: (x ** 3).sum(), argnums=(0,))(X)",
    "lib.func.grad(lambda x, y: (x * y.sin()).sum(), argnums=(0, 1))(X, X * 2)",
    "lib.func.grad(lambda x: lib.tensor(1.0))(X)",
    "lib.func.grad(lambda x: ((x ** 2).sum(), x * 2), has_aux=True)(X)",
    "lib.func.grad(lambda d: (d['a'] ** 2).sum())({'a': X, 'b': X})",
    "lib.func.grad(lib.func.grad(lambda x: x.sin() * x))(X[0])",
    "lib.func.grad(lambda x: lib.func.grad(lambda y: (x * y ** 2).sum())(X).sum())(X[1])",
    "lib.func.grad_and_value(lambda x: x.exp().sum())(X)",
    "lib.func.vjp(lambda a: a.sin(), X)[0]",
    "lib.func.vjp(lambda a: a.sin(), X)[1](X)",
    "lib.func.vjp(lambda a, b: (a * b).sum(), X, X * 2)[1](lib.tensor(1.0, dtype=lib.float64))",
    "lib.func.jvp(lambda a: a.sin(), (X,), (X,))",
    "lib.func.jvp(lambda a, b: a * b, (X, X), (X, X * 0))",
    "lib.func.jvp(lambda a: X, (X,), (X,))",
    "lib.func.jacrev(lambda a: a.sin() * a.sum())(X)",
    "lib.func.jacfwd(lambda a: a.sin() * a.sum())(X)",
    "lib.func.jacrev(lambda a, b: (a * b, (a * b).sum()), argnums=(0, 1))(X, X + 1)",
    "lib.func.jacfwd(lambda a, b: a @ b, argnums=1)(X.reshape(3, 1) * X, X)",
    "lib.func.jacrev(lambda a: a.reshape(3, 1) * a)(X)",
    "lib.func.hessian(lambda a: a.sin().sum() * a.sum())(X)",
    "lib.func.vmap(lambda a: a.sum())(lib.ones(2, 3))",
    "lib.func.vmap(lambda a, b: a + b, in_dims=(0, None))(lib.ones(2, 3), lib.arange(3.))",
    "lib.func.vmap(lambda a: a * lib.arange(2.), in_dims=1, out_dims=1)(lib.ones(2, 3))",
    "lib.func.vmap(lambda a: (a, lib.ones(2)), out_dims=(0, None))(lib.ones(2, 3))",
    "lib.func.vmap(lib.dot)(lib.arange(6.).reshape(2, 3), lib.ones(2, 3))",
    "lib.vmap(lib.func.grad(lambda x: (x ** 3).sum()))(lib.arange(6.).reshape(2, 3))",
    "lib.func.vmap(lib.func.vmap(lambda a: a * 2))(lib.arange(6.).reshape(2, 3))",
    "lib.func.vmap(lambda d: d['x'] * 2)({'x': lib.arange(4.)})",
]

ERRORS = [
    "lib.func.grad(lambda x: x * 2)(X)",
    "lib.func.grad(lambda x: 2.0)(X)",
    "lib.func.grad(lambda x: (x ** 2).sum(), argnums=1)(X)",
    "lib.func.grad(lambda x: (x ** 2).sum(), has_aux=True)(X)",
    "lib.func.vmap(lambda a, b: a + b)(lib.ones(2, 3), lib.ones(3, 3))",
    "lib.func.vmap(lambda a: 1.0)(lib.ones(2, 3))",
    "lib.func.vmap(lambda a: a + lib.randn(3))(lib.ones(2, 3))",
    "lib.func.vmap(lambda a: a, in_dims=2)(lib.ones(2, 3))",
    "lib.func.vmap(lambda a: (a, a.sum()), out_dims=(0, None))(lib.ones(2, 3))",
    "lib.func.vmap(lambda a: a, in_dims=None)(lib.ones(3))",
    "lib.func.vmap(lambda a: a)(5)",
    "lib.func.jvp(lambda a: a.sin(), X, X)",
]


def _as_numpy(value):
    if isinstance(value, (tuple, list)):
        return type(value)(_as_numpy(v) for v in value)
    if isinstance(value, dict):
        return {k: _as_numpy(v) for k, v in value.items()}
    return value.detach().numpy() if hasattr(value, "detach") else value


def _assert_same(a, b):
    if isinstance(a, (tuple, list, dict)):
        assert type(a) is type(b) and len(a) == len(b)
        items = a.items() if isinstance(a, dict) else enumerate(a)
        for k, v in items:
            _assert_same(v, b[k])
    else:
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        assert np.shape(a) == np.shape(b)


# torch.func's forward-mode path warns about torch.jit.script on first use (torch's own code).
@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("expr", SAME)
def test_transforms_match_torch(torch, expr):
    results = []
    for lib in (tg, torch):
        results.append(_as_numpy(eval(expr, {"lib": lib, "X": lib.tensor(XS)})))
    _assert_same(*results)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("expr", ERRORS)
def test_transform_errors_match_torch(torch, expr):
    caught = []
    for lib in (tg, torch):
        with pytest.raises(Exception) as info:
            eval(expr, {"lib": lib, "X": lib.tensor(XS)})
        caught.append(info.value)
    ours, theirs = caught
    assert type(ours) is type(theirs)
    assert str(ours).split(":")[-1].strip()[:40] == str(theirs).split(":")[-1].strip()[:40]


def test_results_carry_no_graph_and_values_without_torch():
    x = tg.tensor([1.0, 2.0])
    g = tg.func.grad(lambda v: (v ** 2).sum())(x)
    assert g.tolist() == [2.0, 4.0] and not g.requires_grad
    assert tg.func.grad(tg.func.grad(lambda v: v ** 3))(tg.tensor(2.0)).item() == 12.0
    out, jv = tg.func.jvp(lambda v: v * v, (x,), (tg.ones(2),))
    assert jv.tolist() == [2.0, 4.0] and not jv.requires_grad
    np.testing.assert_allclose(tg.func.hessian(lambda v: (v ** 3).sum())(x).numpy(),
                               np.diag([6.0, 12.0]))
    assert tg.vmap(lambda r: r.sum())(tg.ones(4, 2)).tolist() == [2.0] * 4


def test_vmap_randomness():
    tg.manual_seed(0)
    different = tg.vmap(lambda a: a + tg.rand(()), randomness="different")(tg.zeros(3))
    same = tg.vmap(lambda a: a + tg.rand(()), randomness="same")(tg.zeros(3))
    assert len(set(different.tolist())) == 3 and len(set(same.tolist())) == 1


def test_functional_call(torch):
    m = tg.nn.Linear(3, 2)
    weight = tg.ones(2, 3)
    out = tg.func.functional_call(m, {"weight": weight, "bias": tg.zeros(2)}, (tg.ones(1, 3),))
    assert out.tolist() == [[3.0, 3.0]]
    assert m.weight is not weight and isinstance(m.weight, tg.nn.Parameter)    # restored
    net = tg.nn.Sequential(tg.nn.Linear(2, 2), tg.nn.ReLU(), tg.nn.Linear(2, 1))
    params = {k: v.detach() for k, v in net.named_parameters()}

    def loss(p, x):
        return tg.func.functional_call(net, p, (x,)).sum()
    grads = tg.func.grad(loss)(params, tg.ones(4, 2))
    assert set(grads) == set(params) and all(net.get_parameter(k).grad is None for k in params)
    with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'foo'"):
        tg.func.functional_call(m, {"foo": weight}, tg.ones(1, 3), strict=True)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_forward_ad_matches_torch(torch):
    results = []
    for lib in (tg, torch):
        fw = lib.autograd.forward_ad
        primal = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64)
        tangent = lib.tensor([1.0, 2.0, -1.0], dtype=lib.float64)
        with fw.dual_level():
            dual = fw.make_dual(primal, tangent)
            y = fw.unpack_dual((dual.sin() * dual).sum() + dual.exp())
            assert fw.unpack_dual(primal).tangent is None
            assert fw.unpack_dual(dual).tangent is tangent      # the tutorial checks identity
            assert type(y).__name__ == "UnpackedDualTensor"
            results.append((y.primal.numpy(), y.tangent.numpy(),
                            fw.unpack_dual(dual).tangent.numpy()))
            with pytest.raises(RuntimeError, match="different size than that of the original"):
                fw.make_dual(primal, lib.ones(2, dtype=lib.float64))
        with pytest.raises(RuntimeError, match="no level exists"):
            fw.make_dual(primal, tangent)
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def _outer_graph_cases(lib):
    """Transforms compose with autograd: results depend on the caller's tensors that require
    grad (inputs or closed over) keep that graph; results that do not, have none."""
    p = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([0.5, -0.5], dtype=lib.float64, requires_grad=True)
    q = lib.tensor([1.0, 2.0], dtype=lib.float64)
    out = {}
    g = lib.func.grad(lambda x: (x ** 3).sum())(p)
    (p - 0.1 * g).pow(2).sum().backward()           # MAML-style: through the gradient
    out["maml"] = p.grad.clone()
    p.grad = None
    lib.func.jacrev(lambda x: x.sin() * x * w)(p).sum().backward()
    out["jacrev_p"], out["jacrev_w"] = p.grad.clone(), w.grad.clone()
    p.grad = w.grad = None
    _, tangent = lib.func.jvp(lambda x: x.exp() * w, (p,), (lib.ones(2, dtype=lib.float64),))
    tangent.sum().backward()
    out["jvp_p"], out["jvp_w"] = p.grad.clone(), w.grad.clone()
    out["flags"] = [lib.func.grad(lambda x: (x ** 3).sum())(q).requires_grad,
                    lib.func.grad(lambda x: (x ** 2 * w).sum())(q).requires_grad,
                    lib.func.vjp(lambda x: x * 2, q)[0].requires_grad,
                    lib.func.hessian(lambda x: (x ** 3).sum())(p).requires_grad]
    return out


def test_results_keep_the_callers_graph_as_torch(torch):
    ours, theirs = _outer_graph_cases(tg), _outer_graph_cases(torch)
    assert ours["flags"] == theirs["flags"] == [False, True, False, True]
    for key in ("maml", "jacrev_p", "jacrev_w", "jvp_p", "jvp_w"):
        np.testing.assert_allclose(ours[key].numpy(), theirs[key].numpy(), rtol=1e-12,
                                   err_msg=key)
