"""What the session-13 proxy of public notebooks (dvgodoy/PyTorchStepByStep, dlwpt-code,
pytorch-handbook, PyTorchNLPBook, Made-With-ML) showed tapegrad printing differently from
PyTorch: the dtype of binary_cross_entropy_with_logits when input and target dtypes differ, the
grad_fn names of in-place view ops (and so of GRU/RNN batch_first outputs), pad_packed_sequence's
grad_fn, built-in Function nodes' repr, and where RemovableHandle lives."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn as nn
import tapegrad.nn.functional as F
from tapegrad.nn.utils import rnn as rnn_utils

torch = pytest.importorskip("torch")


def _pair(a, requires_grad=False):
    return (tg.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


# -- binary_cross_entropy_with_logits: the loss has the target's dtype --------------------------

@pytest.mark.parametrize("xdt,tdt", [(np.float64, np.float32), (np.float32, np.float64),
                                     (np.float32, np.float32), (np.float64, np.float64)])
@pytest.mark.parametrize("extra", ["none", "weight", "pos_weight"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_with_logits_dtype_follows_target_with_torch_values_and_grads(xdt, tdt, extra,
                                                                         reduction):
    rs = np.random.RandomState(0)
    x = rs.randn(3, 4).astype(xdt) * 3
    t = rs.rand(3, 4).astype(tdt)
    kw_np = {}
    if extra == "weight":
        kw_np["weight"] = rs.rand(4).astype(np.float32) + 0.5
    elif extra == "pos_weight":
        kw_np["pos_weight"] = rs.rand(4).astype(np.float32) + 0.5
    xg, xt = _pair(x, True)
    tg_t, th_t = _pair(t, True)
    out_g = F.binary_cross_entropy_with_logits(
        xg, tg_t, reduction=reduction, **{k: tg.tensor(v) for k, v in kw_np.items()})
    out_t = torch.nn.functional.binary_cross_entropy_with_logits(
        xt, th_t, reduction=reduction, **{k: torch.tensor(v) for k, v in kw_np.items()})
    assert str(out_g.dtype) == str(out_t.dtype)
    tol = 1e-5 if np.float32 in (xdt, tdt) else 1e-12
    np.testing.assert_allclose(out_g.detach().numpy(), out_t.detach().numpy(), rtol=tol, atol=tol)
    out_g.sum().backward()
    out_t.sum().backward()
    for a, b in ((xg, xt), (tg_t, th_t)):
        assert str(a.grad.dtype) == str(b.grad.dtype)
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=tol, atol=tol)


def test_bce_with_logits_mixed_dtypes_second_derivative_matches_torch():
    x = np.array([2.1972, -1.3863, 0.3], dtype=np.float64)
    t = np.array([1.0, 0.0, 0.5], dtype=np.float32)
    grads = []
    for lib in (tg, torch):
        xx = lib.tensor(x, requires_grad=True)
        loss = lib.nn.functional.binary_cross_entropy_with_logits(xx, lib.tensor(t))
        (g,) = lib.autograd.grad(loss, xx, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), xx)
        grads.append((g.detach().numpy(), h.numpy(), str(loss.dtype)))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-6)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-6)
    assert grads[0][2] == grads[1][2] == "torch.float32".replace("torch", grads[0][2].split(".")[0])


def test_bce_with_logits_loss_module_float64_logits_float32_labels_prints_as_torch():
    # PyTorchStepByStep chapter 3: logits from numpy float64 log-odds, float32 labels
    logits = np.log(np.array([.9 / .1, .2 / .8]))
    labels = [1.0, 0.0]
    got = nn.BCEWithLogitsLoss()(tg.tensor(logits), tg.tensor(labels))
    want = torch.nn.BCEWithLogitsLoss()(torch.tensor(logits), torch.tensor(labels))
    assert repr(got) == repr(want) == "tensor(0.1643)"


# -- in-place view ops: PyTorch's node names, same gradients --------------------------------------

@pytest.mark.parametrize("op,args,name", [
    ("transpose_", (0, 2), "TransposeBackward1"), ("swapaxes_", (0, 2), "TransposeBackward1"),
    ("swapdims_", (2, 0), "TransposeBackward1"), ("unsqueeze_", (1,), "UnsqueezeBackward1"),
    ("squeeze_", (), "SqueezeBackward3"), ("squeeze_", (1,), "SqueezeBackward4"),
    ("squeeze_", ((1,),), "SqueezeBackward5")])
def test_inplace_view_ops_grad_fn_names_and_grads_match_torch(op, args, name):
    a = np.random.RandomState(1).randn(2, 1, 3)
    w = np.random.RandomState(2).randn(*getattr(torch.zeros(2, 1, 3), op)(*args).shape)
    results = []
    for lib in (tg, torch):
        x = lib.tensor(a, requires_grad=True)
        y = x * 2
        getattr(y, op)(*args)
        assert y.grad_fn.name() == name
        (g,) = lib.autograd.grad((y * y * lib.tensor(w)).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)        # through the in-place view's graph VJP
        results.append((tuple(y.shape), g.detach().numpy(), h.numpy()))
    assert results[0][0] == results[1][0]
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)
    np.testing.assert_allclose(results[0][2], results[1][2], rtol=1e-12)


def test_t_inplace_grad_fn_name_and_gradcheck():
    x = tg.randn(2, 3, dtype=tg.float64, requires_grad=True)
    y = (x * 1).t_()
    assert y.grad_fn.name() == "TBackward1"
    assert tg.autograd.gradcheck(lambda v: (v * 1).t_() * tg.arange(2.0, dtype=tg.float64), (x,))
    assert tg.autograd.gradgradcheck(lambda v: ((v * v).t_()).sum(0), (x,))


# -- recurrent layers with batch_first ----------------------------------------------------------

def _copy_weights(src, dst):
    for (n, p), (m, q) in zip(src.named_parameters(), dst.named_parameters()):
        assert n == m
        with torch.no_grad():
            q.copy_(torch.tensor(p.detach().numpy()))


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("batch_first", [True, False])
def test_recurrent_output_grad_fn_and_grads_match_torch(kind, batch_first):
    tg.manual_seed(0)
    g_layer = getattr(nn, kind)(2, 3, batch_first=batch_first)
    t_layer = getattr(torch.nn, kind)(2, 3, batch_first=batch_first)
    _copy_weights(g_layer, t_layer)
    a = np.random.RandomState(3).randn(2, 4, 2).astype(np.float32)
    xg, xt = _pair(a, True)
    og = g_layer(xg)[0]
    ot = t_layer(xt)[0]
    assert og.grad_fn.name() == ot.grad_fn.name()
    assert repr(og.grad_fn).split(" object")[0] == repr(ot.grad_fn).split(" object")[0]
    np.testing.assert_allclose(og.detach().numpy(), ot.detach().numpy(), rtol=1e-5, atol=1e-6)
    w = np.random.RandomState(4).randn(*og.shape).astype(np.float32)
    (og * tg.tensor(w)).sum().backward()
    (ot * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)
    for p, q in zip(g_layer.parameters(), t_layer.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pad_packed_sequence_grad_fn_values_and_grads_match_torch(batch_first, enforce_sorted):
    rs = np.random.RandomState(5)
    lens = [4, 3, 2] if enforce_sorted else [4, 2, 3]
    seqs = [rs.randn(n, 2) for n in lens]
    res = []
    for lib in (tg, torch):
        ts = [lib.tensor(s, requires_grad=True) for s in seqs]
        packed = lib.nn.utils.rnn.pack_sequence(ts, enforce_sorted=enforce_sorted)
        out, sizes = lib.nn.utils.rnn.pad_packed_sequence(packed, batch_first=batch_first)
        w = lib.tensor(np.arange(out.numel(), dtype=np.float64).reshape(tuple(out.shape)))
        (out * w).sum().backward()
        res.append((out.grad_fn.name(), out.detach().numpy(), sizes.tolist(),
                    [t.grad.numpy() for t in ts]))
    if batch_first or not enforce_sorted:
        # (a sorted batch, time first, is PyTorch's in-place copy, CopySlices: left)
        assert res[0][0] == res[1][0]
    np.testing.assert_array_equal(res[0][1], res[1][1])
    assert res[0][2] == res[1][2]
    for a, b in zip(res[0][3], res[1][3]):
        np.testing.assert_array_equal(a, b)


# -- reprs ----------------------------------------------------------------------------------------

def test_builtin_function_nodes_print_without_module_custom_functions_with_it():
    x = tg.randn(3, requires_grad=True)
    assert repr(tg.cumsum(x, 0).grad_fn).startswith("<CumsumBackward0 object at 0x")

    class Double(tg.autograd.Function):
        @staticmethod
        def forward(ctx, v):
            return v * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    assert repr(Double.apply(x).grad_fn).startswith(
        "<torch.autograd.function.DoubleBackward object at 0x".replace("torch", "tapegrad")) \
        or repr(Double.apply(x).grad_fn).startswith("<torch.autograd.function.DoubleBackward")


def test_removable_handle_lives_in_utils_hooks():
    import tapegrad.utils.hooks as hooks
    handle = nn.Linear(2, 2).register_forward_hook(lambda *a: None)
    assert isinstance(handle, hooks.RemovableHandle)
    assert repr(handle).startswith("<torch.utils.hooks.RemovableHandle object at 0x")  # as PyTorch
    assert type(handle).__module__.replace("tapegrad", "torch") == type(
        torch.nn.Linear(2, 2).register_forward_hook(lambda *a: None)).__module__


# -- torch.utils.data classes are generic, as PyTorch's ----------------------------------------

@pytest.mark.parametrize("name", [
    "Dataset", "IterableDataset", "Sampler", "DataLoader", "TensorDataset", "Subset",
    "ConcatDataset", "ChainDataset", "StackDataset", "SequentialSampler", "RandomSampler",
    "BatchSampler", "SubsetRandomSampler", "WeightedRandomSampler"])
def test_data_classes_subscript_and_mro_as_torch(name):
    import tapegrad.utils.data as tdata
    import torch.utils.data as thdata

    def outcome(cls):
        try:
            cls[int]
            return "ok"
        except TypeError:
            return "TypeError"

    ours, theirs = getattr(tdata, name), getattr(thdata, name)
    assert outcome(ours) == outcome(theirs)
    assert [b.__name__ for b in ours.__mro__] == [b.__name__ for b in theirs.__mro__]


def test_typed_dataset_subclass_works_with_dataloader():
    import tapegrad.utils.data as tdata

    class Squares(tdata.Dataset[tuple]):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return tg.tensor([float(i)]), tg.tensor(i * i)

    batches = list(tdata.DataLoader(Squares(), batch_size=2))
    assert [b[1].tolist() for b in batches] == [[0, 1], [4, 9], [16]]


# -- a sequence object as an index: random_split's Subsets of an index tensor ------------------

def _split_indices(lib, n):
    idx = lib.arange(n)
    subset = lib.utils.data.Subset(idx, [(7 * k) % n for k in range(34)])   # 34 distinct
    return subset


@pytest.mark.parametrize("n", [40, 100])
def test_tensor_indexed_by_a_subset_of_index_tensors_matches_torch(n):
    # PyTorchStepByStep's index_splitter: x_train = x_tensor[train_idx], train_idx a Subset;
    # 32 items or more make one integer index, as a list would
    a = np.random.RandomState(6).randn(n, 2)
    res = []
    for lib in (tg, torch):
        x = lib.tensor(a, requires_grad=True)
        sub = _split_indices(lib, n)
        y = x[sub]
        (y * lib.arange(float(y.numel()), dtype=lib.float64).view_as(y)).sum().backward()
        res.append((y.detach().numpy(), x.grad.numpy(), y.grad_fn.name()))
    np.testing.assert_array_equal(res[0][0], res[1][0])
    np.testing.assert_array_equal(res[0][1], res[1][1])
    assert res[0][2] == res[1][2]


def test_short_subset_index_is_a_tuple_of_indices_as_torch():
    # under 32 items holding tensors: a (deprecated) tuple of indices, one per dim
    a = np.arange(12.0).reshape(3, 4)
    for lib in (tg, torch):
        x = lib.tensor(a)
        with pytest.warns(UserWarning, match="non-tuple sequence"):
            got = x[lib.utils.data.Subset(lib.arange(4), [2, 1])]
        assert got.item() == 9.0
        with pytest.warns(UserWarning, match="non-tuple sequence"):
            with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
                x[lib.utils.data.Subset(lib.arange(4), [2, 1, 0])]
