"""torch.special's names for ops tapegrad has under their top-level names: i0, polygamma,
multigammaln (mvlgamma), gammainc / gammaincc (igamma / igammac); values and gradients as
torch's (the incomplete gammas are differentiable only in `other`, as PyTorch's)."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

X = [0.5, 2.0, 3.5]
OTHER = [1.0, 2.0, 3.0]
CALLS = {
    "i0": lambda lib, x, o: lib.special.i0(x),
    "polygamma1": lambda lib, x, o: lib.special.polygamma(1, x),
    "polygamma0": lambda lib, x, o: lib.special.polygamma(0, x),
    "multigammaln": lambda lib, x, o: lib.special.multigammaln(x + 2, 2),
    "gammainc": lambda lib, x, o: lib.special.gammainc(x.detach(), o),
    "gammaincc": lambda lib, x, o: lib.special.gammaincc(x.detach(), o),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_special_alias_values_and_gradients(name):
    results = []
    for lib in (tg, torch):
        x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
        o = lib.tensor(OTHER, dtype=lib.float64, requires_grad=True)
        y = CALLS[name](lib, x, o)
        grads = lib.autograd.grad(y.sum(), [x, o], allow_unused=True)
        results.append([y.detach().numpy()] + [None if g is None else g.numpy() for g in grads])
    for a, b in zip(*results):
        if a is None or b is None:
            assert a is None and b is None
        else:
            # (PyTorch's trigamma is within 4e-10 of the true value, tapegrad's within 1e-13)
            np.testing.assert_allclose(a, b, rtol=1e-9)


def test_incomplete_gamma_input_derivative_is_not_implemented_as_torch():
    for lib in (tg, torch):
        x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
        with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input'"):
            lib.special.gammainc(x, lib.tensor(OTHER, dtype=lib.float64)).sum().backward()
