"""PyTorch's undefined gradient: when every backward feeding a node returned None for it (a
custom Function that drops an input's gradient), PyTorch's engine still runs the node.  A
built-in node passes the undefined gradient on; a custom Function upstream is called with zeros
(materialize_grads) and what it returns flows on; a tensor hook gets None and may not replace
it; a leaf's .grad stays None.  tapegrad's sweeps skipped such nodes, so a Function upstream
never ran and its input's .grad stayed None where PyTorch's is zeros (an optimizer then treats
the parameter as unused: no weight decay, no momentum step)."""
import numpy as np
import pytest

import tapegrad as tg


def _functions(lib, calls):
    class Drop(lib.autograd.Function):
        """Passes its input through and drops its gradient."""
        @staticmethod
        def forward(ctx, a):
            return a.clone()

        @staticmethod
        def backward(ctx, g):
            return None

    class Scale(lib.autograd.Function):
        """2 x, whose backward notes what it got."""
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            calls.append(None if g is None else g.tolist())
            return g * 2

    return Drop, Scale


def _run(lib, program, **backward_kwargs):
    calls, hooks = [], []
    drop, scale = _functions(lib, calls)
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    program(lib, x, drop, scale, hooks)
    return (None if x.grad is None else x.grad.tolist()), calls, hooks


def _through_function(lib, x, drop, scale, hooks):
    drop.apply(scale.apply(x)).sum().backward()


def _through_builtin_then_function(lib, x, drop, scale, hooks):
    z = scale.apply(x) * 3
    z.register_hook(lambda g: hooks.append(g))
    drop.apply(z).sum().backward()


def _builtin_only(lib, x, drop, scale, hooks):
    x.register_hook(lambda g: hooks.append(g))
    drop.apply(x * 2).sum().backward()


def _one_path_defined(lib, x, drop, scale, hooks):
    (drop.apply(scale.apply(x)).sum() + (x * 3).sum()).backward()


def _create_graph(lib, x, drop, scale, hooks):
    drop.apply(scale.apply(x)).sum().backward(create_graph=True)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
@pytest.mark.parametrize("program", [_through_function, _through_builtin_then_function,
                                     _builtin_only, _one_path_defined, _create_graph])
def test_undefined_gradient_runs_functions_upstream_as_torch(program):
    torch = pytest.importorskip("torch")
    assert _run(tg, program) == _run(torch, program)


def test_undefined_gradient_values():
    # (the same without torch: the Function upstream gets zeros, x.grad is zeros, a hook None)
    assert _run(tg, _through_function) == ([0.0, 0.0], [[0.0, 0.0]], [])
    assert _run(tg, _through_builtin_then_function) == ([0.0, 0.0], [[0.0, 0.0]], [None])
    assert _run(tg, _builtin_only) == (None, [], [None])
    assert _run(tg, _one_path_defined) == ([3.0, 3.0], [[0.0, 0.0]], [])


def test_autograd_grad_through_an_undefined_gradient():
    calls = []
    drop, scale = _functions(tg, calls)
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    g, = tg.autograd.grad(drop.apply(scale.apply(x)).sum(), [x])
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0])
    y = scale.apply(x)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        tg.autograd.grad(drop.apply(y).sum(), [y])


def test_hook_may_not_replace_an_undefined_gradient():
    calls = []
    drop, scale = _functions(tg, calls)
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    z = scale.apply(x) * 3
    z.register_hook(lambda g: tg.ones(2))
    with pytest.raises(RuntimeError, match="can't replace a None gradient with a non-None value"):
        drop.apply(z).sum().backward()


def test_optimizer_steps_a_parameter_whose_gradient_was_dropped():
    # the visible effect in a training loop: the parameter's .grad is zeros, so SGD's weight
    # decay still moves it (as PyTorch's); with .grad None the step skipped it
    calls = []
    drop, scale = _functions(tg, calls)
    w = tg.tensor([1.0, -2.0], requires_grad=True)
    opt = tg.optim.SGD([w], lr=0.1, weight_decay=0.5)
    drop.apply(scale.apply(w)).sum().backward()
    opt.step()
    np.testing.assert_allclose(w.detach().numpy(), [0.95, -1.9])
