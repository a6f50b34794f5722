"""What the session-31 proxy of public graph / recommender / time-series scripts (hand-written
GCN/GIN layers over sparse adjacencies, NCF and BPR models, LSTM forecasters and autoencoders)
found tapegrad lacking: torch.sparse.check_sparse_tensor_invariants and the one-time "implicitly
disabled" warning of torch.sparse_coo_tensor, and torch.segment_reduce."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _sparse_coo

torch = pytest.importorskip("torch")


# -- torch.sparse_coo_tensor's warning and torch.sparse.check_sparse_tensor_invariants -------

@pytest.fixture
def fresh_invariant_flag(monkeypatch):
    """A process in which the flag was never set and the warning never given."""
    monkeypatch.setitem(_sparse_coo._invariant_checks, "enabled", False)
    monkeypatch.setitem(_sparse_coo._invariant_checks, "explicit", False)
    monkeypatch.setitem(_sparse_coo._invariant_checks, "warned", False)


def _warnings_of(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


IDX = [[0, 1, 2], [1, 2, 0]]


def test_sparse_coo_tensor_warns_once_when_checks_implicit(fresh_invariant_flag):
    # PyTorch: the first sparse_coo_tensor without check_invariants warns, once per process,
    # on the caller's line; an explicit check_invariants does not count as opting in.
    first = _warnings_of(lambda: tg.sparse_coo_tensor(IDX, [1., 2., 3.], (3, 3),
                                                      check_invariants=False))
    assert first == []
    with pytest.warns(UserWarning, match="Sparse invariant checks are implicitly disabled") as rec:
        tg.sparse_coo_tensor(IDX, [1., 2., 3.], (3, 3))
    assert rec[0].filename == __file__
    assert _warnings_of(lambda: tg.sparse_coo_tensor(IDX, [1., 2., 3.], (3, 3))) == []


def test_internal_sparse_constructions_do_not_warn(fresh_invariant_flag):
    # sparse layouts of factories, sparse embedding gradients, sparse arithmetic and the
    # legacy constructor (its own deprecation warning only) stay silent in PyTorch.
    def build():
        tg.zeros(2, 2, layout=tg.sparse_coo)
        emb = tg.nn.Embedding(4, 2, sparse=True)
        emb(tg.tensor([1, 3])).sum().backward()
        s = tg.eye(3).to_sparse()
        (s + s).coalesce()
        tg.zeros_like(s)
    assert _warnings_of(build) == []
    legacy = _warnings_of(lambda: tg.sparse.FloatTensor(tg.tensor(IDX), tg.tensor([1., 2., 3.]),
                                                        tg.Size([3, 3])))
    assert not any("implicitly disabled" in m for m in legacy)


def test_explicit_switch_silences_the_warning(fresh_invariant_flag):
    tg.sparse.check_sparse_tensor_invariants.disable()
    assert _warnings_of(lambda: tg.sparse_coo_tensor(IDX, [1., 2., 3.], (3, 3))) == []


def test_check_sparse_tensor_invariants_switch_matches_torch(fresh_invariant_flag):
    seen = {}
    for lib, name in ((torch, "torch"), (tg, "tg")):
        c = lib.sparse.check_sparse_tensor_invariants
        start = c.is_enabled()
        c.enable()
        enabled = c.is_enabled()
        c.disable()
        with c():
            inside = c.is_enabled()
        after = c.is_enabled()
        decorated = c(False)(lambda: c.is_enabled())()
        manager = c()
        manager.__enter__()
        with pytest.raises(RuntimeError, match="already activated"):
            manager.__enter__()
        manager.__exit__(None, None, None)
        seen[name] = (start, enabled, inside, after, decorated, c.is_enabled())
    assert seen["tg"] == seen["torch"] == (False, True, True, False, False, False)


def test_checked_construction_refuses_bad_indices(fresh_invariant_flag):
    for lib in (torch, tg):
        with lib.sparse.check_sparse_tensor_invariants():
            with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
                lib.sparse_coo_tensor(lib.tensor([[0, 5], [1, 1]]), lib.tensor([1., 2.]), (2, 2))


# -- torch.segment_reduce -----------------------------------------------------------------------

DATA = [1., 3., 3., 2., 5., -1.]
LENGTHS = [2, 0, 3, 1]


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod", "amax", "amin"])
@pytest.mark.parametrize("initial", [None, 2.0, 3.0])
def test_segment_reduce_values_and_grads(reduce, initial):
    out, grads = [], []
    for lib in (torch, tg):
        d = lib.tensor(DATA, dtype=lib.float64, requires_grad=True)
        o = lib.segment_reduce(d, reduce, lengths=lib.tensor(LENGTHS), initial=initial)
        weights = lib.arange(1., 5., dtype=lib.float64)
        g, = lib.autograd.grad((o.nan_to_num(0., 0., 0.) * weights).sum(), d)
        out.append(o.detach().numpy())
        grads.append(g.numpy())
        assert type(o.grad_fn).__name__ == "SegmentReduceBackward0"
    np.testing.assert_allclose(out[1], out[0])
    np.testing.assert_allclose(grads[1], grads[0])


def test_segment_reduce_max_ties_split_and_initial_takes_no_grad():
    for init in (None, 3.0):
        res = []
        for lib in (torch, tg):
            d = lib.tensor([3., 3., 1., 0., 2.], dtype=lib.float64, requires_grad=True)
            o = lib.segment_reduce(d, "max", lengths=lib.tensor([3, 2]), initial=init)
            res.append((o.detach().numpy(), lib.autograd.grad(o.sum(), d)[0].numpy()))
        np.testing.assert_allclose(res[1][0], res[0][0])
        np.testing.assert_allclose(res[1][1], res[0][1])


def test_segment_reduce_offsets_axis_and_2d_lengths():
    cases = [
        (lambda L: L.tensor(DATA), "sum", dict(offsets=[0, 2, 2, 5, 6])),
        (lambda L: L.arange(12.).reshape(2, 6), "sum", dict(lengths=[[2, 4], [3, 3]], axis=1)),
        (lambda L: L.arange(12.).reshape(6, 2), "max", dict(lengths=[2, 4], axis=0)),
        (lambda L: L.arange(6.).reshape(3, 2), "mean", dict(lengths=[1, 2])),
        (lambda L: L.tensor([1., 2., 3.]), "sum", dict(lengths=[1, 2], axis=-1, initial=1)),
        (lambda L: L.tensor([1., 2., 3.]), "sum", dict(lengths=[1, 1], unsafe=True)),
    ]
    for make, reduce, kw in cases:
        got = []
        for lib in (torch, tg):
            kwargs = {k: lib.tensor(v) if isinstance(v, list) else v for k, v in kw.items()}
            got.append(lib.segment_reduce(make(lib), reduce, **kwargs))
        assert got[1].dtype == tg.float32 and tuple(got[1].shape) == tuple(got[0].shape)
        np.testing.assert_allclose(got[1].numpy(), got[0].numpy())


@pytest.mark.parametrize("args, kwargs, exc, phrase", [
    ((), dict(lengths=[2, 2]), RuntimeError, "to sum to data.size"),
    ((), dict(), RuntimeError, "Either lengths or offsets must be defined"),
    ((), dict(indices=[0, 0, 1, 1, 2, 2]), RuntimeError, "indices based reduction is not supported"),
    ((), dict(lengths=[2., 4.]), NotImplementedError, "not implemented for 'Float'"),
    ((), dict(lengths=[[1, 5]]), RuntimeError, "Expected data.dim"),
    (("foo",), dict(lengths=[2, 4]), RuntimeError, "must be either sum, prod, mean, amax or amin"),
])
def test_segment_reduce_errors(args, kwargs, exc, phrase):
    for lib in (torch, tg):
        kw = {k: lib.tensor(v) for k, v in kwargs.items()}
        with pytest.raises(exc, match=phrase):
            lib.segment_reduce(lib.tensor(DATA), *(args or ("sum",)), **kw)
    for lib in (torch, tg):
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            lib.segment_reduce(lib.tensor([1, 2, 3]), "sum", lengths=lib.tensor([1, 2]))


def test_segment_reduce_gradcheck():
    for reduce, lengths, axis, shape in (("mean", [2, 1, 3], 0, (6, 2)),
                                         ("prod", [[2, 4], [1, 5]], 1, (2, 6)),
                                         ("amin", [3, 0, 3], 0, (6,))):
        x = tg.rand(*shape, dtype=tg.float64, requires_grad=True)
        assert tg.autograd.gradcheck(
            lambda t: tg.segment_reduce(t, reduce, lengths=tg.tensor(lengths), axis=axis,
                                        initial=None if reduce != "amin" else 5.0), (x,))


# -- torch.autograd.grad with respect to a sparse COO tensor -----------------------------------

EI = [[0, 1, 2, 2, 0], [1, 2, 0, 1, 1]]      # (0, 1) twice: an uncoalesced input


def _sparse_grad_case(lib, leaf: bool):
    vals = lib.tensor([1., 2., 3., 4., 5.], dtype=lib.float64, requires_grad=not leaf)
    s = lib.sparse_coo_tensor(lib.tensor(EI), vals, (3, 3), requires_grad=leaf,
                              check_invariants=False)
    m = lib.arange(6., dtype=lib.float64).reshape(3, 2)
    out = lib.sparse.mm(s, m).pow(2).sum()
    if not leaf:
        out = out + vals.sum()          # a use of the values outside the sparse tensor
    return lib.autograd.grad(out, s)[0]


@pytest.mark.parametrize("leaf", [False, True])
def test_grad_with_respect_to_sparse_tensor(leaf):
    ref, got = _sparse_grad_case(torch, leaf), _sparse_grad_case(tg, leaf)
    assert got.is_sparse and got.is_coalesced() == ref.is_coalesced()
    np.testing.assert_array_equal(got.indices().numpy(), ref.indices().numpy())
    np.testing.assert_allclose(got.values().numpy(), ref.values().numpy())


def test_grad_sparse_unused_and_materialized():
    res = {}
    for lib in (torch, tg):
        vals = lib.tensor([1., 2., 3., 4., 5.], requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(EI), vals, (3, 3), check_invariants=False)
        w = lib.ones(3, requires_grad=True)
        unused = lib.autograd.grad((w * 2).sum(), [w, s], allow_unused=True, retain_graph=True)
        filled = lib.autograd.grad((w * 2).sum(), (w, s), materialize_grads=True)
        res[lib.__name__] = (unused[1], filled[1].is_sparse, filled[1]._nnz(), tuple(filled[1].shape))
        with pytest.raises(RuntimeError, match="does not require grad"):
            lib.autograd.grad((w * 2).sum(), [w, lib.eye(2).to_sparse()])
        with pytest.raises(ValueError, match="Expected allow_unused to be True"):
            lib.autograd.grad((w * 2).sum(), [w, s], allow_unused=False, materialize_grads=True)
    assert res["tapegrad"] == res["torch"] == (None, True, 0, (3, 3))


def test_grad_sparse_matches_finite_differences():
    vals = tg.tensor([0.5, -1.0, 2.0, 0.3, 1.5], dtype=tg.float64, requires_grad=True)
    m = tg.tensor([[0.2, -0.4], [1.0, 0.5], [-0.3, 0.8]], dtype=tg.float64)

    def loss(v):
        s = tg.sparse_coo_tensor(tg.tensor(EI), v, (3, 3), check_invariants=False)
        return tg.sparse.mm(s, m).tanh().sum(), s
    out, s = loss(vals)
    g = tg.autograd.grad(out, s)[0].to_dense().numpy()
    eps = 1e-6
    dense = tg.sparse_coo_tensor(tg.tensor(EI), vals.detach(), (3, 3), check_invariants=False).to_dense()
    for r, c in {(0, 1), (1, 2), (2, 0), (2, 1)}:
        up, down = dense.clone(), dense.clone()
        up[r, c] += eps
        down[r, c] -= eps
        fd = ((up @ m).tanh().sum() - (down @ m).tanh().sum()).item() / (2 * eps)
        assert abs(fd - g[r, c]) < 1e-6
