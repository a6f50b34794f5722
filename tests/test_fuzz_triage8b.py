"""Regressions of the issue-16 fuzz run of session 8 (seeds from 50000000) and of its
adjudicator (tools/fuzz_adjudicate.py).

Each test asserts the right values without torch where it can and, where torch is installed,
compares with it.
"""
import math
import os
import sys

import numpy as np
import pytest

import tapegrad as tg

nan, inf = math.nan, math.inf


# -- x[mask] = one-element value aliasing x (seed 50002974) -------------------------------------
# PyTorch writes a boolean mask with a one-element value through masked_fill_, which reads the
# value first and checks no overlap; tapegrad applied index_put_'s overlap refusal.

MASK_CASES = {
    "(1,) view of x": lambda x: x[0:1],
    "(1,) view of a written element": lambda x: x[3:4],
    "0-d view": lambda x: x[3],
    "(1, 1) view": lambda x: x[2:3].view(1, 1),
}


@pytest.mark.parametrize("case", sorted(MASK_CASES))
def test_mask_setitem_with_an_aliasing_one_element_value(case):
    x = tg.tensor(np.arange(1.0, 7.0))
    expected = x.numpy().copy()
    value = float(MASK_CASES[case](x).reshape(-1)[0])
    expected[expected > 2] = value
    x[x > 2] = MASK_CASES[case](x)
    np.testing.assert_array_equal(x.numpy(), expected)


@pytest.mark.parametrize("case", sorted(MASK_CASES))
def test_mask_setitem_with_an_aliasing_value_as_torch(torch, case):
    def run(L):
        a = L.tensor(np.arange(1.0, 7.0), requires_grad=True)
        y = a * 1.0
        y[y > 2] = MASK_CASES[case](y)
        (y * L.tensor(np.arange(6.0) - 2.5)).sum().backward()
        return y.detach().numpy().copy(), a.grad.numpy().copy()
    for ours, theirs in zip(run(tg), run(torch)):
        np.testing.assert_array_equal(ours, theirs)


def test_index_put_with_an_aliasing_value_still_refused(torch):
    # a list index, or a mask with a value of several elements, is index_put_: refused in both
    for key, value in (([1, 2], lambda x: x[0:1]), (None, lambda x: x)):
        for L in (tg, torch):
            x = L.tensor(np.arange(1.0, 7.0))
            with pytest.raises(RuntimeError, match="single memory location"):
                x[x > 0 if key is None else key] = value(x)


# -- second derivatives through a mean of an empty input (seed 50006602) -------------------------
# The mean's adjoint divided G by the count before expanding it; of an empty input the count is
# 0, so differentiating again divided a sum of nothing (0) by 0: NaN where PyTorch's formulas,
# dividing the expanded (empty) gradient, give exact zeros.  Same in the mean-reduced losses.

def _F(L):
    return L.nn.functional


EMPTY_MEANS = {
    "mean dim": lambda L, x: x.mean(-2, keepdim=True),
    "mean all": lambda L, x: x.mean().reshape(()),
    "mse": lambda L, x: _F(L).mse_loss(x, L.zeros_like(x)),
    "l1": lambda L, x: _F(L).l1_loss(x, L.zeros_like(x)),
    "smooth_l1": lambda L, x: _F(L).smooth_l1_loss(x, L.zeros_like(x)),
    "huber": lambda L, x: _F(L).huber_loss(x, L.zeros_like(x), delta=0.5),
    "bce": lambda L, x: _F(L).binary_cross_entropy(x.sigmoid(), L.zeros_like(x)),
    "bce_logits": lambda L, x: _F(L).binary_cross_entropy_with_logits(x, L.zeros_like(x)),
}


def _empty_mean_second(L, case):
    x = L.tensor(np.zeros((2, 0, 3)), requires_grad=True)
    w = L.tensor(np.arange(1.0, 7.0).reshape(2, 3, 1), requires_grad=True)
    y = EMPTY_MEANS[case](L, x)
    z = y @ w if y.dim() == 3 else y * w          # NaN (a mean of nothing) times w
    gx, gw = L.autograd.grad(z.sum(), [x, w], create_graph=True)
    s = (gx * 0.7).sum() + (gw * 0.7).sum()
    g2x, g2w = L.autograd.grad(s, [x, w], allow_unused=True)
    return g2w


@pytest.mark.parametrize("case", sorted(EMPTY_MEANS))
def test_second_derivative_through_a_mean_of_nothing_is_zero(case):
    # d/dw of sum(G_x) + sum(G_w): G_x is empty (its sum is 0 whatever w is) and G_w = mean(x)
    # (NaN) does not depend on w: the derivative is exactly 0
    g2w = _empty_mean_second(tg, case)
    np.testing.assert_array_equal(g2w.numpy(), np.zeros((2, 3, 1)))


@pytest.mark.parametrize("case", sorted(EMPTY_MEANS))
def test_second_derivative_through_a_mean_of_nothing_as_torch(torch, case):
    ours, theirs = _empty_mean_second(tg, case), _empty_mean_second(torch, case)
    np.testing.assert_array_equal(ours.numpy(), theirs.detach().numpy())


def test_mean_of_a_nonempty_input_second_derivative_unchanged(torch):
    # the non-empty route (divide, then expand) is untouched: float64 values equal torch's
    def run(L):
        x = L.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
        y = (x.mean(0) ** 3).sum() + _F(L).mse_loss(x, L.ones_like(x)) ** 2
        g, = L.autograd.grad(y, x, create_graph=True)
        g2, = L.autograd.grad((g * g).sum(), x)
        return g2.detach().numpy()
    np.testing.assert_allclose(run(tg), run(torch), rtol=1e-12, atol=1e-14)


# -- the adjudicator (tools/fuzz_adjudicate.py) ---------------------------------------------------
# It labels a value/gradient difference by float64 finite differences; these tests hand it
# programs with known answers, and a tapegrad run with a gradient made wrong on purpose.

_TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools")


@pytest.fixture
def fuzz_tools(torch):
    if _TOOLS not in sys.path:
        sys.path.insert(0, _TOOLS)
    import fuzz
    import fuzz_adjudicate
    return fuzz, fuzz_adjudicate


def _program(fuzz, lines, loss_vars, mode="backward"):
    steps = []
    for out, code in lines:
        steps.append(fuzz.Step(code, out, stmt=out is None))
    return fuzz.Program(0, steps, mode, loss_vars, [], 12345)


def _leaf(values, rg=True, dtype="float64"):
    arr = np.asarray(values, dtype=dtype)
    return (f"torch.tensor(np.array({arr.reshape(-1).tolist()!r}, dtype='{dtype}')"
            f".reshape({arr.shape}){', requires_grad=True' if rg else ''})")


def _adjudicate_with_wrong_grad(fuzz, A, prog, label, index, delta):
    t_run, g_run = A.run_both(prog)
    snap = g_run.grads[label]
    arr = snap[1].copy()
    arr.reshape(-1)[index] += delta
    g_run.grads[label] = (snap[0], arr) + tuple(snap[2:])
    findings = fuzz.compare_runs(prog, t_run, g_run)
    assert [c for c, _ in findings] == ["grad"]
    return A.adjudicate(prog, findings, t_run, g_run)


def test_adjudicator_flags_a_wrong_gradient(fuzz_tools):
    fuzz, A = fuzz_tools
    prog = _program(fuzz, [("v0", _leaf([0.3, -1.2, 2.0])), ("v1", "v0.sin() * v0.exp()")],
                    ["v1"])
    v = _adjudicate_with_wrong_grad(fuzz, A, prog, "v0.grad", 1, 0.5)
    assert v["verdict"] == "torch-matches-FD", v


def test_adjudicator_holds_detached_values_constant(fuzz_tools):
    # d/dx (x.detach() * x) = x.detach(): plain FD would give 2x; the adjudicator's FD keeps the
    # detached value at its base value, so tapegrad's right gradient is not flagged and a wrong
    # one (2x) is
    fuzz, A = fuzz_tools
    lines = [("v0", _leaf([0.5, -1.5])), ("v1", "v0.detach()"), ("v2", "v1 * v0")]
    prog = _program(fuzz, lines, ["v2"])
    t_run, g_run = A.run_both(prog)
    assert fuzz.compare_runs(prog, t_run, g_run) == []
    v = _adjudicate_with_wrong_grad(fuzz, A, prog, "v0.grad", 0, 0.5 * 1.0)
    assert v["verdict"] == "torch-matches-FD", v


def test_adjudicator_replays_a_no_grad_write_as_a_constant(fuzz_tools):
    # v1 = 2 v0; under no_grad v1 *= 3 (autograd sees v1 + const); loss = v1 ** 2:
    # d/dv0 = 2 * (6 v0) * 2 = 24 v0, where a plain FD would give 72 v0
    fuzz, A = fuzz_tools
    steps = [fuzz.Step(_leaf([0.25, -0.5]), "v0"), fuzz.Step("v0 * 2", "v1"),
             fuzz.Step("v1.mul_(3)", "v2", nograd=True), fuzz.Step("v1 ** 2", "v3")]
    prog = fuzz.Program(0, steps, "backward", ["v3"], [], 12345)
    t_run, g_run = A.run_both(prog)
    assert fuzz.compare_runs(prog, t_run, g_run) == []
    fd = A.FDProgram(A.to_float64(prog), t_run.live)
    w = prog.weights("v3", (2,), "float64")
    for i, x in enumerate([0.25, -0.5]):
        d, noise, why, masked = fd.derivative("leaf", "v0", i, x)
        assert why is None and not masked
        assert abs(d - 24 * x * w[i]) < 1e-6, (d, 24 * x * w[i])


def test_adjudicator_calls_a_kink_degenerate(fuzz_tools):
    fuzz, A = fuzz_tools
    prog = _program(fuzz, [("v0", _leaf([0.0, 1.0])), ("v1", "v0.abs() * 3")], ["v1"])
    v = _adjudicate_with_wrong_grad(fuzz, A, prog, "v0.grad", 0, 0.7)
    assert v["verdict"] in ("degenerate", "undecided"), v
    assert "kink" in v["evidence"]


def test_adjudicator_float32_value_against_the_float64_run(fuzz_tools):
    fuzz, A = fuzz_tools
    prog = _program(fuzz, [("v0", _leaf([0.1, 0.7], dtype="float32")), ("v1", "v0.exp()")],
                    ["v1"])
    t_run, g_run = A.run_both(prog)
    snap = g_run.steps[1][1]
    arr = snap[1].copy()
    arr[1] *= 1.01
    g_run.steps[1] = ("ok", (snap[0], arr) + tuple(snap[2:]))
    findings = fuzz.compare_runs(prog, t_run, g_run)
    assert findings and findings[0][0] == "value"
    assert A.adjudicate(prog, findings, t_run, g_run)["verdict"] == "torch-matches-f64"


# -- (log_)softmax output layout (seed 50012196) --------------------------------------------------
# PyTorch's softmax output is contiguous whatever the input's layout; tapegrad kept a permuted
# input's order, so `F.softmax(x.movedim(0, -1), 0).view(-1)` raised where PyTorch's runs.

@pytest.mark.parametrize("log", [False, True])
def test_softmax_output_strides_as_torch(torch, log):
    for shape, perm in [((3, 2, 2), (1, 2, 0)), ((2, 3), (1, 0)), ((2, 3, 4), (2, 0, 1))]:
        base = np.arange(float(np.prod(shape))).reshape(shape) / 7.0
        for d in range(len(shape)):
            outs = []
            for L in (tg, torch):
                x = L.tensor(base, requires_grad=True).permute(*perm)
                f = L.nn.functional.log_softmax if log else L.nn.functional.softmax
                y = f(x, d)
                outs.append((y.stride(), y.view(-1).detach().numpy().copy()))
            assert outs[0][0] == outs[1][0], (shape, perm, d)
            np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-12)


# -- advanced-index result layout (seed 50000606) -------------------------------------------------
# PyTorch lays out x[index] as its TensorIterator orders the dims of x restrided: a permuted x
# keeps its order (x.permute(0, 2, 1)[[1]] has strides (6, 1, 3)), so `.view(-1)` raises there;
# tapegrad made every result C-contiguous.

INDEX_LAYOUT_CASES = [
    ((2, 2, 3), (0, 2, 1), ([1],)),
    ((2, 2, 3), (0, 2, 1), ([0, 1],)),
    ((2, 2, 3), (0, 2, 1), (slice(None), [1, 0])),
    ((2, 2, 3), (2, 1, 0), ([1, 0],)),
    ((2, 3, 4), (1, 0, 2), (slice(None), [1, 0, 1], slice(None))),
    ((2, 3, 4), (2, 0, 1), ([1, 0], slice(None), [0, 2])),
    ((3, 4), (1, 0), ([2, 1, 1],)),
    ((2, 3, 4), (0, 1, 2), (slice(None), [0, 0])),
]


@pytest.mark.parametrize("case", range(len(INDEX_LAYOUT_CASES)))
def test_advanced_index_layout_as_torch(torch, case):
    shape, perm, key = INDEX_LAYOUT_CASES[case]
    base = np.arange(float(np.prod(shape))).reshape(shape)
    outs = []
    for L in (tg, torch):
        x = L.tensor(base).permute(*perm)
        y = x[tuple(L.tensor(k) if isinstance(k, list) else k for k in key)]
        try:
            flat = y.view(-1).numpy().tolist()
        except RuntimeError:
            flat = "view refused"
        outs.append((tuple(s for s, n in zip(y.stride(), y.shape) if n > 1), flat,
                     y.numpy().tolist()))
    assert outs[0] == outs[1]


def test_permuted_index_result_gradient(torch):
    def run(L):
        x = L.tensor(np.arange(12.0).reshape(2, 2, 3), requires_grad=True)
        y = x.permute(0, 2, 1)[[1, 0, 1]]
        (y * L.tensor(np.arange(18.0).reshape(3, 3, 2))).sum().backward()
        return x.grad.numpy().copy()
    np.testing.assert_array_equal(run(tg), run(torch))


# -- x.copy_(x) is an in-place op (seed 50015864) -------------------------------------------------
# PyTorch's copy_ onto itself makes the in-place checks (a leaf, or a view of one, that
# requires grad is refused), bumps the version and records; only its kernel writes nothing.
# tapegrad returned at once, so a leaf's view copied onto itself ran without the error.

def test_self_copy_is_an_in_place_op_as_torch(torch):
    def run(L):
        out = []
        a = L.tensor(np.arange(3.0), requires_grad=True)
        for t in (a, a.view(3)):
            try:
                t.copy_(t)
                out.append("ran")
            except RuntimeError as e:
                out.append(str(e)[:40])
        b = a * 1
        v0 = b._version
        b.copy_(b)
        out.append(b._version - v0)
        (b * L.tensor([1.0, 2.0, 3.0])).sum().backward()
        out.append(a.grad.tolist())
        c = L.tensor(np.arange(3.0))
        c.copy_(c)
        out.append((c._version, c.tolist()))
        return out
    assert run(tg) == run(torch)


def test_fuzz_tail_with_loss_term_v2_runs(fuzz_tools):
    # the second-derivative weights were a list named W2, the name of loss term v2's weight:
    # every program whose loss used v2 raised in its tail and went without a gradient check
    fuzz, A = fuzz_tools
    for mode in ("backward", "grad2"):
        lines = [("v0", _leaf([0.5, -1.5])), ("v1", _leaf([2.0, 0.25])), ("v2", "v0 * v1.exp()")]
        prog = _program(fuzz, lines, ["v2"], mode)
        t_run, g_run = A.run_both(prog)
        assert t_run.tail == ("ok",) and g_run.tail == ("ok",)
        assert t_run.grads["v0.grad" if mode == "backward" else "G"][0] != "none"
        assert fuzz.compare_runs(prog, t_run, g_run) == []
