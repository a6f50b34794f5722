"""Differences the session-40 fuzz runs (second pass) found (tools/fuzz.py), each checked
against torch."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _both(build):
    """build(T) run under torch and under tapegrad: the two results."""
    return build(torch), build(tg)


def _assert_same(ours, theirs):
    assert str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_array_equal(ours.detach().float().numpy(),
                                  theirs.detach().float().numpy())


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", ["cov", "corrcoef", "cov_aweights", "cov_1d"])
def test_cov_under_autocast_runs_its_mm_in_the_autocast_dtype(low, op):
    """PyTorch's cov reaches mm through the dispatcher, so autocast casts its operands: the
    result is in the autocast dtype (it stayed float32 here: fuzz seed 66200106)."""
    def build(T):
        x = T.tensor([[0.78, 0.67, 1.87], [1.0, 2.0, 0.5]], requires_grad=True)
        with T.autocast("cpu", dtype=getattr(T, low)):
            out = {"cov": lambda: T.cov(x), "corrcoef": lambda: T.corrcoef(x),
                   "cov_aweights": lambda: T.cov(x, aweights=T.tensor([1.0, 2.0, 0.5])),
                   "cov_1d": lambda: T.cov(x[0])}[op]()
        grad, = T.autograd.grad(out.float().sum(), x)
        return out, grad
    (theirs, their_grad), (ours, our_grad) = _both(build)
    _assert_same(ours, theirs)
    _assert_same(our_grad, their_grad)


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("cell", ["RNNCell", "GRUCell", "LSTMCell"])
def test_recurrent_cells_under_autocast_compute_in_the_autocast_dtype(low, cell):
    """Under a bfloat16 autocast the cells' linear gives bfloat16 gates: RNNCell's result is
    bfloat16 and GRU's and LSTM's gates are rounded as PyTorch's (the core's tanh and chunk
    returned float32 here, so RNNCell was float32 and the others' values off)."""
    def build(T):
        x = T.tensor([[0.5, 0.2], [0.1, 0.9]], requires_grad=True)
        module = getattr(T.nn, cell)(2, 2)
        with T.no_grad():
            for p in module.parameters():
                p.copy_(T.linspace(-0.5, 0.5, p.numel()).reshape(p.shape))
        with T.autocast("cpu", dtype=getattr(T, low)):
            out = module(x)
        out = out[0] if isinstance(out, tuple) else out
        grads = T.autograd.grad(out.float().sum(), [x, module.weight_hh])
        return out, grads
    (theirs, their_grads), (ours, our_grads) = _both(build)
    _assert_same(ours, theirs)
    for mine, reference in zip(our_grads, their_grads):
        _assert_same(mine, reference)
