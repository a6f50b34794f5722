"""Index, mask and target tensors saved for backward are version-checked, as PyTorch's.

An op whose backward reads an index tensor (x[idx], x[:, idx] = v, gather, scatter, embedding,
nll_loss's target, sort's returned indices, ...) saves it; writing the tensor in place before
backward raises PyTorch's "modified by an inplace operation: [torch.LongTensor [3]] is at version
1; expected version 0 instead" (no node named).  tapegrad read either a copy (no error) or the
live array (x[:, idx] = v kept it: the gradient went through the written indices, silently
wrong, fuzz seed 65605814; an adaptive max pool's returned indices too).  Each case runs under
PyTorch and tapegrad: the message with a write, the gradient without one.
"""
import re

import numpy as np
import pytest

import tapegrad as tg


def F(L):
    return L.nn.functional


def _index_like(L, case):
    return L.tensor([0, -2, 0]) if case in ("setitem", "index_put_", "index_put") else \
        L.tensor([0, 1, 0])


def _run_index_op(L, case, dt, write):
    """idx3's program: the op reads an index tensor; `write` writes it before backward."""
    v3 = L.zeros(2, 3, 4, dtype=dt)
    idx = _index_like(L, case)
    x = L.linspace(-1, 1, 24, dtype=dt).reshape(2, 3, 4).requires_grad_()
    full = lambda: L.zeros(2, 3, 4, dtype=L.long)     # noqa: E731
    if case == "setitem":
        v3[:, idx] = x[:, idx] * 1
        out = v3
    elif case == "index_put_":
        v3.index_put_((idx,), x[idx] * 1)
        out = v3
    elif case == "index_put":
        out = v3.index_put((idx,), x[idx] * 1)
    elif case == "index_put_acc":
        out = v3.index_put((idx,), x[idx] * 1, accumulate=True)
    elif case == "index_add":
        out = v3.index_add(1, idx, x * 1)
    elif case == "index_copy":
        out = v3.index_copy(1, idx, x * 1)
    elif case == "index_select":
        out = (x * 1).index_select(1, idx)
    elif case == "index_fill":
        out = (x * 1).index_fill(1, idx, 0.5)
    elif case == "index_reduce":
        out = v3.index_reduce(1, idx, x * 1, "amax")
    elif case == "gather":
        idx = full()
        out = (x * 1).gather(1, idx)
    elif case == "scatter":
        idx = full()
        out = v3.scatter(1, idx, x * 1)
    elif case == "scatter_add":
        idx = full()
        out = v3.scatter_add(1, idx, x * 1)
    elif case == "scatter_reduce":
        idx = full()
        out = v3.scatter_reduce(1, idx, x * 1, "amax")
    elif case == "take_along_dim":
        idx = full()
        out = L.take_along_dim(x * 1, idx, 1)
    elif case == "take":
        out = (x * 1).take(idx)
    elif case == "put_":
        out = v3.clone()
        out.put_(idx, x.reshape(-1)[:3] * 1)
    elif case == "embedding":
        out = F(L).embedding(idx, x.reshape(6, 4) * 1)
    elif case == "getitem":
        out = (x * 1)[:, idx]
    elif case == "getitem_leaf":
        out = x[idx]
    elif case == "getitem_mask":
        idx = x.detach() > 0
        out = (x * 1)[idx]
    elif case == "masked_select":
        idx = x.detach() > 0
        out = (x * 1).masked_select(idx)
    elif case == "masked_scatter":
        idx = x.detach() > 0
        out = v3.masked_scatter(idx, x * 2)
    else:
        raise AssertionError(case)
    if write:
        with L.no_grad():
            if idx.dtype == L.bool:
                idx.logical_not_()
            else:
                idx.add_(1).clamp_(max=1)
    w = L.arange(out.numel(), dtype=dt).reshape(out.shape)
    (out * w).sum().backward()
    return x.grad.float().numpy()


INDEX_OPS = ["setitem", "index_put_", "index_put", "index_put_acc", "index_add", "index_copy",
             "index_select", "index_fill", "index_reduce", "gather", "scatter", "scatter_add",
             "scatter_reduce", "take_along_dim", "take", "put_", "embedding", "getitem",
             "getitem_leaf", "getitem_mask", "masked_select", "masked_scatter"]
DTYPES = ["float32", "float64", "bfloat16"]


def _message(L, fn):
    """The in-place error's message without its hint, or the gradient where there is none
    (PyTorch's take_along_dim reads an expanded copy of its index: no error)."""
    try:
        grad = fn()
    except RuntimeError as e:
        msg = str(e)
        assert "one of the variables needed for gradient computation has been modified by an " \
               "inplace operation" in msg
        return msg.split(" Hint:")[0]
    return grad.tolist()


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("case", INDEX_OPS)
def test_writing_the_index_raises_as_torch(case, dt):
    torch = pytest.importorskip("torch")
    want = _message(torch, lambda: _run_index_op(torch, case, getattr(torch, dt), True))
    got = _message(tg, lambda: _run_index_op(tg, case, getattr(tg, dt), True))
    assert got == want


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("case", INDEX_OPS)
def test_without_a_write_the_gradient_is_torchs(case, dt):
    torch = pytest.importorskip("torch")
    want = _run_index_op(torch, case, getattr(torch, dt), False)
    got = _run_index_op(tg, case, getattr(tg, dt), False)
    np.testing.assert_allclose(got, want, rtol=1e-2 if dt == "bfloat16" else 1e-6)


def _returned_indices_programs(L):
    """Ops that return indices PyTorch saves, and losses that save their targets: (name, f)
    where f(x) gives (loss-like output, the tensor to write)."""
    x4 = lambda x: x.reshape(1, 3, 4, 4)      # noqa: E731
    return {
        "sort": lambda x: (lambda s: (s[0], s[1]))(L.sort(x * 1, 1)),
        "sort_dim2": lambda x: (lambda s: (s[0], s[1]))(L.sort(x4(x) * 1, 3)),
        "topk": lambda x: tuple(L.topk(x * 1, 2)),
        "max_dim": lambda x: tuple(L.max(x * 1, 1)),
        "min_keepdim": lambda x: tuple(L.min(x * 1, 1, keepdim=True)),
        "median_dim": lambda x: tuple(L.median(x * 1, 1)),
        "kthvalue": lambda x: tuple(L.kthvalue(x * 1, 2, 0)),
        "mode": lambda x: tuple(L.mode(x * 1, 1)),
        "cummax": lambda x: tuple(L.cummax(x * 1, 1)),
        "max_pool2d": lambda x: F(L).max_pool2d(x4(x) * 1, 2, return_indices=True),
        "adaptive_max_pool2d": lambda x: F(L).adaptive_max_pool2d(x4(x) * 1, 2,
                                                                   return_indices=True),
        "max_pool3d": lambda x: F(L).max_pool3d(x4(x) * 1, 2, return_indices=True),
        "nll_target": lambda x: (lambda y: (F(L).nll_loss(x.reshape(4, 12) * 2, y), y))(
            L.tensor([0, 1, 2, 3])),
        "cross_entropy_target": lambda x: (lambda y: (F(L).cross_entropy(x.reshape(4, 12), y),
                                                      y))(L.tensor([0, 1, 2, 3])),
        "cross_entropy_smoothing": lambda x: (lambda y: (F(L).cross_entropy(
            x.reshape(4, 12), y, label_smoothing=0.1), y))(L.tensor([0, 1, 2, 3])),
        "embedding_2d": lambda x: (lambda i: (F(L).embedding(i, x.reshape(12, 4) * 1), i))(
            L.tensor([[0, 2], [1, 1]])),
        "embedding_bag_offsets": lambda x: (lambda o: (F(L).embedding_bag(
            L.tensor([0, 2, 1, 3]), x.reshape(12, 4) * 1, o, mode="mean"), o))(
            L.tensor([0, 2])),
        "ctc_targets": lambda x: (lambda t: (F(L).ctc_loss(
            (x.reshape(4, 1, 12) * 1).log_softmax(2), t, L.tensor([4]), L.tensor([2])), t))(
            L.tensor([[1, 2]])),
        "multilabel_margin_target": lambda x: (lambda t: (F(L).multilabel_margin_loss(
            x.reshape(3, 16)[:, :4] * 1, t), t))(L.tensor([[0, 1, -1, 0]] * 3)),
        "getitem_two_tensors": lambda x: (lambda i, j: ((x.reshape(3, 16) * 1)[i, j], j))(
            L.tensor([0, 2]), L.tensor([1, 3])),
        "getitem_int32": lambda x: (lambda i: ((x.reshape(3, 16) * 1)[i], i))(
            L.tensor([0, 2], dtype=L.int32)),
    }


RETURNED = list(_returned_indices_programs(tg))


def _run_returned(L, name, write):
    x = L.linspace(-1, 1, 48).reshape(3, 16).requires_grad_()
    out, written = _returned_indices_programs(L)[name](x)
    if write:
        with L.no_grad():
            written.zero_() if written.dtype != L.bool else written.logical_not_()
    (out * L.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
    return x.grad.numpy()


# Records whose VJP may read an optional saved slot get a version only (views.pxi,
# keeps_any_saved_value): the error raises, but names "a tensor" and the node
VERSION_ONLY = {"max_pool3d", "ctc_targets", "multilabel_margin_target", "embedding_bag_offsets"}


@pytest.mark.parametrize("name", RETURNED)
def test_returned_indices_and_targets_are_saved(name):
    torch = pytest.importorskip("torch")
    want = _message(torch, lambda: _run_returned(torch, name, True))
    got = _message(tg, lambda: _run_returned(tg, name, True))
    if name in VERSION_ONLY:
        assert "is at version 1; expected version 0" in want
        assert "is at version 1; expected version 0" in got
    else:
        assert got == want
    np.testing.assert_allclose(_run_returned(tg, name, False), _run_returned(torch, name, False),
                               rtol=1e-5, atol=1e-6)


def test_fuzz_seed_65605814_setitem_through_a_written_index():
    """x[:, idx] = v[:, idx] kept the live index array: idx.floor_divide_() moved v's gradient
    (SILENT).  Now backward raises, as PyTorch's."""
    v12 = tg.linspace(-1, 1, 24).reshape(2, 3, 4).requires_grad_()
    idx = tg.tensor([2, -1, 1])
    v3 = tg.zeros(2, 3, 4)
    v3[:, idx] = v12[:, idx]
    idx.floor_divide_(2)
    with pytest.raises(RuntimeError, match=re.escape(
            "[torch.LongTensor [3]] is at version 1; expected version 0 instead")):
        (v3 * tg.arange(24.).reshape(2, 3, 4)).sum().backward()


def test_adaptive_max_pool_indices_written_no_longer_move_the_gradient():
    """(SILENT before) the pool's backward read the returned indices."""
    x = tg.linspace(-1, 1, 48).reshape(1, 3, 4, 4).requires_grad_()
    out, idx = F(tg).adaptive_max_pool2d(x * 1, 2, return_indices=True)
    idx.zero_()
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        out.sum().backward()


def test_segment_reduce_lengths_are_guarded_without_touching_its_view_record():
    """segment_reduce's result is a view record whose VJP reads slot 0 when set: the lengths
    are guarded by version only (a saved array there was read as the view's key)."""
    x = tg.linspace(-1, 1, 3).requires_grad_()
    lengths = tg.tensor([1, 2])
    out = tg.segment_reduce(x * 1, "sum", lengths=lengths)
    (out * tg.tensor([1.0, 2.0])).sum().backward(retain_graph=True)
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 2.0])
    lengths.fill_(1)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        out.sum().backward()


def test_bool_tensors_are_named_as_torch_names_them():
    x = tg.randn(3, requires_grad=True)
    m = tg.tensor([True, False, True])
    y = tg.where(m, x * 2, x * 3)
    m.logical_not_()
    with pytest.raises(RuntimeError, match=re.escape("[CPUBoolType [3]] is at version 1")):
        y.sum().backward()


def test_create_graph_gradient_keeps_its_indices():
    """The recorded gradient of x[idx] (create_graph) holds its own copy of the indices: a write
    after the first backward cannot move the second derivative (PyTorch raises there; so does
    tapegrad whenever the second backward meets the indexing record itself)."""
    x = tg.linspace(-1, 1, 12).reshape(3, 4).requires_grad_()
    z = tg.tensor(3.0, requires_grad=True)
    idx = tg.tensor([0, 2, 2])
    y = ((x * 1)[idx] * z).sum()
    (g,) = tg.autograd.grad(y, x, create_graph=True)
    idx.zero_()
    (g * tg.arange(12.).reshape(3, 4)).sum().backward()
    assert z.grad.item() == float(np.arange(12.).reshape(3, 4)[[0, 2, 2]].sum())


def test_double_backward_gradcheck_float64():
    x = tg.randn(4, 3, dtype=tg.float64, requires_grad=True)
    idx = tg.tensor([3, 0, 3])
    assert tg.autograd.gradcheck(lambda t: (t * 1)[idx] ** 2, (x,))
    assert tg.autograd.gradgradcheck(lambda t: (t * 1)[idx] ** 2, (x,))
    assert tg.autograd.gradcheck(lambda t: t.gather(1, tg.tensor([[2], [0], [1], [1]])), (x,))


def test_cloning_saved_tensor_hooks_keep_the_original_index():
    """Under hooks that pack a copy, PyTorch checks no version and computes from the copy: a
    write then changes nothing (the VJP reads the index from its saved slot, not the live
    array)."""
    x = tg.linspace(-1, 1, 12).reshape(3, 4).requires_grad_()
    idx = tg.tensor([0, 2])
    with tg.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        y = (x * 1)[idx]
    idx.fill_(1)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1] * 4, [0] * 4, [1] * 4])


def test_pack_hook_sees_the_index_tensor():
    seen = []
    x = tg.linspace(-1, 1, 12).reshape(3, 4).requires_grad_()
    idx = tg.tensor([0, 2])
    with tg.autograd.graph.saved_tensors_hooks(lambda t: seen.append(t) or t, lambda t: t):
        y = (x * 1)[idx]
    assert y.grad_fn is not None
    assert [(s.dtype, tuple(s.shape)) for s in seen] == [(tg.int64, (2,))]


def _step(x, idx):
    v = tg.zeros(3, 4)
    v[:, idx] = x[:, idx] * 2
    y = (x * 1)[:, idx]
    return ((v * tg.arange(12.).reshape(3, 4)).sum() + (y * y).sum()
            + x.gather(1, idx[None].expand(3, 2)).sum())


def test_compiled_replays_an_index_written_between_calls():
    f = tg.compile(_step)
    idx = tg.tensor([0, 2])
    for _ in range(4):
        x = tg.linspace(-1, 1, 12).reshape(3, 4).requires_grad_()
        x2 = x.detach().clone().requires_grad_()
        out = f(x, idx)
        out.backward()
        ref = _step(x2, idx)
        ref.backward()
        assert out.item() == ref.item()
        np.testing.assert_array_equal(x.grad.numpy(), x2.grad.numpy())
        idx.add_(1).remainder_(4)
    x = tg.linspace(-1, 1, 12).reshape(3, 4).requires_grad_()
    out = f(x, idx)
    idx.fill_(1)
    with pytest.raises(RuntimeError, match=r"\[torch.LongTensor \[3, 2\]\] is at version 9; "
                                           "expected version 8"):
        out.backward()
