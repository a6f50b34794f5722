"""torch.fx.node: a graph's Node (one operation: placeholder, get_attr, call_function,
call_module, call_method or output), map_arg / map_aggregate over nested arguments, and the
printed names PyTorch gives targets."""
from __future__ import annotations as _annotations

import builtins
import types
from .._torch_names import TorchNamedClass as _TorchNamedClass, torch_module_name

__all__ = ["Node", "map_arg", "map_aggregate", "Argument", "Target"]

Argument = object
Target = object

_OPS = ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output", "root")

# Names of PyTorch's functions in torch.nn.functional that are compiled builtins there: fx records
# them under their builtin's module (`torch.conv2d`, `torch._C._nn.linear`) and with the
# arguments as the caller passed them; the others are Python functions that hand fx their
# parameters (positional without a default, keywords with one).  A fact about PyTorch 2.x.
F_BUILTINS = {
    "torch": ("adaptive_avg_pool1d", "avg_pool1d", "bilinear", "celu_", "channel_shuffle",
              "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "cosine_similarity", "hardshrink", "native_channel_shuffle",
              "pairwise_distance", "pdist", "pixel_shuffle", "pixel_unshuffle", "prelu", "relu_",
              "rrelu_", "selu_", "threshold_"),
    "torch._C._nn": ("avg_pool2d", "avg_pool3d", "elu_", "gelu", "hardtanh_", "leaky_relu_",
                     "linear", "logsigmoid", "one_hot", "scaled_dot_product_attention",
                     "softplus", "softshrink"),
}

# torch.linalg, torch.special and torch.fft hold compiled builtins of torch._C._<name>, named
# <name>_<function> there (fx prints torch._C._linalg.linalg_norm)
SUBMODULE_BUILTINS = ("linalg", "special", "fft")

_qualified = None


def _public_table():
    """id(function) -> PyTorch's qualified name, for tapegrad's public functions whose own module
    is an internal one (tapegrad._core.relu is torch.relu).  Built on first use from the already
    loaded public namespaces; the first namespace that holds an object names it."""
    global _qualified
    if _qualified is None:
        import tapegrad
        from tapegrad import nn
        table = {}
        functional = nn.functional
        for module, names in F_BUILTINS.items():
            for name in names:
                obj = vars(functional).get(name)
                if obj is not None:
                    table.setdefault(id(obj), (f"{module}.{name}", obj))
        spaces = [("torch", tapegrad, "{}")]
        for sub in SUBMODULE_BUILTINS:
            # PyTorch's torch.linalg.norm is the builtin torch._C._linalg.linalg_norm
            spaces.append((f"torch._C._{sub}", getattr(tapegrad, sub), f"{sub}_{{}}"))
        spaces.append(("torch.nn.functional", functional, "{}"))
        for prefix, space, pattern in spaces:
            for name, obj in list(vars(space).items()):
                if name.startswith("__") or isinstance(obj, types.ModuleType) or not callable(obj):
                    continue
                if pattern != "{}" and (name.startswith("_") or isinstance(obj, type)):
                    continue
                table.setdefault(id(obj), (f"{prefix}.{pattern.format(name)}", obj))
        _qualified = {key: name for key, (name, _obj) in table.items()}
        _qualified["_keep"] = [obj for _name, obj in table.values()]   # ids stay valid
    return _qualified


def _get_qualified_name(func) -> str:
    """The dotted name fx prints for a function target: `torch.flatten`, `operator.add`,
    `torch.nn.functional.relu`, `__main__.my_fn`."""
    name = _public_table().get(id(func))
    if name is not None:
        return name
    from .._ops import OpOverload
    if isinstance(func, OpOverload):          # torch.ops.aten.linear.default
        return f"torch.ops.{func}"
    return f"{torch_module_name(getattr(func, '__module__', None) or '')}.{func.__name__}"


def _is_from_torch(obj) -> bool:
    return id(obj) in _public_table() or (getattr(obj, "__module__", None) or "").startswith("tapegrad")


def _pretty_print_target(target) -> str:
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", None)
    name = getattr(target, "__name__", None)
    if module == "builtins" and name:
        return f"builtins.{name}"
    if module == "_operator" and name:
        return f"operator.{name}"
    return _get_qualified_name(target)


def _format_arg(arg) -> str:
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, tuple):
        return "(" + ", ".join(_format_arg(a) for a in arg) + ("," if len(arg) == 1 else "") + ")"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


def _type_repr(obj) -> str:
    """An annotation as fx prints it (tapegrad's classes under PyTorch's names)."""
    if isinstance(obj, type):
        if obj.__module__ == "builtins":
            return obj.__qualname__
        public = _public_table().get(id(obj))
        if public is not None and obj.__module__.startswith("tapegrad"):
            return public
        return f"{torch_module_name(obj.__module__)}.{obj.__qualname__}"
    return repr(obj)


class Node(metaclass=_TorchNamedClass):
    """One operation of a Graph.  `args`/`kwargs` may nest Nodes in lists, tuples, dicts and
    slices; each Node knows its users (a dict, insertion ordered) and its neighbours in the
    graph's order."""

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        if op not in _OPS:
            raise ValueError(f"Unknown node op {op}")
        if op in ("call_method", "call_module") and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a str is expected for {op}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a Callable is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes = {}
        self.users = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta = {}
        self._args = ()
        self._kwargs = {}
        self._update_args_kwargs(map_arg(args, lambda x: x), map_arg(kwargs, lambda x: x))

    # -- linked list -------------------------------------------------------------------------
    @property
    def next(self):
        return self._next

    @property
    def prev(self):
        return self._prev

    def _remove_from_list(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p

    def prepend(self, x):
        """Insert `x` before this node (moving it when it is in the list already)."""
        if self is x:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x):
        """Insert `x` after this node."""
        self._next.prepend(x)

    # -- arguments ---------------------------------------------------------------------------
    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, a):
        self._update_args_kwargs(map_arg(a, lambda x: x), self._kwargs)

    @property
    def kwargs(self):
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k):
        self._update_args_kwargs(self._args, map_arg(k, lambda x: x))

    @property
    def stack_trace(self):
        return self.meta.get("stack_trace", None)

    @stack_trace.setter
    def stack_trace(self, trace):
        self.meta["stack_trace"] = trace

    @property
    def all_input_nodes(self):
        return list(self._input_nodes.keys())

    def update_arg(self, idx, arg):
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key, arg):
        self.kwargs = {**self.kwargs, key: arg}

    def _update_args_kwargs(self, new_args, new_kwargs):
        self._args = new_args
        self._kwargs = new_kwargs
        for old in self._input_nodes:
            old.users.pop(self)
        self._input_nodes = {}
        map_arg(self._args, lambda n: self._input_nodes.setdefault(n))
        map_arg(self._kwargs, lambda n: self._input_nodes.setdefault(n))
        for new in self._input_nodes:
            new.users.setdefault(self)

    def replace_all_uses_with(self, replace_with, delete_user_cb=lambda user: True, *,
                              propagate_meta=False):
        """Make every user of this node use `replace_with` instead; returns the changed users."""
        if propagate_meta:
            for k, v in self.meta.items():
                replace_with.meta.setdefault(k, v)
        to_process = list(self.users)
        skipped = []
        for use_node in to_process:
            if not delete_user_cb(use_node):
                skipped.append(use_node)
                continue
            use_node.replace_input_with(self, replace_with)
        return [n for n in to_process if n not in skipped]

    def replace_input_with(self, old_input, new_input):
        def maybe_replace(n):
            return new_input if n is old_input else n
        self._update_args_kwargs(map_arg(self._args, maybe_replace), map_arg(self._kwargs, maybe_replace))

    def is_impure(self) -> bool:
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            # (assertions are kept: PyTorch's side-effectful functions)
            return getattr(self.target, "__name__", "") in ("_assert", "_assert_is_none")
        if self.op == "call_module":
            module = self.graph.owning_module
            if module is not None:
                target = module.get_submodule(self.target)
                return getattr(target, "_is_impure", False)
        return False

    # -- printing ----------------------------------------------------------------------------
    def __repr__(self):
        return self.name

    def _pretty_print_target(self, target):
        return _pretty_print_target(target)

    def format_node(self, placeholder_names=None, maybe_return_typename=None):
        """The node's line in the printed graph (PyTorch's text)."""
        typename = f"{_type_repr(self.type)} " if self.type else ""
        if self.op == "placeholder":
            arg_str = self.target + (f": {_type_repr(self.type)}" if self.type else "")
            if placeholder_names:
                placeholder_names.append(arg_str)
                return None
            default = "(default=" + str(self.args[0]) + ")" if self.args else ""
            return (f"%{self.name} : {typename}[num_users={len(self.users)}] = "
                    f"{self.op}[target={self.target}]{default}")
        if self.op == "get_attr":
            return (f"%{self.name} : {typename}[num_users={len(self.users)}] = "
                    f"{self.op}[target={_pretty_print_target(self.target)}]")
        if self.op == "output":
            if self.type and maybe_return_typename:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        return (f"%{self.name} : {typename}[num_users={len(self.users)}] = "
                f"{self.op}[target={_pretty_print_target(self.target)}]("
                f"args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")


def map_arg(a, fn):
    """Apply `fn` to each Node in the nested argument structure `a`."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def map_aggregate(a, fn):
    """Apply `fn` to each leaf of `a` (through tuples, named tuples, lists, dicts and slices)."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(elem, fn) for elem in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return [map_aggregate(elem, fn) for elem in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


_builtin_names = set(builtins.__dict__)
