"""Regression tests from the robotics / control / state-estimation proxy task (session 36):
ensembles of dynamics models under vmap (stacked biases and weights through F.linear and
functional_call), and the graph of gradients of broadcast operands."""
import numpy as np
import pytest

import tapegrad
import tapegrad.nn as tnn
import tapegrad.nn.functional as TF
from tapegrad.func import functional_call as t_functional_call, grad as t_grad, \
    stack_module_state as t_stack_module_state, vmap as t_vmap

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch.func import functional_call, grad, stack_module_state, vmap  # noqa: E402


def _both(values, dtype="float32"):
    a = np.asarray(values, dtype=dtype)
    return torch.tensor(a), tapegrad.tensor(a)


def test_vmap_linear_over_bias_only_keeps_sample_shape():
    # SILENT: with only the bias mapped over, F.linear(x, W, b) came back with the bias's shape
    # ((4, 2) instead of (4, 5, 2)) and vmap returned an internal BatchedTensor object.
    x_t, x_g = _both(np.arange(15.).reshape(5, 3))
    w_t, w_g = _both([[1.0, -0.5, 0.25], [0.5, 2.0, -1.0]])
    b_t, b_g = _both(np.arange(8.).reshape(4, 2))
    want = vmap(lambda b: F.linear(x_t, w_t, b))(b_t)
    got = t_vmap(lambda b: TF.linear(x_g, w_g, b))(b_g)
    assert type(got) is tapegrad.Tensor
    assert tuple(got.shape) == tuple(want.shape) == (4, 5, 2)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    want = vmap(lambda b: F.linear(x_t, w_t, b).sum(0))(b_t)
    got = t_vmap(lambda b: TF.linear(x_g, w_g, b).sum(0))(b_g)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    want = vmap(lambda b: F.linear(x_t, w_t, b).mean())(b_t)
    got = t_vmap(lambda b: TF.linear(x_g, w_g, b).mean())(b_g)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_vmap_matmul_of_unbatched_operands_in_linear_gradient():
    # per-sample gradients with respect to the bias alone (weight and input shared)
    x_t, x_g = _both(np.linspace(-1, 1, 15).reshape(5, 3))
    w_t, w_g = _both([[1.0, -0.5, 0.25], [0.5, 2.0, -1.0]])
    b_t, b_g = _both([[0.1, 0.2], [0.3, -0.4], [0.0, 1.0]])
    b_t.requires_grad_()
    b_g.requires_grad_()
    want = vmap(grad(lambda b: F.linear(x_t, w_t, b).pow(2).sum()))(b_t)
    got = t_vmap(t_grad(lambda b: TF.linear(x_g, w_g, b).pow(2).sum()))(b_g)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5)
    assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__ == "ViewBackward0"


def _ensemble(nn_mod, n):
    models = [nn_mod.Linear(3, 2) for _ in range(n)]
    for k, m in enumerate(models):
        for p in m.parameters():
            with (torch.no_grad() if nn_mod is torch.nn else tapegrad.no_grad()):
                p.copy_((torch if nn_mod is torch.nn else tapegrad).linspace(
                    -0.3, 0.3 + 0.1 * k, p.numel()).view_as(p))
    return models


def test_vmap_grad_over_functional_call_ensemble():
    # stack_module_state + vmap(grad(functional_call)): the per-model gradients, computed in
    # one batched pass (grad_fn as PyTorch's batching rules leave it, no per-sample loop)
    params_t, bufs_t = stack_module_state(_ensemble(torch.nn, 4))
    params_g, bufs_g = t_stack_module_state(_ensemble(tnn, 4))
    base_t, base_g = torch.nn.Linear(3, 2), tnn.Linear(3, 2)
    x_t, x_g = _both(np.linspace(-1, 1, 15).reshape(5, 3))

    def loss_t(p, b, x):
        return F.mse_loss(functional_call(base_t, (p, b), (x,)), torch.zeros(5, 2))

    def loss_g(p, b, x):
        return TF.mse_loss(t_functional_call(base_g, (p, b), (x,)), tapegrad.zeros(5, 2))

    want = vmap(grad(loss_t), in_dims=(0, 0, None))(params_t, bufs_t, x_t)
    got = t_vmap(t_grad(loss_g), in_dims=(0, 0, None))(params_g, bufs_g, x_g)
    assert set(got) == set(want) == {"weight", "bias"}
    for k in want:
        np.testing.assert_allclose(got[k].detach().numpy(), want[k].detach().numpy(),
                                   rtol=1e-5, atol=1e-7)
        assert type(got[k].grad_fn).__name__ == type(want[k].grad_fn).__name__
    assert type(got["weight"].grad_fn).__name__ == "TransposeBackward0"
    # forward outputs of the ensemble
    want = vmap(lambda p, b: functional_call(base_t, (p, b), (x_t,)))(params_t, bufs_t)
    got = t_vmap(lambda p, b: t_functional_call(base_g, (p, b), (x_g,)))(params_g, bufs_g)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    # a value that is not a tensor is still refused
    with pytest.raises(TypeError, match="is not an instance of torch.Tensor"):
        t_functional_call(base_g, {"weight": [[1.0] * 3] * 2}, (x_g,))


@pytest.mark.parametrize("b_shape,x_shape", [((1,), (5,)), ((2, 1), (2, 5)), ((5,), (2, 5)),
                                             ((1, 5), (2, 5)), ((1, 1), (3,))])
def test_double_backward_sum_to_grad_fn(b_shape, x_shape):
    # the gradient of a broadcast operand, as a graph: a keepdim sum (SumBackward1), viewed
    # only when leading dims were summed away (ViewBackward0), as PyTorch's sum_to
    x = np.arange(np.prod(x_shape), dtype=np.float64).reshape(x_shape)
    b = np.linspace(0.5, 1.5, int(np.prod(b_shape))).reshape(b_shape)
    bt = torch.tensor(b, requires_grad=True)
    bg = tapegrad.tensor(b, requires_grad=True)
    want = torch.autograd.grad((torch.tensor(x) + bt).pow(2).sum(), bt, create_graph=True)[0]
    got = tapegrad.autograd.grad((tapegrad.tensor(x) + bg).pow(2).sum(), bg,
                                 create_graph=True)[0]
    assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy())
    # and its own gradient (the second derivative) stays right
    want2 = torch.autograd.grad(want.sum(), bt)[0]
    got2 = tapegrad.autograd.grad(got.sum(), bg)[0]
    np.testing.assert_allclose(got2.numpy(), want2.numpy())
