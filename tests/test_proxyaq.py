"""Regression tests for gaps found running signal/sequence, capsule, point-cloud and Bayesian
scripts (session 30, proxyaq)."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def test_sparse_module_exposes_the_package_as_torch():
    # Capsule-network scripts build one-hot targets through torch.sparse's own `import torch`.
    labels_t = torch.tensor([2, 0, 3])
    labels_g = tapegrad.tensor([2, 0, 3])
    want = torch.sparse.torch.eye(4).index_select(dim=0, index=labels_t)
    got = tapegrad.sparse.torch.eye(4).index_select(dim=0, index=labels_g)
    assert tapegrad.sparse.torch is tapegrad
    assert got.dtype == tapegrad.float32 and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
