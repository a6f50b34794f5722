"""torch.masked's MaskedTensor (tapegrad/_maskedtensor.py, tapegrad/_masked_grad_masks.py),
checked against PyTorch: construction and its errors, repr, elementwise ops, reductions,
softmax, where, views, sparse layouts, and gradients -- values on the specified entries, masks,
and the masks of the gradients PyTorch's masked autograd gives.

Found while building it:
- SILENT (caught before it shipped): ``masked_tensor(a, ~isnan(a)) * b`` then ``sum`` gave ``b``
  a NaN gradient (the tape's mul VJP multiplies the zero gradient of a masked-out entry by its
  NaN); PyTorch's gradients are masked, so ``b`` gets the sum over the specified entries.  A
  binary op whose other operand is differentiated now reads the masked-out entries as 1.
"""
from __future__ import annotations

import warnings

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of MaskedTensors:UserWarning")

DATA = [[0.5, -1.25, 2.0, 3.5], [1.5, 0.25, -0.75, 4.0], [2.5, 1.0, -2.0, 0.125]]
MASK = [[True, False, True, True], [False, False, False, False], [True, True, False, True]]


def build(T, dtype="float64", requires_grad=False):
    data = T.tensor(DATA, dtype=getattr(T, dtype))
    return T.masked.masked_tensor(data, T.tensor(MASK), requires_grad=requires_grad)


def assert_same(ours, theirs, atol=1e-12):
    """Same type, same mask, same values on the specified entries."""
    if not isinstance(theirs, torch.masked.MaskedTensor):
        assert not tg.masked.is_masked_tensor(ours)
        assert torch.allclose(torch.tensor(ours.detach().tolist()).to(theirs.dtype), theirs.detach(), atol=atol,
                              equal_nan=True)
        return
    assert tg.masked.is_masked_tensor(ours)
    mask = theirs.get_mask()
    assert ours.get_mask().tolist() == mask.tolist()
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    a = torch.tensor(ours.get_data().detach().tolist())
    b = theirs.get_data().detach()
    assert torch.allclose(a[mask].to(b.dtype), b[mask], atol=atol, equal_nan=True)


def both(fn, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(tg, **kw), fn(torch, **kw)


# -- construction ----------------------------------------------------------------------------------

def test_construction_warns_as_pytorch():
    with pytest.warns(UserWarning, match="MaskedTensors is in prototype stage"):
        tg.masked.masked_tensor(tg.tensor([1.0]), tg.tensor([True]))
    x = tg.ones(2, requires_grad=True) * 2
    with pytest.warns(UserWarning, match="not recommended to create a MaskedTensor with a tensor"):
        tg.masked.as_masked_tensor(x, tg.tensor([True, False]))


@pytest.mark.parametrize("args, error, phrase", [
    (lambda T: ([1.0], T.tensor([True])), TypeError, "data must be a Tensor"),
    (lambda T: (T.tensor([1.0]), [True]), TypeError, "mask must be a Tensor"),
    (lambda T: (T.tensor([1.0]), T.tensor([1])), TypeError, "mask must have dtype bool."),
    (lambda T: (T.tensor([1j]), T.tensor([True])), TypeError, "is not supported in MaskedTensor"),
    (lambda T: (T.ones(2, 3), T.ones(3, dtype=T.bool)), ValueError, "data.dim() must equal"),
    (lambda T: (T.ones(2, 3), T.ones(3, 2, dtype=T.bool)), ValueError, "data.size() must equal"),
])
def test_construction_errors(args, error, phrase):
    for T in (tg, torch):
        with pytest.raises(error, match=phrase.replace("(", r"\(").replace(")", r"\)")):
            T.masked.masked_tensor(*args(T))


def test_accessors_and_type():
    ours, theirs = both(build)
    assert ours.get_data().tolist() == theirs.get_data().tolist()
    assert ours.get_mask().tolist() == theirs.get_mask().tolist()
    assert ours.to_tensor(-1.0).tolist() == theirs.to_tensor(-1.0).tolist()
    assert (tuple(ours.shape), ours.dim(), ours.numel(), len(ours)) == \
        (tuple(theirs.shape), theirs.dim(), theirs.numel(), len(theirs))
    assert repr(type(ours)) == repr(type(theirs))
    assert not ours.requires_grad and ours.is_leaf and ours.grad is None


# -- repr --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda T: build(T, "float32"),
    lambda T: build(T, "float32")[0],
    lambda T: T.masked.masked_tensor(T.arange(24).reshape(2, 3, 4).float(),
                                     T.arange(24).reshape(2, 3, 4) % 3 == 0),
    lambda T: T.masked.masked_tensor(T.tensor([123456789, -3, 1]), T.tensor([True, True, False])),
    lambda T: T.masked.masked_tensor(T.tensor([True, False]), T.tensor([True, False])),
    lambda T: T.masked.masked_tensor(T.tensor(3.5), T.tensor(True)),
    lambda T: T.masked.masked_tensor(T.tensor(3), T.tensor(False)),
    lambda T: build(T).sum(1),
])
def test_repr_matches_pytorch(make):
    ours, theirs = both(make)
    assert repr(ours) == repr(theirs)
    assert str(ours) == str(theirs)


# -- elementwise ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", [
    lambda T, m: m.exp(), lambda T, m: T.sin(m), lambda T, m: -m, lambda T, m: abs(m),
    lambda T, m: m.clamp(min=0.3), lambda T, m: m ** 2, lambda T, m: m.sqrt(),
    lambda T, m: m + 1, lambda T, m: 2 * m, lambda T, m: 2 / m, lambda T, m: m * m,
    lambda T, m: m - T.tensor(DATA, dtype=T.float64), lambda T, m: T.atan2(m, m),
    lambda T, m: m > 0.5, lambda T, m: m == 2.0, lambda T, m: T.maximum(m, m),
    lambda T, m: m.isnan(), lambda T, m: m.float(), lambda T, m: m.add(1.0),
])
def test_elementwise_ops(op):
    ours, theirs = both(lambda T: op(T, build(T)))
    assert_same(ours, theirs)


def test_binary_ops_need_matching_masks():
    for T in (tg, torch):
        a = build(T)
        b = T.masked.masked_tensor(a.get_data(), ~a.get_mask())
        with pytest.raises(ValueError, match="Input masks must match"):
            a + b
        with pytest.raises(ValueError, match="len\\(kwargs\\) must equal 0"):
            T.add(a, a, alpha=2)
        with pytest.raises(TypeError, match="unary ops do not support additional Tensor"):
            T.pow(a, a)


def test_in_place_op_keeps_mask():
    ours, theirs = both(lambda T: build(T).mul_(3.0).sub_(1.0))
    assert_same(ours, theirs)


# -- reductions ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sum", "mean", "amin", "amax", "argmin", "argmax", "prod", "var",
                                  "std"])
@pytest.mark.parametrize("dim, keepdim", [(None, False), (0, False), (1, False), (1, True),
                                          (-1, True)])
def test_reductions(name, dim, keepdim):
    def run(T):
        mt = build(T)
        if dim is None:
            return getattr(T, name)(mt)
        return getattr(mt, name)(dim, keepdim=keepdim)
    ours, theirs = both(run)
    assert_same(ours, theirs)


def test_all_and_fully_masked_rows():
    ours, theirs = both(lambda T: (build(T) > 0).all(1))
    assert_same(ours, theirs)
    # a fully masked-out row reduces to an unspecified entry (not 0, not NaN)
    ours, theirs = both(lambda T: build(T).sum(1))
    assert ours.get_mask().tolist() == [True, False, True]
    ours, theirs = both(lambda T: T.mean(T.masked.masked_tensor(T.full((4,), float("nan")),
                                                                 T.zeros(4, dtype=T.bool))))
    assert repr(ours) == repr(theirs) == "MaskedTensor(--, False)"


def test_norm_and_unsupported_ops_raise_as_pytorch():
    for T in (tg, torch):
        mt = build(T)
        with pytest.raises(TypeError, match="unexpected keyword argument 'p'"):
            mt.norm()
        with pytest.warns(UserWarning, match="cumsum is not implemented in __torch_dispatch__"):
            with pytest.raises(TypeError, match="Multiple dispatch failed for "
                                                "'torch._ops.aten.cumsum.default'"):
                T.cumsum(mt, 0)
        with pytest.warns(UserWarning, match="mm is not implemented"):
            with pytest.raises(TypeError, match="unsupported operand type"):
                mt @ mt
        with pytest.warns(UserWarning, match="rsub is not implemented"):
            with pytest.raises(TypeError, match="unsupported operand type"):
                1 - mt


# -- softmax, where, views, sparse ---------------------------------------------------------------------

def test_softmax_safe_on_masked_out_columns():
    ours, theirs = both(lambda T: build(T).softmax(0))
    assert_same(ours, theirs)
    ours, theirs = both(lambda T: T.nn.functional.softmax(build(T), 1))
    assert_same(ours, theirs)


def test_where_with_plain_operands():
    cond = [[True, False, False, True]] * 3
    ours, theirs = both(lambda T: T.where(T.tensor(cond), build(T), 0.0))
    assert_same(ours, theirs)
    ours, theirs = both(lambda T: T.where(T.tensor(cond), build(T), T.ones(3, 4,
                                                                          dtype=T.float64)))
    assert_same(ours, theirs)


@pytest.mark.parametrize("view", [
    lambda T, m: m[0], lambda T, m: m[:, 1:3], lambda T, m: m[T.tensor([2, 0])],
    lambda T, m: m.transpose(0, 1), lambda T, m: T.t(m), lambda T, m: m.reshape(4, 3),
    lambda T, m: m.view(12), lambda T, m: m.select(1, 2), lambda T, m: m.unsqueeze(0),
    lambda T, m: T.cat([m, m], 1), lambda T, m: T.stack([m, m]), lambda T, m: m.split(2)[1],
    lambda T, m: m[0:1].expand(2, 4), lambda T, m: m.flatten(),
])
def test_views_and_indexing(view):
    ours, theirs = both(lambda T: view(T, build(T)))
    assert_same(ours, theirs)


def test_sparse_layouts_round_trip():
    def run(T):
        i = T.tensor([[0, 1, 1], [2, 0, 2]])
        grad = T.sparse_coo_tensor(i, T.tensor([3.0, 4.0, 5.0]), [2, 4]).coalesce()
        mask = (grad.to_dense() != 0).to_sparse()
        mt = T.masked.masked_tensor(grad, mask)
        std = T.masked.masked_tensor((T.full((2, 4), 0.5) + mt.pow(2).get_data()).to_sparse(),
                                     mask).sqrt().add(1e-10)
        csr = T.masked.masked_tensor(grad.to_dense().to_sparse_csr(),
                                     (grad.to_dense() != 0).to_sparse_csr())
        return mt, std, (mt / std).get_data().to_dense(), csr, csr.get_data().to_dense()
    ours, theirs = both(run)
    for o, t in zip(ours, theirs):
        if isinstance(t, torch.masked.MaskedTensor):
            assert repr(o) == repr(t) and str(o.layout) == str(t.layout)
        else:
            assert torch.allclose(torch.tensor(o.tolist()), t)
    assert ours[0].get_data().layout == tg.sparse_coo and ours[3].get_mask().layout == tg.sparse_csr


# -- gradients -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("loss", [
    lambda T, m: (m.exp() * 2.0).sum(),
    lambda T, m: m.sum(1).sum(),
    lambda T, m: (m.mean(0) * m.amax(0)).sum(),
    lambda T, m: (m.var(1, keepdim=True) + m.prod(1, keepdim=True)).sum(),
    lambda T, m: (m.softmax(1) * m).sum(),
    lambda T, m: (m.transpose(0, 1)[1:] ** 2).sum(),
    lambda T, m: T.where(T.tensor(MASK), m.sin(), T.zeros(3, 4, dtype=T.float64)).sum(),
])
def test_float64_gradients_match_pytorch(loss):
    def run(T):
        mt = build(T, requires_grad=True)
        out = loss(T, mt)
        out.backward()
        return out, mt.grad
    (o_out, o_grad), (t_out, t_grad) = both(run)
    assert_same(o_out, t_out)
    assert_same(o_grad, t_grad)


def test_tutorial_where_gradients_are_masked():
    def run(T):
        x = T.tensor([-10.0, -5, 0, 5, 10, 50, 60, 70, 80, 90, 100])
        mask = x < 0
        mx = T.masked.masked_tensor(x, mask, requires_grad=True)
        my = T.masked.masked_tensor(T.ones_like(x), ~mask, requires_grad=True)
        T.where(mask, T.exp(mx), my).sum().backward()
        a = T.masked.masked_tensor(T.tensor(0.5), T.tensor(True), requires_grad=True)
        picked = T.where(T.tensor(False), a / 0, T.ones(()))
        return mx.grad, my.grad, picked, T.autograd.grad(picked, a)[0]
    ours, theirs = both(run)
    for o, t in zip(ours, theirs):
        assert repr(o) == repr(t)
        assert_same(o, t)


def test_masked_out_nan_does_not_reach_other_gradients():
    # SILENT before the fix: b's gradient was NaN (0 * NaN under the mask)
    def run(T):
        a = T.tensor([1.0, 2.0, float("nan")], dtype=T.float64)
        b = T.tensor(1.5, dtype=T.float64, requires_grad=True)
        c = T.sum(T.masked.masked_tensor(a, ~T.isnan(a)) * b)
        d = T.sum(T.masked.masked_tensor(a, ~T.isnan(a)) / b)
        return T.autograd.grad(c, b)[0], T.autograd.grad(d, b)[0]
    ours, theirs = both(run)
    for o, t in zip(ours, theirs):
        assert repr(o) == repr(t)       # (a plain input's gradient is a MaskedTensor too)
        assert float(o.get_data().item()) == pytest.approx(float(t.get_data().item()))


def test_as_masked_tensor_keeps_the_graph():
    def run(T):
        x = T.tensor([1.0, 3.0], dtype=T.float64, requires_grad=True)
        loss = T.masked.as_masked_tensor(x * x, T.tensor([True, True]))
        loss.sum().backward()
        return x.grad
    ours, theirs = both(run)
    assert ours.tolist() == theirs.get_data().tolist()


def test_get_data_is_differentiable():
    def run(T):
        mt = build(T, requires_grad=True)
        (mt.get_data() * 3.0).sum().backward()
        return mt.grad
    ours, theirs = both(run)
    assert_same(ours, theirs)


def test_sparse_masks_keep_their_stored_entries():
    # a sparse mask's stored False entries stay stored (data and mask come back with them), and
    # binary ops compare the stored entries first, as PyTorch's sparse masks do
    def run(T):
        i = [[0, 1, 1], [2, 0, 2]]
        explicit = T.masked.masked_tensor(T.sparse_coo_tensor(i, [3, 4, 5], (2, 3)),
                                          T.sparse_coo_tensor(i, T.tensor([True, False, True]),
                                                              (2, 3)))
        implicit = T.masked.masked_tensor(T.tensor([[0, 0, 3], [4, 0, 5]]).to_sparse(),
                                          T.tensor([[False, False, True],
                                                    [False, False, True]]).to_sparse())
        with pytest.raises(RuntimeError, match="The size of tensor a \\(2\\) must match"):
            implicit + explicit
        return (repr(explicit), repr(explicit.get_data()), repr(explicit.get_mask()),
                repr(implicit.get_data()), repr(implicit.to_sparse_csr().get_data()),
                repr(explicit * explicit), repr(implicit.sum()))
    ours, theirs = both(run)
    assert ours == theirs
