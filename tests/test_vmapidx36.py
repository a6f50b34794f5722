"""vmap's batching rule for indexing with batched index tensors (x[batched], x[:, batched],
chained x[i][i + 1], batched x with unbatched or batched indices, masks, nested levels, in_dims /
out_dims, writes and PyTorch's refusals, gradients through it), and flex_attention's mods with
PyTorch's per-element (vmapped) semantics for chained indexing of a captured table."""
import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _both(build):
    """build(T) -> a zero-argument callable, for torch and tapegrad: their results (tuples of
    arrays with shapes and dtypes) or (exception type name, message)."""
    out = []
    for T in (torch, tg):
        try:
            r = build(T)()
            rs = r if isinstance(r, tuple) else (r,)
            out.append([(tuple(t.shape), str(t.dtype).split(".")[-1], t.detach().numpy())
                        for t in rs])
        except Exception as e:      # noqa: BLE001 - compared below
            out.append((type(e).__name__, str(e)))
    return out


def _same(build, rtol=1e-6):
    t, g = _both(build)
    assert type(t) is type(g), (t, g)
    if isinstance(t, tuple):
        assert t[0] == g[0], (t, g)
        return t
    assert len(t) == len(g)
    for (ts, td, tv), (gs, gd, gv) in zip(t, g):
        assert ts == gs and td == gd, (ts, td, gs, gd)
        np.testing.assert_allclose(gv, tv, rtol=rtol, atol=1e-12)
    return t


def _data(T):
    return dict(table=T.arange(12.).reshape(3, 4), vec=T.arange(5.), idx=T.tensor([0, 2, 1]),
                x3=T.arange(60.).reshape(3, 4, 5), i2=T.tensor([[0, 1], [2, 3], [1, 1]]))


CASES = {
    "vec[i]": lambda T, d: lambda: T.func.vmap(lambda i: d["vec"][i])(d["idx"]),
    "table[i]": lambda T, d: lambda: T.func.vmap(lambda i: d["table"][i])(d["idx"]),
    "chained": lambda T, d: lambda: T.func.vmap(lambda i: d["table"][i][i + 1])(d["idx"]),
    "pair": lambda T, d: lambda: T.func.vmap(lambda i: d["table"][i, i + 1])(d["idx"]),
    "column": lambda T, d: lambda: T.func.vmap(lambda i: d["table"][:, i])(T.tensor([1, 3])),
    "after slice": lambda T, d: lambda: T.func.vmap(lambda i: d["x3"][:, i])(d["i2"]),
    "last dim": lambda T, d: lambda: T.func.vmap(lambda i: d["x3"][:, :, i])(d["i2"]),
    "separated": lambda T, d: lambda: T.func.vmap(lambda i: d["x3"][i % 3, :, i])(d["i2"]),
    "int between": lambda T, d: lambda: T.func.vmap(lambda i: d["x3"][i % 3, 0, i])(d["i2"]),
    "int first": lambda T, d: lambda: T.func.vmap(lambda i: d["x3"][0, i, i])(d["i2"]),
    "None and ellipsis": lambda T, d: lambda: T.func.vmap(
        lambda i: d["x3"][None, i % 3, ..., i])(d["i2"]),
    "ellipsis": lambda T, d: lambda: T.func.vmap(lambda i: d["x3"][..., i])(d["i2"]),
    "slice then None": lambda T, d: lambda: T.func.vmap(lambda i: d["x3"][1:, i, None])(d["i2"]),
    "None between": lambda T, d: lambda: T.func.vmap(lambda i: d["x3"][i % 3, None, i])(d["i2"]),
    "list and batched": lambda T, d: lambda: T.func.vmap(lambda i: d["x3"][[0, 2], i])(d["i2"]),
    "2-d sample index": lambda T, d: lambda: T.func.vmap(lambda i: d["table"][i, 1:])(
        T.tensor([[[0, 1], [2, 2]], [[1, 1], [0, 0]]])),
    "int32 index": lambda T, d: lambda: T.func.vmap(lambda i: d["table"][i, i])(
        T.tensor([0, 2], dtype=T.int32)),
    "negative": lambda T, d: lambda: T.func.vmap(lambda i: d["vec"][i])(T.tensor([-1, -5])),
    "batched x and index": lambda T, d: lambda: T.func.vmap(lambda r, i: r[:, i])(d["x3"],
                                                                                  d["i2"]),
    "batched x, index after int": lambda T, d: lambda: T.func.vmap(
        lambda r: r[1, T.tensor([0, 4])])(d["x3"]),
    "batched x, unbatched index after slice": lambda T, d: lambda: T.func.vmap(
        lambda r: r[:, T.tensor([0, 4, 4])])(d["x3"]),
    "batched x, chained unbatched": lambda T, d: lambda: T.func.vmap(
        lambda r: r[T.tensor([0, 3])][:, T.tensor([1, 2])])(d["x3"]),
    "batched x, mask": lambda T, d: lambda: T.func.vmap(
        lambda r: r[:, T.tensor([True, False, True, True, False])])(d["x3"]),
    "batched x, 2-d mask": lambda T, d: lambda: T.func.vmap(
        lambda r: r[T.arange(20).reshape(4, 5) % 3 == 0])(d["x3"]),
    "in_dims=1": lambda T, d: lambda: T.func.vmap(lambda i: d["table"][i], in_dims=1)(
        T.tensor([[0, 1], [2, 2]])),
    "out_dims=1": lambda T, d: lambda: T.func.vmap(lambda i: d["table"][i], out_dims=1)(
        d["idx"]),
    "in_dims (1, 0)": lambda T, d: lambda: T.func.vmap(lambda r, i: r[i], in_dims=(1, 0))(
        d["x3"], T.tensor([0, 1, 2, 1])),
    "nested": lambda T, d: lambda: T.func.vmap(lambda i: T.func.vmap(
        lambda j: d["table"][i, j])(T.tensor([0, 3])))(d["idx"]),
    "nested chained": lambda T, d: lambda: T.func.vmap(lambda i: T.func.vmap(
        lambda j: d["table"][i][j])(T.tensor([0, 3, 1])))(d["idx"]),
    "nested batched x": lambda T, d: lambda: T.func.vmap(lambda r, i: T.func.vmap(
        lambda j: r[i, j])(T.tensor([0, 4, 2])))(d["x3"], T.tensor([1, 2, 3])),
    "nested, index of the outer level": lambda T, d: lambda: T.func.vmap(
        lambda i: T.func.vmap(lambda r: r[i])(d["x3"]))(T.tensor([0, 1])),
}


@pytest.mark.parametrize("name", list(CASES))
def test_batched_index_matches_torch(name):
    t = _same(lambda T: CASES[name](T, _data(T)))
    assert not isinstance(t, tuple), t


@pytest.mark.parametrize("build, error, phrase", [
    (lambda T, d: lambda: T.func.vmap(lambda i: d["table"][i])(T.tensor([5, 1])), "IndexError",
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda T, d: lambda: T.func.vmap(lambda i: d["vec"][i])(T.tensor([0., 1.])), "IndexError",
     "tensors used as indices must be long, int, byte or bool"),
    (lambda T, d: lambda: T.func.vmap(lambda m: d["vec"][m])(
        T.tensor([[True, False, True, False, True]] * 2)), "RuntimeError",
     "Attempting to batch over indexing with a boolean mask"),
])
def test_batched_index_errors_match_torch(build, error, phrase):
    t, g = _both(lambda T: build(T, _data(T)))
    assert t[0] == g[0] == error and phrase in t[1] and phrase in g[1], (t, g)


def test_writes_into_unbatched_tensors_are_refused_as_in_torch():
    # SILENT before: the write of a batched value into a captured tensor ran once per sample
    # (the last sample's value stayed); an unbatched tensor cannot hold every sample's write
    for T in (torch, tg):
        table = T.zeros(3, 4)
        with pytest.raises(RuntimeError, match="index_put_.*is not possible"):
            def put(i):
                table[i] = 1.
                return table
            T.func.vmap(put)(T.tensor([0, 2]))
        with pytest.raises(RuntimeError, match="inplace arithmetic.*is not possible"):
            def copy_row(v):
                table[0] = v
                return table
            T.func.vmap(copy_row)(T.arange(8.).reshape(2, 4))
        with pytest.raises(RuntimeError, match="index_put_.*is not possible"):
            def put_rows(v):
                table[T.tensor([0, 2])] = v
                return table
            T.func.vmap(put_rows)(T.ones(2, 4))
        assert float(table.abs().sum()) == 0.0


@pytest.mark.parametrize("name", ["batched", "iadd"])
def test_writes_into_batched_tensors_match_torch(name):
    def build(T):
        d = _data(T)

        def put(r, i):
            r = r.clone()
            r[i] = -1.
            return r

        def iadd(r, i):
            r = r.clone()
            r[i, i] += 100.
            return r
        fn = put if name == "batched" else iadd
        i = d["i2"][:, :1] if name == "batched" else d["i2"]
        return lambda: T.func.vmap(fn)(d["x3"], i)
    _same(build)


def test_write_after_slice_with_batched_value_is_per_sample():
    # PyTorch 2.13's index_put_ batching rule refuses r[:, i] = v here ("shape mismatch") though
    # every sample's write is valid: tapegrad computes what a loop over the samples gives
    x3, i2 = torch.arange(60.).reshape(3, 4, 5), torch.tensor([[0, 1], [2, 3], [1, 1]])
    v = torch.arange(24.).reshape(3, 4, 2) * 10

    def put(r, i, val):
        r = r.clone()
        r[:, i] = val
        return r
    loop = torch.stack([put(x3[b], i2[b], v[b]) for b in range(3)])
    got = tg.func.vmap(put)(tg.tensor(x3.numpy()), tg.tensor(i2.numpy()), tg.tensor(v.numpy()))
    np.testing.assert_array_equal(got.numpy(), loop.numpy())


def test_grad_of_vmap_and_jacrev_match_torch():
    def grad_of_vmap(T):
        def run():
            tb = T.arange(12., dtype=T.float64).reshape(3, 4).requires_grad_()
            out = T.func.vmap(lambda i: tb[i][i + 1] * tb[i, 0])(T.tensor([0, 2, 1]))
            out.sum().backward()
            return out.detach(), tb.grad
        return run
    _same(grad_of_vmap)

    def jac(T):
        idx = T.tensor([0, 2, 1])
        return lambda: T.func.jacrev(
            lambda t: T.func.vmap(lambda i: t[i, i + 1] * t[i][0])(idx))(
                T.arange(12., dtype=T.float64).reshape(3, 4))
    _same(jac)

    def per_sample(T):
        w = T.arange(8., dtype=T.float64).reshape(4, 2)
        xs = T.tensor([[0, 1], [3, 3], [2, 0]])
        return lambda: T.func.vmap(T.func.grad(lambda w, x: (w[x] ** 2).sum()),
                                   in_dims=(None, 0))(w, xs)
    _same(per_sample)

    def batched_x(T):
        def run():
            r = T.arange(60., dtype=T.float64).reshape(3, 4, 5).requires_grad_()
            out = T.func.vmap(lambda r, i: r[:, i] * 2)(r, T.tensor([[0, 1], [2, 3], [1, 1]]))
            out.pow(2).sum().backward()
            return out.detach(), r.grad
        return run
    _same(batched_x)


def test_vmap_of_grad_with_chained_batched_index_is_per_sample():
    # PyTorch 2.13 refuses vmap(grad(f)) here (its index backward under vmap reads .item()); a
    # loop of grad over the samples is the reference
    def f(t, i):
        return t[i][i + 1] ** 2 + t[:, i].sum()
    tb, idx = torch.arange(12., dtype=torch.float64).reshape(3, 4), torch.tensor([0, 2, 1])
    loop = torch.stack([torch.func.grad(f)(tb, idx[b]) for b in range(3)])
    got = tg.func.vmap(tg.func.grad(f), in_dims=(None, 0))(tg.tensor(tb.numpy()),
                                                          tg.tensor(idx.numpy()))
    np.testing.assert_allclose(got.numpy(), loop.numpy())


def test_gradcheck_through_batched_index():
    idx = tg.tensor([[0, 2], [1, 1], [2, 0]])

    def fn(table, rows):
        return tg.func.vmap(lambda i, r: table[i][:, i[0]] * r[i].sum() + table[i[1], i])(
            idx, rows)
    table = tg.randn(3, 3, dtype=tg.float64, requires_grad=True)
    rows = tg.randn(3, 3, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(fn, (table, rows), eps=1e-6, atol=1e-6)


# -- flex_attention: the mods with PyTorch's per-element semantics --------------------------------

def _flex_case(T, FA, chained_mod, requires_grad=False):
    gen = torch.Generator().manual_seed(3)
    B, H, L, E = 2, 3, 6, 4
    vals = [torch.randn(*s, generator=gen, dtype=torch.float64)
            for s in ((B, H, L, E), (B, H, L, E), (B, H, L, E), (H, 2 * L - 1), (B, 5))]
    q, k, v, bias, table = [T.tensor(x.numpy()) for x in vals]
    if requires_grad:
        bias.requires_grad_()
        table.requires_grad_()
    mods = {
        "bias[h][rel]": lambda s, b, h, qi, ki: s + bias[h][qi - ki + L - 1],
        "table[b][0]": lambda s, b, h, qi, ki: s + table[b][0] * (qi - ki),
        "table[b][h]": lambda s, b, h, qi, ki: s * table[b][h + 1],
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = FA.flex_attention(q, k, v, score_mod=mods[chained_mod])
    return out, bias, table


@pytest.mark.parametrize("mod", ["bias[h][rel]", "table[b][0]", "table[b][h]"])
def test_flex_attention_chained_indexing_in_score_mod_matches_torch(mod):
    from torch.nn.attention import flex_attention as TF
    from tapegrad.nn.attention import flex_attention as GF
    ref, _, _ = _flex_case(torch, TF, mod)
    got, _, _ = _flex_case(tg, GF, mod)
    assert tuple(got.shape) == tuple(ref.shape) and got.dtype == tg.float64
    np.testing.assert_allclose(got.detach().numpy(), ref.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mod", ["bias[h][rel]", "table[b][0]", "table[b][h]"])
def test_flex_attention_chained_indexing_gradients_to_captured_tables(mod):
    # PyTorch's CPU flex_attention refuses backward: the reference is the same attention with
    # the mod applied per element in torch (vmap over the four index dims, as its eager path)
    from tapegrad.nn.attention import flex_attention as GF
    got, gbias, gtable = _flex_case(tg, GF, mod, requires_grad=True)
    got.sin().sum().backward()

    gen = torch.Generator().manual_seed(3)
    B, H, L, E = 2, 3, 6, 4
    q, k, v, bias, table = [torch.randn(*s, generator=gen, dtype=torch.float64)
                            for s in ((B, H, L, E), (B, H, L, E), (B, H, L, E),
                                      (H, 2 * L - 1), (B, 5))]
    bias.requires_grad_()
    table.requires_grad_()
    mods = {
        "bias[h][rel]": lambda s, b, h, qi, ki: s + bias[h][qi - ki + L - 1],
        "table[b][0]": lambda s, b, h, qi, ki: s + table[b][0] * (qi - ki),
        "table[b][h]": lambda s, b, h, qi, ki: s * table[b][h + 1],
    }
    fn = mods[mod]
    for dims in ((0, None, None, None, 0), (0, None, None, 0, None), (0, None, 0, None, None),
                 (0, 0, None, None, None)):
        fn = torch.func.vmap(fn, in_dims=dims)
    scores = fn(q @ k.transpose(-2, -1) / E ** 0.5, torch.arange(B), torch.arange(H),
                torch.arange(L), torch.arange(L))
    ref = torch.softmax(scores, -1) @ v
    ref.sin().sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=1e-10)
    for t, g in ((bias, gbias), (table, gtable)):
        if t.grad is None:          # (the table the mod does not read)
            assert g.grad is None
        else:
            np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_flex_chained_mask_mod_and_create_mask_match_torch():
    from torch.nn.attention import flex_attention as TF
    from tapegrad.nn.attention import flex_attention as GF
    out = []
    for T, FA in ((torch, TF), (tg, GF)):
        allowed = T.tensor([[True, False, True, True], [False, True, True, False]])
        docs = T.tensor([[0, 0, 1, 1], [0, 1, 1, 1]])
        mask = FA.create_mask(lambda b, h, qi, ki: allowed[b][ki] & (docs[b][qi] == docs[b][ki]),
                              2, 1, 4, 4)
        score = FA.create_mask(lambda s, b, h, qi, ki: s - 1e9 * (docs[b][qi] != docs[b][ki]),
                               2, 1, 4, 4)
        out.append((mask.numpy(), score.numpy()))
    for t, g in zip(*out):
        np.testing.assert_array_equal(g, t)


@pytest.mark.parametrize("sample, other, shape", [
    ("float32", "float64", ()), ("float64", "float32", (3,)), ("int32", "int64", ()),
    ("int64", "int32", (3,))])
def test_zero_dim_sample_promotes_as_torch(sample, other, shape):
    # SILENT before: a 0-d sample's value has the batch dim, and promotion on the values ranked
    # it as dimensioned (float32 sample * float64 0-d tensor gave float32, PyTorch float64)
    def build(T):
        o = T.full(shape, 2, dtype=getattr(T, other))
        x = T.arange(4).to(getattr(T, sample))
        return lambda: (T.func.vmap(lambda s: s * o)(x), T.func.vmap(lambda s: o - s)(x),
                        T.func.vmap(lambda s: T.maximum(s, o))(x),
                        T.func.vmap(lambda s: s < o)(x))
    _same(build)
