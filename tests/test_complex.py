"""Complex tensors (complex64 / complex128): creation, printing, promotion, views, errors and
gradients (PyTorch's convention: z.grad = dL/dx + i dL/dy), checked against PyTorch and against
central differences on real parametrisations."""
import warnings

import numpy as np
import pytest

import tapegrad as tg

Z = [1 + 2j, -0.5 + 0.3j, 2 - 1j]
W = [0.3 - 1j, 1.5 + 0.2j, -1 + 1j]
X = [0.7, -1.2, 2.0]


def _grad(t):
    if t.grad is None:
        return None
    g = t.grad.detach()
    return (g.resolve_conj() if hasattr(g, "resolve_conj") else g).numpy()


def _run(lib, fn, dtype):
    cdt = {"float32": lib.complex64, "float64": lib.complex128}[dtype]
    z = lib.tensor(Z, dtype=cdt, requires_grad=True)
    w = lib.tensor(W, dtype=cdt, requires_grad=True)
    x = lib.tensor(X, dtype=getattr(lib, dtype), requires_grad=True)
    out = fn(lib, z, w, x)
    out.backward()
    return out, [_grad(t) for t in (z, w, x)]


GRADIENT_CASES = {
    "mul_abs": lambda l, z, w, x: (z * w).abs().sum(),
    "div_real": lambda l, z, w, x: (z / w).real.sum(),
    "mul_real_imag": lambda l, z, w, x: (z * x).imag.sum(),
    "add_sub_abs_pow": lambda l, z, w, x: (z + w - x).abs().pow(2).sum(),
    "view_as_real_pow": lambda l, z, w, x: l.view_as_real(z * w).pow(2).sum(),
    "exp_conj_angle": lambda l, z, w, x: (z.exp() * w.conj()).angle().sum(),
    "log_sqrt": lambda l, z, w, x: (z.log() + w.sqrt()).abs().sum(),
    "pow_real_exponent": lambda l, z, w, x: (z ** 2 + z ** 0.5).abs().sum(),
    "scalars": lambda l, z, w, x: (2j * z - 1 / w + (1 - 1j)).abs().sum(),
    "rsub_rdiv": lambda l, z, w, x: ((1 + 1j) - z).abs().sum() + (2 / w).real.sum(),
    "neg_reciprocal": lambda l, z, w, x: (-z).reciprocal().imag.sum(),
    "polar": lambda l, z, w, x: l.polar(x.abs(), x).mul(z).real.sum(),
    "complex": lambda l, z, w, x: l.complex(x, x * 2).mul(w).imag.sum(),
    "outer_matmul": lambda l, z, w, x: (z.reshape(3, 1) @ w.reshape(1, 3)).abs().sum(),
    "dot": lambda l, z, w, x: (z @ w).abs(),
    "mv": lambda l, z, w, x: (l.stack([z, w]) @ z).abs().sum(),
    "batched_matmul": lambda l, z, w, x: (l.stack([z, w]).reshape(2, 3, 1)
                                          @ w.reshape(1, 1, 3)).abs().sum(),
    "stack_transpose_index": lambda l, z, w, x: l.stack([z, w]).transpose(0, 1)[1:].sum().abs(),
    "cat_unsqueeze_flatten_mean": lambda l, z, w, x: l.cat([z, w]).unsqueeze(0).flatten()
    .mean().abs(),
    "sgn": lambda l, z, w, x: (z.sgn() * w).real.sum(),
    "view_as_complex": lambda l, z, w, x: l.view_as_complex(l.stack([x, x * x], -1)).mul(z)
    .abs().sum(),
    "sum_abs": lambda l, z, w, x: (z * w).sum().abs(),
    "trig": lambda l, z, w, x: (z.sin() * w.cos() + z.tanh()).abs().sum(),
    "real_to_complex": lambda l, z, w, x: (x * 1j).exp().real.sum(),
    "float_to_complex_cast": lambda l, z, w, x: (x.to(z.dtype) * z).abs().sum(),
    "abs_squared": lambda l, z, w, x: (z.abs() ** 2).sum(),
    "norm": lambda l, z, w, x: (z * w).norm() + l.linalg.vector_norm(z, 1),
    "norm_dim": lambda l, z, w, x: l.stack([z, w]).norm(dim=1, keepdim=True).sum(),
    "linalg_norm": lambda l, z, w, x: l.linalg.norm(z - w),
    "var_std": lambda l, z, w, x: (z * w).var() + l.stack([z, w]).std(0).sum(),
    "var_correction": lambda l, z, w, x: z.var(correction=0) * w.std(unbiased=False),
    "mm_bmm_mv_dot": lambda l, z, w, x: (l.mm(z.reshape(3, 1), w.reshape(1, 3)).abs().sum()
                                         + l.bmm(z.reshape(1, 3, 1), w.reshape(1, 1, 3))
                                         .abs().sum()
                                         + l.mv(l.stack([z, w]), w).abs().sum()
                                         + l.dot(z, w).abs() + l.vdot(z, w).abs()),
    "einsum_tensordot": lambda l, z, w, x: (l.einsum("i,i->", z, w).abs()
                                            + l.tensordot(z, w, dims=1).abs()),
    "inplace_chain": lambda l, z, w, x: _inplace_chain(z, w).abs().sum(),
    "setitem": lambda l, z, w, x: _setitem(z, w).abs().sum(),
    "masked_fill": lambda l, z, w, x: (z * w).masked_fill(x > 0, 0).abs().sum(),
    "masked_select": lambda l, z, w, x: (z * w).masked_select(x > 0).abs().sum(),
    "where": lambda l, z, w, x: l.where(x > 0, z, w).mul(z).abs().sum(),
    "pad": lambda l, z, w, x: l.nn.functional.pad(z * w, (1, 2)).mul(
        l.arange(6.0).to(z.dtype)).abs().sum(),
    "as_strided": lambda l, z, w, x: (z * w).as_strided((2, 2), (1, 1)).abs().sum(),
    "gather": lambda l, z, w, x: (z * w).gather(0, l.tensor([2, 0, 2])).abs().sum(),
}


def _inplace_chain(z, w):
    y = z * 1
    y.mul_(w)
    y.add_(w)
    y.sub_(1j)
    y.div_(w)
    y.mul_(2j)
    y.add_(z, alpha=2)
    return y


def _setitem(z, w):
    y = (z * 2).clone()
    y[0] = w[1] * z[0]
    y[1:] *= w[:2]
    return y


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", sorted(GRADIENT_CASES))
def test_gradients_match_torch(torch, case, dtype):
    fn = GRADIENT_CASES[case]
    ours, our_grads = _run(tg, fn, dtype)
    theirs, their_grads = _run(torch, fn, dtype)
    assert repr(ours.dtype) == repr(theirs.dtype)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.item(), theirs.item(), **tol)
    for a, b in zip(our_grads, their_grads):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.dtype == b.dtype
            np.testing.assert_allclose(a, b, **tol)


def _complex_of(a):
    return tg.complex(a[..., 0], a[..., 1])


@pytest.mark.parametrize("fn", [
    lambda z: (z * z).abs(),
    lambda z: (z.exp() / (z + 3)).real,
    lambda z: z.log().imag + z.sqrt().abs(),
    lambda z: z.angle() * z.abs(),
    lambda z: tg.view_as_real(z ** 3).sum(-1),
    lambda z: (z.conj() * z.sgn()).imag,
    lambda z: tg.fft.fft(z).abs(),
    lambda z: tg.fft.irfft(z, n=5) * tg.arange(5.0).double(),
    lambda z: tg.fft.hfft(z, n=4, norm="ortho") ** 2,
])
def test_gradients_by_finite_differences(gradcheck, fn):
    # z = a[..., 0] + i a[..., 1]: the real parametrisation finite differences can check
    pairs = np.array([[1.0, 2.0], [-0.5, 0.3], [2.0, -1.0]])
    gradcheck(lambda a: fn(_complex_of(a)), pairs)


def test_complex_leaf_grad_is_dl_dx_plus_i_dl_dy():
    z = tg.tensor([1 + 2j, 3 - 1j], dtype=tg.complex128, requires_grad=True)
    (z.real * 3 + z.imag ** 2).sum().backward()
    assert z.grad.dtype == tg.complex128
    np.testing.assert_allclose(z.grad.numpy(), [3 + 4j, 3 - 2j])


# -- creation, printing, promotion -----------------------------------------------------------------

REPR_CASES = [
    "T.tensor([1+2j, -3.5-0.25j])",
    "T.tensor([1+2j], dtype=T.complex128)",
    "T.tensor(1+2j)",
    "T.tensor([[1e-5+2j, 3+4j], [0j, -0.0-0j]])",
    "T.tensor([1+2j], requires_grad=True)",
    "T.tensor([1+2j], requires_grad=True) * 2",
    "T.ones(2, 3, dtype=T.cfloat)",
    "T.zeros(2, dtype=T.cdouble)",
    "T.full((2,), 1j)",
    "T.complex(T.tensor([1., 2.]), T.tensor([3., 4.]))",
    "T.polar(T.tensor([1., 2.]), T.tensor([0.5, 4.]))",
    "T.tensor([1+2j]).real",
    "T.tensor([1+2j, 3-1j]).imag",
    "T.tensor([1+2j]).conj()",
    "T.tensor([1+2j]).abs()",
    "T.tensor([1+2j]).angle()",
    "T.view_as_real(T.tensor([1+2j, 3-4j]))",
    "T.view_as_complex(T.tensor([[1., 2.], [3., 4.]]))",
    "T.tensor([1., 2.]) + 1j",
    "T.tensor([1., 2.], dtype=T.float64) * 1j",
    "T.arange(40.0).reshape(4, 10) * (1 + 1j)",
    "T.tensor([1.5+1e9j])",
    "T.tensor([1+2j]) == T.tensor([1+2j])",
    "T.tensor([1+2j, 2j]).sum()",
    "T.tensor([1+2j, 2j]).mean()",
    "T.tensor([1+2j]).to(T.complex128)",
    "T.tensor([1., 2.]).to(T.cfloat)",
    "T.tensor([1+2j, 2j]).exp()",
    "T.isreal(T.tensor([1+0j, 2j]))",
    "T.tensor([[1+1j, 2], [3, 4j]]) @ T.tensor([[1j, 0], [0, 1]])",
]


@pytest.mark.parametrize("expr", REPR_CASES)
def test_repr_and_dtype_match_torch(torch, expr):
    ours, theirs = eval(expr, {"T": tg}), eval(expr, {"T": torch})
    assert repr(ours) == repr(theirs)
    assert repr(ours.dtype) == repr(theirs.dtype)
    assert ours.is_complex() == theirs.is_complex()


def test_promotion_matches_torch(torch):
    dtypes = ["bool", "int64", "float16", "float32", "float64", "complex64", "complex128"]
    for a in dtypes:
        for b in dtypes:
            for da, db in (((2,), (2,)), ((2,), ()), ((), (2,))):
                if "complex" not in a + b or (a == "float16" and "complex" in b and db == ()):
                    continue
                x = [tg.ones(da, dtype=getattr(tg, a)), torch.ones(da, dtype=getattr(torch, a))]
                y = [tg.ones(db, dtype=getattr(tg, b)), torch.ones(db, dtype=getattr(torch, b))]
                try:
                    expected = repr(torch.result_type(x[1], y[1]))
                except Exception:           # pragma: no cover
                    continue
                if "complex32" in expected:
                    continue
                assert repr(tg.result_type(x[0], y[0])) == expected, (a, b, da, db)
        for scalar in (1j, 2.5, 3):
            t = [tg.ones(2, dtype=getattr(tg, a)), torch.ones(2, dtype=getattr(torch, a))]
            expected = repr(torch.result_type(t[1], scalar))
            if "complex32" not in expected:
                assert repr(tg.result_type(t[0], scalar)) == expected, (a, scalar)


def test_creation_item_tolist_numpy():
    z = tg.tensor([[1 + 2j, 3]])
    assert z.dtype == tg.complex64 and z.shape == (1, 2)
    assert z[0, 0].item() == 1 + 2j and isinstance(z[0, 1].item(), complex)
    assert z.tolist() == [[1 + 2j, 3 + 0j]]
    assert z.numpy().dtype == np.complex64
    assert tg.from_numpy(np.array([1j])).dtype == tg.complex128
    assert tg.empty(3, dtype=tg.cfloat).dtype == tg.complex64
    assert tg.tensor([1j], requires_grad=True).requires_grad
    assert tg.is_complex(z) and not tg.is_complex(tg.ones(1))
    assert tg.complex64.is_complex and not tg.complex64.is_floating_point
    tg.manual_seed(0)
    r = tg.randn(20000, dtype=tg.cdouble)
    assert r.dtype == tg.complex128
    # PyTorch's complex normal: each part of variance 1/2, E|z|^2 = 1
    assert abs(float((r.abs() ** 2).mean()) - 1) < 0.05
    assert abs(float(r.real.std()) - 0.5 ** 0.5) < 0.02


def test_cast_to_real_keeps_real_part(torch):
    # The warning is once per process in both libraries (TORCH_WARN_ONCE), so an earlier test may
    # have used it up: test_proxyp.py checks it in a fresh process.
    for T in (tg, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = T.tensor([1 + 2j, -3j]).float()
        assert x.tolist() == [1.0, 0.0]


# -- views -----------------------------------------------------------------------------------------

def test_view_as_real_and_complex_share_memory():
    z = tg.tensor([1 + 2j, 3 - 4j])
    r = tg.view_as_real(z)
    assert r.shape == (2, 2) and r.dtype == tg.float32
    r[1, 0] = 10.0
    assert z.tolist() == [1 + 2j, 10 - 4j]
    x = tg.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    c = tg.view_as_complex(x[::2])
    assert c.tolist() == [1 + 2j, 5 + 6j]
    x[2, 1] = -1.0
    assert c.tolist() == [1 + 2j, 5 - 1j]
    z.real[0] = 7.0                     # .real / .imag are writable views
    z.imag.mul_(2)
    assert z.tolist() == [7 + 4j, 10 - 8j]


@pytest.mark.parametrize("expr", [
    "T.view_as_complex(T.ones(3))",
    "T.view_as_complex(T.ones(3, 2).t())",
    "T.view_as_complex(T.ones(2, 2, dtype=T.long))",
    "T.view_as_complex(T.ones(2, 4)[:, ::2])",
    "T.view_as_real(T.ones(2))",
    "T.tensor([1+2j]) < T.tensor([1j])",
    "T.tensor([1+2j]) > 1",
    "T.relu(T.tensor([1+2j]))",
    "T.tensor([1+2j]).sign()",
    "T.complex(T.ones(2), T.ones(2, dtype=T.float64))",
    "T.complex(T.ones(2, dtype=T.long), T.ones(2, dtype=T.long))",
    "T.polar(T.ones(2, dtype=T.float64), T.ones(2))",
    "T.tensor([1+2j]) @ T.tensor([1.])",
    "T.tensor([1+2j, 2j]) + T.tensor([1j, 2j, 3j])",
    "T.fft.rfft(T.tensor([1+2j]))",
    "T.fft.fft(T.ones(4), norm='foo')",
    "T.fft.fft(T.ones(4), n=0)",
    "T.tensor([1+2j]).sum().backward()",
    "T.tensor([1+2j]).max()", "T.tensor([1+2j]).min()", "T.tensor([1+2j]).amax()",
    "T.tensor([1+2j]).max(0)", "T.tensor([1+2j]).argmax()", "T.tensor([1+2j]).sort()",
    "T.tensor([1+2j]).topk(1)", "T.tensor([1+2j]).floor()", "T.tensor([1+2j]).round()",
    "T.clamp(T.tensor([1+2j]), min=0)", "T.maximum(T.tensor([1+2j]), T.tensor([1j]))",
    "T.tensor([1+2j]).median()", "T.tensor([1+2j]).kthvalue(1)", "T.tensor([1+2j]).cummax(0)",
])
def test_errors_match_torch(torch, expr):
    with pytest.raises(Exception) as theirs:
        eval(expr, {"T": torch})
    with pytest.raises(type(theirs.value)) as ours:
        eval(expr, {"T": tg})
    assert str(ours.value).split("(")[0].strip() in str(theirs.value), \
        (str(ours.value), str(theirs.value))


def test_adjoints_conjugate(torch):
    values = [[1 + 2j, 3j], [-1 + 0.5j, 2]]
    for attr in ("mH", "H", "adjoint"):
        ours, theirs = (getattr(T.tensor(values), attr) for T in (tg, torch))
        ours, theirs = (r() if callable(r) else r for r in (ours, theirs))
        # (numpy() refuses the conjugate bit in both, as PyTorch does)
        np.testing.assert_array_equal(ours.resolve_conj().numpy(), theirs.resolve_conj().numpy())


def test_conj_bit_as_torch_reports(torch):
    for T in (tg, torch):
        z = T.tensor([1 + 2j])
        c = z.conj()
        assert c.is_conj() and not c.resolve_conj().is_conj()
        assert not z.conj_physical().is_conj() and not c.conj().is_conj()
        assert c.resolve_conj().tolist() == [1 - 2j]
        assert T.tensor([1.0]).conj().is_conj() is False


@pytest.mark.parametrize("expr,written", [
    ("z * w", "input"), ("z / w", "input"), ("z.exp()", "output"),
    ("z ** 2", "input"), ("z.sqrt()", "output"), ("z.log()", "input"), ("z.abs()", "input"),
])
def test_inplace_write_after_forward_raises(torch, expr, written):
    for T in (torch, tg):
        z = T.tensor([1 + 2j, 3 - 1j], requires_grad=True)
        w = T.tensor([2 - 1j, 1j], requires_grad=True)
        z2, w2 = z * 1, w * 1
        y = eval(expr, {"z": z2, "w": w2})
        with T.no_grad():
            if written == "input":
                z2.mul_(2)
                w2.mul_(2)
            else:
                y.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            (y.abs() if y.is_complex() else y).sum().backward()


def test_uncovered_compiled_op_refuses_instead_of_a_wrong_gradient():
    weight = tg.tensor([[1 + 2j, 3 - 1j]], requires_grad=True)
    with pytest.raises(NotImplementedError, match="complex"):
        tg.nn.functional.embedding(tg.tensor([0]), weight)


# -- torch.fft -------------------------------------------------------------------------------------

FFT_CASES = [
    ("fft", "c", (6,), {}), ("fft", "r", (6,), {"n": 8, "norm": "ortho"}),
    ("ifft", "c", (5,), {"n": 3, "norm": "forward"}), ("rfft", "r", (7,), {}),
    ("rfft", "r", (8,), {"n": 6, "norm": "forward"}), ("irfft", "c", (5,), {}),
    ("irfft", "c", (5,), {"n": 9, "norm": "ortho"}), ("irfft", "c", (4, 3), {"dim": 0}),
    ("fft2", "c", (3, 4), {}), ("ifft2", "c", (3, 4), {"s": (2, 5)}),
    ("rfft2", "r", (4, 6), {"norm": "ortho"}), ("irfft2", "c", (4, 3), {}),
    ("fftn", "c", (2, 3, 4), {"dim": (0, 2)}), ("ifftn", "c", (2, 3), {}),
    ("rfftn", "r", (2, 3, 4), {}), ("irfftn", "c", (2, 3, 4), {"s": (3, 3, 5)}),
    ("hfft", "c", (5,), {}), ("hfft", "c", (4,), {"n": 7, "norm": "forward"}),
    ("ihfft", "r", (6,), {}), ("ihfft", "r", (7,), {"n": 5, "norm": "ortho"}),
    ("hfft2", "c", (3, 4), {}), ("ihfft2", "r", (3, 4), {}),
    ("hfftn", "c", (2, 3, 3), {}), ("ihfftn", "r", (2, 4), {"norm": "forward"}),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kind,shape,kw", FFT_CASES)
def test_fft_values_and_gradients_match_torch(torch, name, kind, shape, kw, dtype):
    rng = np.random.default_rng(len(shape) * 10 + shape[-1])
    values = rng.standard_normal(shape + (2,))
    results = []
    for T in (tg, torch):
        real_dt = getattr(T, dtype)
        x = T.tensor(values, dtype=real_dt)
        x = (T.view_as_complex(x) if kind == "c" else x[..., 0].contiguous()).detach()
        x.requires_grad_(True)
        y = getattr(T.fft, name)(x, **kw)
        weights = T.tensor(np.linspace(-1, 2, y.numel()).reshape(tuple(y.shape)),
                           dtype=real_dt)
        loss = (y.abs() * weights).sum() if y.is_complex() else (y * y * weights).sum()
        loss.backward()
        results.append((y.detach().resolve_conj().numpy(), x.grad.resolve_conj().numpy(),
                        repr(y.dtype), type(y.grad_fn).__name__))
    (y0, g0, d0, n0), (y1, g1, d1, n1) = results
    assert (d0, n0) == (d1, n1)
    tol = dict(rtol=2e-4, atol=2e-5) if dtype == "float32" else dict(rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(y0, y1, **tol)
    np.testing.assert_allclose(g0, g1, **tol)


def test_fft_rfft_abs_irfft_roundtrip():
    x = tg.arange(8.0)
    spectrum = tg.fft.rfft(x)
    assert spectrum.shape == (5,) and spectrum.dtype == tg.complex64
    np.testing.assert_allclose(tg.fft.irfft(spectrum).numpy(), x.numpy(), atol=1e-5)
    np.testing.assert_allclose(spectrum.abs()[0].item(), 28.0)


# -- the compiled complex records (src/tapegrad/ops_complex.pxi, and matmul's conjugating VJP) ----
# Each op: forward (value, dtype, grad_fn name), gradients and second derivatives (create_graph)
# as PyTorch's, a compiled record (not an autograd.Function node), and tapegrad's own complex
# gradcheck in complex128.

HOLOMORPHIC_NAMES = ["exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh",
                     "sigmoid", "log1p", "expm1", "log10", "log2", "sinh", "cosh", "asin",
                     "acos", "atan", "exp2", "tan", "asinh", "acosh", "atanh"]

COMPILED_CASES = {
    "mul": lambda l, z, w, x: z * w,
    "div": lambda l, z, w, x: z / w,
    "add_sub": lambda l, z, w, x: z + w - z * 2,
    "add_float_alpha": lambda l, z, w, x: l.add(z, w, alpha=2.5),
    "sub_complex_alpha": lambda l, z, w, x: l.sub(z, w, alpha=1 - 2j),
    "add_complex_number_alpha": lambda l, z, w, x: l.add(x, 2 + 1j, alpha=0.5) * z,
    "real_times_complex": lambda l, z, w, x: x * z,
    "complex_by_real": lambda l, z, w, x: z / x,
    "real_by_complex": lambda l, z, w, x: x / z,
    "numbers": lambda l, z, w, x: (2 - 1j) / z + z * 1j - 3 + 0.5 * w,
    "broadcast": lambda l, z, w, x: z.unsqueeze(1) * w.unsqueeze(0) / x.unsqueeze(1),
    "neg": lambda l, z, w, x: -z * w,
    "abs": lambda l, z, w, x: (z * w).abs(),
    "conj": lambda l, z, w, x: (z * w).conj() * z,
    "conj_physical": lambda l, z, w, x: l.conj_physical(z * w) / w,
    "mm": lambda l, z, w, x: z.reshape(3, 1) @ w.reshape(1, 3),
    "dot": lambda l, z, w, x: z @ w,
    "mv": lambda l, z, w, x: l.stack([z, w]) @ z,
    "vm": lambda l, z, w, x: z @ l.stack([w, z, w], 1),
    "bmm": lambda l, z, w, x: l.stack([z, w]).reshape(2, 3, 1) @ w.reshape(1, 1, 3),
    "batched_broadcast": lambda l, z, w, x: (l.stack([z, w, z * w]).reshape(1, 3, 3)
                                             @ l.stack([w, z]).reshape(2, 3, 1)),
    **{name: (lambda l, z, w, x, name=name: getattr(l, name)(z * w)) for name in HOLOMORPHIC_NAMES},
}


def _compiled_case(lib, case, dtype):
    cdt = {"float32": lib.complex64, "float64": lib.complex128}[dtype]
    z = lib.tensor(Z, dtype=cdt, requires_grad=True)
    w = lib.tensor(W, dtype=cdt, requires_grad=True)
    x = lib.tensor(X, dtype=getattr(lib, dtype), requires_grad=True)
    y = COMPILED_CASES[case](lib, z, w, x)
    loss = (y.abs() ** 2).sum() if y.is_complex() else (y * y).sum()
    grads = lib.autograd.grad(loss, (z, w, x), create_graph=True, allow_unused=True)
    used = [g for g in grads if g is not None]
    second = lib.autograd.grad(sum((g.abs() ** 2).sum() if g.is_complex() else (g * g).sum()
                                   for g in used), (z, w, x), allow_unused=True)
    return y, [None if g is None else g.detach().numpy() for g in grads + second]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", sorted(COMPILED_CASES))
def test_compiled_complex_ops_match_torch(torch, case, dtype):
    ours, our_grads = _compiled_case(tg, case, dtype)
    theirs, their_grads = _compiled_case(torch, case, dtype)
    assert repr(ours.dtype) == repr(theirs.dtype)
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
    assert isinstance(ours.grad_fn, tg._core.GradFn)    # a compiled record, not a Function node
    tol = dict(rtol=2e-4, atol=2e-5) if dtype == "float32" else dict(rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **tol)
    for a, b in zip(our_grads, their_grads):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.dtype == b.dtype
            np.testing.assert_allclose(a, b, **tol)


@pytest.mark.parametrize("case", sorted(COMPILED_CASES))
def test_compiled_complex_ops_gradcheck(case):
    fn = COMPILED_CASES[case]
    z = tg.tensor(Z, dtype=tg.complex128, requires_grad=True)
    w = tg.tensor(W, dtype=tg.complex128, requires_grad=True)
    x = tg.tensor(X, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(lambda z, w, x: fn(tg, z, w, x), (z, w, x))


def test_compiled_complex_ops_refuse_a_write_to_what_they_saved(torch):
    for lib in (tg, torch):
        z = lib.tensor(Z, requires_grad=True) * 1
        y = z.exp()
        y.mul_(2)                                       # exp's VJP reads its output
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.abs().sum().backward()


def test_compiled_complex_ops_without_grad_record_nothing():
    z = tg.tensor(Z, requires_grad=True)
    with tg.no_grad():
        y = (z * z).exp().abs()
    assert y.grad_fn is None and not y.requires_grad
    assert tg.tensor(Z).exp().grad_fn is None


@pytest.mark.parametrize("expr,attrs", [
    ("z * w", ["_saved_self", "_saved_other"]),
    ("z / w", ["_saved_self", "_saved_other"]),
    ("z * 2", ["_saved_self", "_saved_other"]),
    ("z.abs()", ["_saved_self"]),
    ("z.log()", ["_saved_self"]),
    ("z.asin()", ["_saved_self"]),
    ("z @ w", ["_saved_self", "_saved_tensor"]),
])
def test_compiled_complex_saved_attributes_as_torch(torch, expr, attrs):
    def read(lib):
        z = lib.tensor(Z, requires_grad=True)
        w = lib.tensor(W, requires_grad=True)
        fn = eval(expr, {"z": z, "w": w}).grad_fn
        return [None if getattr(fn, a) is None else getattr(fn, a).detach().numpy() for a in attrs]

    for a, b in zip(read(tg), read(torch)):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a, b)


def test_compiled_complex_saved_results_as_torch(torch):
    for name in ("exp", "sqrt", "tanh", "sigmoid", "reciprocal"):
        ours = getattr(tg.tensor(Z, requires_grad=True), name)().grad_fn._saved_result
        theirs = getattr(torch.tensor(Z, requires_grad=True), name)().grad_fn._saved_result
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)


# 0-d complex64 values: numpy arithmetic on 0-d arrays returns numpy scalars, and np.complex64
# is not a Python complex, so a VJP that conjugated only arrays and Python numbers left the
# divisor's gradient of a 0-d complex64 division unconjugated (fuzz 58000093: silently wrong).
# The sweep covers the binary operators, the holomorphic functions and matmul at 0-d and
# 1-element shapes, first and second derivatives.
_ZERO_D_UNARY = ("exp log sqrt rsqrt reciprocal sigmoid sin tanh asin atanh neg abs conj"
                 .split())
_ZERO_D_CASES = ([(o, lambda l, a, b, o=o: getattr(a, o)(b))
                  for o in ("__add__", "__sub__", "__mul__", "__truediv__", "__rtruediv__")]
                 + [(o, lambda l, a, b, o=o: getattr(l, o)(a) * b) for o in _ZERO_D_UNARY]
                 + [("number / a", lambda l, a, b: (0.3 + 2j) / a * b),
                    ("matmul", lambda l, a, b: (a.reshape(-1, 1) @ b.reshape(1, -1)).sum())])


@pytest.mark.parametrize("name,fn", _ZERO_D_CASES, ids=[c[0] for c in _ZERO_D_CASES])
@pytest.mark.parametrize("shape", [(), (1,)], ids=["0d", "1"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_scalar_shaped_complex_gradients_match_torch(torch, name, fn, shape, dtype):
    rng = np.random.default_rng(len(name))
    a0, b0 = ((rng.uniform(0.2, 0.9, shape) + 1j * rng.uniform(0.2, 0.9, shape)).astype(dtype)
              for _ in range(2))
    results = []
    for lib in (torch, tg):
        a = lib.tensor(a0, requires_grad=True)
        b = lib.tensor(b0, requires_grad=True)
        loss = (fn(lib, a, b) * (0.5 - 0.7j)).real.sum()
        first = lib.autograd.grad(loss, (a, b), create_graph=True, allow_unused=True)
        norm = sum((g.abs() ** 2).sum() for g in first if g is not None)
        second = (lib.autograd.grad(norm, (a, b), allow_unused=True) if norm.requires_grad
                  else (None, None))
        results.append([None if g is None else g.detach().resolve_conj().numpy()
                        for g in first + tuple(second)])
    for expected, got in zip(*results):
        assert (expected is None) == (got is None)
        if expected is not None:
            np.testing.assert_allclose(got, expected, rtol=2e-4, atol=2e-4)


def test_conj_under_no_grad_is_a_no_grad_view_as_torch(torch):
    """fuzz 59708508: PyTorch's conj() taken in no_grad is a view of its base (requires grad,
    no grad_fn, in-place writes with grad mode refused, gradient reaching it dropped)."""
    def run(T):
        out = []
        z = T.tensor([1 + 2j, 3 - 1j], requires_grad=True)
        with T.no_grad():
            c = z.conj()
        out.append((c.requires_grad, c.grad_fn, c.is_leaf, c._is_view(), c.is_conj(),
                    c._base is z))
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
            c.mul_(2)
        (c * z).abs().sum().backward()
        out.append(z.grad.tolist())
        with T.no_grad():
            c.mul_(2)                       # allowed in no_grad: writes through to z
        out.append(z.tolist())
        w = T.tensor([1 + 1j], requires_grad=True) * 2
        with T.no_grad():
            d = w.conj()
            e = T.tensor([1j]).conj()
        out.append((d.requires_grad, d.grad_fn, d._base is w, e.requires_grad, e._is_view()))
        f = z.conj()
        out.append((f.requires_grad, type(f.grad_fn).__name__))
        return out
    assert run(tg) == run(torch)
