"""Regressions of the issue-16 items closed in session 7 (no silent wrong results).

Each test asserts the right values without torch and, where torch is installed, compares with it.
"""
import math
import warnings

import numpy as np
import pytest

import tapegrad as tg

nan, inf = math.nan, math.inf

# -- piecewise activations: NaN kept, second derivatives zero (seeds 1000588, 2000064) ----------
# threshold / hardshrink / softshrink replaced NaN (PyTorch keeps it: its dead zone is written
# with comparisons a NaN fails), and under create_graph their gradients (where() masks of the
# adjoint) did not require grad where PyTorch's backward formulas read the input: differentiating
# again raised instead of giving zeros.

POINTS = [nan, -1.0, 1.0, -0.2, 0.3, 6.0, -3.0, 3.0, 0.4, -0.4, inf, -0.0, 0.0]

PIECEWISE = {
    "hardtanh": lambda L, x: L.nn.functional.hardtanh(x),
    "relu6": lambda L, x: L.nn.functional.relu6(x),
    "threshold": lambda L, x: L.nn.functional.threshold(x, 0.2, 5.0),
    "torch.threshold": lambda L, x: L.threshold(x, 0.2, 5.0),
    "hardshrink": lambda L, x: L.nn.functional.hardshrink(x, 0.4),
    "softshrink": lambda L, x: L.nn.functional.softshrink(x, 0.4),
    "hardsigmoid": lambda L, x: L.nn.functional.hardsigmoid(x),
}


def _piecewise(L, name, dtype):
    x = L.tensor(POINTS, dtype=getattr(L, dtype), requires_grad=True)
    y = PIECEWISE[name](L, x)
    g, = L.autograd.grad(y.sum(), x, create_graph=True)
    try:
        gg, = L.autograd.grad(g.sum(), x)
        second = gg.detach().numpy().copy()
    except RuntimeError as e:
        second = str(e)
    return y.detach().numpy(), g.detach().numpy(), g.requires_grad, second


def test_piecewise_activations_keep_nan():
    for name in ("threshold", "hardshrink", "softshrink", "hardtanh", "relu6", "hardsigmoid"):
        y = _piecewise(tg, name, "float32")[0]
        assert math.isnan(y[0]), name
    # values outside the dead zone are kept or shifted; relu6 keeps a zero's sign, as clamp
    y = _piecewise(tg, "softshrink", "float64")[0]
    np.testing.assert_allclose(y[1:3], [-0.6, 0.6])
    assert math.copysign(1, _piecewise(tg, "relu6", "float64")[0][11]) == -1


@pytest.mark.parametrize("name", ["hardtanh", "relu6", "threshold", "torch.threshold",
                                  "hardshrink", "softshrink"])
def test_piecewise_second_derivative_is_zero(name):
    y, g, requires_grad, second = _piecewise(tg, name, "float64")
    assert requires_grad
    np.testing.assert_array_equal(second, np.zeros(len(POINTS)))


def test_hardsigmoid_double_backward_raises_as_pytorch():
    _, g, requires_grad, second = _piecewise(tg, "hardsigmoid", "float64")
    assert requires_grad
    assert second == "derivative for aten::hardsigmoid_backward is not implemented"
    np.testing.assert_allclose(g[[1, 3, 5, 6, 7]], [1 / 6, 1 / 6, 0, 0, 0])


@pytest.mark.parametrize("name", sorted(PIECEWISE))
def test_piecewise_against_torch(torch, name):
    mine = _piecewise(tg, name, "float32")
    theirs = _piecewise(torch, name, "float32")
    np.testing.assert_allclose(mine[0], theirs[0], rtol=1e-6)
    np.testing.assert_allclose(mine[1], theirs[1], rtol=1e-6)
    assert mine[2] == theirs[2]
    if isinstance(theirs[3], str):
        assert mine[3] == theirs[3]
    else:
        np.testing.assert_array_equal(mine[3], theirs[3])


# -- copysign's second argument and the 0-norm (issue 16 list) ---------------------------------

def _copysign(L):
    a = L.tensor([1.0, -2.0, 0.0, 3.0], dtype=L.float64, requires_grad=True)
    b = L.tensor([[-1.0], [2.0]], dtype=L.float32, requires_grad=True)
    y = L.copysign(a, b)
    ga, gb = L.autograd.grad(y.sum(), [a, b], create_graph=True)
    return y.detach().numpy(), ga.detach().numpy(), gb.detach().numpy(), gb.dtype, y.dtype


def test_copysign_gradient_of_other_is_zeros():
    y, ga, gb, gb_dtype, y_dtype = _copysign(tg)
    np.testing.assert_array_equal(y, [[-1, -2, -0.0, -3], [1, 2, 0, 3]])
    np.testing.assert_array_equal(ga, [0, 0, 0, 0])
    np.testing.assert_array_equal(gb, [[0], [0]])
    assert gb_dtype == tg.float32 and y_dtype == tg.float64


def test_copysign_against_torch(torch):
    mine, theirs = _copysign(tg), _copysign(torch)
    for m, t in zip(mine[:3], theirs[:3]):
        np.testing.assert_array_equal(m, t)
    assert str(mine[3]) == str(theirs[3]) and str(mine[4]) == str(theirs[4])


def _zero_norm(L, f):
    x = L.tensor([1.0, 0.0, -2.0], requires_grad=True)
    y = f(L, x)
    y.backward()
    alone = L.autograd.grad(f(L, x), x, allow_unused=True)[0]
    try:
        L.autograd.grad(f(L, x), x)
        unused = None
    except RuntimeError as e:
        unused = str(e)
    return float(y.detach()), y.requires_grad, x.grad, alone, unused


ZERO_NORMS = {
    "vector_norm": lambda L, x: L.linalg.vector_norm(x, ord=0),
    "norm": lambda L, x: L.norm(x, p=0),
    "Tensor.norm": lambda L, x: x.norm(0),
}


@pytest.mark.parametrize("name", sorted(ZERO_NORMS))
def test_zero_norm_has_no_gradient(name):
    # PyTorch: in the graph (requires grad), but its backward gives nothing (not zeros)
    value, requires_grad, grad, alone, unused = _zero_norm(tg, ZERO_NORMS[name])
    assert value == 2.0 and requires_grad
    assert grad is None and alone is None
    assert "appears to not have been used in the graph" in unused


@pytest.mark.parametrize("name", sorted(ZERO_NORMS))
def test_zero_norm_against_torch(torch, name):
    mine, theirs = _zero_norm(tg, ZERO_NORMS[name]), _zero_norm(torch, ZERO_NORMS[name])
    assert mine == theirs


# -- add/sub alpha: PyTorch's alpha_check against the result dtype -----------------------------
# An integer result silently became a float one for a float alpha; a bool alpha was accepted for
# any result; bool + alpha * bool gave integers (PyTorch keeps bool).

ALPHA_CASES = {
    "int int 0.5": lambda L: L.add(L.tensor([3, 4]), L.tensor([1, 2]), alpha=0.5),
    "int number 0.5": lambda L: L.sub(L.tensor([3, 4]), 2, alpha=0.5),
    "numbers 0.5": lambda L: L.sub(3, 2, alpha=0.5),
    "method": lambda L: L.tensor([3, 4]).sub(L.tensor([1, 2]), alpha=2.0),
    "in place": lambda L: L.tensor([3, 4]).add_(L.tensor([1, 2]), alpha=0.5),
    "bool alpha": lambda L: L.add(L.tensor([1.0]), L.tensor([2.0]), alpha=True),
    "complex alpha": lambda L: L.add(L.tensor([1.0]), L.tensor([2.0]), alpha=1j),
    "subtract": lambda L: L.subtract(L.tensor([3]), L.tensor([1]), alpha=0.5),
}


@pytest.mark.parametrize("name", sorted(ALPHA_CASES))
def test_alpha_refused_as_pytorch(name):
    with pytest.raises(RuntimeError, match="alpha"):
        ALPHA_CASES[name](tg)


def test_alpha_allowed_cases():
    assert tg.add(tg.tensor([3, 4]), tg.tensor([1.0, 2.0]), alpha=0.5).tolist() == [3.5, 5.0]
    assert tg.sub(tg.tensor([3, 4]), 2.0, alpha=0.5).tolist() == [2.0, 3.0]
    r = tg.add(tg.tensor([True, False]), tg.tensor([True, False]), alpha=2)
    assert r.dtype == tg.bool and r.tolist() == [True, False]
    assert tg.add(tg.tensor([3]), tg.tensor([1]), alpha=2).tolist() == [5]


@pytest.mark.parametrize("name", sorted(ALPHA_CASES))
def test_alpha_against_torch(torch, name):
    with pytest.raises(RuntimeError) as theirs:
        ALPHA_CASES[name](torch)
    with pytest.raises(RuntimeError) as mine:
        ALPHA_CASES[name](tg)
    assert str(mine.value) == str(theirs.value)


# -- cross_entropy with no classes and label smoothing (seed 2000587) ---------------------------
# ls / C raised ZeroDivisionError; PyTorch divides in double: inf, and the loss is NaN (index
# targets) or -0 (probabilities summed); a create_graph gradient of no class raised IndexError.

def _ce_no_classes(L, reduction, probs):
    x = L.zeros(2, 0, requires_grad=True)
    target = L.zeros(2, 0) if probs else L.tensor([-100, -100])
    loss = L.nn.functional.cross_entropy(x, target, label_smoothing=0.25, reduction=reduction)
    g, = L.autograd.grad(loss.sum(), x, create_graph=True)
    return loss.detach().numpy(), tuple(g.shape)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("probs", [False, True])
def test_cross_entropy_no_classes_label_smoothing(reduction, probs):
    loss, gshape = _ce_no_classes(tg, reduction, probs)
    assert gshape == (2, 0)
    if not probs or reduction == "mean":
        assert np.isnan(loss).all()
    else:
        assert (loss == 0).all()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("probs", [False, True])
def test_cross_entropy_no_classes_against_torch(torch, reduction, probs):
    mine, theirs = _ce_no_classes(tg, reduction, probs), _ce_no_classes(torch, reduction, probs)
    np.testing.assert_array_equal(mine[0], theirs[0])
    assert mine[1] == theirs[1]


# -- writes into an expand()ed tensor (seeds 1000222, 1000883, 1002001) -------------------------
# zero_ / fill_ of a number / nn.init's constant fills write the shared element (PyTorch); they
# raised "read-only".  Values per element (samplers, a tensor fill_) are refused with PyTorch's
# overlap error; copy_ of a tensor into itself is a no-op.

EXPAND_WRITES = {
    "zero_": lambda L, b: b.zero_(),
    "fill_": lambda L, b: b.fill_(2.0),
    "init.constant_": lambda L, b: L.nn.init.constant_(b, 3.0),
    "init.zeros_": lambda L, b: L.nn.init.zeros_(b),
    "copy_ self": lambda L, b: b.copy_(b),
    "fill_ tensor": lambda L, b: b.fill_(L.tensor(3.0)),
    "normal_": lambda L, b: b.normal_(),
    "uniform_": lambda L, b: b.uniform_(),
    "init.uniform_": lambda L, b: L.nn.init.uniform_(b),
    "dropout": lambda L, b: L.nn.functional.dropout(b, 0.5, inplace=True),
    "copy_": lambda L, b: b.copy_(L.ones(4, 3)),
    "masked_fill_": lambda L, b: b.masked_fill_(L.tensor([[False, True, False]] * 4), 5.0),
    "index_fill_ dim 1": lambda L, b: b.index_fill_(1, L.tensor([2]), 6.0),
    "index_fill_ dim 0": lambda L, b: b.index_fill_(0, L.tensor(1), 7.0),
    "index_put_": lambda L, b: b.index_put_((L.tensor([0]), L.tensor([1])), L.tensor(8.0)),
}


def _expand_write(L, name):
    a = L.ones(3)
    b = a.expand(4, 3)
    try:
        with L.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")     # (PyTorch's deprecation of fills of expands)
            EXPAND_WRITES[name](L, b)
    except RuntimeError as e:
        return str(e)
    return a.tolist()


def test_expand_writes():
    assert _expand_write(tg, "zero_") == [0.0, 0.0, 0.0]
    assert _expand_write(tg, "fill_") == [2.0, 2.0, 2.0]
    assert _expand_write(tg, "init.constant_") == [3.0, 3.0, 3.0]
    assert _expand_write(tg, "copy_ self") == [1.0, 1.0, 1.0]
    # the selected elements only (memory they share gets the value), as PyTorch
    assert _expand_write(tg, "masked_fill_") == [1.0, 5.0, 1.0]
    assert _expand_write(tg, "index_fill_ dim 1") == [1.0, 1.0, 6.0]
    assert _expand_write(tg, "index_fill_ dim 0") == [7.0, 7.0, 7.0]
    assert _expand_write(tg, "index_put_") == [1.0, 8.0, 1.0]
    for name in ("fill_ tensor", "normal_", "uniform_", "init.uniform_", "dropout", "copy_"):
        assert "refers to a single memory location" in _expand_write(tg, name), name
    # an expand that stretches nothing is an ordinary view
    a = tg.ones(1, 3)
    a.expand(1, 3).zero_()
    assert a.tolist() == [[0.0, 0.0, 0.0]]


@pytest.mark.parametrize("name", sorted(EXPAND_WRITES))
def test_expand_writes_against_torch(torch, name):
    assert _expand_write(tg, name) == _expand_write(torch, name)


# -- an index into a dim of size 0 (seed 1000352) ------------------------------------------------
# x[idx] with a non-empty integer index on a dim of size 0 ran when the result was empty anyway
# ((0, 0, 2, 1)[[-1]]); PyTorch refuses it.  An index out of range on a non-empty dim of an empty
# result runs in both, for reads and (now) writes.

INDEX_CASES = {
    "read size-0 dim, empty result": lambda L: L.zeros(0, 0, 2, 1)[L.tensor([-1])],
    "read size-0 dim 1": lambda L: L.zeros(0, 0, 2)[:, L.tensor([0])],
    "read out of range, empty result": lambda L: L.zeros(2, 0)[L.tensor([5])],
    "read out of range on dim 1, empty result": lambda L: L.zeros(0, 3)[:, L.tensor([5])],
    "write size-0 dim": lambda L: L.zeros(0, 0, 2).__setitem__(L.tensor([-1]), 1.0),
    "write out of range, nothing written": lambda L: L.zeros(2, 0).__setitem__(L.tensor([5]), 1.0),
    "write out of range on dim 1, nothing written":
        lambda L: L.zeros(0, 3).__setitem__((slice(None), L.tensor([5])), 1.0),
}


def _index_case(L, name):
    try:
        out = INDEX_CASES[name](L)
    except IndexError as e:
        return str(e)
    return None if out is None else tuple(out.shape)


def test_index_into_size_zero_dim_raises():
    for name in ("read size-0 dim, empty result", "read size-0 dim 1", "write size-0 dim"):
        assert _index_case(tg, name) == "index is out of bounds for dimension with size 0", name
    assert _index_case(tg, "read out of range, empty result") == (1, 0)
    assert _index_case(tg, "write out of range, nothing written") is None


@pytest.mark.parametrize("name", sorted(INDEX_CASES))
def test_index_into_size_zero_dim_against_torch(torch, name):
    assert _index_case(tg, name) == _index_case(torch, name)


# -- bincount with weights that require grad (seed 1000808) ---------------------------------------

def _bincount_weighted(L):
    x = L.tensor([0, 1, 1])
    w = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = L.bincount(x, w, 3)
    try:
        y.sum().backward()
        error = None
    except RuntimeError as e:
        error = str(e)
    with L.no_grad():
        plain = L.bincount(x, w).requires_grad
    return y.detach().tolist(), y.requires_grad, error, plain


def test_bincount_weights_requiring_grad():
    assert _bincount_weighted(tg) == ([1.0, 5.0, 0.0], True,
                                      "derivative for aten::bincount is not implemented", False)


def test_bincount_weights_requiring_grad_against_torch(torch):
    assert _bincount_weighted(tg) == _bincount_weighted(torch)


def test_piecewise_third_derivative_runs():
    # the linking records differentiate too (zero), as PyTorch's *BackwardBackward0 nodes
    x = tg.tensor([-2.0, 0.5, 3.0], dtype=tg.float64, requires_grad=True)
    g, = tg.autograd.grad(tg.nn.functional.hardtanh(x).sum(), x, create_graph=True)
    gg, = tg.autograd.grad(g.sum(), x, create_graph=True)
    assert gg.tolist() == [0.0, 0.0, 0.0]


# -- layer_norm's weight and bias gradients under create_graph (seed 1001764) -----------------------
# With a constant input, the weight's gradient sum(G * xhat) did not require grad; PyTorch's come
# from one double-backward node reading the weight: they require grad, and differentiating them
# gives None (no derivative), not zeros.

def _layer_norm_weight(L, x_grad):
    x = L.tensor([[1.0, 2.0, 4.0], [0.5, 1.0, 1.0]], dtype=L.float64, requires_grad=x_grad)
    w = L.tensor([1.0, 2.0, 3.0], dtype=L.float64, requires_grad=True)
    b = L.tensor([0.0, 0.0, 1.0], dtype=L.float64, requires_grad=True)
    y = L.nn.functional.layer_norm(x, (3,), w, b)
    c = L.tensor([0.3, -1.0, 2.0], dtype=L.float64)
    gw, gb = L.autograd.grad((y * c).sum(), [w, b], create_graph=True)
    second = L.autograd.grad((gw * c).sum() + gb.sum(), [x, w, b] if x_grad else [w, b],
                             allow_unused=True)
    return (gw.detach().numpy().round(12).tolist(), gw.requires_grad, gb.requires_grad,
            [None if s is None else s.detach().numpy().round(12).tolist() for s in second])


@pytest.mark.parametrize("x_grad", [False, True])
def test_layer_norm_weight_gradient_requires_grad(x_grad):
    gw, gw_rg, gb_rg, second = _layer_norm_weight(tg, x_grad)
    assert gw_rg and gb_rg
    assert second[-2:] == [None, None]


@pytest.mark.parametrize("x_grad", [False, True])
def test_layer_norm_weight_gradient_against_torch(torch, x_grad):
    mine, theirs = _layer_norm_weight(tg, x_grad), _layer_norm_weight(torch, x_grad)
    assert mine[:3] == theirs[:3]
    assert mine[3][-2:] == theirs[3][-2:]
    if x_grad:
        np.testing.assert_allclose(mine[3][0], theirs[3][0], atol=1e-12)


# -- compile: a view taken under no_grad, then its base written (compile fuzzer seed 7100164) ------
# The capture's plan read is_leaf / retains_grad of every tensor the call made; for such a view
# both raised ("A view was created in no_grad mode ..."), where the eager call runs.

def _nograd_view_then_fill(v0, v1, v2):
    v3 = tg.nn.functional.linear(v0, v1, v2)
    with tg.no_grad():
        v3.unbind(-1)[0]
    return v3.fill_(-0.0)


def test_compile_no_grad_view_then_base_written_runs_as_eager():
    f = tg.compile(_nograd_view_then_fill)
    rng = np.random.default_rng(7100164)
    for _ in range(3):
        leaves = [tg.tensor(rng.standard_normal(s), requires_grad=True)
                  for s in ((4,), (2, 4), (2,))]
        out = f(*leaves)
        out.sum().backward()
        eager = _nograd_view_then_fill(*[t.detach().requires_grad_() for t in leaves])
        assert out.tolist() == eager.tolist() == [-0.0, -0.0]
        assert leaves[0].grad.tolist() == [0.0] * 4
        # eager linear's result is a view of its 2-D product, as PyTorch's, so the fill goes to
        # that base and the result reads it (AsStridedBackward0); the compiled linear is one N-d
        # product without a base (docs/differences.md), so its grad_fn may be the fill's own
        assert eager.grad_fn.name() == "AsStridedBackward0"
        assert out.grad_fn.name() in ("AsStridedBackward0", "FillBackward2")


def test_retains_grad_of_a_refused_view_is_false():
    x = tg.ones(2, requires_grad=True) * 1
    with tg.no_grad():
        v = x.unbind(0)[0]
    x.fill_(0.0)
    assert v.retains_grad is False
    with pytest.raises(RuntimeError, match="no_grad mode"):
        v.grad_fn


# -- relu's create_graph gradient masks a NaN adjoint (seed 31000353) ------------------------------
# relu(-inf) = 0, then sqrt(|.|): the adjoint reaching relu is 0 * inf = NaN where relu's output
# is 0.  PyTorch's threshold_backward selects 0 there; the recorded gradient multiplied by a 0/1
# mask and gave NaN (plain backward was right).

def _relu_nan_adjoint(L, create_graph):
    x = L.tensor([0.0264, -inf, 0.1014], dtype=L.float64, requires_grad=True)
    y = L.relu(x).abs().sqrt()
    g, = L.autograd.grad(y.sum(), x, create_graph=create_graph)
    return g.detach().numpy()


@pytest.mark.parametrize("create_graph", [False, True])
def test_relu_gradient_masks_nan_adjoint(create_graph):
    g = _relu_nan_adjoint(tg, create_graph)
    assert g[1] == 0.0
    np.testing.assert_allclose(g[[0, 2]], 0.5 / np.sqrt([0.0264, 0.1014]))


@pytest.mark.parametrize("create_graph", [False, True])
def test_relu_gradient_masks_nan_adjoint_against_torch(torch, create_graph):
    np.testing.assert_array_equal(_relu_nan_adjoint(tg, create_graph),
                                  _relu_nan_adjoint(torch, create_graph))


# -- x[key] = v on a leaf that requires grad with a key out of range (seed 31000457) --------------
# PyTorch takes the view x[key] first: IndexError, not the leaf's in-place refusal.

@pytest.mark.parametrize("shape,key", [((0,), 0), ((3,), 5), ((2, 3), (0, 7))])
def test_setitem_out_of_range_on_leaf_is_index_error(shape, key):
    x = tg.zeros(*shape, requires_grad=True)
    with pytest.raises(IndexError, match="out of bounds"):
        x[key] = 1.0
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        tg.zeros(3, requires_grad=True)[1] = 1.0


# -- distributions' lazy properties are computed in grad mode (seed 31000981) ----------------------

def _lazy_probs(L):
    logits = L.tensor([0.5, -1.0], requires_grad=True)
    d = L.distributions.Bernoulli(logits=logits)
    with L.no_grad():
        p = d.probs
    g, = L.autograd.grad(d.probs.sum(), logits)
    return p.requires_grad, np.round(g.numpy(), 6).tolist()


def test_lazy_property_computed_in_grad_mode():
    requires_grad, g = _lazy_probs(tg)
    assert requires_grad
    s = 1 / (1 + np.exp(-np.array([0.5, -1.0])))
    np.testing.assert_allclose(g, s * (1 - s), atol=1e-6)


def test_lazy_property_against_torch(torch):
    assert _lazy_probs(tg) == _lazy_probs(torch)


# -- fused attention of permuted operands (seed 32000128) -----------------------------------------
# numpy laid q @ k^T of reversed-dim views out in non-C order and the softmax kernel refused it
# ("nn kernel operand must be a C-contiguous ndarray").

def _attention_permuted(L):
    rng = np.random.default_rng(32000128)
    qa, ka = rng.standard_normal((3, 1, 2, 2)), rng.standard_normal((3, 4, 2, 2))
    va = rng.standard_normal((2, 2, 4, 2))
    q = L.tensor(qa, requires_grad=True)
    k = L.tensor(ka, requires_grad=True)
    v = L.tensor(va, requires_grad=True)
    mask = L.tensor(np.array([[True, False, True, True]]))
    out = L.nn.functional.scaled_dot_product_attention(q.permute(3, 2, 1, 0), k.permute(3, 2, 1, 0),
                                                       v, attn_mask=mask, scale=0.5)
    grads = L.autograd.grad((out * out).sum(), [q, k, v])
    return [out.detach().numpy()] + [g.numpy() for g in grads]


def test_attention_of_permuted_operands_runs():
    out = _attention_permuted(tg)
    assert out[0].shape == (2, 2, 1, 2) and all(np.isfinite(a).all() for a in out)


def test_attention_of_permuted_operands_against_torch(torch):
    for m, t in zip(_attention_permuted(tg), _attention_permuted(torch)):
        np.testing.assert_allclose(m, t, rtol=1e-10, atol=1e-12)


# -- prod's gradient with several zeros and a NaN/inf adjoint (seed 31002165) ----------------------
# Over all elements with two or more zeros PyTorch's backward returns zeros whatever the adjoint;
# tapegrad multiplied the adjoint by the (zero) products of the others: NaN.  Under create_graph
# PyTorch multiplies (NaN), and so does tapegrad.

def _prod_grads(L):
    out = []
    for xs in ([0.0, 2.0, 0.0, 3.0], [0.0, 2.0, 1.0, 3.0]):
        for up in (1.0, nan, inf):
            for cg in (False, True):
                x = L.tensor(xs, dtype=L.float64, requires_grad=True)
                g, = L.autograd.grad(x.prod() * up, x, create_graph=cg)
                out.append(g.detach().numpy().tolist())
    return out


def test_prod_several_zeros_nan_adjoint():
    grads = _prod_grads(tg)
    assert grads[2] == [0.0] * 4 and grads[4] == [0.0] * 4      # plain backward, NaN / inf
    assert all(math.isnan(v) for v in grads[3])                  # create_graph, NaN adjoint


def test_prod_several_zeros_against_torch(torch):
    mine, theirs = _prod_grads(tg), _prod_grads(torch)
    for m, t in zip(mine, theirs):
        np.testing.assert_array_equal(m, t)


# -- amax/amin of an empty tensor with a dim repeated (seed 32000526) ------------------------------
# PyTorch checks each dim, as written, for no elements before it looks for repeated dims.

@pytest.mark.parametrize("dim,named", [(-1, -1), ((-1, 1), -1), ((1, -1), 1), ((0, -1), -1)])
def test_amax_empty_dim_checked_before_repeats(dim, named):
    with pytest.raises(IndexError, match=f"Expected reduction dim {named} to have non-zero size"):
        tg.zeros(2, 0).amax(dim)


# -- a 0-d softmax's gradient is an array (seed 32001123) -----------------------------------------
# numpy arithmetic on 0-d arrays gives numpy scalars: (log_)softmax's VJP of a 0-d input handed a
# scalar on, and a tensor hook then received a tensor holding a scalar ("Cannot convert
# numpy.float64 to numpy.ndarray" on g + 1).

@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_zero_dim_softmax_gradient_reaches_hooks_as_a_tensor(fn):
    x = tg.tensor(0.5, dtype=tg.float64, requires_grad=True)
    y = x * 1.0
    y.register_hook(lambda g: g + 1)
    getattr(tg.nn.functional, fn)(y, -1).backward()
    assert x.grad.shape == () and x.grad.item() == 1.0


# -- a one-element write from its own memory (seed 32001503) --------------------------------------
# v3 = v2.expand(2); v3[::2] = v2 writes v2's element onto itself.  PyTorch expands the 0-d
# source to (1,) with stride 0 (the destination's layout): the same memory, the same layout, so
# it runs; tapegrad's stand-in for that expand had stride 8 and refused a partial overlap.

def test_one_element_write_from_its_own_memory_runs():
    v1 = tg.tensor(-1.25, dtype=tg.float64, requires_grad=True)
    v2 = v1.sum()
    v3 = v2.expand(2)
    v3[::2] = v2
    assert v3.tolist() == [-1.25, -1.25]
    g, = tg.autograd.grad((v3 * tg.tensor([2.0, 3.0], dtype=tg.float64)).sum(), v1)
    assert g.item() == 5.0


# -- max/min/median of all elements with a NaN adjoint (seed 32005257) ----------------------------
# x.min().std() is NaN (one element): PyTorch's gradient of min over all elements fills the tie
# only (masked_fill), so the NaN reaches one element; tapegrad multiplied the 0/1 mask by the
# adjoint and every element got NaN.  amax/amin multiply in PyTorch too (NaN everywhere).

MINMAX = {"min": lambda x: x.min(), "max": lambda x: x.max(), "median": lambda x: x.median(),
          "amax": lambda x: x.amax(), "amin dim": lambda x: x.amin(1)}


def _minmax_nan_adjoint(L, name, create_graph):
    a = np.array([[1.0, -0.49, -0.26, 1.5], [1.5, 0.48, -0.39, 1.3]], dtype=np.float32)
    x = L.tensor(a, requires_grad=True)
    g, = L.autograd.grad((MINMAX[name](x) * nan).sum(), x, create_graph=create_graph)
    return g.detach().numpy()


@pytest.mark.parametrize("create_graph", [False, True])
def test_min_of_all_nan_adjoint_reaches_the_tie_only(create_graph):
    g = _minmax_nan_adjoint(tg, "min", create_graph)
    assert np.isnan(g[0, 1]) and np.count_nonzero(np.isnan(g)) == 1
    g = _minmax_nan_adjoint(tg, "max", create_graph)      # two ties at 1.5
    assert np.isnan(g[0, 3]) and np.isnan(g[1, 0]) and np.count_nonzero(np.isnan(g)) == 2


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name", sorted(MINMAX))
def test_minmax_nan_adjoint_against_torch(torch, name, create_graph):
    np.testing.assert_array_equal(_minmax_nan_adjoint(tg, name, create_graph),
                                  _minmax_nan_adjoint(torch, name, create_graph))


# -- elu's second derivative at 0 (seed 34000112) ---------------------------------------------------
# PyTorch: first derivative alpha at x = 0 (the exp branch), second derivative 0 there; tapegrad
# differentiated the exp branch at 0 too (alpha).

def _elu_second(L, fn):
    x = L.tensor([-0.0, 0.0, -0.5, 0.7], dtype=L.float64, requires_grad=True)
    g, = L.autograd.grad(fn(L, x).sum(), x, create_graph=True)
    gg, = L.autograd.grad(g.sum(), x)
    return g.detach().numpy().tolist(), gg.numpy().tolist()


ELUS = {"elu": lambda L, x: L.nn.functional.elu(x), "selu": lambda L, x: L.nn.functional.selu(x),
        "celu": lambda L, x: L.nn.functional.celu(x, 2.0)}


def test_elu_second_derivative_at_zero():
    g, gg = _elu_second(tg, ELUS["elu"])
    assert g[:2] == [1.0, 1.0] and gg[:2] == [0.0, 0.0]
    assert gg[2] == pytest.approx(math.exp(-0.5))


@pytest.mark.parametrize("name", sorted(ELUS))
def test_elu_second_derivative_against_torch(torch, name):
    mine, theirs = _elu_second(tg, ELUS[name]), _elu_second(torch, ELUS[name])
    np.testing.assert_allclose(mine[0], theirs[0], rtol=1e-15)
    np.testing.assert_allclose(mine[1], theirs[1], rtol=1e-15)


# -- x[key] = v of another dtype: v's gradient in v's dtype (seed 34002816) ------------------------
# Under create_graph the gradient of a float64 value written into a float32 tensor came back
# float32; eagerly it flowed into the value's own graph in float32 too (cast only at the leaf).

def _setitem_value_grad(L, create_graph, key):
    x = L.zeros(3, dtype=L.float32) * 1
    v = L.tensor(-0.5, dtype=L.float64, requires_grad=True)
    x[key] = v * 0.1
    g, = L.autograd.grad((x * 0.3).sum(), [v], create_graph=create_graph)
    return str(g.dtype).split(".")[-1], g.item()


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("key", [0, slice(0, 2)])
def test_setitem_value_gradient_dtype(create_graph, key):
    dtype, value = _setitem_value_grad(tg, create_graph, key)
    assert dtype == "float64"


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("key", [0, slice(0, 2)])
def test_setitem_value_gradient_against_torch(torch, create_graph, key):
    assert _setitem_value_grad(tg, create_graph, key) == _setitem_value_grad(torch, create_graph,
                                                                             key)


# -- prod of a 0-d tensor: the adjoint itself (seeds 34002354, 31001997) ---------------------------
# log(-0.68) is NaN; its 0-d prod's gradient was prod / x = NaN / NaN, PyTorch's is the adjoint
# (and under create_graph a constant, so nothing to differentiate again).

def _prod_0d(L):
    x = L.tensor(-0.6840732728122512, dtype=L.float64, requires_grad=True)
    y = x.log().prod()
    g, = L.autograd.grad(y * 2.0, x, create_graph=True)
    return g.item(), g.requires_grad


def test_prod_of_0d_gradient_is_the_adjoint():
    value, requires_grad = _prod_0d(tg)
    assert value == pytest.approx(2.0 / -0.6840732728122512)


def test_prod_of_0d_against_torch(torch):
    assert _prod_0d(tg) == _prod_0d(torch)

# -- helper 'triage' (fuzz run of seeds 36000000+, /work/scratch/fuzz7) ----------------------
# matmul saves the operand PyTorch saves (a snapshot where its reshape copies), and the
# requires_grad of special views follows the base, as PyTorch.

def _matmul_then_write(lib, a_shape, b_shape, b_transposed, a_first):
    """a @ b (or b @ a), then an in-place write to the operand that does not require grad,
    then backward: the gradient, or the exception type."""
    rng = np.random.default_rng(7)
    A = rng.standard_normal(a_shape)
    B = rng.standard_normal(b_shape)
    a = lib.tensor(A, dtype=lib.float64, requires_grad=True)
    b = lib.tensor(B, dtype=lib.float64)
    if b_transposed:
        b = b.transpose(-1, -2)
    out = a @ b if a_first else b @ a
    W = lib.tensor(rng.standard_normal(tuple(out.shape)), dtype=lib.float64)
    b.mul_(3.0)                     # written after the forward, before the backward
    try:
        (out * W).sum().backward()
    except RuntimeError as e:
        return "RuntimeError", str(e)[:60]
    return "ok", a.grad.numpy()


@pytest.mark.parametrize("a_shape,b_shape,b_transposed,a_first", [
    ((1,), (2, 1, 3), False, True),       # seed 36007638's first product: vector @ batch
    ((2, 3), (4, 3, 2), False, True),     # matrix @ batch: folded transposed, copied
    ((2, 3), (4, 2, 3), True, True),      # ... the batch already transposed: a view, refused
    ((2, 3), (1, 3, 1), False, True),     # ... a size-1 last dim: a view, refused
    ((3,), (4, 3, 2), False, True),       # vector @ batch, copied
    ((2,), (5, 4, 2, 3), True, False),    # batch (strided) @ vector, folded with a copy
    ((2, 3), (5, 4, 2, 3), True, False),  # batch (strided) @ matrix, folded with a copy
    ((3, 2), (5, 4, 3), False, False),    # batch @ matrix, contiguous: a view, refused
])
def test_matmul_fold_saves_copy_like_torch(torch, a_shape, b_shape, b_transposed, a_first):
    # fuzz seed 36007638: PyTorch folds the batch operand of matrix @ batch with a reshape that
    # copies, and saves the copy: an in-place write to it after the forward is no error, and the
    # gradient uses the forward's values.  tapegrad refused it ("modified by an inplace op").
    want = _matmul_then_write(torch, a_shape, b_shape, b_transposed, a_first)
    got = _matmul_then_write(tg, a_shape, b_shape, b_transposed, a_first)
    assert got[0] == want[0], (got, want)
    if want[0] == "ok":
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-12)


def test_matmul_fold_copy_gradient_is_the_forwards_finite_difference():
    # the gradient after the write is that of the function the forward computed (float64 FD)
    rng = np.random.default_rng(3)
    A = rng.standard_normal((2, 3))
    B = rng.standard_normal((4, 3, 2))
    W = rng.standard_normal((4, 2, 2))
    a = tg.tensor(A, requires_grad=True)
    b = tg.tensor(B)
    out = a @ b
    b.sigmoid_()
    (out * tg.tensor(W)).sum().backward()
    f = lambda X: float((np.matmul(X, B) * W).sum())
    fd = np.zeros_like(A)
    for i in np.ndindex(A.shape):
        e = np.zeros_like(A)
        e[i] = 1e-6
        fd[i] = (f(A + e) - f(A - e)) / 2e-6
    np.testing.assert_allclose(a.grad.numpy(), fd, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("a_shape,b_shape,which", [
    ((2, 3, 4), (1, 4, 5), "a"),          # broadcast batch, b's reshape is a view: refused
    ((2, 3, 4), (3, 1, 4, 5), "a"),       # b expanded to the batch and flattened: a copy
    ((1, 3, 4), (2, 4, 5), "a"),          # a's size-1 batch squeezed, b folded transposed: copy
    ((2, 3, 4), (2, 4, 5), "a"),          # plain bmm: refused
    ((2, 1, 3, 4), (2, 4, 5), "a"),       # b expanded: a copy
    ((4,), (3, 2, 4, 5), "a"),            # vector @ batch, folded transposed: a copy
    ((2, 3, 4), (4,), "a"),               # batch @ vector: refused
    ((3, 1, 3, 4), (2, 4, 5), "b"),       # a expanded: a copy
    ((2, 3, 4), (1, 4, 5), "b"),          # b's size-1 batch squeezed, a folded: a view, refused
    ((1, 3, 4), (2, 4, 5), "b"),          # a expanded by a stride-0 batch, a view: refused
    ((3, 4), (2, 4, 5), "both"),          # both require grad: both saved as views: refused
])
def test_matmul_batched_saves_like_torch(torch, a_shape, b_shape, which):
    # siblings of seed 36007638: the broadcast-batch route (expand + reshape to 3-D) copies an
    # operand whose batch is really expanded; PyTorch then computes the gradient after an
    # in-place write to it (tapegrad refused), and refuses it when the reshape is a view
    def run(lib):
        rng = np.random.default_rng(0)
        a = lib.tensor(rng.standard_normal(a_shape), requires_grad=which in ("a", "both"))
        b = lib.tensor(rng.standard_normal(b_shape), requires_grad=which in ("b", "both"))
        out = a @ b
        W = lib.tensor(rng.standard_normal(tuple(out.shape)))
        with lib.no_grad():
            (b if which == "a" else a).mul_(2.0)
        try:
            (out * W).sum().backward()
        except RuntimeError:
            return "RuntimeError", None
        return "ok", (a if which in ("a", "both") else b).grad.numpy()
    want, got = run(torch), run(tg)
    assert got[0] == want[0], (got[0], want[0])
    if want[0] == "ok":
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("how", ["chunk", "split", "unbind", "no_grad_view", "no_grad_write"])
def test_special_view_requires_grad_follows_base(torch, how):
    # fuzz seeds 36001023, 36004124, 36006373: a no_grad view or an output of chunk / split /
    # unbind, whose base then gets a history from an in-place write of a tensor requiring grad,
    # reports requires_grad=True in PyTorch (a view reports its base's); tapegrad said False
    def run(lib):
        w = lib.tensor([2.0, 5.0], requires_grad=True)
        a = lib.zeros(4)
        if how == "chunk":
            v = a.chunk(2)[0]
        elif how == "split":
            v = a.split(2)[0]
        elif how == "unbind":
            v = a.unbind(0)[1]
        else:
            with lib.no_grad():
                v = a[0:2]
        if how == "no_grad_write":
            with lib.no_grad():
                a[0:2] = w
        else:
            a[0:2] = w
        return v.requires_grad
    assert run(tg) == run(torch)


def test_advanced_index_results_are_contiguous_as_torch(torch):
    # numpy lays out a gather after a slice in another order (x[:, [0, 0]] had strides (1, 3));
    # PyTorch's result is contiguous, so a later .view() works (fuzz seeds 36024506, 36030249)
    x_np = np.arange(24.0).reshape(2, 3, 4)
    keys = [(slice(None), [0, 0]), (slice(None), [0, 1], slice(1, 3)), (Ellipsis, [1, 2]),
            ([0, 1], slice(None), [1, 2]), (slice(None), slice(None), [3, 0, 3])]
    for key in keys:
        ours = tg.tensor(x_np)[key]
        theirs = torch.tensor(x_np)[key]
        assert ours.stride() == theirs.stride(), key
        assert ours.is_contiguous()
        np.testing.assert_array_equal(ours.view(-1).numpy(), theirs.view(-1).numpy())
    x = tg.tensor(x_np, requires_grad=True)
    x[:, [0, 0]].view(-1).sum().backward()
    expected = np.zeros_like(x_np)
    expected[:, 0] = 2.0
    np.testing.assert_array_equal(x.grad.numpy(), expected)
