"""Regressions of the session-29 fuzz run of fuzz15 (programs 62700000-, 60670689-, the extended
generator's 65000000-; surface 60801443-).

Each test compares with PyTorch (the `torch` fixture skips cleanly without it).
"""
import numpy as np
import pytest

import tapegrad as tg


# -- grad_fn names of composites the generator never drew before ----------------------------------
# fmax / fmin (a where()), ldexp (a product with a power of two), frexp's mantissa (a product)
# and rsub of two tensors (a sub) showed their last internal op's node; PyTorch records one node
# named for the op.  The gradients were already PyTorch's: compared too.

_A = [[0.3, -1.2, float("nan")], [2.0, 0.5, -0.1]]
_B = [[0.1, -1.2, 0.9], [float("nan"), 0.25, -0.3]]

_CALLS = {
    "fmax": lambda L, a, b: L.fmax(a, b),
    "fmin": lambda L, a, b: L.fmin(a, b),
    "fmax_method": lambda L, a, b: a.fmax(b),
    "ldexp": lambda L, a, b: L.ldexp(a, L.tensor([1, 0, 3])),
    "ldexp_float_exponent": lambda L, a, b: L.ldexp(a, b.nan_to_num()),
    "frexp": lambda L, a, b: L.frexp(a)[0],
    "rsub": lambda L, a, b: L.rsub(a, b),
    "rsub_alpha": lambda L, a, b: L.rsub(a, b, alpha=2),
}


def _run(L, name, dtype):
    dtype = getattr(L, dtype)
    a = L.tensor(_A, dtype=dtype, requires_grad=True)
    b = L.tensor(_B, dtype=dtype, requires_grad=True)
    y = _CALLS[name](L, a, b)
    w = L.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=dtype)
    (y.nan_to_num() * w).sum().backward()
    grads = [None if t.grad is None else t.grad.numpy() for t in (a, b)]
    return type(y.grad_fn).__name__, y.detach().numpy(), grads


@pytest.mark.parametrize("name", sorted(_CALLS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_composite_grad_fn_names(torch, name, dtype):
    t_name, t_val, t_grads = _run(torch, name, dtype)
    g_name, g_val, g_grads = _run(tg, name, dtype)
    assert g_name == t_name
    np.testing.assert_array_equal(g_val, t_val)
    for g, t in zip(g_grads, t_grads):
        assert (g is None) == (t is None)
        if t is not None:
            np.testing.assert_allclose(g, t, rtol=1e-6, atol=0)


def test_ldexp_negative_integer_exponent_gradient_is_the_power(torch):
    # PyTorch's LdexpBackward0 takes 2 ** other in other's integer dtype, so a negative integer
    # exponent's gradient is 0 (torch: ldexp(x, tensor([-1])).backward() gives x.grad [0.]);
    # the derivative is 2 ** other (finite differences, and PyTorch's own gradient for a float
    # exponent): tapegrad keeps that.  docs/differences.md, session 29 (fuzz15).
    x = tg.tensor([2.0, 3.0, 5.0], dtype=tg.float64, requires_grad=True)
    e = tg.tensor([-1, -3, 2])
    tg.ldexp(x, e).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.5, 0.125, 4.0])
    tx = torch.tensor([2.0, 3.0, 5.0], dtype=torch.float64, requires_grad=True)
    torch.ldexp(tx, torch.tensor([-1.0, -3.0, 2.0], dtype=torch.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
