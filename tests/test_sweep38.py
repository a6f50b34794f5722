"""Regression tests of sweep38 (torch.autograd.functional, torch.utils.checkpoint, custom Function
saved inputs), each compared against PyTorch."""
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _pair(values, requires_grad=False, dtype="float32"):
    a = np.asarray(values, dtype=dtype)
    t = torch.tensor(a, requires_grad=requires_grad)
    g = tapegrad.tensor(a, requires_grad=requires_grad)
    return t, g


# ---- custom Function: an input returned as it is and saved stays the input when read back

def _returns_input_and_saves(lib):
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            seen.append((x.requires_grad, x.grad_fn is None, y.requires_grad))
            return g, None
    seen = []
    return F, seen


def test_function_saved_input_returned_as_is_reads_back_as_the_input():
    out = []
    for lib in (torch, tapegrad):
        F, seen = _returns_input_and_saves(lib)
        a = lib.ones(2)
        b = lib.ones(2, requires_grad=True)
        F.apply(a, b).sum().backward()
        out.append(seen[0])
    assert out[0] == out[1] == (False, True, True)


# ---- checkpoint: saved inputs (second backward, in-place writes), returned inputs

@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_input_written_in_place_after_forward_raises(use_reentrant):
    # SILENT before: the recomputation read the written input and gave a wrong gradient
    for lib in (torch, tapegrad):
        x = lib.tensor([0.3, 0.7, 1.1], requires_grad=True)
        y = x * 1
        out = lib.utils.checkpoint.checkpoint(lambda a: a.sin(), y, use_reentrant=use_reentrant)
        y.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_second_backward_without_retain_graph_raises(use_reentrant):
    grads = []
    for lib in (torch, tapegrad):
        x = lib.tensor([0.3, 0.7, 1.1], requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(lambda a: a.sin() * a, x,
                                              use_reentrant=use_reentrant)
        out.sum().backward(retain_graph=True)
        out.sum().backward()
        grads.append(x.grad.numpy())
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            out.sum().backward()
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


def test_checkpoint_non_reentrant_returned_input_is_the_input():
    res = []
    for lib in (torch, tapegrad):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = lib.tensor([4.0, 5.0, 6.0])
        o = lib.utils.checkpoint.checkpoint(lambda a, b, c: (a, b, c * 2), x, y, x,
                                            use_reentrant=False)
        (o[0].sum() * 3 + o[2].sum()).backward()
        res.append((o[0] is x, o[1] is y, o[1].requires_grad, o[2].grad_fn is None,
                    x.grad.tolist()))
    assert res[0] == res[1] == (True, True, False, False, [5.0, 5.0, 5.0])


@pytest.mark.parametrize("use_reentrant, match", [
    (False, "does not require grad"), (True, r"none of output has requires_grad=True")])
def test_checkpoint_returned_input_without_grad_backward_error(use_reentrant, match):
    # (PyTorch's reentrant variant is a custom Function: its output requires grad, and its
    # backward finds nothing to differentiate; the non-reentrant one returns the input itself)
    for lib in (torch, tapegrad):
        a = lib.ones(1, 4)
        b = lib.ones(1, 4, requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(lambda x, y: x, a, b, use_reentrant=use_reentrant)
        assert out.requires_grad is use_reentrant
        with pytest.raises(RuntimeError, match=match):
            out.sum().backward()


def test_checkpoint_context_fn_runs_forward_and_recomputation_in_its_contexts():
    import contextlib
    log = []

    @contextlib.contextmanager
    def tag(name):
        log.append(name + "+")
        yield
        log.append(name + "-")

    grads = []
    for lib in (torch, tapegrad):
        log.clear()
        x = lib.tensor([0.3, 0.7, 1.1], requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(lambda a: a.sin(), x, use_reentrant=False,
                                              context_fn=lambda: (tag("f"), tag("r")))
        assert log == ["f+", "f-"]
        out.sum().backward()
        assert log[:3] == ["f+", "f-", "r+"]
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


@pytest.mark.parametrize("kwargs, match", [
    (dict(use_reentrant=True, context_fn=lambda: (None, None)), "Passing `context_fn` or `debug`"),
    (dict(use_reentrant=True, debug=True), "Passing `context_fn` or `debug`"),
    (dict(use_reentrant=False, determinism_check="foo"), "determinism_check should be one of"),
])
def test_checkpoint_argument_errors(kwargs, match):
    for lib in (torch, tapegrad):
        x = lib.ones(3, requires_grad=True)
        with pytest.raises(ValueError, match=match):
            lib.utils.checkpoint.checkpoint(lambda a: a.sin(), x, **kwargs)


# ---- torch.autograd.functional

def test_jacobian_loop_complex_output_raises():
    for lib in (torch, tapegrad):
        x = lib.tensor([1 + 2j, 3 - 1j])
        with pytest.raises(RuntimeError, match="only for real scalar outputs but got"):
            lib.autograd.functional.jacobian(lambda a: a * 2, x)
        y = lib.tensor([1.0, 2.0])
        with pytest.raises(RuntimeError, match="only for real scalar outputs but got"):
            lib.autograd.functional.jacobian(lambda a: a * (1 + 1j), y)


def test_jacobian_forward_mode_returns_lists():
    res = []
    for lib in (torch, tapegrad):
        x, y = (lib.tensor(np.arange(6.0, dtype="float32").reshape(3, 2) / 7),
                lib.tensor(np.arange(6.0, dtype="float32").reshape(2, 3) / 5))
        with warnings.catch_warnings():     # (torch's own vmap emits a jit DeprecationWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            jac = lib.autograd.functional.jacobian(lambda a, b: ((a * a) @ b, b.sum()), (x, y),
                                                   strategy="forward-mode", vectorize=True)
        res.append(jac)
    assert type(res[1]) is type(res[0]) is list
    assert all(type(r) is list for r in res[1])
    for want_row, got_row in zip(*res):
        for want, got in zip(want_row, got_row):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-7)


# ---- checkpoint(use_reentrant=False) records the ordinary graph (saved values by recomputation)

def _lin(lib):
    lin = lib.nn.Linear(3, 2)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor([[0.1, 0.2, 0.3], [0.4, -0.5, 0.6]]))
        lin.bias.copy_(lib.tensor([0.05, -0.1]))
    return lin


def test_checkpoint_non_reentrant_closure_over_parameters_gets_gradients():
    # SILENT before: with no input requiring grad, the closure's parameters got no gradient
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype="float32")
    grads = []
    for lib in (torch, tapegrad):
        lin = _lin(lib)
        out = lib.utils.checkpoint.checkpoint(lambda a: lib.tanh(lin(a)), lib.tensor(x),
                                              use_reentrant=False)
        assert out.requires_grad
        out.pow(2).sum().backward()
        grads.append((lin.weight.grad.numpy(), lin.bias.grad.numpy()))
    for want, got in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_checkpoint_non_reentrant_create_graph_second_order():
    x = np.array([0.3, -0.7, 1.1], dtype="float64")
    res = []
    for lib in (torch, tapegrad):
        t = lib.tensor(x, requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(lambda a: (a ** 3 * a.sin()).sum(), t,
                                              use_reentrant=False)
        g, = lib.autograd.grad(out, t, create_graph=True)
        h, = lib.autograd.grad(g.sum(), t)
        res.append((g.detach().numpy(), h.numpy()))
    for want, got in zip(*res):
        np.testing.assert_allclose(got, want, rtol=1e-10)


def test_checkpoint_non_reentrant_nested_inputs_and_outputs():
    x = np.array([0.3, -0.7, 1.1], dtype="float32")
    grads = []
    for lib in (torch, tapegrad):
        t = lib.tensor(x, requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(
            lambda pair: {"y": pair[0] * pair[1], "z": [pair[0].exp()]}, [t, t * 2],
            use_reentrant=False)
        (out["y"].sum() + out["z"][0].sum()).backward()
        grads.append(t.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


@pytest.mark.parametrize("outer, inner", [(False, True), (True, False), (False, False)])
def test_checkpoint_nested_variants(outer, inner):
    x = np.array([0.3, -0.7, 1.1], dtype="float32")
    grads = []
    for lib in (torch, tapegrad):
        cp = lib.utils.checkpoint.checkpoint
        t = lib.tensor(x, requires_grad=True)
        out = cp(lambda u: cp(lambda v: (v * v).exp(), u, use_reentrant=inner).sin(), t,
                 use_reentrant=outer)
        out.sum().backward()
        grads.append(t.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


def test_checkpoint_non_reentrant_recomputation_with_other_shapes_raises():
    for lib in (torch, tapegrad):
        calls = []

        def f(a):
            calls.append(1)
            return (a.sin() if len(calls) == 1 else a[:2].sin()).sum()
        t = lib.tensor([0.3, -0.7, 1.1, 0.2], requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(f, t, use_reentrant=False)
        with pytest.raises(lib.utils.checkpoint.CheckpointError,
                           match="Recomputed values for the following tensors have different "
                                 "metadata"):
            out.backward()


def test_checkpoint_non_reentrant_keeps_no_activation_after_forward():
    import gc
    import weakref
    x = tapegrad.randn(64, requires_grad=True)
    seen = []

    def f(a):
        b = a.sin()
        seen.append(weakref.ref(b))
        return (b * b).exp()
    out = tapegrad.utils.checkpoint.checkpoint(f, x, use_reentrant=False)
    gc.collect()
    assert seen[0]() is None        # b (saved by the product) was not kept
    out.sum().backward()
    np.testing.assert_allclose(
        x.grad.numpy(),
        (np.exp(np.sin(x.detach().numpy()) ** 2) * 2 * np.sin(x.detach().numpy())
         * np.cos(x.detach().numpy())), rtol=1e-5)


# ---- grad-mode guards: clone(), decorating a class

def _modes_of_clones(lib):
    out = []
    for guard in (lib.no_grad(), lib.enable_grad(), lib.inference_mode(),
                  lib.inference_mode(False)):
        copy = guard.clone()
        with copy:
            out.append((type(copy).__name__, lib.is_grad_enabled(),
                        lib.is_inference_mode_enabled()))
    guard = lib.set_grad_enabled(False)
    copy = guard.clone()
    out.append(lib.is_grad_enabled())
    with copy:
        out.append(lib.is_grad_enabled())
    out.append(lib.is_grad_enabled())
    lib.set_grad_enabled(True)
    return out


def test_grad_mode_guards_clone():
    assert _modes_of_clones(tapegrad) == _modes_of_clones(torch)


@pytest.mark.parametrize("guard", ["no_grad", "inference_mode"])
def test_grad_mode_guard_decorating_a_class_warns(guard):
    res = []
    for lib in (torch, tapegrad):
        with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):
            @getattr(lib, guard)()
            class Scaled:
                def __init__(self, x):
                    self.y = x * 2
        made = Scaled(lib.ones(2, requires_grad=True))
        res.append((made.y.requires_grad, made.y.is_inference()))
    assert res[0] == res[1]


# ---- __torch_function__ on objects that are no Tensor (torch.overrides' Tensor-like types)

def _scalar_like(lib):
    class ScalarLike:
        def __init__(self, n, value):
            self.n, self.value = n, value

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is lib.mean:
                return float(args[0].value) / args[0].n
            if func is lib.add:
                return ("add", types == (cls,))
            if func is lib.nn.functional.relu:
                return "relu"
            return NotImplemented
    return ScalarLike


def test_torch_function_of_a_tensor_like_object_is_dispatched_to():
    res = []
    for lib in (torch, tapegrad):
        S = _scalar_like(lib)
        d = S(5, 2)
        res.append((lib.mean(d), lib.add(d, 1), lib.add(lib.ones(2), d),
                    lib.nn.functional.relu(d),
                    lib.overrides.has_torch_function((d,)),
                    lib.overrides.has_torch_function((lib.ones(1),))))
    assert res[0] == res[1] == (0.4, ("add", True), ("add", True), "relu", True, False)


def test_torch_function_all_not_implemented_raises():
    for lib in (torch, tapegrad):
        d = _scalar_like(lib)(5, 2)
        with pytest.raises(TypeError, match="Multiple dispatch failed for 'torch.sum'; all "
                                            "__torch_function__ handlers returned NotImplemented"):
            lib.sum(d)


def test_torch_function_wrapper_unwraps_and_calls():
    res = []
    for lib in (torch, tapegrad):
        class Wrapper:
            def __init__(self, t):
                self.t = t

            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                args = [a.t if isinstance(a, Wrapper) else a for a in args]
                return Wrapper(func(*args, **(kwargs or {})))
        w = lib.mul(Wrapper(lib.tensor([1.0, -2.0, 3.0])), 2)
        r = lib.nn.functional.relu(w)
        res.append((type(r).__name__, r.t.tolist()))
    assert res[0] == res[1] == ("Wrapper", [2.0, 0.0, 6.0])
