"""Idioms of public tutorial notebooks (task real48d), each compared with PyTorch.

The notebooks run in this task (tensor basics, autograd walk-throughs, linear/logistic regression,
a character RNN) showed no difference beyond random draws; these tests guard the printed forms and
values they lean on, so that a later change cannot break them silently."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _printed(lib):
    # what a "tensor basics" notebook prints cell after cell: reductions with keepdim, named-tuple
    # results, masks, integer division and modulo, dtype conversions, mixed-magnitude floats
    x = lib.arange(12).reshape(3, 4)
    out = [
        x.float().mean(dim=0, keepdim=True), x.sum(1).dtype, x.max(dim=1),
        lib.where(x > 5, x, -x), x[x % 2 == 0], x.flatten()[::3],
        lib.tensor([1, 2, 3]) / 2, lib.tensor([1, 2, 3]) // 2, lib.tensor([-3]) % 2,
        lib.tensor([1.5, 2.5]).round(), lib.tensor([1e-5, 1e5]),
        lib.tensor([[0.1234567, 100.0]], dtype=lib.float64),
        lib.sort(lib.tensor([3, 1, 2]), descending=True),
        lib.unique(lib.tensor([3, 1, 2, 3, 1]), return_counts=True),
        lib.tensor([1, 2, 3]).type(lib.FloatTensor), lib.tensor([1.0, 2.0]).type(),
        lib.chunk(lib.arange(7), 3), lib.split(lib.arange(5), 2),
        lib.topk(lib.tensor([3.0, 1.0, 4.0, 1.0, 5.0]), 2),
        lib.tensor([[1, 2], [3, 4]], dtype=lib.float16), lib.arange(0, 1, 0.25),
        lib.var(x.float(), 1, unbiased=False), lib.tensor([[1.0, 2.0], [3.0, 4.0]]).inverse(),
    ]
    return [str(o) for o in out]


def test_basics_notebook_prints_match_torch():
    assert _printed(tg) == _printed(torch)


def test_float_row_assigned_into_int_tensor_truncates():
    ours = tg.zeros(2, 3, dtype=tg.int64)
    ours[0] = tg.tensor([1.7, -2.2, 3.9])
    theirs = torch.zeros(2, 3, dtype=torch.int64)
    theirs[0] = torch.tensor([1.7, -2.2, 3.9])
    assert str(ours) == str(theirs)


def test_std_of_integer_tensor_raises_like_torch():
    with pytest.raises(RuntimeError, match="floating point and complex"):
        torch.arange(3).std()
    with pytest.raises(RuntimeError, match="floating point and complex"):
        tg.arange(3).std()


def _char_rnn_step(lib, w_ih, w_hh, b, x_idx, y_idx):
    # the "hihell -> ihello" notebook: one-hot inputs through an RNN cell written out by hand,
    # cross-entropy summed over time steps, one backward over the whole sequence
    w_ih = lib.tensor(w_ih, requires_grad=True)
    w_hh = lib.tensor(w_hh, requires_grad=True)
    b = lib.tensor(b, requires_grad=True)
    eye = lib.eye(5, dtype=lib.float64)
    h = lib.zeros(1, 5, dtype=lib.float64)
    loss = 0
    for i, j in zip(x_idx, y_idx):
        h = lib.tanh(eye[i:i + 1] @ w_ih.T + h @ w_hh.T + b)
        loss = loss + lib.nn.functional.cross_entropy(h, lib.tensor([j]))
    loss.backward()
    return loss, w_ih.grad, w_hh.grad, b.grad


def test_char_rnn_sequence_loss_and_grads_match_torch():
    rng = np.random.default_rng(0)
    w_ih, w_hh, b = rng.normal(size=(5, 5)), rng.normal(size=(5, 5)) * 0.5, rng.normal(size=5)
    x_idx, y_idx = [0, 1, 0, 2, 3, 3], [1, 0, 2, 3, 3, 4]
    ours = _char_rnn_step(tg, w_ih, w_hh, b, x_idx, y_idx)
    theirs = _char_rnn_step(torch, w_ih, w_hh, b, x_idx, y_idx)
    for a, t in zip(ours, theirs):
        assert str(a.dtype) == str(t.dtype)
        np.testing.assert_allclose(a.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
