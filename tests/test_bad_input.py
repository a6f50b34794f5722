"""Bad input across the public API: PyTorch's exception type and message, never a crash or a
half-recorded tape.  The same calls run against PyTorch when it is installed."""
import gc

import pytest

import tapegrad as tg

# name -> (call taking the library and its functional module, exception type, message start)
CASES = {
    "non-tensor argument": (lambda L, F: L.exp([1.0, 2.0]), TypeError, None),
    "matmul mismatch": (lambda L, F: L.ones(2, 3) @ L.ones(4, 5), RuntimeError,
                        "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    "mm of vectors": (lambda L, F: L.mm(L.ones(3), L.ones(3)), RuntimeError,
                      "self must be a matrix"),
    "bmm of matrices": (lambda L, F: L.bmm(L.ones(2, 3), L.ones(3, 2)), RuntimeError,
                        "batch1 must be a 3D tensor"),
    "dot size mismatch": (lambda L, F: L.dot(L.ones(3), L.ones(4)), RuntimeError,
                          "inconsistent tensor size"),
    "cat sizes": (lambda L, F: L.cat([L.ones(2, 3), L.ones(2, 4)]), RuntimeError,
                  "Sizes of tensors must match except in dimension 0"),
    "stack sizes": (lambda L, F: L.stack([L.ones(2), L.ones(3)]), RuntimeError,
                    "stack expects each tensor to be equal size"),
    "reshape size": (lambda L, F: L.ones(6).reshape(4, 4), RuntimeError,
                     "shape '[4, 4]' is invalid for input of size 6"),
    "view layout": (lambda L, F: L.ones(2, 3).t().view(6), RuntimeError,
                    "view size is not compatible with input tensor's size and stride"),
    "expand size": (lambda L, F: L.ones(2, 3).expand(4, 3), RuntimeError,
                    "The expanded size of the tensor (4) must match the existing size (2)"),
    "reduction dim": (lambda L, F: L.ones(2, 3).sum(5), IndexError,
                      "Dimension out of range (expected to be in range of [-2, 1], but got 5)"),
    "transpose dim": (lambda L, F: L.ones(2, 3).transpose(0, 3), IndexError,
                      "Dimension out of range"),
    "softmax dim": (lambda L, F: L.ones(2, 3).softmax(4), IndexError, "Dimension out of range"),
    "squeeze dim": (lambda L, F: L.ones(2).squeeze(3), IndexError, "Dimension out of range"),
    "cross_entropy target": (lambda L, F: F.cross_entropy(L.ones(2, 3), L.tensor([0, 5])),
                             IndexError, "Target 5 is out of bounds."),
    "cross_entropy batch": (lambda L, F: F.cross_entropy(L.ones(2, 3), L.ones(3)), ValueError,
                            "Expected input batch_size (2) to match target batch_size (3)."),
    "nll_loss target dims": (lambda L, F: F.nll_loss(L.ones(2, 3), L.tensor([[0], [1]])),
                             RuntimeError, "0D or 1D target tensor expected"),
    "gather index": (lambda L, F: L.ones(2, 3).gather(1, L.tensor([[0], [7]])), RuntimeError,
                     "index 7 is out of bounds for dimension 1 with size 3"),
    "index_select dtype": (lambda L, F: L.ones(3).index_select(0, L.tensor([0.0])),
                           RuntimeError, "index_select(): Expected dtype int32 or int64"),
    "embedding index dtype": (lambda L, F: F.embedding(L.tensor([0.5]), L.ones(3, 2)),
                              RuntimeError, "Expected tensor for argument #1 'indices'"),
    "linear shapes": (lambda L, F: F.linear(L.ones(2, 3), L.ones(4, 5)), RuntimeError,
                      "mat1 and mat2 shapes cannot be multiplied (2x3 and 5x4)"),
    "where condition dtype": (lambda L, F: L.where(L.ones(2), L.ones(2), L.zeros(2)),
                              RuntimeError, "where expected condition to be a boolean tensor"),
    "add a string": (lambda L, F: L.ones(2) + "a", TypeError,
                     "unsupported operand type(s) for +: 'Tensor' and 'str'"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_raises_pytorchs_error_and_keeps_the_tape(name):
    call, exc, message = CASES[name]
    x = tg.ones(2, requires_grad=True)
    gc.collect()                       # earlier tests' garbage must not be freed mid-measurement
    live = tg._core.tape().live_records
    with pytest.raises(exc) as info:
        call(tg, tg.nn.functional)
    if message is not None:
        assert str(info.value).startswith(message)
    assert tg._core.tape().live_records <= live        # nothing half-recorded
    (x * 2).sum().backward()                            # and the tape still works
    assert x.grad.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("name", list(CASES))
def test_pytorch_raises_the_same(torch, name):
    call, exc, message = CASES[name]
    with pytest.raises(exc) as info:
        call(torch, torch.nn.functional)
    if message is not None:
        assert str(info.value).startswith(message)
