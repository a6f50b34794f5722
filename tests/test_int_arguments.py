"""What PyTorch's argument parser reads as an int (tensor.is_int, the one test of the Python
modules): a Python or numpy integer, not a bool.  The legacy sparse constructors used a test of
their own that refused numpy integers (torch.sparse.FloatTensor(np.int64(2), 3) raised
TypeError where PyTorch makes the tensor); their one-sequence form takes a torch.Size only."""
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")

EXPRS = [
    "T.sparse.FloatTensor(np.int64(2), np.int64(3))", "T.sparse.FloatTensor(np.int64(2))",
    "T.sparse.FloatTensor(i, v, (np.int64(3), 3))", "T.sparse.FloatTensor(i, v, T.Size([3, 3]))",
    "T.sparse.DoubleTensor(np.int32(2), 3)", "T.sparse.FloatTensor(T.Size([2, 3]))",
    "T.sparse.FloatTensor((2, 3))", "T.sparse.FloatTensor([np.int64(2), 3])",
    "T.sparse.FloatTensor(())", "T.sparse.FloatTensor((2.0, 3))",
    "T.sparse.FloatTensor(np.bool_(True))", "T.sparse.FloatTensor(True)",
    "T.sparse_coo_tensor(i, v, size=(np.int64(3), 3))",
    "T.sparse_coo_tensor(i, v, (np.int64(3), np.int32(4)))",
    "T.FloatTensor(np.int64(2), np.int64(3))", "T.eye(np.int64(2))", "T.eye(np.bool_(True))",
    "T.linspace(0, 1, np.int64(3))", "T.zeros(2).repeat(np.int64(2))",
]


def _outcome(T, expr):
    i = T.tensor([[0, 1], [1, 2]])
    v = T.tensor([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # (the legacy constructors' deprecation)
        try:
            r = eval(expr, {"T": T, "np": np, "i": i, "v": v})
        except TypeError as e:
            return "TypeError", str(e).split("\n")[0][:60]
    return tuple(r.shape), str(r.dtype).split(".")[-1], r.layout is T.sparse_coo


@pytest.mark.parametrize("expr", EXPRS)
def test_int_arguments_as_pytorch(expr):
    assert _outcome(tapegrad, expr) == _outcome(torch, expr)
