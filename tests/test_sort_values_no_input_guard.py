"""sort, topk, kthvalue, median and msort: PyTorch's backward of their values saves only the
indices, so writing to the input in place after them does not fail their backward (fuzz seed
60601364: baddbmm's output sorted, then written).  tapegrad took the values with a gather, whose
record guards its input's version: a spurious "modified by an inplace operation" error.  gather
itself and cummax save their input in PyTorch too and keep raising."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")

VALUE_OPS = {
    "sort": lambda L, y: y.sort(-1).values,
    "sort_descending": lambda L, y: y.sort(1, descending=True).values,
    "topk": lambda L, y: y.topk(2, -1).values,
    "kthvalue": lambda L, y: y.kthvalue(2, 0).values,
    "median": lambda L, y: y.median(-1).values,
    "msort": lambda L, y: L.msort(y),
}
SAVES_INPUT = {
    "gather": lambda L, y: y.gather(-1, L.zeros(2, 3, 1, dtype=L.long)),
    "cummax": lambda L, y: y.cummax(-1).values,
}


def _run(L, op, write):
    x = L.tensor(np.linspace(-1.0, 1.0, 18).reshape(2, 3, 3)[:, :, ::-1].copy(),
                 requires_grad=True)
    y = x * 1.5
    values = op(L, y)
    if write:
        y.mul_(2.0)
    w = L.tensor(np.arange(values.numel(), dtype=np.float64).reshape(tuple(values.shape)))
    (values * w).sum().backward()
    return values.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("name", sorted(VALUE_OPS))
@pytest.mark.parametrize("write", [False, True])
def test_input_written_after_the_values_backward_runs(name, write):
    expected = _run(torch, VALUE_OPS[name], write)
    got = _run(tapegrad, VALUE_OPS[name], write)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])


@pytest.mark.parametrize("name", sorted(SAVES_INPUT))
def test_ops_that_save_their_input_still_raise(name):
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _run(torch, SAVES_INPUT[name], True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _run(tapegrad, SAVES_INPUT[name], True)


def test_values_gradcheck_float64():
    x = tapegrad.tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    for op in VALUE_OPS.values():
        assert tapegrad.autograd.gradcheck(lambda t, op=op: op(tapegrad, t), (x,))
