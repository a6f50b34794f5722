"""What the proxy of mixed-precision scripts (PyTorch's AMP recipe, CPU autocast with bfloat16,
bfloat16 inference and training, master weights) found: normalisations of a bfloat16 input with
float32 weights, recurrent layers under autocast, custom Functions' bfloat16 gradients,
log_softmax and cross_entropy of bfloat16 logits, nan_to_num's bfloat16 limits, Adam's bfloat16
step, and the dtype refusals of convolutions and of in-place writes of another dtype."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn as nn
import tapegrad.nn.functional as F


def _torch():
    return pytest.importorskip("torch")


def _same(ours, theirs, rtol=0.0, atol=0.0):
    a = ours.float().detach().numpy()
    b = theirs.float().detach().numpy()
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _rows(lib):
    return lib.linspace(-1, 1, 12).reshape(3, 4)


# -- normalisations: a bfloat16 input with float32 weight and bias ------------------------------

@pytest.mark.parametrize("norm", ["layer_norm", "group_norm", "batch_norm", "batch_norm_train",
                                  "rms_norm"])
def test_norm_of_bfloat16_input_with_float32_weights_is_bfloat16(norm):
    torch = _torch()

    def run(lib):
        Fn = lib.nn.functional
        x = _rows(lib).to(lib.bfloat16)
        w = lib.linspace(0.5, 1.5, 4).requires_grad_()
        b = lib.linspace(-0.1, 0.1, 4).requires_grad_()
        y = {"layer_norm": lambda: Fn.layer_norm(x, (4,), w, b),
             "group_norm": lambda: Fn.group_norm(x, 2, w, b),
             "batch_norm": lambda: Fn.batch_norm(x, lib.zeros(4), lib.ones(4), w, b),
             "batch_norm_train": lambda: Fn.batch_norm(x, lib.zeros(4), lib.ones(4), w, b,
                                                       training=True),
             "rms_norm": lambda: Fn.rms_norm(x, (4,), w)}[norm]()
        (y.float() * lib.arange(4.0)).sum().backward()
        return y, w.grad

    if norm == "rms_norm":
        with pytest.warns(UserWarning, match="Mismatch dtype between input and weight"):
            y, wg = run(tg)
        # (PyTorch's warning is TORCH_WARN_ONCE: an earlier test of the process may have had it)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ty, twg = run(torch)
    else:
        y, wg = run(tg)
        ty, twg = run(torch)
    assert str(y.dtype) == str(ty.dtype) == "torch.bfloat16"
    _same(y, ty)
    assert wg.dtype is tg.float32
    _same(wg, twg, rtol=1e-2, atol=1e-5)    # (PyTorch's backward rounds its own way)


def test_norm_modules_keep_a_bfloat16_activation_bfloat16():
    x = _rows(tg).bfloat16()
    assert nn.LayerNorm(4)(x).dtype is tg.bfloat16
    assert nn.GroupNorm(1, 3)(x[:, :3]).dtype is tg.bfloat16
    assert nn.BatchNorm1d(4)(x).dtype is tg.bfloat16


def test_norm_refuses_other_mixes():
    x = _rows(tg)
    w, b = tg.ones(4), tg.zeros(4)
    for call in (lambda: F.layer_norm(x, (4,), w.bfloat16(), b.bfloat16()),
                 lambda: F.layer_norm(x.bfloat16(), (4,), w, b.bfloat16()),
                 lambda: F.layer_norm(x.bfloat16(), (4,), w.double(), b.double())):
        with pytest.raises(RuntimeError, match="mixed dtype \\(CPU\\): expect parameter"):
            call()


def test_bfloat16_batch_norm_running_statistics_stay_bfloat16_values():
    bn = nn.BatchNorm1d(4).bfloat16()
    bn(tg.linspace(-1.37, 2.11, 12).reshape(3, 4).bfloat16())
    for stat in (bn.running_mean, bn.running_var):
        bits = stat.float().numpy().view(np.uint32)
        assert not (bits & 0xFFFF).any()


# -- recurrent layers under autocast -------------------------------------------------------------

@pytest.mark.parametrize("kind, dtype", [("LSTM", "bfloat16"), ("RNN", "bfloat16"),
                                         ("GRU", "float32")])
def test_recurrent_layers_under_autocast(kind, dtype):
    torch = _torch()

    def run(lib):
        lib.manual_seed(0)
        layer = getattr(lib.nn, kind)(4, 3, batch_first=True)
        with lib.no_grad():
            for i, p in enumerate(layer.parameters()):
                p.copy_(lib.sin(lib.arange(p.numel(), dtype=lib.float32) + i)
                        .reshape(p.shape) * 0.3)
        x = lib.linspace(-1, 1, 2 * 5 * 4).reshape(2, 5, 4)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            out, _ = layer(x)
        out.float().sum().backward()
        return out, layer.weight_ih_l0.grad

    out, grad = run(tg)
    tout, tgrad = run(torch)
    assert str(out.dtype) == str(tout.dtype) == f"torch.{dtype}"
    assert grad.dtype is tg.float32
    _same(out, tout, atol=2e-2)
    _same(grad, tgrad, rtol=5e-2, atol=5e-2)


# -- custom autograd Functions with bfloat16 outputs and inputs ------------------------------------

def test_custom_function_sees_bfloat16_gradients_and_its_returns_are_rounded():
    torch = _torch()
    seen = []

    def run(lib):
        class Exp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.exp()

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                seen.append(str(g.dtype))
                return g * x.float().exp()      # float32: cast to the input's bfloat16

        a = lib.linspace(-1, 1, 6).reshape(2, 3).requires_grad_()
        b = lib.linspace(0.5, 1.5, 12).reshape(3, 4).requires_grad_()
        h = a.bfloat16() @ b.bfloat16()
        Exp.apply(h).float().sum().backward()
        return a.grad

    ours, theirs = run(tg), run(torch)
    assert seen == ["torch.bfloat16", "torch.bfloat16"]
    _same(ours, theirs)


# -- log_softmax and cross_entropy of bfloat16 logits ----------------------------------------------

def _logits(lib):
    w = lib.linspace(-0.5, 0.5, 15).reshape(3, 5).bfloat16()
    b = lib.tensor([0.1, -0.2, 0.3]).bfloat16()
    x = lib.linspace(-1, 1, 20).reshape(4, 5).bfloat16()
    return lib.nn.functional.linear(x, w, b)


def test_bfloat16_log_softmax_and_cross_entropy_match_pytorch_bits():
    torch = _torch()
    y = [0, 1, 2, 1]
    for lib, out in ((tg, []), (torch, [])):
        z = _logits(lib).requires_grad_()
        ls = lib.log_softmax(z, -1)
        loss = lib.nn.functional.cross_entropy(z, lib.tensor(y))
        loss.backward()
        out += [ls, z.log_softmax(dim=1), loss, z.grad, ls.grad_fn.name()]
        if lib is tg:
            ours = out
        else:
            theirs = out
    for a, b in zip(ours[:3], theirs[:3]):
        assert str(a.dtype) == str(b.dtype) == "torch.bfloat16"
        _same(a, b)
    assert ours[3].dtype is tg.bfloat16
    _same(ours[3], theirs[3], atol=4e-3)
    assert ours[4] == theirs[4] == "LogSoftmaxBackward0"


# -- nan_to_num ---------------------------------------------------------------------------------------

def test_nan_to_num_of_bfloat16_uses_bfloat16_limits():
    x = tg.tensor([float("nan"), float("inf"), -float("inf"), 1.5]).bfloat16()
    big = float(tg.finfo(tg.bfloat16).max)
    assert tg.nan_to_num(x).tolist() == [0.0, big, -big, 1.5]
    assert x.nan_to_num(1.0, 2.0).tolist() == [1.0, 2.0, -big, 1.5]
    x.nan_to_num_()
    assert x.tolist() == [0.0, big, -big, 1.5]


# -- Adam's step on bfloat16 parameters ----------------------------------------------------------------

@pytest.mark.parametrize("make", [lambda lib, p: lib.optim.Adam(p, lr=0.01),
                                  lambda lib, p: lib.optim.AdamW(p, lr=0.01, amsgrad=True)])
def test_adam_step_on_bfloat16_parameters_matches_pytorch_bits(make):
    torch = _torch()

    def run(lib):
        w = lib.nn.Parameter(lib.linspace(-1.3, 1.7, 40).bfloat16())
        v = lib.nn.Parameter(lib.linspace(0.2, 0.9, 5))         # float32, in the same group
        opt = make(lib, [w, v])
        for _ in range(5):
            opt.zero_grad()
            ((w.float() - 0.3) ** 3 * lib.linspace(0.1, 2, 40)).sum().add(v.sum()).backward()
            opt.step()
        return w, opt.state[w]["exp_avg_sq"]

    (w, sq), (tw, tsq) = run(tg), run(torch)
    assert w.dtype is tg.bfloat16 and sq.dtype is tg.bfloat16
    _same(w, tw)
    _same(sq, tsq)


# -- refusals -------------------------------------------------------------------------------------

def test_convolution_refusals_name_bias_then_weight():
    torch = _torch()
    cases = [("bfloat16", "float32", "float32"), ("bfloat16", "float32", "bfloat16"),
             ("float32", "bfloat16", "bfloat16"), ("float32", "bfloat16", None),
             ("float32", "float32", "bfloat16")]
    for xi, w, b in cases:
        messages = []
        for lib in (tg, torch):
            try:
                lib.nn.functional.conv1d(
                    lib.ones(1, 2, 3, dtype=getattr(lib, xi)),
                    lib.ones(2, 2, 1, dtype=getattr(lib, w)),
                    None if b is None else lib.ones(2, dtype=getattr(lib, b)))
                messages.append(None)
            except RuntimeError as e:
                messages.append(str(e))
        assert messages[0] == messages[1], (xi, w, b)


def test_writes_of_another_dtype_into_bfloat16_are_refused():
    torch = _torch()

    def attempts(lib):
        a = lib.ones(3, dtype=lib.bfloat16)
        f = lib.ones(3)
        i = lib.tensor([0])
        return [lambda: lib.isclose(a, f), lambda: lib.allclose(a, f),
                lambda: a.index_put_((i,), lib.tensor([2.0])),
                lambda: a.masked_scatter_(a > 0, f),
                lambda: a.scatter_(0, i, lib.ones(1)),
                lambda: a.index_copy_(0, i, lib.ones(1)),
                lambda: a.index_add_(0, i, lib.ones(1)),
                lambda: a.__setitem__(i, lib.ones(1)),
                lambda: a.__setitem__(a > 0, f),
                # (allowed: a copy into a view, a masked_fill of one element, copy_)
                lambda: a.__setitem__(slice(0, 1), lib.tensor([0.3])),
                lambda: a.__setitem__(a > 0, lib.tensor([0.3])),
                lambda: a.copy_(lib.full((3,), 0.7))]

    def outcomes(lib):
        got = []
        for attempt in attempts(lib):
            try:
                attempt()
                got.append("ok")
            except RuntimeError as e:
                got.append(str(e))
        return got

    assert outcomes(tg) == outcomes(torch)
    a = tg.zeros(3, dtype=tg.bfloat16)
    a[a == 0] = tg.tensor([1 / 3])
    assert a.tolist() == [0.333984375] * 3


# -- scaled_dot_product_attention of bfloat16 operands ------------------------------------------------

def _qkv(lib):
    n = 2 * 2 * 5 * 8
    q = lib.sin(lib.arange(n, dtype=lib.float32) * 0.37).reshape(2, 2, 5, 8).bfloat16()
    k = lib.cos(lib.arange(n, dtype=lib.float32) * 0.71).reshape(2, 2, 5, 8).bfloat16() * 2
    v = lib.sin(lib.arange(n, dtype=lib.float32) * 1.3).reshape(2, 2, 5, 8).bfloat16()
    return q, k, v


def test_bfloat16_attention_rounds_as_pytorchs_flash_kernel_and_keeps_the_query_dtype():
    torch = _torch()
    results = []
    for lib in (tg, torch):
        q, k, v = _qkv(lib)
        allowed = lib.ones(5, 5, dtype=lib.bool).tril()
        float_mask = lib.zeros(5, 5) - 1.5 * (~allowed)        # float32 on bfloat16 operands
        sdpa = lib.nn.functional.scaled_dot_product_attention
        results.append([sdpa(q, k, v), sdpa(q, k, v, is_causal=True),
                        sdpa(q, k, v, attn_mask=allowed), sdpa(q, k, v, attn_mask=float_mask),
                        sdpa(q[:, :, -1:], k, v, scale=0.3)])
    for ours, theirs in zip(*results):
        assert str(ours.dtype) == str(theirs.dtype) == "torch.bfloat16"
        _same(ours, theirs)


def test_attention_refuses_operands_of_two_dtypes():
    q = tg.ones(1, 1, 2, 4)
    sdpa = F.scaled_dot_product_attention
    with pytest.raises(RuntimeError, match="query.dtype: c10::BFloat16 key.dtype: float"):
        sdpa(q.bfloat16(), q, q)
    with pytest.raises(RuntimeError, match="attn_mask.dtype: c10::BFloat16 and  query.dtype"):
        sdpa(q, q, q, attn_mask=tg.zeros(2, 2).bfloat16())
