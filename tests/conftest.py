"""Shared test helpers: central finite differences and the optional PyTorch oracle."""
from __future__ import annotations

import os

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


def pytest_collection_modifyitems(config, items):
    """TAPEGRAD_TEST_SHARD="R/N" keeps the tests whose position in the collected order is in R
    (comma-separated residues) modulo N: "0,1/3" two thirds, "2/3" the rest.  CI runs the
    AddressSanitizer tests as two such shards, one on each core; interleaving by position
    spreads every file's (and every parametrized test's) cost over both."""
    spec = os.environ.get("TAPEGRAD_TEST_SHARD")
    if not spec:
        return
    try:
        residues, n = spec.split("/")
        n = int(n)
        keep = {int(r) for r in residues.split(",")}
        if n < 1 or not keep <= set(range(n)):
            raise ValueError
    except ValueError:
        raise pytest.UsageError(f"TAPEGRAD_TEST_SHARD={spec!r}: expected residues/N, "
                                f"e.g. 0,1/3") from None
    kept = [item for k, item in enumerate(items) if k % n in keep]
    config.hook.pytest_deselected(items=[item for k, item in enumerate(items)
                                         if k % n not in keep])
    items[:] = kept


@pytest.fixture
def gradcheck():
    return check_grads


@pytest.fixture
def torch():
    if _torch is None:
        pytest.skip("torch is not installed")
    return _torch
