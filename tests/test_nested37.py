"""torch.nested (issue nested37): nested tensors of the strided and jagged layouts, compared with
PyTorch: printing, sizes, the ops tutorials use with their values and float64 gradients (against
PyTorch and finite differences), and PyTorch's refusals."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as TF

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore:The PyTorch API of nested tensors is in prototype:UserWarning")

SHAPES = ((2, 3), (4, 3), (1, 3))


def arrays(shapes=SHAPES, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def both(build, parts, **kwargs):
    """The nested tensor build(tensors) makes, in tapegrad and in torch, of the same arrays."""
    mine = build(tg, [tg.tensor(p) for p in parts], **kwargs)
    theirs = build(torch, [torch.tensor(p) for p in parts], **kwargs)
    return mine, theirs


def nested(lib, tensors, layout="strided", requires_grad=True):
    return lib.nested.nested_tensor(tensors, layout=getattr(lib, layout),
                                    requires_grad=requires_grad)


def close(mine, theirs, tol=1e-10):
    if getattr(theirs, "is_nested", False):
        assert mine.is_nested
        assert len(mine.unbind()) == len(theirs.unbind())
        for a, b in zip(mine.unbind(), theirs.unbind()):
            close(a, b, tol)
        return
    np.testing.assert_allclose(np.asarray(mine.detach().numpy()), theirs.detach().numpy(),
                               rtol=tol, atol=tol)


# -- printing and structure ----------------------------------------------------------------------

def test_strided_repr_with_requires_grad_and_grad_fn_matches_pytorch():
    parts = [np.arange(6.).reshape(2, 3), np.arange(9.).reshape(3, 3)]
    mine, theirs = both(lambda lib, ts: nested(lib, [t.float() for t in ts]), parts)
    assert repr(mine) == repr(theirs)
    assert repr(mine * 2) == repr(theirs * 2)          # grad_fn=<MulBackward0>
    assert repr(mine.detach().double()) == repr(theirs.detach().double())
    empty = tg.nested.nested_tensor([])
    assert repr(empty) == repr(torch.nested.nested_tensor([]))


def test_jagged_repr_shape_and_nested_ints_match_pytorch():
    parts = [np.arange(6.).reshape(2, 3), np.arange(9.).reshape(3, 3)]
    mine = tg.nested.nested_tensor([tg.tensor(p) for p in parts], layout=tg.jagged)
    theirs = torch.nested.nested_tensor([torch.tensor(p) for p in parts], layout=torch.jagged)
    # (the j-numbers count offsets tensors per process: compare the text around them)
    strip = (lambda text: text.replace(f"j{mine.shape[1].number}", "jN"))
    assert strip(repr(mine)) == repr(theirs).replace(str(theirs.shape[1]), "jN")
    assert mine.shape[1] == (mine + 1).shape[1]        # same offsets, same nested int
    other = tg.nested.nested_tensor([tg.tensor(p) for p in parts], layout=tg.jagged)
    assert other.shape[1] != mine.shape[1]
    assert repr(mine.transpose(1, 2)).endswith("contiguous=False)")
    assert mine.layout is tg.jagged and mine.is_nested and mine.dim() == 3
    assert mine.size(2) == 3 and mine.size(0) == 2
    np.testing.assert_array_equal(mine.offsets().numpy(), theirs.offsets().numpy())


def test_strided_sizes_irregular_dim_raises_as_pytorch():
    mine = tg.nested.nested_tensor([tg.ones(2, 3), tg.ones(4, 3)])
    assert (mine.size(0), mine.size(2), mine.dim()) == (2, 3, 3)
    assert mine.values().shape == torch.nested.nested_tensor(
        [torch.ones(2, 3), torch.ones(4, 3)]).values().shape        # (the buffer)
    with pytest.raises(RuntimeError, match="Given dimension 1 is irregular"):
        mine.size(1)
    with pytest.raises(RuntimeError, match="doesn't support sizes"):
        mine.shape
    with pytest.raises(IndexError, match="Dimension out of range"):
        mine.size(5)


def test_constructors_refuse_as_pytorch():
    with pytest.raises(RuntimeError, match="must have the same dimension"):
        tg.nested.nested_tensor([tg.ones(2, 3), tg.ones(3)])
    with pytest.raises(RuntimeError, match="only allows for a single ragged dimension"):
        tg.nested.nested_tensor([tg.ones(2, 3), tg.ones(3, 4)], layout=tg.jagged)
    with pytest.raises(RuntimeError, match="floating point"):
        tg.nested.nested_tensor([tg.ones(2, dtype=tg.int64)], requires_grad=True)
    with pytest.raises(RuntimeError, match="Converting between nested tensor layouts"):
        tg.nested.as_nested_tensor(tg.nested.nested_tensor([tg.ones(2, 3)]), layout=tg.jagged)


def test_strided_layout_warns_once_the_prototype_warning(recwarn):
    import warnings

    import tapegrad.nested as tn
    tn._warned = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tn.nested_tensor([tg.ones(2)])
        tn.nested_tensor([tg.ones(2)])
        tn.nested_tensor([tg.ones(2)], layout=tg.jagged)
    assert [str(w.message)[:40] for w in caught] == ["The PyTorch API of nested tensors is in "]


# -- ops: values and float64 gradients against PyTorch -----------------------------------------------

def _grads(mine, theirs, out_mine, out_theirs):
    """Backward of the padded outputs' weighted sum in both libraries; the leaves' gradients."""
    def pad(lib, out):
        return lib.nested.to_padded_tensor(out, 0.0) if getattr(out, "is_nested", False) else out
    pm, pt = pad(tg, out_mine), pad(torch, out_theirs)
    close(pm, pt)
    weights = np.cos(np.arange(pt.numel())).reshape(tuple(pt.shape))
    (pm * tg.tensor(weights)).sum().backward()
    (pt * torch.tensor(weights)).sum().backward()
    close(mine.grad, theirs.grad)


OPS = {
    "sin": lambda lib, x: lib.sin(x),
    "gelu": lambda lib, x: (F if lib is torch else TF).gelu(x),
    "relu_mul_self": lambda lib, x: (F if lib is torch else TF).relu(x) * x + 1,
    "div_scalar_neg": lambda lib, x: -(x / 3) - 2,
    "softmax_last": lambda lib, x: (F if lib is torch else TF).softmax(x, -1),
    "transpose_bmm": lambda lib, x: lib.matmul(x, x.transpose(1, 2)) if x.layout is not
    lib.jagged else lib.matmul(x.transpose(1, 2).transpose(1, 2), lib.ones(3, 2).double()),
    # (a jagged sum over dims has no backward in PyTorch: its mean has)
    "reshape_reduce": lambda lib, x: getattr(x.reshape(x.size(0), -1, 3, 1),
                                             "sum" if x.layout is lib.strided else "mean")(
        -1, keepdim=True),
}


@pytest.mark.parametrize("layout", ["strided", "jagged"])
@pytest.mark.parametrize("op", sorted(OPS))
def test_op_values_and_gradients_match_pytorch(layout, op):
    mine, theirs = both(lambda lib, ts: nested(lib, ts, layout), arrays())
    _grads(mine, theirs, OPS[op](tg, mine), OPS[op](torch, theirs))


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_linear_and_layer_norm_modules_match_pytorch(layout):
    mine, theirs = both(lambda lib, ts: nested(lib, ts, layout), arrays())
    w = np.sin(np.arange(15.)).reshape(5, 3)
    lin_m, lin_t = tg.nn.Linear(3, 5).double(), torch.nn.Linear(3, 5).double()
    ln_m, ln_t = tg.nn.LayerNorm(5).double(), torch.nn.LayerNorm(5).double()
    with tg.no_grad():
        lin_m.weight.copy_(tg.tensor(w))
        lin_m.bias.fill_(0.25)
    with torch.no_grad():
        lin_t.weight.copy_(torch.tensor(w))
        lin_t.bias.fill_(0.25)
    out_m, out_t = ln_m(lin_m(mine)), ln_t(lin_t(theirs))
    if layout == "strided":
        assert repr(lin_m(mine)).endswith("grad_fn=<LinearBackward0>)")
    _grads(mine, theirs, out_m, out_t)
    close(lin_m.weight.grad, lin_t.weight.grad)


def test_jagged_reductions_and_softmax_over_ragged_dim_match_pytorch():
    for reduce in (lambda x: x.mean(-1), lambda x: x.mean(-1, keepdim=True),
                   lambda x: x.exp(), lambda x: x.sum()):
        mine, theirs = both(lambda lib, ts: nested(lib, ts, "jagged"), arrays())
        _grads(mine, theirs, reduce(mine), reduce(theirs))
    # PyTorch computes these but has no backward for them, or (softmax over the ragged dim) one
    # that fails its own gradcheck: values against PyTorch, gradients against finite differences
    for reduce in (lambda x: x.sum(1), lambda x: x.sum(-1), lambda x: x.sum((0, 1)),
                   lambda x: x.log_softmax(-1), lambda x: x.mean(1), lambda x: x.softmax(1)):
        mine, theirs = both(lambda lib, ts: nested(lib, ts, "jagged", False), arrays())
        close(reduce(mine), reduce(theirs))

        def through(values, reduce=reduce):
            out = reduce(tg.nested.nested_tensor_from_jagged(values, tg.tensor([0, 2, 6, 7])))
            return tg.nested.to_padded_tensor(out, 0.0) if getattr(out, "is_nested", 0) else out
        values = tg.tensor(np.concatenate(arrays()), requires_grad=True)
        assert tg.autograd.gradcheck(through, (values,))


def test_jagged_broadcasting_with_dense_matches_pytorch():
    mine, theirs = both(lambda lib, ts: nested(lib, ts, "jagged"), arrays())
    row = np.array([1.0, -2.0, 0.5])
    per_batch = np.arange(9.).reshape(3, 1, 3)
    out_m = mine * tg.tensor(row) + tg.tensor(per_batch)
    out_t = theirs * torch.tensor(row) + torch.tensor(per_batch)
    _grads(mine, theirs, out_m, out_t)


def test_jagged_dense_operand_reaching_the_ragged_dim_raises_not_misaligns():
    # SILENT guard: a (7, 3) tensor matches the packed values' shape (7 rows = 2 + 4 + 1); a
    # broadcast against the values would pair it with elements of other components
    nt = tg.nested.nested_tensor([tg.tensor(p) for p in arrays()], layout=tg.jagged)
    with pytest.raises(RuntimeError, match="cannot call binary pointwise function"):
        nt + tg.ones(7, 3, dtype=tg.float64)
    with pytest.raises(RuntimeError, match="cannot call binary pointwise function"):
        nt + nt.clone().detach() + tg.nested.nested_tensor([tg.tensor(p) for p in arrays()],
                                                           layout=tg.jagged)


def test_jagged_attention_matches_pytorch():
    rng = np.random.default_rng(3)
    seqs = [rng.standard_normal((n, 2, 4)) for n in (3, 5)]     # (j, H, D) per sequence

    def attend(lib, fn):
        nts = [lib.nested.nested_tensor([lib.tensor(s * (k + 1)) for s in seqs],
                                        layout=lib.jagged, requires_grad=True) for k in range(3)]
        q, k, v = (t.transpose(1, 2) for t in nts)     # (B, H, j, D)
        return nts, fn.scaled_dot_product_attention(q, k, v).transpose(1, 2)
    mine, out_m = attend(tg, TF)
    theirs, out_t = attend(torch, F)
    _grads(mine[0], theirs[0], out_m, out_t)
    close(mine[1].grad, theirs[1].grad)
    close(mine[2].grad, theirs[2].grad)


def test_from_jagged_masked_select_narrow_and_unbind_match_pytorch():
    values = np.sin(np.arange(21.)).reshape(7, 3)
    offsets = [0, 2, 6, 7]
    vm = tg.tensor(values, requires_grad=True)
    vt = torch.tensor(values, requires_grad=True)
    nm = tg.nested.nested_tensor_from_jagged(vm, tg.tensor(offsets))
    nt = torch.nested.nested_tensor_from_jagged(vt, torch.tensor(offsets))
    assert nm.grad_fn.name() == nt.grad_fn.name()
    assert [u.grad_fn.name() for u in nm.unbind()] == [u.grad_fn.name() for u in nt.unbind()]
    (nm.unbind()[1] * 3).sum().backward()
    (nt.unbind()[1] * 3).sum().backward()
    close(vm.grad, vt.grad)
    dense = np.arange(20.).reshape(4, 5)
    close(tg.nested.masked_select(tg.tensor(dense), tg.tensor(dense % 3 == 0)),
          torch.nested.masked_select(torch.tensor(dense), torch.tensor(dense % 3 == 0)))
    starts, lengths = [0, 1, 2, 3], [2, 2, 3, 1]
    narrowed_m = tg.nested.narrow(tg.tensor(dense), 1, tg.tensor(starts), tg.tensor(lengths),
                                  layout=tg.jagged)
    narrowed_t = torch.nested.narrow(torch.tensor(dense), 1, torch.tensor(starts),
                                     torch.tensor(lengths), layout=torch.jagged)
    close(narrowed_m, narrowed_t)
    close(narrowed_m * 2, narrowed_t * 2)
    np.testing.assert_array_equal(narrowed_m.offsets().numpy(), narrowed_t.offsets().numpy())
    with pytest.raises(RuntimeError, match="nested tensors with holes"):
        tg.nested.to_padded_tensor(narrowed_m, 0.0)


def test_to_padded_tensor_output_size_and_finite_differences():
    parts = arrays()
    mine, theirs = both(lambda lib, ts: nested(lib, ts), parts)
    close(tg.nested.to_padded_tensor(mine, -1.0, (3, 5, 4)),
          torch.nested.to_padded_tensor(theirs, -1.0, (3, 5, 4)))
    assert tg.nested.to_padded_tensor(mine, 0.0).grad_fn.name() == "ToPaddedTensorBackward0"
    with pytest.raises(RuntimeError, match="Truncation is not supported"):
        tg.nested.to_padded_tensor(mine, 0.0, (3, 2, 3))

    def through_nested(values):
        nt = tg.nested.nested_tensor_from_jagged(values, tg.tensor([0, 2, 5]))
        out = TF.softmax(nt.sin() * nt, -1).sum(1)
        return out

    values = tg.tensor(np.cos(np.arange(15.)).reshape(5, 3), requires_grad=True)
    assert tg.autograd.gradcheck(through_nested, (values,))


def test_leaf_grad_is_a_nested_tensor_and_accumulates():
    mine, theirs = both(lambda lib, ts: nested(lib, ts), arrays())
    tg.nested.to_padded_tensor(mine * 2, 0.0).sum().backward()
    torch.nested.to_padded_tensor(theirs * 2, 0.0).sum().backward()
    assert mine.grad.is_nested and repr(mine.grad) == repr(theirs.grad)
    # (PyTorch cannot add a second backward's nested gradient: "doesn't support strides")
    tg.nested.to_padded_tensor(mine * 2, 0.0).sum().backward()
    close(mine.grad, theirs.grad * 2)


# -- refusals ---------------------------------------------------------------------------------------

REFUSALS = [
    ("strided", lambda lib, x: x.exp(), NotImplementedError, "Could not run 'aten::exp'"),
    ("strided", lambda lib, x: x.sum(-1), RuntimeError, "requires keepdim=True"),
    ("strided", lambda lib, x: x.sum(1, keepdim=True), RuntimeError, "reduced across the last"),
    ("strided", lambda lib, x: x.mean(-1), RuntimeError, "doesn't support sizes"),
    ("strided", lambda lib, x: x.detach().mean(-1), NotImplementedError, "aten::mean.dim"),
    ("strided", lambda lib, x: x + lib.ones(3).double(), RuntimeError, "Expected both self and"),
    ("strided", lambda lib, x: x.transpose(0, 1), RuntimeError, "dimension 0 cannot be"),
    ("strided", lambda lib, x: x.softmax(0), RuntimeError, "softmax across nested dimension 0"),
    ("strided", lambda lib, x: x.log_softmax(-1), NotImplementedError, "aten::_log_softmax"),
    ("strided", lambda lib, x: x @ lib.ones(3, 2).double(), RuntimeError, "Expected both to be"),
    ("strided", lambda lib, x: (F if lib is torch else TF).layer_norm(x, (3,)), ValueError,
     "requires weight and bias"),
    ("jagged", lambda lib, x: x.var(-1), NotImplementedError, "var.correction"),
    ("jagged", lambda lib, x: x.transpose(0, 1), ValueError, "batch dimension for jagged NT"),
    ("jagged", lambda lib, x: x.sum(0), RuntimeError, "reducing along the batch dimension"),
    ("jagged", lambda lib, x: x.softmax(0), RuntimeError, "reducing across the batch"),
    ("jagged", lambda lib, x: x[:, 0], RuntimeError, "slice(): not supported"),
    ("jagged", lambda lib, x: lib.matmul(x, x.transpose(1, 2)), RuntimeError,
     "matmul(): not supported between inputs of shapes"),
    ("jagged", lambda lib, x: x.backward(), RuntimeError, "implicitly created only for scalar"),
    ("jagged", lambda lib, x: x + lib.ones(7, 3).double(), RuntimeError,
     "function add.Tensor with inputs of shapes torch.Size([3, j"),
    ("jagged", lambda lib, x: x.narrow(0, 0, 1), RuntimeError, "not supported for NestedTensor on"),
    ("jagged", lambda lib, x: x.tolist(), RuntimeError, "not supported for tensor subclasses"),
    ("strided", lambda lib, x: len(x), RuntimeError, "doesn't support sizes"),
    ("strided", lambda lib, x: x.tolist(), RuntimeError, "doesn't support strides"),
]


@pytest.mark.parametrize("layout,op,error,phrase", REFUSALS)
def test_refusals_match_pytorch(layout, op, error, phrase):
    mine, theirs = both(lambda lib, ts: nested(lib, ts, layout), arrays())
    with pytest.raises(error, match=re.escape(phrase)):
        op(torch, theirs)
    with pytest.raises(error, match=re.escape(phrase)):
        op(tg, mine)


def test_jagged_padding_length_follows_pytorchs_cached_max_seqlen():
    values = np.sin(np.arange(21.)).reshape(7, 3)
    offsets = [0, 2, 6, 7]
    for kwargs in ({}, {"max_seqlen": 5}):
        mine = tg.nested.nested_tensor_from_jagged(tg.tensor(values), tg.tensor(offsets), **kwargs)
        theirs = torch.nested.nested_tensor_from_jagged(torch.tensor(values),
                                                        torch.tensor(offsets), **kwargs)
        for op in (lambda x: x, lambda x: x.mean(-1, keepdim=True), lambda x: x.softmax(-1)):
            close(tg.nested.to_padded_tensor(op(mine), 0.0),
                  torch.nested.to_padded_tensor(op(theirs), 0.0))
