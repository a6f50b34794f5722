"""Regressions found running federated-learning / differential-privacy scripts (FedAvg state_dict
averaging, DP-SGD per-sample gradients, gradient compression) under tapegrad."""
import copy

import numpy as np
import pytest

import tapegrad
import tapegrad.nn as tnn

torch = pytest.importorskip("torch")


def test_parameter_deepcopy_leaves_user_attributes_behind():
    # Opacus-style hooks store p.grad_sample on each parameter; a client model deep-copied from
    # such a model starts without it in PyTorch (Parameter.__deepcopy__ clones data only).
    for lib, nn in ((torch, torch.nn), (tapegrad, tnn)):
        lin = nn.Linear(2, 3)
        lin(lib.ones(4, 2)).sum().backward()
        lin.weight.grad_sample = lib.ones(4, 3, 2)
        lin.bias.note = "client-0"
        clone = copy.deepcopy(lin)
        assert not hasattr(clone.weight, "grad_sample")
        assert not hasattr(clone.bias, "note")
        assert clone.weight.grad is None
        assert type(clone.weight) is nn.Parameter and clone.weight.requires_grad
        # the original keeps its attributes and gradient
        assert lin.weight.grad_sample.shape == (4, 3, 2) and lin.weight.grad is not None
    p = tnn.Parameter(tapegrad.ones(2))
    p.tag = [1]
    q = copy.deepcopy(p)
    assert not hasattr(q, "tag")
    np.testing.assert_array_equal(q.detach().numpy(), [1.0, 1.0])
    # a plain tensor's deep copy does carry its attributes, in both libraries
    t_torch, t_tg = torch.ones(2), tapegrad.ones(2)
    t_torch.tag, t_tg.tag = [1], [1]
    assert copy.deepcopy(t_torch).tag == copy.deepcopy(t_tg).tag == [1]
