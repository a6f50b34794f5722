"""Regressions of session 19's differential fuzzing (seeds 60611500 on, 62604000 on, 63001000 on)
and of the two items it took over (circular F.pad's size rule, complex log's gradient at 0),
against PyTorch where it is installed (the `torch` fixture skips cleanly without it), with
float64 finite-difference checks.
"""
import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F


def _np(t):
    return None if t is None else t.detach().numpy()


# -- circular F.pad: PyTorch's overlap error only for dense slices (63000047) ---------------------
# PyTorch wraps by copying slices of its output onto its own pad regions; a pad wider than what
# the crop kept makes such a copy overlap itself, and PyTorch's overlap check raises only where
# both slices are dense (every dim before the padded one of size 1).  tapegrad raised for every
# such pad; where PyTorch computes a right pad, its values are the periodic ones (unless its copy
# runs vectorised over rows coalesced across the padded dim: then they are not, nor is a left
# pad's, which reads unwritten memory; those are not compared).

@pytest.mark.parametrize("shape, pads", [
    ((2, 2, 2), (-1, 2, 0, -1)),        # the seed: batch 2, so the slices are strided
    ((4, 2), (-1, 2)),                  # unbatched 1-d padding of 4 channels
    ((2, 3, 4), (-2, 3)),
])
def test_circular_pad_wider_than_kept_on_strided_slices_as_torch(torch, shape, pads):
    x = np.arange(float(np.prod(shape))).reshape(shape)
    ya = torch.nn.functional.pad(torch.tensor(x), pads, mode="circular")
    yb = F.pad(tg.tensor(x, requires_grad=True), pads, mode="circular")
    assert tuple(yb.shape) == tuple(ya.shape)
    np.testing.assert_array_equal(_np(yb), ya.numpy())


@pytest.mark.parametrize("shape, pads", [
    ((1, 2), (-1, 2)), ((1, 1, 2), (-1, 2)), ((1, 1, 3, 2), (0, 0, -2, 2)),
    ((1, 1, 1, 4), (-3, 2, 0, 0)),
])
def test_circular_pad_wider_than_kept_on_dense_slices_raises_as_torch(torch, shape, pads):
    x = np.ones(shape)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        torch.nn.functional.pad(torch.tensor(x), pads, mode="circular")
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        F.pad(tg.tensor(x), pads, mode="circular")


def test_circular_pad_wider_than_kept_gradient_is_the_derivative(gradcheck):
    # PyTorch's own gradient here fails torch.autograd.gradcheck (docs/differences.md)
    gradcheck(lambda x: F.pad(x, (-1, 2), mode="circular") * tg.arange(1.0, 13.0,
              dtype=tg.float64).reshape(4, 3), np.random.default_rng(0).standard_normal((4, 2)))
    gradcheck(lambda x: F.pad(x, (2, -2), mode="circular") ** 2,
              np.random.default_rng(1).standard_normal((2, 3, 3)))


def test_circular_pad_checks_in_torchs_order(torch):
    # an empty output never wraps (nothing kept elsewhere is no error); the outermost dim's
    # check comes first
    for shape, pads in [((2, 1, 1, 1), (-1, 1, 1, 0, 0, -1)), ((1, 3, 2), (1, -2, -3, 0)),
                        ((1, 2, 3), (4, 0, -3, -2))]:
        try:
            ya = torch.nn.functional.pad(torch.ones(shape), pads, mode="circular")
        except RuntimeError as e:
            with pytest.raises(RuntimeError, match=str(e)[:30]):
                F.pad(tg.ones(shape), pads, mode="circular")
        else:
            yb = F.pad(tg.ones(shape, requires_grad=True), pads, mode="circular")
            assert tuple(yb.shape) == tuple(ya.shape) and yb.numel() == 0
            assert yb.requires_grad


# -- reflect / replicate F.pad: PyTorch's output-size checks (60611677) ---------------------------
# Reflect padding to no width was computed (an empty result); PyTorch's 1-d kernels raise below
# width 1, its 2-d and 3-d ones when every padded output dim is below 1, and a negative size
# otherwise fails to allocate.

@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("shape, pads", [
    ((1, 1), (-1, -1)), ((2, 3), (-3, 0)), ((2, 3), (-2, 0)), ((1, 2, 2), (0, 0, -1, -1)),
    ((1, 2, 2), (-2, 0, -2, 0)), ((1, 2, 2), (-3, 0, 0, 0)), ((1, 2, 2), (-3, 0, -2, 0)),
    ((1, 1, 2, 2, 2), (-2, 0, -2, 0, -2, 0)), ((1, 1, 2, 2, 2), (0, 0, 0, 0, -3, 0)),
    ((1, 1, 2, 2, 2), (-2, 0, -2, 0, 0, 0)), ((1, 1, 2, 2, 2), (-3, 0, -3, 0, -3, 0)),
])
def test_edge_pad_output_size_checks_as_torch(torch, mode, shape, pads):
    x = np.arange(float(np.prod(shape))).reshape(shape)
    try:
        ya = torch.nn.functional.pad(torch.tensor(x), pads, mode=mode)
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as info:
            F.pad(tg.tensor(x), pads, mode=mode)
        assert str(info.value) == str(e).split("\n")[0]
    else:
        yb = F.pad(tg.tensor(x), pads, mode=mode)
        assert tuple(yb.shape) == tuple(ya.shape)
        np.testing.assert_array_equal(_np(yb), ya.numpy())


# -- histogram: PyTorch checks the bin count before the input's dtype (60612243) ----------------

def test_histogram_bin_count_checked_before_dtype(torch):
    for L in (torch, tg):
        with pytest.raises(RuntimeError, match="bins must be > 0, but got 0 for dimension 0"):
            L.histogram(L.tensor([1, 2]), 0)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        tg.histogram(tg.tensor([1, 2]), 3)


# -- einsum of mixed float32/float64 operands with an empty product (60611822, 60612965) ----------
# PyTorch contracts a summed pair with bmm, which compares dtypes only when it multiplies
# anything: an empty product (a summed subscript of size 0, or an empty output) is zeros in the
# second operand's dtype.  tapegrad raised bmm's dtype error.

@pytest.mark.parametrize("eq, sa, sb", [
    ("ij,jk->ik", (2, 0), (0, 3)), ("ij,jk->ik", (2, 2), (2, 0)), ("ij,jk->ik", (0, 2), (2, 3)),
    ("bij,bjk->bik", (0, 2, 2), (0, 2, 3)), ("dcd,,bdd->c", (2, 0, 2), ()),
])
@pytest.mark.parametrize("order", [0, 1])
def test_einsum_mixed_dtypes_empty_product_as_torch(torch, eq, sa, sb, order):
    dts = ["float32", "float64"][::1 if order == 0 else -1]
    seen = []
    for L in (torch, tg):
        a = L.ones(sa, dtype=getattr(L, dts[0]), requires_grad=True)
        b = L.ones(sb, dtype=getattr(L, dts[1]), requires_grad=True)
        ops = [a, b] if eq.count(",") == 1 else [a, b, L.ones((3, 2, 2), dtype=L.float32)]
        out = L.einsum(eq, *ops)
        out.sum().backward()
        seen.append((str(out.dtype).split(".")[-1], tuple(out.shape), _np(out),
                     str(a.grad.dtype), tuple(a.grad.shape), str(b.grad.dtype)))
    (td, ts, tv, *tg_), (d, s, v, *g) = seen
    assert (d, s) == (td, ts)
    np.testing.assert_array_equal(v, tv)
    assert [x.split(".")[-1] if isinstance(x, str) else x for x in g] == \
        [x.split(".")[-1] if isinstance(x, str) else x for x in tg_]


def test_einsum_mixed_dtypes_nonempty_product_still_raises(torch):
    for L in (torch, tg):
        with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
            L.einsum("ij,jk->ik", L.ones(2, 2), L.ones(2, 3, dtype=L.float64))


# -- complex functions at their poles: PyTorch divides the gradient (session 18's open item) -----
# PyTorch's formulas divide where the derivative has a pole (log: grad / conj(z)); a complex
# division by zero is inf+infj there (numpy's and c10's), while tapegrad multiplied by
# conj(1 / z), which is nan+nanj.  By limits the derivative is infinite, so inf is the answer.
# The reciprocal's forward at 0 is 1 / z too (inf+nanj; np.reciprocal gave nan+nanj).

_POLES = [complex(0, 0), complex(-0.0, 0), complex(0, -0.0), complex(-1, 0), complex(0, 1),
          complex(0, -1), complex(1, 0), complex(1.5, -0.5)]


def _same_complex(a, b):
    a, b = np.asarray(a), np.asarray(b)
    for part in ("real", "imag"):
        x, y = getattr(a, part), getattr(b, part)
        assert np.array_equal(np.isnan(x), np.isnan(y)), (a, b)
        np.testing.assert_allclose(np.where(np.isnan(x), 0, x), np.where(np.isnan(y), 0, y),
                                   rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn", ["log", "log2", "log10", "log1p", "sqrt", "atan", "atanh",
                                "reciprocal", "rsqrt", "exp"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_complex_pole_gradients_as_torch(torch, fn, dtype, create_graph):
    seen = []
    for L in (torch, tg):
        x = L.tensor(_POLES, dtype=getattr(L, dtype), requires_grad=True)
        y = getattr(L, fn)(x)
        w = L.tensor([complex(1, 2)] * len(_POLES), dtype=getattr(L, dtype))
        g, = L.autograd.grad((y * w).real.sum(), x, create_graph=create_graph)
        seen.append((y.detach().resolve_conj().numpy(), g.detach().resolve_conj().numpy()))
    _same_complex(seen[1][0], seen[0][0])
    _same_complex(seen[1][1], seen[0][1])


# -- complex log1p near 0 (found triaging the above) -- SILENT: numpy's complex log1p is
# log(hypot(1 + x, y)), which keeps no digits of a small z: complex64 log1p(1e-5) was 1.0014e-05,
# log1p(4e-09) was 0, and complex128 log1p(3e-14) was off in its third digit.

@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_log1p_accurate_near_zero(torch, dtype):
    rng = np.random.default_rng(0)
    z = 10.0 ** rng.uniform(-20, -0.5, 400) * np.exp(1j * rng.uniform(-np.pi, np.pi, 400))
    z = np.concatenate([z, z.real + 0j, [complex(-0.0, 0.0), complex(0.3, 0.1), complex(-0.9, 2)]])
    z = z.astype(dtype)
    mine = tg.log1p(tg.tensor(z)).numpy().astype(np.complex128)
    ref = torch.log1p(torch.tensor(z)).numpy().astype(np.complex128)
    eps = np.finfo(z.real.dtype).eps
    np.testing.assert_allclose(mine, ref, rtol=8 * eps, atol=0)
    assert np.signbit(mine[-3].real)                # log1p(-0+0j) = -0+0j, as PyTorch
    small = np.abs(z) < 1e-4                        # the series, in float64
    z64 = z.astype(np.complex128)
    series = z64 - z64 ** 2 / 2 + z64 ** 3 / 3 - z64 ** 4 / 4
    np.testing.assert_allclose(mine[small], series[small], rtol=4 * eps)


# -- logit's gradient outside [0, 1] (62604431) -- SILENT: logit was composed as
# log(x) - log1p(-x), whose gradient 1/x + 1/(1 - x) is finite where the value is NaN (x < 0 or
# x > 1); PyTorch's is NaN there (0 outside [eps, 1 - eps] with eps), and its second derivative
# comes from the same masked formula.

_LOGIT_X = [-0.5, 0.0, 0.3, 1.0, 1.5, 0.05, 0.97]


@pytest.mark.parametrize("form", ["logit", "eps", "inplace", "inplace_eps", "special"])
def test_logit_gradients_as_torch(torch, form):
    seen = []
    for L in (torch, tg):
        x = L.tensor(_LOGIT_X, dtype=L.float64, requires_grad=True)
        y = {"logit": lambda: L.logit(x), "eps": lambda: L.logit(x, eps=0.1),
             "inplace": lambda: (x * 1).logit_(), "inplace_eps": lambda: (x * 1).logit_(eps=0.1),
             "special": lambda: L.special.logit(x)}[form]()
        g, = L.autograd.grad(y.sum(), x, create_graph=True)
        g2, = L.autograd.grad(g.sum(), x)
        seen.append((_np(y), _np(g), _np(g2)))
    for mine, ref in zip(seen[1], seen[0]):
        np.testing.assert_allclose(mine, ref, rtol=1e-13, equal_nan=True)


def test_logit_gradient_inside_matches_finite_differences(gradcheck):
    gradcheck(lambda x: tg.logit(x), [0.1, 0.4, 0.8])
    gradcheck(lambda x: tg.logit(x, eps=0.2) * 3, [0.1, 0.4, 0.9, 0.5])


# -- detach_copy (62604089, 62604361) --  PyTorch has no derivative for it: its result requires
# grad and differentiating raises; tapegrad detached (no gradient, silently).

def test_detach_copy_requires_grad_and_refuses_backward(torch):
    for L in (torch, tg):
        x = L.ones(2, requires_grad=True)
        y = L.detach_copy(x)
        assert y.requires_grad
        with pytest.raises(RuntimeError, match="derivative for aten::detach_copy is not "
                                               "implemented"):
            (y * 2).sum().backward()
        y[0] = 5.0                                  # a copy: x keeps its values
        assert x.tolist() == [1.0, 1.0]
        assert not L.detach_copy(L.ones(2)).requires_grad


# -- in-place asinh_/acosh_/atanh_ (62604577): PyTorch has no derivative for their in-place
# forms ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["asinh_", "acosh_", "atanh_", "arcsinh_"])
def test_inverse_hyperbolic_in_place_refuses_backward(torch, name):
    for L in (torch, tg):
        x = L.tensor([0.2, 0.4], dtype=L.float64, requires_grad=True)
        y = getattr(x * 1 + (1.5 if "cosh" in name else 0.0), name)()
        with pytest.raises(NotImplementedError, match="inplace version of"):
            y.sum().backward()
    y = tg.tensor([0.2, 0.4], dtype=tg.float64, requires_grad=True) * 1
    np.testing.assert_allclose(_np(tg.asinh(y)), np.arcsinh([0.2, 0.4]))


# -- linalg on empty and non-finite matrices (62604037, 62604166, 62604394, 62604243) -------------

def test_linalg_empty_matrices_as_torch(torch):
    for shape in [(0, 0), (2, 0, 3), (3, 0), (0, 2, 2)]:
        seen = []
        for L in (torch, tg):
            A = L.ones(shape, requires_grad=True)
            LU, piv = L.linalg.lu_factor(A)
            LU.sum().backward()
            seen.append((tuple(LU.shape), tuple(piv.shape), str(piv.dtype).split(".")[-1],
                         tuple(A.grad.shape), _np(L.linalg.lu_factor_ex(A.detach()).info).tolist(),
                         _np(L.linalg.matrix_norm(A.detach(), 2)).tolist()))
        assert seen[1] == seen[0]
    for L in (torch, tg):
        with pytest.raises(IndexError, match="amin"):
            L.linalg.matrix_norm(L.ones(0, 3), -2)


def test_svd_of_nan_raises_torchs_linalg_error(torch):
    nan = float("nan")
    for fn in ("svdvals", "pinv", "matrix_rank", "cond"):
        for A, prefix in [([[nan, 1.0], [1.0, 2.0]], ""),
                          ([[[1.0, 0.0], [0.0, 1.0]], [[nan, 1.0], [1.0, 2.0]]],
                           r"\(Batch element 1\): ")]:
            for L in (torch, tg):
                with pytest.raises(RuntimeError, match=f"linalg.svd: {prefix}The algorithm "
                                                       "failed to converge because the input "
                                                       "matrix contained non-finite values."):
                    getattr(L.linalg, fn)(L.tensor(A))
    assert issubclass(tg.linalg.LinAlgError, RuntimeError)


def test_solve_batch_broadcast_errors_as_torch(torch):
    for a, b in [((3, 0, 0), (3, 2, 0, 1)), ((2, 3, 3), (3, 3, 1)), ((2, 3, 3), (4, 3, 1))]:
        with pytest.raises(RuntimeError) as ref:
            torch.linalg.solve(torch.ones(a), torch.ones(b))
        with pytest.raises(RuntimeError) as mine:
            tg.linalg.solve(tg.ones(a), tg.ones(b))
        assert str(mine.value) == str(ref.value)
    A = np.stack([np.eye(3), np.diag([1.0, 1.0, 0.0])])
    for L in (torch, tg):
        with pytest.raises(RuntimeError, match=r"solve: \(Batch element 1\): The solver failed"):
            L.linalg.solve(L.tensor(A), L.ones(2, 3, 1, dtype=L.float64))


def test_matrix_norm_of_empty_is_a_constant_as_torch(torch):
    inf = float("inf")
    for shape in [(0, 3), (2, 0), (0, 0)]:
        flags = []
        for L in (torch, tg):
            A = L.ones(shape, requires_grad=True)
            flags.append([L.linalg.matrix_norm(A, o).requires_grad
                          for o in (2, "nuc", "fro", 1, inf)])
        assert flags[1] == flags[0]


def test_vecdot_refuses_numbers_as_torch(torch):
    for args, name in [((None, -1.5), r"'y' \(position 2\)"), ((1.5, None), r"'x' \(position 1\)")]:
        for L in (torch, tg):
            a = [L.ones(3) if v is None else v for v in args]
            with pytest.raises(TypeError, match=f"linalg_vecdot\\(\\): argument {name}"):
                L.linalg.vecdot(*a)
    for L in (torch, tg):                           # (63003686)
        with pytest.raises(RuntimeError, match="found x of type Double and y of type Float"):
            L.linalg.vecdot(L.ones(3, dtype=L.float64), L.ones(3))


# -- an in-place op on a tensor that does not record, with an operand that does (62604779,
# 62604799): the op records and may save self, which the write then changed: tapegrad raised
# the version error at backward; it now computes from a copy of self, as PyTorch.

@pytest.mark.parametrize("op, extra", [("xlogy_", ()), ("lerp_", (0.3,)), ("atan2_", ()),
                                       ("hypot_", ())])
def test_in_place_with_recording_operand_as_torch(torch, op, extra):
    seen = []
    for L in (torch, tg):
        v0 = L.tensor([-1.35, 0.7, 2.0], requires_grad=True)
        with L.no_grad():
            v7 = L.tensor([0.72, 1.5, -0.3]) * 1
        getattr(v7, op)(v0, *extra)
        (v7 * L.tensor([1.0, 2.0, 3.0])).sum().backward()
        seen.append((_np(v7), _np(v0.grad)))
    np.testing.assert_allclose(seen[1][0], seen[0][0], rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(seen[1][1], seen[0][1], rtol=1e-6, equal_nan=True)


# -- lgamma / digamma to the fourth derivative (63001365): trigamma's own derivative raised
# NotImplementedError; it is polygamma(2) --------------------------------------------------------

@pytest.mark.parametrize("fn", ["lgamma", "digamma"])
def test_lgamma_digamma_higher_derivatives_as_torch(torch, fn):
    seen = []
    for L in (torch, tg):
        x = L.tensor([0.3, 1.7, 4.0, -1.5], dtype=L.float64, requires_grad=True)
        g = getattr(L, fn)(x).sum()
        grads = []
        for k in range(4):
            g, = L.autograd.grad(g.sum() if k else g, x, create_graph=k < 3)
            grads.append(_np(g))
        seen.append(grads)
    for mine, ref in zip(*seen[::-1]):
        np.testing.assert_allclose(mine, ref, rtol=1e-9)


# -- erfinv saves its input, as PyTorch (63001769): it saved its result, so a write into the
# result (or a view of it) raised the version error at backward where PyTorch runs ------------

def test_erfinv_result_written_in_place_as_torch(torch):
    seen = []
    for L in (torch, tg):
        v2 = L.tensor([[-1.21, 0.29], [-1.8, 1.53], [-1.88, 1.64]], requires_grad=True)
        v4 = L.special.erfinv(v2.tanh())[:, None]
        v4[0:1] = -0.0
        (v4 * 2).sum().backward()
        x = L.tensor([0.3, -0.7, 0.95], dtype=L.float64, requires_grad=True)
        g, = L.autograd.grad(L.erfinv(x).sum(), x, create_graph=True)
        g2, = L.autograd.grad(g.sum(), x)
        seen.append((_np(v2.grad), _np(g), _np(g2)))
    for mine, ref in zip(seen[1], seen[0]):
        np.testing.assert_allclose(mine, ref, rtol=1e-6)
