"""What the session-31 proxy of public plain-PyTorch NLP scripts (seq2seq with attention, word2vec,
CRF layers, label smoothing, pointer networks, top-k / nucleus sampling, packed sequences) touched
that tapegrad did differently, each checked against PyTorch."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _signbits(t) -> np.ndarray:
    return np.signbit(t.detach().numpy())


# -- the sign of zero gradients through (log_)softmax of masked rows ---------------------------

_LOGITS = [[0.5, 1.0, -0.3, 2.0], [1.5, -1.0, 0.3, 0.2], [0.0, 0.4, 0.8, -0.5]]
_ROW_MASK = [[1.0], [0.0], [1.0]]


@pytest.mark.parametrize("fn", ["log_softmax", "softmax"])
@pytest.mark.parametrize("size", [4, 3000])
def test_negated_masked_softmax_loss_gives_positive_zero_rows(fn, size):
    """A masked NLL written -(log_softmax(x) * mask).sum() sends -0 adjoints into the masked
    rows: PyTorch's backward gives +0 there over the last dim (it prints "0."), where tapegrad
    gave -0 ("-0."), and -0 over another dim (its kernel sums into a +0 accumulator there).
    3000 columns are past the C kernel's size limit for log_softmax: numpy's formula."""
    logits = np.tile(_LOGITS, (1, size // 4)).astype(np.float32)
    for dim in (-1, 0):
        grads = []
        for lib in (tg, torch):
            x = lib.tensor(logits, requires_grad=True)
            # a masked row (dim -1) or a masked column (dim 0): softmax's sum runs along it
            mask = lib.tensor(_ROW_MASK) if dim == -1 else lib.tensor([[1.0, 0.0, 1.0, 1.0] * (size // 4)])
            y = getattr(x, fn)(dim)
            (-(y * mask)).sum().backward()
            grads.append(x.grad)
        np.testing.assert_allclose(grads[0].numpy(), grads[1].numpy(), rtol=1e-5, atol=1e-7)
        zeros = grads[1].numpy() == 0
        np.testing.assert_array_equal(_signbits(grads[0])[zeros], _signbits(grads[1])[zeros])


def test_kl_div_label_smoothing_padded_row_gradient_prints_zero():
    """The annotated-transformer style LabelSmoothing zeroes the padded rows of true_dist, so
    KLDivLoss's adjoint there is -0 * g; through log_softmax PyTorch gives +0."""
    grads = []
    for lib in (tg, torch):
        x = lib.tensor(_LOGITS, requires_grad=True)
        true_dist = lib.tensor([[0.05, 0.05, 0.0, 0.9], [0.0, 0.0, 0.0, 0.0], [0.05, 0.9, 0.05, 0.0]])
        loss = lib.nn.KLDivLoss(reduction="sum")(x.log_softmax(-1), true_dist)
        loss.backward()
        grads.append(x.grad)
    np.testing.assert_allclose(grads[0].numpy(), grads[1].numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(_signbits(grads[0]), _signbits(grads[1]))


def test_softmax_backward_float64_negative_zero_adjoint_and_finite_differences():
    """The softmax VJP is now PyTorch's y * (g - sum(g y)) with sums that keep -0: an all -0
    adjoint gives +0, and the float64 gradient and its gradient still check against finite
    differences."""
    for lib in (tg, torch):
        x = lib.tensor([[0.1, 0.2, 0.3]], dtype=lib.float64, requires_grad=True)
        x.softmax(-1).backward(lib.tensor([[-0.0, -0.0, -0.0]], dtype=lib.float64))
        assert not _signbits(x.grad).any(), lib.__name__
        x.grad = None
        x.log_softmax(-1).backward(lib.tensor([[-0.0, -0.0, -0.0]], dtype=lib.float64))
        assert not _signbits(x.grad).any(), lib.__name__
    rng = np.random.default_rng(3)
    x = tg.tensor(rng.normal(size=(3, 5)), requires_grad=True)
    w = tg.tensor(rng.normal(size=(3, 5)))
    assert tg.autograd.gradcheck(lambda t: (t.softmax(-1) * w).sum(), (x,))
    assert tg.autograd.gradgradcheck(lambda t: t.softmax(-1) * w, (x,))
    assert tg.autograd.gradcheck(lambda t: (t.softmax(0) * w).sum(), (x,))
    assert tg.autograd.gradgradcheck(lambda t: t.log_softmax(0) * w, (x,))
    xt = torch.tensor(x.detach().numpy(), requires_grad=True)
    (xt.softmax(-1) * torch.tensor(w.numpy())).sum().backward()
    (x.softmax(-1) * w).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-14)


# -- cumsum's running sum starts from +0 -------------------------------------------------------

def test_cumsum_of_leading_negative_zeros_is_positive_zero():
    for dtype in ("float32", "float64", "float16"):
        ours = tg.tensor([-0.0, -0.0, 1.5, -1.5, -0.0], dtype=getattr(tg, dtype)).cumsum(0)
        theirs = torch.tensor([-0.0, -0.0, 1.5, -1.5, -0.0], dtype=getattr(torch, dtype)).cumsum(0)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        np.testing.assert_array_equal(_signbits(ours), _signbits(theirs))
    # a 0-d cumsum is a copy in both
    assert _signbits(tg.tensor(-0.0).cumsum(0)) == _signbits(torch.tensor(-0.0).cumsum(0))


def test_cumsum_backward_of_negative_zero_adjoint_is_positive_zero():
    grads = []
    for lib in (tg, torch):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x.cumsum(0).backward(lib.tensor([0.0, -0.0, -0.0]))
        grads.append(x.grad)
    np.testing.assert_array_equal(_signbits(grads[0]), _signbits(grads[1]))
    assert str(grads[0]) == str(grads[1])


# -- the printed class of a sparse gradient ------------------------------------------------------

def test_sparse_embedding_bag_gradient_prints_as_torch_tensor():
    """The text-classification tutorial's nn.EmbeddingBag(sparse=True): printing
    type(emb.weight.grad) shows <class 'torch.Tensor'> in PyTorch (sparse tensors are Tensors);
    tapegrad printed its own class name."""
    texts = []
    for lib in (tg, torch):
        bag = lib.nn.EmbeddingBag(10, 3, sparse=True)
        out = bag(lib.tensor([1, 2, 4, 5, 4, 3]), lib.tensor([0, 2]))
        out.sum().backward()
        grad = bag.weight.grad
        assert grad.is_sparse
        texts.append(repr(type(grad)).replace("tapegrad", "torch"))
    assert texts[0] == texts[1] == "<class 'torch.Tensor'>"
    assert repr(type(tg.ones(2).to_sparse())) == "<class 'torch.Tensor'>"

    class Mine(type(tg.ones(2).to_sparse())):   # a user's subclass keeps its own name
        pass
    assert repr(Mine).endswith(".Mine'>")
