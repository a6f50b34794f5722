"""Reductions' dim=None / dim=() forms, checked against PyTorch (session 23's sweep of every
reduction over dims None, ints, tuples, (), lists and keepdim).

SILENT wrong results it found:
- nansum / nanmean(x, dim=None, keepdim=True) dropped every dim (shape ()) where PyTorch keeps
  each as a 1;
- linalg.vector_norm(x, dim=()) returned |x| elementwise: PyTorch's empty dim list is every dim.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(23)
SHAPES = [(2, 3, 4), (3,), (0, 3), ()]


def _pair(shape):
    a = RNG.standard_normal(shape)
    return tg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _same(got, want):
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", ["nansum", "nanmean"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_nan_reductions_keep_every_dim_with_dim_none(name, shape, keepdim):
    x, xt = _pair(shape)
    got = getattr(tg, name)(x, dim=None, keepdim=keepdim)
    want = getattr(torch, name)(xt, dim=None, keepdim=keepdim)
    _same(got, want)
    if x.numel():
        got.sum().backward()
        want.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("ord", [2, 1, 3, float("inf"), 0])
@pytest.mark.parametrize("dim", [(), []])
@pytest.mark.parametrize("keepdim", [False, True])
def test_vector_norm_of_an_empty_dim_list_is_of_every_element(shape, ord, dim, keepdim):
    x, xt = _pair(shape)
    if ord == float("inf") and x.numel() == 0:
        with pytest.raises(RuntimeError):
            torch.linalg.vector_norm(xt, ord, dim=dim, keepdim=keepdim)
        with pytest.raises(RuntimeError):
            tg.linalg.vector_norm(x, ord, dim=dim, keepdim=keepdim)
        return
    got = tg.linalg.vector_norm(x, ord, dim=dim, keepdim=keepdim)
    want = torch.linalg.vector_norm(xt, ord, dim=dim, keepdim=keepdim)
    _same(got, want)
    if want.requires_grad and x.numel():
        got.sum().backward()
        want.sum().backward()
        assert (x.grad is None) == (xt.grad is None)        # (ord 0: no gradient flows)
        if xt.grad is not None:
            np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_vector_norm_gradient_by_finite_differences(gradcheck):
    gradcheck(lambda t: tg.linalg.vector_norm(t, 3, dim=()), RNG.standard_normal((3, 4)))


# -- dtype= arguments (session 23's sweep of reductions by input dtype and dtype=) --------------

@pytest.mark.parametrize("in_dtype", ["float32", "float64", "int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("dtype", ["int32", "bool", "int64", "float64"])
@pytest.mark.parametrize("dim", [None, 1])
def test_prod_computes_in_the_dtype_asked(in_dtype, dtype, dim):
    # SILENT: prod(x, dtype=int32 or bool) returned int64 (numpy's multiply.reduce widens)
    a = np.array([[1.5, -2.25], [3.0, 0.5]]) if in_dtype.startswith("float") else \
        np.array([[1, 2], [3, 0]])
    args = () if dim is None else (dim,)
    got = tg.prod(tg.tensor(a, dtype=getattr(tg, in_dtype)), *args, dtype=getattr(tg, dtype))
    want = torch.prod(torch.tensor(a, dtype=getattr(torch, in_dtype)), *args,
                      dtype=getattr(torch, dtype))
    assert str(got.dtype) == str(want.dtype) and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("fn", ["norm", "vector_norm"])
@pytest.mark.parametrize("in_dtype,dtype", [("float64", "float32"), ("float32", "int64"),
                                            ("int64", "float64"), ("float32", "float64"),
                                            ("float32", "bool")])
def test_norm_dtype_is_checked_as_pytorch(fn, in_dtype, dtype):
    # norm(x64, dtype=float32) had narrowed and norm(x32, dtype=int64) truncated to an integer
    def run(lib):
        x = lib.tensor([[1.5, -2.25], [3.0, 0.5]]).to(getattr(lib, in_dtype))
        f = lib.norm if fn == "norm" else lib.linalg.vector_norm
        try:
            r = f(x, dtype=getattr(lib, dtype))
        except Exception as e:      # noqa: BLE001 - the outcome compared is the exception
            return type(e).__name__, str(e)
        return str(r.dtype), round(r.item(), 5)
    assert run(tg) == run(torch)
