"""Faults found by replaying PyTorch's OptimizerInfo samples (optim_db) and its LR schedulers
against tapegrad (sweep 21); each case is written out explicitly and checked against torch (no
torch.testing._internal needed)."""
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _run(lib, cls_name, values, grads, sparse=False, **kwargs):
    """Parameters after len(grads) steps of lib.optim.<cls_name> (kwargs given as numbers or
    ('tensor', value) for a 0-d float32 tensor)."""
    kw = {k: (lib.tensor(v[1]) if isinstance(v, tuple) and v[0] == "tensor" else v)
          for k, v in kwargs.items()}
    params = [lib.nn.Parameter(lib.tensor(v.copy())) for v in values]
    opt = getattr(lib.optim, cls_name)(params, **kw)
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            g = lib.tensor(g.copy())
            p.grad = g.to_sparse() if sparse else g
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # torch's sparse-invariant-check notice
            opt.step()
    return [p.detach().numpy().copy() for p in params]


def _stream(shapes, steps, dtype, seed=0):
    rng = np.random.default_rng(seed)
    values = [rng.standard_normal(s).astype(dtype) for s in shapes]
    grads = [[rng.standard_normal(s).astype(dtype) for s in shapes] for _ in range(steps)]
    return values, grads


# -- sparse gradients with one index per dimension (Tensor.to_sparse() of a matrix) -----------
# SparseAdam and Adagrad indexed the state with the first index row only: a 2-D gradient from
# to_sparse() (sparse_dim 2) raised a numpy broadcasting error; PyTorch updates its elements.

@pytest.mark.parametrize("cls_name, kwargs", [("SparseAdam", {}), ("SparseAdam", {"lr": 0.01}),
                                              ("SparseAdam", {"maximize": True}),
                                              ("Adagrad", {}), ("Adagrad", {"lr_decay": 0.5})])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_grads_with_an_index_per_dimension(cls_name, kwargs, dtype):
    values, grads = _stream([(3, 4), (4,)], 4, dtype)
    for step_grads in grads:
        step_grads[0][1] = 0        # a row without entries: left alone by both
    want = _run(torch, cls_name, values, grads, sparse=True, **kwargs)
    got = _run(tapegrad, cls_name, values, grads, sparse=True, **kwargs)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-6 if dtype == np.float32 else 1e-12, atol=0)
    assert np.array_equal(got[0][1], values[0][1])
