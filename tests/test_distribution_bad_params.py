"""Distributions given numpy arrays or lists (a common RL slip: Categorical(policy_output_np))
fail as PyTorch's do: the exception type and message."""
import numpy as np
import pytest

import tapegrad as tg
import tapegrad.distributions as tgd

torch = pytest.importorskip("torch")
D = torch.distributions

a = np.array([0.5, 0.5])
CASES = {
    "categorical_probs_ndarray": lambda lib, d: d.Categorical(probs=a),
    "categorical_logits_ndarray": lambda lib, d: d.Categorical(logits=a),
    "categorical_logits_list": lambda lib, d: d.Categorical(logits=[0.1, 0.2]),
    "one_hot_ndarray": lambda lib, d: d.OneHotCategorical(a),
    "normal_ndarray_loc": lambda lib, d: d.Normal(np.zeros(2), 1.0),
    "normal_ndarray_scale": lambda lib, d: d.Normal(lib.zeros(2), a),
    "bernoulli_ndarray": lambda lib, d: d.Bernoulli(a),
    "beta_ndarray": lambda lib, d: d.Beta(a, a),
    "uniform_ndarray": lambda lib, d: d.Uniform(np.zeros(2), 1.0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_parameter_fails_as_torch(name):
    with pytest.raises(Exception) as theirs:
        CASES[name](torch, D)
    with pytest.raises(Exception) as ours:
        CASES[name](tg, tgd)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)
