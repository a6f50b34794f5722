"""Regression tests for differences found by tools/opinfo_sweep.py's complex-dtype run and its
reference-input run over the common op families (session 34), each case written out by hand."""
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _grad(lib, x, fn, w):
    t = lib.tensor(x, requires_grad=True)
    y = fn(lib, t)
    wt = lib.tensor(w).to(y.dtype)
    loss = (y * wt).sum()
    (loss.real if y.is_complex() else loss).backward()
    return y.detach().resolve_conj().numpy(), t.grad.resolve_conj().numpy()


# -- logcumsumexp of complex slices of different scales ------------------------------------------

# one slice near 1e4, one near 0: a shift by the largest real part of the whole input made
# exp(shift - y) overflow in the small slice (0 * inf: NaN gradients, SILENT)
_MIXED = np.array([[1e4 + 0.5j, 1e4 - 1j, 1e4 + 2j],
                   [0.3 - 1j, -2 + 0.5j, 1.0 + 1j]])
_W = np.array([[1 + 1j, -0.5j, 2.0], [0.5 - 1j, 1j, -1 + 0j]])


def test_logcumsumexp_complex_gradient_slices_of_different_scales():
    fn = lambda lib, t: lib.logcumsumexp(t, 1)  # noqa: E731
    t_out, t_grad = _grad(torch, _MIXED, fn, _W)
    g_out, g_grad = _grad(tapegrad, _MIXED, fn, _W)
    np.testing.assert_allclose(g_out, t_out, rtol=1e-12)
    assert not np.isnan(g_grad).any()
    np.testing.assert_allclose(g_grad, t_grad, rtol=1e-9, atol=1e-12)


def test_logcumsumexp_complex_gradient_along_dim0_and_float32():
    x = _MIXED.T.copy()
    fn = lambda lib, t: lib.logcumsumexp(t.to(lib.complex64), 0)  # noqa: E731
    _, t_grad = _grad(torch, x, fn, _W.T.copy())
    _, g_grad = _grad(tapegrad, x, fn, _W.T.copy())
    assert not np.isnan(g_grad).any()
    np.testing.assert_allclose(g_grad, t_grad, rtol=1e-3, atol=1e-4)


def test_logcumsumexp_complex_gradcheck_and_forward_ad():
    # (a row near 800: exp(800) overflows float64, so only a log-space sum is finite)
    x = tapegrad.tensor(np.array([[0.1 + 0.5j, -1 - 1j, 2 + 0.3j], [800.0 - 1j, -2 + 0.5j, 1 + 1j]]),
                        requires_grad=True)
    f = lambda a: tapegrad.logcumsumexp(a, 1)  # noqa: E731
    assert tapegrad.autograd.gradcheck(f, (x,), check_forward_ad=True)
    assert tapegrad.autograd.gradgradcheck(f, (x,))


# (torch's forward AD's first use imports code that calls the deprecated torch.jit.script)
@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_logcumsumexp_complex_forward_ad_slices_of_different_scales():
    # PyTorch's own tangent of the 1e4 row is NaN (its overflow); the tangent does not change
    # when a slice is shifted by a constant, so torch's tangent of the shifted input is the
    # reference
    shifted = _MIXED - np.array([[1e4], [0.0]])
    fw = torch.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(torch.tensor(shifted), torch.tensor(_W))
        expected = fw.unpack_dual(torch.logcumsumexp(d, 1)).tangent.numpy()
    fw = tapegrad.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(tapegrad.tensor(_MIXED), tapegrad.tensor(_W))
        out = fw.unpack_dual(tapegrad.logcumsumexp(d, 1)).tangent.numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-9, atol=1e-12)


# -- prod with dtype= of complex values ----------------------------------------------------------

_C = np.array([[1.5 + 0.5j, -2.0 + 1j, 0.5 - 2j], [3.0 + 0j, 0.25 + 1.5j, -1 + 2j]])
_WC = np.array([[1 + 0.5j, 2 - 1j, -1j], [0.5 + 0j, -1 + 1j, 2 + 2j]])


@pytest.mark.parametrize("dim", [None, 1, 0])
@pytest.mark.parametrize("dtype", ["complex128", "complex64", "float64"])
def test_prod_dtype_of_complex_input(dim, dtype):
    # tapegrad refused (NotImplementedError "ProdBackward1 is not implemented for complex") where
    # PyTorch computes: a complex dtype keeps the product complex, a real one drops the
    # imaginary part first (with PyTorch's warning)
    def fn(lib, t):
        kw = {"dtype": getattr(lib, dtype)}
        return t.prod(**kw) if dim is None else t.prod(dim, **kw)
    w = np.array(_WC[0, 0]) if dim is None else (_WC[:, 0] if dim == 1 else _WC[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_out, t_grad = _grad(torch, _C, fn, w)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g_out, g_grad = _grad(tapegrad, _C, fn, w)
    assert any("discards the imaginary part" in str(c.message) for c in caught) == \
        (dtype == "float64")
    assert g_out.dtype == t_out.dtype
    tol = 1e-5 if dtype == "complex64" else 1e-12
    np.testing.assert_allclose(g_out, t_out, rtol=tol)
    np.testing.assert_allclose(g_grad, t_grad, rtol=tol, atol=tol)


def test_prod_dtype_complex_grad_fn_and_gradcheck():
    x = tapegrad.tensor(_C, requires_grad=True)
    assert x.prod(1, dtype=tapegrad.complex128).grad_fn.name() == "ProdBackward1"
    assert x.prod(dtype=tapegrad.complex128).grad_fn.name() == "ProdBackward0"
    assert tapegrad.autograd.gradcheck(lambda a: a.prod(0, dtype=tapegrad.complex128), (x,))


# -- constant_pad_nd with a complex value ------------------------------------------------------

def test_constant_pad_nd_takes_a_complex_value():
    x = np.array([[1 + 2j, -3 + 0.5j]], dtype=np.complex64)
    outs = []
    for lib in (torch, tapegrad):
        t = lib.tensor(x, requires_grad=True)
        y = lib.constant_pad_nd(t, (1, 2), 1 - 2j)
        assert y.dtype == lib.complex64 and y.grad_fn.name() == "ConstantPadNdBackward0"
        (y * lib.tensor(np.arange(5) * (1 + 1j), dtype=lib.complex64)).sum().real.backward()
        outs.append((y.detach().numpy(), t.grad.resolve_conj().numpy()))
    np.testing.assert_array_equal(outs[1][0], outs[0][0])
    np.testing.assert_array_equal(outs[1][1], outs[0][1])


def test_constant_pad_nd_complex_value_into_real_and_bool_tensors():
    for lib in (torch, tapegrad):
        with pytest.raises(RuntimeError, match="value cannot be converted to type float without "
                                               "overflow"):
            lib.constant_pad_nd(lib.ones(2), (1, 1), 1 + 2j)
        assert lib.constant_pad_nd(lib.ones(2), (1, 1), 2 + 0j).tolist() == [2.0, 1.0, 1.0, 2.0]
        assert lib.constant_pad_nd(lib.zeros(2, dtype=lib.bool), (1, 0), 1j).tolist() == \
            [True, False, False]
        # F.pad's value is a float: a complex one stays refused there, on any tensor
        for t in (lib.ones(2), lib.ones(2, dtype=lib.complex64)):
            with pytest.raises(TypeError, match=r"pad\(\): argument 'value' \(position 4\) must "
                                                r"be float, not complex"):
                lib.nn.functional.pad(t, (1, 1), value=1 + 2j)


# -- igamma / igammac edge cases with NaN --------------------------------------------------------

def test_igamma_igammac_nan_meets_pytorch_edge_order():
    # PyTorch tests its edges in order, so a NaN beside a decisive other argument gets a value:
    # igamma(nan, 0) = 0, igamma(inf, nan) = 0, igamma(nan, inf) = 1 (tapegrad gave NaN, SILENT)
    inf, nan = float("inf"), float("nan")
    a = [nan, inf, nan, 0.0, nan, -1.0, nan, 2.0, inf]
    x = [0.0, nan, inf, nan, -1.0, nan, 2.0, inf, inf]
    for dtype in ("float64", "float32"):
        for fn in ("igamma", "igammac"):
            t = getattr(torch, fn)(torch.tensor(a, dtype=getattr(torch, dtype)),
                                   torch.tensor(x, dtype=getattr(torch, dtype)))
            g = getattr(tapegrad, fn)(tapegrad.tensor(a, dtype=getattr(tapegrad, dtype)),
                                      tapegrad.tensor(x, dtype=getattr(tapegrad, dtype)))
            np.testing.assert_array_equal(g.numpy(), t.numpy())


# -- scatter family: src of fewer dims than index, empty index -----------------------------------

@pytest.mark.parametrize("op", ["scatter_add_", "scatter_", "scatter_reduce_"])
def test_scatter_src_of_fewer_dims_reads_a_size_it_lacks(op):
    # PyTorch compares index with src dim by dim before it compares their ranks: src lacking a
    # dim is the IndexError of src.size(d) (tapegrad raised the rank RuntimeError)
    for lib in (torch, tapegrad):
        extra = ("sum",) if op == "scatter_reduce_" else ()
        with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                             r"of \[-1, 0\], but got 1\)"):
            getattr(lib.zeros(3, 4), op)(0, lib.zeros(2, 2, dtype=lib.long), lib.ones(2), *extra)
        with pytest.raises(IndexError, match=r"of \[-2, 1\], but got 2\)"):
            getattr(lib.zeros(3, 4, 5), op)(0, lib.zeros(2, 2, 2, dtype=lib.long),
                                            lib.ones(2, 2), *extra)
        # a smaller src dim first, or self's sizes exceeded: the rank message
        with pytest.raises(RuntimeError, match="same number of dimensions as src tensor"):
            getattr(lib.zeros(3, 4), op)(0, lib.zeros(2, 2, dtype=lib.long), lib.ones(1), *extra)
        with pytest.raises(RuntimeError, match="same number of dimensions as src tensor"):
            getattr(lib.zeros(3, 4), op)(0, lib.zeros(2, 5, dtype=lib.long), lib.ones(2), *extra)


def test_scatter_add_empty_index_checks_no_shapes():
    # PyTorch checks nothing of an empty index's shape (tapegrad refused mismatched ranks/sizes)
    for lib in (torch, tapegrad):
        for index_shape, src_shape in (((0, 2), (2,)), ((0, 9), (1, 1)), ((0,), (2, 2))):
            src = lib.ones(src_shape, requires_grad=True)
            out = lib.zeros(3, 4).scatter_add(0, lib.zeros(index_shape, dtype=lib.long), src * 2)
            assert out.tolist() == [[0.0] * 4] * 3
            if lib is tapegrad:
                # (PyTorch's own backward refuses these shapes: its gather of the gradient has
                # index's shape, not src's; tapegrad gives src's zero gradient)
                out.sum().backward()
                assert src.grad.tolist() == lib.zeros(src_shape).tolist()
