"""cat and stack: the dense fast paths (one dtype, C-contiguous, nothing to report) agree with
PyTorch as the general path does: values, dtype, layout, gradients and errors."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _pair(shape, dtype, seed, transpose=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    t, g = torch.tensor(a, requires_grad=True), tg.tensor(a, requires_grad=True)
    if transpose:
        return t, g, t.transpose(0, -1), g.transpose(0, -1)
    return t, g, t, g


CASES = [
    # (shapes, dtypes, dim, transposed members)
    ([(16,)] * 64, ["float32"] * 64, 0, ()),
    ([(3, 4)] * 5, ["float64"] * 5, 1, ()),
    ([(3, 4)] * 5, ["float64"] * 5, -1, ()),
    ([(2, 3, 4)] * 3, ["float32", "float64", "float32"], 0, ()),
    ([(4, 4)] * 3, ["float32"] * 3, 0, (1,)),
    ([(2, 3), (5, 3)], ["float32"] * 2, 0, ()),
    ([(0,), (3,), (0,)], ["float32"] * 3, 0, ()),
]


@pytest.mark.parametrize("shapes,dtypes,dim,transposed", CASES)
@pytest.mark.parametrize("op", ["cat", "stack"])
def test_join_matches_torch(op, shapes, dtypes, dim, transposed):
    if op == "stack" and len(set(shapes)) > 1:
        pytest.skip("stack needs equal shapes")
    pairs = [_pair(s, dt, j, j in transposed) for j, (s, dt) in enumerate(zip(shapes, dtypes))]
    t_out = getattr(torch, op)([p[2] for p in pairs], dim)
    g_out = getattr(tg, op)([p[3] for p in pairs], dim)
    assert str(g_out.dtype) == str(t_out.dtype)
    assert tuple(g_out.shape) == tuple(t_out.shape)
    assert g_out.is_contiguous() == t_out.is_contiguous()
    np.testing.assert_array_equal(g_out.detach().numpy(), t_out.detach().numpy())
    w = np.random.default_rng(99).standard_normal(tuple(t_out.shape)).astype(np.float64)
    (t_out * torch.tensor(w, dtype=t_out.dtype)).sum().backward()
    (g_out * tg.tensor(w, dtype=g_out.dtype)).sum().backward()
    for t, g, _, _ in pairs:
        assert str(g.grad.dtype) == str(t.grad.dtype)
        np.testing.assert_array_equal(g.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("make,dim", [
    (lambda m: [m.zeros(2, 3), m.zeros(2, 4)], 0),     # sizes off dim 0 differ
    (lambda m: [m.zeros(2, 3), m.zeros(3)], 0),        # ranks differ
    (lambda m: [m.zeros(2, 3), m.zeros(())], 0),       # a zero-dim member
    (lambda m: [m.zeros(()), m.zeros(2, 3)], 5),       # zero-dim first, dim out of range too
    (lambda m: [m.zeros(2, 3), m.zeros(2, 3)], 2),     # dim out of range
    (lambda m: [m.zeros(2, 3), m.zeros(2, 3)], -3),
])
def test_cat_errors_match_torch(make, dim):
    with pytest.raises(Exception) as te:
        torch.cat(make(torch), dim)
    with pytest.raises(type(te.value)) as ge:
        tg.cat(make(tg), dim)
    assert str(ge.value) == str(te.value)


# -- Tensor.unfold's gradient from its windows (no index arrays) -------------------------------

UNFOLD_CASES = [
    # (shape, dimension, size, step, layout)
    ((32, 256), 1, 8, 1, "dense"),          # many windows: one slice-add per place
    ((5, 7, 6), 1, 3, 2, "dense"),
    ((5, 7, 6), -1, 6, 1, "dense"),         # one window
    ((4, 20), 1, 15, 1, "dense"),           # fewer windows than places: one add per window
    ((4, 20), 1, 4, 7, "dense"),            # gaps between windows
    ((9, 4), 0, 3, 3, "transposed"),
    ((6, 5), 1, 2, 1, "expanded"),          # elements sharing memory: indices, not positions
    ((8,), 0, 0, 2, "dense"),               # empty windows
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,dimension,size,step,layout", UNFOLD_CASES)
def test_unfold_gradient_bits_match_torch(shape, dimension, size, step, layout, dtype):
    a = np.random.default_rng(7).standard_normal(shape).astype(dtype)
    leaves, outs = [], []
    for m in (torch, tg):
        x = m.tensor(a.T.copy() if layout == "transposed" else a, requires_grad=True)
        leaves.append(x)
        v = x.t() if layout == "transposed" else x
        if layout == "expanded":
            v = v[:1].expand(*shape)
        u = v.unfold(dimension, size, step)
        outs.append(u)
        w = np.random.default_rng(8).standard_normal(tuple(u.shape)).astype(dtype)
        (u * m.tensor(w)).sum().backward()
    assert tuple(outs[1].shape) == tuple(outs[0].shape)
    assert type(outs[1].grad_fn).__name__ == type(outs[0].grad_fn).__name__ == "UnfoldBackward0"
    np.testing.assert_array_equal(outs[1].detach().numpy(), outs[0].detach().numpy())
    np.testing.assert_array_equal(leaves[1].grad.numpy(), leaves[0].grad.numpy())


def test_unfold_second_order_matches_torch():
    a = np.random.default_rng(3).standard_normal((3, 10))
    res = []
    for m in (torch, tg):
        x = m.tensor(a, requires_grad=True)
        u = x.unfold(1, 4, 2)
        (g,) = m.autograd.grad((u ** 3).sum(), x, create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), x)
        res.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-12)


def test_unfold_of_a_zero_dim_tensor_matches_torch():
    res = []
    for m in (torch, tg):
        x = m.tensor(2.5, requires_grad=True)
        u = x.unfold(0, 1, 1)
        (u * 3).sum().backward()
        res.append((tuple(u.shape), x.grad.item()))
    assert res[1] == res[0]


# -- topk: small calls run PyTorch's selection on every row in C ---------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_topk_rows_in_c_match_torch(seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        m, n = int(rng.integers(1, 6)), int(rng.integers(1, 300))
        dtype = rng.choice(["float32", "float64", "int64", "int32", "float16"])
        a = rng.integers(-3, 4, (m, n)).astype(dtype)          # many ties
        if a.dtype.kind == "f":
            a[rng.random((m, n)) < 0.1] = np.nan
        dim = int(rng.integers(0, 2))
        k = int(rng.integers(0, a.shape[dim] + 1))
        largest, sorted_ = bool(rng.random() < 0.5), bool(rng.random() < 0.7)
        t = torch.tensor(a).topk(k, dim, largest, sorted_)
        g = tg.tensor(a).topk(k, dim, largest, sorted_)
        np.testing.assert_array_equal(g.indices.numpy(), t.indices.numpy())
        np.testing.assert_array_equal(g.values.numpy(), t.values.numpy())


@pytest.mark.parametrize("shape,k", [((300, 400), 3), ((2, 70000), 5), ((200, 400), 300)])
def test_topk_large_calls_match_torch(shape, k):
    a = np.random.default_rng(1).integers(0, 50, shape).astype(np.float32)   # ties everywhere
    for largest in (True, False):
        t = torch.tensor(a).topk(k, 1, largest)
        g = tg.tensor(a).topk(k, 1, largest)
        np.testing.assert_array_equal(g.indices.numpy(), t.indices.numpy())
