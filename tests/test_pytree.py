"""tapegrad.utils._pytree against torch.utils._pytree: specs (and how they print), leaves, key
paths, structure errors, user-registered nodes; and tapegrad.func taking the same nests."""
from __future__ import annotations

import collections
import dataclasses

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.utils import _pytree as mine

torch = pytest.importorskip("torch")
import torch.utils._pytree as theirs  # noqa: E402

Pair = collections.namedtuple("Pair", "x y")


def trees(lib):
    return [None, 5, "text", [], (), {}, [1, (2, 3)], {"b": 1, "a": [2, None]}, Pair(1, (2, 3)),
            collections.OrderedDict(b=1, a=2), collections.defaultdict(list, {"k": 3}),
            collections.deque([1, 2], maxlen=4), lib.Size([2, 3]), (1, [2, {"z": (3,)}])]


def _spec_text(spec):
    return repr(spec)


@pytest.mark.parametrize("index", range(len(trees(tg))))
def test_flatten_spec_leaves_paths_and_round_trip(index):
    def run(pytree, lib):
        tree = trees(lib)[index]
        leaves, spec = pytree.tree_flatten(tree)
        back = pytree.tree_unflatten(leaves, spec)
        doubled = pytree.tree_map(lambda v: v * 2 if isinstance(v, int) else v, tree)
        paths = [(pytree.keystr(k), v) for k, v in pytree.tree_leaves_with_path(tree)]
        return (repr(spec), leaves, (spec.num_leaves, spec.num_nodes, spec.num_children,
                                     spec.is_leaf()),
                pytree.treespec_pprint(spec), type(back).__name__, back == tree,
                repr(doubled).replace("torch.Size", "Size"), paths)
    assert run(mine, tg) == run(theirs, torch)


def test_return_types_are_nodes():
    def run(pytree, lib):
        result = lib.tensor([[1.0, 5.0], [3.0, 2.0]]).max(0)
        leaves, spec = pytree.tree_flatten(result)
        back = spec.unflatten([leaf * 2 for leaf in leaves])
        return (repr(spec), type(back).__name__, back.values.tolist(), back.indices.tolist(),
                pytree.is_structseq(result), pytree.is_namedtuple(result))
    assert run(mine, tg) == run(theirs, torch)


CALLS = {
    "arity": lambda p: p.tree_map(lambda a, b: a + b, [1, 2], [1, 2, 3]),
    "type": lambda p: p.tree_map(lambda a, b: a + b, [1, 2], (1, 2)),
    "keys": lambda p: p.tree_map(lambda a, b: a + b, {"a": 1}, {"b": 1}),
    "dict kinds": lambda p: p.tree_map(lambda a, b: a + b, {"a": 1, "b": 2},
                                       collections.OrderedDict(b=10, a=20)),
    "prefix": lambda p: p.tree_map(lambda a, b: (a, b), [1, 2], [[1], (2, 3)]),
    "named": lambda p: p.tree_map(lambda a, b: a + b, Pair(1, 2), Pair(3, 4)),
    "deque maxlen": lambda p: p.tree_map(lambda a, b: a + b, collections.deque([1], maxlen=2),
                                         collections.deque([2])),
    "unflatten count": lambda p: p.tree_unflatten([1], p.tree_structure([1, 2])),
    "swapped": lambda p: p.tree_unflatten(p.tree_structure([1, 2]), [3, 4]),
    "not a spec": lambda p: p.tree_unflatten([1], [1]),
    "map_only": lambda p: p.tree_map_only(int, lambda x: x + 1, [1, 2.0, (3,)]),
    "map_only types": lambda p: p.tree_map_only((int, float), lambda x: x + 1, [1, 2.0, "a"]),
    "map_only pred": lambda p: p.tree_map_only(lambda x: x == 2, lambda x: -x, [1, 2]),
    "all/any": lambda p: (p.tree_all(lambda x: x > 0, [1, 2]), p.tree_any(lambda x: x > 1, [1]),
                          p.tree_all_only(int, lambda x: x > 0, [1, "a"]),
                          p.tree_any_only(str, lambda x: x == "a", [1, "a"])),
    "is_leaf": lambda p: p.tree_flatten([1, (2, 3)], is_leaf=lambda x: isinstance(x, tuple)),
    "equality": lambda p: (p.tree_structure([1, 2]) == p.tree_structure([3, 4]),
                           p.tree_structure([1]) == p.tree_structure((1,)),
                           hash(p.tree_structure({"a": [1]})) == hash(p.tree_structure({"a": [2]}))),
    "leaf spec": lambda p: (repr(p.treespec_leaf()), p.tree_structure(3) == p.treespec_leaf(),
                            p.tree_structure(3).is_leaf()),
    "tuple spec": lambda p: p.treespec_tuple([p.treespec_leaf(), p.treespec_leaf()]),
    "dict spec": lambda p: p.treespec_dict({"a": p.treespec_leaf()}),
    "with path": lambda p: p.tree_map_with_path(lambda k, v: p.keystr(k),
                                                {"a": [1, 2], "n": Pair(1, 2)}),
    "key_get": lambda p: p.key_get({"a": [1, (5, 6)]},
                                   p.tree_leaves_with_path({"a": [1, (5, 6)]})[2][0]),
    "iter": lambda p: list(p.tree_iter([1, (2, {"a": 3})])),
    "predicates": lambda p: (p.is_namedtuple(Pair), p.is_namedtuple(Pair(1, 2)),
                             p.is_namedtuple((1,)), p.tree_is_leaf(None), p.tree_is_leaf([1])),
}


@pytest.mark.parametrize("name", CALLS)
def test_calls_and_their_errors(name):
    def run(pytree):
        try:
            return repr(CALLS[name](pytree))
        except Exception as error:      # (the same type and words, or the test fails)
            return type(error).__name__, str(error).split(" at 0x")[0]
    assert run(mine) == run(theirs)


def test_tree_map_in_place_visits_in_order():
    seen = {id(p): [] for p in (mine, theirs)}
    for p in (mine, theirs):
        assert p.tree_map_(lambda x, p=p: seen[id(p)].append(x), [1, [2, (3,)]]) == [1, [2, (3,)]]
    assert seen[id(mine)] == seen[id(theirs)] == [1, 2, 3]


def _register_user_nodes(pytree):
    @dataclasses.dataclass
    class Point:
        x: int
        y: int

    class Box:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def __repr__(self):
            return f"Box({self.a}, {self.b})"

    pytree.register_dataclass(Point)
    pytree.register_pytree_node(Box, lambda b: ([b.a, b.b], "ctx"), lambda c, ctx: Box(*c))
    return Point, Box


def test_user_registered_nodes():
    def run(pytree):
        Point, Box = _register_user_nodes(pytree)
        out = [pytree.tree_flatten(Point(1, 2))[0], repr(pytree.tree_map(lambda v: v * 10, Point(1, 2))),
               [(pytree.keystr(k), v) for k, v in pytree.tree_leaves_with_path([Point(1, 2)])],
               pytree.tree_flatten([Box(1, 2)])[0], repr(pytree.tree_map(lambda v: v + 1, Box(1, [2])))]
        for bad in (lambda: pytree.register_pytree_node(Box, lambda b: ([], None), lambda c, x: 0),
                    lambda: pytree.tree_leaves_with_path(Box(1, 2)),
                    lambda: pytree.tree_map(lambda a, b: a, Box(1, 2), [1, 2])):
            with pytest.raises(ValueError) as info:
                bad()
            out.append(str(info.value).split("<")[0])
        return out
    assert run(mine) == run(theirs)


def test_func_transforms_take_the_same_nests():
    # (tapegrad.func flattens through the same module: an OrderedDict of parameters and a
    # named tuple of inputs, as torch.func takes them)
    def run(lib):
        params = collections.OrderedDict(w=lib.tensor([1.0, -2.0]), b=lib.tensor(0.5))
        batch = Pair(lib.tensor([[1.0, 2.0], [3.0, 4.0]]), lib.tensor([1.0, 0.0]))

        def loss(p, data):
            return ((data.x @ p["w"] + p["b"] - data.y) ** 2).mean()
        grads = lib.func.grad(loss)(params, batch)
        per_sample = lib.func.vmap(lambda row: (row * params["w"]).sum())(batch.x)
        return type(grads).__name__, {k: v.tolist() for k, v in grads.items()}, per_sample.tolist()
    assert run(tg) == run(torch)


@pytest.mark.parametrize("case", ["dict order", "list for tuple", "named tuple for tuple",
                                  "dict for OrderedDict", "same"])
def test_vjp_cotangents_must_have_the_outputs_pytree_structure(case):
    # (one structure test, TreeSpec equality, as torch.func: key order and container kinds count)
    def run(lib):
        x = lib.ones(2)
        f, cot = {
            "dict order": (lambda x: {"a": x * 2, "b": x * 3},
                           {"b": lib.ones(2), "a": lib.ones(2)}),
            "list for tuple": (lambda x: (x * 2, x * 3), [lib.ones(2), lib.ones(2)]),
            "named tuple for tuple": (lambda x: Pair(x, x * 2), (lib.ones(2), lib.ones(2))),
            "dict for OrderedDict": (lambda x: collections.OrderedDict(a=x * 2),
                                     {"a": lib.ones(2)}),
            "same": (lambda x: {"a": x * 2}, {"a": lib.ones(2)}),
        }[case]
        try:
            _, pullback = lib.func.vjp(f, x)
            return [t.tolist() for t in pullback(cot)]
        except RuntimeError as error:
            return str(error)
    assert run(tg) == run(torch)
