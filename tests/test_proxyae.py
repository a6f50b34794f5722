"""Gaps found by running numerical / scientific PyTorch scripts (PINNs, Hamiltonian networks,
Gaussian processes) unchanged under tapegrad (helper proxyae)."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

SPARSE_ONLY = ["values", "indices", "coalesce", "is_coalesced", "crow_indices", "col_indices",
               "ccol_indices", "row_indices"]


@pytest.mark.parametrize("name", SPARSE_ONLY)
def test_sparse_accessor_on_dense_tensor_raises_torchs_error(name):
    # ShotaDeguchi/PINN_Torch reads `torch.mean(x, dim=0).values` (never calls it): the attribute
    # must exist, and calling it on a dense tensor raises PyTorch's layout RuntimeError.
    with pytest.raises(RuntimeError) as expected:
        getattr(torch.ones(2), name)()
    assert callable(getattr(tg.ones(2), name))
    with pytest.raises(RuntimeError) as got:
        getattr(tg.ones(2), name)()
    assert str(got.value) == str(expected.value)


def test_dense_tensor_sparse_and_dense_dims():
    for shape in [(), (3,), (2, 3)]:
        t, g = torch.zeros(shape), tg.zeros(shape)
        assert (g.sparse_dim(), g.dense_dim()) == (t.sparse_dim(), t.dense_dim())


def test_sparse_tensor_keeps_its_own_accessors():
    a = np.array([[0., 2.], [3., 0.]])
    t, g = torch.tensor(a).to_sparse(), tg.tensor(a).to_sparse()
    np.testing.assert_array_equal(g.values().numpy(), t.values().numpy())
    np.testing.assert_array_equal(g.indices().numpy(), t.indices().numpy())
    assert g.is_coalesced() == t.is_coalesced()
    assert (g.sparse_dim(), g.dense_dim()) == (t.sparse_dim(), t.dense_dim())
