"""What the session-11 proxy of public scripts (pytorch/tutorials, d2l-ai/d2l-en) touched that
tapegrad lacked: torch.func.stack_module_state (model ensembling with vmap), the torch.functional
module, ..."""
from __future__ import annotations

import copy
import importlib

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn as nn
from tapegrad.func import functional_call, stack_module_state, vmap


# -- torch.func.stack_module_state -------------------------------------------------------------

class _TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.bn = nn.BatchNorm1d(3)
        self.fc2 = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc2(tg.relu(self.bn(self.fc1(x))))


def test_stack_module_state_stacks_parameters_and_buffers_as_new_leaves():
    models = [_TwoLayer() for _ in range(3)]
    params, buffers = stack_module_state(models)
    assert list(params) == ["fc1.weight", "fc1.bias", "bn.weight", "bn.bias", "fc2.weight",
                            "fc2.bias"]
    assert list(buffers) == ["bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]
    for name, stacked in params.items():
        assert stacked.shape == (3, *dict(models[0].named_parameters())[name].shape)
        assert stacked.is_leaf and stacked.requires_grad and stacked.grad_fn is None
        for i, m in enumerate(models):
            np.testing.assert_array_equal(stacked[i].detach().numpy(),
                                          dict(m.named_parameters())[name].detach().numpy())
    assert not buffers["bn.running_mean"].requires_grad
    assert buffers["bn.num_batches_tracked"].dtype == tg.int64
    # new leaves: training the stack leaves the models alone
    params["fc1.weight"].sum().backward()
    assert models[0].fc1.weight.grad is None


def test_stack_module_state_with_vmap_matches_the_loop():
    tg.manual_seed(0)
    models = [nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 2)) for _ in range(4)]
    params, buffers = stack_module_state(models)
    x = tg.randn(4, 6, 5)
    # (the tutorial moves this copy to the meta device: a first meta tensor rebinds some
    # top-level functions, which other tests of identity notice, so the copy stays on cpu here)
    base = copy.deepcopy(models[0])

    def fmodel(p, b, xi):
        return functional_call(base, (p, b), (xi,))

    ours = vmap(fmodel)(params, buffers, x)
    loop = tg.stack([m(xi) for m, xi in zip(models, x)])
    np.testing.assert_allclose(ours.detach().numpy(), loop.detach().numpy(), rtol=1e-5, atol=1e-6)
    same = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x[0])
    loop = tg.stack([m(x[0]) for m in models])
    np.testing.assert_allclose(same.detach().numpy(), loop.detach().numpy(), rtol=1e-5, atol=1e-6)
    # the gradient reaches each model's slice of the stack
    same.sum().backward()
    for i, m in enumerate(models):
        m.zero_grad()
        m(x[0]).sum().backward()
        np.testing.assert_allclose(params["0.weight"].grad[i].numpy(), m[0].weight.grad.numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_stack_module_state_refusals_match_torch(torch):
    def refusal(lib, models):
        with pytest.raises(RuntimeError) as info:
            lib.func.stack_module_state(models)
        return str(info.value)

    assert refusal(tg, []) == refusal(torch, [])
    assert refusal(tg, [tg.nn.Linear(2, 2), tg.nn.Linear(2, 2).eval()]) == \
        refusal(torch, [torch.nn.Linear(2, 2), torch.nn.Linear(2, 2).eval()])
    assert refusal(tg, [tg.nn.Linear(2, 2), tg.nn.Conv1d(2, 2, 1)]) == \
        refusal(torch, [torch.nn.Linear(2, 2), torch.nn.Conv1d(2, 2, 1)])
    frozen_tg, frozen_torch = tg.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    frozen_tg.bias.requires_grad_(False)
    frozen_torch.bias.requires_grad_(False)
    assert refusal(tg, [tg.nn.Linear(2, 2), frozen_tg]) == \
        refusal(torch, [torch.nn.Linear(2, 2), frozen_torch])
    # all frozen: stacked without requires_grad, as torch does
    a, b = tg.nn.Linear(2, 2), tg.nn.Linear(2, 2)
    for p in (*a.parameters(), *b.parameters()):
        p.requires_grad_(False)
    params, _ = tg.func.stack_module_state([a, b])
    assert not params["weight"].requires_grad


# -- the torch.functional module ---------------------------------------------------------------

def test_torch_functional_module_holds_torch_names(torch):
    ours = importlib.import_module("tapegrad.functional")
    assert tg.functional is ours
    for name in ours.__all__:
        assert getattr(ours, name) is getattr(tg, name), name
    assert sorted(ours.__all__) == sorted(torch.functional.__all__)
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(ours.einsum("ij,kj->ik", tg.tensor(a), tg.tensor(a)).numpy(),
                               torch.functional.einsum("ij,kj->ik", torch.tensor(a),
                                                       torch.tensor(a)).numpy())
    assert [t.tolist() for t in ours.split(tg.arange(5), 2)] == \
        [t.tolist() for t in torch.functional.split(torch.arange(5), 2)]


# -- float() of a tensor requiring grad warns once, as torch does ------------------------------

def _scalar_warnings(lib, monkeypatch, convert, requires_grad=True, grad_mode=True):
    import warnings
    if lib is tg:
        monkeypatch.setattr(importlib.import_module("tapegrad.tensor"),
                            "_warned_scalar_of_grad_tensor", False)
    x = lib.tensor(2.0, requires_grad=requires_grad)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with lib.set_grad_enabled(grad_mode):
            convert(x * 3)
            convert(x * 3)
    return [str(w.message).split(" (Triggered")[0] for w in caught]


@pytest.mark.parametrize("convert", [float, complex, lambda t: __import__("math").exp(t)])
def test_float_of_a_grad_tensor_warns_once(monkeypatch, convert):
    assert _scalar_warnings(tg, monkeypatch, convert) == [
        "Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
        "behavior.\nConsider using tensor.detach() first."]


@pytest.mark.parametrize("convert", [int, lambda t: t.item(), lambda t: f"{t:.2f}", bool])
def test_other_scalar_conversions_do_not_warn(monkeypatch, convert):
    assert _scalar_warnings(tg, monkeypatch, convert) == []


def test_a_grad_tensor_inside_a_sequence_warns_as_float_does(monkeypatch):
    # (torch's warning is once per process, so whether it fires here depends on test order: the
    # parity test below leaves this case out)
    assert _scalar_warnings(tg, monkeypatch, lambda t: tg.tensor([t])) == [
        "Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
        "behavior.\nConsider using tensor.detach() first."]
    assert tg.tensor([tg.tensor(1.0, requires_grad=True) * 2]).requires_grad is False


def test_float_warns_only_with_grad_mode_and_requires_grad(monkeypatch):
    assert _scalar_warnings(tg, monkeypatch, float, grad_mode=False) == []
    assert _scalar_warnings(tg, monkeypatch, float, requires_grad=False) == []


# -- a tensor inside a sequence given to torch.tensor is one number ----------------------------

SEQUENCE_CASES = [
    "m.tensor([m.tensor([0.5]), m.tensor([0.25])])",          # d2l multivariable calculus
    "m.tensor([m.tensor([[1.]]), m.tensor([[2.]])])",
    "m.tensor([m.tensor(1, dtype=m.int32)])",
    "m.tensor([m.tensor(1, dtype=m.int32), 2])",
    "m.tensor([m.tensor([1.5], dtype=m.float64), 1])",
    "m.tensor([m.tensor(True), 1])",
    "m.tensor([m.tensor([True])])",
    "m.tensor([[m.tensor([1.])], [2.]])",
    "m.tensor([m.tensor(1, dtype=m.float16), 2.5])",
    "m.tensor((m.tensor([2]), m.tensor([3])))",
    "m.tensor([m.tensor([1 + 2j])])",
    "m.tensor([2., m.tensor([1.])])",
    "m.tensor([[1, 2], [m.tensor(3.), 4]])",
    "m.tensor([m.tensor([0.5]), m.tensor([0.25])], dtype=m.float64)",
    "m.as_tensor([m.tensor([0.5]), m.tensor([0.25])])",
    "m.Tensor([m.tensor([0.5]), m.tensor([0.25])])",
    "m.FloatTensor([m.tensor([1]), 2])",
    "m.ones(2).new_tensor([m.tensor([3]), m.tensor(4)])",
    "m.tensor([m.ones(2, 2)])",
    "m.tensor([m.empty(0)])",
    "m.tensor([2., m.ones(2)])",
]


@pytest.mark.parametrize("case", SEQUENCE_CASES)
def test_tensors_inside_a_sequence_match_torch(torch, case):
    def run(m):
        if m is tg:
            importlib.import_module("tapegrad.tensor")._warned_scalar_of_grad_tensor = False
        try:
            r = eval(case, {"m": m})
        except Exception as e:      # noqa: BLE001  (the exception itself is compared)
            return type(e).__name__, str(e).split(" (Triggered")[0]
        return r.tolist(), str(r.dtype), tuple(r.shape), r.requires_grad

    assert run(tg) == run(torch)
