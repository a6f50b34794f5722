"""embedding(sparse=True): the weight's gradient is a sparse COO tensor, as PyTorch's (it raised
NotImplementedError at the call), and the optimizers, clipping and zero_grad treat it as
PyTorch's do.  Every expectation is PyTorch's own result on the same data."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad.testing import numeric_grad

torch = pytest.importorskip("torch")

# PyTorch's warning when a sparse tensor is made (by the test, or inside its Adagrad step)
pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks:UserWarning")

RNG = np.random.default_rng(7)
TABLE = RNG.standard_normal((7, 3)).astype(np.float32)


def _weight(lib, table=TABLE):
    return lib.tensor(table.copy(), requires_grad=True)


def _sparse_parts(g):
    """(indices, values, size, nnz, is_coalesced) of a sparse gradient, as plain data."""
    return (g._indices().numpy().tolist(), g._values().detach().numpy(), tuple(g.shape),
            g._nnz(), g.is_coalesced(), str(g.layout), bool(g.is_sparse))


def _assert_same_sparse(a, b):
    pa, pb = _sparse_parts(a), _sparse_parts(b)
    assert pa[0] == pb[0] and pa[2:] == pb[2:]
    np.testing.assert_allclose(pa[1], pb[1], rtol=1e-6, atol=1e-7)


def _both(fn):
    return fn(tg), fn(torch)


@pytest.mark.parametrize("index, kw", [
    ([[1, 3, 1], [0, 2, 6]], {}),
    ([[1, 3, 1], [0, 2, 6]], {"padding_idx": 2}),
    ([[2, 2]], {"padding_idx": 2}),                 # every entry padding: nnz 0
    ([5], {}),                                      # one entry: coalesced
    ([], {}),                                       # empty input
    ([4, 4, 4, 0], {"padding_idx": -3}),            # negative padding_idx
])
def test_gradient_is_the_uncoalesced_lookup(index, kw):
    def run(lib):
        w = _weight(lib)
        idx = lib.tensor(index, dtype=lib.int64)
        out = lib.nn.functional.embedding(idx, w, sparse=True, **kw)
        seed = lib.tensor(np.arange(out.numel(), dtype=np.float32).reshape(tuple(out.shape)))
        (out * seed).sum().backward()
        assert type(out.grad_fn).__name__ == "EmbeddingBackward0"
        assert out.requires_grad and not out.is_leaf
        return w.grad, out.detach().numpy()
    (gt, ot), (gp, op) = _both(run)
    _assert_same_sparse(gt, gp)
    np.testing.assert_array_equal(ot, op)
    np.testing.assert_allclose(gt.to_dense().numpy(), gp.to_dense().numpy(), rtol=1e-6)
    _assert_same_sparse(gt.coalesce(), gp.coalesce())


def test_accumulation_appends_across_backwards_and_follows_call_order_within_one():
    def run(lib):
        w = _weight(lib)
        emb = lib.nn.functional.embedding
        emb(lib.tensor([3]), w, sparse=True).sum().backward()
        first = w.grad
        emb(lib.tensor([1, 1]), w, sparse=True).sum().backward()
        same = w.grad is first
        # two lookups in one backward: their entries in call order, appended after
        (emb(lib.tensor([6, 0]), w, sparse=True).sum() * 2
         + emb(lib.tensor([2]), w, sparse=True).sum()).backward()
        return w.grad, same
    (gt, st), (gp, sp) = _both(run)
    assert st and sp
    _assert_same_sparse(gt, gp)


def test_dense_and_sparse_gradients_sum_to_a_dense_grad():
    def run(lib):
        emb = lib.nn.functional.embedding
        results = []
        w = _weight(lib)                       # sparse, then dense: a new dense .grad
        emb(lib.tensor([4, 1]), w, sparse=True).sum().backward()
        (w * 2).sum().backward()
        results.append((str(w.grad.layout), w.grad.numpy().copy()))
        w = _weight(lib)                       # dense, then sparse: added in place
        (w * 3).sum().backward()
        dense = w.grad
        emb(lib.tensor([4, 1, 4]), w, sparse=True).sum().backward()
        results.append((w.grad is dense, w.grad.numpy().copy()))
        w = _weight(lib)                       # tied weights in one backward
        (emb(lib.tensor([0, 5]), w, sparse=True).pow(2).sum() + (w * w).sum()).backward()
        results.append((str(w.grad.layout), w.grad.numpy().copy()))
        return results
    for a, b in zip(*_both(run)):
        assert a[0] == b[0]
        np.testing.assert_allclose(a[1], b[1], rtol=1e-6)


def test_no_grad_and_weights_without_grad_take_the_dense_path():
    def run(lib):
        w = _weight(lib)
        with lib.no_grad():
            a = lib.nn.functional.embedding(lib.tensor([1, 2]), w, sparse=True)
        b = lib.nn.functional.embedding(lib.tensor([1, 2]), lib.tensor(TABLE), sparse=True)
        return a.requires_grad, a.grad_fn, b.requires_grad, b.grad_fn, b.numpy()
    t, p = _both(run)
    assert t[:4] == p[:4] == (False, None, False, None)
    np.testing.assert_array_equal(t[4], p[4])


def test_scale_grad_by_freq_is_refused_at_backward_as_pytorch():
    def run(lib):
        w = _weight(lib)
        out = lib.nn.functional.embedding(lib.tensor([1, 1, 2]), w, sparse=True,
                                          scale_grad_by_freq=True)
        with pytest.raises(RuntimeError) as e:
            out.sum().backward()
        return str(e.value)
    t, p = _both(run)
    assert t == p == "embedding_backward: scale_grad_by_freq not supported with sparse gradients"


def test_max_norm_renorms_the_rows_and_still_gives_a_sparse_gradient():
    def run(lib):
        w = _weight(lib)
        lib.nn.functional.embedding(lib.tensor([4, 1, 4]), w, sparse=True,
                                    max_norm=0.5).pow(2).sum().backward()
        return w.detach().numpy(), w.grad
    (wt, gt), (wp, gp) = _both(run)
    np.testing.assert_allclose(wt, wp, rtol=1e-6)
    _assert_same_sparse(gt, gp)


def test_autograd_grad_gives_the_sparse_gradient():
    def run(lib):
        w = _weight(lib)
        other = lib.tensor([1.0, 2.0], requires_grad=True)
        out = lib.nn.functional.embedding(lib.tensor([3, 0, 3]), w, sparse=True)
        loss = (out.pow(2).sum(1) * 2).sum() + (other * 3).sum()
        g, go = lib.autograd.grad(loss, (w, other), retain_graph=True)
        (g_tied,) = lib.autograd.grad(loss + (w * w).sum(), w)
        unused = lib.autograd.grad((other * 2).sum(), [w], allow_unused=True)
        with pytest.raises(RuntimeError) as e:
            lib.autograd.grad((other * 2).sum(), [w])
        return g, go.numpy(), str(g_tied.layout), g_tied.numpy(), unused, str(e.value)
    t, p = _both(run)
    _assert_same_sparse(t[0], p[0])
    np.testing.assert_allclose(t[1], p[1])
    assert t[2] == p[2]
    np.testing.assert_allclose(t[3], p[3], rtol=1e-6)
    assert t[4] == p[4] == (None,)
    assert t[5] == p[5]
    assert w_grad_untouched()


def w_grad_untouched():
    w = _weight(tg)
    tg.autograd.grad(tg.nn.functional.embedding(tg.tensor([1]), w, sparse=True).sum(), w)
    return w.grad is None


def test_hooks_on_the_weight_see_the_sparse_gradient():
    def run(lib):
        w = _weight(lib)
        seen = []
        w.register_hook(lambda g: seen.append(("hook", str(g.layout), g._nnz())))
        w.register_post_accumulate_grad_hook(
            lambda p: seen.append(("post", str(p.grad.layout), p.grad._nnz())))
        lib.nn.functional.embedding(lib.tensor([1, 5]), w, sparse=True).sum().backward()
        return seen
    t, p = _both(run)
    assert t == p


def test_dense_in_place_add_of_a_sparse_tensor():
    def run(lib):
        s = lib.sparse_coo_tensor([[1, 3, 1]], lib.tensor([[1., 2.], [3., 4.], [5., 6.]]),
                                  (4, 2))
        d = lib.ones(4, 2)
        d.add_(s, alpha=-0.5)
        d.sub_(s)
        d += s
        e = lib.zeros(4, 2)
        e -= s
        errors = []
        for target in (lib.zeros(3, 2), lib.zeros(4, 2, dtype=lib.int64)):
            with pytest.raises(RuntimeError) as err:
                target.add_(s)
            errors.append(str(err.value))
        return d.numpy(), e.numpy(), errors
    t, p = _both(run)
    np.testing.assert_allclose(t[0], p[0])
    np.testing.assert_allclose(t[1], p[1])
    assert t[2] == p[2]


def test_repr_zero_grad_and_clip_errors():
    def run(lib):
        m = lib.nn.Embedding(5, 2, sparse=True)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(TABLE[:5, :2]))
        m(lib.tensor([[3, 1]])).sum().backward()
        text = repr(m.weight.grad)
        errors = []
        for clip in (lambda: lib.nn.utils.clip_grad_norm_(m.parameters(), 0.1),
                     lambda: lib.nn.utils.clip_grad_value_(m.parameters(), 0.1)):
            with pytest.raises(NotImplementedError) as e:
                clip()
            errors.append(str(e.value).split(" with arguments")[0])
        g = m.weight.grad
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        opt.zero_grad(set_to_none=False)
        kept = (m.weight.grad is g, m.weight.grad._nnz(), repr(m.weight.grad))
        opt.zero_grad()
        return text, errors, kept, m.weight.grad
    t, p = _both(run)
    assert t == p


@pytest.mark.parametrize("kw", [
    {"mode": "sum"}, {"mode": "mean"}, {"mode": "sum", "padding_idx": 2},
    {"mode": "mean", "padding_idx": 2}, {"mode": "sum", "per_sample_weights": True},
    {"mode": "mean", "include_last_offset": True},
])
def test_embedding_bag_sparse_gradient(kw):
    """embedding_bag(sparse=True) gave the weight a dense gradient (same values, wrong layout)."""
    def run(lib):
        w = _weight(lib)
        args = dict(kw)
        if args.pop("per_sample_weights", None):
            args["per_sample_weights"] = lib.tensor([1., 2., 3., 4., 5., 6.])
        out = lib.nn.functional.embedding_bag(lib.tensor([1, 2, 4, 2, 2, 0]), w,
                                              lib.tensor([0, 2, 2]), sparse=True, **args)
        seed = lib.tensor(np.arange(out.numel(), dtype=np.float32).reshape(tuple(out.shape)))
        (out * seed).sum().backward()
        return w.grad
    _assert_same_sparse(*_both(run))


# -- optimizers ------------------------------------------------------------------------------


def _steps(lib, make_opt, steps=4, index=((1, 3, 1), (0, 6, 6))):
    w = _weight(lib)
    opt = make_opt(lib, w)
    losses = []
    for k in range(steps):
        opt.zero_grad()
        out = lib.nn.functional.embedding(lib.tensor(index[k % len(index)]), w, sparse=True)
        loss = (out - 0.3).pow(2).sum()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, w.detach().numpy()


@pytest.mark.parametrize("name, kw", [
    ("SGD", {}), ("SGD", {"momentum": 0.9}), ("SGD", {"momentum": 0.9, "nesterov": True}),
    ("SGD", {"momentum": 0.9, "dampening": 0.5}), ("SGD", {"maximize": True}),
    ("Adagrad", {}), ("Adagrad", {"lr_decay": 0.1}), ("Adagrad", {"maximize": True}),
    ("Adagrad", {"initial_accumulator_value": 0.1}),
    ("SparseAdam", {}), ("SparseAdam", {"maximize": True}),
])
def test_optimizers_with_a_sparse_path_match(name, kw):
    def run(lib):
        return _steps(lib, lambda lib, w: getattr(lib.optim, name)([w], lr=0.1, **kw))
    (lt, wt), (lp, wp) = _both(run)
    np.testing.assert_allclose(lt, lp, rtol=1e-6)
    np.testing.assert_allclose(wt, wp, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name, kw", [
    ("SGD", {"weight_decay": 0.1}), ("Adagrad", {"weight_decay": 0.1}),
    ("Adam", {}), ("AdamW", {}), ("RMSprop", {}), ("Adadelta", {}), ("Adamax", {}),
    ("NAdam", {}), ("RAdam", {}), ("ASGD", {}), ("Rprop", {}),
])
def test_optimizers_without_one_refuse_as_pytorch(name, kw):
    def run(lib):
        with pytest.raises(RuntimeError) as e:
            _steps(lib, lambda lib, w: getattr(lib.optim, name)([w], lr=0.1, **kw), steps=1)
        return str(e.value)
    t, p = _both(run)
    assert t == p


def test_lbfgs_reads_a_sparse_gradient_densely():
    def run(lib):
        w = _weight(lib)
        opt = lib.optim.LBFGS([w], lr=0.5, max_iter=3)
        idx = lib.tensor([1, 3, 1])

        def closure():
            opt.zero_grad()
            loss = (lib.nn.functional.embedding(idx, w, sparse=True) - 0.3).pow(2).sum()
            loss.backward()
            return loss
        opt.step(closure)
        return w.detach().numpy()
    t, p = _both(run)
    np.testing.assert_allclose(t, p, rtol=1e-5, atol=1e-6)


# -- a small skip-gram with negative sampling ---------------------------------------------------

def _skipgram(lib, optimizer, steps=12):
    rng = np.random.default_rng(3)
    vocab, dim, batch, negatives = 20, 8, 6, 4
    center_init = (rng.standard_normal((vocab, dim)) * 0.3).astype(np.float32)
    context_init = (rng.standard_normal((vocab, dim)) * 0.3).astype(np.float32)
    data = [(rng.integers(0, vocab, batch), rng.integers(0, vocab, batch),
             rng.integers(0, vocab, (batch, negatives))) for _ in range(steps)]
    center = lib.nn.Embedding(vocab, dim, sparse=True)
    context = lib.nn.Embedding(vocab, dim, sparse=True)
    with lib.no_grad():
        center.weight.copy_(lib.tensor(center_init))
        context.weight.copy_(lib.tensor(context_init))
    params = list(center.parameters()) + list(context.parameters())
    opt = optimizer(lib, params)
    F = lib.nn.functional
    losses = []
    for c, o, n in data:
        c, o, n = lib.tensor(c), lib.tensor(o), lib.tensor(n)
        vc = center(c)
        pos = (vc * context(o)).sum(1)
        neg = lib.bmm(context(n), vc.unsqueeze(2)).squeeze(2)
        loss = -(F.logsigmoid(pos) + F.logsigmoid(-neg).sum(1)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, center.weight.detach().numpy(), context.weight.detach().numpy()


@pytest.mark.parametrize("optimizer", [
    lambda lib, p: lib.optim.SparseAdam(p, lr=0.05),
    lambda lib, p: lib.optim.SGD(p, lr=0.5),
    lambda lib, p: lib.optim.SGD(p, lr=0.5, momentum=0.9),
    lambda lib, p: lib.optim.Adagrad(p, lr=0.3),
], ids=["SparseAdam", "SGD", "SGD-momentum", "Adagrad"])
def test_skipgram_training_matches(optimizer):
    t, p = _both(lambda lib: _skipgram(lib, optimizer))
    np.testing.assert_allclose(t[0], p[0], rtol=1e-6, atol=1e-6)
    for a, b in zip(t[1:], p[1:]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# -- tapegrad.compile ----------------------------------------------------------------------------

def test_compile_runs_a_sparse_embedding_eagerly_and_says_why():
    """A replay re-ran the embedding as one step and gave the weight no gradient (silently)."""
    w = _weight(tg)

    @tg.compile
    def forward(idx):
        return tg.nn.functional.embedding(idx, w, sparse=True).pow(2).sum()
    grads = []
    for _ in range(3):
        w.grad = None
        forward(tg.tensor([1, 2, 1])).backward()
        grads.append(w.grad)
    assert all(g is not None and g._nnz() == 3 for g in grads)
    assert "embedding(sparse=True)" in forward.explain()


def test_a_backward_that_raises_leaves_no_entries_for_a_later_one():
    """The entries a pass noted live with that pass: a pass that raises after a lookup's
    gradient was noted must not add them into a later backward's gradient."""
    w = _weight(tg)
    x = tg.ones(2, requires_grad=True)
    y = x * 2                                   # x's gradient arrives after the lookup's

    def fail(_):
        raise ValueError("stop")
    x.register_hook(fail)
    out = tg.nn.functional.embedding(tg.tensor([1, 1]), w, sparse=True)
    with pytest.raises(ValueError):
        (out.sum() + y.sum()).backward()
    for _ in range(3):
        w.grad = None
        tg.nn.functional.embedding(tg.tensor([4]), w, sparse=True).sum().backward()
        assert w.grad._indices().tolist() == [[4]]


def test_backward_inputs_reaches_or_skips_the_weight_as_pytorch():
    def run(lib):
        w = _weight(lib)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        loss = lib.nn.functional.embedding(lib.tensor([1, 3]), w, sparse=True).sum() \
            + (x * 2).sum()
        loss.backward(inputs=[x], retain_graph=True)
        skipped = w.grad is None
        lib.autograd.backward(loss, inputs=[w])
        return skipped, w.grad, x.grad.numpy()
    t, p = _both(run)
    assert t[0] and p[0]
    _assert_same_sparse(t[1], p[1])
    np.testing.assert_array_equal(t[2], p[2])


def test_a_computed_weight_passes_the_gradient_on():
    """A weight computed from a leaf (W = P * 2) got no gradient at all to P (SILENT): the
    sparse gradient went into the non-leaf W.  tapegrad sends it on densely (PyTorch: the same
    values, sparse, through the ops that allow it)."""
    def run(lib):
        p = lib.tensor(TABLE.copy(), requires_grad=True)
        out = lib.nn.functional.embedding(lib.tensor([1, 2, 1]), p * 2, sparse=True)
        (out * lib.tensor(np.arange(9, dtype=np.float32).reshape(3, 3))).sum().backward()
        return p.grad.to_dense().numpy() if p.grad.is_sparse else p.grad.numpy()
    t, p = _both(run)
    np.testing.assert_allclose(t, p)


@pytest.mark.parametrize("kw", [{}, {"padding_idx": 3}])
def test_sparse_gradient_matches_finite_differences(kw):
    table = RNG.standard_normal((6, 4))
    idx = tg.tensor([[3, 0, 3], [5, 3, 1]])
    coef = RNG.standard_normal((2, 3, 4))

    def loss(w):
        out = tg.nn.functional.embedding(idx, w, sparse=True, **kw)
        return (out ** 3 * tg.tensor(coef)).sum()
    w = tg.tensor(table, requires_grad=True)
    loss(w).backward()
    expected = numeric_grad(lambda a: float(loss(tg.tensor(a)).item()), [table.copy()])[0]
    if kw:
        expected[kw["padding_idx"]] = 0         # the padding row gets no gradient, by definition
    np.testing.assert_allclose(w.grad.to_dense().numpy(), expected, rtol=1e-5, atol=1e-7)
