"""Regressions from fuzz31: the program fuzzer run in bfloat16, inside CPU autocast regions and
inside a pass-through TorchFunctionMode (tools/fuzz.py, seeds >= CONTEXT_FROM), each finding as an
explicit case checked against PyTorch."""
import os
import sys

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tools"))
import fuzz  # noqa: E402

A = np.array([[0.3, -1.2, 2.0, 0.7], [1.1, 0.25, -0.4, -2.2], [0.05, 0.9, -0.6, 1.3]],
             dtype=np.float32)
B = np.array([[0.5, -0.1, 1.7], [2.1, -0.8, 0.3], [-1.4, 0.6, 0.9], [0.2, 1.5, -0.7]],
             dtype=np.float32)


def _bits(t):
    """A tensor's values as float32 (bfloat16 ones widen exactly) and its dtype's name."""
    return t.detach().float().numpy(), str(t.dtype).split(".")[-1]


# -- bfloat16 ---------------------------------------------------------------------------------------

def test_autograd_grad_of_a_bfloat16_leaf_is_bfloat16_rounded_as_pytorch():
    # fuzz seeds 65600026, 65600094 (G, G2): autograd.grad gave a bfloat16 leaf's gradient as
    # the sweep's float32 (4.0547 where PyTorch has the bfloat16 4.0625)
    def run(lib):
        x = lib.tensor([0.3, -1.2, 3.1]).to(lib.bfloat16).requires_grad_()
        g, = lib.autograd.grad((x.exp() * 3).sum(), [x])
        h, = lib.autograd.grad((x * x).sum(), x, create_graph=True)
        g2, = lib.autograd.grad((h * h).sum(), [x])
        return [_bits(t) for t in (g, h, g2)] + [h.requires_grad]
    want, got = run(torch), run(tapegrad)
    for (w, wd), (v, vd) in zip(want[:3], got[:3]):
        assert vd == wd == "bfloat16"
        np.testing.assert_array_equal(v, w)
    assert got[3] and want[3]


def test_autograd_grad_does_not_round_the_gradient_it_was_given():
    # the rounded gradient is a copy: a grad_outputs tensor handed back by reference stays as
    # it was (float32 grad_outputs for a float32 output reaching a bfloat16 leaf through a cast)
    x = tapegrad.tensor([0.3, -1.2]).to(tapegrad.bfloat16).requires_grad_()
    y = x.float()
    v = tapegrad.tensor([1.0001, 3.14159])
    g, = tapegrad.autograd.grad(y, x, grad_outputs=v)
    assert g.dtype == tapegrad.bfloat16
    np.testing.assert_array_equal(v.numpy(), np.float32([1.0001, 3.14159]))


@pytest.mark.parametrize("op,args", [("unsqueeze_", (0,)), ("squeeze_", ()), ("t_", ()),
                                     ("transpose_", (0, 1)), ("swapdims_", (1, 0)),
                                     ("as_strided_", ((3,), (1,)))])
def test_in_place_view_ops_keep_a_bfloat16_tensor_bfloat16(op, args):
    # SILENT (fuzz seeds 65600226, 65600765, 65601360): outside autograd an in-place view op
    # made a bfloat16 tensor float32; what followed computed unrounded (0.1 + 0.3 kept the
    # float32 0.4 where PyTorch has the bfloat16 0.400390625)
    def run(lib):
        z = lib.tensor([[0.1, 2.0, 3.0]]).to(lib.bfloat16) * 1.0
        r = getattr(z, op)(*args)
        return r is z, _bits(z), _bits(z + 0.3)
    (w_same, w, w3), (g_same, g, g3) = run(torch), run(tapegrad)
    assert g_same and w_same
    for (wv, wd), (gv, gd) in ((w, g), (w3, g3)):
        assert gd == wd == "bfloat16"
        np.testing.assert_array_equal(gv, wv)


@pytest.mark.parametrize("call", [
    lambda L, x, y, o: L.exp(x, out=o), lambda L, x, y, o: L.add(x, y, out=o),
    lambda L, x, y, o: L.mul(x, y, out=o), lambda L, x, y, o: L.sigmoid(x, out=o),
    lambda L, x, y, o: L.pow(x, 1.7, out=o), lambda L, x, y, o: L.atan2(x, y, out=o),
    lambda L, x, y, o: L.sum(x.reshape(2, 2), 1, out=o[:2]),       # (accumulates in out's dtype)
    lambda L, x, y, o: L.cumsum(x, 0, out=o),
])
@pytest.mark.parametrize("out_dtype", ["float32", "float64"])
def test_a_bfloat16_elementwise_op_into_a_wider_out_is_rounded_as_pytorch(call, out_dtype):
    # SILENT (fuzz seed 65601304): exp(bfloat16, out=float32) wrote the float32 exp (2.0519
    # where PyTorch computes in bfloat16 and casts: 2.046875)
    def run(lib):
        x = lib.tensor([0.72, 0.66, 0.537, 1.3]).to(lib.bfloat16)
        y = lib.tensor([0.3, 0.1, 2.2, 1.0]).to(lib.bfloat16)
        o = lib.zeros(4, dtype=getattr(lib, out_dtype))
        call(lib, x, y, o)
        return o.numpy()
    np.testing.assert_array_equal(run(tapegrad), run(torch))


def test_bfloat16_logit_rounds_its_ratio_as_pytorch():
    # SILENT: PyTorch's logit kernel rounds x / (1 - x) to bfloat16 before the log (0.9414 at
    # 0.71875 where one rounding gives 0.9375, up to 4 ulp apart)
    def run(lib):
        x = lib.tensor([0.72, 0.66, 0.537, 0.05, 0.93, 0.4, 1.0, 0.0]).to(lib.bfloat16)
        return [_bits(r) for r in (lib.logit(x), x.logit(0.1), lib.special.logit(x, eps=0.2))]
    for (w, wd), (g, gd) in zip(run(torch), run(tapegrad)):
        assert gd == wd == "bfloat16"
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("call", [
    lambda L, m, v: L.linalg.inv(m), lambda L, m, v: L.linalg.inv_ex(m), lambda L, m, v: m.inverse(),
    lambda L, m, v: L.linalg.tensorinv(m, 1), lambda L, m, v: L.logdet(m),
    lambda L, m, v: L.linalg.slogdet(m), lambda L, m, v: L.det(m), lambda L, m, v: L.linalg.solve(m, v),
    lambda L, m, v: L.linalg.lu_factor_ex(m), lambda L, m, v: L.linalg.lu(m),
    lambda L, m, v: L.linalg.cholesky(m), lambda L, m, v: L.cholesky_inverse(m),
    lambda L, m, v: L.linalg.qr(m), lambda L, m, v: L.geqrf(m), lambda L, m, v: L.linalg.svd(m),
    lambda L, m, v: L.linalg.svdvals(m), lambda L, m, v: L.linalg.eigh(m),
    lambda L, m, v: L.linalg.eigvalsh(m), lambda L, m, v: L.linalg.eig(m),
    lambda L, m, v: L.linalg.solve_triangular(m, m, upper=True), lambda L, m, v: L.cdist(m, m),
    lambda L, m, v: L.special.log_ndtr(v), lambda L, m, v: L.linalg.lstsq(m, m),
    lambda L, m, v: L.linalg.matrix_rank(m), lambda L, m, v: L.complex(v, v),
    lambda L, m, v: L.polar(v, v.float()), lambda L, m, v: L.view_as_complex(m),
])
def test_ops_without_a_bfloat16_kernel_raise_as_pytorch(call):
    # fuzz seeds 65600043, 65600045, 65600058, 65600085 ... (60 of the first 2,000): tapegrad
    # computed on the float32 storage what PyTorch refuses for bfloat16
    def run(lib):
        m = lib.tensor([[2.0, 0.5], [0.5, 3.0]]).to(lib.bfloat16)
        v = lib.tensor([1.0, 2.0]).to(lib.bfloat16)
        try:
            call(lib, m, v)
        except Exception as e:  # noqa: BLE001
            return type(e), str(e)
        return None
    want, got = run(torch), run(tapegrad)
    assert want is not None and got is not None
    assert got[0] is want[0] and got[1] == want[1]


@pytest.mark.parametrize("call", [
    lambda L, m: L.linalg.svd(m), lambda L, m: L.linalg.cholesky(m), lambda L, m: L.det(m),
    lambda L, m: L.linalg.solve_ex(m, m), lambda L, m: L.linalg.eigh(m), lambda L, m: L.cdist(m, m),
    lambda L, m: L.linalg.inv(m), lambda L, m: L.linalg.qr(m),
])
def test_ops_without_a_bfloat16_kernel_on_empty_inputs_as_pytorch(call):
    # fuzz seeds 65601078, 65601808, 65601795: PyTorch reaches no kernel for empty inputs of
    # the LU, Cholesky, SVD, eigh and cdist ops (they run), but checks inv's and qr's dtype
    def run(lib):
        try:
            r = call(lib, lib.zeros(0, 0).to(lib.bfloat16))
        except Exception as e:  # noqa: BLE001
            return type(e), str(e)
        return "ran"
    want, got = run(torch), run(tapegrad)
    assert got == want


# -- autocast -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", ((3, 4), (4, 3))), ("ij,ij->i", ((3, 4), (3, 4))), ("i,i->", ((4,), (4,))),
    ("bij,bjk->bik", ((2, 3, 4), (2, 4, 3))), ("i,j->ij", ((4,), (3,))), ("ij->ji", ((3, 4),)),
    ("ij,kl->", ((3, 4), (4, 3))),
])
def test_einsum_under_autocast_contracts_in_the_lower_dtype_as_pytorch(dtype, equation, shapes):
    # fuzz seeds 65600068, 65600402: einsum's contraction is PyTorch's bmm, which autocast runs
    # in its dtype; tapegrad's stayed float32 (a pair with nothing to sum multiplies: float32)
    arrays = [A.reshape(-1)[:int(np.prod(s))].reshape(s) if int(np.prod(s)) <= A.size
              else np.resize(B, s) for s in shapes]

    def run(lib):
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        with lib.autocast("cpu", dtype=getattr(lib, dtype)):
            r = lib.einsum(equation, *xs)
        r.float().sum().backward()
        return _bits(r), [_bits(x.grad) for x in xs]
    (want, wd), wg = run(torch)
    (got, gd), gg = run(tapegrad)
    assert gd == wd
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-3)
    for (w, wdt), (g, gdt) in zip(wg, gg):
        assert gdt == wdt
        np.testing.assert_allclose(g, w, rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("call,rtol", [
    (lambda L, a, b: L.inner(a[0], b[:, 0]), 1e-6),          # fuzz seed 65600308: a dot
    (lambda L, a, b: L.tensordot(a, b.mT, 2), 1e-6),         # a full contraction
    (lambda L, a, b: L.tensordot(a[0], b[:, 0], 1), 1e-6),
    (lambda L, a, b: L.inner(a[:1, None], b.mT[:1, None]), 1e-6),     # fuzz seed 65602764
    # (computed in bfloat16, returned in float32; the two decompositions round differently)
    (lambda L, a, b: L.nn.functional.bilinear(a, a, b.reshape(3, 4, 1).expand(3, 4, 4)), 2e-2),
    (lambda L, a, b: L.inner(a, b.mT), 1e-2),                # (an mm: cast, in both)
    (lambda L, a, b: L.tensordot(a, b, 1), 1e-2),
])
def test_compositions_under_autocast_cast_only_where_pytorch_reaches_a_listed_op(call, rtol):
    # inner of vectors and a full tensordot are PyTorch's dot, bilinear its _trilinear: none is
    # on autocast's lists, so their results stay float32; tapegrad's mm inside cast them
    def run(lib):
        with lib.autocast("cpu", dtype=lib.bfloat16):
            return _bits(call(lib, lib.tensor(A), lib.tensor(B)))
    (want, wd), (got, gd) = run(torch), run(tapegrad)
    assert gd == wd
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-5)


def test_a_bfloat16_composition_under_bfloat16_autocast_runs():
    # fuzz seed 65600917: inner of bfloat16 tensors under autocast raised NotImplementedError
    # (its mm, run on the float32 storage, asked autocast for a bfloat16 cast of it)
    a = np.float32([[1.3, 2.7], [0.1, 0.2]])

    def run(lib):
        x = lib.tensor(a).to(lib.bfloat16)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            return [_bits(r) for r in (lib.inner(x, x), lib.tensordot(x, x, 1),
                                       lib.einsum("ij,jk->ik", x, x))]
    for (w, wd), (g, gd) in zip(run(torch), run(tapegrad)):
        assert gd == wd == "bfloat16"
        np.testing.assert_array_equal(g, w)


# -- the fuzzer's contexts ------------------------------------------------------------------------

def test_bfloat16_ulps_counts_units_of_the_last_place_across_zero():
    x = np.float32([1.0, -0.0, np.nan, 2.0])
    assert fuzz._bfloat16_ulps(x, x.copy()) == 0
    assert fuzz._bfloat16_ulps(np.float32([1.0]), np.float32([1.0078125])) == 1
    # the smallest bfloat16 of each sign are two units apart (through both zeros at 0)
    tiny = np.uint32([0x00010000]).view(np.float32)
    assert fuzz._bfloat16_ulps(tiny, -tiny) == 2
    assert fuzz._bfloat16_ulps(np.float32([np.nan]), np.float32([1.0])) == float("inf")


def test_lower_seeds_draw_no_context_and_the_new_ones_draw_each():
    assert all(fuzz.draw_context(s) is None for s in range(fuzz.CONTEXT_FROM - 50,
                                                           fuzz.CONTEXT_FROM))
    drawn = {fuzz.draw_context(s) for s in range(fuzz.CONTEXT_FROM, fuzz.CONTEXT_FROM + 200)}
    assert drawn == set(fuzz.CONTEXTS)


def test_a_function_mode_program_runs_and_prints_inside_its_mode():
    seed = next(s for s in range(fuzz.CONTEXT_FROM, fuzz.CONTEXT_FROM + 100)
                if fuzz.draw_context(s) == "function-mode")
    prog = fuzz.generate(seed)
    script = prog.script()
    assert "class PassThroughMode(torch.overrides.TorchFunctionMode):" in script
    assert "with PassThroughMode():" in script
    t_run = fuzz.execute(torch, prog)
    g_run = fuzz.execute(tapegrad, prog, live=t_run.live)
    assert fuzz.function_mode_check(prog, t_run, g_run) == []
