"""Records are released when nothing needs them; the arena shrinks; training loops stay flat."""
import gc
import resource

import numpy as np
import pytest

import tapegrad as tg


def tape():
    return tg._core.tape()


def test_dropping_the_output_releases_its_records():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    base_live, base_size = tape().live_records, tape().size
    y = ((x * 2).exp() + 1).sum()
    assert tape().live_records > base_live
    del y
    # Only x's LEAF record (created on first use) may remain.
    assert tape().live_records <= base_live + 1
    assert tape().size <= base_size + 1


def test_backward_frees_saved_values_but_keeps_the_structure():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    assert x.grad.tolist() == [2.0, 4.0]
    flags = {name: f for _, name, _, _, f in tape().records() if name == "MulBackward0"}
    assert flags["MulBackward0"] & 4          # RF_RELEASED: saved arrays dropped
    y2 = (x + x).sum()                         # AddBackward saves nothing: backward twice is fine
    y2.backward()
    y2.backward()
    assert x.grad.tolist() == [6.0, 8.0]


def test_grad_fn_keeps_its_record_alive():
    x = tg.tensor([1.0], requires_grad=True)
    fn = (x * 2).grad_fn
    assert type(fn).__name__ == "MulBackward0" and fn.name() == "MulBackward0"
    live = tape().live_records
    del fn
    assert tape().live_records < live


def _rss_kb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_training_loop_keeps_the_tape_and_memory_flat():
    # records alive before the loop (graphs earlier test modules keep, e.g. in their globals or
    # parametrized cases) are not this loop's: it must add no more than its last step's graph
    gc.collect()
    live_before = tape().live_records
    rng = np.random.default_rng(0)
    w = tg.tensor(rng.standard_normal((8, 1)) * 0.1, requires_grad=True)
    b = tg.tensor([0.0], requires_grad=True)
    xs = tg.tensor(rng.standard_normal((16, 8)))
    ys = tg.tensor(rng.standard_normal((16, 1)))
    capacities = []
    for step in range(10_000):
        # a tiny linear model written with the ops available: (xs * w^T).sum(1) + b
        pred = (xs * w[:, 0]).sum(1, keepdim=True) + b
        loss = ((pred - ys) ** 2).mean()
        loss.backward()
        with tg.no_grad():
            w.data = w - 0.01 * w.grad
            b.data = b - 0.01 * b.grad
        w.grad = None
        b.grad = None
        if step == 100:
            gc.collect()
            rss_warm = _rss_kb()
        if step % 1000 == 0:
            capacities.append(tape().capacity)
    # Overlapping steps leave holes; compaction reclaims them, so the arena never grows.
    assert len(set(capacities)) == 1, f"tape grew: {capacities}"
    assert tape().live_records - live_before < 64
    assert _rss_kb() - rss_warm < 5_000       # KB: flat after warm-up
    assert float(loss.item()) < 5.0


def test_compaction_keeps_graphs_and_grad_fns_correct():
    start_capacity = tape().capacity        # earlier tests may have grown it; it never shrinks
    x = tg.tensor([1.0, 2.0], requires_grad=True, dtype=tg.float64)
    kept = []
    fns = []
    for i in range(2_000):
        y = x * float(i % 7 + 1)
        z = y.exp() if i % 2 else y.tanh()
        if i % 100 == 0:
            kept.append((i, z))             # survivors among many dropped graphs -> holes
            fns.append(z.grad_fn)
    assert all(z.grad_fn is fn for (_, z), fn in zip(kept, fns))
    for i, z in kept:
        c = float(i % 7 + 1)
        x.grad = None
        z.sum().backward()
        xs = np.array([1.0, 2.0])
        expected = c * np.exp(c * xs) if i % 2 else c * (1 - np.tanh(c * xs) ** 2)
        np.testing.assert_allclose(x.grad.numpy(), expected)
    assert tape().capacity <= max(start_capacity, 256)   # 2,000 graphs, holes reused


def test_a_hook_referencing_its_own_tensor_is_collected():
    x = tg.ones(3, requires_grad=True)
    gc.collect()
    before = tape().live_records
    for _ in range(20):
        y = x * 2
        y.register_hook(lambda g, y=y: g * 1.0)
        y.sum().backward()
    del y
    gc.collect()
    assert tape().live_records - before < 5


def test_hook_cycles_of_leaves_and_post_accumulate_hooks_are_collected():
    import weakref
    refs = []
    for _ in range(5):
        x = tg.ones(3, requires_grad=True)
        x.register_hook(lambda g, x=x: g * 2.0)
        x.register_post_accumulate_grad_hook(lambda t, x=x: None)
        (x * 3).sum().backward()
        refs.append(weakref.ref(x))
    del x
    gc.collect()
    assert all(r() is None for r in refs)


def test_a_hooked_tensor_still_in_use_survives_collection():
    # the traverse reports the record's hooks only while the tensor is its only owner: a later
    # record, a grad_fn object or an outside reference keeps everything alive and working
    x = tg.ones(3, requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g, y=y: seen.append(y.shape) or g * 10.0)
    z = y.sum()
    fn = y.grad_fn
    del y
    gc.collect()
    z.backward()
    assert seen == [(3,)] and x.grad.tolist() == [20.0, 20.0, 20.0]
    del fn


class _KeepsOutputOnCtx(tg.autograd.Function):
    """Keeps its output on the ctx (`ctx.y = y`) instead of save_for_backward: a cycle through
    the Function record's ctx, which PyTorch's collector frees."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.y = y
        return y

    @staticmethod
    def backward(ctx, g):
        return g * ctx.y


def test_a_custom_function_keeping_its_output_on_ctx_is_collected():
    import weakref
    x = tg.tensor([0.0, 1.0], requires_grad=True)
    refs = []
    for backward in (False, True, True):
        y = _KeepsOutputOnCtx.apply(x)
        z = (y * 2).tanh()                  # records the Function's output only reaches
        if backward:
            z.sum().backward()
        refs.append((weakref.ref(y), weakref.ref(z)))
        del y, z
    gc.collect()
    assert all(a() is None and b() is None for a, b in refs)


def test_a_custom_function_ctx_still_needed_survives_collection():
    # the output lives on only in its ctx, but later records still need the Function: a
    # collection must leave the ctx (and its y) intact for their backward
    x = tg.tensor([0.0, 1.0], dtype=tg.float64, requires_grad=True)
    z = _KeepsOutputOnCtx.apply(x) * 3.0
    w = _KeepsOutputOnCtx.apply(x)
    fn = w.grad_fn                          # a grad_fn object holds the record too
    v = w + 0
    del w
    gc.collect()
    (z.sum() + v.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), 4.0 * np.exp([0.0, 1.0]))
    del fn


class _TwoOutputsOnCtx(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        a, b = x * 2, x * 3
        ctx.outputs = (a, b)
        return a, b

    @staticmethod
    def backward(ctx, ga, gb):
        a, b = ctx.outputs
        return ga * a / a * 2 + gb * 3


def test_a_multi_output_function_with_one_output_alive_keeps_working():
    # the Function record is shared by two output records: neither output owns it alone, so
    # neither traverse reports the ctx; the live output's backward still finds ctx.outputs
    x = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
    a, b = _TwoOutputsOnCtx.apply(x)
    del a
    gc.collect()
    b.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_collections_during_backward_leave_live_graphs_intact():
    # the collector runs inside every custom backward; graphs in use must come through whole
    class Collecting(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.sin()
            ctx.y = y
            ctx.x = x.detach()
            return y

        @staticmethod
        def backward(ctx, g):
            gc.collect()
            return g * ctx.x.cos()

    x = tg.tensor(np.linspace(-1, 1, 5), requires_grad=True)
    for _ in range(3):
        x.grad = None
        h = x
        for _ in range(4):
            h = Collecting.apply(h) * 1.5
        h.sum().backward()
        expected = np.ones(5)
        h_np = np.linspace(-1, 1, 5)
        for _ in range(4):
            expected = expected * np.cos(h_np) * 1.5
            h_np = np.sin(h_np) * 1.5
        np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)
