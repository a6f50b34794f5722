"""In-place ops: leaf rules, recorded writes on non-leaves, and version-counter safety."""
import re

import numpy as np
import pytest

import tapegrad as tg

F64 = tg.float64


def test_inplace_on_leaf_requiring_grad_raises_outside_no_grad():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    for write in (lambda: w.add_(1), lambda: w.mul_(2), lambda: w.zero_(), lambda: w.fill_(3),
                  lambda: w.__iadd__(1), lambda: w.__setitem__(0, 5.0)):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                               "in an in-place operation."):
            write()
    assert w.tolist() == [1.0, 2.0]


def test_sgd_update_idiom_under_no_grad():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    with tg.no_grad():
        w -= 0.1 * w.grad
        w[0] = 0.5
    assert w.requires_grad and w.is_leaf
    np.testing.assert_allclose(w.detach().numpy(), [0.5, 1.6], rtol=1e-6)


def test_inplace_on_plain_tensors_and_dtype_rules():
    t = tg.tensor([1, 2, 3])
    t += 1
    t.mul_(2)
    assert t.tolist() == [4, 6, 8] and t.dtype == tg.int64
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        t += 0.5
    with pytest.raises(RuntimeError, match="output with shape \\[3\\] doesn't match the "
                                           "broadcast shape \\[2, 3\\]"):
        t.add_(tg.ones(2, 3, dtype=tg.int64))
    f = tg.zeros(2, 2)
    f[0] = tg.tensor([1.0, 2.0])
    f[1, 1] = 7
    f.copy_(f * 2)
    assert f.tolist() == [[2.0, 4.0], [0.0, 14.0]]
    f.zero_()
    assert f.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_recorded_inplace_on_non_leaf_gives_correct_gradients():
    x = tg.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    y = x * 2
    y.mul_(x)                      # y = 2x * x
    y += 1
    assert type(y.grad_fn).__name__ == "AddBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0, 12.0])


def test_recorded_setitem_gradients():
    x = tg.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    v = tg.tensor([10.0], dtype=F64, requires_grad=True)
    y = x * 3
    y[1] = v * v                  # overwritten element: no gradient to x there
    assert type(y.grad_fn).__name__ == "CopySlices"
    (y * tg.tensor([1.0, 2.0, 3.0], dtype=F64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 0.0, 9.0])
    np.testing.assert_allclose(v.grad.numpy(), [2 * 10.0 * 2.0])


def test_modifying_a_saved_value_raises_instead_of_a_wrong_gradient():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y * y                      # saves y
    y.add_(1)
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient "
                                           "computation has been modified by an inplace "
                                           "operation"):
        z.sum().backward()


def test_modifying_a_saved_output_raises():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()                    # saves its output
    with tg.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_modifying_a_leaf_through_detach_is_seen():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * x                      # saves x
    x.detach().add_(1)             # shares x's storage and version counter
    assert x._version_value == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_unrelated_inplace_writes_do_not_disturb_backward():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3                      # saves only the constant
    with tg.no_grad():
        x.mul_(10)                 # x's value is not needed by y's backward
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_setitem_shape_and_index_errors():
    t = tg.zeros(3)
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(2\) must match the "
                       r"existing size \(3\) at non-singleton dimension 0"):   # (PyTorch's)
        t[0:2] = tg.ones(3)
    with pytest.raises(RuntimeError, match="shape mismatch"):     # advanced index: index_put_
        t[[0, 1]] = tg.ones(3)
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 3"):
        t[5] = 1.0


def test_views_share_the_version_counter():
    x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x.exp()                    # saves its output
    v = y.reshape(-1)              # a view of y's storage
    row = y[0]                     # another view
    with tg.no_grad():
        v.mul_(2)
    assert y._version_value == v._version_value == row._version_value == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_inplace_through_a_view_of_a_tensor_requiring_grad():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being "
                                           "used in an in-place operation."):
        x[:2].add_(1)
    y = x * 2
    stale = y[:2]                                       # taken before y's history changes
    y[1:].mul_(2)                                       # a fresh view: recorded on y (CopySlices)
    assert y.detach().tolist() == [2.0, 8.0, 12.0]
    assert type(y.grad_fn).__name__ == "CopySlices"
    stale.mul_(2)                                       # rebased onto y's new history first
    assert y.detach().tolist() == [4.0, 16.0, 12.0]     # (values and gradient: PyTorch's)
    assert type(stale.grad_fn).__name__ == "AsStridedBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [4.0, 8.0, 4.0]


# Every op whose backward reads an input's or its output's storage version-checks it: an in-place
# write between forward and backward raises (PyTorch raises for each of these too).  Entries:
# (name, f(x, y) -> output, which tensor is then modified: "x", "y" (inputs) or "out").
F = tg.nn.functional
_X = [[0.7, 1.3, 2.1], [0.4, 1.9, 0.9]]
_Y = [[0.9, 0.6, 0.7], [0.8, 0.5, 0.4]]     # in [0, 1]: also a valid binary_cross_entropy target
SAVED_STORAGE_CASES = [
    ("sigmoid", lambda x, y: x.sigmoid(), "out"), ("sqrt", lambda x, y: x.sqrt(), "out"),
    ("rsqrt", lambda x, y: x.rsqrt(), "out"), ("reciprocal", lambda x, y: x.reciprocal(), "out"),
    ("expm1", lambda x, y: x.expm1(), "out"), ("exp", lambda x, y: x.exp(), "out"),
    ("tanh", lambda x, y: x.tanh(), "out"), ("relu", lambda x, y: x.relu(), "out"),
    ("softmax", lambda x, y: x.softmax(1), "out"),
    ("log_softmax", lambda x, y: x.log_softmax(1), "out"),
    ("log", lambda x, y: x.log(), "x"), ("log1p", lambda x, y: x.log1p(), "x"),
    ("abs", lambda x, y: x.abs(), "x"), ("sin", lambda x, y: x.sin(), "x"),
    ("cos", lambda x, y: x.cos(), "x"), ("erf", lambda x, y: tg.erf(x), "x"),
    ("leaky_relu", lambda x, y: F.leaky_relu(x, 0.1), "x"), ("elu", lambda x, y: F.elu(x), "x"),
    ("softplus", lambda x, y: F.softplus(x), "x"), ("silu", lambda x, y: F.silu(x), "x"),
    ("gelu", lambda x, y: F.gelu(x), "x"),
    ("gelu_tanh", lambda x, y: F.gelu(x, approximate="tanh"), "x"),
    ("clamp", lambda x, y: x.clamp(0.5, 1.5), "x"),
    ("clamp_tensor", lambda x, y: tg.clamp(x, min=y), "x"),
    ("clamp_tensor_bound", lambda x, y: tg.clamp(x, min=y), "y"),
    ("maximum", lambda x, y: tg.maximum(x, y), "x"),
    ("maximum_other", lambda x, y: tg.maximum(x, y), "y"),
    ("minimum", lambda x, y: tg.minimum(x, y), "y"),
    ("mul", lambda x, y: x * y, "y"), ("pow", lambda x, y: x ** y, "out"),
    ("matmul", lambda x, y: x @ y.t(), "x"), ("matmul_other", lambda x, y: x @ y.t(), "y"),
    ("mm", lambda x, y: tg.mm(x, y.t()), "y"), ("linear", lambda x, y: F.linear(x, y), "y"),
    ("bmm", lambda x, y: tg.bmm(x.unsqueeze(0), y.t().unsqueeze(0)), "x"),
    ("dot", lambda x, y: tg.dot(x[0], y[0]), "x"),
    ("outer", lambda x, y: tg.outer(x[0], y[0]), "y"),
    ("prod", lambda x, y: x.prod(), "x"), ("prod_out", lambda x, y: x.prod(), "out"),
    ("prod_dim_out", lambda x, y: x.prod(1), "out"),
    ("max", lambda x, y: x.max(), "x"), ("max_out", lambda x, y: x.max(), "out"),
    ("amax_out", lambda x, y: x.amax(1), "out"), ("min", lambda x, y: x.min(), "x"),
    ("norm", lambda x, y: x.norm(), "x"), ("norm_out", lambda x, y: x.norm(), "out"),
    ("std_out", lambda x, y: x.std(), "out"),
    ("logsumexp", lambda x, y: x.logsumexp(1), "x"),
    ("logsumexp_out", lambda x, y: x.logsumexp(1), "out"),
    ("bce", lambda x, y: F.binary_cross_entropy(x.sigmoid(), y), "y"),
    ("bce_logits", lambda x, y: F.binary_cross_entropy_with_logits(x, y), "x"),
    ("bce_logits_target", lambda x, y: F.binary_cross_entropy_with_logits(x, y), "y"),
    ("cross_entropy_probs", lambda x, y: F.cross_entropy(x, y), "y"),
    ("layer_norm_weight", lambda x, y: F.layer_norm(x, (3,), y[0], y[1]), "y"),
]


def _modify_saved_then_grad(f, target, create_graph):
    x = tg.tensor(_X, dtype=F64, requires_grad=True)
    y = tg.tensor(_Y, dtype=F64, requires_grad=True)
    out = f(x, y)
    with tg.no_grad():
        {"x": x, "y": y, "out": out}[target].add_(0.25)
    tg.autograd.grad(out.sum(), [x, y], allow_unused=True, create_graph=create_graph)


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name,f,target", SAVED_STORAGE_CASES,
                         ids=[c[0] for c in SAVED_STORAGE_CASES])
def test_inplace_write_to_a_saved_input_or_output_raises(name, f, target, create_graph):
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _modify_saved_then_grad(f, target, create_graph)


def test_inplace_write_to_saved_masks_weights_and_indices_raises():
    x = tg.tensor(_X, dtype=F64, requires_grad=True)
    for make in (lambda m: x.masked_fill(m, 0.0), lambda m: x.masked_select(m),
                 lambda m: tg.where(m, x, 0.0)):
        m = tg.tensor([[True, False, True], [False, True, False]])
        out = make(m)
        m.copy_(~m)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()
    values, indices = x.max(1)
    indices.zero_()                # max(dim)'s backward scatters through these indices
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        values.sum().backward()
    w = tg.tensor([1.0, 2.0, 3.0], dtype=F64)
    loss = F.binary_cross_entropy_with_logits(x, tg.ones(2, 3, dtype=F64), weight=w)
    w.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_inplace_write_to_weights_read_from_aux_keeps_the_gradient():
    def grads(modify):
        x = tg.tensor(_X, dtype=F64, requires_grad=True)
        pw = tg.tensor([2.0, 1.0, 3.0], dtype=F64)
        cw = tg.tensor([0.5, 1.0, 2.0], dtype=F64)
        losses = [F.binary_cross_entropy_with_logits(x, tg.ones(2, 3, dtype=F64), pos_weight=pw),
                  F.cross_entropy(x, tg.tensor([0, 2]), weight=cw, label_smoothing=0.1)]
        if modify:
            pw.mul_(3)
            cw.mul_(3)
        total = sum(losses)
        return tg.autograd.grad(total, x)[0].numpy()
    np.testing.assert_allclose(grads(True), grads(False))


@pytest.mark.parametrize("key", ["tensor", "tensor pair", "bool mask"])
def test_inplace_write_to_an_index_tensor_raises_at_backward(key):
    """Advanced indexing saves its index tensors themselves, version-checked, as PyTorch's
    IndexBackward0: writing to an index tensor after the forward makes backward raise PyTorch's
    error (it used to read a copy and give the old gradient; tests/test_idxver40.py)."""
    x = tg.arange(6.0, requires_grad=True)
    if key == "tensor":
        idx = tg.tensor([0, 1, 1])
        y = x[idx]
    elif key == "tensor pair":
        x2 = x.reshape(2, 3)
        idx = tg.tensor([0, 1])
        y = x2[idx, idx]
    else:
        idx = tg.tensor([True, False, True, False, False, True])
        y = x[idx]
    with tg.no_grad():
        idx.zero_()
    what = "CPUBoolType [6]" if key == "bool mask" else f"torch.LongTensor [{idx.numel()}]"
    with pytest.raises(RuntimeError, match=re.escape(f"[{what}] is at version 1; expected "
                                                     "version 0 instead")):
        (y * 1.0).sum().backward()


def test_unrecorded_inplace_arithmetic_in_c_equals_numpy():
    """Unrecorded +=, -=, *=, /= on float tensors run in C straight into the storage; they give
    numpy's results and still bump the version counter.  An operand that partly overlaps the
    written tensor is refused, as PyTorch refuses it."""
    rng = np.random.default_rng(5)
    for dt in (np.float32, np.float64):
        a = rng.standard_normal(7).astype(dt)
        b = rng.standard_normal(7).astype(dt)
        for op, npop in [("__iadd__", np.add), ("__isub__", np.subtract),
                         ("__imul__", np.multiply), ("__itruediv__", np.divide)]:
            x = tg.tensor(a)
            getattr(x, op)(tg.tensor(b))
            assert np.array_equal(x.numpy(), npop(a, b))
            x = tg.tensor(a)
            getattr(x, op)(0.1)                      # a Python number, in the tensor's dtype
            assert np.array_equal(x.numpy(), npop(a, dt(0.1))) and x.dtype == tg.tensor(a).dtype
            x = tg.tensor(a)
            getattr(x, op)(x[2].clone())             # one element of itself: its old value
            assert np.array_equal(x.numpy(), npop(a, a[2]))
            x = tg.tensor(a)
            for operand, target in ((x[2], x), (x[:-1], x[1:])):   # partly overlapping storage
                with pytest.raises(RuntimeError, match="refer to a single memory location"):
                    getattr(target, op)(operand)
            assert np.array_equal(x.numpy(), a)
    p = tg.tensor([1.0, 2.0], requires_grad=True)
    loss = (p * p).sum()
    with tg.no_grad():
        p -= 0.5 * tg.ones(2)                        # the SGD idiom on a leaf
    assert p.tolist() == [0.5, 1.5]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    frozen = tg.ones(1).expand(3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor "
                       "refers to a single memory location"):     # (PyTorch's)
        frozen += 1.0


# -- in-place writes into a view of a tensor outside the graph (PyTorch's CopySlices) ------------

def test_write_into_view_of_constant_records_copyslices():
    demb = tg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    dC = tg.zeros(5, 3)
    dC[1] += demb[0]                                    # a basic view: recorded on dC
    dC[2:4] = demb * 2
    dC[4] += demb[1] * demb[1]
    assert not dC.is_leaf and dC.requires_grad
    assert type(dC.grad_fn).__name__ == "CopySlices"
    assert dC.tolist() == [[0, 0, 0], [0, 1, 2], [0, 2, 4], [6, 8, 10], [9, 16, 25]]
    w = tg.tensor(np.arange(15.0).reshape(5, 3))
    (dC * w).sum().backward()
    wn = w.numpy()
    expected = np.stack([wn[1] + 2 * wn[2], 2 * wn[3] + 2 * np.arange(3.0, 6.0) * wn[4]])
    np.testing.assert_allclose(demb.grad.numpy(), expected)


def test_write_into_view_of_constant_sees_later_writes():
    v = tg.tensor([1.0, 2.0], requires_grad=True)
    c = tg.zeros(4)
    view = c[1:3]
    view *= v                                           # zeros times v: the value stays 0
    view += v                                           # the view now reads c's new history
    y = (c * c).sum()
    c.add_(1.0)                                         # y saved c: its backward must refuse
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_write_into_view_of_constant_errors():
    v = tg.tensor([1.0, 2.0], requires_grad=True)
    ints = tg.zeros(4, dtype=tg.int64)
    with pytest.raises(RuntimeError, match="can't be cast"):
        ints[1:3] += v
    c = tg.zeros(4)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        c[1:3] += v.reshape(2, 1)
    leaf = tg.zeros(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
        leaf[1:3] += v


def test_write_into_view_of_constant_matches_torch(torch):
    rng = np.random.default_rng(1)
    emb = rng.standard_normal((6, 3))
    ix = [2, 0, 2, 5]
    w = rng.standard_normal((7, 3))
    results = []
    for m in (tg, torch):
        demb = m.tensor(emb, requires_grad=True)
        dC = m.zeros(7, 3, dtype=m.float64)
        for k, i in enumerate(ix):
            dC[i] += demb[k] * demb[k + 1]
        dC[5:7] = demb[:2]
        dC[0][1] = demb[3, 2]                           # a view of a view
        (dC * m.tensor(w)).sum().backward()
        results.append((dC.detach().numpy(), demb.grad.numpy(), type(dC.grad_fn).__name__))
    np.testing.assert_allclose(results[0][0], results[1][0])
    np.testing.assert_allclose(results[0][1], results[1][1])
    assert results[0][2] == results[1][2] == "CopySlices"


# -- out= on add / sub / mul / div / matmul --------------------------------------------------------

def test_out_argument():
    a, b = tg.ones(2, 3), tg.tensor([1.0, 2.0, 3.0])
    out = tg.empty(0)
    assert tg.add(a, b, out=out) is out and out.shape == (2, 3)
    assert out.tolist() == [[2, 3, 4], [2, 3, 4]]
    keep = tg.zeros(2, 3)
    view = keep[:, :]
    tg.mul(a, b, out=view)                              # written into the storage
    assert keep.tolist() == [[1, 2, 3], [1, 2, 3]]
    tg.sub(a, b, alpha=2, out=out)
    assert out.tolist() == [[-1, -3, -5], [-1, -3, -5]]
    out64 = tg.zeros(2, 3, dtype=tg.float64)
    tg.div(a, 2, out=out64)
    assert out64.dtype == tg.float64 and out64[0, 0].item() == 0.5
    m = tg.zeros(2, 2)
    tg.matmul(a, tg.ones(3, 2), out=m)
    assert m.tolist() == [[3, 3], [3, 3]]
    with pytest.warns(UserWarning, match="was resized"):
        tg.add(a, b, out=tg.zeros(5))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        tg.add(a, b, out=tg.zeros(2, 3, dtype=tg.int64))
    w = tg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="add\\(\\): functions with out=... arguments don't "
                                           "support automatic differentiation"):
        tg.add(a, w, out=tg.zeros(2, 3))
    with tg.no_grad():
        o = tg.zeros(2, 3, requires_grad=True)
        tg.add(a, w, out=o)
    assert o.grad_fn is None and o.tolist() == [[2, 2, 2], [2, 2, 2]]


def test_out_argument_matches_torch(torch):
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4,))
    for name in ("add", "sub", "mul", "div"):
        o, to = tg.zeros(3, 4, dtype=tg.float64), torch.zeros(3, 4, dtype=torch.float64)
        getattr(tg, name)(tg.tensor(a), tg.tensor(b), out=o)
        getattr(torch, name)(torch.tensor(a), torch.tensor(b), out=to)
        assert np.array_equal(o.numpy(), to.numpy())
    o, to = tg.empty(0, dtype=tg.float64), torch.empty(0, dtype=torch.float64)
    tg.matmul(tg.tensor(a), tg.tensor(b), out=o)
    torch.matmul(torch.tensor(a), torch.tensor(b), out=to)
    assert o.shape == tuple(to.shape)
    np.testing.assert_allclose(o.numpy(), to.numpy())


def test_zero_dim_integer_tensor_index_writes_like_an_integer(torch):
    # makemore's `dC[ix] += demb[k, j]` with ix a 0-d tensor: a select view written back onto
    # itself (PyTorch treats a 0-d integer tensor index as the integer), not an index_put_ whose
    # source overlaps its destination
    results = []
    for lib in (tg, torch):
        d = lib.zeros(3, 4)
        ix = lib.tensor(1)
        d[ix] += lib.ones(4)
        d[ix] += lib.arange(4.0)
        d[lib.tensor(2), 1:] = 5.0
        results.append(d.numpy().copy())
    np.testing.assert_array_equal(results[0], results[1])
