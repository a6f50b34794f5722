"""What the session-32 proxy of interpretability / robustness scripts (Grad-CAM, SmoothGrad, LRP,
EWC, FedAvg, PGD/CW, distillation, temperature scaling) found: gradients taken with
create_graph=True (gradient penalties, Hessian-vector products, influence functions) carried
other grad_fn names than PyTorch's, which a printed gradient shows: a Linear weight's gradient
is PyTorch's TBackward0 (the gradient of W^T under the weight's t()), not MmBackward0; the
gradient through an unsqueeze is SqueezeBackward1 and through a squeeze UnsqueezeBackward0, not
ViewBackward0."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as TF

torch = pytest.importorskip("torch")

_X = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]
_W = [[0.3, -0.2, 0.1], [0.05, 0.4, -0.3]]
_B = [0.1, -0.2]


def _pair(lib, bias):
    x = lib.tensor(_X, dtype=lib.float64, requires_grad=True)
    w = lib.tensor(_W, dtype=lib.float64, requires_grad=True)
    b = lib.tensor(_B, dtype=lib.float64, requires_grad=True) if bias else None
    return x, w, b


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("three_d", [False, True])
def test_create_graph_linear_weight_gradient_is_tbackward_as_pytorch(bias, three_d):
    results = []
    for lib, F in ((tg, TF), (torch, torch.nn.functional)):
        x, w, b = _pair(lib, bias)
        inp = x.unsqueeze(0) if three_d else x
        loss = F.linear(inp, w, b).tanh().pow(2).sum()
        gx, gw = lib.autograd.grad(loss, [x, w], create_graph=True)
        assert gw.is_contiguous() and gw.view(-1).shape == (6,)
        # a gradient of the gradient (Hessian-vector product) through the new nodes
        hx, hw = lib.autograd.grad((gw * gw).sum() + gx.sum(), [x, w])
        results.append((gw.grad_fn.name(), gx.grad_fn.name(), gw.detach().numpy(),
                        hx.numpy(), hw.numpy()))
    (tn, txn, tgw, thx, thw), (pn, pxn, pgw, phx, phw) = results
    assert tn == pn == "TBackward0"
    assert txn == pxn
    np.testing.assert_allclose(tgw, pgw, rtol=1e-12)
    np.testing.assert_allclose(thx, phx, rtol=1e-10)
    np.testing.assert_allclose(thw, phw, rtol=1e-10)


def test_create_graph_nn_linear_parameter_gradients_print_as_pytorch():
    names = []
    for lib in (tg, torch):
        lib.manual_seed(0)
        lin = lib.nn.Linear(3, 2)
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(_W))
            lin.bias.copy_(lib.tensor(_B))
        loss = lin(lib.tensor(_X)).pow(2).sum()
        gs = lib.autograd.grad(loss, list(lin.parameters()), create_graph=True)
        names.append([g.grad_fn.name() for g in gs])
        assert "grad_fn=<TBackward0>" in repr(gs[0])
    assert names[0] == names[1] == ["TBackward0", "ViewBackward0"]


def _reshaping_cases(lib):
    x = lib.tensor([[[0.5], [-1.0], [2.0]]], dtype=lib.float64, requires_grad=True)  # (1, 3, 1)
    return x, [
        lambda: x.squeeze(),
        lambda: x.squeeze(0),
        lambda: x.squeeze(1),            # removes no dim: no node of its own
        lambda: x.squeeze((0, 2)),
        lambda: x.unsqueeze(1),
        lambda: x.view(3),
        lambda: x.view(3).unsqueeze(0).expand(2, 3),
    ]


def test_create_graph_squeeze_unsqueeze_gradient_names_and_values_as_pytorch():
    per_lib = []
    for lib in (tg, torch):
        x, cases = _reshaping_cases(lib)
        row = []
        for f in cases:
            g, = lib.autograd.grad((f() ** 3).sum(), x, create_graph=True)
            h, = lib.autograd.grad((g * g).sum(), x)
            row.append((g.grad_fn.name(), tuple(g.shape), g.detach().numpy(), h.numpy()))
        per_lib.append(row)
    for (tn, ts, tgv, th), (pn, ps, pgv, ph) in zip(*per_lib):
        assert (tn, ts) == (pn, ps)
        np.testing.assert_allclose(tgv, pgv, rtol=1e-12)
        np.testing.assert_allclose(th, ph, rtol=1e-12)


def test_second_order_through_linear_and_squeeze_gradgradcheck():
    x = tg.tensor([[0.5, -1.0, 2.0]], dtype=tg.float64, requires_grad=True)
    w = tg.tensor(_W, dtype=tg.float64, requires_grad=True)

    def f(x, w):
        return TF.linear(x.squeeze(0), w).unsqueeze(1).tanh()

    assert tg.autograd.gradcheck(f, (x, w))
    assert tg.autograd.gradgradcheck(f, (x, w))
