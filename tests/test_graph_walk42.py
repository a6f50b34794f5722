"""A script that walks grad_fn.next_functions keeping only the id()s of the nodes it has seen
(torchviz's make_dot, node counters) must meet every node: PyTorch's node objects live as long
as their nodes, so an id is never recycled during the walk.  tapegrad's node objects were freed
as soon as the walk let go of them, a later node got the same address, and the walk stopped
early (SILENT: 5 nodes of 153 counted)."""
import gc

import pytest

import tapegrad as tg


def _count_by_id(root):
    seen, stack = set(), [root]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        stack.extend(f for f, _ in fn.next_functions)
    return len(seen)


def _count_recursive(fn, seen):
    if fn is None or id(fn) in seen:
        return
    seen.add(id(fn))
    for f, _ in fn.next_functions:
        _count_recursive(f, seen)


def _chain(lib):
    x = lib.ones(3, requires_grad=True)
    w = lib.ones(3, requires_grad=True)
    h = x
    for _ in range(30):
        h = (h * w).tanh() + h.sin() * 0.5
    return h.sum()


def _mlp(lib):
    lib.manual_seed(0)
    layers = [m for _ in range(20) for m in (lib.nn.Linear(4, 4), lib.nn.Tanh())]
    return lib.nn.Sequential(*layers)(lib.ones(2, 4)).sum()


@pytest.mark.parametrize("build", [_chain, _mlp])
def test_walk_by_id_meets_every_node(build):
    y = build(tg)
    # the chain: Sum, and per step Add, Tanh, Mul, Mul (0.5), Sin; the two leaves' AccumulateGrad
    expected = 153 if build is _chain else 101
    assert _count_by_id(y.grad_fn) == expected
    seen = set()
    _count_recursive(y.grad_fn, seen)
    assert len(seen) == expected


@pytest.mark.parametrize("build", [_chain, _mlp])
def test_walk_counts_as_torch(build):
    torch = pytest.importorskip("torch")
    assert _count_by_id(build(tg).grad_fn) == _count_by_id(build(torch).grad_fn)


def test_same_node_object_while_its_reader_lives():
    y = _mlp(tg)
    fn = y.grad_fn
    below = [f for f, _ in fn.next_functions]
    gc.collect()
    assert [f for f, _ in fn.next_functions] == below
    assert all(a is b for a, b in zip(below, (f for f, _ in fn.next_functions)))


def test_graph_freed_after_walk_and_release():
    # The kept edges (and the EdgeNode -> owner cycle the collector frees) do not keep a graph
    # alive once the script lets go of it.
    import weakref
    y = _mlp(tg)
    _count_by_id(y.grad_fn)
    ref = weakref.ref(y.grad_fn)
    del y
    gc.collect()
    assert ref() is None
