"""Shared test helpers: central finite differences and the optional PyTorch oracle."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.testing import numeric_grad

try:  # PyTorch is an optional oracle; parity tests skip cleanly without it.
    import torch as _torch
except Exception:  # pragma: no cover - depends on the machine
    _torch = None


def check_grads(fn, *arrays, atol=1e-6, rtol=1e-5):
    """Compare tapegrad's gradient of sum(fn(*tensors)) with central differences, in float64."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    tensors = [tg.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*tensors)
    out.sum().backward()

    def scalar(*arrs):
        return float(fn(*[tg.tensor(a) for a in arrs]).sum().item())

    expected = numeric_grad(scalar, arrays)
    for t, e in zip(tensors, expected):
        assert t.grad is not None, "no gradient reached an input"
        assert t.grad.shape == t.shape
        np.testing.assert_allclose(t.grad.numpy(), e, atol=atol, rtol=rtol)


@pytest.fixture(autouse=True)
def fresh_once_warnings():
    """Each test sees PyTorch's once-per-process warnings (x.T of a 3-d tensor, complex cast to
    real) as a fresh process would: the core's record of those already shown is cleared."""
    tg._core.WARNED_ONCE.clear()


# PyTorch's default argument validation of torch.distributions as a fresh process has it
_TORCH_VALIDATES = None if _torch is None else _torch.distributions.Distribution._validate_args


@pytest.fixture(autouse=True)
def torch_validates_distribution_args():
    """PyTorch's first import of its dynamo (a torch.compile, and torch modules that import it)
    switches off torch.distributions' default argument validation for the whole process; each
    test gets it back, so a test's torch oracle does not depend on which tests ran before."""
    yield
    if _torch is not None:
        _torch.distributions.Distribution.set_default_validate_args(_TORCH_VALIDATES)


@pytest.fixture
def gradcheck():
    return check_grads


@pytest.fixture
def torch():
    if _torch is None:
        pytest.skip("torch is not installed")
    return _torch
