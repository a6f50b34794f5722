"""Regression tests for differences found by tools/opinfo_sweep.py's reference-input run over
the losses, softmax, indexing, shape, matmul, linalg, conv/pool and normalisation families
(session 35), each case written out by hand."""
import math

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


# -- torch.masked: reductions and normalisations over the elements a mask keeps ------------------

_X = np.array([[0.5, -1.25, 2.0, 0.75],
               [-0.5, 1.5, -2.5, 3.0],
               [1.0, 0.25, -0.75, -1.5]])
# row 1 fully masked out (NaN means / variances, -inf maxima, NaN softmax rows)
_M = np.array([[True, False, True, True],
               [False, False, False, False],
               [True, True, False, True]])
_W = np.array([[1.0, -2.0, 0.5, 3.0],
               [0.25, 1.5, -1.0, 2.0],
               [-0.5, 1.0, 2.5, -1.5]])


def _masked(lib, name, args, kwargs, x=_X, mask=_M, w=None):
    t = lib.tensor(x, requires_grad=True)
    out = getattr(lib.masked, name)(t, *args, mask=lib.tensor(mask), **kwargs)
    grad = None
    if out.requires_grad:
        ww = lib.tensor(np.resize(_W if w is None else w, tuple(out.shape))).to(out.dtype)
        # nan_to_num: a fully masked-out slice's NaN/inf output must not poison the others
        (out.nan_to_num(0.0, 0.0, 0.0) * ww).sum().backward()
        grad = t.grad.numpy()
    return out, grad


@pytest.mark.parametrize("name,args,kwargs", [
    ("sum", (1,), {}), ("sum", ((0, 1),), {"keepdim": True}), ("sum", (), {}),
    ("prod", (0,), {}), ("prod", (None,), {}),
    ("amax", (1,), {}), ("amin", (0,), {"keepdim": True}),
    ("mean", (1,), {}), ("mean", (None,), {}),
    ("var", (1,), {}), ("var", (0,), {"correction": 0}), ("std", (1,), {"unbiased": False}),
    ("std", (0,), {"keepdim": True}),
    ("logsumexp", (1,), {}), ("norm", (2.0, 1), {}), ("norm", (1.0, 0), {}),
    ("norm", (-math.inf, 1), {}), ("normalize", (2.0, 1), {}),
    ("softmax", (1,), {}), ("log_softmax", (1,), {}), ("softmin", (0,), {}),
    ("cumsum", (1,), {}), ("cumprod", (1,), {}), ("median", (1,), {}),
])
def test_masked_reductions_and_normalisations_match_torch(name, args, kwargs):
    t_out, t_grad = _masked(torch, name, args, kwargs)
    g_out, g_grad = _masked(tapegrad, name, args, kwargs)
    assert str(g_out.dtype) == str(t_out.dtype)
    assert tuple(g_out.shape) == tuple(t_out.shape)
    np.testing.assert_allclose(g_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    assert (g_grad is None) == (t_grad is None)
    if t_grad is not None:
        np.testing.assert_allclose(g_grad, t_grad, rtol=1e-12, atol=1e-12)


def test_masked_argmax_argmin_in_input_dtype_and_broadcast_mask():
    # a (4,) mask broadcasts over the rows; argmax's result is in the input's dtype
    mask = np.array([True, False, True, False])
    for name in ("argmax", "argmin"):
        t = getattr(torch.masked, name)(torch.tensor(_X), 1, mask=torch.tensor(mask))
        g = getattr(tapegrad.masked, name)(tapegrad.tensor(_X), 1, mask=tapegrad.tensor(mask))
        assert str(g.dtype) == str(t.dtype) == "torch.float64"
        np.testing.assert_array_equal(g.numpy(), t.numpy())


def test_masked_integer_input_dtypes():
    xi = np.array([[3, -1, 4], [1, 5, -9]], dtype=np.int32)
    mi = np.array([[True, False, True], [True, True, False]])
    for name, args in (("sum", (1,)), ("prod", (1,)), ("amax", (1,)), ("median", (1,)),
                       ("cumsum", (1,))):
        t = getattr(torch.masked, name)(torch.tensor(xi), *args, mask=torch.tensor(mi))
        g = getattr(tapegrad.masked, name)(tapegrad.tensor(xi), *args, mask=tapegrad.tensor(mi))
        assert str(g.dtype) == str(t.dtype), name
        np.testing.assert_array_equal(g.numpy(), t.numpy())
    with pytest.raises(ValueError, match="Could not infer output dtype"):
        tapegrad.masked.mean(tapegrad.tensor(xi), 1, mask=tapegrad.tensor(mi))
    with pytest.raises(ValueError, match="no fully masked out rows"):
        tapegrad.masked.median(tapegrad.tensor(xi), 1, mask=tapegrad.zeros(3, dtype=tapegrad.bool))


def test_masked_logaddexp_and_no_mask():
    a, b = np.array([-100.0, -2.0, 0.5]), np.array([-1.0, -3.0, 2.0])
    ma, mb = np.array([True, False, True]), np.array([True, False, False])
    t = torch.masked.logaddexp(torch.tensor(a), torch.tensor(b), input_mask=torch.tensor(ma),
                               other_mask=torch.tensor(mb))
    g = tapegrad.masked.logaddexp(tapegrad.tensor(a), tapegrad.tensor(b),
                                  input_mask=tapegrad.tensor(ma), other_mask=tapegrad.tensor(mb))
    np.testing.assert_array_equal(g.numpy(), t.numpy())
    # mask=None keeps everything: the ordinary reduction
    np.testing.assert_allclose(tapegrad.masked.var(tapegrad.tensor(_X), 1).numpy(),
                               torch.masked.var(torch.tensor(_X), 1).numpy(), rtol=1e-12)


def test_masked_bad_dims_and_mask():
    x = tapegrad.tensor(_X)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tapegrad.masked.sum(x, 2, mask=tapegrad.tensor(_M))
    with pytest.raises(RuntimeError, match="appears multiple times"):
        tapegrad.masked.sum(x, (1, -1), mask=tapegrad.tensor(_M))
    with pytest.raises(IndexError, match="mask dimensionality higher"):
        tapegrad.masked.sum(x, 1, mask=tapegrad.ones(1, 3, 4, dtype=tapegrad.bool))


def test_masked_gradcheck_float64():
    # two kept elements per column, so std's corrected count is positive
    mask = tapegrad.tensor(np.array([[True, False, True, True],
                                     [True, True, False, True],
                                     [False, True, True, False]]))
    for fn in (lambda t: tapegrad.masked.softmax(t, 0, mask=mask),
               lambda t: tapegrad.masked.std(t, 0, mask=mask),
               lambda t: tapegrad.masked.normalize(t, 2.0, 0, mask=mask),
               lambda t: tapegrad.masked.prod(t, 0, mask=mask)):
        x = tapegrad.tensor(_X, requires_grad=True)
        assert tapegrad.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-6)


def test_masked_mean_var_of_zero_dim_input():
    # a 0-d input reduced over dim 0 (PyTorch accepts dim 0 and -1 on a scalar): the count of
    # kept elements is 1 (IndexError before: the count read input.shape[0])
    for name in ("mean", "var", "std"):
        t = getattr(torch.masked, name)(torch.tensor(2.5, dtype=torch.float64), 0)
        g = getattr(tapegrad.masked, name)(tapegrad.tensor(2.5, dtype=tapegrad.float64), 0)
        assert tuple(g.shape) == tuple(t.shape) == ()
        np.testing.assert_array_equal(g.numpy(), t.numpy())
    t = torch.masked.mean(torch.tensor(2.5), -1, keepdim=True, mask=torch.tensor(True))
    g = tapegrad.masked.mean(tapegrad.tensor(2.5), -1, keepdim=True, mask=tapegrad.tensor(True))
    assert tuple(g.shape) == tuple(t.shape)
    np.testing.assert_array_equal(g.numpy(), t.numpy())


# -- native_batch_norm / native_group_norm (missing before) --------------------------------------

_XN = np.linspace(-2.0, 3.0, 2 * 4 * 3).reshape(2, 4, 3) ** 2 - 1.5
_WN = np.array([0.5, -1.0, 2.0, 1.5])
_BN = np.array([0.1, 0.0, -0.3, 0.7])


def _native_bn(lib, training):
    x = lib.tensor(_XN, requires_grad=True)
    w = lib.tensor(_WN, requires_grad=True)
    b = lib.tensor(_BN, requires_grad=True)
    rm = lib.tensor([0.5, -0.5, 0.0, 1.0], dtype=lib.float64)
    rv = lib.tensor([1.0, 2.0, 0.5, 1.5], dtype=lib.float64)
    out = lib.native_batch_norm(x, w, b, rm, rv, training, 0.2, 1e-5)
    (out[0] * lib.tensor(np.cos(np.arange(24.0)).reshape(2, 4, 3))).sum().backward()
    return out, (x.grad, w.grad, b.grad), (rm, rv)


@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm_matches_torch(training):
    t_out, t_grads, t_run = _native_bn(torch, training)
    g_out, g_grads, g_run = _native_bn(tapegrad, training)
    for a, b in zip(g_out, t_out):
        assert tuple(a.shape) == tuple(b.shape) and a.requires_grad == b.requires_grad
        assert str(a.dtype) == str(b.dtype)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12)
    for a, b in zip(g_grads + g_run, t_grads + t_run):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def test_native_group_norm_matches_torch_and_gradcheck():
    res = []
    for lib in (torch, tapegrad):
        x = lib.tensor(_XN, requires_grad=True)
        w = lib.tensor(_WN, requires_grad=True)
        out = lib.native_group_norm(x, w, None, 2, 4, 3, 2, 1e-5)
        assert [o.requires_grad for o in out] == [True, True, True]
        (out[0].sum() * 0.5 + (out[1] * 2).sum() + (out[2] * lib.tensor([[1.0, -1.0]])).sum()
         ).backward()
        res.append(([o.detach().numpy() for o in out], x.grad.numpy(), w.grad.numpy()))
    (t_out, t_gx, t_gw), (g_out, g_gx, g_gw) = res
    for a, b in zip(g_out, t_out):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g_gx, t_gx, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(g_gw, t_gw, rtol=1e-9, atol=1e-12)
    x = tapegrad.tensor(_XN, requires_grad=True)
    assert tapegrad.autograd.gradcheck(
        lambda t: tapegrad.native_group_norm(t, None, None, 2, 4, 3, 2, 1e-5)[2], (x,))
    with pytest.raises(RuntimeError, match=r"X.numel\(\) == N \* C \* HxW"):
        tapegrad.native_group_norm(x, None, None, 2, 4, 4, 2, 1e-5)


# -- max_pool1d's own kernel: its argument checks' order and wording ----------------------------

@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=0), dict(kernel_size=2, dilation=0), dict(kernel_size=2, padding=2),
    dict(kernel_size=0, stride=0, dilation=0), dict(kernel_size=2, padding=-1, dilation=0),
    dict(kernel_size=2, padding=2, dilation=0), dict(kernel_size=2, stride=0, padding=-1),
])
def test_max_pool1d_argument_errors_match_torch(kwargs):
    x = np.arange(54.0).reshape(3, 3, 6)
    with pytest.raises(RuntimeError) as t_err:
        torch.nn.functional.max_pool1d(torch.tensor(x), **kwargs)
    with pytest.raises(RuntimeError) as g_err:
        tapegrad.nn.functional.max_pool1d(tapegrad.tensor(x), **kwargs)
    assert str(g_err.value) == str(t_err.value)


def test_native_group_norm_empty_batch():
    # N = 0: the statistics are (0, group) (a reshape with -1 was ambiguous there)
    for lib in (torch, tapegrad):
        out = lib.native_group_norm(lib.zeros(0, 4, 3, requires_grad=True), None, None, 0, 4, 3,
                                    2, 1e-5)
        assert [tuple(o.shape) for o in out] == [(0, 4, 3), (0, 2), (0, 2)]
