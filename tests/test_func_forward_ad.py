"""Custom autograd.Function ``jvp`` under forward_ad (and gradcheck's check_forward_ad), and the
functorch aliases (tapegrad._functorch): against torch, and hand values without it."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.autograd.forward_ad as fwAD
from tapegrad import _functorch

XS = np.array([0.3, -1.2, 2.0])

# torch's first dual_level imports decompositions that call the deprecated torch.jit.script
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")


def _functions(lib, calls):
    class Exp(lib.autograd.Function):         # jvp only, as the forward-AD tutorial's
        @staticmethod
        def forward(ctx, x):
            result = lib.exp(x)
            ctx.result = result
            return result

        @staticmethod
        def jvp(ctx, g):
            calls.append("exp")
            out = g * ctx.result
            del ctx.result                    # jvp runs once: the tutorial frees ctx here
            return out

    class ScaleSin(lib.autograd.Function):    # two outputs, a non-tensor argument
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            ctx.save_for_forward(x)
            return x * k, x.sin()

        @staticmethod
        def jvp(ctx, gx, gk):
            calls.append(("scale_sin", gk))
            (x,) = ctx.saved_tensors
            return gx * ctx.k, gx * x.cos()

    class Square(lib.autograd.Function):      # setup_context style
        @staticmethod
        def forward(x):
            return x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_forward(inputs[0])
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def jvp(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    class Both(lib.autograd.Function):        # forward mode must use jvp, reverse backward
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def jvp(ctx, g):
            return g * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * 3.0

    class NoJvp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    return Exp, ScaleSin, Square, Both, NoJvp


def _tangents(lib):
    """Every tangent the scenarios compute, as numpy arrays, and the jvp calls made."""
    fw = lib.autograd.forward_ad
    calls = []
    Exp, ScaleSin, Square, Both, _ = _functions(lib, calls)
    x = lib.tensor(XS, dtype=lib.float64)
    t = lib.tensor([1.0, -0.5, 2.0], dtype=lib.float64)
    out = {}
    with fw.dual_level():
        d = fw.make_dual(x, t)
        out["exp"] = fw.unpack_dual(Exp.apply(d)).tangent
        a, b = ScaleSin.apply(d * 2, 3.0)
        out["scale"] = fw.unpack_dual(a).tangent
        out["sin"] = fw.unpack_dual(b).tangent
        out["chain"] = fw.unpack_dual((Square.apply(d.sin()) * d).exp()).tangent
        out["both"] = fw.unpack_dual(Both.apply(d)).tangent
        out["mixed"] = fw.unpack_dual(Exp.apply(d) + d * d).tangent
        c = ScaleSin.apply(lib.ones(3, dtype=lib.float64), 2.0)[0]
        out["no_tangent"] = fw.unpack_dual(c).tangent
    after = fw.unpack_dual(a).tangent
    xr = x.clone().requires_grad_()
    Both.apply(xr).sum().backward()
    out["both_grad"] = xr.grad
    xr = x.clone().requires_grad_()
    Square.apply(xr).sum().backward()
    out["square_grad"] = xr.grad
    out = {k: (None if v is None else v.detach().numpy()) for k, v in out.items()}
    return out, calls, after


def test_custom_function_jvp_hand_values():
    out, calls, after = _tangents(tg)
    t = np.array([1.0, -0.5, 2.0])
    np.testing.assert_allclose(out["exp"], np.exp(XS) * t, rtol=1e-12)
    np.testing.assert_allclose(out["scale"], 6 * t, rtol=1e-12)
    np.testing.assert_allclose(out["sin"], np.cos(2 * XS) * 2 * t, rtol=1e-12)
    np.testing.assert_allclose(out["both"], 2 * t, rtol=1e-12)
    np.testing.assert_allclose(out["both_grad"], np.full(3, 3.0), rtol=1e-12)
    np.testing.assert_allclose(out["mixed"], (np.exp(XS) + 2 * XS) * t, rtol=1e-12)
    s2 = np.sin(XS) ** 2
    np.testing.assert_allclose(out["chain"], np.exp(s2 * XS) * (2 * np.sin(XS) * np.cos(XS) * XS
                                                                + s2) * t, rtol=1e-12)
    assert out["no_tangent"] is None and after is None
    # jvp runs once per apply (eagerly), and a non-tensor input's tangent is None
    assert calls == ["exp", ("scale_sin", None), "exp"]


def test_custom_function_jvp_matches_torch(torch):
    ours, our_calls, _ = _tangents(tg)
    theirs, their_calls, _ = _tangents(torch)
    assert our_calls == their_calls
    assert ours.keys() == theirs.keys()
    for k in ours:
        if theirs[k] is None:
            assert ours[k] is None, k
        else:
            np.testing.assert_allclose(ours[k], theirs[k], rtol=1e-12, atol=1e-14, err_msg=k)


@pytest.mark.parametrize("lib_name", ["tapegrad", "torch"])
def test_custom_function_jvp_errors(lib_name, request):
    lib = tg if lib_name == "tapegrad" else request.getfixturevalue("torch")
    fw = lib.autograd.forward_ad
    Exp, _, _, _, NoJvp = _functions(lib, [])
    x = lib.tensor(XS, dtype=lib.float64)
    with fw.dual_level():
        d = fw.make_dual(x, lib.ones(3, dtype=lib.float64))
        with pytest.raises(NotImplementedError, match="implement the jvp function"):
            NoJvp.apply(d)

        class Wrong(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def jvp(ctx, g):
                return g[:2]
        with pytest.raises(RuntimeError, match="forward gradient that has a different size"):
            Wrong.apply(d)
    # a Function with only jvp has no reverse mode
    y = Exp.apply(x.clone().requires_grad_())
    with pytest.raises(NotImplementedError, match="backward or vjp method"):
        y.sum().backward()


def test_gradcheck_check_forward_ad():
    calls = []
    Exp, _, Square, _, _ = _functions(tg, calls)
    x = tg.tensor(XS, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(Exp.apply, (x,), check_forward_ad=True, check_backward_ad=False,
                                 check_undefined_grad=False, check_batched_grad=False)
    assert tg.autograd.gradcheck(Square.apply, (x,), check_forward_ad=True)

    class BadJvp(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.exp()

        @staticmethod
        def jvp(ctx, g):
            return g

    from tapegrad.autograd.gradcheck import GradcheckError   # (torch.autograd has no such name)
    with pytest.raises(GradcheckError, match="forward mode mismatch"):
        tg.autograd.gradcheck(BadJvp.apply, (x,), check_forward_ad=True, check_backward_ad=False,
                              check_undefined_grad=False)
    assert not tg.autograd.gradcheck(BadJvp.apply, (x,), check_forward_ad=True,
                                     check_backward_ad=False, check_undefined_grad=False,
                                     raise_exception=False)


def _functorch_run(ft, lib):
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4)).eval()
    with lib.no_grad():     # the same values in both libraries (their random streams differ)
        model[0].weight.copy_(lib.tensor(np.linspace(-0.7, 0.9, 12).reshape(4, 3)))
        model[0].bias.copy_(lib.tensor([0.1, -0.2, 0.3, 0.0]))
    model[1].running_mean.fill_(0.25)
    x = lib.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=lib.float32)
    tangents = tuple(lib.ones_like(p) * 0.5 for p in model.parameters())
    func, params, buffers = ft.make_functional_with_buffers(model)
    out, jv = ft.jvp(lambda p: func(p, buffers, x), (params,), (tangents,))
    g = ft.grad(lambda p: func(p, buffers, x).pow(2).sum())(params)
    state = [p.detach().numpy().copy() for p in model.state_dict().values()]
    return [out.detach().numpy(), jv.detach().numpy()] + [t.detach().numpy() for t in g], state


def test_functorch_aliases():
    with pytest.warns(FutureWarning, match="`functorch.jvp` is deprecated"):
        out, tangent = _functorch.jvp(lambda a: a.sin(), (tg.tensor(XS),), (tg.ones(3),))
    np.testing.assert_allclose(tangent.numpy(), np.cos(XS).astype(np.float32), rtol=1e-6)
    model = tg.nn.Linear(3, 2)
    with pytest.warns(FutureWarning):
        func, params = _functorch.make_functional(model)
    assert [tuple(p.shape) for p in params] == [(2, 3), (2,)]
    np.testing.assert_array_equal(func(params, tg.ones(1, 3)).detach().numpy(),
                                  model(tg.ones(1, 3)).detach().numpy())
    with pytest.raises(RuntimeError, match="has buffers"), pytest.warns(FutureWarning):
        _functorch.make_functional(tg.nn.BatchNorm1d(3))


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_functorch_matches_torch(torch):
    import functorch
    ours, our_state = _functorch_run(_functorch, tg)
    theirs, their_state = _functorch_run(functorch, torch)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for a, b in zip(our_state, their_state):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _forward_over_reverse(lib):
    fw = lib.autograd.forward_ad
    p = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
    q = lib.tensor([0.5, -1.0], dtype=lib.float64)
    tv = lib.ones(2, dtype=lib.float64, requires_grad=True)
    with fw.dual_level():
        t = fw.unpack_dual((fw.make_dual(p, lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64))
                            .sin() * p).sum()).tangent
        flags = [t.requires_grad]
        t.backward()
        plain = fw.unpack_dual(fw.make_dual(q, lib.ones(2, dtype=lib.float64)).exp()).tangent
        flags.append(plain.requires_grad)
        t3 = fw.unpack_dual((fw.make_dual(q, tv) ** 2).sum()).tangent
        flags.append(t3.requires_grad)
        t3.backward()
    return flags, p.grad.numpy(), tv.grad.numpy()


def test_tangents_are_differentiable_as_torch(torch):
    ours, theirs = _forward_over_reverse(tg), _forward_over_reverse(torch)
    assert ours[0] == theirs[0] == [True, False, True]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-12)
