"""Autograd-internals scripts (custom Functions, hooks, anomaly mode, in-place errors, grad_fn
inspection): behaviours found by running tutorial-style scripts under tapegrad and PyTorch.

Each scenario runs with L = tapegrad and L = torch (the oracle, skipped without it) and compares
values, gradients, error types and messages.
"""
from __future__ import annotations

import pytest

import tapegrad as tg


def both(scenario):
    """scenario(L) for tapegrad and torch; returns (tapegrad's result, torch's)."""
    torch = pytest.importorskip("torch")
    return scenario(tg), scenario(torch)


def error_of(fn):
    try:
        fn()
    except Exception as e:                      # noqa: BLE001 (the type is what we compare)
        return type(e).__name__, str(e)
    return None


# -- an in-place op whose operand is self: PyTorch saved `other`, which the write overwrites ------

@pytest.mark.parametrize("write", [
    lambda t: t.mul_(t),
    lambda t: t.__imul__(t),
    lambda t: t.div_(t),
    lambda t: t.__itruediv__(t),
])
def test_inplace_mul_div_by_itself_refuses_backward(write):
    def scenario(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        y += 1                                  # version 1 before the write under test
        write(y)
        return error_of(lambda: y.sum().backward()), x.grad

    mine, theirs = both(scenario)
    assert mine[0] == theirs[0]
    assert mine[0][0] == "RuntimeError" and "is at version 2; expected version 1" in mine[0][1]
    assert mine[1] is None and theirs[1] is None


def test_inplace_add_sub_by_itself_still_differentiates():
    def scenario(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        y.add_(y)
        z = x * 1
        z.sub_(z, alpha=0.5)
        (y.sum() + z.sum()).backward()
        return x.grad.tolist()

    mine, theirs = both(scenario)
    assert mine == theirs == [6.5, 6.5]


def test_inplace_mul_by_another_tensor_is_unchanged():
    def scenario(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        w = L.tensor([3.0, -1.0], requires_grad=True)
        y = x * 1
        y.mul_(w)
        y.div_(w * 2)
        y.sum().backward()
        return x.grad.tolist(), w.grad.tolist()

    mine, theirs = both(scenario)
    assert mine == theirs


# -- the in-place error names a version-guarded tensor as it is now ------------------------------

@pytest.mark.parametrize("op", ["gather", "masked_select"])
def test_inplace_error_names_the_guarded_tensor_and_its_current_node(op):
    def scenario(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        if op == "gather":
            out = y.gather(0, L.tensor([0, 2]))
            y.add_(1)
        else:
            out = y.masked_select(L.tensor([True, False, True]))
            y.mul_(2)
        return error_of(lambda: out.sum().backward())

    mine, theirs = both(scenario)
    assert mine == theirs
    assert "[torch.FloatTensor [3]]" in mine[1]


# -- anomaly mode ----------------------------------------------------------------------------------

def test_detect_anomaly_is_not_a_decorator():
    def scenario(L):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            err = error_of(lambda: L.autograd.detect_anomaly()(lambda: 1))
            with L.autograd.detect_anomaly():
                inside = L.is_anomaly_enabled()
        return err, inside, L.is_anomaly_enabled()

    mine, theirs = both(scenario)
    assert mine == theirs
    assert mine[0] == ("TypeError", "'detect_anomaly' object is not callable")


# -- saved-tensor hooks ------------------------------------------------------------------------

def test_unpack_hook_returning_another_shape_fails_as_the_backward_formula_does():
    def scenario(L):
        x = L.tensor([0.1, 0.2, 0.3, 0.4, 0.5], requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: L.zeros(3)):
            y = x.sin().sum()
        return error_of(lambda: y.backward())

    mine, theirs = both(scenario)
    assert mine == theirs
    assert mine[0] == "RuntimeError" and "size of tensor a (5)" in mine[1]


# -- GradientEdge as an input of autograd.grad / backward ------------------------------------------

def test_grad_with_respect_to_gradient_edges():
    def scenario(L):
        from_edge = L.autograd.graph.get_gradient_edge
        x = L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True)
        y = x.exp()
        z = (y * y * 3).sum()
        one = L.autograd.grad(z, from_edge(y), retain_graph=True)
        mixed = L.autograd.grad(z, [x, from_edge(y), from_edge(x)], retain_graph=True)
        a, b = x.split(1)
        piece = L.autograd.grad((a * 5 + b * b).sum(), from_edge(b))

        class Two(L.autograd.Function):
            @staticmethod
            def forward(ctx, t):
                return t * 2, t * 3

            @staticmethod
            def backward(ctx, ga, gb):
                return ga * 2 + gb * 3

        p, q = Two.apply(x)
        outs = L.autograd.grad((p * q * q).sum(), [from_edge(q), from_edge(p)],
                               create_graph=True)
        second = L.autograd.grad(outs[0].sum(), x)
        return [v for t in one + mixed + piece + outs + second for v in t.tolist()]

    mine, theirs = both(scenario)
    assert mine == pytest.approx(theirs, rel=1e-12)


def test_backward_inputs_gradient_edges():
    def scenario(L):
        from_edge = L.autograd.graph.get_gradient_edge
        x = L.tensor([1.0, 2.0], requires_grad=True)
        w = L.tensor([3.0, 4.0], requires_grad=True)
        (x * w).sum().backward(inputs=[from_edge(x)])
        first = (x.grad.tolist(), w.grad)
        L.autograd.backward((x * w * w).sum(), inputs=from_edge(w))
        return first, w.grad.tolist(), x.grad.tolist()

    mine, theirs = both(scenario)
    assert mine == theirs


# -- custom Function jvp: ctx.saved_tensors are the save_for_forward ones only -------------------

@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_jvp_sees_only_tensors_saved_for_forward():
    def scenario(L):
        fwAD = L.autograd.forward_ad
        seen = []

        class OnlyBackward(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.sin()

            @staticmethod
            def jvp(ctx, t):
                seen.append(("jvp", len(ctx.saved_tensors)))
                return t

            @staticmethod
            def backward(ctx, g):
                seen.append(("backward", len(ctx.saved_tensors)))
                return g

        class Both(OnlyBackward):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                ctx.save_for_forward(x, x)
                return x.sin()

        x = L.ones(2, requires_grad=True)
        with fwAD.dual_level():
            d = fwAD.make_dual(x, L.ones(2))
            OnlyBackward.apply(d).sum().backward()
            Both.apply(d).sum().backward()
        return seen

    mine, theirs = both(scenario)
    assert mine == theirs == [("jvp", 0), ("backward", 1), ("jvp", 2), ("backward", 1)]
