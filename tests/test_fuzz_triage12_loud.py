"""Regressions of the loud issue-16 fuzz findings of session 12 (held-out runs from seed 58100000,
campaign from 58400000).

Each test compares with PyTorch where it is installed (the `torch` fixture skips cleanly without
it) and checks new gradients against float64 finite differences.
"""
import numpy as np
import pytest

import tapegrad as tg


# -- polar saves its output only (seeds 58101956, 58103190, 58105429, 58105511, 58107987, ...) ---
# PyTorch's polar_backward reads the result (grad_abs = Re(conj(g) sgn(out)), grad_angle =
# Re(conj(g) i out)), so writing to abs or angle after the forward leaves the backward valid.
# tapegrad saved both inputs and raised "modified by an inplace operation" in both backward
# passes.  sgn(out) is also PyTorch's value where abs is 0 or negative (documented as undefined).

_ABS = [-1.0, 0.0, 2.0, 0.5]
_ANGLE = [0.3, 0.5, 0.7, -1.2]
_W = [1 + 2j, 3 - 1j, 0.5 + 0.5j, -1 + 0.25j]


def _polar_program(L, write, dtype_name):
    dt = getattr(L, dtype_name)
    cdt = L.complex128 if dtype_name == "float64" else L.complex64
    r0 = L.tensor(_ABS, dtype=dt, requires_grad=True)
    t0 = L.tensor(_ANGLE, dtype=dt, requires_grad=True)
    r, th = r0 * 1.0, t0 * 1.0
    z = L.polar(r, th)
    if write == "inputs":
        r.mul_(3)
        th.add_(1)
    elif write == "no_grad":
        with L.no_grad():
            th[...] = r
    w = L.tensor(_W, dtype=cdt)
    loss = (z * w).real.sum() + (z * z * w).abs().sum()
    g = L.autograd.grad(loss, [r0, t0], create_graph=True)
    h = L.autograd.grad((g[0] ** 2).sum() + (g[1] * g[0]).sum(), [r0, t0])
    return [x.detach().numpy() for x in g + h]


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("write", [None, "inputs", "no_grad"])
def test_polar_first_and_second_derivatives_after_input_writes_match_torch(torch, write,
                                                                          dtype_name):
    ours = _polar_program(tg, write, dtype_name)
    theirs = _polar_program(torch, write, dtype_name)
    tol = 1e-12 if dtype_name == "float64" else 2e-4
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_polar_backward_after_input_write_plain_backward(torch):
    def run(L):
        r = L.tensor([0.5, 1.5, 2.0], dtype=L.float32, requires_grad=True)
        th = L.tensor([0.1, -0.8, 2.5], dtype=L.float32)
        z = L.polar(r.abs(), th)
        th.masked_fill_(th > 0, 0.0)                  # 58103190
        (z * L.tensor([1 - 1j, 2j, 0.5], dtype=L.complex64)).real.sum().backward()
        return r.grad.numpy()
    np.testing.assert_allclose(run(tg), run(torch), rtol=1e-6)


def test_polar_write_to_output_still_raises():
    r = tg.tensor([0.5, 1.5], dtype=tg.float64, requires_grad=True)
    z = tg.polar(r, tg.tensor([0.1, 0.2], dtype=tg.float64))
    z.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (z * z).real.sum().backward()
    z = tg.polar(r, tg.tensor([0.1, 0.2], dtype=tg.float64))
    loss = (z * (1 + 1j)).real.sum()
    z.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_polar_gradcheck_positive_abs():
    rng = np.random.default_rng(0)
    r = tg.tensor(rng.uniform(0.5, 2.0, 5), dtype=tg.float64, requires_grad=True)
    th = tg.tensor(rng.uniform(-3, 3, 5), dtype=tg.float64, requires_grad=True)
    w = tg.tensor(rng.standard_normal(5) + 1j * rng.standard_normal(5))
    f = lambda a, b: (tg.polar(a, b) * w).real
    assert tg.autograd.gradcheck(f, (r, th))
    g = lambda a, b: (tg.polar(a, b) ** 2 * w).real
    assert tg.autograd.gradgradcheck(g, (r, th))


# -- complex z ** number saves its input only (PyTorch's PowBackward0: self and the exponent) ----

@pytest.mark.parametrize("exponent", [3, 0.5, 2 - 1j, -2])
def test_complex_pow_number_result_written_both_orders_match_torch(torch, exponent):
    def run(L):
        x = L.tensor([0.5, -1.25, 2.0], dtype=L.float64, requires_grad=True)
        z = (x + (1 - 0.5j)) ** exponent
        w = L.tensor([1 + 2j, -1j, 0.5 + 0j], dtype=L.complex128)
        loss = (z * w).real.sum()
        z.mul_(2)
        (g,) = L.autograd.grad(loss, [x], create_graph=True)
        (h,) = L.autograd.grad((g * g).sum(), [x])
        return g.detach().numpy(), h.numpy()
    for a, b in zip(run(tg), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# -- max/min/amax/amin of an empty complex tensor (58102270, 58103145, 58109943, 58114388) ------
# PyTorch checks an empty input's reduction dims before refusing complex numbers (no order).

EMPTY_COMPLEX_CALLS = ["z.max()", "z.min()", "z.amax()", "z.amin(())", "z.max(0)", "z.min(1)",
                       "z.amax(0)", "z.amax(1)", "z.amin((0, 1))", "z.argmax()",
                       "w.max()", "w.amax(0)", "w.max(0)", "r.amax()", "r.amax(())"]


@pytest.mark.parametrize("call", EMPTY_COMPLEX_CALLS)
def test_empty_complex_extremes_raise_as_torch(torch, call):
    def run(L):
        env = {"z": L.zeros(0, 3, dtype=L.complex64), "w": L.ones(2, 3, dtype=L.complex128),
               "r": L.zeros(0, 2)}
        try:
            out = eval(call, {}, env)
        except Exception as e:                          # noqa: BLE001 (compared below)
            return type(e).__name__, str(e).split("(Triggered")[0]
        out = out[0] if isinstance(out, tuple) else out
        return "ok", tuple(out.shape)
    assert run(tg) == run(torch)


# -- view_as_complex ignores the stride of a dim of size 1 (58104149) ---------------------------

@pytest.mark.parametrize("make", [
    lambda L: L.zeros(2, 1, dtype=L.float64).T,
    lambda L: L.arange(6.0).as_strided((1, 2), (3, 1)),
    lambda L: L.arange(6.0).as_strided((1, 1, 2), (5, 3, 1)),
    lambda L: L.arange(12.0).as_strided((2, 1, 2), (4, 3, 1)),
    lambda L: L.arange(6.0).as_strided((2, 2), (3, 1)),            # refused by both
])
def test_view_as_complex_strides_of_size_one_dims_as_torch(torch, make):
    def run(L):
        x = make(L).detach().requires_grad_(True)
        try:
            z = L.view_as_complex(x)
        except RuntimeError as e:
            return str(e)
        (z * (2 - 1j)).real.sum().backward()
        return z.detach().numpy().tolist(), z.stride(), x.grad.numpy().tolist()
    assert run(tg) == run(torch)


# -- create_graph through complex prod (58105801, 57201336) -------------------------------------
# It raised NotImplementedError; the second derivative now comes from the product of the other
# elements built from tensors (exact with zeros in the input, as PyTorch's).

_PROD_CASES = {
    "all": lambda z: z.prod(),
    "dim0": lambda z: z.prod(0),
    "dim1": lambda z: z.prod(1),
    "dim-1 keepdim": lambda z: z.prod(-1, keepdim=True),
    "two zeros in a column": lambda z: (z * z.new_tensor([[1, 1, 0, 1]] * 3).real).prod(0),
}


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("case", sorted(_PROD_CASES))
def test_complex_prod_second_derivative_matches_torch(torch, case, dtype_name):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    a[1, 2] = b[1, 2] = 0.0

    def run(L):
        dt = getattr(L, dtype_name)
        x = L.tensor(a, dtype=dt, requires_grad=True)
        y = L.tensor(b, dtype=dt, requires_grad=True)
        p = _PROD_CASES[case](L.complex(x, y))
        w = L.tensor(np.linspace(-1, 1, p.numel()).reshape(tuple(p.shape)) * (1 - 2j),
                     dtype=p.dtype)
        gx, gy = L.autograd.grad((p * w).real.sum(), [x, y], create_graph=True)
        hx, hy = L.autograd.grad((gx * gx).sum() + (gy * gx).sum(), [x, y])
        return [t.detach().numpy() for t in (gx, gy, hx, hy)]

    tol = 1e-12 if dtype_name == "float64" else 1e-5
    for ours, theirs in zip(run(tg), run(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


def test_complex_prod_gradgradcheck():
    rng = np.random.default_rng(2)
    x = tg.tensor(rng.standard_normal((2, 3)), dtype=tg.float64, requires_grad=True)
    y = tg.tensor(rng.standard_normal((2, 3)), dtype=tg.float64, requires_grad=True)
    for f in (lambda a, b: tg.view_as_real(tg.complex(a, b).prod()),
              lambda a, b: tg.view_as_real(tg.complex(a, b).prod(1))):
        assert tg.autograd.gradcheck(f, (x, y))
        assert tg.autograd.gradgradcheck(f, (x, y))


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_polar_retained_grad_of_output_after_two_passes_matches_torch(torch):
    # PyTorch's second pass reaches polar's output through its saved result, so the output's
    # retained .grad gains that term; tapegrad's VJP read the angle before (58002747, 57100087)
    def run(L):
        r = L.tensor([0.5, 1.5, 2.0], dtype=L.float64, requires_grad=True)
        t = L.tensor([0.3, -1.0, 2.5], dtype=L.float64, requires_grad=True)
        z = L.polar(r * 1.0, t * 1.0)
        z.retain_grad()
        w = L.tensor([1 + 2j, -1j, 0.5 - 0.25j], dtype=L.complex128)
        loss = (z * w).real.sum() + (z * z).abs().sum()
        loss.backward(create_graph=True)
        first = z.grad.detach().clone()
        ((r.grad ** 2).sum() + (t.grad * r.grad).sum()).backward()
        return [x.detach().numpy() for x in (first, z.grad, r.grad, t.grad)]
    for a, b in zip(run(tg), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_polar_create_graph_keeps_no_record_alive():
    # the create_graph VJP reads polar's own output back; kept on the ctx after the backward it
    # held its record through the tape (62 records alive after one gradgradcheck)
    import gc
    gc.collect()
    before = tg._core.tape().live_records
    rng = np.random.default_rng(3)
    r = tg.tensor(rng.uniform(0.5, 2.0, 4), dtype=tg.float64, requires_grad=True)
    th = tg.tensor(rng.uniform(-3, 3, 4), dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda a, b: (tg.polar(a, b) ** 2).real, (r, th))
    del r, th
    gc.collect()
    # (<=: records an earlier test left in a cache may be freed meanwhile; none of this one's
    # may stay)
    assert tg._core.tape().live_records <= before


# -- complex std where the deviation is 0 (58402318) --------------------------------------------
# std = sqrt(var) composed: sqrt's infinite derivative at 0 times var's zero gradient gave NaN,
# which spread to the whole gradient of a leaf; PyTorch's std gradient is 0 there.

@pytest.mark.parametrize("dim", [None, 1])
def test_complex_std_with_zero_deviation_as_torch(torch, dim):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 4))
    a[1] = 0.75                                         # row 1 (and with dim=None nothing) constant

    def run(L):
        x = L.tensor(a, dtype=L.float64, requires_grad=True)
        z = x + (1 - 0.5j) * x.detach()
        s = z.std() if dim is None else z.std(dim)
        w = L.tensor(np.linspace(0.5, 1.5, s.numel()).reshape(tuple(s.shape)), dtype=L.float64)
        (g,) = L.autograd.grad((s * w).sum(), [x], create_graph=True)
        (h,) = L.autograd.grad((g * g).sum(), [x])
        return s.detach().numpy(), g.detach().numpy(), h.numpy()
    for ours, theirs in zip(run(tg), run(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)

    x = tg.tensor([0.8655], dtype=tg.float64, requires_grad=True)
    (tg.cat([x, x]) + (1 - 0.5j)).std().backward()
    assert x.grad.tolist() == [0.0]
