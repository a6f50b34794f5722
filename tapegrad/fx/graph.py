"""torch.fx.graph: the Graph (an ordered list of Nodes with unique names), its printed form, its
rewriting API (inserting_before/after, erase_node, eliminate_dead_code, lint) and the Python
source it generates for a GraphModule's forward, as PyTorch generates it."""
from __future__ import annotations as _annotations

import builtins
import keyword
import math
import re
from collections import defaultdict

from .node import (Node, _format_arg, _get_qualified_name, _is_from_torch, _public_table, _type_repr,
                   map_arg)
from .._torch_names import TorchNamedABCMeta as _TorchNamedABCMeta

__all__ = ["Graph", "PythonCode"]

# fx's generated code has these names bound (PyTorch's _custom_builtins): node names avoid them
_CUSTOM_BUILTINS = ("inf", "nan", "NoneType", "torch", "device", "fx_pytree", "pytree")

_MAGIC = {"add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}",
          "truediv": "{} / {}", "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}",
          "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}", "or_": "{} | {}",
          "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}", "eq": "{} == {}",
          "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}", "ge": "{} >= {}",
          "pos": "+{}", "neg": "-{}", "invert": "~{}"}

_ILLEGAL = re.compile("[^0-9a-zA-Z_]+")
_SUFFIX = re.compile(r"(.*)_(\d+)$")


def _snake_case(s: str) -> str:
    chars = []
    prev_lower = False
    for c in s:
        if prev_lower and c.isupper():
            chars.append("_")
        chars.append(c.lower())
        prev_lower = c.islower()
    return "".join(chars)


class _Namespace:
    """Unique, legal Python names: a clash gets the next `_N` suffix of its base."""

    def __init__(self):
        self._obj_to_name = {}
        self._used = set()
        self._base_count = defaultdict(int)

    def create_name(self, candidate: str, obj) -> str:
        if obj is not None and obj in self._obj_to_name:
            return self._obj_to_name[obj]
        candidate = _ILLEGAL.sub("_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = f"_{candidate}"
        match = _SUFFIX.match(candidate)
        if match is None:
            base, num = candidate, None
        else:
            base, num = match.group(1), int(match.group(2))
        candidate = base if num is None else f"{base}_{num}"
        if not num:
            num = self._base_count[base]
        while candidate in self._used or self._is_illegal(candidate, obj):
            num += 1
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[obj] = candidate
        return candidate

    def associate_name_with_obj(self, name, obj):
        self._obj_to_name[obj] = name

    def _is_illegal(self, name, obj) -> bool:
        if keyword.iskeyword(name) or name in _CUSTOM_BUILTINS:
            return True
        return name in builtins.__dict__ and builtins.__dict__[name] is not obj

    def _rename_object(self, obj, name):
        self._obj_to_name[obj] = name


class PythonCode:
    """The generated source (`src`) and the globals it runs with."""

    def __init__(self, src, globals_):
        self.src = src
        self.globals = globals_


class _InsertPoint:
    def __init__(self, graph, new_insert):
        self.graph = graph
        self.orig_insert, graph._insert = graph._insert, new_insert

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        self.graph._insert = self.orig_insert


class _NodeList:
    def __init__(self, graph, direction="_next"):
        self.graph = graph
        self.direction = direction

    def __len__(self):
        return self.graph._len

    def __iter__(self):
        root = self.graph._root
        cur = getattr(root, self.direction)
        while cur is not root:
            nxt = getattr(cur, self.direction)
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self):
        return iter(_NodeList(self.graph, "_prev" if self.direction == "_next" else "_next"))


def _format_target(base: str, target: str) -> str:
    r = base
    for elem in target.split("."):
        r = f"{r}.{elem}" if elem.isidentifier() else f'getattr({r}, "{elem}")'
    return r


class Graph(metaclass=_TorchNamedABCMeta):
    """A list of Nodes: inputs (placeholder), parameters and submodules read (get_attr), calls
    (call_function / call_method / call_module) and one output."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, "", "root", "", (), {})
        self._used_names = {}
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._codegen_wraps = []

    @property
    def owning_module(self):
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod):
        self._owning_module = mod

    @property
    def nodes(self):
        return _NodeList(self)

    # -- creating nodes ----------------------------------------------------------------------
    def _target_to_str(self, target) -> str:
        if callable(target):
            # a tapegrad function is named by its public name (F.softmax's own __name__ may
            # differ), as PyTorch's function of that name is
            public = _public_table().get(id(target))
            op = public.rsplit(".", 1)[-1] if public else target.__name__
        else:
            op = target
        if op.startswith("__") and op.endswith("__") and len(op) > 4:
            op = op[2:-2]
        return _snake_case(op)

    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        """Make a node at the insertion point (the end, unless inserting_before/after says)."""
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple):
            raise AssertionError("args must be a tuple")
        if not isinstance(kwargs, dict):
            raise AssertionError("kwargs must be a dict")
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name, type_expr=None, default_value=_format_arg):
        args = () if default_value is _format_arg else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result, type_expr=None):
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node, arg_transform=lambda x: x):
        """A copy of `node` (from another graph) here, its node arguments mapped by arg_transform."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = dict(node.meta)
        return result

    def graph_copy(self, g, val_map, return_output_node=False):
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return rv if not return_output_node else (rv, node)
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def inserting_before(self, n=None):
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert before is not in graph.")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n=None):
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert after is not in graph.")
        return _InsertPoint(self, n.append)

    def erase_node(self, to_erase):
        """Remove a node nobody uses."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} "
                               f"users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    def find_nodes(self, *, op, target=None, sort=True):
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    def eliminate_dead_code(self, is_impure_node=None):
        """Erase the nodes whose values nobody uses (impure ones stay); True when any went."""
        self.lint()
        changed = False
        for node in reversed(self.nodes):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not impure and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self):
        """Check the graph's invariants: each node's inputs are in this graph and come before
        it, names are unique, get_attr / call_module targets exist on the owning module."""
        seen_names = set()
        seen_values = set()

        def check_arg(arg, n):
            if arg.graph is not self:
                raise RuntimeError(f"Argument '{arg}' of Node '{n}' does not belong to this Graph, "
                                   f"but was used as an argument! If you are copying nodes from "
                                   f"another graph, make sure to use ``arg_transform`` on node_copy() "
                                   f"to remap values\n{self}")
            if arg not in seen_values:
                raise RuntimeError(f"Argument '{arg}' of Node '{n}' was used before it has been "
                                   f"defined! Please check that Nodes in the graph are topologically "
                                   f"ordered\n{self}")

        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            map_arg(node.args, lambda arg: check_arg(arg, node))
            map_arg(node.kwargs, lambda arg: check_arg(arg, node))
            seen_values.add(node)
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
        if self.owning_module is not None:
            for node in self.nodes:
                if node.op in ("get_attr", "call_module"):
                    mod = self.owning_module
                    path = node.target.split(".")
                    for i, atom in enumerate(path):
                        if not hasattr(mod, atom):
                            kind = "Module" if node.op == "call_module" else "attribute"
                            raise RuntimeError(f"Node {node} target {node.target} references "
                                               f"nonexistent {kind} {'.'.join(path[:i + 1])}")
                        mod = getattr(mod, atom)

    # -- printing ----------------------------------------------------------------------------
    def __str__(self):
        placeholder_names = []
        maybe_return_typename = [""]
        node_strs = [node.format_node(placeholder_names) for node in self.nodes]
        s = f"graph({', '.join(placeholder_names)}){maybe_return_typename[0]}:"
        for node_str in node_strs:
            if node_str:
                s += "\n    " + node_str
        return s

    def print_tabular(self):
        """The nodes as a table (opcode, name, target, args, kwargs); needs `tabulate`."""
        try:
            from tabulate import tabulate
        except ImportError:
            print("`print_tabular` relies on the library `tabulate`, which could not be found on "
                  "this machine. Run `pip install tabulate` to install the library.")
            raise
        rows = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        print(tabulate(rows, headers=["opcode", "name", "target", "args", "kwargs"]))

    # -- code generation ---------------------------------------------------------------------
    def python_code(self, root_module: str, *, verbose=False) -> PythonCode:
        """The source of `def forward(self, ...)` running this graph, with its globals."""
        import tapegrad
        namespace = _Namespace()
        globals_ = {"torch": tapegrad, "inf": math.inf, "nan": math.nan, "NoneType": type(None),
                    "device": tapegrad.device}
        for node in self.nodes:          # node names keep their names in the code
            namespace.create_name(node.name, node)

        def add_global(name_hint, obj):
            if _is_from_torch(obj) and name_hint.startswith("torch."):
                return name_hint
            global_name = namespace.create_name(name_hint, obj)
            globals_[global_name] = obj
            return global_name

        free_vars = []
        body = []
        wrap_stmts = []
        last_use = {}
        user_to_last_uses = {}
        for node in reversed(self.nodes):
            def register(n, user=node):
                if n not in last_use:
                    last_use[n] = user
                    user_to_last_uses.setdefault(user, []).append(n)
            map_arg(node.args, register)
            map_arg(node.kwargs, register)

        def delete_unused(user):
            if user.op == "placeholder":
                return
            if user.op == "output":
                body.append("\n")
                return
            to_delete = list(user_to_last_uses.get(user, []))
            if len(user.users) == 0:
                to_delete.append(user)
            if to_delete:
                body.append(";  " + " = ".join([repr(n) for n in to_delete] + ["None"]) + "\n")
            else:
                body.append("\n")

        def type_repr(t):
            if isinstance(t, type) and t.__module__ != "builtins" and not t.__module__.startswith("tapegrad"):
                return add_global(t.__qualname__, t)
            return _type_repr(t)

        return_annotation = ""

        def fmt(args, kwargs):
            args_s = ", ".join(repr(a) for a in args)
            kwargs_s = ", ".join(f"{k} = {v!r}" for k, v in kwargs.items())
            if args_s and kwargs_s:
                return f"{args_s}, {kwargs_s}"
            return args_s or kwargs_s

        for node in self.nodes:
            if node.op == "placeholder":
                hint = f" : {type_repr(node.type)}" if node.type else ""
                default = f" = {node.args[0]!r}" if node.args else ""
                free_vars.append(f"{node.target}{hint}{default}")
                raw_name = node.target.replace("*", "")    # *args / **kwargs bind args / kwargs
                if raw_name != node.name:
                    body.append(f"{node.name} = {raw_name}")
                    delete_unused(node)
                    body[-1] += "\n" if not body[-1].endswith("\n") else ""
            elif node.op == "call_method":
                body.append(f"{node.name} = {_format_target(repr(node.args[0]), node.target)}"
                            f"({fmt(node.args[1:], node.kwargs)})")
                delete_unused(node)
            elif node.op == "call_function":
                target = node.target
                module = getattr(target, "__module__", None)
                tname = getattr(target, "__name__", None)
                if module == "_operator" and tname in _MAGIC and not node.kwargs:
                    body.append(f"{node.name} = " + _MAGIC[tname].format(*(repr(a) for a in node.args)))
                elif (module == "builtins" and tname == "getattr" and len(node.args) == 2
                      and isinstance(node.args[1], str) and node.args[1].isidentifier() and not node.kwargs):
                    body.append(f"{node.name} = {_format_target(repr(node.args[0]), node.args[1])}")
                else:
                    global_name = add_global(_get_qualified_name(target), target)
                    if global_name == "getattr" and len(node.args) == 2 and isinstance(node.args[1], str):
                        pass
                    body.append(f"{node.name} = {global_name}({fmt(node.args, node.kwargs)})")
                    if node.meta.get("is_wrapped", False):
                        wrap_stmts.append(global_name)
                delete_unused(node)
            elif node.op == "call_module":
                body.append(f"{node.name} = {_format_target(root_module, node.target)}"
                            f"({fmt(node.args, node.kwargs)})")
                delete_unused(node)
            elif node.op == "get_attr":
                body.append(f"{node.name} = {_format_target(root_module, node.target)}")
                delete_unused(node)
            elif node.op == "output":
                if node.type is not None:
                    return_annotation = f" -> {type_repr(node.type)}"
                body.append(f"return {node.args[0]!r}")
                delete_unused(node)
        if not body:
            body.append("pass\n")
        code = "".join(body).lstrip("\n")
        code = "\n".join("    " + line for line in code.split("\n"))
        prologue = f"def forward({', '.join([root_module] + free_vars)}){return_annotation}:"
        wraps = "\n".join(f'torch.fx._symbolic_trace.wrap("{name}")' for name in dict.fromkeys(wrap_stmts))
        src = f"\n{wraps}\n\n{prologue}\n{code}"
        return PythonCode(src, globals_)
