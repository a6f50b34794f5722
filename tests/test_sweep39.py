"""sweep39: torch.func against PyTorch's test/functorch/test_vmap.py (TestVmapAPI, in-place
fallbacks) and test_eager_transforms.py (grad/vjp/jvp/jacrev/jacfwd input and output checks,
replace_all_batch_norm_modules_)."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")

X23 = np.array([[0.5, -1.25, 2.0], [1.5, 0.25, -0.75]])
Y23 = np.array([[-0.5, 2.5, 1.0], [0.75, -1.5, 0.125]])
X3 = np.array([0.3, -0.7, 1.1])


def both(fn):
    """fn(lib) for lib = torch and tapegrad."""
    return fn(torch), fn(tg)


# -- a Tensor method taken from the class is vmapped as the method (its batching rule) ----------

def test_vmap_of_class_inplace_method_returns_its_input_itself():
    for lib in (torch, tg):
        x = lib.tensor(np.abs(X23) % 1)
        r = lib.func.vmap(lib.Tensor.acos_)(x)
        assert r is x
        np.testing.assert_allclose(x.numpy(), np.arccos(np.abs(X23) % 1), rtol=1e-6)
        x = lib.tensor(X23)
        r = lib.func.vmap(lib.Tensor.add_)(x, lib.tensor(Y23), alpha=2)
        assert r is x
        np.testing.assert_allclose(x.numpy(), X23 + 2 * Y23)


def test_vmap_of_class_method_out_dims_and_in_dims_give_views_of_the_input():
    # SILENT before: the per-sample loop stacked copies, so a write into the result no longer
    # reached the input PyTorch's result is a view of.
    for lib in (torch, tg):
        x = lib.tensor(X23)
        r = lib.func.vmap(lib.Tensor.sin_, out_dims=(1,))(x)
        assert r._base is x
        np.testing.assert_allclose(r.numpy(), np.sin(X23).T)
        x = lib.tensor(np.arange(24.).reshape(2, 3, 4))
        r = lib.func.vmap(lib.Tensor.t)(x)
        assert r._base is x
        r[0, 0, 0] = 100.0
        assert x[0, 0, 0].item() == 100.0
        x = lib.tensor(np.arange(12.).reshape(2, 6))
        r = lib.func.vmap(lib.Tensor.view, in_dims=(0, None, None))(x, 2, 3)
        assert tuple(r.shape) == (2, 2, 3) and r._base is x


def test_vmap_of_class_method_values_and_gradients():
    t_res, g_res = both(lambda lib: (
        lib.func.vmap(lib.Tensor.mul, (None, 0))(lib.tensor(X3), lib.tensor(X23)),
        lib.func.vmap(lib.func.jacrev(lib.Tensor.sin))(lib.tensor(X23)),
        lib.func.grad(lib.Tensor.sum)(lib.tensor(X3))))
    for a, b in zip(t_res, g_res):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12)

    def inplace_grad(lib):
        x = lib.tensor(X23, requires_grad=True)
        y = x * 1
        r = lib.func.vmap(lib.Tensor.mul_)(y, lib.tensor(Y23))
        assert r is y
        return lib.autograd.grad((r * r).sum(), x)[0]
    a, b = both(inplace_grad)
    np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12)


# -- out= under vmap: PyTorch refuses it (before: RecursionError, or a silent write) -----------

@pytest.mark.parametrize("call", [
    lambda lib, a, b: lib.add(a, a, out=b),
    lambda lib, a, b: lib.mul(a, 2, out=b),
    lambda lib, a, b: lib.sin(a, out=b),
    lambda lib, a, b: lib.sin(a, out=lib.empty(3, dtype=lib.float64)),
])
def test_out_argument_under_vmap_is_refused(call):
    for lib in (torch, tg):
        with pytest.raises(RuntimeError, match="fallback path doesn't work on out= or view ops"):
            lib.func.vmap(lambda a, b: call(lib, a, b))(lib.tensor(X23), lib.tensor(Y23))
    # out= of unbatched tensors inside the mapped function still works
    for lib in (torch, tg):
        o = lib.empty(3, dtype=lib.float64)
        r = lib.func.vmap(lambda a: a + lib.sin(lib.tensor(X3), out=o))(lib.tensor(X23))
        np.testing.assert_allclose(r.numpy(), X23 + np.sin(X3))


def test_bool_in_dims_is_a_type_error():
    for lib in (torch, tg):
        with pytest.raises(TypeError, match="must be int, not bool"):
            lib.func.vmap(lambda a: a, in_dims=(True,))(lib.tensor(X23))


# -- transforms: PyTorch's checks of inputs, outputs and aux -----------------------------------

def test_vjp_and_jacrev_refuse_non_tensor_inputs():
    for lib in (torch, tg):
        x = lib.tensor(X3)
        with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor"):
            lib.func.vjp(lambda a, b: a * b, x, 3.0)
        with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor"):
            lib.func.vjp(lambda p: p[0], [x, 3.0])
        with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor"):
            lib.func.jacrev(lib.sin)(3.0)


def test_jvp_checks_primals_and_outputs():
    for lib in (torch, tg):
        x = lib.tensor(X3)
        with pytest.raises(RuntimeError, match="Expected primals to contain at least one Tensor"):
            lib.func.jvp(lib.sin, (), ())
        with pytest.raises(RuntimeError, match="Expected primals to only contain Tensors"):
            lib.func.jvp(lambda a, b: a * b, (x, 3.0), (x, 1.0))
        with pytest.raises(RuntimeError, match=r"expected f\(\*primals\) to return only tensors"):
            lib.func.jvp(lambda a: (a, 3), (x,), (x,))
        with pytest.raises(RuntimeError, match="should be a tuple: \\(output, aux\\)"):
            lib.func.jvp(lambda a: [a], (x,), (x,), has_aux=True)
        with pytest.raises(RuntimeError, match="should be a tuple: \\(output, aux\\)"):
            lib.func.jvp(lambda a: (a, a, a), (x,), (x,), has_aux=True)
        with pytest.raises(RuntimeError, match="Expected tensors, got unsupported type"):
            lib.func.jvp(lambda a: (a, {"k": 3}), (x,), (x,), has_aux=True)


@pytest.mark.parametrize("name,api", [("jacrev", "vjp"), ("jacfwd", "jvp")])
def test_jacobians_check_outputs_and_aux(name, api):
    for lib in (torch, tg):
        jac = getattr(lib.func, name)
        x = lib.tensor(X3)
        with pytest.raises(RuntimeError, match=rf"{api}\(f, .*expected f\(\*primals\) to "
                                               rf"return only tensors"):
            jac(lambda a: (a.sum(), 3))(x)
        with pytest.raises(RuntimeError, match=rf"{api}\(f, .*should be a tuple"):
            jac(lambda a: a.sum(), has_aux=True)(x)
        with pytest.raises(RuntimeError, match=rf"{api}\(f, .*should be a tuple"):
            jac(lambda a: [a.sum(), a], has_aux=True)(x)
        with pytest.raises(RuntimeError, match="Expected tensors, got unsupported type"):
            jac(lambda a: (a.sum(), 3), has_aux=True)(x)


def test_jacfwd_refuses_integer_primal():
    for lib in (torch, tg):
        with pytest.raises(ValueError, match="Expected primal to be floating point or complex, "
                                             "but got: torch.int64"):
            lib.func.jacfwd(lambda a: a.sum())(lib.tensor([1, 2]))


# -- replace_all_batch_norm_modules_ -----------------------------------------------------------

def _bn_model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.BatchNorm1d(3),
                             lib.nn.InstanceNorm1d(3, track_running_stats=True),
                             lib.nn.BatchNorm1d(3, track_running_stats=False)).double()


def test_replace_all_batch_norm_modules_drops_running_stats_in_place():
    results = []
    for lib in (torch, tg):
        m = _bn_model(lib)
        assert lib.func.replace_all_batch_norm_modules_(m) is m
        bn = m[1]
        assert bn.running_mean is None and bn.running_var is None
        assert bn.num_batches_tracked is None and bn.track_running_stats is False
        assert m[2].running_mean is not None        # an InstanceNorm is not a batch norm
        results.append(sorted(m.state_dict().keys()))
        root = lib.nn.BatchNorm2d(2)
        lib.func.replace_all_batch_norm_modules_(root)     # the root itself
        assert root.running_mean is None and root.track_running_stats is False
    assert results[0] == results[1]


def test_vmap_over_batch_norm_after_replacement_and_its_gradient():
    x = (np.arange(24.).reshape(2, 4, 3) ** 1.5) / 10
    w0 = np.array([1.0, 2.0, -0.5])
    out = []
    for lib in (torch, tg):
        bn = lib.nn.BatchNorm1d(3).double()
        with pytest.raises(RuntimeError):       # running stats cannot take every sample's
            lib.func.vmap(bn)(lib.tensor(x))
        lib.func.replace_all_batch_norm_modules_(bn)

        def loss(w, xs):
            y = lib.func.vmap(lambda s: lib.func.functional_call(bn, {"weight": w}, (s,)))(xs)
            return (y * lib.tensor(x)).sum()
        out.append((lib.func.vmap(bn)(lib.tensor(x)),
                    lib.func.grad(loss)(lib.tensor(w0), lib.tensor(x))))
    for a, b in zip(*out):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
    # the gradient against central differences
    def f(w):
        bn = tg.nn.BatchNorm1d(3).double()
        tg.func.replace_all_batch_norm_modules_(bn)
        y = tg.func.vmap(lambda s: tg.func.functional_call(bn, {"weight": tg.tensor(w)},
                                                           (s,)))(tg.tensor(x))
        return float((y * tg.tensor(x)).sum())
    eps = 1e-6
    fd = [(f(w0 + eps * e) - f(w0 - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(out[1][1].numpy(), fd, rtol=1e-6, atol=1e-8)


# -- nested vmaps: an operand batched only at the outer level ----------------------------------

XA = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [-0.3, 0.8, 1.2], [0.9, -1.6, 0.4]])
YB = np.array([[1.25, -0.5, 0.3], [-2.0, 0.75, 1.5]])


@pytest.mark.parametrize("op", [
    lambda lib, a, b: a + b, lambda lib, a, b: b - a, lambda lib, a, b: a * b,
    lambda lib, a, b: b / (a.abs() + 1), lambda lib, a, b: a.abs() ** b,
    lambda lib, a, b: (a < b).float(), lambda lib, a, b: ((a > 0) & (b > 0)).float(),
    lambda lib, a, b: a.add(b, alpha=2), lambda lib, a, b: a.atan2(b),
    lambda lib, a, b: a.maximum(b), lambda lib, a, b: a.max(b),
], ids=["add", "rsub", "mul", "rdiv", "pow", "lt", "and", "add_alpha", "atan2", "maximum", "max"])
def test_nested_vmap_binary_op_with_outer_only_operand(op):
    # before: TypeError (BatchedTensor + BatchedTensor of different levels), then the loop's
    # RuntimeError "Tensor._version of a batched tensor is not supported"
    res = []
    for lib in (torch, tg):
        inner = lib.func.vmap(lambda a, b: op(lib, a, b), in_dims=(0, None))
        res.append(lib.func.vmap(inner, in_dims=(None, 0))(lib.tensor(XA), lib.tensor(YB)))
        res.append(lib.func.vmap(lib.func.vmap(lambda a, b: op(lib, a, b), in_dims=(None, 0)),
                                 in_dims=(0, None))(lib.tensor(XA), lib.tensor(YB)))
    for a, b in zip(res[:2], res[2:]):
        assert tuple(b.shape) == tuple(a.shape)
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12)


def test_nested_vmap_batch_rule_without_batched_input_and_its_gradient():
    # test_vmap.py's test_batch_rule_does_not_need_to_handle_no_batched_input
    x = np.arange(35.).reshape(7, 5) / 10
    y = np.array([[1.0, 2.0], [-0.5, 0.25], [3.0, -1.0]])
    out = []
    for lib in (torch, tg):
        def f(a, b):
            return a + lib.dot(b, lib.ones(2, dtype=lib.float64))
        out.append(lib.func.vmap(lib.func.vmap(f, in_dims=(0, None)), in_dims=(None, 0))(
            lib.tensor(x), lib.tensor(y)))
        w = lib.tensor([0.5, -1.0, 2.0, 0.0, 1.0])

        def loss(w, xs):
            return lib.func.vmap(lambda xi: (xi * w).sum())(xs).sum()
        out.append(lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0))(
            w, lib.tensor(np.stack([x, 2 * x]))))
    for a, b in zip(out[:2], out[2:]):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name,a_shape,b_shape,match", [
    ("dot", (4, 2, 3), (4, 3), "Got wrong shapes for dot"),
    ("dot", (4, 3), (4, 2, 3), "Got wrong shapes for dot"),
    ("mv", (4, 3), (4, 3), r"incorrect dims for mv\(a, b\)"),
    ("mm", (4, 3), (4, 3, 3), r"incorrect dims for mm\(a, b\)"),
    ("bmm", (4, 3, 3), (4, 3, 3), r"incorrect dims for bmm\(a, b\)"),
])
def test_vmap_of_fixed_rank_products_refuses_other_ranks(name, a_shape, b_shape, match):
    # SILENT before: the rules ran matmul, another product, for samples of other ranks
    for lib in (torch, tg):
        a, b = lib.ones(a_shape, dtype=lib.float64), lib.ones(b_shape, dtype=lib.float64)
        with pytest.raises(RuntimeError, match=match):
            lib.func.vmap(getattr(lib, name))(a, b)
        with pytest.raises(RuntimeError, match=match):
            lib.func.vmap(getattr(lib.Tensor, name))(a, b)
    res = []
    for lib in (torch, tg):     # the right ranks still compute
        m, v = lib.tensor(np.arange(36.).reshape(4, 3, 3)), lib.tensor(XA)
        res += [lib.func.vmap(lib.dot)(v, v), lib.func.vmap(lib.mv)(m, v),
                lib.func.vmap(lib.mm)(m, m), lib.func.vmap(lambda p: p.mm(p))(m)]
    for a, b in zip(res[:4], res[4:]):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12)
