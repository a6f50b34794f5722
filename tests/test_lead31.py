"""Session 31 (lead): a tapegrad.compile'd call whose input is also used outside the call gets
the eager gradient bit for bit.  The eager sweep sums an input's contributions in reverse record
order: the uses after the call, then the call's own records, then the uses before it.  The
replayed call's backward used to hand back its own total, summed after: (a + b) + c became
a + (b + c), up to 3 ulp apart in float32 in about half of random inputs (fuzz 65020624).  Now
the sweep hands the replay the adjoint summed so far as its seed (take_compiled_seeds)."""
import numpy as np
import pytest

import tapegrad as tg


def one_output(x, t):
    return tg.exp(x) - t * x


def two_outputs(x, t):
    return tg.sin(x) * t, tg.tanh(x) + x * x


def program(fn, x, t, shape):
    """Uses of x before the call, the call, uses after it; the weighted sum of everything."""
    before = (x * 0.3).sum()
    out = fn(x, t)
    outs = out if isinstance(out, tuple) else (out,)
    after = (x * 0.7 + tg.cos(x)).sum()
    total = before + after
    for k, o in enumerate(outs):
        total = total + (o * (-1.3 - k)).sum()
    return total


@pytest.mark.parametrize("fn", [one_output, two_outputs], ids=["one-output", "two-outputs"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(), (5,), (3, 4)])
def test_compiled_gradient_of_an_input_also_used_outside_is_eager_bit_for_bit(fn, dtype, shape):
    rng = np.random.default_rng(31)
    compiled = tg.compile(fn)
    for _ in range(40):
        xv = rng.standard_normal(shape).astype(dtype)
        tv = rng.standard_normal(shape).astype(dtype)
        grads = []
        for f in (fn, compiled):
            x = tg.tensor(xv, requires_grad=True)
            t = tg.tensor(tv, requires_grad=True)
            program(f, x, t, shape).backward()
            grads.append((x.grad.numpy().copy(), t.grad.numpy().copy()))
        np.testing.assert_array_equal(grads[0][0], grads[1][0])
        np.testing.assert_array_equal(grads[0][1], grads[1][1])
    assert compiled.stats["replays"] >= 39, compiled.explain()


def test_seed_of_an_input_the_call_gives_no_gradient_is_kept():
    """An input whose gradient does not flow through the call (t under detach inside) keeps
    the adjoint the later uses gave it."""
    def fn(x, t):
        return x * t.detach()
    compiled = tg.compile(fn)
    for f in (fn, compiled, compiled):
        x = tg.tensor([1.5, -2.0], requires_grad=True)
        t = tg.tensor([0.25, 4.0], requires_grad=True)
        y = f(x, t)
        (y.sum() + (t * t).sum()).backward()
        np.testing.assert_array_equal(t.grad.numpy(), [0.5, 8.0])
        np.testing.assert_array_equal(x.grad.numpy(), [0.25, 4.0])


def test_hooks_on_the_input_see_the_full_gradient():
    seen = []
    compiled = tg.compile(one_output)
    for _ in range(3):
        x = tg.tensor([0.5, 1.0], requires_grad=True)
        x.register_hook(lambda g: seen.append(g.numpy().copy()))
        t = tg.tensor([2.0, 3.0])
        (compiled(x, t).sum() + (x * 10).sum()).backward()
        np.testing.assert_allclose(seen[-1], np.exp([0.5, 1.0]) - [2.0, 3.0] + 10)
    assert len(seen) == 3


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_create_graph_through_the_call_is_eager_bit_for_bit_too(dtype):
    """The same with create_graph=True (the graph sweep seeds the re-run call's recorded
    backward), first and second derivatives."""
    rng = np.random.default_rng(7)
    compiled = tg.compile(one_output)
    for _ in range(30):
        xv = rng.standard_normal(3).astype(dtype)
        tv = rng.standard_normal(3).astype(dtype)
        got = []
        for f in (one_output, compiled):
            x = tg.tensor(xv, requires_grad=True)
            t = tg.tensor(tv)
            g, = tg.autograd.grad((f(x, t) * -1.3 + x * 0.7).sum(), x, create_graph=True)
            h, = tg.autograd.grad((g * g).sum(), x)
            got.append((g.detach().numpy().copy(), h.numpy().copy()))
        np.testing.assert_array_equal(got[0][0], got[1][0])
        np.testing.assert_array_equal(got[0][1], got[1][1])
    assert compiled.stats["replays"] >= 29
