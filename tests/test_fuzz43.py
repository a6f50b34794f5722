"""Regressions of the fuzz43 run: differential fuzzing against PyTorch (tools/fuzz.py, seeds
named per test).  Each test runs the same calls in both libraries and compares values, dtypes,
gradients and exception types."""
import warnings

import numpy as np
import pytest

import tapegrad as tg


def _run(lib, fn):
    """fn(lib) -> a flat record of values and dtypes, or the exception's type and message."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(lib)
    except Exception as e:     # noqa: BLE001 - the exception is what is compared
        return (type(e).__name__, str(e).split("\n")[0])


def _assert_same(got, want, rtol=0.0, atol=0.0):
    """Structures of _run results equal: strings (dtypes, exception types and messages)
    exactly, numbers within the tolerance (NaN equal to NaN)."""
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            _assert_same(g, w, rtol, atol)
    elif isinstance(want, float):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        assert got == want


def _record(*tensors):
    """dtype names and float64 values (bfloat16 read through float32) of tensors or None."""
    out = []
    for t in tensors:
        if t is None:
            out.append(None)
        else:
            out.append((str(t.dtype), t.detach().to(t.new_zeros(()).double().dtype).tolist()))
    return out


# -- F.rms_norm: PyTorch's composition, any weight dtype ---------------------------------------
# PyTorch has no CPU kernel of its own for rms_norm: it casts the input to its opmath dtype,
# multiplies the weight in by promotion and casts the result to the input's dtype.  tapegrad
# cast the weight to the input's dtype first (SILENT: a float32 weight's gradient came back in
# float16 precision for a float16 input), refused a bfloat16 weight on a float32 input
# (fuzz 66600171), and rounded a bfloat16 input's gradient once per use inside the composition.

_RMS_PAIRS = [("float32", "bfloat16"), ("bfloat16", "float32"), ("float32", "float64"),
              ("float64", "float32"), ("float16", "float32"), ("float32", "float16"),
              ("bfloat16", "float16"), ("float16", "bfloat16"), ("bfloat16", "bfloat16"),
              ("bfloat16", "float64")]


@pytest.mark.parametrize("xd,wd", _RMS_PAIRS)
def test_rms_norm_mixed_dtypes_follow_pytorch(torch, xd, wd):
    def fn(lib):
        x = lib.tensor([[1.5, -2.0, 0.25], [0.75, 3.0, -1.0]], dtype=getattr(lib, xd),
                       requires_grad=True)
        w = lib.tensor([0.5, 1.25, -1.0], dtype=getattr(lib, wd), requires_grad=True)
        y = lib.nn.functional.rms_norm(x, (3,), w, eps=0.01)
        (y * lib.tensor([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]], dtype=y.dtype)).sum().backward()
        return _record(y, x.grad, w.grad)
    a, b = _run(torch, fn), _run(tg, fn)
    assert [r[0] for r in a] == [r[0] for r in b]
    for (_, va), (dt, vb) in zip(a, b):
        # float32 / float64: the backward's order of products (an ulp); half types exact
        tol = {"torch.float32": 1e-6, "torch.float64": 1e-14}.get(dt, 0)
        np.testing.assert_allclose(vb, va, rtol=tol, atol=0)


def test_rms_norm_float16_input_keeps_a_float32_weights_gradient_exact(torch):
    # (SILENT: the weight was rounded to float16 before the product, its gradient too)
    x = [[1.5, -2.0, 0.25]]
    w = [0.1, 1.2345678, -0.3333333]
    got = []
    for lib in (torch, tg):
        xt = lib.tensor(x, dtype=lib.float16, requires_grad=True)
        wt = lib.tensor(w, requires_grad=True)
        lib.nn.functional.rms_norm(xt, (3,), wt).float().sum().backward()
        got.append(wt.grad.tolist())
    assert got[0] == got[1]


def test_rms_norm_warns_once_for_a_float32_bfloat16_pair():
    # PyTorch's TORCH_WARN_ONCE: the first float32 / bfloat16 pair of the process warns, later
    # ones (either order) do not; other pairs never (the autouse fixture clears the record)
    def warned(xd, wd):
        x = tg.ones(2, 3, dtype=getattr(tg, xd))
        w = tg.ones(3, dtype=getattr(tg, wd))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tg.nn.functional.rms_norm(x, (3,), w)
        return any("Cannot dispatch to fused" in str(c.message) for c in caught)
    assert [warned("float16", "float32"), warned("bfloat16", "float64"),
            warned("float32", "bfloat16"), warned("bfloat16", "float32"),
            warned("float32", "bfloat16")] == [False, False, True, False, False]


# -- CPU autocast's promote ops (cat, stack, index_copy) ----------------------------------------
# PyTorch's prioritize raises on a float16 tensor under a bfloat16 autocast (or the reverse)
# before any float32 one; tapegrad promoted to the lower dtype silently (fuzz 66600126).

def test_autocast_promote_refuses_the_other_half_dtype(torch):
    def cases(lib):
        h = lib.ones(2, dtype=lib.float16)
        f = lib.ones(2)
        d = lib.ones(2, dtype=lib.float64)
        b = lib.ones(2, dtype=lib.bfloat16)
        return [lambda: lib.stack([h, h]), lambda: lib.stack([h, f]), lambda: lib.stack([f, h]),
                lambda: lib.cat([f, b]), lambda: lib.stack([b, b]), lambda: lib.stack([f, d]),
                lambda: lib.stack([d, h]), lambda: lib.hstack([h, h]),
                lambda: lib.zeros(3, dtype=lib.float16).index_copy(
                    0, lib.tensor([0]), lib.ones(1, dtype=lib.float16)),
                lambda: lib.zeros(3).index_copy(0, lib.tensor([0]),
                                                lib.ones(1, dtype=lib.float16))]

    def fn(lib):
        out = []
        for dt in (lib.bfloat16, lib.float16):
            with lib.autocast("cpu", dtype=dt):
                for case in cases(lib):
                    out.append(_run(lib, lambda _: str(case().dtype)))
        return out
    _assert_same(_run(tg, fn), _run(torch, fn))


# -- losses whose result has the input's dtype, with a bfloat16 operand ---------------------------
# binary_cross_entropy (its weight), huber_loss and soft_margin_loss give the input's dtype
# whatever the target's; with a bfloat16 input tapegrad promoted (SILENT: a float32 loss), and
# bce's target check did not see a bfloat16 target on a float32 input (fuzz 66600235).

_MIXES = [(a, b) for a in ("float32", "float64", "float16") for b in ("bfloat16",)]


@pytest.mark.parametrize("xd,yd", _MIXES + [(b, a) for a, b in _MIXES])
def test_input_dtype_losses_with_bfloat16_operands(torch, xd, yd):
    def fn(lib):
        F = lib.nn.functional
        x = lib.tensor([0.25, 0.5, 0.875], dtype=getattr(lib, xd))
        y = lib.tensor([0.0, 1.0, 0.3], dtype=getattr(lib, yd))
        out = []
        for call in (lambda: F.binary_cross_entropy(x, y),
                     lambda: F.binary_cross_entropy(x, x, weight=y),
                     lambda: F.huber_loss(x, y, reduction="none"),
                     lambda: F.soft_margin_loss(x, y, reduction="none")):
            out.append(_run(lib, lambda _: _record(call())))
        return out
    # (values: PyTorch's bfloat16 kernels round some intermediate steps to bfloat16, which
    # tapegrad computes in float32: a few bfloat16 ulps; the dtypes and errors exactly)
    _assert_same(_run(tg, fn), _run(torch, fn), rtol=2 ** -6)


# -- native_layer_norm / native_group_norm / native_batch_norm with bfloat16 ------------------------
# The bfloat16 dtype rule of the normalisations did not reach the native_ entry points: a
# bfloat16 input with float32 parameters gave float32 outputs (SILENT), a float32 input with
# bfloat16 parameters ran where PyTorch refuses (fuzz 66600264).  And ATen's batch_norm (torch.
# batch_norm, native_batch_norm) raised nn.functional's ValueError for one value per channel.

@pytest.mark.parametrize("xd,wd", [("bfloat16", "bfloat16"), ("bfloat16", "float32"),
                                   ("float32", "bfloat16"), ("float64", "bfloat16"),
                                   ("float16", "bfloat16"), ("bfloat16", None)])
def test_native_norms_with_bfloat16(torch, xd, wd):
    def fn(lib):
        x = lib.tensor([[0.25, 0.5, 2.0], [1.0, -1.5, 0.125]], dtype=getattr(lib, xd))
        w = None if wd is None else lib.tensor([1.0, 2.0, 3.0], dtype=getattr(lib, wd))
        out = []
        for call in (lambda: lib.native_layer_norm(x, (3,), w, w, 1e-5),
                     lambda: lib.native_group_norm(x.reshape(2, 3, 1), w, w, 2, 3, 1, 1, 1e-5),
                     lambda: lib.native_batch_norm(x.reshape(2, 3, 1), w, w, None, None, True,
                                                   0.1, 1e-5)):
            out.append(_run(lib, lambda _: [str(t.dtype) for t in call()]))
            out.append(_run(lib, lambda _: _record(call()[0])))
        return out
    # (values: PyTorch's bfloat16 batch_norm rounds its statistics: a near-zero output differs
    # in absolute terms)
    _assert_same(_run(tg, fn), _run(torch, fn), rtol=2 ** -6, atol=0.02)


def test_aten_batch_norm_takes_one_value_per_channel(torch):
    def fn(lib):
        x = lib.tensor([[[0.25], [0.5], [2.0]]], requires_grad=True)
        w = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = lib.tensor([0.5, 0.0, -1.0])
        rm, rv = lib.zeros(3), lib.ones(3)
        out = []
        for call in (lambda: lib.batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5, False),
                     lambda: lib.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)[0],
                     lambda: lib.nn.functional.batch_norm(x, rm, rv, w, b, True),
                     lambda: lib.nn.functional.batch_norm(x.expand(2, 3, 1), None, None, w, b,
                                                          True, 0.1, 0.0)):
            def one(_):
                y = call()
                y.sum().backward()
                return _record(y, x.grad, w.grad, rm, rv)
            out.append(_run(lib, one))
        return out
    _assert_same(_run(tg, fn), _run(torch, fn))


# -- bfloat16 xlogy / xlog1py / entr (and kl_div through xlogy) ------------------------------------
# PyTorch's kernels round the logarithm to bfloat16 before the product; tapegrad rounded the
# float32 product once (SILENT: one value in four a bfloat16 ulp off, kl_div's loss three ulps
# off, fuzz 66600425).

def test_bfloat16_log_products_round_the_logarithm(torch):
    nan, inf = float("nan"), float("inf")
    rng = np.random.default_rng(43)
    x = np.concatenate([rng.uniform(-3, 3, 400), [0.0, -0.0, 1.3, nan, inf, 0.0, 3.1]])
    y = np.concatenate([rng.uniform(0, 5, 400), [0.0, nan, -1.0, 2.0, 0.0, inf, -1.0]])

    def fn(lib):
        F = lib.nn.functional
        X = lib.tensor(x.astype(np.float32)).to(lib.bfloat16)
        Y = lib.tensor(y.astype(np.float32)).to(lib.bfloat16)
        P = F.softmax(X[:400].reshape(100, 4), -1)
        calls = [lambda: lib.xlogy(X, Y), lambda: lib.xlogy(X, 0.1), lambda: lib.xlogy(0.3, Y),
                 lambda: lib.special.xlog1py(X, Y), lambda: lib.special.entr(Y),
                 lambda: X.xlogy(Y),
                 lambda: F.kl_div(F.log_softmax(Y[:400].reshape(100, 4), -1), P,
                                  reduction="none"),
                 lambda: F.kl_div(F.log_softmax(Y[:400].reshape(100, 4), -1), P,
                                  reduction="batchmean")]
        return [_record(call()) for call in calls]
    _assert_same(_run(tg, fn), _run(torch, fn))


def test_aten_group_norm_takes_one_value_per_group(torch):
    # torch.group_norm / native_group_norm have no batch-size check (nn.functional's Python
    # ValueError; fuzz 67000474, a generator form of this session)
    def fn(lib):
        x = lib.tensor([[[0.25], [0.5], [2.0]]], requires_grad=True)
        w = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = lib.tensor([0.5, 0.0, -1.0])
        out = []
        for call in (lambda: lib.group_norm(x, 3, w, b),
                     lambda: lib.native_group_norm(x, w, b, 1, 3, 1, 3, 1e-5)[0],
                     lambda: lib.nn.functional.group_norm(x, 3, w, b),
                     lambda: lib.nn.functional.group_norm(x, 1, w, b)):
            def one(_):
                y = call()
                (y * lib.tensor([[[1.0], [-2.0], [0.5]]])).sum().backward()
                return _record(y, x.grad, w.grad)
            out.append(_run(lib, one))
        return out
    _assert_same(_run(tg, fn), _run(torch, fn), rtol=1e-6)
