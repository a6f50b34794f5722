"""What proxy r's held-out scripts (stephenlb/pytorch-tutorials, smashHit3/pytorch-deep-learning,
yangyutu/PyTorch-Tutorial, zaina826/Pytorch-Tutorial, and names their siblings in earlier proxy
units import) found missing in tapegrad, each checked against torch."""
from __future__ import annotations

import warnings

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _outcome(fn):
    """(result, exception type, message, warning messages) of fn()."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, exc = fn(), None
        except Exception as e:  # noqa: BLE001 - compared by the caller
            result, exc = None, e
    return (result, type(exc) if exc else None, str(exc) if exc else None,
            [str(w.message) for w in caught])


# -- torch._assert: the assert torchvision-style code calls for its checks ----------------------

@pytest.mark.parametrize("condition", [True, False, 1, 0, "x", "",
                                       lambda lib: lib.tensor(True), lambda lib: lib.tensor(0),
                                       lambda lib: lib.tensor([1, 2])])
def test_assert_passes_raises_as_torch(condition):
    def run(lib):
        c = condition(lib) if callable(condition) else condition
        return _outcome(lambda: lib._assert(c, "shape check failed"))
    expected, got = run(torch), run(tg)
    assert got[1] is expected[1]
    if expected[1] is AssertionError:
        assert got[2] == expected[2] == "shape check failed"


# -- torch.nn._reduction: the legacy flag rule, imported by losses copied from PyTorch ----------

FLAGS = [(None, None), (True, None), (False, None), (None, False), (False, False), (True, True),
         (False, True)]


@pytest.mark.parametrize("size_average,reduce", FLAGS)
@pytest.mark.parametrize("emit", [True, False])
def test_legacy_get_string_and_enum_match_torch(size_average, reduce, emit):
    import torch.nn._reduction as t_red
    import tapegrad.nn._reduction as g_red
    for name in ("legacy_get_string", "legacy_get_enum"):
        expected = _outcome(lambda: getattr(t_red, name)(size_average, reduce, emit))
        assert _outcome(lambda: getattr(g_red, name)(size_average, reduce, emit)) == expected


@pytest.mark.parametrize("reduction", ["none", "mean", "sum", "elementwise_mean", "batchmean",
                                       "avg"])
def test_get_enum_matches_torch(reduction):
    import torch.nn._reduction as t_red
    import tapegrad.nn._reduction as g_red
    assert _outcome(lambda: g_red.get_enum(reduction)) == _outcome(lambda: t_red.get_enum(reduction))


def _custom_loss(lib):
    """A loss written the way PyTorch writes its own: _Loss subclass, legacy flags, _Reduction."""
    import importlib
    _Reduction = importlib.import_module(lib.__name__ + ".nn._reduction")
    _Loss = importlib.import_module(lib.__name__ + ".nn.modules.loss")._Loss

    class ScaledL1(_Loss):
        def __init__(self, scale, size_average=None, reduce=None, reduction="mean"):
            super().__init__(size_average, reduce, reduction)
            self.scale = scale

        def forward(self, input, target):
            return lib.nn.functional.l1_loss(input * self.scale, target, reduction=self.reduction)

    return _Reduction, ScaledL1


@pytest.mark.parametrize("size_average,reduce", FLAGS)
def test_custom_loss_with_legacy_flags_matches_torch(size_average, reduce):
    import numpy as np
    x = np.linspace(-1.0, 2.0, 6).reshape(2, 3)
    y = np.linspace(0.5, -0.5, 6).reshape(2, 3)
    results = []
    for lib in (torch, tg):
        _Reduction, ScaledL1 = _custom_loss(lib)
        inp = lib.tensor(x, requires_grad=True)
        out = _outcome(lambda: ScaledL1(2.0, size_average, reduce))
        loss = out[0]
        value = loss(inp, lib.tensor(y))
        value.sum().backward()
        results.append((loss.reduction, value.detach().numpy(), inp.grad.numpy(), out[3],
                        _Reduction.get_enum(loss.reduction)))
    (tr, tv, tgr, tw, te), (gr, gv, ggr, gw, ge) = results
    assert (gr, gw, ge) == (tr, tw, te)
    np.testing.assert_allclose(gv, tv, rtol=1e-12)
    np.testing.assert_allclose(ggr, tgr, rtol=1e-12)


# -- the in-place error names a saved view of a parameter as PyTorch does -----------------------
# A GAN script (yangyutu/PyTorch-Tutorial 406_GAN.py) steps one optimizer between two backwards
# through the same graph: F.linear saved weight.t(), a view of the stepped weight.  PyTorch names
# the view's regenerated node ("output 0 of AsStrided"); tapegrad named the linear's own.

def _inplace_message(lib, build):
    w = lib.ones(3, 2, requires_grad=True)
    x = lib.ones(4, 3, requires_grad=True)
    y = build(lib, x, w).sum()
    with lib.no_grad():
        w.add_(1)
    try:
        y.backward()
    except RuntimeError as e:
        return str(e)
    return None


@pytest.mark.parametrize("build", [
    lambda lib, x, w: lib.nn.functional.linear(x, w.t()),
    lambda lib, x, w: lib.nn.functional.linear(x, w.t(), lib.ones(2)),
    lambda lib, x, w: x @ w.t().t(),
    lambda lib, x, w: x[:, :2] * w[0],
    lambda lib, x, w: lib.mm(x, w),                 # the leaf itself: no node named
    lambda lib, x, w: lib.exp(x @ w),               # nothing saved was written: no error
], ids=["linear", "linear_bias", "double_t", "select", "mm_leaf", "unaffected"])
def test_inplace_error_names_saved_views_as_torch(build):
    assert _inplace_message(tg, build) == _inplace_message(torch, build)


def test_optimizer_step_between_backwards_names_as_strided():
    def run(lib):
        lin = lib.nn.Linear(3, 1)
        h = lib.nn.Linear(3, 3)(lib.ones(4, 3))
        y = lib.sigmoid(lin(h)).sum()
        opt = lib.optim.SGD(lin.parameters(), lr=0.1)
        y.backward(retain_graph=True)
        opt.step()
        with pytest.raises(RuntimeError) as info:
            y.backward()
        return str(info.value)
    expected = run(torch)
    assert "which is output 0 of AsStrided" in expected
    assert run(tg) == expected


class _SavedMM:
    """A custom Function saving its (view) operand: the message names the operand's grad_fn now."""

    @staticmethod
    def make(lib):
        class MyMM(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, wt):
                ctx.save_for_backward(x, wt)
                return x @ wt

            @staticmethod
            def backward(ctx, g):
                x, wt = ctx.saved_tensors
                return g @ wt.t(), x.t() @ g
        return MyMM


@pytest.mark.parametrize("case", ["function_t", "function_slice_t", "grad_live_slice"])
def test_inplace_error_names_live_stale_views_as_torch(case):
    def run(lib):
        w = lib.ones(2, 3, requires_grad=True)
        x = lib.ones(4, 3, requires_grad=True)
        if case == "grad_live_slice":
            v = w[0, 1:]
            y = (v * v).sum()
        else:
            wt = w.t() if case == "function_t" else w[:, :].t()
            y = _SavedMM.make(lib).apply(x, wt).sum()
        with lib.no_grad():
            w.mul_(2)
        with pytest.raises(RuntimeError) as info:
            lib.autograd.grad(y, w)
        return str(info.value)
    expected = run(torch)
    assert "output 0 of AsStrided" in expected
    assert run(tg) == expected
