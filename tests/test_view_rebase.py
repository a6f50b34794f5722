"""Views taken before a recorded in-place write to their base (PyTorch's view rebase).

A view whose base (or a sibling view) was modified by a recorded in-place write after the view
was taken must, when next used, be a view of the base's current history (AsStridedBackward0):
its gradient flows through the write.  Each case runs the same code under tapegrad and torch and
compares values, requires_grad, grad_fn names and the gradient of every input."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

F64 = tg.float64


def _name(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def _run(mod, case):
    """Run case(mod, leaves) -> tensors to report; backward of a weighted sum of them."""
    leaves = {"w": mod.tensor(2.0, dtype=mod.float64, requires_grad=True),
              "a": mod.tensor([1.0, -2.0, 3.0, 0.5], dtype=mod.float64, requires_grad=True)}
    outs = case(mod, leaves)
    state = [(o.detach().numpy().copy(), o.requires_grad, _name(o), o.is_leaf) for o in outs]
    loss = sum((o * mod.arange(1, o.numel() + 1, dtype=mod.float64).reshape(o.shape)).sum()
               for o in outs if o.requires_grad)
    if isinstance(loss, int):
        return state, {}
    loss.backward()
    grads = {k: (None if t.grad is None else t.grad.numpy().copy()) for k, t in leaves.items()}
    return state, grads


def _compare(torch, case):
    got_state, got_grads = _run(tg, case)
    want_state, want_grads = _run(torch, case)
    assert len(got_state) == len(want_state)
    for (gv, grg, gname, gleaf), (wv, wrg, wname, wleaf) in zip(got_state, want_state):
        np.testing.assert_allclose(gv, wv)
        assert (grg, gname, gleaf) == (wrg, wname, wleaf)
    assert got_grads.keys() == want_grads.keys()
    for k in want_grads:
        if want_grads[k] is None:
            assert got_grads[k] is None, k
        else:
            np.testing.assert_allclose(got_grads[k], want_grads[k], err_msg=k)


def _setitem_on_constant(m, p):
    base = m.zeros(3, dtype=m.float64)
    v = base[0:2]                       # taken before the write
    base[1] = p["w"]
    return [v]


def _setitem_on_nonleaf(m, p):
    x = p["a"] * 1
    v = x[0:2]
    x[1] = p["w"]
    return [v, x]


def _mul_on_nonleaf(m, p):
    x = p["a"] * 1
    v = x[1:3]
    x.mul_(p["w"])
    return [v]


def _add_on_constant(m, p):
    base = m.ones(4, dtype=m.float64)
    v = base[::2]
    base.add_(p["a"])
    return [v]


def _copy_on_constant(m, p):
    base = m.zeros(2, 2, dtype=m.float64)
    v = base.t()
    base.copy_(p["a"].reshape(2, 2) * p["w"])
    return [v]


def _fill_with_tensor(m, p):
    x = p["a"] * 2
    v = x[2:]
    x.fill_(p["w"])
    return [v]


def _zero_on_nonleaf(m, p):
    x = p["a"] * 2
    v = x[:3]
    x.zero_()
    return [v]


def _sibling_write(m, p):
    base = m.zeros(4, dtype=m.float64)
    v1 = base[0:2]
    v2 = base[1:3]
    v1[1] = p["w"]                      # a write through v1 changes v2's history too
    return [v2, v1, base]


def _sibling_inplace_op(m, p):
    x = p["a"] * 1
    v1 = x[0:2]
    v2 = x[1:4]
    v1.mul_(p["w"])
    return [v2]


def _view_of_view(m, p):
    base = m.zeros(3, 4, dtype=m.float64)
    row = base[1]
    part = row[1:3]
    base[1, 2] = p["w"]
    return [part, row]


def _two_writes(m, p):
    x = p["a"] * 1
    v = x[1:]
    x[0] = p["w"]
    x[2] = p["w"] * p["w"]
    return [v * 1, x]


def _stale_view_written_through(m, p):
    x = p["a"] * 1
    v = x[0:2]
    x[1] = p["w"]
    v.mul_(3)                           # v is rebased first, then written through
    return [v, x]


def _reshape_view(m, p):
    base = m.zeros(2, 2, dtype=m.float64)
    flat = base.reshape(4)
    base[1] = p["a"][:2]
    return [flat]


def _write_through_view_of_view(m, p):
    x = p["a"].reshape(2, 2) * 1
    col = x.t()[1]                      # a view of a view: rebased onto x before the write
    col.mul_(p["w"])
    return [col, x]


def _write_through_transposed_slice_after_base_write(m, p):
    x = p["a"].reshape(2, 2) * 1
    tv = x.t()[0:1]
    x[1, 1] = p["w"]
    tv[0, 1] = p["w"] * 3
    return [tv, x]


def _view_taken_after(m, p):
    base = m.zeros(3, dtype=m.float64)
    base[1] = p["w"]
    return [base[0:2]]                  # not stale: the history it reads is current


CASES = [_setitem_on_constant, _setitem_on_nonleaf, _mul_on_nonleaf, _add_on_constant,
         _copy_on_constant, _fill_with_tensor, _zero_on_nonleaf, _sibling_write,
         _sibling_inplace_op, _view_of_view, _two_writes, _stale_view_written_through,
         _reshape_view, _write_through_view_of_view,
         _write_through_transposed_slice_after_base_write, _view_taken_after]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__.strip("_"))
def test_stale_view_matches_torch(torch, case):
    _compare(torch, case)


def test_reported_case_values():
    w = tg.tensor(2.0, requires_grad=True)
    base = tg.zeros(3)
    v = base[0:2]
    base[1] = w
    assert v.requires_grad and not v.is_leaf
    assert type(v.grad_fn).__name__ == "AsStridedBackward0"
    assert type(v.grad_fn.next_functions[0][0]).__name__ == "CopySlices"
    (v * 3).sum().backward()
    assert w.grad.item() == 3.0


def test_nonleaf_base_values():
    a = tg.tensor([1.0, 1.0, 1.0], requires_grad=True)
    w = tg.tensor(2.0, requires_grad=True)
    x = a * 1
    v = x[0:2]
    x[1] = w
    (v * 3).sum().backward()
    assert w.grad.item() == 3.0
    assert a.grad.tolist() == [3.0, 0.0, 0.0]


def test_mul_inplace_then_old_view_values():
    a = tg.tensor([1.0, 1.0, 1.0], requires_grad=True)
    x = a * 1
    v = x[0:2]
    x.mul_(2)
    (v * 3).sum().backward()
    assert a.grad.tolist() == [6.0, 6.0, 0.0]


def test_stale_view_backward_directly():
    w = tg.tensor(2.0, requires_grad=True)
    base = tg.zeros(3)
    v = base[1:]
    base[1] = w
    v.backward(tg.tensor([5.0, 7.0]))
    assert w.grad.item() == 5.0


def test_broadcast_view_accumulates():
    w = tg.tensor(2.0, requires_grad=True)
    base = tg.zeros(3)
    wide = base.expand(2, 3)            # every base element seen twice
    base[1] = w
    (wide * tg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    assert w.grad.item() == 7.0


def test_random_inplace_then_old_view_gets_no_gradient():
    a = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = a * 1
    v = x[:2]
    x.uniform_()
    assert type(v.grad_fn).__name__ == "AsStridedBackward0"
    (v * 3).sum().backward()
    assert a.grad.tolist() == [0.0, 0.0, 0.0]


def test_second_order_through_rebased_view(torch):
    def run(m):
        w = m.tensor(1.5, dtype=m.float64, requires_grad=True)
        base = m.zeros(3, dtype=m.float64)
        v = base[1:]
        base[1] = w * w
        (g,) = m.autograd.grad((v ** 2).sum(), w, create_graph=True)
        g.backward()
        return g.item(), w.grad.item()
    assert run(tg) == pytest.approx(run(torch))


def test_saved_stale_view_still_raises(torch):
    for m in (tg, torch):
        a = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = m.tensor(2.0, requires_grad=True)
        x = a * 1
        v = x[0:2]
        y = v * v                       # saves v's old value
        x[1] = w
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_view_from_no_grad_then_recorded_write_raises(torch):
    for m in (tg, torch):
        w = m.tensor(2.0, requires_grad=True)
        base = m.zeros(3)
        with m.no_grad():
            v = base[0:2]
        base[1] = w
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
            v.grad_fn


def test_write_under_no_grad_regenerates_views(torch):
    # unrecorded, but the storage's version moved: PyTorch regenerates the view's grad_fn (the
    # base's history is unchanged, so the gradient is the same; a retained .grad moves with it)
    for m in (tg, torch):
        a = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x = a * 1
        v = x[:2]
        assert type(v.grad_fn).__name__ == "SliceBackward0"
        with m.no_grad():
            x.mul_(1)
        assert type(v.grad_fn).__name__ == "AsStridedBackward0"


# -- randomized sequences against torch ----------------------------------------------------------

def _random_program(seed):
    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(rng.integers(2, 6)):
        kind = rng.choice(["view", "view", "set_base", "mul_base", "set_view", "read"])
        lo = int(rng.integers(0, 5))
        hi = int(rng.integers(lo + 1, 7))
        steps.append((str(kind), lo, hi, float(rng.normal()), int(rng.integers(0, 6))))
    return bool(rng.integers(0, 2)), steps


def _play(m, program, leaves):
    nonleaf, steps = program
    w = leaves["w"]
    base = leaves["a"].repeat(2)[:6] * 1 if nonleaf else m.zeros(6, dtype=m.float64)
    views, outs = [], []
    for kind, lo, hi, c, k in steps:
        if kind == "view":
            views.append(base[lo:hi])
        elif kind == "set_base":
            base[k] = w * c
        elif kind == "mul_base":
            base.mul_(w * c + 1)
        elif kind == "set_view" and views:
            v = views[k % len(views)]
            v[0] = w * c
        elif kind == "read" and views:
            outs.append(views[k % len(views)] * c)
    return outs + views + [base]


@pytest.mark.parametrize("seed", range(40))
def test_random_sequences_match_torch(torch, seed):
    program = _random_program(seed)
    _compare(torch, lambda m, p: _play(m, program, p))


def test_inplace_on_view_from_no_grad_raises_in_grad_mode(torch):
    for m in (tg, torch):
        a = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x = a * 1
        with m.no_grad():
            u = x[0:2]
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being "
                                               "modified inplace with grad mode enabled"):
            u.mul_(2)
        base = m.zeros(3)
        with m.no_grad():
            c = base[0:2]
        c.mul_(2)                       # unrecorded: allowed
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
            c[0] = m.tensor(1.0, requires_grad=True)


def test_inplace_on_stale_view_without_history_raises_like_torch(torch):
    # PyTorch: a view taken while its base did not require grad has no grad_fn of its own; after
    # a recorded write to the base it counts as a leaf that requires grad until its history is
    # read (e.g. by using it in an op), so an in-place op on it raises
    for m in (tg, torch):
        w = m.tensor(1.5, requires_grad=True)
        base = m.zeros(3, 4)
        v = base[2:3]
        base[0, 0] = w
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                               "in an in-place operation"):
            v.mul_(w * 0.5)
        v2 = base[1:2]
        base[0, 1] = w
        (v2 * 1).sum()                  # reading its history rebases it
        v2.mul_(w)
        assert type(v2.grad_fn).__name__ == "AsStridedBackward0"


def test_leaf_quirk_after_write_through_the_view_itself(torch):
    # PyTorch: x[k] = value writes through a temporary view of x, so x keeps no history of its
    # own; a later in-place op on x raises the leaf error, a later x[k] = value does not (and
    # reads x's history, after which in-place ops on x work)
    for m in (tg, torch):
        w = m.tensor(1.3, requires_grad=True)
        base = m.zeros(4)
        v = base[0:2]
        v[0] = w
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            v.mul_(w)
        v[1] = w * 2                    # indexing v reads (rebases) its history first
        v.mul_(w)
        u = base[2:4]
        u.mul_(w)                       # an in-place op through the view itself: rebased
        u.mul_(w)
        assert type(u.grad_fn).__name__ == "AsStridedBackward0"
