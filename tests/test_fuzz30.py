"""Findings of differential fuzzing session 38 (tools/fuzz.py, new seeds), each against PyTorch."""
import numpy as np
import pytest

import tapegrad

INF = float("inf")


def _both(fn):
    torch = pytest.importorskip("torch")
    return fn(torch), fn(tapegrad)


def _values(t):
    t = t.detach()
    if t.is_conj():
        t = t.resolve_conj()
    return t.numpy()


def _same(t, g):
    np.testing.assert_allclose(g, t, rtol=1e-12, atol=1e-12, equal_nan=True)


# -- the complex product's gradient (fuzz 65400117) ----------------------------------------------
# PyTorch's prod_backward returns zeros for an input with two zeros or more (without multiplying
# the upstream gradient, which log10 of the product 0 makes infinite), and g * conj(out / z)
# for one without zeros; the complex path gave NaN in the first case and the exact product of
# the others (finite at an infinite element, where PyTorch's is NaN) in the second.

@pytest.mark.parametrize("values", [
    [[0, 2, 0], [1, 0, 3], [1, 2, 3]],              # several zeros
    [[0, 2, 1], [1, 5, 3], [1, 2, 3]],              # one zero
    [[2, INF, 3], [1, 4, 3], [1, 2, 3]],            # no zero, an infinite element
])
@pytest.mark.parametrize("how", ["all", "all_mT", "dim0", "dim1", "row"])
def test_complex_prod_grad_with_zeros_or_inf(values, how):
    def run(L):
        x = L.tensor(values, dtype=L.complex128, requires_grad=True)
        y = {"all": lambda x: x.prod(), "all_mT": lambda x: x.mT.prod(),
             "dim0": lambda x: x.prod(0), "dim1": lambda x: x.prod(1),
             "row": lambda x: x[0].prod()}[how](x)
        # an infinite upstream gradient (log of a zero product) and a finite one
        gi, = L.autograd.grad(y, x, L.full_like(y, INF), retain_graph=True)
        gf, = L.autograd.grad(y, x, L.ones_like(y) * (1 - 2j))
        return _values(gi), _values(gf)
    (ti, tf), (gi, gf) = _both(run)
    _same(ti, gi)
    _same(tf, gf)


def test_complex_prod_of_log10_program():
    """The fuzzer's program: the gradient of log10(prod(z)) with several zeros in z is 0."""
    def run(L):
        z = L.tensor([[1 - 0.5j, 0j], [0j, 2 + 1j]], dtype=L.complex128, requires_grad=True)
        L.log10(z.mT.prod()).real.backward()
        return _values(z.grad)
    t, g = _both(run)
    _same(t, g)
    assert np.isfinite(g).all()


# -- cumprod's second derivative with a zero and an infinite element (fuzz 61000311) -------------
# The double-backward form computed each position's products of the others as a running product
# through x_k replaced by 1, whose own backward divides by the outputs: NaN where an infinite
# element follows (PyTorch's composition, a product before k times the running products after
# k, gives the finite value).

@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("values,dim", [
    ([-0.4782543, 0.0, INF], 0),
    ([0.0, 1.5, -2.0, 0.5], 0),
    ([2.0, 0.0, 3.0, 0.0, 5.0], -1),
    ([[0.0, 2.0, 3.0], [1.0, 0.0, INF]], 0),
    ([[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]], -1),
])
def test_cumprod_double_backward_with_zeros(dtype, values, dim):
    def run(L):
        dt = getattr(L, dtype)
        x = L.tensor(values, dtype=dt, requires_grad=True)
        y = x.cumprod(dim)
        w = L.arange(y.numel(), dtype=L.float64).reshape(y.shape).sin().to(dt)
        g, = L.autograd.grad((y * w).real.sum(), x, create_graph=True)
        w2 = L.arange(y.numel(), dtype=L.float64).reshape(y.shape).cos().to(dt)
        g2, = L.autograd.grad((g * w2).real.sum(), x)
        return _values(g2)
    t, g = _both(run)
    _same(t, g)


def test_cumprod_double_backward_gradgradcheck():
    x = tapegrad.tensor([0.7, 0.0, -1.3, 0.0, 2.1], dtype=tapegrad.float64, requires_grad=True)
    assert tapegrad.autograd.gradgradcheck(lambda x: x.cumprod(0), (x,))
    z = tapegrad.tensor([[0.7 + 0.2j, 0j, -1.3j], [1 + 1j, 0.5 - 0.1j, 0j]], dtype=tapegrad.complex128,
                        requires_grad=True)
    assert tapegrad.autograd.gradgradcheck(lambda z: z.cumprod(1), (z,))


# -- vmap with randomness='same' / 'different' refuses data-dependent calls (fuzz transforms
# 2520, 2602, 2612) ---------------------------------------------------------------------------
# Those modes ran the function once per sample, where .item(), boolean masks and nonzero are
# plain calls, so tapegrad computed what PyTorch's vmap refuses; a function without random draws
# now runs batched in every mode (random ones still run per sample).

@pytest.mark.parametrize("randomness", ["error", "same", "different"])
@pytest.mark.parametrize("body", ["item", "mask", "nonzero"])
def test_vmap_randomness_modes_refuse_data_dependent_calls(randomness, body):
    torch = pytest.importorskip("torch")
    fn = {"item": lambda v: v * v.sum().item(), "mask": lambda v: v[v > 0],
          "nonzero": lambda v: v.nonzero()}[body]
    messages = []
    for L in (torch, tapegrad):
        x = L.tensor([[1.0, -2.0, 3.0], [0.5, 0.2, -1.0]])
        with pytest.raises(RuntimeError) as info:
            L.func.vmap(fn, randomness=randomness)(x)
        messages.append(str(info.value).split(".")[0])
    assert messages[0] == messages[1]


@pytest.mark.parametrize("randomness", ["same", "different"])
def test_vmap_randomness_modes_values(randomness):
    def run(L):
        x = L.tensor([[1.0, -2.0, 3.0], [0.5, 0.2, -1.0]])
        plain = L.func.vmap(lambda v: v.sin() * v.sum(), randomness=randomness)(x)
        L.manual_seed(0)
        drawn = L.func.vmap(lambda v: v * 0 + L.rand(()), randomness=randomness)(x)
        # 'same': one draw for every sample; 'different': one per sample
        return _values(plain), len(np.unique(_values(drawn)))
    (tp, tn), (gp, gn) = _both(run)
    _same(tp, gp)
    assert gn == tn


# -- index_put_ writing no element checks no index (fuzz 65500344) --------------------------------
# PyTorch checks an index as its kernel writes through it: with nothing to write (a (2, 0) self
# indexed on dim 0) an index out of range raises nothing, as x[key] reads nothing.

@pytest.mark.parametrize("index", [[-3], [5]])
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("inplace", [False, True])
def test_index_put_without_elements_skips_bounds(index, accumulate, inplace):
    def run(L):
        x = L.zeros(3, 0, requires_grad=True)
        v = L.tensor(2.0, requires_grad=True)
        y = (x * 1)[1:]
        key = (L.tensor(index),)
        y = y.index_put_(key, v, accumulate=accumulate) if inplace else \
            y.index_put(key, v, accumulate=accumulate)
        y.sum().backward()
        return tuple(y.shape), tuple(x.grad.shape), v.grad.item()
    t, g = _both(run)
    assert g == t


def test_index_put_into_dim_of_size_zero_still_refused():
    torch = pytest.importorskip("torch")
    for L in (torch, tapegrad):
        with pytest.raises(IndexError, match="out of bounds for dimension with size 0"):
            L.zeros(2, 0, 3).index_put((L.tensor([1]), L.tensor([0])), L.tensor(1.0))
        with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 2"):
            L.zeros(2, 3).index_put_((L.tensor([5]),), L.tensor(1.0))


def test_put_into_empty_tensor_message():
    torch = pytest.importorskip("torch")
    for L in (torch, tapegrad):
        with pytest.raises(IndexError, match=r"put_\(\): Tried to put elements into an empty"):
            L.zeros(2, 0).put_(L.tensor([0]), L.tensor([1.0]))
