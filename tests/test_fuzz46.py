"""Regressions found by differential fuzzing (session fuzz46), each checked against PyTorch."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _hessian_sum(L, f, x):
    return float(L.autograd.functional.hessian(f(L), x).sum())


@pytest.mark.parametrize("value", [0.0, 1e-9, 0.1])
def test_matrix_exp_second_derivative_near_zero(value):
    # the gradient was the derivative of the Taylor polynomial the norm picked: at A = 0 the
    # degree is 1, so the gradient had no graph and the Hessian came out 0 (SILENT; fuzz
    # 67102064, through parametrizations.orthogonal's matrix_exp of a zero skew matrix)
    def f(L):
        return lambda a: L.linalg.matrix_exp(a).sum()
    got = _hessian_sum(tg, f, tg.full((2, 2), value, dtype=tg.float64))
    want = _hessian_sum(torch, f, torch.full((2, 2), value, dtype=torch.float64))
    assert got == pytest.approx(want, rel=1e-12)


def test_matrix_exp_gradients_of_every_order_match_torch():
    A = np.array([[0.1, -0.3], [0.7, 0.2]])
    W = np.array([[1.0, 2.0], [3.0, 4.0]])
    outs = []
    for L in (tg, torch):
        a = L.tensor(A, requires_grad=True)
        g, = L.autograd.grad((L.linalg.matrix_exp(a) * L.tensor(W)).sum(), a, create_graph=True)
        g2, = L.autograd.grad((g * g).sum(), a, create_graph=True)
        g3, = L.autograd.grad(g2.sum(), a)
        outs.append([t.detach().numpy() for t in (g, g2, g3)])
    for x, y in zip(*outs):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)


def test_matrix_exp_gradcheck_float64():
    a = tg.tensor([[0.3, -0.2, 0.1], [0.5, 0.1, -0.4], [0.0, 0.2, 0.6]], dtype=tg.float64,
                  requires_grad=True)
    assert tg.autograd.gradcheck(tg.linalg.matrix_exp, (a,))
    assert tg.autograd.gradgradcheck(tg.linalg.matrix_exp, (a,))


def test_orthogonal_parametrization_second_derivative():
    # the program fuzz 67102064 shrank to: orthogonal(Linear) starts at the zero skew matrix
    def run(L):
        x = L.tensor([[0.3, -0.2], [0.5, 0.1]])
        w = L.nn.Parameter(L.tensor([[-1.0, -2.3], [-0.57, 1.4]]))
        m = L.nn.Linear(2, 2, bias=False)
        m.weight = w
        L.nn.utils.parametrizations.orthogonal(m)
        g, = L.autograd.grad((m(x) * L.tensor([[1.0, 2.0], [3.0, 4.0]])).sum(), w,
                             create_graph=True)
        assert g.requires_grad
        g2, = L.autograd.grad((g * L.tensor([[0.5, -1.0], [2.0, 1.0]])).sum(), w)
        return g.detach().numpy(), g2.numpy()
    for x, y in zip(run(tg), run(torch)):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


_PRODUCTS = {
    "addmm": lambda L, a, b, c: L.addmm(L.ones(3, 1, dtype=a), L.ones(3, 1, dtype=b),
                                        L.ones(1, 1, dtype=c)),
    "addmm_": lambda L, a, b, c: L.ones(3, 1, dtype=a).addmm_(L.ones(3, 1, dtype=b),
                                                              L.ones(1, 1, dtype=c)),
    "addmv_": lambda L, a, b, c: L.ones(3, dtype=a).addmv_(L.ones(3, 1, dtype=b),
                                                           L.ones(1, dtype=c)),
    "baddbmm": lambda L, a, b, c: L.baddbmm(L.ones(1, 3, 1, dtype=a), L.ones(1, 3, 1, dtype=b),
                                            L.ones(1, 1, 1, dtype=c)),
    "addbmm": lambda L, a, b, c: L.addbmm(L.ones(3, 1, dtype=a), L.ones(1, 3, 1, dtype=b),
                                          L.ones(1, 1, 1, dtype=c)),
    "addbmm_": lambda L, a, b, c: L.ones(3, 1, dtype=a).addbmm_(L.ones(1, 3, 1, dtype=b),
                                                                L.ones(1, 1, 1, dtype=c)),
}


@pytest.mark.parametrize("op", sorted(_PRODUCTS))
@pytest.mark.parametrize("dtypes", [("float32", "bfloat16", "bfloat16"),
                                    ("bfloat16", "float32", "float32"),
                                    ("float32", "float32", "bfloat16"),
                                    ("float64", "float32", "float32"),
                                    ("float32", "float64", "float64"),
                                    ("float16", "float32", "float16")])
def test_products_refuse_operands_of_another_dtype(op, dtypes):
    # x.addmm_ / addmv_ / baddbmm_ / addbmm_ with bfloat16 operands ran on the float32 storage
    # (the checks read float32 there), and addbmm checked no dtype at all: a float64 input with
    # float32 batches gave a float64 result (fuzz 67101963); PyTorch refuses, in these words
    def outcome(L):
        try:
            _PRODUCTS[op](L, *(getattr(L, d) for d in dtypes))
        except RuntimeError as e:
            return str(e)
        return "ran"
    want = outcome(torch)
    assert want != "ran"
    assert outcome(tg) == want


_BF16_MIXED = {
    "vdot": lambda L, a, b: L.vdot(L.ones(3, dtype=a), L.ones(3, dtype=b)),
    "dot": lambda L, a, b: L.dot(L.ones(3, dtype=a), L.ones(3, dtype=b)),
    "linalg.cross": lambda L, a, b: L.linalg.cross(L.ones(3, dtype=a), L.ones(3, dtype=b)),
    "tensordot": lambda L, a, b: L.tensordot(L.ones(3, dtype=a), L.ones(3, dtype=b), 1),
    "einsum": lambda L, a, b: L.einsum("i,i->", L.ones(3, dtype=a), L.ones(3, dtype=b)),
    "prelu": lambda L, a, b: L.nn.functional.prelu(L.ones(2, 3, dtype=a), L.ones(3, dtype=b)),
    "nll_loss": lambda L, a, b: L.nn.functional.nll_loss(L.ones(2, 3, dtype=a), L.tensor([0, 1]),
                                                         weight=L.ones(3, dtype=b)),
    "histc": lambda L, a, b: L.histc(L.ones(3, dtype=a), out=L.ones(100, dtype=b)),
    "bilinear": lambda L, a, b: L.nn.functional.bilinear(L.ones(1, 3, dtype=a),
                                                         L.ones(1, 3, dtype=a),
                                                         L.ones(2, 3, 3, dtype=b)),
}


@pytest.mark.parametrize("op", sorted(_BF16_MIXED))
@pytest.mark.parametrize("first", ["float32", "bfloat16"])
def test_bfloat16_operand_of_ops_that_take_one_dtype(op, first):
    # the siblings of the products above: on the float32 storage these ran (vdot, cross,
    # tensordot, einsum, prelu, nll_loss's weight, histc's out) or refused in matmul's words
    second = "bfloat16" if first == "float32" else "float32"

    def outcome(L):
        try:
            _BF16_MIXED[op](L, getattr(L, first), getattr(L, second))
        except RuntimeError as e:
            return str(e)
        return "ran"
    want = outcome(torch)
    assert want != "ran"
    assert outcome(tg) == want


@pytest.mark.parametrize("dtype", ["uint8", "int32", "bool", "float16", "float32"])
@pytest.mark.parametrize("call", ["plain", "dx", "x", "x-bool"])
def test_trapezoid_over_zero_samples_keeps_the_dtype(dtype, call):
    # PyTorch returns zeros of y's dtype before it reads x or dx; tapegrad's were int64 for an
    # integer y (SILENT dtype; fuzz 67202689) and a bool y or x was refused
    def run(L):
        y = L.zeros(2, 0, dtype=getattr(L, dtype))
        x = {"x": L.zeros(0, dtype=L.float64), "x-bool": L.zeros(0, dtype=L.bool)}.get(call)
        r = L.trapezoid(y, dx=0.5) if call == "dx" else \
            L.trapezoid(y, x) if x is not None else L.trapezoid(y)
        return str(r.dtype), tuple(r.shape), r.requires_grad, r.tolist()
    assert run(tg) == run(torch)


@pytest.mark.parametrize("dim", [3, -4, (1, -2), (0, 3), (0, 0)])
def test_bfloat16_logsumexp_refuses_bad_dims(dim):
    # the bfloat16 logsumexp wrapped dims modulo the rank: dim 3 of a 3-d tensor reduced dim 0
    # (SILENT), a repeated dim was reduced once (fuzz 67202272, 67203131)
    def outcome(L):
        x = L.ones(2, 2, 3, dtype=L.bfloat16)
        try:
            return tuple(L.logsumexp(x, dim).shape)
        except (IndexError, RuntimeError) as e:
            return type(e).__name__, str(e)
    want = outcome(torch)
    assert isinstance(want[0], str)
    assert outcome(tg) == want


def test_bfloat16_heaviside_refuses_another_dtype():
    for first, second in (("bfloat16", "float32"), ("float32", "bfloat16")):
        for L in (tg, torch):
            a, b = L.ones(3, dtype=getattr(L, first)), L.ones(3, dtype=getattr(L, second))
            with pytest.raises(RuntimeError, match="heaviside is not yet implemented for "
                                                   "tensors with different dtypes"):
                a.heaviside_(b)
            with pytest.raises(RuntimeError, match="different dtypes"):
                L.heaviside(a, b)


@pytest.mark.parametrize("op", ["addmm_", "addmv_", "baddbmm_", "addbmm_"])
def test_bfloat16_in_place_products_of_a_self_that_requires_grad(op):
    # the dtype checks above read the float32 copy a recorded in-place op makes of self: all
    # bfloat16 operands were refused ("Float and BFloat16", fuzz 67300305)
    calls = {"addmm_": lambda L, s, m: s.addmm_(m(3, 2), m(2, 2), beta=0.5, alpha=2),
             "addmv_": lambda L, s, m: s[:, 0].addmv_(m(3, 2), m(2)),
             "baddbmm_": lambda L, s, m: s.unsqueeze(0).baddbmm_(m(1, 3, 2), m(1, 2, 2)),
             "addbmm_": lambda L, s, m: s.addbmm_(m(2, 3, 2), m(2, 2, 2))}

    def run(L):
        def m(*shape):
            return L.full(shape, 0.5).to(L.bfloat16)
        x = L.tensor([[0.25, -1.0], [2.0, 0.5], [-0.75, 1.5]]).to(L.bfloat16).requires_grad_()
        s = x * 1
        y = calls[op](L, s, m)
        (s * L.arange(6.0).reshape(3, 2).to(L.bfloat16)).sum().backward()
        return str(y.dtype), s.float().tolist(), x.grad.float().tolist()
    assert run(tg) == run(torch)


@pytest.mark.parametrize("shape", [(2, 0, 2), (0, 1, 2), (0, 2)])
@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention_of_an_empty_batch(shape, need_weights):
    # the output was reshaped to (tgt_len, bsz, -1): no -1 fits 0 elements (fuzz 67300104)
    def run(L):
        m = L.nn.MultiheadAttention(2, 1)
        with L.no_grad():
            for i, p in enumerate(m.parameters()):
                p.copy_(L.linspace(-1, 1, p.numel()).reshape(p.shape) * (i + 1))
        x = L.zeros(*shape, requires_grad=True)
        out, w = m(x, x, x, need_weights=need_weights)
        out.sum().backward()
        return tuple(out.shape), None if w is None else tuple(w.shape), tuple(x.grad.shape)
    assert run(tg) == run(torch)
