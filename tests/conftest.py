"""Shared test helpers: central finite differences, the optional PyTorch oracle, and the
comparison of PyTorch's last bits where those depend on the CPU."""
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


class TorchBits:
    """PyTorch's CPU results for some calls differ in the last bit from one x86 CPU to another:
    its BLAS/LAPACK (MKL) and some of its vector kernels take vendor-specific paths. An Intel Xeon
    and an AMD EPYC, both AVX-512, gave different bits for small LU factorisations, triangular
    solves, float32 matrix products, float32 atan and complex optimizer steps. tapegrad reproduces
    the bits PyTorch computes on Intel CPUs, where the bit-for-bit tests were written: they
    assert equal bits there and agreement within a few units in the last place elsewhere."""

    reproducible = tg.backends.cpu._is_intel()

    def assert_equal(self, ours, theirs, eps_multiple: int = 64, scale=None) -> None:
        """Equal bits on an Intel CPU; elsewhere within eps_multiple machine epsilons of scale
        (by default the largest value: a factorisation's small entries come from cancellations,
        so their relative error is no measure)."""
        ours, theirs = np.asarray(ours), np.asarray(theirs)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        if self.reproducible:
            np.testing.assert_array_equal(ours, theirs)
            assert (np.signbit(ours) == np.signbit(theirs)).all(), "a zero's sign differs"
            return
        tol = eps_multiple * np.finfo(ours.dtype).eps
        if scale is None:
            scale = float(np.max(np.abs(theirs), initial=0.0))
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol * scale)


@pytest.fixture
def torch_bits():
    """The comparison of PyTorch's CPU-dependent last bits (TorchBits)."""
    return TorchBits()


@pytest.fixture
def gradcheck():
    return check_grads


@pytest.fixture
def torch():
    if _torch is None:
        pytest.skip("torch is not installed")
    return _torch


@pytest.fixture
def torch_threads_as_ours():
    """PyTorch's thread count set to the one tapegrad's chunked reductions split by (its default
    kernel threads) for the test: PyTorch splits a long reduction into one part per thread, and
    another test of the suite may have left it at another count (CI: 1)."""
    if _torch is None:
        pytest.skip("torch is not installed")
    before = _torch.get_num_threads()
    _torch.set_num_threads(tg._core._default_kernel_threads())
    yield _torch
    _torch.set_num_threads(before)
