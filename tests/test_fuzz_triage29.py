"""Regressions of the session-29 fuzz run of fuzz15 (programs 62700000-, 60670689-, the extended
generator's 65000000-; surface 60801443-).

Each test compares with PyTorch (the `torch` fixture skips cleanly without it).
"""
import numpy as np
import pytest

import tapegrad as tg


# -- grad_fn names of composites the generator never drew before ----------------------------------
# fmax / fmin (a where()), ldexp (a product with a power of two), frexp's mantissa (a product)
# and rsub of two tensors (a sub) showed their last internal op's node; PyTorch records one node
# named for the op.  The gradients were already PyTorch's: compared too.

_A = [[0.3, -1.2, float("nan")], [2.0, 0.5, -0.1]]
_B = [[0.1, -1.2, 0.9], [float("nan"), 0.25, -0.3]]

_CALLS = {
    "fmax": lambda L, a, b: L.fmax(a, b),
    "fmin": lambda L, a, b: L.fmin(a, b),
    "fmax_method": lambda L, a, b: a.fmax(b),
    "ldexp": lambda L, a, b: L.ldexp(a, L.tensor([1, 0, 3])),
    "ldexp_float_exponent": lambda L, a, b: L.ldexp(a, b.nan_to_num()),
    "frexp": lambda L, a, b: L.frexp(a)[0],
    "rsub": lambda L, a, b: L.rsub(a, b),
    "rsub_alpha": lambda L, a, b: L.rsub(a, b, alpha=2),
}


def _run(L, name, dtype):
    dtype = getattr(L, dtype)
    a = L.tensor(_A, dtype=dtype, requires_grad=True)
    b = L.tensor(_B, dtype=dtype, requires_grad=True)
    y = _CALLS[name](L, a, b)
    w = L.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=dtype)
    (y.nan_to_num() * w).sum().backward()
    grads = [None if t.grad is None else t.grad.numpy() for t in (a, b)]
    return type(y.grad_fn).__name__, y.detach().numpy(), grads


@pytest.mark.parametrize("name", sorted(_CALLS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_composite_grad_fn_names(torch, name, dtype):
    t_name, t_val, t_grads = _run(torch, name, dtype)
    g_name, g_val, g_grads = _run(tg, name, dtype)
    assert g_name == t_name
    np.testing.assert_array_equal(g_val, t_val)
    for g, t in zip(g_grads, t_grads):
        assert (g is None) == (t is None)
        if t is not None:
            np.testing.assert_allclose(g, t, rtol=1e-6, atol=0)


def test_ldexp_negative_integer_exponent_gradient_is_the_power(torch):
    # PyTorch's LdexpBackward0 takes 2 ** other in other's integer dtype, so a negative integer
    # exponent's gradient is 0 (torch: ldexp(x, tensor([-1])).backward() gives x.grad [0.]);
    # the derivative is 2 ** other (finite differences, and PyTorch's own gradient for a float
    # exponent): tapegrad keeps that.  docs/differences.md, session 29 (fuzz15).
    x = tg.tensor([2.0, 3.0, 5.0], dtype=tg.float64, requires_grad=True)
    e = tg.tensor([-1, -3, 2])
    tg.ldexp(x, e).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.5, 0.125, 4.0])
    tx = torch.tensor([2.0, 3.0, 5.0], dtype=torch.float64, requires_grad=True)
    torch.ldexp(tx, torch.tensor([-1.0, -3.0, 2.0], dtype=torch.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


# -- linalg.vector_norm(ord=+-inf) of an input with a NaN (62702635, compile mode) ----------------
# The max / min norms were amax / amin of the magnitudes, whose gradient divides by the count of
# elements equal to the result: none equal a NaN norm, so every element's gradient was 0 / 0 = NaN
# where PyTorch's (its mask also takes the NaN elements; sgn(NaN) is 0) is 0.  They are now the
# core's norm (Tensor.norm's, already PyTorch's there); float16 stays float16 (a max is exact).

_NAN, _INF = float("nan"), float("inf")


def _inf_norm_grads(L, vals, ord, dtype, dim, keepdim):
    x = L.tensor(vals, dtype=getattr(L, dtype), requires_grad=True)
    y = L.linalg.vector_norm(x * x, ord, dim=dim, keepdim=keepdim)
    g, = L.autograd.grad(y.sum(), x, create_graph=True)
    g2, = L.autograd.grad((g * g).sum() + g.sum(), x)
    return (type(y.grad_fn).__name__, str(y.dtype), y.detach().numpy(), g.detach().numpy(),
            g2.numpy())


@pytest.mark.parametrize("vals", [[[-_INF, -0.11], [_NAN, 2.0]], [[1.0, _NAN], [_NAN, 2.0]],
                                  [[3.0, -3.0], [1.0, 2.0]], [[0.0, 0.0], [0.0, -0.0]]])
@pytest.mark.parametrize("ord", [_INF, -_INF])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("dim, keepdim", [(None, False), (0, False), ((0, 1), True), (-1, True)])
def test_vector_norm_inf_gradient_at_nan(torch, vals, ord, dtype, dim, keepdim):
    t = _inf_norm_grads(torch, vals, ord, dtype, dim, keepdim)
    g = _inf_norm_grads(tg, vals, ord, dtype, dim, keepdim)
    assert g[:2] == t[:2]
    np.testing.assert_array_equal(g[2], t[2])
    np.testing.assert_array_equal(g[3], t[3])
    # (second derivatives at an infinite input: sign's zero gradient times inf is NaN here,
    # PyTorch's structural zero is not; the open sgn class of docs/differences.md)
    finite = np.isfinite(np.asarray(vals, dtype=np.float64))
    np.testing.assert_array_equal(g[4][finite], t[4][finite])


# -- logdet of a real matrix with a negative determinant (65000328) --------------------------------
# logdet was logabsdet + log(sign): the right NaN, but logabsdet's gradient passed through it
# (SILENT: a finite gradient A^-T for a NaN output, where PyTorch's where(sign == -1, nan,
# logabsdet) gives 0).  Complex matrices keep PyTorch's sign.log() + logabsdet.

@pytest.mark.parametrize("matrix", [[[-0.10841728019517796]], [[1.0, 2.0], [3.0, 4.0]],
                                    [[2.0, 1.0], [1.0, 3.0]],
                                    [[[1.0, 2.0], [3.0, 4.0]], [[2.0, 0.5], [0.0, 3.0]]]])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logdet_negative_determinant_gradient(torch, matrix, dtype):
    def run(L):
        A = L.tensor(matrix, dtype=getattr(L, dtype), requires_grad=True)
        y = L.logdet(A * 1)
        g, = L.autograd.grad(y.sum(), A, create_graph=True)
        g2, = L.autograd.grad((g * g).sum(), A)
        return type(y.grad_fn).__name__, y.detach().numpy(), g.detach().numpy(), g2.numpy()
    t, g = run(torch), run(tg)
    assert g[0] == t[0]
    np.testing.assert_allclose(g[1], t[1], rtol=1e-6)
    for a, b in zip(g[2:], t[2:]):
        # (a masked gradient's zeros: PyTorch's slogdet backward gives +0, here +-0)
        np.testing.assert_allclose(np.abs(a) + 0.0, np.abs(b) + 0.0, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(np.sign(a[a != 0]), np.sign(b[a != 0]))


# -- shuffles that move nothing returned a view of their input (65001325) ---------------------------
# pixel_shuffle / pixel_unshuffle with factor 1 and channel_shuffle with 1 group or 1 channel per
# group came out of reshape / permute as a view of the input: an in-place write into the result
# silently changed the input (SILENT).  PyTorch's always write a new tensor.

_SHUFFLES = {
    "pixel_shuffle_1": lambda L, x: L.nn.functional.pixel_shuffle(x, 1),
    "pixel_unshuffle_1": lambda L, x: L.nn.functional.pixel_unshuffle(x, 1),
    "torch_pixel_shuffle_1": lambda L, x: L.pixel_shuffle(x, 1),
    "channel_shuffle_1": lambda L, x: L.channel_shuffle(x, 1),
    "channel_shuffle_all": lambda L, x: L.channel_shuffle(x, 4),
    "channel_shuffle_2": lambda L, x: L.nn.functional.channel_shuffle(x, 2),
    "module_channel_shuffle_1": lambda L, x: L.nn.ChannelShuffle(1)(x),
    "pixel_shuffle_2": lambda L, x: L.nn.functional.pixel_shuffle(x, 2),
    "pixel_unshuffle_h1": lambda L, x: L.nn.functional.pixel_unshuffle(x[..., :1, :1], 1),
}


@pytest.mark.parametrize("name", sorted(_SHUFFLES))
@pytest.mark.parametrize("channels_last", [False, True])
def test_shuffle_result_is_a_new_tensor(torch, name, channels_last):
    def run(L):
        leaf = L.tensor(np.arange(1.0, 33.0).reshape(2, 4, 2, 2), requires_grad=True)
        x = leaf * 1
        if channels_last:
            x = x.contiguous(memory_format=L.channels_last)
        y = _SHUFFLES[name](L, x)
        y.exp_()
        w = L.tensor(np.linspace(-1, 1, y.numel()).reshape(y.shape), dtype=y.dtype)
        (y * w).sum().backward()
        return (type(y.grad_fn).__name__, y.shape, y.stride(), x.detach().numpy().copy(),
                y.detach().numpy(), leaf.grad.numpy())
    t, g = run(torch), run(tg)
    # (a channels-last result is a view of its clone here: an in-place op on it shows
    # AsStridedBackward0 where PyTorch's shows ExpBackward0, and a size-1 channel dim's stride
    # differs; open, docs/differences.md)
    assert g[1] == t[1] and (channels_last or (g[0], g[2]) == (t[0], t[2]))
    for a, b in zip(g[3:], t[3:]):
        np.testing.assert_allclose(a, b, rtol=1e-12)


# -- heaviside's result (65000939, 65000957, 65001093) ----------------------------------------------
# Only `input` was given to the no-derivative node, so `values` alone requiring grad left the
# result without grad (PyTorch's requires grad; its backward raises); the result tensor itself
# went to the node, which returned it as a view of an argument, so an in-place op on it raised
# the custom-Function view error where PyTorch's runs.

@pytest.mark.parametrize("grads", [(True, False), (False, True), (True, True), (False, False)])
def test_heaviside_requires_grad_and_in_place(torch, grads):
    def run(L):
        a = L.tensor([0.0, 1.0, -1.0], dtype=L.float64, requires_grad=grads[0])
        b = L.tensor([0.5, 0.5, 0.5], dtype=L.float64, requires_grad=grads[1])
        y = L.heaviside(a * 1 if grads[0] else a, b)
        out = [y.requires_grad, type(y.grad_fn).__name__ if y.grad_fn else None]
        y.squeeze_()
        y.mul_(2)
        out.append(y.detach().numpy().tolist())
        if y.requires_grad:
            with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not"):
                y.sum().backward()
        with L.no_grad():
            out.append(L.heaviside(a, b).requires_grad)
        return out
    assert run(tg) == run(torch)


# -- embedding with an empty weight (65001884) ------------------------------------------------------
# PyTorch's embedding is an index_select of the rows: indices into an empty weight raise its
# RuntimeError (an empty dim) before any range check; here the range check's IndexError came first.

@pytest.mark.parametrize("indices", [[0], [5], [[0, 1]], []])
@pytest.mark.parametrize("rows", [0, 2])
def test_embedding_empty_weight_error(torch, indices, rows):
    def run(L):
        w = L.zeros(rows, 3, requires_grad=True)
        try:
            return tuple(L.nn.functional.embedding(L.tensor(indices, dtype=L.long), w).shape)
        except Exception as e:  # noqa: BLE001 - the error is the result compared
            return type(e).__name__, str(e)
    assert run(tg) == run(torch)


# -- cov with no degrees of freedom (65002644, 65003018) --------------------------------------------
# N - correction <= 0 divided the sums by a negative count (an empty observation dim: -0 where
# PyTorch's is NaN); PyTorch warns and clamps the divisor to 0 (NaN or inf).

@pytest.mark.parametrize("x", [[[1.0, 2.0, 3.0]], [[1.0], [2.0], [3.0]], [1.5], [[]], 2.0,
                               [[1.0, 2.0], [3.0, 5.0]]])
@pytest.mark.parametrize("correction", [0, 1, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_cov_without_degrees_of_freedom(torch, x, correction, weighted):
    import warnings

    def run(L):
        t = L.tensor(x, dtype=L.float64)
        kw = {}
        if weighted:
            n = t.shape[-1] if t.dim() else 1
            if n == 0:
                pytest.skip("zero weights: an error of its own")
            kw = dict(fweights=L.ones(n, dtype=L.long))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = L.cov(t, correction=correction, **kw).numpy()
        return out, [str(m.message) for m in w if "degrees of freedom" in str(m.message)]
    (g, gw), (t, tw) = run(tg), run(torch)
    np.testing.assert_array_equal(g, t)
    assert bool(gw) == bool(tw)
