"""F.ctc_loss / nn.CTCLoss: losses and log_probs gradients against torch over random batches
(padded and concatenated targets, repeated labels, every reduction, blank, zero_infinity,
lengths as tensors or lists, float32), hand values and central differences without torch."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn
from tapegrad.nn import functional as F


def log_softmax(logits):
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


def run(lib, lp, targets, input_lengths, target_lengths, **kwargs):
    x = lib.tensor(lp, requires_grad=True)
    if not isinstance(input_lengths, list):
        input_lengths, target_lengths = lib.tensor(input_lengths), lib.tensor(target_lengths)
    y = lib.nn.functional.ctc_loss(x, lib.tensor(targets), input_lengths, target_lengths,
                                   **kwargs)
    w = np.random.default_rng(3).standard_normal(tuple(y.shape)).astype(lp.dtype)
    (y * lib.tensor(w)).sum().backward()
    return y.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("seed", range(12))
def test_ctc_loss_matches_torch(torch, seed):
    rng = np.random.default_rng(seed)
    T, N, C, S = int(rng.integers(1, 12)), int(rng.integers(1, 5)), int(rng.integers(2, 7)), \
        int(rng.integers(0, 6))
    lp = log_softmax(rng.standard_normal((T, N, C)) * 2)
    blank = int(rng.integers(0, C))
    tl = rng.integers(0, S + 1, N)
    tgt = rng.integers(0, C, (N, S))
    tgt = np.where(tgt == blank, (blank + 1) % C, tgt)
    if seed % 3 == 0:                         # repeated labels need a blank between them
        tgt[:, 1::2] = tgt[:, ::2][:, :tgt[:, 1::2].shape[1]]
    il = rng.integers(1, T + 1, N)
    if seed % 4 == 1:                         # concatenated 1-d targets
        tgt = np.concatenate([tgt[i, :tl[i]] for i in range(N)]).astype(np.int64)
    lengths = (list(map(int, il)), list(map(int, tl))) if seed % 5 == 2 else (il, tl)
    kwargs = dict(blank=blank, reduction=("mean", "sum", "none")[seed % 3],
                  zero_infinity=bool(seed % 2))
    for ours, theirs in zip(run(tg, lp, tgt, *lengths, **kwargs),
                            run(torch, lp, tgt, *lengths, **kwargs)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-7, atol=1e-9)


def test_ctc_loss_float32_unbatched_and_impossible(torch):
    rng = np.random.default_rng(0)
    lp = log_softmax(rng.standard_normal((20, 3, 6))).astype(np.float32)
    tgt = rng.integers(1, 6, (3, 5))
    for ours, theirs in zip(run(tg, lp, tgt, [20, 15, 9], [5, 3, 4]),
                            run(torch, lp, tgt, [20, 15, 9], [5, 3, 4])):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    one = F.ctc_loss(tg.tensor(lp[:, 0]), tg.tensor(tgt[0]), tg.tensor(20), tg.tensor(5))
    expected = torch.nn.functional.ctc_loss(torch.tensor(lp[:, 0]), torch.tensor(tgt[0]),
                                            torch.tensor(20), torch.tensor(5))
    assert one.shape == () and one.item() == pytest.approx(expected.item(), rel=1e-5)
    # three equal labels need five frames: three are impossible (inf, nan gradients; or zeros)
    short = log_softmax(rng.standard_normal((3, 1, 4)))
    for zero_infinity in (False, True):
        ours = run(tg, short, [[1, 1, 1]], [3], [3], reduction="none",
                   zero_infinity=zero_infinity)
        theirs = run(torch, short, [[1, 1, 1]], [3], [3], reduction="none",
                     zero_infinity=zero_infinity)
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a, b)


def test_ctc_loss_hand_value_and_gradcheck(gradcheck):
    # One frame, target [1]: the only alignment emits 1, so the loss is -log p(1).
    lp = tg.tensor(np.log([[[0.25, 0.75]]]))
    loss = F.ctc_loss(lp, tg.tensor([[1]]), [1], [1], reduction="sum")
    assert loss.item() == pytest.approx(-np.log(0.75))
    # Two frames, target [1]: alignments (1,1), (1,b), (b,1).
    lp = tg.tensor(np.log([[[0.4, 0.6]], [[0.3, 0.7]]]))
    loss = F.ctc_loss(lp, tg.tensor([[1]]), [2], [1], reduction="sum")
    assert loss.item() == pytest.approx(-np.log(0.6 * 0.7 + 0.6 * 0.3 + 0.4 * 0.7))
    # The gradient with respect to logits (through log_softmax) is the exact derivative.
    rng = np.random.default_rng(1)
    gradcheck(lambda z: F.ctc_loss(z.log_softmax(2), tg.tensor([[1, 2, 2], [3, 1, 0]]),
                                   [6, 5], [3, 2]), rng.standard_normal((6, 2, 4)))


def test_ctc_module_and_errors(torch):
    assert repr(nn.CTCLoss()) == repr(torch.nn.CTCLoss()) == "CTCLoss()"
    lp = tg.randn(10, 3, 5).log_softmax(2)
    tgt = tg.randint(1, 5, (3, 4))
    il, tl = tg.full((3,), 10, dtype=tg.int64), tg.tensor([4, 2, 3])
    assert nn.CTCLoss(reduction="none")(lp, tgt, il, tl).shape == (3,)
    assert F.ctc_loss(lp, tgt, il, tl).grad_fn is None     # no input requires grad
    x = lp.detach().requires_grad_()
    assert type(F.ctc_loss(x, tgt, il, tl, reduction="none").grad_fn).__name__ == \
        "CtcLossBackward0"
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 10, "
                                           "but got value 11"):
        F.ctc_loss(lp, tgt, tg.full((3,), 11, dtype=tg.int64), tl)
    with pytest.raises(RuntimeError, match="Expected tensor to have size at least 5 at dimension "
                                           "1, but got size 4 for argument #2 'targets'"):
        F.ctc_loss(lp, tgt, il, tg.tensor([5, 2, 3]))
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        F.ctc_loss(lp, tgt, il[:2], tl)
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(lp, tgt, il, tl, blank=5)
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.ctc_loss(lp, tgt, il, tl, reduction="foo")
