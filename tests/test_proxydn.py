"""Inverse problems and proximal optimisation (ISTA/FISTA, ADMM, LISTA): behaviours their scripts
print, checked against PyTorch."""
import pytest

import tapegrad
import tapegrad.nn.functional as F


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(5,), (9,), (17,), (40,), (3, 7), (4, 8), (2, 3, 11)])
@pytest.mark.parametrize("view", ["plain", "transposed", "sliced", "strided"])
def test_softshrink_dead_zone_zero_sign_follows_torch(dtype, shape, view):
    """PyTorch's softshrink writes 0.0 from its SIMD lanes and x * 0 (-0.0 for a negative x) from
    its scalar tail: an ISTA iterate prints '0.0000' or '-0.0000' by position, not by sign."""
    torch = pytest.importorskip("torch")
    n = 1
    for s in shape:
        n *= s

    def pick(x):
        if view == "plain" or x.ndim < 2:
            return x
        if view == "transposed":
            return x.transpose(-1, -2)
        return x[..., :3] if view == "sliced" else x[..., ::2]

    ours = pick(-tapegrad.linspace(0.01, 0.2, n, dtype=getattr(tapegrad, dtype)).reshape(shape))
    theirs = pick(-torch.linspace(0.01, 0.2, n, dtype=getattr(torch, dtype)).reshape(shape))
    assert tapegrad.signbit(F.softshrink(ours, 0.5)).tolist() == \
        torch.signbit(torch.nn.functional.softshrink(theirs, 0.5)).tolist()


@pytest.mark.parametrize("n", [32769, 65541])
def test_softshrink_zero_sign_in_parallel_parts(n, torch_threads_as_ours):
    """Past GRAIN_SIZE elements each thread's part has its own scalar tail."""
    torch = torch_threads_as_ours
    ours = tapegrad.signbit(F.softshrink(-tapegrad.full((n,), 0.1), 0.5)).nonzero().flatten()
    theirs = torch.signbit(torch.nn.functional.softshrink(-torch.full((n,), 0.1), 0.5))
    assert ours.tolist() == theirs.nonzero().flatten().tolist()


def test_softshrink_values_and_gradient_unchanged():
    torch = pytest.importorskip("torch")
    values = [-1.0, -0.2, 0.3, 0.9, 0.5, -0.5]
    x = tapegrad.tensor(values, dtype=tapegrad.float64, requires_grad=True)
    t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    y, u = F.softshrink(x, 0.5), torch.nn.functional.softshrink(t, 0.5)
    y.backward(tapegrad.arange(6.0, dtype=tapegrad.float64))
    u.backward(torch.arange(6.0, dtype=torch.float64))
    assert y.tolist() == u.tolist()
    assert x.grad.tolist() == t.grad.tolist()
    assert type(y.grad_fn).__name__ == "SoftshrinkBackward0"
    assert tapegrad.autograd.gradcheck(lambda z: F.softshrink(z, 0.5),
                                       (tapegrad.tensor([-1.3, 0.7, 2.0], dtype=tapegrad.float64,
                                                        requires_grad=True),))


def test_fista_iterate_prints_as_torch():
    """The FISTA script's final iterate: its zeros print with PyTorch's signs."""
    torch = pytest.importorskip("torch")

    def run(lib):
        A = lib.cos(lib.arange(30 * 50, dtype=lib.float64).view(30, 50) * 0.13 + 0.4)
        A = A / A.norm(dim=0, keepdim=True)
        xs = lib.zeros(50, dtype=lib.float64)
        xs[::10] = lib.arange(1, 6, dtype=lib.float64)
        b = A @ xs
        L = lib.linalg.norm(A, ord=2) ** 2
        x = z = lib.zeros(50, dtype=lib.float64)
        shrink = F.softshrink if lib is tapegrad else torch.nn.functional.softshrink
        for _ in range(100):
            x_old = x
            x = shrink(z - A.t() @ (A @ z - b) / L, 0.01 / L.item())
            z = x + 0.5 * (x - x_old)
        return repr(lib.round(x[::10], decimals=3)).replace("tapegrad", "torch")

    assert run(tapegrad) == run(torch)
