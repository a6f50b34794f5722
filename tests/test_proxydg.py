"""What the flow-matching / score-model / consistency-model proxy scripts found tapegrad doing
differently from PyTorch: vmap batching rules for trace and diagonal (the divergence of a vector
field by ``vmap(torch.trace)(vmap(jacrev(f))(x))``) ..."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.func import jacrev, vmap


# -- vmap: trace and diagonal run as one batched op -------------------------------------------

def test_vmap_trace_is_the_sum_of_each_samples_diagonal_with_its_gradient():
    torch = pytest.importorskip("torch")
    data = np.arange(18.0).reshape(2, 3, 3)
    J = tg.tensor(data, requires_grad=True)
    Jt = torch.tensor(data, requires_grad=True)
    out, out_t = vmap(tg.trace)(J), torch.vmap(torch.trace)(Jt)
    np.testing.assert_allclose(out.detach().numpy(), out_t.detach().numpy())
    assert type(out.grad_fn).__name__ == type(out_t.grad_fn).__name__ == "SumBackward1"
    (out * tg.tensor([1.0, 2.0], dtype=tg.float64)).sum().backward()
    (out_t * torch.tensor([1.0, 2.0], dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(J.grad.numpy(), Jt.grad.numpy())


@pytest.mark.parametrize("args, kwargs", [((), {}), ((1,), {}), ((0, 1, 0), {}),
                                          ((), {"offset": -1, "dim1": -1, "dim2": -2})])
def test_vmap_diagonal_takes_the_samples_dims(args, kwargs):
    torch = pytest.importorskip("torch")
    data = np.arange(2 * 3 * 4.0).reshape(2, 3, 4)
    got = vmap(lambda m: m.diagonal(*args, **kwargs))(tg.tensor(data))
    want = torch.vmap(lambda m: m.diagonal(*args, **kwargs))(torch.tensor(data))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    got_f = vmap(lambda m: tg.diagonal(m, *args, **kwargs))(tg.tensor(data))
    np.testing.assert_array_equal(got_f.numpy(), want.numpy())


def test_vmap_trace_of_a_non_matrix_sample_raises_pytorchs_error():
    with pytest.raises(RuntimeError, match="expected a matrix"):
        vmap(tg.trace)(tg.zeros(2, 3))


def test_divergence_by_vmap_jacrev_trace_matches_autograd():
    w = tg.tensor([[0.3, -0.2], [0.5, 0.1]], dtype=tg.float64)
    x = tg.tensor([[0.1, 0.2], [-0.4, 0.7], [1.0, -1.0]], dtype=tg.float64)
    field = lambda xi: tg.tanh(w @ xi)
    div = vmap(tg.trace)(vmap(jacrev(field))(x))
    xr = x.clone().requires_grad_(True)
    out = tg.tanh(xr @ w.T)
    by_loop = sum(tg.autograd.grad(out[:, i].sum(), xr, retain_graph=True)[0][:, i] for i in range(2))
    np.testing.assert_allclose(div.numpy(), by_loop.numpy(), rtol=1e-12)
