"""torch.fx.interpreter: Interpreter runs a GraphModule node by node (subclasses override
run_node or one op's handler: profiling, shape propagation), Transformer builds a new graph."""
from __future__ import annotations as _annotations

from .graph import Graph
from .graph_module import GraphModule
from .node import map_aggregate, map_arg
from .proxy import Proxy
from .._torch_names import TorchNamedABCMeta as _TorchNamedABCMeta

__all__ = ["Interpreter", "Transformer"]


class Interpreter(metaclass=_TorchNamedABCMeta):
    def __init__(self, module, garbage_collect_values=True, graph=None):
        self.module = module
        self.submodules = dict(self.module.named_modules())
        self.graph = graph if graph is not None else self.module.graph
        self.env = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            node_to_last_use = {}
            self.user_to_last_uses = {}
            for node in reversed(self.graph.nodes):
                def register(n, user=node):
                    if n not in node_to_last_use:
                        node_to_last_use[n] = user
                        self.user_to_last_uses.setdefault(user, []).append(n)
                map_arg(node.args, register)
                map_arg(node.kwargs, register)

    def run(self, *args, initial_env=None, enable_io_processing=True):
        """Run the graph on `args`; returns the output node's value."""
        self.env = initial_env if initial_env is not None else {}
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    # the failing node in the message, as PyTorch's
                    msg = f"While executing {node.format_node()}"
                    msg = f"{e.args[0]}\n\n{msg}" if e.args else str(msg)
                    msg += f"\nOriginal traceback:\n{node.stack_trace}"
                    msg += ("\nUse tlparse to see full graph. (https://github.com/pytorch/tlparse?"
                            "tab=readme-ov-file#tlparse-parse-structured-pt2-logs)")
                    e.args = (msg,) + e.args[1:]
                    if isinstance(e, KeyError):
                        raise RuntimeError(*e.args) from e
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    del self.env[to_delete]
            if node.op == "output":
                return self.env[node]
        return None

    def boxed_run(self, args_list):
        args_iter = list(args_list)
        args_list.clear()
        return self.run(*args_iter)

    def run_node(self, n):
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    def placeholder(self, target, args, kwargs):
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as si:
            if len(args) > 0:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was "
                               "not passed in!") from si

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *args_tail = args
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(self, target, args, kwargs):
        submod = self.fetch_attr(target)
        return submod(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    def fetch_attr(self, target: str):
        atoms = target.split(".")
        attr_itr = self.module
        for i, atom in enumerate(atoms):
            if not hasattr(attr_itr, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(atoms[:i + 1])}")
            attr_itr = getattr(attr_itr, atom)
        return attr_itr

    def fetch_args_kwargs_from_env(self, n):
        args = self.map_nodes_to_values(n.args, n)
        kwargs = self.map_nodes_to_values(n.kwargs, n)
        return args, kwargs

    def map_nodes_to_values(self, args, n):
        def load_arg(n_arg):
            if n_arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {n_arg}! Run Graph.lint() "
                                   "to diagnose such issues")
            return self.env[n_arg]
        return map_arg(args, load_arg)


class Transformer(Interpreter):
    """Runs the graph on Proxies, recording a new graph: override call_function & co to rewrite;
    transform() returns the new GraphModule."""

    def __init__(self, module):
        super().__init__(module)
        from ._symbolic_trace import TracerBase
        self.new_graph = Graph()

        class TransformerTracer(TracerBase):
            def __init__(self, graph):
                super().__init__()
                self.graph = graph
                self.tensor_attrs = {}

            def is_leaf_module(self, _, __):
                return True
        self.tracer = TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target, args, kwargs):
        default = args[0] if len(args) > 0 else ()
        return Proxy(self.new_graph.placeholder(target, default_value=default) if args
                     else self.new_graph.placeholder(target), self.tracer)

    def get_attr(self, target, args, kwargs):
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def call_function(self, target, args, kwargs):
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target, args, kwargs):
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def transform(self):
        result = super().run()
        if result is not None:
            def strip_proxy(a):
                return a.node if isinstance(a, Proxy) else a
            self.new_graph.output(map_aggregate(result, strip_proxy))
        return GraphModule(self.module, self.new_graph)
