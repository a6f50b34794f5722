"""torch.fx.proxy: Proxy, the stand-in value symbolic tracing passes through a forward: each
operator, method, attribute read and torch function applied to it records a node instead of
computing."""
from __future__ import annotations as _annotations

import operator
import sys

from .node import Node, map_aggregate
from .._torch_names import TorchNamedClass as _TorchNamedClass

__all__ = ["Proxy", "Attribute", "TraceError", "GraphAppendingTracer", "ParameterProxy"]


class TraceError(ValueError):
    pass


class GraphAppendingTracer:
    """The tracer of a Proxy made by hand over a graph's node: records into that graph."""

    def __init__(self, graph):
        from ._symbolic_trace import TracerBase
        self.__class__ = type("GraphAppendingTracer", (TracerBase,), {})
        TracerBase.__init__(self)
        self.graph = graph


class Proxy(metaclass=_TorchNamedClass):
    """A value during symbolic tracing: `node` is the graph node that makes it."""

    def __init__(self, node: Node, tracer=None):
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, k):
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return Attribute(self, k)

    def __getstate__(self):
        return self.__dict__

    def __deepcopy__(self, memo):
        raise NotImplementedError("deepcopy of a Proxy")

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self):
        # `a, b = proxy` (a call_module's tuple result unpacked): the caller's instruction says
        # how many items; each is a getitem node, as PyTorch's Proxy makes them
        import bisect
        import dis
        caller = sys._getframe(1)
        instructions = list(dis.get_instructions(caller.f_code))
        index = bisect.bisect_left([i.offset for i in instructions], caller.f_lasti)
        if index < len(instructions) and instructions[index].opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(instructions[index].argval))
        return self.tracer.iter(self)

    def __bool__(self):
        return self.tracer.to_bool(self)

    def keys(self):
        return self.tracer.keys(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call torch.fx.wrap('len') at module scope")

    @classmethod
    def __torch_function__(cls, orig_method, types, args=None, kwargs=None):
        args = args if args else ()
        kwargs = kwargs if kwargs else {}
        tracers = set()

        def find_tracer(a):
            if isinstance(a, cls):
                tracers.add(a.tracer)
            return a
        map_aggregate(args, find_tracer)
        map_aggregate(kwargs, find_tracer)
        if len(tracers) > 1:
            raise RuntimeError(f"Found multiple different tracers {list(tracers)} while trying to "
                               f"trace operations {orig_method}")
        tracer = next(iter(tracers))
        from .. import Tensor
        name = getattr(orig_method, "__name__", None)
        if name is not None and getattr(Tensor, name, None) is orig_method:
            return tracer.create_proxy("call_method", name, args, kwargs)
        return tracer.create_proxy("call_function", orig_method, args, kwargs,
                                   name=tracer.graph._target_to_str(orig_method))


class Attribute(Proxy):
    """`proxy.attr`: a getattr node made on first use as a value; a call makes a method call."""

    def __init__(self, root: Proxy, attr: str):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


class ParameterProxy(Proxy):
    """A parameter's get_attr proxy: shape, size(), dim() and friends answer from the parameter."""

    def __init__(self, tracer, node, name, param):
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self):
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    def size(self, dim=None):
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self):
        return self.param.dim()

    @property
    def ndim(self):
        return self.param.ndim

    def numel(self):
        return self.param.numel()

    def nelement(self):
        return self.param.nelement()


_BINARY = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift", "and_",
           "or_", "xor", "matmul")
_COMPARE = ("eq", "ne", "lt", "gt", "le", "ge", "getitem")
_UNARY = ("neg", "pos", "invert", "abs")


def _scope(method):
    def impl(*args, **kwargs):
        return args[0].tracer.create_proxy("call_function", getattr(operator, method), args, kwargs)
    impl.__name__ = method
    as_magic = f'__{method.strip("_")}__'
    setattr(Proxy, as_magic, impl)


def _reflect(method):
    target = getattr(operator, method)

    def impl(self, rhs):
        return self.tracer.create_proxy("call_function", target, (rhs, self), {})
    setattr(Proxy, f'__r{method.strip("_")}__', impl)


for _m in _BINARY + _COMPARE + _UNARY:
    _scope(_m)
for _m in _BINARY:
    _reflect(_m)
Proxy.__hash__ = object.__hash__
