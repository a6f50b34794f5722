"""Regressions found by the seventh argument-form sweep (hooks, autograd.Function, nn.utils,
torch.func) against PyTorch."""
import copy
import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _both(make):
    """Run `make(lib)` with PyTorch and with tapegrad; return the two results."""
    return make(torch), make(tg)


def _error(make, lib):
    try:
        make(lib)
    except Exception as e:              # noqa: BLE001 - the type is what is compared
        return type(e).__name__, str(e)
    return None


def _tied_model(lib):
    class Tied(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = lib.nn.Linear(3, 2)
            self.b = lib.nn.Linear(3, 2)
            self.b.weight = self.a.weight
            with lib.no_grad():
                self.a.weight.copy_(lib.tensor([[0.3, -0.1, 0.5], [-0.4, 0.2, 0.7]]))
                self.a.bias.fill_(0.1)
                self.b.bias.fill_(-0.2)

        def forward(self, x):
            return self.a(x) + self.b(x)
    return Tied()


@pytest.mark.parametrize("tie_weights", [True, False])
@pytest.mark.parametrize("given", ["a.weight", "b.weight"])
def test_functional_call_replaces_every_name_of_a_tied_weight(tie_weights, given):
    # A value for one name of a tied weight replaced only that name (silently wrong).
    def run(lib):
        x = lib.tensor([[1.0, -2.0, 0.5], [0.25, 1.0, -1.0]])
        out = lib.func.functional_call(_tied_model(lib), {given: lib.ones(2, 3)}, (x,),
                                       tie_weights=tie_weights)
        return out.detach().numpy()
    a, b = _both(run)
    np.testing.assert_allclose(b, a, rtol=1e-6)


def test_functional_call_tied_weights_refuses_two_values_and_strict_counts_ties():
    def two_values(lib):
        lib.func.functional_call(_tied_model(lib), {"a.weight": lib.ones(2, 3),
                                                    "b.weight": lib.zeros(2, 3)},
                                 (lib.ones(1, 3),))
    a, b = _error(two_values, torch), _error(two_values, tg)
    assert a[0] == b[0] == "ValueError" and a[1] == b[1]

    def strict(lib):   # the tied name b.weight is filled in before the strict check
        return lib.func.functional_call(
            _tied_model(lib), {"a.weight": lib.ones(2, 3), "a.bias": lib.zeros(2),
                               "b.bias": lib.zeros(2)}, (lib.ones(1, 3),), strict=True).tolist()
    a, b = _both(strict)
    np.testing.assert_allclose(b, a)


def test_functional_call_repeated_keys_message():
    def run(lib):
        lib.func.functional_call(lib.nn.Linear(3, 2), ({"weight": lib.ones(2, 3)},
                                                       {"weight": lib.ones(2, 3)}), lib.ones(3))
    assert _error(run, torch) == _error(run, tg)


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev", "hessian", "vmap_jacrev",
                                       "vmap_grad"])
def test_transforms_of_a_public_function_passed_as_an_object(transform):
    # jacfwd(torch.sin) raised TypeError: the function object met BatchedTensors unwrapped.
    def run(lib):
        f = lib.func
        x = lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=lib.float64)
        make = {"jacfwd": lambda: f.jacfwd(lib.sin)(x[0]),
                "jacrev": lambda: f.jacrev(lib.sin)(x[0]),
                "hessian": lambda: f.hessian(lib.sum)(x[0]),
                "vmap_jacrev": lambda: f.vmap(f.jacrev(lib.sin))(x),
                "vmap_grad": lambda: f.vmap(f.grad(lib.sum))(x)}[transform]
        return make().numpy()
    with warnings.catch_warnings():     # (PyTorch's forward AD warns about its own jit use)
        warnings.simplefilter("ignore", DeprecationWarning)
        a = run(torch)
    b = run(tg)
    np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-15)


def _augmented_add(a, b):
    a += b
    return a


def _inplace_into_unmapped(lib, how):
    x = lib.tensor([0.5, -1.0, 2.0])
    m = lib.tensor([[1.0, 2.0, 0.5], [-1.0, 0.3, 2.0]])
    body = {"add_": lambda a, b: a.add_(b),
            "mul_": lambda a, b: a.mul_(b),
            "copy_": lambda a, b: a.copy_(b),
            "index_add_": lambda a, b: a.index_add_(0, lib.tensor([0]), b[:1]),
            "masked_fill_": lambda a, b: a.masked_fill_(b > 0, 0.0),
            "setitem": lambda a, b: a.__setitem__(0, b[0]),
            "iadd": _augmented_add,     # (`a += b` was rebound to a + b, a left unchanged)
            "out=": lambda a, b: lib.add(b, 1, out=a),
            "different": lambda a, b: a.add_(b + 0 * lib.rand(3))}[how]
    kwargs = {"randomness": "different"} if how == "different" else {}
    lib.func.vmap(body, in_dims=(None, 0), **kwargs)(x, m)


@pytest.mark.parametrize("how", ["add_", "mul_", "copy_", "index_add_", "masked_fill_",
                                 "setitem", "iadd", "out=", "different"])
def test_vmap_refuses_writing_mapped_values_into_an_unmapped_tensor(how):
    # Each sample wrote in turn into the one unmapped tensor: the last sample's values won,
    # silently (PyTorch refuses).
    assert _error(lambda lib: _inplace_into_unmapped(lib, how), torch)[0] == "RuntimeError"
    err = _error(lambda lib: _inplace_into_unmapped(lib, how), tg)
    # (out= under vmap: PyTorch's refusal of any out= variant, whichever tensor is mapped)
    prefix = "Batching rule not implemented for aten::add.out" if how == "out=" else "vmap: "
    if how in ("add_", "iadd", "different"):
        # (PyTorch 2.13 decomposes add_ first: its shape check refuses, in its own words)
        prefix = "output with shape [3] doesn't match the broadcast shape [2, 3]"
    assert err is not None and err[0] == "RuntimeError" and err[1].startswith(prefix)


def test_vmap_nested_inplace_into_outer_sample_refused():
    def run(lib):
        return lib.func.vmap(lambda a, b: lib.func.vmap(lambda c: a.add_(c))(b))(
            lib.ones(2, 3), lib.ones(2, 2, 3))
    assert _error(run, torch)[0] == _error(run, tg)[0] == "RuntimeError"


def test_post_accumulate_grad_hook_must_return_none():
    def run(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x.register_post_accumulate_grad_hook(lambda p: p.grad.mul_(10))
        x.sum().backward()
    a, b = _error(run, torch), _error(run, tg)
    assert a is not None and a == b


def test_linearize_matches_jvp_values_and_checks_tangents():
    def run(lib):
        x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64)
        y = lib.tensor([1.5, 0.25, -0.75], dtype=lib.float64)
        out, jvp_fn = lib.func.linearize(lambda a, b: (a.sin() * b, a + b.exp()), x, y)
        t1 = jvp_fn(lib.ones(3, dtype=lib.float64), lib.zeros(3, dtype=lib.float64))
        t2 = jvp_fn(lib.zeros(3, dtype=lib.float64), lib.full((3,), 2.0, dtype=lib.float64))
        return [v.detach().numpy() for v in (*out, *t1, *t2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (PyTorch warns about its own tracing)
        a = run(torch)
    for u, v in zip(a, run(tg)):
        np.testing.assert_allclose(v, u, rtol=1e-12)

    def bad(lib, tangent):
        lib.func.linearize(lib.sin, lib.ones(3))[1](tangent(lib))
    for tangent in (lambda lib: lib.ones(2), lambda lib: lib.ones(3, dtype=lib.float64)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # (PyTorch warns about its own tracing)
            a = _error(lambda lib: bad(lib, tangent), torch)
        assert a is not None and a == _error(lambda lib: bad(lib, tangent), tg)


def test_functionalize_keeps_eager_results_and_input_mutations():
    def run(lib):
        a = lib.ones(2)

        def f(t):
            t.add_(1)
            return t * 2
        first = lib.func.functionalize(f)(a).tolist()
        second = lib.func.functionalize(f, remove="mutations_and_views")(a).tolist()
        return first, second, a.tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = run(torch)
    assert a == run(tg)
    assert _error(lambda lib: lib.func.functionalize(lib.sin, remove="x"), torch)[0] == \
        _error(lambda lib: lib.func.functionalize(lib.sin, remove="x"), tg)[0] == "RuntimeError"


@pytest.mark.parametrize("case", ["argnums_dup", "cotangent_list_for_tuple", "out_dims"])
def test_func_argument_errors(case):
    def run(lib):
        f = lib.func
        x = lib.ones(3)
        if case == "argnums_dup":      # the same argument's gradient twice, before
            f.grad(lambda a, b: (a * b).sum(), argnums=(1, -1))(x, x)
        elif case == "cotangent_list_for_tuple":   # was accepted
            f.vjp(lambda a: (a, a * 2), x)[1]([lib.ones(3), lib.ones(3)])
        else:
            f.vmap(lambda r: r, out_dims=2)(lib.ones(2, 3))
    a, b = _error(run, torch), _error(run, tg)
    assert a is not None and b is not None and a[0] == b[0]
    if case == "argnums_dup":
        assert a == b


def test_global_module_hooks_run_before_each_modules_own():
    def run(lib):
        mm = lib.nn.modules.module
        log = []
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        handles = [
            mm.register_module_forward_pre_hook(lambda m, a: log.append(("pre", type(m).__name__))),
            mm.register_module_forward_hook(lambda m, a, o: o * 2 if isinstance(m, lib.nn.Tanh)
                                            else None),
            mm.register_module_full_backward_pre_hook(lambda m, go: log.append(("bpre",
                                                                                type(m).__name__))),
            mm.register_module_full_backward_hook(lambda m, gi, go: (gi[0] * 10,)),
        ]
        tanh = lib.nn.Tanh()
        tanh.register_forward_hook(lambda m, a, o: o + 1)     # sees the global hook's output
        try:
            out = lib.nn.Sequential(tanh, lib.nn.Sigmoid())(x)
            out.sum().backward()
        finally:
            for h in handles:
                h.remove()
        after = lib.nn.Tanh()(x.detach())
        return log, out.tolist(), x.grad.tolist(), after.tolist()
    a, b = _both(run)
    assert a[0] == b[0]
    for u, v in zip(a[1:], b[1:]):
        np.testing.assert_allclose(v, u, rtol=1e-6)


@pytest.mark.parametrize("form", ["norm_except_dim", "weight_norm", "parametrizations"])
def test_weight_norm_of_a_vector_is_per_entry(form):
    # norm_except_dim of a 1-d tensor took the norm of the whole vector (an empty dim tuple
    # reduces everything): weight_norm(name="bias") got one g instead of one per entry.
    def run(lib):
        if form == "norm_except_dim":
            v = lib.tensor([0.3, -0.4, 0.1], dtype=lib.float64, requires_grad=True)
            out = lib.norm_except_dim(v, 2, 0)
            out.sum().backward()
            return out.detach().numpy(), v.grad.numpy()
        m = lib.nn.Linear(3, 2)
        with lib.no_grad():
            m.bias.copy_(lib.tensor([0.1, -0.2]))
        if form == "weight_norm":
            lib.nn.utils.weight_norm(m, name="bias")
            g = m.bias_g
        else:
            lib.nn.utils.parametrizations.weight_norm(m, name="bias")
            g = m.parametrizations.bias.original0
        m(lib.ones(1, 3)).sum().backward()
        return g.detach().numpy(), g.grad.numpy()
    with warnings.catch_warnings():     # (the hook-based form is deprecated, with a warning)
        warnings.simplefilter("ignore", FutureWarning)
        a, b = _both(run)
    for u, v in zip(a, b):
        assert u.shape == v.shape
        np.testing.assert_allclose(v, u, rtol=1e-6, atol=1e-7)


def test_function_mark_dirty_counts_one_more_version():
    def run(lib):
        class AddOne(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        x = a * 1
        v0 = x._version
        AddOne.apply(x)
        plain = lib.tensor([1.0, 2.0])
        AddOne.apply(plain)
        return x._version - v0, plain._version
    a, b = _both(run)
    assert a == b


@pytest.mark.parametrize("in_dims, out_dims", [
    (0, {"a": 1, "b": 0}),                  # out_dims as a dict, like the output (TypeError)
    ([0], 0),                               # in_dims must be a tuple (was read as one)
    (0, [1, 0]),                            # a list of out_dims for a dict output
    (0, 1.5),
    (({"a": 0},), 0),                       # a dict of in_dims for a tensor input
])
def test_vmap_in_dims_and_out_dims_structures(in_dims, out_dims):
    def run(lib):
        out = lib.func.vmap(lambda r: {"a": r * 2, "b": r.sum()}, in_dims=in_dims,
                            out_dims=out_dims)(lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, 0.0]]))
        return {k: v.tolist() for k, v in out.items()}
    a, b = _error(run, torch), _error(run, tg)
    if a is None:
        assert _both(run)[0] == _both(run)[1]
    else:
        assert b is not None and a[0] == b[0]


@pytest.mark.parametrize("body", ["prod", "grad_prod", "hessian_sigmoid_prod", "plain_method",
                                  "grad_plain_method"])
def test_vmap_prod_and_plain_tensor_methods_of_mapped_values(body):
    # vmap(torch.prod) raised TypeError (prod was batched with a tuple of dims); a plain
    # tensor's method given a mapped value (M.mul(a)) fell back to a per-sample loop that still
    # ran inside the level, and raised again under grad.
    def run(lib):
        f = lib.func
        m = lib.tensor([[1.0, 2.0, 0.5], [-1.0, 0.3, 2.0]], dtype=lib.float64)
        a = lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=lib.float64)
        make = {"prod": lambda: f.vmap(lib.prod)(a),
                "grad_prod": lambda: f.vmap(f.grad(lambda r: r.prod()))(a),
                "hessian_sigmoid_prod": lambda: f.hessian(lambda r: r.sigmoid().prod())(a[0]),
                "plain_method": lambda: f.vmap(lambda r: m.mul(r).amax(0))(a),
                "grad_plain_method": lambda: f.vmap(f.grad(lambda r: m.mul(r).min(1).values
                                                            .sum()))(a)}[body]
        return make().numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        a = run(torch)
    np.testing.assert_allclose(run(tg), a, rtol=1e-12, atol=1e-15)


_SINGULAR = [[[0.5, -1.0], [-1.0, 2.0]], [[2.0, 1.0], [0.5, 3.0]]]   # one singular, one not


@pytest.mark.parametrize("how", ["backward", "create_graph", "second", "func_grad"])
def test_det_gradient_at_a_singular_matrix(how):
    # The backward inverted A: LinAlgError at a singular matrix, where PyTorch returns zeros
    # first-order and the adjugate under create_graph (and inside torch.func transforms).
    def run(lib):
        a = lib.tensor(_SINGULAR, dtype=lib.float64, requires_grad=True)
        if how == "backward":
            lib.linalg.det(a).sum().backward()
            return a.grad.numpy()
        if how == "func_grad":
            return lib.func.grad(lambda m: lib.linalg.det(m).sum())(a.detach()).numpy()
        g, = lib.autograd.grad(lib.linalg.det(a).sum(), a, create_graph=True)
        if how == "create_graph":
            return g.detach().numpy()
        h, = lib.autograd.grad((g * g).sum(), a)
        return h.numpy()
    a, b = _both(run)
    np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("layer", ["BatchNorm1d", "BatchNorm1d_eval", "GroupNorm",
                                   "InstanceNorm1d"])
def test_vmap_over_stacked_normalization_layers(layer):
    # The layers called their functions by a private name that vmap's batching never saw: the
    # stacked (2, C) parameters reached the kernel whole (RuntimeError).
    def run(lib):
        make = {"BatchNorm1d": lambda: lib.nn.BatchNorm1d(3),
                "BatchNorm1d_eval": lambda: lib.nn.BatchNorm1d(3).eval(),
                "GroupNorm": lambda: lib.nn.GroupNorm(1, 3),
                "InstanceNorm1d": lambda: lib.nn.InstanceNorm1d(3, affine=True)}[layer]
        models = [make(), make()]
        with lib.no_grad():
            for k, m in enumerate(models):
                for p in m.parameters():
                    p.copy_(lib.linspace(0.5, 1.5, p.numel()) * (k + 1))
        params, buffers = lib.func.stack_module_state(models)
        base = copy.deepcopy(models[0]).to("meta")
        x = lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
        if layer == "InstanceNorm1d":
            x = x.unsqueeze(-1).expand(2, 3, 4) * lib.linspace(0.5, 2.0, 4)
        out = lib.func.vmap(lambda p, b: lib.func.functional_call(base, (p, b), (x,)))(params,
                                                                                     buffers)
        return out.detach().numpy()
    a, b = _both(run)
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["dict_output", "returns_tensor", "pre_returns_tensor",
                                  "removed_before_backward"])
def test_full_backward_hooks_as_pytorch_runs_them(case):
    def run(lib):
        log = []

        class DictOut(lib.nn.Module):
            def forward(self, a):
                return {"x": a * 2}
        m = DictOut() if case == "dict_output" else lib.nn.Tanh()
        hook = {"returns_tensor": lambda mod, gi, go: gi[0] * 2,    # a tensor: read as rows
                "pre_returns_tensor": None}.get(case, lambda mod, gi, go: log.append(len(gi)))
        if hook is not None:
            handle = m.register_full_backward_hook(hook)
        else:
            handle = m.register_full_backward_pre_hook(lambda mod, go: go[0] * 2)
        a = lib.tensor([0.5, 1.0], requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = m(a)
        log += [str(w.message)[:40] for w in caught]
        if case == "removed_before_backward":   # registered at the call: it still runs
            handle.remove()
        (out["x"] if case == "dict_output" else out).sum().backward()
        return log, a.grad.tolist()
    a, b = _error(run, torch), _error(run, tg)
    if a is not None:
        assert b is not None and a[0] == b[0] and a[1].split(",")[0] == b[1].split(",")[0]
        return
    (la, ga), (lb, gb) = _both(run)
    assert la == lb
    np.testing.assert_allclose(gb, ga, rtol=1e-6)


@pytest.mark.parametrize("case", ["grad_none_argument", "jacrev_complex", "jacfwd_complex",
                                  "jvp_int_primal", "jvp_int_tangent"])
def test_func_input_refusals(case):
    # jacrev of a complex input returned a value PyTorch refuses; the others raised another type.
    def run(lib):
        f = lib.func
        x = lib.ones(3)
        {"grad_none_argument": lambda: f.grad(lambda a, b: a.sum(), argnums=1)(x, None),
         "jacrev_complex": lambda: f.jacrev(lambda a: a * 2)(x.to(lib.complex64)),
         "jacfwd_complex": lambda: f.jacfwd(lambda a: a * 2)(x.to(lib.complex64)),
         "jvp_int_primal": lambda: f.jvp(lambda a: a, (lib.tensor([1, 2]),),
                                         (lib.tensor([1, 1]),)),
         "jvp_int_tangent": lambda: f.jvp(lambda a: a, (x,), (lib.tensor([1, 1, 1]),))}[case]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = _error(run, torch)
    assert a is not None and a == _error(run, tg)
