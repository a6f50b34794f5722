"""What the proxy of public meta-learning scripts (MAML with functional forwards and
create_graph, FOMAML, Reptile, Meta-SGD, ANIL, CAVIA, MAML++, Prototypical / Matching / Relation
networks, R2D2, hypernetworks, learn2learn- and torchmeta-style wrappers) found tapegrad doing
differently from PyTorch."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

torch = pytest.importorskip("torch")


# -- Module._named_members(get_members_fn, ...): torchmeta's MetaModule ------------------------

def _meta_module_classes(lib):
    """torchmeta's MetaModule idiom: parameters of MetaModule subclasses only, collected through
    Module._named_members with a lambda (PyTorch's private but widely used signature)."""

    class MetaModule(lib.nn.Module):
        def meta_named_parameters(self, prefix="", recurse=True):
            return self._named_members(
                lambda module: module._parameters.items() if isinstance(module, MetaModule) else [],
                prefix=prefix, recurse=recurse)

    class MetaLinear(lib.nn.Linear, MetaModule):
        def forward(self, input, params=None):
            params = OrderedDict(self.named_parameters()) if params is None else params
            return lib.nn.functional.linear(input, params["weight"], params.get("bias"))

    class MetaSequential(lib.nn.Sequential, MetaModule):
        pass

    return MetaModule, MetaLinear, MetaSequential


@pytest.mark.parametrize("prefix,recurse", [("", True), ("net", True), ("", False)])
def test_named_members_takes_a_members_function(prefix, recurse):
    names = []
    for lib in (tg, torch):
        _, MetaLinear, MetaSequential = _meta_module_classes(lib)
        lib.manual_seed(0)
        # a plain Linear among MetaLinears: its parameters are not meta-parameters
        model = MetaSequential(MetaLinear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 4),
                               MetaLinear(4, 2, bias=False))
        names.append([n for n, _ in model.meta_named_parameters(prefix=prefix, recurse=recurse)])
    assert names[0] == names[1]
    if recurse:
        assert names[0] == [f"{prefix}.{n}" if prefix else n
                            for n in ("0.weight", "0.bias", "3.weight")]


def test_named_members_function_shares_duplicates_once():
    # a weight shared by two MetaLinears is yielded once, as with named_parameters
    for lib in (tg, torch):
        _, MetaLinear, MetaSequential = _meta_module_classes(lib)
        first, second = MetaLinear(3, 3), MetaLinear(3, 3)
        second.weight = first.weight
        model = MetaSequential(first, second)
        got = [n for n, _ in model.meta_named_parameters()]
        assert got == ["0.weight", "0.bias", "1.bias"], lib.__name__


def test_meta_module_second_order_step_matches_torch():
    """The torchmeta gradient_update_parameters loop on meta_named_parameters: the meta-gradients
    equal PyTorch's."""
    grads = []
    for lib in (tg, torch):
        _, MetaLinear, _ = _meta_module_classes(lib)
        lin = MetaLinear(3, 2)
        with lib.no_grad():
            lin.weight.copy_(lib.tensor([[0.2, -0.4, 0.1], [0.5, 0.3, -0.2]]))
            lin.bias.copy_(lib.tensor([0.1, -0.1]))
        x = lib.tensor([[1.0, 2.0, -1.0], [0.5, -0.5, 1.5], [0.0, 1.0, 1.0]])
        y = lib.tensor([0, 1, 1])
        params = OrderedDict(lin.meta_named_parameters())
        inner = lib.nn.functional.cross_entropy(lin(x, params), y)
        step = lib.autograd.grad(inner, params.values(), create_graph=True)
        fast = OrderedDict((n, p - 0.4 * g) for (n, p), g in zip(params.items(), step))
        lib.nn.functional.cross_entropy(lin(x, fast), y).backward()
        grads.append([p.grad.numpy() for p in lin.parameters()])
    for have, want in zip(*grads):
        np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-7)


# -- cdist's compute_mode ---------------------------------------------------------------------

def test_cdist_refuses_compute_mode_none_as_torch():
    a, b = np.ones((3, 2)), np.zeros((4, 2))
    for lib in (tg, torch):
        with pytest.raises(ValueError, match="None is not a valid value for compute_mode"):
            lib.cdist(lib.tensor(a), lib.tensor(b), compute_mode=None)
        d = lib.cdist(lib.tensor(a), lib.tensor(b), compute_mode="use_mm_for_euclid_dist_if_necessary")
        np.testing.assert_allclose(d.numpy(), np.full((3, 4), np.sqrt(2.0)))
