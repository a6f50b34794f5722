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


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("qdtype", ["qint8", "quint8"])
@pytest.mark.parametrize("reduce_range", [False, True])
@pytest.mark.parametrize("values", [
    [[-1.3, 0.2, 2.7], [0.5, -0.01, 1.1]],     # both signs
    [2.0, 2.0, 2.0],                          # positive only: zero joins the range
    [-0.75, -3.5, -0.25],                     # negative only
    [0.0, 0.0],                               # zero range: scale 0.1
    [1e-9, -1e-9],                            # tiny range: the smallest scale
])
def test_quantize_per_tensor_dynamic_matches_torch(qdtype, reduce_range, values):
    # gradient-compression code quantises an update with qparams taken from its own range
    ref = torch.quantize_per_tensor_dynamic(torch.tensor(values), getattr(torch, qdtype),
                                            reduce_range)
    got = tapegrad.quantize_per_tensor_dynamic(tapegrad.tensor(values), getattr(tapegrad, qdtype),
                                               reduce_range)
    assert got.q_scale() == ref.q_scale()
    assert got.q_zero_point() == ref.q_zero_point()
    assert str(got.dtype) == str(ref.dtype) and str(got.qscheme()) == str(ref.qscheme())
    np.testing.assert_array_equal(got.int_repr().numpy(), ref.int_repr().numpy())
    np.testing.assert_array_equal(got.dequantize().numpy(), ref.dequantize().numpy())


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_quantize_per_tensor_dynamic_float16_and_errors():
    x = [[-1.3, 0.2, 2.7], [0.5, -0.01, 1.1]]
    h = tapegrad.quantize_per_tensor_dynamic(tapegrad.tensor(x).t(), tapegrad.float16, False)
    ref = torch.quantize_per_tensor_dynamic(torch.tensor(x).t(), torch.float16, False)
    assert h.dtype == tapegrad.float16 and tuple(h.shape) == tuple(ref.shape)
    np.testing.assert_array_equal(h.numpy(), ref.numpy())
    for lib in (torch, tapegrad):
        with pytest.raises(RuntimeError, match="dtype QInt32not supported"):
            lib.quantize_per_tensor_dynamic(lib.tensor(x), lib.qint32, False)
        with pytest.raises(RuntimeError, match="dtype Floatnot supported"):
            lib.quantize_per_tensor_dynamic(lib.tensor(x), lib.float32, False)
        with pytest.raises(RuntimeError, match="Quantize only works on Float Tensor, got Double"):
            lib.quantize_per_tensor_dynamic(lib.tensor(x, dtype=lib.float64), lib.qint8, False)
        with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
            lib.quantize_per_tensor_dynamic(lib.zeros(0), lib.quint8, False)
