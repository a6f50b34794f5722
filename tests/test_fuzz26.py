"""Regressions from fuzz26 (session 35): the function-transform mode of the differential fuzzer
(tools/fuzz_transforms.py, `tools/fuzz.py --kind transforms`), each finding as an explicit case
checked against PyTorch."""
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _both(run):
    """run(torch), run(tapegrad) (torch.func warns of deprecations of its own on some paths)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(torch), run(tapegrad)


def _same(t, g):
    if isinstance(t, (tuple, list)):
        assert len(t) == len(g)
        for a, b in zip(t, g):
            _same(a, b)
        return
    assert str(g.dtype) == str(t.dtype)
    assert tuple(g.shape) == tuple(t.shape)
    np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


X = np.array([0.7, -1.3, 2.1, -0.4], dtype="float64")
Y = np.array([1.5, -0.5, 0.25, -2.0], dtype="float64")

# functions that read their input's data: PyTorch's jacfwd batches only the tangents, so the
# primals stay plain tensors and these work (vmap itself refuses them)
DATA_DEPENDENT = {
    "item of the differentiated input": lambda L: (lambda x: x.sin() * x.sum().item()),
    "boolean mask of the input": lambda L: (lambda x: x[x > 0] ** 3),
    "mask, then a reduction": lambda L: (lambda x: (x[x > 0].exp() * x.cos().sum())),
    "Python bool of a comparison": lambda L: (lambda x: x * 2 if bool(x.sum() > 0) else x * 3),
}


@pytest.mark.parametrize("case", sorted(DATA_DEPENDENT))
def test_jacfwd_of_a_function_reading_its_inputs_data_as_pytorch(case):
    # before: RuntimeError "vmap: It looks like you're calling .item()" / "indexing with a
    # boolean mask" (tapegrad's jacfwd evaluated func on primals batched over the basis)
    def run(L):
        return L.func.jacfwd(DATA_DEPENDENT[case](L))(L.tensor(X))
    _same(*_both(run))


@pytest.mark.parametrize("case", sorted(DATA_DEPENDENT))
def test_hessian_of_a_function_reading_its_inputs_data_as_pytorch(case):
    # before: the same refusal in hessian = jacfwd(jacrev(f)) (the nested jacrev also batched
    # its primals over the basis)
    def run(L):
        f = DATA_DEPENDENT[case](L)
        return L.func.hessian(lambda x: (f(x) * 1.5).sum())(L.tensor(X))
    _same(*_both(run))


def test_jacfwd_with_argnums_reading_the_other_inputs_data_as_pytorch():
    def run(L):
        f = lambda x, y: x * (y > 0).to(x.dtype).sum().item() + y[y < 0].sum() * x.sin()
        return L.func.jacfwd(f, argnums=(0, 1))(L.tensor(X), L.tensor(Y))
    _same(*_both(run))


def test_jacfwd_of_masked_function_matches_finite_differences():
    f = lambda x: (x[x > 0] ** 3).sum() * x.sin()
    jac = tapegrad.func.jacfwd(f)(tapegrad.tensor(X)).numpy()
    eps = 1e-6
    fd = np.stack([(f(tapegrad.tensor(X + eps * e)).numpy() - f(tapegrad.tensor(X - eps * e))
                    .numpy()) / (2 * eps) for e in np.eye(len(X))], axis=1)
    np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn", ["jacfwd", "hessian"])
def test_jacobian_of_masked_function_computes_but_under_vmap_refuses_as_pytorch(fn):
    # the fallback computes only where the batch was jacfwd's own: under an outer vmap the
    # mask of a batched input has no batching rule, in both libraries
    f = lambda x: (x[x > 0] ** 3).sum()
    for L in (torch, tapegrad):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(L.func, fn)(f)(L.tensor(X))
            with pytest.raises(RuntimeError, match="boolean mask"):
                L.func.vmap(getattr(L.func, fn)(f))(L.tensor(np.stack([X, Y])))
