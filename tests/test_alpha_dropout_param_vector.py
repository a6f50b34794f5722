"""F.alpha_dropout / nn.AlphaDropout and nn.utils.parameters_to_vector / vector_to_parameters."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

SAT = 1.0507009873554805 * 1.6732632423543772


def test_alpha_dropout_eval_is_identity_and_repr(torch):
    x = tg.randn(3, 4)
    assert F.alpha_dropout(x, 0.3) is x
    m = tg.nn.AlphaDropout(0.2).eval()
    assert m(x) is x
    assert repr(tg.nn.AlphaDropout()) == repr(torch.nn.AlphaDropout()) == \
        "AlphaDropout(p=0.5, inplace=False)"


def test_alpha_dropout_training_formula_and_gradient():
    tg.manual_seed(0)
    p = 0.2
    x = tg.full((20000,), 0.5, dtype=tg.float64, requires_grad=True)
    y = F.alpha_dropout(x, p, training=True)
    a = 1 / math.sqrt((SAT * SAT * p + 1) * (1 - p))
    kept, dropped = a * 0.5 + SAT * a * p, -SAT * a + SAT * a * p
    vals = y.detach().numpy()
    assert np.all(np.isclose(vals, kept) | np.isclose(vals, dropped))
    assert abs(np.isclose(vals, dropped).mean() - p) < 0.02
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(np.isclose(vals, kept), a, 0.0))
    # SELU's fixed point: unit-normal input keeps mean 0 and variance 1.
    z = F.alpha_dropout(tg.randn(200000, dtype=tg.float64), 0.3, training=True).numpy()
    assert abs(z.mean()) < 0.02 and abs(z.var() - 1) < 0.03


@pytest.mark.parametrize("lib", ["tg", "torch"])
def test_alpha_dropout_bad_p(lib, request):
    M = tg if lib == "tg" else request.getfixturevalue("torch")
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but "
                                         "got 1.5"):
        M.nn.functional.alpha_dropout(M.ones(2), 1.5)
    with pytest.raises(ValueError, match="but got -0.1"):
        M.nn.AlphaDropout(-0.1)
    assert M.nn.functional.alpha_dropout(M.ones(2), 1.0, training=True).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("lib", ["tg", "torch"])
def test_parameters_to_vector_round_trip(lib, request):
    M = tg if lib == "tg" else request.getfixturevalue("torch")
    M.manual_seed(0)
    net = M.nn.Sequential(M.nn.Linear(3, 2), M.nn.Linear(2, 1))
    vec = M.nn.utils.parameters_to_vector(net.parameters())
    assert tuple(vec.shape) == (11,) and vec.requires_grad
    (vec * vec).sum().backward()
    np.testing.assert_allclose(net[0].weight.grad.numpy(), 2 * net[0].weight.detach().numpy(),
                               rtol=1e-6)
    M.nn.utils.vector_to_parameters(M.arange(11.0), net.parameters())
    assert net[0].weight.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert net[1].bias.tolist() == [10.0] and net[1].bias.requires_grad
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        M.nn.utils.vector_to_parameters([1.0], net.parameters())
