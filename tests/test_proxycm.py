"""Function approximation and scientific-ML idioms (KANs, implicit neural representations),
checked against PyTorch: out-of-bounds grid_sample taps, vmap over a training-mode batch_norm."""
import math

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F
from tapegrad.func import vmap


def _signbits(t):
    return np.signbit(t.detach().numpy())


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
@pytest.mark.parametrize("dims", [2, 3])
def test_grid_sample_zeros_padding_outside_is_positive_zero(mode, dims):
    # An outside tap adds nothing, so a point outside a negative-valued input samples +0
    # (PyTorch prints "0.", not "-0."), and its input gradient is zero.
    shape = (1, 1) + (3,) * dims
    image = (-tg.arange(1.0, 1.0 + math.prod(shape))).reshape(shape).requires_grad_()
    points = tg.tensor([[1.7] * dims, [-3.0] * dims, [0.0] * dims]).reshape((1,) * dims + (3, dims))
    out = F.grid_sample(image, points, mode=mode, padding_mode="zeros", align_corners=False)
    flat = out.detach().reshape(-1)
    assert flat[:2].tolist() == [0.0, 0.0]
    assert not _signbits(flat[:2]).any()
    assert "-0." not in repr(flat)
    out.sum().backward()
    centre = tuple([0, 0] + [1] * dims)
    assert image.grad.sum().item() == pytest.approx(1.0)
    assert image.grad[centre].item() == pytest.approx(1.0)


def test_grid_sample_outside_matches_torch():
    torch = pytest.importorskip("torch")
    vol = np.sin(np.arange(2 * 3 * 4 * 5)).reshape(1, 2, 3, 4, 5)
    pts = np.array([[0.1, -0.3, 0.5], [0.9, 0.9, -0.9], [-1.0, 1.0, 0.0], [1.2, 0.0, 0.0],
                    [3.0, -2.0, 0.5]]).reshape(1, 1, 1, 5, 3)
    for mode in ("nearest", "bilinear"):
        for ac in (True, False):
            ours = F.grid_sample(tg.tensor(vol), tg.tensor(pts), mode=mode, align_corners=ac)
            theirs = torch.nn.functional.grid_sample(torch.tensor(vol), torch.tensor(pts),
                                                     mode=mode, align_corners=ac)
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-12)
            np.testing.assert_array_equal(_signbits(ours), np.signbit(theirs.numpy()))


def test_vmap_training_batch_norm_of_one_value_per_channel_raises_value_error():
    # F.batch_norm checks the per-sample size before vmap's running-statistics check.
    bn = tg.nn.BatchNorm1d(3)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        vmap(lambda a: bn(a[None]))(tg.ones(4, 3))
    with pytest.raises(RuntimeError, match="Batch norm got a batched tensor"):
        vmap(lambda a: bn(a))(tg.ones(4, 2, 3))
    bn.eval()
    assert vmap(lambda a: bn(a[None]))(tg.ones(4, 3)).shape == (4, 1, 3)


def _tanh_net():
    net = tg.nn.Sequential(tg.nn.Linear(2, 4), tg.nn.Tanh(), tg.nn.Linear(4, 1))
    with tg.no_grad():
        for i, p in enumerate(net.parameters()):
            p.copy_(tg.sin(tg.arange(p.numel(), dtype=tg.float32) * 0.77 + i).reshape(p.shape) * 0.6)
    return net


# (torch's own forward-mode jacobian warns that torch.jit.script is deprecated)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_forward_mode_jacobian_keeps_the_parameters_graph():
    # PyTorch's forward-mode jacobian is not detached: a loss on the Jacobian of an INR with
    # respect to its input backpropagates into the parameters (it used to raise here).
    from tapegrad.autograd.functional import hessian, jacobian
    torch = pytest.importorskip("torch")
    x = [[0.1, 0.2], [0.3, -0.5]]
    ours, theirs = _tanh_net(), torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.Tanh(),
                                                    torch.nn.Linear(4, 1))
    with torch.no_grad():
        for p, q in zip(theirs.parameters(), ours.parameters()):
            p.copy_(torch.tensor(q.detach().numpy()))
    J = jacobian(lambda p: ours(p).sum(0), tg.tensor(x), vectorize=True, strategy="forward-mode")
    Jt = torch.autograd.functional.jacobian(lambda p: theirs(p).sum(0), torch.tensor(x),
                                            vectorize=True, strategy="forward-mode")
    assert J.requires_grad and J.grad_fn is not None
    np.testing.assert_allclose(J.detach().numpy(), Jt.detach().numpy(), rtol=1e-5)
    J.pow(2).sum().backward()
    Jt.pow(2).sum().backward()
    np.testing.assert_allclose(ours[0].weight.grad.numpy(), theirs[0].weight.grad.numpy(),
                               rtol=1e-5, atol=1e-7)
    H = hessian(lambda p: ours(p).sum(), tg.tensor(x[0]), vectorize=True,
                outer_jacobian_strategy="forward-mode")
    assert H.requires_grad
    # a function of plain tensors only gives a plain Jacobian
    J2 = jacobian(lambda p: (p ** 2).sum(0), tg.tensor(x), vectorize=True, strategy="forward-mode")
    assert not J2.requires_grad


def test_func_transforms_under_no_grad_return_plain_tensors():
    # Under the caller's no_grad PyTorch records no graph for the results, even when they
    # depend on parameters that require grad (jacfwd/jacrev used to return graph tensors).
    from tapegrad.autograd.functional import jacobian
    from tapegrad.func import grad, hessian, jacfwd, jacrev
    net = _tanh_net()
    x = tg.tensor([0.3, -0.2])
    with tg.no_grad():
        results = [jacfwd(net)(x), jacrev(net)(x), hessian(lambda p: net(p).sum())(x),
                   grad(lambda p: net(p).sum())(x),
                   jacobian(net, x, vectorize=True, strategy="forward-mode")]
    assert [r.requires_grad for r in results] == [False] * 5
    assert jacfwd(net)(x).requires_grad and jacrev(net)(x).requires_grad
    np.testing.assert_allclose(results[0].numpy(), jacrev(net)(x).detach().numpy(), rtol=1e-5)
