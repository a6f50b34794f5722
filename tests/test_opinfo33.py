"""Faults found by replaying PyTorch's OpInfo samples with tools/opinfo_sweep.py (session 33);
each case is written out by hand and checked against torch."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _tg(t, requires_grad=False):
    out = tapegrad.tensor(t.detach().numpy().copy())
    return out.requires_grad_() if requires_grad else out


# -- sum_to_size(()) is a full sum(), even of a 0-d tensor (SILENT dtype) ---------------------

@pytest.mark.parametrize("value, dtype", [(True, "bool"), (7, "int64"), (2.5, "float32")])
@pytest.mark.parametrize("size", [(), []])
def test_sum_to_size_of_empty_size_sums(value, dtype, size):
    expected = torch.tensor(value, dtype=getattr(torch, dtype)).sum_to_size(size)
    got = tapegrad.tensor(value, dtype=getattr(tapegrad, dtype)).sum_to_size(size)
    assert str(got.dtype) == str(expected.dtype)
    assert got.item() == expected.item()


def test_sum_to_size_of_empty_size_records_a_sum():
    x = tapegrad.tensor(1.5, requires_grad=True)
    y = x.sum_to_size(())
    assert type(y.grad_fn).__name__ == type(torch.tensor(1.5, requires_grad=True)
                                            .sum_to_size(()).grad_fn).__name__ == "SumBackward0"
    y.backward()
    assert x.grad.item() == 1.0


# -- cov's divisor stays in the weights' dtype (SILENT: ~1e-5 relative off) -------------------

def _cov_case():
    x = torch.tensor([[3.25, -1.5, 7.0, 0.125, 9.5], [-2.0, 4.75, 1.25, 6.5, -3.0]],
                     dtype=torch.float64) * 10
    aw = torch.tensor([0.3, 2.7, 1.1, 0.05, 1.9], dtype=torch.float32)
    fw = torch.tensor([1, 3, 2, 1, 4])
    return x, aw, fw


@pytest.mark.parametrize("kw", [dict(aweights=True, correction=2),
                                dict(aweights=True, fweights=True, correction=3),
                                dict(aweights=True, correction=1),
                                dict(fweights=True, correction=0)])
def test_cov_float32_weights_of_float64_input(kw):
    x, aw, fw = _cov_case()
    targs = {k: (aw if k == "aweights" else fw if k == "fweights" else v) for k, v in kw.items()}
    expected = torch.cov(x, **targs)
    got = tapegrad.cov(_tg(x), **{k: (_tg(v) if isinstance(v, torch.Tensor) else v)
                                  for k, v in targs.items()})
    assert str(got.dtype) == str(expected.dtype)
    np.testing.assert_allclose(got.detach().numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)


def test_cov_float32_weights_gradient():
    x, aw, _ = _cov_case()
    xt = x.clone().requires_grad_()
    torch.cov(xt, aweights=aw, correction=2).sum().backward()
    xg = _tg(x, requires_grad=True)
    tapegrad.cov(xg, aweights=_tg(aw), correction=2).sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)


# -- quantile's linear interpolation is differentiable in q (SILENT: q.grad was None) --------

@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("dim", [None, 0, 1])
@pytest.mark.parametrize("interpolation", ["linear", "midpoint", "lower"])
def test_quantile_gradient_in_q(name, dim, interpolation):
    x = torch.tensor([[3.0, 1.0, float("nan"), 1.5, 9.0], [2.0, -1.0, 0.5, 7.0, 3.0]],
                     dtype=torch.float64)
    q = torch.tensor([0.3, 0.0, 1.0, 0.55], dtype=torch.float64)
    xt, qt = x.clone().requires_grad_(), q.clone().requires_grad_()
    out = getattr(torch, name)(xt, qt, dim=dim, interpolation=interpolation)
    w = torch.linspace(-1, 2, out.numel(), dtype=torch.float64).reshape(out.shape)
    (out * w).nansum().backward()
    xg, qg = _tg(x, True), _tg(q, True)
    got = getattr(tapegrad, name)(xg, qg, dim=dim, interpolation=interpolation)
    (got * _tg(w)).nansum().backward()
    np.testing.assert_allclose(got.detach().numpy(), out.detach().numpy(), equal_nan=True)
    want_q = np.zeros(4) if qt.grad is None else qt.grad.numpy()
    got_q = np.zeros(4) if qg.grad is None else qg.grad.numpy()
    np.testing.assert_allclose(got_q, want_q, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_quantile_q_gradient_finite_differences():
    x = tapegrad.tensor([[0.3, -1.2, 2.5, 0.9], [1.7, 0.1, -0.4, 3.3]], dtype=tapegrad.float64)
    q = tapegrad.tensor([0.2, 0.65], dtype=tapegrad.float64, requires_grad=True)
    assert tapegrad.autograd.gradcheck(lambda q: tapegrad.quantile(x, q, dim=1), (q,))


# -- local_response_norm of integers truncates the window mean as PyTorch's avg_pool does ----

@pytest.mark.parametrize("size, kw", [(2, dict(beta=0.5, k=1.25)), (3, dict(alpha=0.7)),
                                      (5, dict(alpha=0.3, beta=0.9, k=2.0))])
@pytest.mark.parametrize("four_d", [False, True])
def test_local_response_norm_of_int64(size, kw, four_d):
    x = torch.tensor([[[-8, 6, 9], [0, 0, 5], [5, 7, 6], [5, 1, -5], [2, -1, 8], [-4, 0, -6]]])
    if four_d:
        x = x.unsqueeze(-1).expand(*x.shape, 2) * 3
    expected = torch.nn.functional.local_response_norm(x, size, **kw)
    got = tapegrad.nn.functional.local_response_norm(_tg(x), size, **kw)
    assert str(got.dtype) == str(expected.dtype)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)


# -- searchsorted with an empty batch (a numpy reshape error leaked out) ------------------------

@pytest.mark.parametrize("seq, values", [((0, 0), (0, 0)), ((0, 0), (0, 3)), ((0, 3), (0, 2)),
                                         ((2, 0, 4), (2, 0, 1))])
def test_searchsorted_empty_batch(seq, values):
    expected = torch.searchsorted(torch.zeros(seq, dtype=torch.float64),
                                  torch.zeros(values, dtype=torch.float64), right=True)
    got = tapegrad.searchsorted(tapegrad.zeros(seq, dtype=tapegrad.float64),
                                tapegrad.zeros(values, dtype=tapegrad.float64), right=True)
    assert tuple(got.shape) == tuple(expected.shape) and str(got.dtype) == str(expected.dtype)


# -- gradient's spacing/dim length message when dim is given -----------------------------------

@pytest.mark.parametrize("spacing, dim", [([0.1], (1, 0)), ([0.1, 0.2], 0), ([1.0, 2.0], [0])])
def test_gradient_spacing_and_dim_lengths_message(spacing, dim):
    x = torch.arange(9.0).reshape(3, 3)
    with pytest.raises(RuntimeError) as expected:
        torch.gradient(x, spacing=spacing, dim=dim)
    with pytest.raises(RuntimeError) as got:
        tapegrad.gradient(_tg(x), spacing=spacing, dim=dim)
    assert str(got.value) == str(expected.value)
    assert "spacing and dim arguments to have the same length" in str(got.value)
