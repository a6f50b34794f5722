"""Sweep 16: float16 across the library, values and gradients bit for bit against PyTorch's CPU
kernels (where PyTorch computes in float32 and rounds once, rounds every step, or keeps a
statistic in float16, as measured for each)."""
import numpy as np
import pytest

import tapegrad as tg


def run(lib, fn, arrays):
    """fn's float16 result and the gradients of its inputs (adjoint 1 for a scalar, else a
    pattern of -0.75 / 0 / 0.75), as float16 lists (the exact values)."""
    xs = [lib.tensor(a, dtype=lib.float16, requires_grad=True) for a in arrays]
    out = fn(lib, *xs)
    g = (lib.ones_like(out) if out.dim() == 0 else
         ((lib.arange(out.numel()).reshape(out.shape) % 3 - 1).to(out.dtype) * 0.75))
    grads = lib.autograd.grad(out, xs, g)
    # (as text: NaN compares equal to NaN, and -0.0 differs from 0.0)
    return repr([out.detach().tolist()] + [gr.tolist() for gr in grads])


BIG = [60000., -65000., 300., -0.5, 1e-4, 70.]
MIX = [1.5, -2.25, 3.0, 0.1, -0.7, 5.5]
MID = [-20., 0.33, 7.0, 1000., -3.5, 0.125]
FLIP = BIG[::-1]
LONG_A = [v * (1 + i / 7) for i in range(11) for v in MID][:64]
LONG_B = [v * (1 - i / 9) for i in range(11) for v in MIX][:64]

CASES = {
    # SILENT: 2 * d of 60000 - 1.5 overflowed float16 in the gradient (inf where PyTorch's
    # (2 / 6) * d is 20000); PyTorch's mse kernels round every step in float16
    "mse mean": (lambda L, a, b: L.nn.functional.mse_loss(a, b), [BIG, MIX]),
    "mse sum": (lambda L, a, b: L.nn.functional.mse_loss(a, b, reduction="sum"), [MIX, FLIP]),
    "mse none": (lambda L, a, b: L.nn.functional.mse_loss(a, b, reduction="none"), [MID, FLIP]),
    # SILENT: smooth_l1's 0.5 d^2 / beta overflowed float16 before the division (inf where
    # PyTorch's is 20672); its backward computes in float32
    "smooth_l1 beta 1000": (lambda L, a, b: L.nn.functional.smooth_l1_loss(a, b, beta=1000.),
                            [BIG, MIX]),
    "smooth_l1 none beta 1e-5": (lambda L, a, b: L.nn.functional.smooth_l1_loss(
        a, b, beta=1e-5, reduction="none"), [MIX, MID]),
    # SILENT: huber's value computed in float16 steps was inf where PyTorch's float32 is 44096,
    # and several ulps off at small delta; its backward rounds every step in float16
    "huber none delta 1000": (lambda L, a, b: L.nn.functional.huber_loss(
        a, b, reduction="none", delta=1000.), [BIG, MIX]),
    "huber delta 1e-5": (lambda L, a, b: L.nn.functional.huber_loss(a, b, delta=1e-5),
                         [BIG, FLIP]),
    "huber delta 0.1": (lambda L, a, b: L.nn.functional.huber_loss(a, b, delta=0.1), [MID, MIX]),
    "l1": (lambda L, a, b: L.nn.functional.l1_loss(a, b), [BIG, MIX]),
    # add/sub's alpha: a + alpha * b rounded once, alpha first converted to float16 (1e-9 is
    # 0), as PyTorch's vectorised kernel (64 elements: whole vectors for any of its widths; its
    # scalar loop, for a tail shorter than a vector, rounds alpha * b first, as tapegrad did)
    "add alpha": (lambda L, a, b: L.add(a, b, alpha=0.33333), [LONG_A, LONG_B]),
    "add alpha negative": (lambda L, a, b: L.add(a, b, alpha=-1.7), [LONG_A, LONG_B]),
    "add alpha tiny": (lambda L, a, b: L.add(a, b, alpha=1e-9), [LONG_A, LONG_B]),
    "sub alpha": (lambda L, a, b: L.sub(a, b, alpha=0.1), [LONG_B, LONG_A]),
    "add_ alpha": (lambda L, a, b: (a * 1).add_(b, alpha=0.37), [LONG_A, LONG_B]),
    "sub_ alpha": (lambda L, a, b: (a * 1).sub_(b, alpha=1e-3), [LONG_A, LONG_B]),
    # log_softmax over the last dim keeps each row's sum of exponentials and its log in float16
    "log_softmax last dim": (lambda L, a: L.log_softmax(a.reshape(2, 3), -1), [MID]),
    "log_softmax last dim mix": (lambda L, a: L.log_softmax(a.reshape(3, 2), 1), [MIX]),
    "log_softmax dim 0": (lambda L, a: L.log_softmax(a.reshape(2, 3), 0), [MID]),
    "cross_entropy smoothing": (lambda L, a: L.nn.functional.cross_entropy(
        a.reshape(2, 3), L.tensor([0, 2]), label_smoothing=0.1), [MIX]),
    # layer_norm's backward reads the mean and rstd PyTorch keeps in float16
    "layer_norm": (lambda L, a: L.nn.functional.layer_norm(a.reshape(2, 3), (3,)), [BIG]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_float16_against_torch(case):
    fn, arrays = CASES[case]
    got = run(tg, fn, arrays)
    torch = pytest.importorskip("torch")
    assert got == run(torch, fn, arrays)


def test_mse_gradient_finite_without_torch():
    # (the value PyTorch gives, checked without it: (2 / 6 in float16) * 59998.5, rounded)
    x = tg.tensor(BIG, dtype=tg.float16, requires_grad=True)
    tg.nn.functional.mse_loss(x, tg.tensor(MIX, dtype=tg.float16)).backward()
    assert x.grad.tolist()[:2] == [20000.0, -21664.0]


def test_add_alpha_rounds_once_without_torch():
    x = tg.full((64,), -20., dtype=tg.float16)
    assert tg.add(x, x, alpha=0.33333).tolist() == [-26.671875] * 64


def test_cross_entropy_class_weights_with_smoothing_float16():
    # raised TypeError (the smoothing term's weight sum had no float16 form)
    fn = lambda L, a: L.nn.functional.cross_entropy(
        a.reshape(2, 3), L.tensor([0, 2]), weight=L.tensor([1., 2., .5], dtype=L.float16),
        label_smoothing=0.1)
    got = run(tg, fn, [MIX])
    torch = pytest.importorskip("torch")
    assert got == run(torch, fn, [MIX])


@pytest.mark.parametrize("kind", ["mse", "smooth_l1", "huber"])
def test_float64_pointwise_losses_unchanged(kind, gradcheck):
    fn = {"mse": lambda a, b: tg.nn.functional.mse_loss(a, b),
          "smooth_l1": lambda a, b: tg.nn.functional.smooth_l1_loss(a, b, beta=0.5),
          "huber": lambda a, b: tg.nn.functional.huber_loss(a, b, delta=0.5)}[kind]
    rng = np.random.default_rng(0)
    gradcheck(fn, rng.normal(size=5), rng.normal(size=5))


@pytest.mark.parametrize("values", [[0., 0., 0.], BIG, MID])
def test_normalize_float16_rounds_its_norm(values):
    # PyTorch's composite divides by the float16 norm (a zero row: 0 / 0, NaN; BIG's norm is
    # inf in float16: zeros); tapegrad divided by the float32 norm
    got = repr(tg.nn.functional.normalize(tg.tensor(values, dtype=tg.float16), dim=0).tolist())
    torch = pytest.importorskip("torch")
    assert got == repr(torch.nn.functional.normalize(
        torch.tensor(values, dtype=torch.float16), dim=0).tolist())


def _batch_norm_case(lib, training):
    rng = np.random.default_rng(0)
    C = 7
    x = (rng.standard_normal((4, C, 3)) * rng.choice([1e-3, 1, 30, 300], (1, C, 1))
         + rng.choice([0, 100, 1000], (1, C, 1))).astype(np.float16)
    w, b = rng.standard_normal(C).astype(np.float16), rng.standard_normal(C).astype(np.float16)
    g = rng.standard_normal(x.shape).astype(np.float16)
    X, W, B = (lib.tensor(v, requires_grad=True) for v in (x, w, b))
    rm, rv = lib.zeros(C, dtype=lib.float16), lib.ones(C, dtype=lib.float16)
    y = lib.nn.functional.batch_norm(X, rm, rv, W, B, training=training, momentum=0.3)
    gx, = lib.autograd.grad(y, [X], lib.tensor(g))
    return repr([y.tolist(), gx.tolist(), rm.tolist(), rv.tolist()])


def test_batch_norm_float16_training_uses_float16_statistics():
    # PyTorch keeps the batch mean and invstd of a float16 input in float16 and forms the
    # output and the gradient from them (values near cancellation were thousands of ulps off)
    got = _batch_norm_case(tg, True)
    torch = pytest.importorskip("torch")
    assert got == _batch_norm_case(torch, True)


@pytest.mark.parametrize("op", ["tanh", "sigmoid"])   # (sigmoid: float16 steps)
def test_tanh_sigmoid_backward_float16_in_float32(op):
    values = [1.5, -2.25, 3.0, 0.1, -0.7, 5.5, 0.9, -1.3, 2.2]
    fn = lambda L, a: getattr(L, op)(a)
    got = run(tg, fn, [values])
    torch = pytest.importorskip("torch")
    assert got == run(torch, fn, [values])


TINY = [6e-5, -6.1e-5, 1e-7, 3e-5, 0., 2e-4]


@pytest.mark.parametrize("form", ["method", "function"])
def test_norm_backward_float16_tiny_norm_is_finite(form):
    # SILENT: grad / norm overflowed float16 for a norm below 1e-4 (-inf, NaN); PyTorch's
    # grad * (x / norm) is finite
    fn = ((lambda L, a: a.reshape(2, 3).norm(2, 0, keepdim=True)) if form == "method" else
          (lambda L, a: L.norm(a.reshape(2, 3), dim=0)))
    got = run(tg, fn, [TINY])
    assert "inf" not in got and "nan" not in got
    torch = pytest.importorskip("torch")
    assert got == run(torch, fn, [TINY])


@pytest.mark.parametrize("x1,x2", [(BIG, MID), (MID, MIX), ([0., 0., 0., 1., 2., 3.], MIX)])
@pytest.mark.parametrize("dim", [0, 1])
def test_cosine_similarity_float16_values_as_pytorch(x1, x2, dim):
    # PyTorch divides by float16 norms: a row of norm beyond 65504 gives 0, a zero row NaN
    fn = lambda L, a, b: L.nn.functional.cosine_similarity(a.reshape(2, 3), b.reshape(2, 3), dim)
    got = repr(fn(tg, tg.tensor(x1, dtype=tg.float16), tg.tensor(x2, dtype=tg.float16)).tolist())
    torch = pytest.importorskip("torch")
    assert got == repr(fn(torch, torch.tensor(x1, dtype=torch.float16),
                          torch.tensor(x2, dtype=torch.float16)).tolist())


@pytest.mark.parametrize("q,kv", [(BIG, MIX), (MIX, MID)])
def test_sdpa_float16_in_float32_as_pytorch_math_kernel(q, kv):
    # SILENT: float16 scores of 60000 * 1.5 were inf and the output NaN; PyTorch's CPU kernel
    # computes float16 in float32 and casts back (its node is ToCopyBackward0)
    fn = lambda L, a, b: L.nn.functional.scaled_dot_product_attention(
        a.reshape(1, 2, 3), b.reshape(1, 2, 3), b.reshape(1, 2, 3))
    got = run(tg, fn, [q, kv])
    assert "nan" not in got
    torch = pytest.importorskip("torch")
    assert got == run(torch, fn, [q, kv])
