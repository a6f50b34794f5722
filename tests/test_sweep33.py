"""Regression tests from sweep33: PyTorch's old-style nn test tables (common_nn's module_tests,
get_new_module_tests(), criterion_tests) run against tapegrad with the same constructor args,
copied parameters and inputs."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _pair(arr, dtype_name):
    """The same values as a torch and a tapegrad leaf requiring grad."""
    t = torch.tensor(arr, dtype=getattr(torch, dtype_name), requires_grad=True)
    g = tapegrad.tensor(arr, dtype=getattr(tapegrad, dtype_name), requires_grad=True)
    return t, g


@pytest.mark.parametrize("mode", ["replicate", "reflect"])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_complex_pad_double_backward(mode, nd):
    # ReplicationPad3d_complex: create_graph through replicate/reflect padding of a complex input,
    # with an adjoint that does not itself require grad, raised NotImplementedError (the link to
    # the saved input was not marked complex-safe)
    rng = np.random.RandomState(nd)
    shape = (1, 2) + (4,) * nd
    arr = rng.randn(*shape) + 1j * rng.randn(*shape)
    w = rng.randn(*((1, 2) + (7,) * nd))
    res = []
    for lib, x in zip((torch, tapegrad), _pair(arr, "complex128")):
        y = lib.nn.functional.pad(x, (2, 1) * nd, mode=mode)
        s = (y.real * lib.tensor(w)).sum()
        g, = lib.autograd.grad(s, x, create_graph=True)
        assert g.requires_grad
        gg, = lib.autograd.grad((g.real * g.imag).sum(), x)
        g2, = lib.autograd.grad((y.abs() ** 2 * lib.tensor(w)).sum(), x, create_graph=True)
        gg2, = lib.autograd.grad((g2.real * g2.imag).sum(), x)
        res.append((g2.detach().numpy(), gg2.numpy()))
        res.append((g.detach().numpy(), gg.numpy()))
    for a, b in zip(res[:2], res[2:]):
        np.testing.assert_allclose(b[0], a[0], rtol=1e-12)
        np.testing.assert_allclose(b[1], a[1], rtol=1e-12, atol=1e-12)
