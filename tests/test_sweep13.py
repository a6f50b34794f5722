"""Regressions found by the thirteenth argument-form sweep (second and higher derivatives of
activations, losses, layers and torch.func transforms, at ordinary points and at ties and kinks)
against PyTorch."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _second(lib, fn, *arrays):
    """fn's first gradients (create_graph) for float64 leaves made from arrays, then the gradient
    of their sum of squares: (first gradients, second gradients) as numpy arrays."""
    leaves = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
    out = fn(lib, *leaves)
    weights = lib.tensor(np.linspace(-1.3, 1.7, out.numel()).reshape(tuple(out.shape)),
                         dtype=lib.float64)
    firsts = lib.autograd.grad((out * weights).sum(), leaves, create_graph=True)
    penalty = sum((g ** 2).sum() for g in firsts)
    seconds = lib.autograd.grad(penalty, leaves)
    return [g.detach().numpy() for g in firsts], [g.detach().numpy() for g in seconds]


def _assert_second_like_torch(fn, *arrays):
    got, want = _second(tg, fn, *arrays), _second(torch, fn, *arrays)
    for g, w in zip(got[0] + got[1], want[0] + want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


# -- softplus: PyTorch's second derivative is 0 at the tie beta * x == threshold ---------------

@pytest.mark.parametrize("beta,threshold", [(2.0, 1.0), (1.0, 0.5), (0.5, 2.0)])
def test_softplus_second_derivative_at_threshold_tie(beta, threshold):
    x = np.array([threshold / beta, -1.0, 0.3, threshold / beta + 1.0])
    _assert_second_like_torch(
        lambda lib, t: lib.nn.functional.softplus(t, beta=beta, threshold=threshold), x)


def test_softplus_module_and_mish_second_derivative_at_tie():
    x = np.array([[20.0, 1.0, -3.0], [0.0, 19.5, 40.0]])
    _assert_second_like_torch(lambda lib, t: lib.nn.Softplus()(t), x)
    _assert_second_like_torch(lambda lib, t: lib.nn.Softplus(beta=4.0, threshold=4.0)(t),
                              np.array([1.0, 0.5, -1.0]))


# -- prelu: PyTorch's second derivatives mask with x >= 0, its first derivatives with x > 0 ----

@pytest.mark.parametrize("shape,weight", [
    ((3, 4), np.array([0.25])),
    ((1, 3, 4), np.array([0.1, -0.3, 0.5])),
    ((2, 3), np.array([0.1, -0.3, 0.5])),
])
def test_prelu_second_derivatives_at_zero_inputs(shape, weight):
    x = np.linspace(-2.0, 2.0, int(np.prod(shape))).reshape(shape)
    x.flat[::3] = 0.0
    _assert_second_like_torch(lambda lib, t, w: lib.nn.functional.prelu(t, w), x, weight)


def test_prelu_first_derivatives_unchanged_at_zero():
    x = np.array([[0.0, -1.0, 2.0], [0.0, 0.0, -0.5]])
    w = np.array([0.2, -0.4, 0.3])

    def grads(lib):
        xt = lib.tensor(x, requires_grad=True)
        wt = lib.tensor(w, requires_grad=True)
        lib.nn.functional.prelu(xt, wt).pow(2).add(xt).sum().backward()
        return xt.grad.numpy(), wt.grad.numpy()
    for g, want in zip(grads(tg), grads(torch)):
        np.testing.assert_allclose(g, want, rtol=1e-12)


# -- first gradients under create_graph stay in the input's graph, as PyTorch's backward nodes -
# (which read the input) make them: a penalty on them backpropagates zeros instead of raising

_LINEAR_IN_INPUT = {
    "nll_loss": lambda lib, x: lib.nn.functional.nll_loss(x.reshape(4, 4),
                                                          lib.tensor([0, 3, 2, 1])),
    "nll_loss weight none": lambda lib, x: lib.nn.functional.nll_loss(
        x.reshape(4, 4), lib.tensor([0, 3, 2, 1]),
        weight=lib.linspace(0.5, 2, 4, dtype=lib.float64), reduction="none"),
    "nll_loss 2d": lambda lib, x: lib.nn.functional.nll_loss(
        x, lib.tensor([[[0, 1], [1, 0]], [[1, 1], [0, 0]]])),
    "conv2d": lambda lib, x: lib.nn.functional.conv2d(
        x, lib.linspace(-1, 1, 2 * 2 * 2 * 2, dtype=lib.float64).reshape(2, 2, 2, 2), padding=1),
    "conv_transpose2d": lambda lib, x: lib.nn.functional.conv_transpose2d(
        x, lib.linspace(-1, 1, 2 * 3 * 2 * 2, dtype=lib.float64).reshape(2, 3, 2, 2), stride=2),
    "conv1d": lambda lib, x: lib.nn.functional.conv1d(
        x.reshape(2, 2, 4), lib.linspace(-1, 1, 3 * 2 * 2, dtype=lib.float64).reshape(3, 2, 2)),
    "max_pool2d": lambda lib, x: lib.nn.functional.max_pool2d(x, 2),
    "max_pool1d": lambda lib, x: lib.nn.functional.max_pool1d(x.reshape(2, 2, 4), 2),
    "avg_pool2d": lambda lib, x: lib.nn.functional.avg_pool2d(x, 2, padding=1),
    "batch_norm eval": lambda lib, x: lib.nn.functional.batch_norm(
        x, lib.tensor([0.1, -0.2], dtype=lib.float64), lib.tensor([1.5, 0.5], dtype=lib.float64)),
    "batch_norm eval affine": lambda lib, x: lib.nn.functional.batch_norm(
        x, lib.tensor([0.1, -0.2], dtype=lib.float64), lib.tensor([1.5, 0.5], dtype=lib.float64),
        lib.tensor([2.0, -1.0], dtype=lib.float64), lib.tensor([0.3, 0.0], dtype=lib.float64)),
}


@pytest.mark.parametrize("name", sorted(_LINEAR_IN_INPUT))
def test_first_gradient_requires_grad_like_torch(name):
    fn = _LINEAR_IN_INPUT[name]
    x0 = np.linspace(-1.0, 1.2, 16).reshape(2, 2, 2, 2)

    def run(lib):
        x = lib.tensor(x0, requires_grad=True)
        g, = lib.autograd.grad(fn(lib, x).sum(), x, create_graph=True)
        (g ** 2).sum().backward()           # raised "does not require grad" before
        # x.grad: zeros through a zero derivative (pools, nll), None through no formula (conv)
        return (g.requires_grad, type(g.grad_fn).__name__, g.detach().numpy(),
                None if x.grad is None else x.grad.numpy())
    got, want = run(tg), run(torch)
    assert got[:2] == want[:2]
    np.testing.assert_allclose(got[2], want[2], rtol=1e-12)
    if want[3] is None:
        assert got[3] is None
    else:
        np.testing.assert_array_equal(got[3], want[3])


# -- kl_div: the target's gradient where the target is 0 is PyTorch's (NaN from xlogy's 0 / 0),
# not -input (a hand-made 0 log 0 gave the term log(t) + 1 no derivative) ---------------------

@pytest.mark.parametrize("reduction", ["sum", "none", "batchmean", "mean"])
def test_kl_div_target_gradient_at_zero_target(reduction):
    def grads(lib):
        x = lib.tensor([[-1.0, -2.0, 0.0, -0.5], [0.3, -0.1, -3.0, 2.0]], requires_grad=True)
        t = lib.tensor([[0.0, 0.5, 0.0, 1.0], [0.1, 0.2, 0.0, 0.5]], requires_grad=True)
        with np.errstate(all="ignore"):
            loss = lib.nn.functional.kl_div(x, t, reduction=reduction)
            gx, gt = lib.autograd.grad(loss.sum(), [x, t], create_graph=True)
            h, = lib.autograd.grad((gt.nan_to_num() ** 2).sum() + (gx ** 2).sum(), t)
        return loss.detach().numpy(), gx.detach().numpy(), gt.detach().numpy(), h.numpy()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for got, want in zip(grads(tg), grads(torch)):
            np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


# -- poisson_nll_loss(full=True): Stirling's term computed everywhere and masked, as PyTorch, so a
# target's gradient (and second derivative) is PyTorch's also where the target is <= 1 --------

@pytest.mark.parametrize("log_input", [True, False])
def test_poisson_nll_full_target_gradients(log_input):
    def grads(lib):
        x = lib.tensor([[0.4, 2.0, 0.1, 0.5], [0.3, 1.1, 3.0, 2.0]], dtype=lib.float64,
                       requires_grad=True)
        t = lib.tensor([[0.0, 5.0, 0.5, 1.0], [1.5, 2.0, 30.0, 0.0]], dtype=lib.float64,
                       requires_grad=True)
        with np.errstate(all="ignore"):
            loss = lib.nn.functional.poisson_nll_loss(x, t, log_input=log_input, full=True)
            gx, gt = lib.autograd.grad(loss, [x, t], create_graph=True)
            h, = lib.autograd.grad((gt.nan_to_num() ** 2).sum() + (gx ** 2).sum(), t)
        return loss.detach().numpy(), gx.detach().numpy(), gt.detach().numpy(), h.numpy()
    for got, want in zip(grads(tg), grads(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


def test_kl_div_and_xlogy_forward_ad():
    # (kl_div is computed with xlogy, which then needs PyTorch's forward-mode formula)
    def tangents(lib):
        fwad = lib.autograd.forward_ad
        x = lib.tensor([[-1.0, -2.0, 0.0], [0.3, -0.1, -3.0]], dtype=lib.float64)
        t = lib.tensor([[0.2, 0.5, 0.3], [0.1, 0.6, 0.3]], dtype=lib.float64)
        tx = lib.tensor([[1.0, -1.0, 2.0], [0.3, 1.0, -2.0]], dtype=lib.float64)
        tt = lib.tensor([[0.5, 1.0, -1.0], [1.0, -0.5, 0.2]], dtype=lib.float64)
        with fwad.dual_level():
            kl = lib.nn.functional.kl_div(fwad.make_dual(x, tx), fwad.make_dual(t, tt),
                                          reduction="batchmean")
            xl = lib.xlogy(fwad.make_dual(t, tt), fwad.make_dual(t + 1, tx))
            return [fwad.unpack_dual(r).tangent.numpy() for r in (kl, xl)]
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)     # (torch's forward_ad import)
        want = tangents(torch)
    for got, w in zip(tangents(tg), want):
        np.testing.assert_allclose(got, w, rtol=1e-12)
