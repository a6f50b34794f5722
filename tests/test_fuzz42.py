"""Differences the session-42 fuzz runs found (tools/fuzz.py), each checked against torch."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def test_gather_of_view_made_to_require_grad_by_a_write_through_another_view():
    """SILENT: a write through one view of a base makes every view of it require grad; gather's
    no-record fast path read the other view's stale flag, so its result did not require grad
    and the gradient was dropped (fuzz 66500171)."""
    results = []
    for T in (torch, tg):
        base = T.tensor([[-0.16, 0.14], [0.65, 1.67]])
        view = base.view(2, 2)
        flat = view.view(4)
        w = T.tensor([-0.28, 0.6, 0.87, -0.05], requires_grad=True)
        flat[0] += w[0] * 3
        out = T.gather(view, 1, T.tensor([[1, 0], [0, 0]]))
        assert out.requires_grad
        (out * out).sum().backward()
        results.append((out.detach().numpy(), w.grad.numpy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-6)


def _outcome(call):
    try:
        r = call()
    except RuntimeError as e:
        return "RuntimeError", str(e)
    r = r[0] if isinstance(r, tuple) else r
    return str(r.dtype), r.float().numpy().tolist()


@pytest.mark.parametrize("op", [
    lambda T, a, o: T.abs(a, out=o), lambda T, a, o: T.floor(a, out=o),
    lambda T, a, o: T.neg(a, out=o), lambda T, a, o: T.clamp(a, -0.5, 0.5, out=o),
    lambda T, a, o: T.where(a > 0, a, a * 2, out=o), lambda T, a, o: T.amax(a, 1, out=o),
    lambda T, a, o: T.nan_to_num(a, out=o), lambda T, a, o: T.logcumsumexp(a, 1, out=o),
    lambda T, a, o: T.sort(a, 1, out=(o, T.empty(0, dtype=T.int64))),
    lambda T, a, o: T.max(a, 1, out=(o, T.empty(0, dtype=T.int64))),
    lambda T, a, o: T.index_select(a, 1, T.tensor([0, 2]), out=o),
    lambda T, a, o: T.gather(a, 1, T.tensor([[0, 1], [1, 0]]), out=o),
    lambda T, a, o: T.tril(a, out=o), lambda T, a, o: T.linalg.vector_norm(a, 2, 1, out=o),
    lambda T, a, o: T.mm(a, a.mT, out=o)])
@pytest.mark.parametrize("dtypes", [("bfloat16", "float32"), ("float32", "bfloat16")])
def test_exact_dtype_out_refuses_bfloat16_for_float32(op, dtypes):
    """The ops that cast into no other out dtype refuse float32 for a bfloat16 result (and the
    reverse) in PyTorch's words; tapegrad holds bfloat16 in float32 storage, so its check saw
    one dtype and the op ran (fuzz 66900050, 66900054)."""
    got = []
    for T in (torch, tg):
        a = T.tensor([[0.5, -1.25, 2.0], [0.75, 1.5, -0.5]]).to(getattr(T, dtypes[0]))
        got.append(_outcome(lambda: op(T, a, T.zeros(0, dtype=getattr(T, dtypes[1])))))
    assert got[1][0] == got[0][0] == "RuntimeError"
    assert got[1][1] == got[0][1]


@pytest.mark.parametrize("op", [
    lambda T, a, t, o: T.clamp(a, min=t, out=o), lambda T, a, t, o: T.clamp(a, t, t + 1, out=o),
    lambda T, a, t, o: T.clamp_min(a, t, out=o), lambda T, a, t, o: T.clip(a, t, out=o),
    lambda T, a, t, o: T.clamp(a, 0.1, out=o), lambda T, a, t, o: T.clamp_max(a, 0.3, out=o)])
@pytest.mark.parametrize("out_dtype", ["float64", "float16", "float32"])
def test_clamp_with_tensor_bounds_casts_into_out(op, out_dtype):
    """clamp with a tensor bound is TensorIterator's: it casts into an out of another float
    dtype; only number bounds require out's dtype to be the input's (tapegrad refused both)."""
    got = []
    for T in (torch, tg):
        a, t = T.tensor([0.5, -1.0, 2.0]), T.tensor([0.0, 0.0, 1.0])
        got.append(_outcome(lambda: op(T, a, t, T.zeros(3, dtype=getattr(T, out_dtype)))))
    assert got[1] == got[0]


@pytest.mark.parametrize("op", [
    lambda T, x, o: T.min(x, 0, out=o), lambda T, x, o: T.max(x, 1, out=o),
    lambda T, x, o: T.median(x, 0, out=o)])
def test_tuple_out_refused_before_any_write(op):
    """An out= pair whose indices tensor has a dtype PyTorch refuses: PyTorch raises with the
    values tensor untouched; tapegrad wrote the values first (fuzz 66900109)."""
    got = []
    for T in (torch, tg):
        x = T.tensor([[-0.95, -0.45], [-0.08, 0.5]], dtype=T.float64)
        values, indices = T.full((2,), 0.5, dtype=T.float64), T.full((2,), 7, dtype=T.float32)
        with pytest.raises(RuntimeError):
            op(T, x, (values, indices))
        got.append(values.numpy().copy())
    np.testing.assert_array_equal(got[1], got[0])


def test_bfloat16_in_place_through_an_expand_that_stretches_nothing():
    """x.expand(-1, -1) of a bfloat16 tensor is a plain view: an in-place op through it writes x
    (tapegrad's bfloat16 rounding met the read-only broadcast view: ValueError, fuzz 66900317)."""
    got = []
    for T in (torch, tg):
        x = T.tensor([[0.3, -1.7, 2.2], [0.9, 1.1, -0.6]]).to(T.bfloat16)
        x.expand(-1, -1).rad2deg_()
        x.expand(2, 3).mul_(1.01)
        got.append(x.float().numpy())
    np.testing.assert_array_equal(got[1], got[0])


@pytest.mark.parametrize("op", [lambda T, a, o: T.mm(a, a, out=o),
                                lambda T, a, o: T.addmm(a, a, a, out=o),
                                lambda T, a, o: T.matmul(a, a, out=o)])
def test_autocast_leaves_out_variants_in_their_operands_dtype(op):
    """SILENT: PyTorch's autocast does not cast an op given out=: float32 operands compute in
    float32 into a float32 out (and a float16 out is refused by the op's dtype check).  tapegrad
    cast them to float16 and returned a float16 tensor that was not out (fuzz 66900188)."""
    got = []
    for T in (torch, tg):
        a = T.tensor([[0.1, 0.2], [0.3, 0.7]])
        o = T.zeros(2, 2)
        with T.autocast("cpu", dtype=T.float16):
            r = op(T, a, o)
            with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float"):
                op(T, a, T.zeros(2, 2, dtype=T.float16))
        assert r is o and r.dtype == T.float32
        got.append(o.numpy())
    np.testing.assert_allclose(got[1], got[0], rtol=1e-6)


def test_triplet_margin_with_distance_loss_swap_keeps_bfloat16():
    """SILENT dtype: with swap=True the smaller distance came from the core's minimum on the
    float32 storage, so bfloat16 inputs gave a float32 loss (fuzz 66900656)."""
    got = []
    for T in (torch, tg):
        a, p, n = (T.tensor(v).to(T.bfloat16) for v in ([0.5, 1.0], [0.1, 0.2], [0.3, -0.4]))
        r = T.nn.functional.triplet_margin_with_distance_loss(a, p, n, margin=2.0, swap=True,
                                                               reduction="none")
        got.append(r.dtype)
    assert str(got[1]) == str(got[0]) == "torch.bfloat16"
