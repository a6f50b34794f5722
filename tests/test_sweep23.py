"""Sweep 23: the autograd API surface (custom Functions, autograd.grad/backward options,
torch.func transforms, hooks) against PyTorch's own test cases; each checked against torch."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _close(want, got, rtol=1e-6, atol=1e-7):
    assert str(got.dtype) == str(want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=rtol, atol=atol)


# -- custom autograd.Function under vmap -------------------------------------------------------

def _sin_function(lib, **attrs):
    class Sin(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x.sin()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x.cos()
    for name, value in attrs.items():
        setattr(Sin, name, staticmethod(value) if callable(value) else value)
    return Sin


X = [[1., 2.], [3., 4.]]


def test_vmap_of_grad_through_a_generated_rule_is_the_per_sample_gradient():
    # was SILENT: the forward ran on BatchedTensors outside the tape and grad gave zeros
    def per_sample_grad(lib):
        f = _sin_function(lib, generate_vmap_rule=True)
        return lib.vmap(lib.func.grad(lambda t: f.apply(t).sum()))(lib.tensor(X, dtype=lib.float64))
    _close(per_sample_grad(torch), per_sample_grad(tapegrad))


def test_jacrev_and_vmap_through_a_generated_rule():
    for lib in (torch, tapegrad):
        f = _sin_function(lib, generate_vmap_rule=True)
        x = lib.tensor(X[0], dtype=lib.float64)
        if lib is torch:
            want = (lib.func.jacrev(f.apply)(x), lib.vmap(f.apply)(lib.tensor(X)))
        else:
            got = (lib.func.jacrev(f.apply)(x), lib.vmap(f.apply)(lib.tensor(X)))
    for w, g in zip(want, got):
        _close(w, g)


def test_a_vmap_staticmethod_is_the_batching_rule_and_keeps_the_gradient():
    def run(lib):
        calls = []

        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(x, k):
                return x ** 3 * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(inputs[0])
                ctx.k = inputs[1]

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return 3 * x ** 2 * g * ctx.k, None

            @staticmethod
            def vmap(info, in_dims, x, k):
                # (in_dims[0] is where this library keeps the batch dim: PyTorch leaves it
                # where vmap's in_dims put it, tapegrad moves it to 0; both are honoured)
                calls.append((info.batch_size, info.randomness, in_dims[1]))
                return Cube.apply(x, k), in_dims[0]
        x = lib.tensor(X, dtype=lib.float64)
        values = lib.vmap(lambda t: Cube.apply(t, 2.0), in_dims=1)(x)
        grads = lib.vmap(lib.func.grad(lambda t: Cube.apply(t, 2.0).sum()))(x)
        return values, grads, calls
    want, got = run(torch), run(tapegrad)
    _close(want[0], got[0])
    _close(want[1], got[1])
    assert want[2] == got[2]


def test_vmap_refuses_a_function_without_a_rule_as_torch():
    for lib in (torch, tapegrad):
        with pytest.raises(RuntimeError, match="does not have vmap support"):
            lib.vmap(_sin_function(lib).apply)(lib.ones(2, 2))
        with pytest.raises(RuntimeError, match="has both generate_vmap_rule=True and an "
                                               "overridden vmap staticmethod"):
            lib.vmap(_sin_function(lib, generate_vmap_rule=True,
                                   vmap=lambda info, in_dims, x: (x, 0)).apply)(lib.ones(2, 2))


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_transforms_refuse_a_function_without_setup_context_as_torch():
    for lib in (torch, tapegrad):
        class Old(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x + 1

            @staticmethod
            def backward(ctx, g):
                return g
        for transform in (lib.vmap(Old.apply),
                          lib.func.grad(lambda x: Old.apply(x).sum()),
                          lib.func.jacrev(Old.apply),
                          lambda x: lib.func.jvp(Old.apply, (x,), (x,))):
            # (tapegrad computed under grad/jacrev/jvp, PyTorch refuses in every transform)
            with pytest.raises(RuntimeError, match="must override the setup_context staticmethod"):
                transform(lib.ones(3, 2))
        x = lib.ones(2, requires_grad=True)
        Old.apply(x).sum().backward()           # (outside the transforms it is fine)
        np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])


# -- forward AD: a primal stays differentiable with respect to the caller's tensors -----------

def _primal_and_tangent_loss(lib):
    x = lib.tensor([1., 2.], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([3., 4.], dtype=lib.float64, requires_grad=True)
    fw = lib.autograd.forward_ad
    with fw.dual_level():
        dual = fw.make_dual(x, lib.tensor([1., 0.], dtype=lib.float64))
        primal, tangent = fw.unpack_dual(dual ** 3 * w)
        own_primal, _ = fw.unpack_dual(fw.make_dual(lib.ones(2, dtype=lib.float64),
                                                    lib.ones(2, dtype=lib.float64)) * 2)
        flags = (primal.requires_grad, own_primal.requires_grad,
                 fw.unpack_dual(dual).primal.requires_grad)
        ((primal + tangent) * x).sum().backward()
    return x.grad, w.grad, flags


# (torch's first dual_level imports decompositions that call the deprecated torch.jit.script)
@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_unpack_dual_primal_keeps_the_gradient_of_the_callers_tensors():
    # was SILENT: the primal was detached, so a loss built from it lost x's and w's gradient
    want, got = _primal_and_tangent_loss(torch), _primal_and_tangent_loss(tapegrad)
    _close(want[0], got[0])
    _close(want[1], got[1])
    assert want[2] == got[2] == (True, False, True)


# -- forward AD through tapegrad's own ops written as Functions ------------------------------

NATIVE_FUNCTION_OPS = {
    "cumsum": lambda lib, x: x.cumsum(1),
    "cumprod": lambda lib, x: x.cumprod(1),
    "logcumsumexp": lambda lib, x: x.logcumsumexp(1),
    "nansum": lambda lib, x: x.nansum(),
    "log10": lambda lib, x: x.log10(),
    "asinh": lambda lib, x: x.asinh(),
    "tan": lambda lib, x: x.tan(),
    "qr": lambda lib, x: lib.linalg.qr(x.t())[1],
    "cholesky": lambda lib, x: lib.linalg.cholesky(x @ x.t() + lib.eye(2, dtype=x.dtype)),
}


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
@pytest.mark.parametrize("name", sorted(NATIVE_FUNCTION_OPS))
def test_forward_ad_through_ops_written_as_functions(name):
    # were NotImplementedError ("You must implement the jvp function"), as for a user's Function
    # without jvp; logcumsumexp's own jvp: the generic fallback gives NaN there, as PyTorch's
    # double backward at a zero cotangent does
    rng = np.random.RandomState(0)
    primal, tangent = rng.uniform(0.2, 0.9, (2, 3)), rng.uniform(-1, 1, (2, 3))

    def run(lib):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            dual = fw.make_dual(lib.tensor(primal), lib.tensor(tangent))
            return fw.unpack_dual(NATIVE_FUNCTION_OPS[name](lib, dual))
    want, got = run(torch), run(tapegrad)
    _close(want.primal, got.primal)
    _close(want.tangent, got.tangent)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_logcumsumexp_tangent_does_not_overflow():
    def run(lib):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            x = lib.tensor([[800., -900., 1.], [0., 0., 0.]], dtype=lib.float64)
            t = lib.tensor([[1., -2., 3.], [0., 1., -1.]], dtype=lib.float64)
            real = fw.unpack_dual(fw.make_dual(x, t).logcumsumexp(1)).tangent
            z = fw.make_dual(x[1:].to(lib.complex128), t[1:].to(lib.complex128))
            return real, fw.unpack_dual(z.logcumsumexp(1)).tangent
    for want, got in zip(run(torch), run(tapegrad)):
        _close(want, got)


def test_a_users_function_without_jvp_still_refuses_forward_ad():
    for lib in (torch, tapegrad):
        class NoJvp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            dual = fw.make_dual(lib.ones(2), lib.ones(2))
            with pytest.raises(NotImplementedError, match="must implement the jvp function"):
                NoJvp.apply(dual)


# -- torch.func: aux outputs and Python values returned whole ----------------------------------

def _aux_flags(lib):
    x = lib.tensor([1., 2.], dtype=lib.float64)
    one = lib.tensor([1., 1.], dtype=lib.float64)
    aux = [lib.func.vjp(lambda t: (t.exp(), t.sum()), x, has_aux=True)[2],
           lib.func.jvp(lambda t: (t.exp(), t * 2), (x,), (one,), has_aux=True)[2],
           lib.func.jacrev(lambda t: (t ** 2, t.sum()), has_aux=True)(x)[1],
           lib.func.jacfwd(lambda t: (t ** 2, {"s": t.sum()}), has_aux=True)(x)[1]["s"],
           lib.func.grad(lambda t: ((t ** 2).sum(), t.cos()), has_aux=True)(x)[1]]
    w = lib.tensor([3., 4.], dtype=lib.float64, requires_grad=True)
    aux.append(lib.func.vjp(lambda t: (t.exp(), t * w), x, has_aux=True)[2])
    return aux


def test_aux_outputs_do_not_require_grad_through_the_transforms_own_inputs():
    # vjp/jvp/jacrev/jacfwd handed aux back attached to their private leaves
    # (requires_grad=True); grad already finished it as PyTorch unwraps it
    for want, got in zip(_aux_flags(torch), _aux_flags(tapegrad)):
        assert got.requires_grad == want.requires_grad
        _close(want, got)


def test_vmap_returns_a_python_value_whole_where_out_dims_is_none():
    for randomness in ("error", "different"):
        def run(lib):
            return lib.vmap(lambda x: (x * 2, 5.0, "a"), out_dims=(0, None, None),
                            randomness=randomness)(lib.ones(3))
        want, got = run(torch), run(tapegrad)
        _close(want[0], got[0])
        assert got[1:] == want[1:] == (5.0, "a")
    for lib in (torch, tapegrad):
        with pytest.raises(ValueError, match="must only return Tensors"):
            lib.vmap(lambda x: (x * 2, 5.0))(lib.ones(3))


# -- numpy() under no_grad, as an autograd.Function's forward uses it -------------------------

def test_numpy_of_a_tensor_that_requires_grad_is_refused_only_in_grad_mode():
    for lib in (torch, tapegrad):
        x = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="Can't call numpy"):
            x.numpy()
        with pytest.raises(RuntimeError, match="Can't call numpy"):
            np.asarray(x)
        with lib.no_grad():
            np.testing.assert_array_equal(x.numpy(), [1.0, 1.0])
            np.testing.assert_array_equal(np.asarray(x * 2), [2.0, 2.0])


def _numpy_sin(lib):
    """A Function computing in numpy, its backward too (not differentiable), with a jvp."""
    class NumpySin(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return lib.tensor(np.sin(x.numpy()))

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.save_for_forward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return lib.tensor(np.cos(x.numpy()) * g.numpy())

        @staticmethod
        def jvp(ctx, t):
            x, = ctx.saved_tensors
            return t * x.cos()
    return NumpySin


def test_a_numpy_function_runs_on_inputs_that_require_grad():
    # forward called numpy() under no_grad: tapegrad refused where PyTorch computes
    def run(lib):
        x = lib.tensor([0.5, 1.0], dtype=lib.float64, requires_grad=True)
        y = _numpy_sin(lib).apply(x)
        y.backward(lib.tensor([1.0, 2.0], dtype=lib.float64))
        return y, x.grad
    for want, got in zip(run(torch), run(tapegrad)):
        _close(want, got)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_func_jvp_uses_a_functions_jvp_staticmethod():
    # was SILENT: func.jvp differentiated the (numpy, non-differentiable) backward: zeros
    def run(lib):
        x = lib.tensor([0.5, 1.0], dtype=lib.float64)
        t = lib.tensor([1.0, 2.0], dtype=lib.float64)
        return lib.func.jvp(_numpy_sin(lib).apply, (x,), (t,))
    for want, got in zip(run(torch), run(tapegrad)):
        _close(want, got)


def _mul_and_exp_(lib):
    class Mul(lib.autograd.Function):
        @staticmethod
        def forward(x, y):
            return lib.tensor(x.numpy() * y.numpy())

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)
            ctx.save_for_forward(*inputs)

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return Mul.apply(g, y), Mul.apply(g, x)

        @staticmethod
        def jvp(ctx, x_tangent, y_tangent):
            x, y = ctx.saved_tensors
            return x_tangent * y + y_tangent * x     # (PyTorch gives y zeros, not None)

    class Exp_(lib.autograd.Function):
        @staticmethod
        def forward(x):
            np.exp(x.numpy(), x.numpy())
            return x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.mark_dirty(inputs[0])
            ctx.save_for_backward(output)
            ctx.save_for_forward(output)

        @staticmethod
        def backward(ctx, g):
            output, = ctx.saved_tensors
            return Mul.apply(g, output)

        @staticmethod
        def jvp(ctx, t):
            output, = ctx.saved_tensors
            # (applied inside a jvp: plain values, no tangents; in place, as PyTorch requires
            # of the jvp of a Function that writes its input)
            return t.copy_(Mul.apply(t, output))
    return Mul, Exp_


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_function_jvps_get_zeros_for_inputs_without_tangents_and_see_inputs_before_forward():
    # Mul.jvp got None for y (TypeError); Exp_'s input tangent was taken after forward had
    # written it in place and rebased it onto Exp_'s own record (SILENT: exp(x) counted twice);
    # a Function applied inside a jvp asked for tangents again (RecursionError)
    def run(lib):
        mul, exp_ = _mul_and_exp_(lib)
        x = lib.tensor([0.5, 1.0], dtype=lib.float64)
        y = lib.tensor([3.0, -2.0], dtype=lib.float64)
        t = lib.tensor([1.0, 0.5], dtype=lib.float64)
        return (lib.func.jvp(lambda a: mul.apply(a, y), (x,), (t,)) +
                lib.func.jvp(lambda a: exp_.apply(a.clone()), (x,), (t,)))
    for want, got in zip(run(torch), run(tapegrad)):
        _close(want, got)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_jacfwd_and_vmap_of_jvp_use_a_functions_jvp_staticmethod():
    # were SILENT zeros (the backward, detached, was differentiated instead)
    def run(lib):
        class Sin(lib.autograd.Function):
            generate_vmap_rule = True

            @staticmethod
            def forward(x):
                return x.sin()

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(inputs[0])
                ctx.save_for_forward(inputs[0])

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return (x.cos() * g).detach()

            @staticmethod
            def jvp(ctx, t):
                x, = ctx.saved_tensors
                return t * x.cos()
        x = lib.tensor([0.5, 1.0], dtype=lib.float64)
        eye = lib.eye(2, dtype=lib.float64)
        return (lib.func.jacfwd(Sin.apply)(x),
                lib.vmap(lambda p, t: lib.func.jvp(Sin.apply, (p,), (t,))[1])(
                    lib.stack([x, 2 * x]), eye))
    for want, got in zip(run(torch), run(tapegrad)):
        _close(want, got)


COMPOSED = {
    "grad(forward_ad)": lambda lib, f, x, v: lib.func.grad(
        lambda z: _forward_ad_tangent(lib, f, z, v).sum())(x),
    "grad(jvp)": lambda lib, f, x, v: lib.func.grad(
        lambda z: lib.func.jvp(f, (z,), (v,))[1].sum())(x),
    "jacrev(jacfwd)": lambda lib, f, x, v: lib.func.jacrev(lib.func.jacfwd(f))(x),
    "hessian": lambda lib, f, x, v: lib.func.hessian(lambda z: f(z).sum())(x),
    # nested forward levels: the inner one by the double-backward trick, whose dummy cotangent
    # was 0, where logcumsumexp's backward differentiates log|u| (NaN)
    "jacfwd(jacfwd)": lambda lib, f, x, v: lib.func.jacfwd(lib.func.jacfwd(f))(x),
    "jvp(jvp)": lambda lib, f, x, v: lib.func.jvp(
        lambda z: lib.func.jvp(f, (z,), (v,))[1], (x,), (2 * v,))[1],
}


def _forward_ad_tangent(lib, f, z, v):
    fw = lib.autograd.forward_ad
    with fw.dual_level():
        return fw.unpack_dual(f(fw.make_dual(z, v))).tangent


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
@pytest.mark.parametrize("op", ["sin_prod", "logcumsumexp"])
@pytest.mark.parametrize("how", sorted(COMPOSED))
def test_tangents_stay_differentiable_inside_func_transforms(how, op):
    # were SILENT: a tangent taken inside func.grad had no graph (zeros), and logcumsumexp's
    # tangent came from its jvp run without recording (wrong second derivatives)
    def run(lib):
        f = (lambda z: z.sin() * z.prod()) if op == "sin_prod" else \
            (lambda z: z.logcumsumexp(0) * z)
        x = lib.tensor([0.3, 0.7, -0.2, 1.1], dtype=lib.float64)
        v = lib.tensor([1.0, -0.5, 0.25, 2.0], dtype=lib.float64)
        return COMPOSED[how](lib, f, x, v)
    _close(run(torch), run(tapegrad), rtol=1e-9, atol=1e-12)


def test_setup_context_sees_forwards_default_arguments():
    # ValueError (setup_context's inputs lacked the defaulted idx) and TypeError (vmap's)
    def run(lib):
        class Pick(lib.autograd.Function):
            @staticmethod
            def forward(x, idx=(2,)):
                return x[idx]

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, idx = inputs
                ctx.x_shape, ctx.idx = x.shape, idx

            @staticmethod
            def backward(ctx, g):
                result = g.new_zeros(ctx.x_shape)
                result[ctx.idx] = g
                return result, None

            @staticmethod
            def vmap(info, in_dims, x, idx):
                return Pick.apply(x.movedim(in_dims[0], 1), idx), 0
        x = lib.arange(12.0, dtype=lib.float64).reshape(4, 3).requires_grad_()
        y = Pick.apply(x)
        y.sum().backward()
        return y, x.grad, lib.vmap(Pick.apply)(x.detach())
    for want, got in zip(run(torch), run(tapegrad)):
        _close(want, got)


def test_vjp_and_jacrev_refuse_integer_outputs_as_torch():
    # tapegrad returned zero rows (jacrev in float, of an int64 output)
    for lib in (torch, tapegrad):
        x = lib.tensor([3., 1., 2.])
        for call in (lambda: lib.func.vjp(lambda t: (t * 2, t.argsort()), x),
                     lambda: lib.func.jacrev(lambda t: t.argsort())(x),
                     lambda: lib.func.jacrev(lambda t: (t * 2, t.argsort()))(x)):
            with pytest.raises(RuntimeError, match="All outputs of f must be floating-point or "
                                                   "complex Tensors, got Tensor with dtype "):
                call()
        _close(torch.func.jacfwd(lambda t: t.argsort())(torch.tensor([3., 1., 2.])),
               tapegrad.func.jacfwd(lambda t: t.argsort())(tapegrad.tensor([3., 1., 2.])))
