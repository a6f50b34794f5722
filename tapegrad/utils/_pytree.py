"""Pytrees: nests of containers (tuples, lists, dicts, named tuples, OrderedDicts, defaultdicts,
deques, `Size` and the `return_types` tuples) whose other parts are leaves, as
`torch.utils._pytree` defines them.

A tree is taken apart by `tree_flatten` into its leaves (depth first, left to right) and a
`TreeSpec` that records the containers, and put back by `tree_unflatten`; `tree_map` applies a
function to the leaves of one or several trees of the same structure.  User classes become
containers through `register_pytree_node` (or `register_dataclass`).  `tapegrad.func`
flattens the arguments and results of its transforms through this module, so they accept the
same nests as PyTorch's.

None is a leaf, as in PyTorch's Python implementation; dicts keep their insertion order.
"""
from __future__ import annotations as _annotations

import dataclasses
from collections import OrderedDict, defaultdict, deque, namedtuple
from typing import Any, Callable, Iterable, NamedTuple

from ..tensor import Size

__all__ = [
    "PyTree", "Context", "FlattenFunc", "UnflattenFunc", "FlattenWithKeysFunc", "KeyEntry",
    "KeyPath", "NodeDef", "SUPPORTED_NODES", "BUILTIN_TYPES", "STANDARD_DICT_TYPES",
    "TreeSpec", "LeafSpec", "SequenceKey", "MappingKey", "GetAttrKey",
    "register_pytree_node", "register_dataclass", "is_namedtuple", "is_namedtuple_class",
    "is_namedtuple_instance", "is_structseq", "is_structseq_class", "is_structseq_instance",
    "tree_is_leaf", "tree_flatten", "tree_unflatten", "tree_iter", "tree_leaves",
    "tree_structure", "tree_map", "tree_map_", "map_only", "tree_map_only", "tree_map_only_",
    "tree_all", "tree_any", "tree_all_only", "tree_any_only", "tree_flatten_with_path",
    "tree_leaves_with_path", "tree_map_with_path", "keystr", "key_get", "treespec_leaf",
    "treespec_tuple", "treespec_dict", "treespec_pprint",
]

PyTree = Any
Context = Any
FlattenFunc = Callable[[PyTree], "tuple[list[Any], Context]"]
UnflattenFunc = Callable[[Iterable[Any], Context], PyTree]
KeyEntry = Any
KeyPath = "tuple[KeyEntry, ...]"
FlattenWithKeysFunc = Callable[[PyTree], "tuple[list[tuple[KeyEntry, Any]], Context]"]


class NodeDef(NamedTuple):
    """How a registered container type is taken apart and rebuilt."""
    type: type
    flatten_fn: FlattenFunc
    unflatten_fn: UnflattenFunc
    flatten_with_keys_fn: FlattenWithKeysFunc | None = None


# -- key paths -----------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """A child's position in a sequence; prints as ``[idx]``."""
    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def get(self, sequence):
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    """A child's key in a mapping; prints as ``[key]`` with the key's repr."""
    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping):
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """A child read as an attribute (a named-tuple field); prints as ``.name``."""
    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj):
        return getattr(obj, self.name)


def keystr(kp) -> str:
    """A key path as the Python accessor it stands for: ``['a'][0].x``."""
    return "".join(str(k) for k in kp)


def key_get(obj, kp):
    """The part of obj that key path kp leads to."""
    for k in kp:
        obj = k.get(obj)
    return obj


# -- the registry --------------------------------------------------------------------------------

SUPPORTED_NODES: dict = {}


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None,
                         to_dumpable_context=None, from_dumpable_context=None,
                         flatten_with_keys_fn=None) -> None:
    """Make cls a container: ``flatten_fn(obj) -> (children, context)`` takes an instance
    apart, ``unflatten_fn(children, context)`` rebuilds it; ``flatten_with_keys_fn`` (optional)
    gives ``([(key, child), ...], context)`` for the *_with_path functions.  (The serialization
    arguments are accepted for PyTorch's signature; this module does not serialize specs.)"""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)


def register_dataclass(cls, *, field_names=None, drop_field_names=None, **_serialization):
    """Make a dataclass a container whose children are its fields (those of `field_names`, by
    default every field the constructor takes, less `drop_field_names`)."""
    if field_names is None:
        if not dataclasses.is_dataclass(cls):
            raise ValueError(f"field_names must be specified with a list of all fields used to "
                             f"initialize {cls}, as it is not a dataclass.")
        field_names = [f.name for f in dataclasses.fields(cls) if f.init]
    names = [n for n in field_names if n not in set(drop_field_names or ())]

    register_pytree_node(
        cls, lambda obj: ([getattr(obj, n) for n in names], None),
        lambda children, _: cls(**dict(zip(names, children))),
        flatten_with_keys_fn=lambda obj: ([(GetAttrKey(n), getattr(obj, n)) for n in names],
                                          None))
    return cls


def _sequence_keys(seq):
    return [(SequenceKey(i), v) for i, v in enumerate(seq)]


def _mapping_keys(mapping):
    return [(MappingKey(k), v) for k, v in mapping.items()]


def _register_sequence(cls, rebuild) -> None:
    """A node whose children are its items, in order, rebuilt by rebuild(children)."""
    register_pytree_node(cls, lambda s: (list(s), None), lambda c, _: rebuild(c),
                         flatten_with_keys_fn=lambda s: (_sequence_keys(s), None))


def _register_mapping(cls) -> None:
    """A mapping node: its values the children, its keys (in order) the context."""
    register_pytree_node(cls, lambda d: (list(d.values()), list(d)),
                         lambda c, keys: cls(zip(keys, c)),
                         flatten_with_keys_fn=lambda d: (_mapping_keys(d), list(d)))


def _register_builtin_nodes() -> None:
    _register_sequence(tuple, tuple)
    _register_sequence(list, list)
    # (PyTorch rebuilds a Size as a plain tuple: the leaves may be anything, not only ints)
    _register_sequence(Size, tuple)
    _register_mapping(dict)
    _register_mapping(OrderedDict)
    # (a named tuple's node type is `namedtuple` itself, its class the context, as PyTorch's)
    register_pytree_node(
        namedtuple, lambda t: (list(t), type(t)), lambda c, cls: cls(*c),
        flatten_with_keys_fn=lambda t: ([(GetAttrKey(f), getattr(t, f)) for f in t._fields],
                                        type(t)))
    register_pytree_node(
        defaultdict, lambda d: (list(d.values()), [d.default_factory, list(d)]),
        lambda c, ctx: defaultdict(ctx[0], zip(ctx[1], c)),
        flatten_with_keys_fn=lambda d: (_mapping_keys(d), [d.default_factory, list(d)]))
    register_pytree_node(deque, lambda d: (list(d), d.maxlen),
                         lambda c, maxlen: deque(c, maxlen=maxlen),
                         flatten_with_keys_fn=lambda d: (_sequence_keys(d), d.maxlen))


_register_builtin_nodes()
BUILTIN_TYPES = frozenset({tuple, list, dict, namedtuple, OrderedDict, defaultdict, deque})
STANDARD_DICT_TYPES = frozenset({dict, OrderedDict, defaultdict})


def is_namedtuple_class(cls) -> bool:
    """A tuple subclass made by collections.namedtuple (or typing.NamedTuple)."""
    return (isinstance(cls, type) and issubclass(cls, tuple)
            and isinstance(getattr(cls, "_fields", None), tuple)
            and callable(getattr(cls, "_make", None)))


def is_namedtuple_instance(obj) -> bool:
    """obj is an instance of a named-tuple class."""
    return is_namedtuple_class(type(obj))


def is_namedtuple(obj) -> bool:
    """obj is a named-tuple class or instance."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def is_structseq_class(cls) -> bool:
    """A struct-sequence class: a tuple with n_fields/n_sequence_fields/n_unnamed_fields, such
    as the `return_types` of max, sort, topk ... (the results of C functions in CPython)."""
    return (isinstance(cls, type) and issubclass(cls, tuple)
            and all(isinstance(getattr(cls, a, None), int)
                    for a in ("n_fields", "n_sequence_fields", "n_unnamed_fields")))


def is_structseq_instance(obj) -> bool:
    """obj is a struct-sequence instance (a `return_types` result)."""
    return is_structseq_class(type(obj))


def is_structseq(obj) -> bool:
    """obj is a struct-sequence class or instance."""
    return is_structseq_class(obj if isinstance(obj, type) else type(obj))


def _structseq_node(cls) -> NodeDef:
    return NodeDef(cls, lambda t: (list(t), None), lambda c, _: cls(c),
                   lambda t: (_sequence_keys(t), None))


def _node_type(tree):
    cls = type(tree)
    return namedtuple if is_namedtuple_class(cls) else cls


def _node_def(node_type) -> NodeDef | None:
    found = SUPPORTED_NODES.get(node_type)
    if found is None and is_structseq_class(node_type):
        return _structseq_node(node_type)
    return found


def tree_is_leaf(tree, is_leaf=None) -> bool:
    """Whether tree is a leaf: not a registered container, or one `is_leaf` claims."""
    if is_leaf is not None and is_leaf(tree):
        return True
    return _node_def(_node_type(tree)) is None


# -- tree specs ----------------------------------------------------------------------------------

class TreeSpec:
    """The structure of a pytree: the root's node type and context, and a spec per child (a
    leaf's spec is a `LeafSpec`, printed `*`)."""
    __slots__ = ("type", "_context", "_children", "num_nodes", "num_leaves", "num_children")

    def __init__(self, type, context, children_specs) -> None:
        self.type = type
        self._context = context
        self._children = list(children_specs)
        if type is None:
            self.num_nodes = self.num_leaves = 1
            self.num_children = 0
        else:
            self.num_nodes = 1 + sum(c.num_nodes for c in self._children)
            self.num_leaves = sum(c.num_leaves for c in self._children)
            self.num_children = len(self._children)

    @property
    def context(self):
        return self._context

    @property
    def children_specs(self) -> list:
        return self._children

    def is_leaf(self) -> bool:
        return self.num_nodes == 1 and self.num_leaves == 1

    def children(self) -> list:
        return list(self._children)

    def child(self, index: int):
        return self._children[index]

    def __repr__(self, indent: int = 0) -> str:
        inner = ""
        if self._children:
            indent += 2
            inner = (",\n" + " " * indent).join(c.__repr__(indent) for c in self._children)
        return f"TreeSpec({self.type.__name__}, {self._context}, [{inner}])"

    def __eq__(self, other):
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (str(self.type) == str(other.type) and self._context == other._context
                and self._children == other._children)

    def __hash__(self):
        context = self._context
        if isinstance(context, list):
            context = tuple(tuple(c) if isinstance(c, list) else c for c in context)
        return hash((self.type, context, tuple(self._children)))

    def unflatten(self, leaves):
        """The tree of this structure with these leaves."""
        if not isinstance(leaves, (list, tuple)):
            leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} "
                             f"but the spec refers to a pytree that holds {self.num_leaves} "
                             f"items ({self}).")
        return self._build(leaves, 0)

    def _build(self, leaves, start: int):
        if self.is_leaf():
            return leaves[start]
        children = []
        for spec in self._children:
            children.append(spec._build(leaves, start))
            start += spec.num_leaves
        return _node_def(self.type).unflatten_fn(children, self._context)

    def flatten_up_to(self, tree) -> list:
        """The subtrees of tree at this spec's leaves; tree must have this structure down to
        them (dicts of the standard kinds may differ in kind and key order, not in keys)."""
        subtrees: list = []
        self._collect(tree, subtrees)
        return subtrees

    def _collect(self, node, subtrees: list) -> None:
        if self.is_leaf():
            subtrees.append(node)
            return
        node_type = _node_type(node)
        both_dicts = self.type in STANDARD_DICT_TYPES and node_type in STANDARD_DICT_TYPES
        if self.type not in BUILTIN_TYPES:
            # (a registered class must match exactly, context included)
            if node_type != self.type:
                raise ValueError(f"Type mismatch; expected {self.type!r}, but got "
                                 f"{node_type!r}.")
            children, context = _node_def(node_type).flatten_fn(node)
            self._check_arity(len(children))
            if context != self._context:
                raise ValueError(f"Node context mismatch for custom node type {self.type!r}.")
        elif both_dicts:
            self._check_arity(len(node))
            keys = self._context[1] if self.type is defaultdict else self._context
            missing, extra = set(keys) - set(node), set(node) - set(keys)
            if missing or extra:
                raise ValueError("Node keys mismatch" +
                                 (f"; missing key(s): {missing}" if missing else "") +
                                 (f"; extra key(s): {extra}" if extra else "") + ".")
            children = [node[k] for k in keys]
        else:
            if node_type != self.type:
                raise ValueError(f"Node type mismatch; expected {self.type!r}, but got "
                                 f"{node_type!r}.")
            self._check_arity(len(node))
            children, context = _node_def(node_type).flatten_fn(node)
            if node_type is not deque and context != self._context:
                raise ValueError(f"Node context mismatch for node type {self.type!r}; "
                                 f"expected {self._context!r}, but got {context!r}.")
        for spec, child in zip(self._children, children):
            spec._collect(child, subtrees)

    def _check_arity(self, n: int) -> None:
        if n != self.num_children:
            raise ValueError(f"Node arity mismatch; expected {self.num_children}, but got {n}.")


class LeafSpec(TreeSpec):
    """The spec of a leaf."""
    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(None, None, [])

    def __repr__(self, indent: int = 0) -> str:
        return "*"


_LEAF_SPEC = LeafSpec()


def treespec_leaf() -> LeafSpec:
    """The spec of a leaf (`*`)."""
    return _LEAF_SPEC


def treespec_tuple(iterable=(), /) -> TreeSpec:
    """The spec of a tuple whose children have the given specs."""
    return TreeSpec(tuple, None, list(iterable))


def treespec_dict(mapping=(), /, **kwargs) -> TreeSpec:
    """The spec of a dict whose values have the given specs."""
    entries = dict(mapping, **kwargs)
    return TreeSpec(dict, list(entries), list(entries.values()))


class _Leaf(str):
    """What treespec_pprint puts at each leaf: prints as `*` inside any container's repr."""

    def __repr__(self) -> str:
        return "*"


def treespec_pprint(treespec: TreeSpec) -> str:
    """The structure as the repr of a tree whose leaves print as `*`: ``[*, (*, {'a': *})]``."""
    return repr(treespec.unflatten([_Leaf("*")] * treespec.num_leaves))


# -- flattening and mapping ----------------------------------------------------------------------

def tree_flatten(tree, is_leaf=None):
    """(leaves, spec): the leaves of tree, depth first, and its structure."""
    leaves: list = []

    def spec_of(node):
        if tree_is_leaf(node, is_leaf):
            leaves.append(node)
            return _LEAF_SPEC
        node_type = _node_type(node)
        children, context = _node_def(node_type).flatten_fn(node)
        return TreeSpec(node_type, context, [spec_of(c) for c in children])

    spec = spec_of(tree)
    return leaves, spec


def tree_unflatten(leaves, treespec):
    """The tree of structure treespec with these leaves (the two arguments may be swapped)."""
    if not isinstance(treespec, TreeSpec):
        if not isinstance(leaves, TreeSpec):
            raise TypeError(f"Expected `treespec` to be an instance of PyTreeSpec but got item "
                            f"of type {type(treespec)}.")
        leaves, treespec = treespec, leaves
    return treespec.unflatten(leaves)


def tree_iter(tree, is_leaf=None):
    """The leaves of tree, one at a time, depth first."""
    if tree_is_leaf(tree, is_leaf):
        yield tree
        return
    children, _ = _node_def(_node_type(tree)).flatten_fn(tree)
    for child in children:
        yield from tree_iter(child, is_leaf)


def tree_leaves(tree, is_leaf=None) -> list:
    """The leaves of tree as a list, depth first."""
    return list(tree_iter(tree, is_leaf))


def tree_structure(tree, is_leaf=None) -> TreeSpec:
    """The spec of tree (tree_flatten without the leaves)."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """A tree of tree's structure holding func(leaf, *the leaves of rests at the same place);
    each of rests must have tree's structure down to tree's leaves."""
    leaves, spec = tree_flatten(tree, is_leaf)
    columns = [leaves] + [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten([func(*xs) for xs in zip(*columns)])


def tree_map_(func, tree, *rests, is_leaf=None):
    """func applied to the leaves for its effect (in order); returns tree itself."""
    leaves, spec = tree_flatten(tree, is_leaf)
    for xs in zip(leaves, *[spec.flatten_up_to(r) for r in rests]):
        func(*xs)
    return tree


def _predicate(type_or_types_or_pred):
    if isinstance(type_or_types_or_pred, (type, tuple)):
        return lambda x: isinstance(x, type_or_types_or_pred)
    if callable(type_or_types_or_pred):
        return type_or_types_or_pred
    raise TypeError("Argument must be a type, a tuple of types, or a callable.")


def map_only(type_or_types_or_pred):
    """Decorator: the function applies to the leaves the type(s) or predicate select and
    returns the others unchanged."""
    selects = _predicate(type_or_types_or_pred)

    def wrapper(func):
        def wrapped(x):
            return func(x) if selects(x) else x
        wrapped.__name__ = getattr(func, "__name__", "wrapped")
        wrapped.__doc__ = func.__doc__
        return wrapped
    return wrapper


def tree_map_only(type_or_types_or_pred, func, tree, is_leaf=None):
    """tree_map of func over the leaves the type(s) or predicate select; others stay."""
    return tree_map(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred, func, tree, is_leaf=None):
    """tree_map_ over the leaves the type(s) or predicate select; returns tree."""
    return tree_map_(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None) -> bool:
    """pred holds for every leaf."""
    return all(pred(x) for x in tree_iter(tree, is_leaf))


def tree_any(pred, tree, is_leaf=None) -> bool:
    """pred holds for some leaf."""
    return any(pred(x) for x in tree_iter(tree, is_leaf))


def tree_all_only(type_or_types, pred, tree, is_leaf=None) -> bool:
    """pred holds for every leaf of the given type(s)."""
    selects = _predicate(type_or_types)
    return all(pred(x) for x in tree_iter(tree, is_leaf) if selects(x))


def tree_any_only(type_or_types, pred, tree, is_leaf=None) -> bool:
    """pred holds for some leaf of the given type(s)."""
    selects = _predicate(type_or_types)
    return any(pred(x) for x in tree_iter(tree, is_leaf) if selects(x))


def _broadcast_to_and_flatten(tree, treespec, is_leaf=None):
    """tree, a prefix of treespec's structure, flattened with each of its leaves repeated once
    per leaf of the subtree of treespec it stands for; None when tree is not such a prefix
    (PyTorch's helper, which vmap reads its in_dims and out_dims with)."""
    full = treespec.unflatten([0] * treespec.num_leaves)
    result: list = []

    def repeat(leaf, subtree):
        result.extend([leaf] * tree_structure(subtree, is_leaf).num_leaves)

    try:
        tree_map_(repeat, tree, full, is_leaf=is_leaf)
    except ValueError:
        return None
    return result


# -- key paths -----------------------------------------------------------------------------------

def tree_flatten_with_path(tree, is_leaf=None):
    """([(key path, leaf), ...], spec): tree_flatten with each leaf's key path."""
    pairs: list = []

    def visit(node, path):
        if tree_is_leaf(node, is_leaf):
            pairs.append((path, node))
            return
        node_type = _node_type(node)
        node_def = _node_def(node_type)
        if node_def.flatten_with_keys_fn is None:
            raise ValueError(f"Did not find a flatten_with_keys_fn for type: {node_type}. "
                             f"Please pass a flatten_with_keys_fn argument to "
                             f"register_pytree_node.")
        keyed, _ = node_def.flatten_with_keys_fn(node)
        for key, child in keyed:
            visit(child, path + (key,))

    visit(tree, ())
    return pairs, tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree, is_leaf=None) -> list:
    """[(key path, leaf), ...] of tree, depth first."""
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(func, tree, *rests, is_leaf=None):
    """tree_map whose func also receives each leaf's key path first."""
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    columns = [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten([func(path, leaf, *others)
                           for (path, leaf), *others in zip(pairs, *columns)])
