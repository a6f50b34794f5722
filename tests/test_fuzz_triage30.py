"""Regressions of the session-30 fuzz run of fuzz16 (programs 65012000-, surface 60802743-) and
of the leftovers of session 29 it fixed.

Each test compares with PyTorch (the `torch` fixture skips cleanly without it).
"""
import numpy as np
import pytest

import tapegrad as tg

NAN, INF = float("nan"), float("inf")


def _outcome(fn):
    """fn()'s value, or its exception's type and message."""
    try:
        return fn()
    except Exception as error:  # noqa: BLE001 - the type and message are compared
        return type(error), str(error)


# -- a tensor reshaped without a record: gradients reaching its node ------------------------------
# A no_grad unsqueeze_ / t_ / squeeze_ (or `.data = ` of another shape) changes the shape of a
# tensor whose node keeps its recorded output shape.  PyTorch's engine checks every gradient
# reaching the node against that shape: one that broadcasts to it is summed to it, any other is
# refused.  tapegrad let it flow on in the new shape: x.grad of x's (2, 3) came out (1, 2, 3)
# (silent), or a numpy error (seeds 65002236, 65008483).

def _reshaped_cases():
    def unsqueeze(L):
        x = L.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        y = L.sin(x)
        with L.no_grad():
            y.unsqueeze_(0)
        (y * L.tensor([[[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]]])).sum().backward()
        return tuple(x.grad.shape), x.grad.numpy()

    def data_setter(L):
        x = L.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        y = x * 2
        y.data = L.ones(1, 2, 3)
        (y * 3).sum().backward()
        return tuple(x.grad.shape), x.grad.numpy()

    def seed_of_new_shape(L):
        x = L.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        y = x * 2
        with L.no_grad():
            y.unsqueeze_(0)
        y.backward(L.full((1, 2, 3), 0.5))
        return tuple(x.grad.shape), x.grad.numpy()

    def retained_and_hooked(L):
        x = L.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        y = x * 2
        with L.no_grad():
            y.unsqueeze_(0)
        seen = []
        y.register_hook(lambda g: seen.append(tuple(g.shape)))
        y.retain_grad()
        y.sum().backward()
        return seen, tuple(y.grad.shape), tuple(x.grad.shape)

    def autograd_grad(L):
        x = L.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        y = x * 2
        with L.no_grad():
            y.unsqueeze_(0)
        g, = L.autograd.grad(y.sum(), y)
        return tuple(g.shape)

    def transposed(L):
        x = L.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        y = x * 2
        with L.no_grad():
            y.t_()
        return _outcome(lambda: (y * L.ones(3, 2)).sum().backward())

    def transposed_seed(L):
        x = L.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        y = x * 2
        with L.no_grad():
            y.t_()
        return _outcome(lambda: y.backward(L.ones(3, 2)))

    def squeezed(L):
        x = L.tensor(np.arange(6.0).reshape(1, 6), requires_grad=True)
        y = L.sin(x)
        with L.no_grad():
            y.squeeze_()
        return _outcome(lambda: (y * L.arange(6.0)).sum().backward())

    def leaf(L):    # (a leaf's gradient takes its new shape, PyTorch's AccumulateGrad)
        x = L.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        with L.no_grad():
            x.unsqueeze_(0)
        x.sum().backward()
        return tuple(x.grad.shape)

    def second_derivative(L):   # (65008483: permute's recorded VJP got the new shape)
        x = L.tensor(np.linspace(-1, 1, 24).reshape(2, 3, 4), requires_grad=True)
        y = L.sin(x.permute(2, 1, 0))
        with L.no_grad():
            y.unsqueeze_(0)
        g, = L.autograd.grad((y * y).sum(), x, create_graph=True)
        g2, = L.autograd.grad((g * g).sum(), x)
        return tuple(g.shape), g.detach().numpy(), g2.numpy()

    return {f.__name__: f for f in (unsqueeze, data_setter, seed_of_new_shape,
                                    retained_and_hooked, autograd_grad, transposed,
                                    transposed_seed, squeezed, leaf, second_derivative)}


RESHAPED = _reshaped_cases()


@pytest.mark.parametrize("case", sorted(RESHAPED))
def test_gradient_reaching_a_node_whose_output_was_reshaped_unrecorded(torch, case):
    got, want = RESHAPED[case](tg), RESHAPED[case](torch)
    if isinstance(want, tuple) and len(want) == 2 and isinstance(want[0], type):
        assert got[0] is want[0]
        assert got[1] == want[1]
        return
    assert type(got) is type(want)
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        if isinstance(w, np.ndarray):
            np.testing.assert_allclose(g, w, rtol=1e-12)
        else:
            assert g == w


# -- operands PyTorch's node saves only for their own gradient -----------------------------------
# hypot saved both operands and copysign its input whatever required grad, so a later in-place
# write into an operand whose gradient nobody asked for refused the backward (65008272);
# PyTorch saves an operand only where the gradient that reads it is wanted.

_SAVE_CASES = {
    "hypot_other_written": (lambda L, a, b: L.hypot(a, b), 0),
    "hypot_input_written": (lambda L, a, b: L.hypot(a, b), 1),
    "hypot__other_written": (lambda L, a, b: (a * 1).hypot_(b), 0),
    "copysign_input_written": (lambda L, a, b: L.copysign(a, b), 1),
    "mul_other_written": (lambda L, a, b: a * b, 0),        # (needed: both refuse)
}


@pytest.mark.parametrize("case", sorted(_SAVE_CASES))
def test_write_into_an_operand_whose_gradient_is_not_wanted(torch, case):
    op, grad_of = _SAVE_CASES[case]

    def run(L):
        a = L.tensor([0.7, -1.3, 2.1], requires_grad=grad_of == 0)
        b = L.tensor([0.4, 0.9, -1.7], requires_grad=grad_of == 1)
        out = op(L, a, b)
        with L.no_grad():
            (b if grad_of == 0 else a).add_(1.0)

        def backward():
            out.sum().backward()
            return (a if grad_of == 0 else b).grad.numpy()
        return _outcome(backward)

    got, want = run(tg), run(torch)
    if isinstance(want, tuple):
        assert got[0] is want[0] and "modified by an inplace operation" in got[1]
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6)


# -- renorm: a slice it leaves as it is passes its gradient unchanged ----------------------------
# The composite's norm backward ran for every slice, times zero for the slices not rescaled:
# NaN for a slice holding NaN or inf, spreading to its finite elements (65005612).

@pytest.mark.parametrize("values,p,maxnorm", [
    ([-INF, 0.27, 0.25, NAN, 0.33, 1.34], 2, 0.5),
    ([1.0, 2.0, 3.0, 0.0, 0.0, 0.0], 1, 2.0),
    ([1.0, 2.0, 3.0, -4.0, 0.1, 0.2], 3, 1.0),
])
def test_renorm_gradient_of_slices_left_unscaled(torch, values, p, maxnorm):
    def run(L):
        x = L.tensor(np.array(values).reshape(3, 2), requires_grad=True)
        y = L.renorm(L.nn.functional.silu(x), p, 0, maxnorm)
        (y * L.tensor(np.arange(6.0).reshape(3, 2) - 2.5)).sum().backward()
        return y.detach().numpy(), x.grad.numpy()

    for g, w in zip(run(tg), run(torch)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_renorm_gradcheck():
    x = tg.tensor([[0.3, -1.2, 2.0], [0.1, 0.2, -0.05], [1.5, 1.0, -0.7]], dtype=tg.float64,
                  requires_grad=True)
    assert tg.autograd.gradcheck(lambda t: tg.renorm(t, 2, 0, 1.0), (x,))
    assert tg.autograd.gradgradcheck(lambda t: tg.renorm(t, 2, 0, 1.0), (x,))


# -- nextafter: the gradient selected, not multiplied by 0 ---------------------------------------
# other's gradient was grad * 0 and input's grad * (x != y): NaN from a NaN or inf gradient
# where PyTorch's are 0 (65005907).

def test_nextafter_gradient_of_a_non_finite_upstream(torch):
    def run(L):
        x = L.tensor([2.0, 1.0, 3.0], requires_grad=True)
        y = L.tensor(2.0, requires_grad=True)
        L.nextafter(x, y).backward(L.tensor([NAN, INF, 1.5]))
        x2 = L.tensor(2.0, requires_grad=True)
        y2 = L.tensor([2.0, 1.0, 3.0], requires_grad=True)
        L.nextafter(x2, y2).sum().backward()
        return x.grad.numpy(), y.grad.numpy(), x2.grad.numpy(), y2.grad.numpy()

    for g, w in zip(run(tg), run(torch)):
        np.testing.assert_array_equal(g, w)
