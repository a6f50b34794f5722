"""Session 27's own fixes (leftovers of earlier sessions' notes), each checked against PyTorch
where it is installed."""
import numpy as np
import pytest

import tapegrad as tg


def outcome(fn, lib):
    """(values, dtype) of fn(lib), or the exception's type name and first words."""
    try:
        r = fn(lib)
    except Exception as e:                      # (compared by type and message start)
        return type(e).__name__, str(e).split("\n")[0][:60]
    return r.tolist(), str(r.dtype).replace("tapegrad", "torch")


# -- bitwise_and/or/xor take a Python number first ------------------------------------------------
# PyTorch's (Number self, Tensor other) overload; tapegrad refused it as a non-tensor input.

BITWISE_CASES = {
    "and int": lambda L: L.bitwise_and(2, L.tensor([3, 1])),
    "or bool": lambda L: L.bitwise_or(True, L.tensor([True, False])),
    "xor uint8": lambda L: L.bitwise_xor(2, L.tensor([3], dtype=L.uint8)),
    "and int8 wraps": lambda L: L.bitwise_and(-1, L.tensor([5, -3], dtype=L.int8)),
    "float number": lambda L: L.bitwise_and(2.5, L.tensor([3, 1])),
    "two numbers": lambda L: L.bitwise_and(2, 3),
    "list first": lambda L: L.bitwise_or([1], L.tensor([1])),
}


@pytest.mark.parametrize("case", sorted(BITWISE_CASES))
def test_bitwise_number_first(case):
    got = outcome(BITWISE_CASES[case], tg)
    if case == "and int":
        assert got == ([2, 0], "torch.int64")
    torch = pytest.importorskip("torch")
    assert got == outcome(BITWISE_CASES[case], torch)


# -- addcmul of three bool tensors ----------------------------------------------------------------
# PyTorch's kernel has no bool form; numpy computed True + True * True.

ADDCMUL_BOOL_CASES = {
    "all bool": lambda L: L.addcmul(L.tensor([True, False]), L.tensor([True, True]),
                                    L.tensor([True, False])),
    "in place": lambda L: L.tensor([True, False]).addcmul_(L.tensor([True, True]),
                                                           L.tensor([True, False])),
    "int input": lambda L: L.addcmul(L.tensor([1, 2]), L.tensor([True, False]),
                                     L.tensor([True, True])),
    "int tensor1": lambda L: L.addcmul(L.tensor([True, False]), L.tensor([1, 2]),
                                       L.tensor([True, True])),
    "float input": lambda L: L.addcmul(L.tensor([1.0, 0.5]), L.tensor([True, False]),
                                       L.tensor([True, True])),
}


@pytest.mark.parametrize("case", sorted(ADDCMUL_BOOL_CASES))
def test_addcmul_bool(case):
    got = outcome(ADDCMUL_BOOL_CASES[case], tg)
    if case in ("all bool", "in place"):
        assert got[0] == "NotImplementedError"
    torch = pytest.importorskip("torch")
    assert got == outcome(ADDCMUL_BOOL_CASES[case], torch)


# -- elu of float16 computes in float32 -----------------------------------------------------------
# alpha was cast to float16 (1e5 -> inf), so every negative element was -inf and its gradient inf;
# PyTorch computes alpha * expm1(x) and its gradient in float32 and rounds once.

@pytest.mark.parametrize("alpha", [1.0, 0.3, 1e5])
def test_elu_float16_in_float32(alpha):
    values = [-1.0, -2.0, 0.5, -0.01, 0.0, -20.0]

    def run(lib):
        x = lib.tensor(values, dtype=lib.float16, requires_grad=True)
        y = lib.nn.functional.elu(x, alpha=alpha)
        y.backward(lib.full_like(y, 3.0))
        z = x.detach().clone()
        lib.nn.functional.elu(z, alpha=alpha, inplace=True)
        return y.detach().numpy(), x.grad.numpy(), z.numpy()

    got = run(tg)
    expect = np.where(np.array(values) > 0, values, alpha * np.expm1(values))
    with np.errstate(over="ignore"):                  # (-86466 rounds to -inf in float16)
        np.testing.assert_allclose(got[0], expect.astype(np.float16), rtol=1e-3)
    if alpha == 1e5:
        assert np.isfinite(got[0][0]) and got[0][1] == -np.inf     # -63212 fits, -86466 not
    torch = pytest.importorskip("torch")
    for mine, theirs in zip(got, run(torch)):
        np.testing.assert_array_equal(mine, theirs)


# -- float16 activations with parameters compute in float32 --------------------------------------
# Composites (celu, selu, mish, hardsigmoid, softshrink) and the core's leaky_relu rounded each
# step to float16 or cast their parameter to it: celu(3, alpha=1e-5) was inf (x / alpha overflowed),
# leaky_relu's slope 1e5 was inf (0 * inf = NaN at 0), mish's gradient at 60000 was NaN.
# PyTorch computes each in float32 and rounds once (_half_precision.in_float32_if_half).

HALF_ACTIVATIONS = {
    "celu alpha 1e-5": lambda F, x: F.celu(x, alpha=1e-5),
    "celu alpha 1e5": lambda F, x: F.celu(x, alpha=1e5),
    "leaky_relu 1e5": lambda F, x: F.leaky_relu(x, 1e5),
    "leaky_relu 1e-9": lambda F, x: F.leaky_relu(x, 1e-9),
    "leaky_relu_ 0.2": lambda F, x: F.leaky_relu(x * 1, 0.2, inplace=True),
    "rrelu eval": lambda F, x: F.rrelu(x, 0.1, 0.3, training=False),
    "selu": lambda F, x: F.selu(x),
    "hardsigmoid": lambda F, x: F.hardsigmoid(x),
    "softshrink": lambda F, x: F.softshrink(x, 0.33333),
}


@pytest.mark.parametrize("case", sorted(HALF_ACTIVATIONS))
def test_half_activation_in_float32(case):
    values = [-1.0, -2.0, 0.5, -0.01, 0.0, -20.0, 3.0, 60000.0, -60000.0, 2.9, -3.1]

    def run(lib):
        x = lib.tensor(values, dtype=lib.float16, requires_grad=True)
        y = HALF_ACTIVATIONS[case](lib.nn.functional, x)
        y.backward(lib.full_like(y, 3.0))
        return y.detach().numpy(), x.grad.numpy(), type(y.grad_fn).__name__

    got = run(tg)
    if case == "celu alpha 1e-5":       # the positive part is x itself
        assert got[0][6] == 3.0 and got[0][7] == 60000.0
    torch = pytest.importorskip("torch")
    want = run(torch)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[2] == want[2]


def test_half_mish_gradient_of_large_inputs():
    x = tg.tensor([60000.0, 3.0, -2.0], dtype=tg.float16, requires_grad=True)
    tg.nn.functional.mish(x).sum().backward()
    assert np.isfinite(x.grad.numpy()).all()
    torch = pytest.importorskip("torch")
    xt = torch.tensor([60000.0, 3.0, -2.0], dtype=torch.float16, requires_grad=True)
    torch.nn.functional.mish(xt).sum().backward()
    np.testing.assert_allclose(x.grad.numpy().astype(np.float64), xt.grad.numpy(), rtol=2e-3)


# -- the optimizers' step-tensor check comes after the sparse-gradient refusal ---------------------
# proxyaf's check of a numeric state['step'] (A3C's pre-2.0 SharedAdam) read a parameter without
# state as its own step and refused a sparse one with the "API has changed" error, where PyTorch
# refuses the sparse gradient (found by the corpus' torch_optimizer_create_graph_steps).

@pytest.mark.parametrize("name", ["Adam", "RMSprop", "Adamax"])
def test_sparse_gradient_refused_before_step_check(name):
    def run(lib):
        param = lib.randn(1, 1).to_sparse().requires_grad_(True)
        optimizer = getattr(lib.optim, name)([param])
        optimizer.zero_grad()
        optimizer.step()
        param.grad = lib.randn(1, 1).to_sparse()
        return outcome(lambda L: optimizer.step() or L.zeros(1), lib)

    got = run(tg)
    torch = pytest.importorskip("torch")
    assert got == run(torch)


def test_numeric_step_state_still_refused():
    p = tg.zeros(2, requires_grad=True)
    optimizer = tg.optim.Adam([p])
    optimizer.state[p]["step"] = 0
    p.grad = tg.ones(2)
    with pytest.raises(RuntimeError, match="state_steps"):
        optimizer.step()
