"""Regressions found by the seventh argument-form sweep (hooks, autograd.Function, nn.utils,
torch.func) against PyTorch."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _both(make):
    """Run `make(lib)` with PyTorch and with tapegrad; return the two results."""
    return make(torch), make(tg)


def _error(make, lib):
    try:
        make(lib)
    except Exception as e:              # noqa: BLE001 - the type is what is compared
        return type(e).__name__, str(e)
    return None


def _tied_model(lib):
    class Tied(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = lib.nn.Linear(3, 2)
            self.b = lib.nn.Linear(3, 2)
            self.b.weight = self.a.weight
            with lib.no_grad():
                self.a.weight.copy_(lib.tensor([[0.3, -0.1, 0.5], [-0.4, 0.2, 0.7]]))
                self.a.bias.fill_(0.1)
                self.b.bias.fill_(-0.2)

        def forward(self, x):
            return self.a(x) + self.b(x)
    return Tied()


@pytest.mark.parametrize("tie_weights", [True, False])
@pytest.mark.parametrize("given", ["a.weight", "b.weight"])
def test_functional_call_replaces_every_name_of_a_tied_weight(tie_weights, given):
    # A value for one name of a tied weight replaced only that name (silently wrong).
    def run(lib):
        x = lib.tensor([[1.0, -2.0, 0.5], [0.25, 1.0, -1.0]])
        out = lib.func.functional_call(_tied_model(lib), {given: lib.ones(2, 3)}, (x,),
                                       tie_weights=tie_weights)
        return out.detach().numpy()
    a, b = _both(run)
    np.testing.assert_allclose(b, a, rtol=1e-6)


def test_functional_call_tied_weights_refuses_two_values_and_strict_counts_ties():
    def two_values(lib):
        lib.func.functional_call(_tied_model(lib), {"a.weight": lib.ones(2, 3),
                                                    "b.weight": lib.zeros(2, 3)},
                                 (lib.ones(1, 3),))
    a, b = _error(two_values, torch), _error(two_values, tg)
    assert a[0] == b[0] == "ValueError" and a[1] == b[1]

    def strict(lib):   # the tied name b.weight is filled in before the strict check
        return lib.func.functional_call(
            _tied_model(lib), {"a.weight": lib.ones(2, 3), "a.bias": lib.zeros(2),
                               "b.bias": lib.zeros(2)}, (lib.ones(1, 3),), strict=True).tolist()
    a, b = _both(strict)
    np.testing.assert_allclose(b, a)


def test_functional_call_repeated_keys_message():
    def run(lib):
        lib.func.functional_call(lib.nn.Linear(3, 2), ({"weight": lib.ones(2, 3)},
                                                       {"weight": lib.ones(2, 3)}), lib.ones(3))
    assert _error(run, torch) == _error(run, tg)
