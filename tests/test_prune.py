"""nn.utils.prune: the pruning tutorial's calls (l1/random unstructured, ln structured, global,
iterative pruning through PruningContainer, remove, custom methods), against torch where the
result does not depend on random numbers, and by the defining properties otherwise."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn
from tapegrad.autograd import gradcheck
from tapegrad.nn.utils import prune


def deterministic(lib, model):
    with lib.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(lib.tensor(0.5 * np.sin(np.arange(p.numel()) * 1.37 + i).reshape(p.shape),
                               dtype=p.dtype))
    return model


def small_net(lib):
    return deterministic(lib, lib.nn.Sequential(lib.nn.Conv2d(1, 3, 3), lib.nn.ReLU(),
                                                lib.nn.Flatten(), lib.nn.Linear(3 * 4 * 4, 5),
                                                lib.nn.ReLU(), lib.nn.Linear(5, 2)))


def test_l1_unstructured_moves_weight_and_masks_gradient():
    m = deterministic(tg, nn.Linear(4, 3))
    prune.l1_unstructured(m, name="weight", amount=0.5)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert [n for n, _ in m.named_buffers()] == ["weight_mask"]
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert int(m.weight_mask.sum()) == 6 and not isinstance(m.weight, nn.Parameter)
    w = m.weight_orig.detach().numpy()
    kept = np.abs(w)[m.weight_mask.numpy() == 1]
    assert kept.min() >= np.abs(w)[m.weight_mask.numpy() == 0].max()
    m(tg.ones(2, 4)).sum().backward()
    np.testing.assert_array_equal(m.weight_orig.grad.numpy(), 2 * m.weight_mask.numpy())
    assert prune.is_pruned(m)
    prune.remove(m, "weight")
    assert list(m.state_dict()) == ["bias", "weight"] and not prune.is_pruned(m)
    assert int((m.weight == 0).sum()) == 6


def test_pruned_forward_gradcheck():
    m = deterministic(tg, nn.Linear(4, 3)).double()
    prune.random_unstructured(m, name="weight", amount=5)
    assert int((m.weight_mask == 0).sum()) == 5
    orig = m.weight_orig

    def f(w, x):
        with tg.no_grad():
            orig.copy_(w)
        return prune.L1Unstructured(0).prune(w, default_mask=m.weight_mask) @ x

    assert gradcheck(f, [tg.tensor(orig.detach().numpy(), requires_grad=True),
                         tg.ones(4, 2, dtype=tg.float64, requires_grad=True)])


def test_iterative_pruning_builds_a_container():
    m = deterministic(tg, nn.Linear(6, 4))
    prune.l1_unstructured(m, "weight", 0.5)
    prune.ln_structured(m, "weight", amount=1, n=2, dim=0)
    hooks = list(m._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer)
    assert [type(h).__name__ for h in hooks[0]] == ["L1Unstructured", "LnStructured"]
    assert int((m.weight_mask.sum(dim=1) == 0).sum()) == 1


def test_random_structured_prunes_whole_channels():
    m = deterministic(tg, nn.Conv2d(2, 4, 3))
    prune.random_structured(m, "weight", amount=0.5, dim=0)
    per_channel = m.weight_mask.sum(dim=(1, 2, 3)).numpy()
    assert sorted(per_channel.tolist()) == [0, 0, 18, 18]


def test_errors_leave_the_module_unpruned():
    m = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="amount=5 should be smaller than the number of "
                       "parameters to prune=4"):
        prune.l1_unstructured(m, "weight", 5)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight"] and not prune.is_pruned(m)
    with pytest.raises(ValueError, match=r"amount=1.5 should either be a float in the range "
                       r"\[0, 1\] or a non-negative integer"):
        prune.l1_unstructured(m, "weight", 1.5)
    with pytest.raises(TypeError, match="Invalid type for amount: a. Must be int or float."):
        prune.L1Unstructured("a")
    with pytest.raises(ValueError, match="Structured pruning can only be applied to "
                       "multidimensional tensors"):
        prune.ln_structured(m, "bias", 1, 2, 0)
    with pytest.raises(IndexError, match="Invalid index 3 for tensor of size"):
        prune.ln_structured(m, "weight", 1, 2, 3)
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(m, "weight")
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE supported'):
        prune.global_unstructured([(m, "weight")], prune.LnStructured, amount=1, n=2)


def run_tutorial(lib):
    """The pruning tutorial's steps, without its random ones; returns what it prints."""
    P = lib.nn.utils.prune
    out = []
    model = small_net(lib)
    conv, fc1, fc2 = model[0], model[3], model[5]
    P.l1_unstructured(conv, name="bias", amount=1)
    out += [conv.bias, conv.bias_mask]
    P.ln_structured(conv, name="weight", amount=0.5, n=2, dim=0)
    P.ln_structured(conv, name="weight", amount=1, n=float("inf"), dim=-1)
    out += [conv.weight_mask, list(model.state_dict().keys())]
    P.remove(conv, "weight")
    out += [conv.weight, [n for n, _ in conv.named_parameters()]]
    P.l1_unstructured(fc1, "weight", 0.3)
    P.l1_unstructured(fc1, "weight", 0.3)
    params = ((conv, "weight"), (fc1, "weight"), (fc2, "weight"))
    P.global_unstructured(params, pruning_method=P.L1Unstructured, amount=0.4)
    out += [float(lib.sum(getattr(m, n) == 0)) for m, n in params]
    x = lib.linspace(-1, 1, 2 * 36).reshape(2, 1, 6, 6)
    y = model(x)
    y.pow(2).sum().backward()
    out += [y, fc1.weight_orig.grad, fc2.weight_orig.grad, conv.weight_orig.grad]

    class FooBar(P.BasePruningMethod):
        PRUNING_TYPE = "unstructured"

        def compute_mask(self, t, default_mask):
            mask = default_mask.clone()
            mask.view(-1)[::2] = 0
            return mask
    FooBar.apply(fc2, "bias")
    P.custom_from_mask(fc2, "bias", lib.tensor([1, 0]))
    out += [fc2.bias, fc2.bias_mask, P.L1Unstructured(amount=2).prune(lib.tensor([3., -1., 2.]))]
    return out


def test_tutorial_parity_with_torch():
    torch = pytest.importorskip("torch")
    import torch.nn.utils.prune  # noqa: F401  (torch.nn.utils does not import it itself)
    for ours, theirs in zip(run_tutorial(tg), run_tutorial(torch)):
        if isinstance(ours, (list, float)):
            assert list(ours) == list(theirs) if isinstance(ours, list) else ours == theirs
        else:
            assert str(ours.dtype) == str(theirs.dtype)
            np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(),
                                       rtol=1e-5, atol=1e-6)
