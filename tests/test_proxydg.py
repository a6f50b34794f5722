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


# -- vmap: linalg ops on the trailing matrix dims, vector norms, outer, normalize -------------

_MATS = (np.arange(36.0).reshape(4, 3, 3) / 10 + np.eye(3))
_VECS = np.arange(1.0, 13.0).reshape(4, 3) / 7
_W = np.array([[0.3, -1.0, 2.0], [1.0, 0.5, -0.2]])

_BATCHED_CASES = [
    ("det", lambda t, W: t.linalg.det, _MATS),
    ("det method", lambda t, W: (lambda m: m.det()), _MATS),
    ("inv", lambda t, W: t.linalg.inv, _MATS),
    ("inverse method", lambda t, W: (lambda m: m.inverse()), _MATS),
    ("slogdet", lambda t, W: (lambda m: t.linalg.slogdet(m)[1]), _MATS),
    ("logdet", lambda t, W: t.logdet, _MATS),
    ("cholesky", lambda t, W: (lambda m: t.linalg.cholesky(m @ m.mT + t.eye(3, dtype=m.dtype))), _MATS),
    ("eigvalsh", lambda t, W: (lambda m: t.linalg.eigvalsh(m + m.mT)), _MATS),
    ("matrix_exp", lambda t, W: (lambda m: t.linalg.matrix_exp(m * 0.1)), _MATS),
    ("norm", lambda t, W: (lambda v: v.norm()), _VECS),
    ("norm p=1", lambda t, W: (lambda v: v.norm(1)), _VECS),
    ("torch.norm p=3 dim=0", lambda t, W: (lambda v: t.norm(v, 3, 0)), _VECS),
    ("linalg.norm inf", lambda t, W: (lambda v: t.linalg.norm(v, float("inf"))), _VECS),
    ("linalg.norm of a matrix", lambda t, W: t.linalg.norm, _MATS),
    ("linalg.norm ord=2 of a matrix (spectral)", lambda t, W: (lambda m: t.linalg.norm(m, 2)), _MATS),
    ("torch.norm p=2 of a matrix (flattened)", lambda t, W: (lambda m: t.norm(m, 2)), _MATS),
    ("vector_norm dims keepdim", lambda t, W: (lambda m: t.linalg.vector_norm(m, 2, dim=(0, 1), keepdim=True)), _MATS),
    ("norm of a 0-d sample", lambda t, W: (lambda v: v.sum().norm(1)), _VECS),
    ("outer", lambda t, W: (lambda v: t.outer(v, v * 2)), _VECS),
    ("outer with an unbatched vector", lambda t, W: (lambda v: t.outer(W[0], v)), _VECS),
    ("normalize", lambda t, W: (lambda v: t.nn.functional.normalize(v, dim=0)), _VECS),
    ("normalize p=1", lambda t, W: (lambda m: t.nn.functional.normalize(m, p=1.0, dim=-1)), _MATS),
]


@pytest.mark.parametrize("name, make, data", _BATCHED_CASES, ids=[c[0] for c in _BATCHED_CASES])
def test_vmap_batched_rules_match_pytorch_values_gradients_and_grad_fn(name, make, data):
    torch = pytest.importorskip("torch")
    import tapegrad.func
    results = []
    for lib, vmap_fn in ((tg, tapegrad.func.vmap), (torch, torch.vmap)):
        x = lib.tensor(data, requires_grad=True)
        out = vmap_fn(make(lib, lib.tensor(_W)))(x)
        weights = lib.sin(lib.arange(out.numel(), dtype=out.dtype) + 1).reshape(out.shape)
        (grad,) = lib.autograd.grad((out * weights).sum(), x)
        results.append((out.detach().numpy(), grad.numpy(), type(out.grad_fn).__name__))
    (got, got_grad, got_fn), (want, want_grad, want_fn) = results
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-8, atol=1e-10)
    if want_fn != "StackBackward0" and "spectral" not in name and "flattened" not in name:
        assert got_fn == want_fn


def test_vmap_batched_rules_keep_pytorchs_errors():
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        vmap(tg.linalg.det)(tg.zeros(4, 3))
    with pytest.raises(RuntimeError, match="Expected 1-D argument"):
        vmap(tg.outer)(tg.zeros(2, 3, 3), tg.zeros(2, 3, 3))


def test_nested_vmap_outer_and_log_det_jacobian():
    torch = pytest.importorskip("torch")
    a, b = np.arange(6.0).reshape(2, 3), np.arange(9.0).reshape(3, 3) / 4
    got = vmap(vmap(tg.outer, in_dims=(0, None)), in_dims=(None, 0))(tg.tensor(a), tg.tensor(b))
    want = torch.vmap(torch.vmap(torch.outer, in_dims=(0, None)), in_dims=(None, 0))(torch.tensor(a), torch.tensor(b))
    np.testing.assert_allclose(got.numpy(), want.numpy())
    w = np.array([[0.3, -1.0], [1.0, 0.5]])
    for lib, vm, jr in ((tg, vmap, jacrev), (torch, torch.vmap, torch.func.jacrev)):
        W = lib.tensor(w)
        x = lib.tensor(a[:, :2], requires_grad=True)
        logdet = vm(lambda u: lib.linalg.slogdet(jr(lambda v: lib.tanh(W @ v) + v)(u))[1])(x)
        (g,) = lib.autograd.grad(logdet.sum(), x)
        if lib is tg:
            got_logdet, got_grad = logdet.detach().numpy(), g.numpy()
    np.testing.assert_allclose(got_logdet, logdet.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(got_grad, g.numpy(), rtol=1e-8)
