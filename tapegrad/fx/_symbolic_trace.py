"""torch.fx._symbolic_trace: the Tracer, which runs a module's forward on Proxies and records the
graph, symbolic_trace, and wrap (functions recorded as calls instead of traced through)."""
from __future__ import annotations as _annotations

import builtins
import collections
import functools
import inspect
import types
import math

from .graph import Graph
from .node import F_BUILTINS, Node, _public_table, map_aggregate
from .proxy import ParameterProxy, Proxy, TraceError
from .._torch_names import TorchNamedABCMeta as _TorchNamedABCMeta

__all__ = ["Tracer", "TracerBase", "symbolic_trace", "wrap", "PH"]


def _assert_is_none(value, msg):
    assert value is None, msg


class _PH:
    def __repr__(self):
        return "PH"


PH = _PH()

# (globals dict id, name) of the functions fx.wrap registered: patched during each trace
_wrapped_fns_to_patch = {}


def wrap(fn_or_name):
    """Record calls of the named module-level function (or the function) as call_function nodes
    instead of tracing into it.  Must be called at module scope."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or "
                           "string name")
    if callable(fn_or_name):
        fn_name = fn_or_name.__name__
    else:
        fn_name = fn_or_name
    caller = inspect.currentframe().f_back
    if caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(caller.f_globals), fn_name)] = caller.f_globals
    return fn_or_name


class _Patcher:
    """Sets attributes for the duration of a trace and restores them after."""

    def __init__(self):
        self.undo = []

    def patch(self, owner, name, value, is_dict=False):
        if is_dict:
            had = name in owner
            old = owner.get(name)
            owner[name] = value
            self.undo.append(lambda: owner.__setitem__(name, old) if had else owner.pop(name, None))
        else:
            had = name in vars(owner)
            old = vars(owner).get(name)
            setattr(owner, name, value)
            self.undo.append(lambda: setattr(owner, name, old) if had else delattr(owner, name))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        while self.undo:
            self.undo.pop()()
        return False


def _has_proxy(args, kwargs):
    found = []

    def look(a):
        if isinstance(a, Proxy):
            found.append(a)
        return a
    map_aggregate(args, look)
    map_aggregate(kwargs, look)
    return found[0] if found else None


@functools.lru_cache(maxsize=None)
def _functional_recorder(name):
    """nn.functional.<name> (a Python function in PyTorch) and its stand-in during a trace: called
    with a Proxy it records the function with the caller's arguments bound as PyTorch's function
    hands them to fx (parameters without a default positional, those with one as keywords)."""
    from ..nn import functional
    original = getattr(functional, name)
    try:
        sig = inspect.signature(original)
    except (TypeError, ValueError):
        sig = None

    def record(tracer, args, kwargs):
        if sig is None:
            return tracer.create_proxy("call_function", original, args, kwargs)
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        pos, kw = [], {}
        for pname, param in sig.parameters.items():
            value = bound.arguments[pname]
            if param.kind is param.VAR_POSITIONAL:
                pos.extend(value)
            elif param.kind is param.VAR_KEYWORD:
                kw.update(value)
            elif param.default is param.empty and param.kind is not param.KEYWORD_ONLY:
                pos.append(value)
            else:
                kw[pname] = value
        return tracer.create_proxy("call_function", original, tuple(pos), kw)

    def patched(*args, **kwargs):
        proxy = _has_proxy(args, kwargs)
        if proxy is None:
            return original(*args, **kwargs)
        return record(proxy.tracer, args, kwargs)
    patched.__wrapped__ = original
    return original, patched


def _functional_names():
    """The names of nn.functional's functions that are Python functions in PyTorch."""
    import types

    from ..nn import functional
    builtin = {n for names in F_BUILTINS.values() for n in names}
    return [name for name, obj in vars(functional).items()
            if not name.startswith("_") and name not in builtin and callable(obj)
            and not isinstance(obj, (type, types.ModuleType))
            and (getattr(obj, "__module__", None) or "").startswith("tapegrad")]


def _dispatching_names():
    """(namespace, name) of the public functions PyTorch dispatches __torch_function__ from as
    compiled builtins or Python functions that hand over their arguments as given: torch.*,
    nn.functional's builtins (F.linear, F.scaled_dot_product_attention), linalg, special, fft."""
    import types

    import tapegrad
    from ..nn import functional

    def functions(space, names):
        return [(space, name) for name in names
                if callable(vars(space).get(name)) and not isinstance(vars(space)[name], (type, types.ModuleType))]
    found = functions(tapegrad, [n for n in vars(tapegrad) if not n.startswith("_") or n == "_assert"])
    found += functions(functional, [n for names in F_BUILTINS.values() for n in names])
    for sub in ("linalg", "special", "fft"):
        space = getattr(tapegrad, sub)
        found += functions(space, [n for n in vars(space) if not n.startswith("_")])
    return found


# What a function raises when it meets a Proxy it does not dispatch on (reading .ndim, asking
# bool() of a comparison, refusing the argument's type).
_REFUSALS = (TypeError, AttributeError, ValueError, RuntimeError)


@functools.lru_cache(maxsize=None)
def _refusal_recorder(original):
    """A stand-in for a torch.* function during a trace: a call with a Proxy argument runs the
    function (which records itself when it dispatches __torch_function__, or answers without
    looking at the values: torch.is_tensor); when it refuses the Proxy instead, the nodes it
    made on the way are removed and the call is recorded as PyTorch's dispatch records it (the
    *_like factories, hstack, torch._assert are Python functions in tapegrad that take only
    tensors)."""
    def patched(*args, **kwargs):
        proxy = _has_proxy(args, kwargs)
        if proxy is None:
            return original(*args, **kwargs)
        graph = proxy.tracer.graph
        mark = graph._root._prev
        namespace = graph._graph_namespace
        saved = (set(namespace._used), dict(namespace._base_count), dict(namespace._obj_to_name))
        try:
            return original(*args, **kwargs)
        except _REFUSALS:
            made = []
            node = mark._next
            while node is not graph._root:
                made.append(node)
                node = node._next
            for node in reversed(made):
                for user in list(node.users):
                    user._update_args_kwargs((), {})
                graph.erase_node(node)
            namespace._used, base_count, namespace._obj_to_name = saved
            namespace._base_count.clear()
            namespace._base_count.update(base_count)
        return proxy.tracer.create_proxy("call_function", original, args, kwargs)
    patched.__wrapped__ = original
    return patched


class TracerBase(metaclass=_TorchNamedABCMeta):
    def __init__(self):
        self.graph = None
        self.record_stack_traces = False
        self.scope = None

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        module_stack = getattr(self, "module_stack", None)
        if module_stack:
            node.meta["nn_module_stack"] = collections.OrderedDict(module_stack)
        return node

    def proxy(self, node):
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a):
        """A call's argument as the graph stores it: Proxies become their nodes, containers are
        mapped, constants stay."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return type(a)(*(self.create_arg(elem) for elem in a))
        if isinstance(a, (tuple, list)):
            return type(a)(self.create_arg(elem) for elem in a)
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                k = self.create_arg(k)
                if isinstance(k, Node):
                    raise RuntimeError("Keys for dictionaries used as an argument cannot contain a "
                                       f"Node. Got key: {k}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, Node) or a is None or a is ... or isinstance(
                a, (str, int, float, bool, complex)):
            return a
        from .. import Size, device, dtype, layout, memory_format
        if isinstance(a, (dtype, device, layout, memory_format, Size)):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj):
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy "
                         "is used in a loop or as a *args or **kwargs function argument. See the "
                         "torch.fx docs on pytorch.org for a more detailed explanation of what "
                         "types of control flow can be traced, and check out the Proxy docstring "
                         "for help troubleshooting Proxy iteration errors")

    def keys(self, obj):
        return Attribute(obj, "keys")()


from .proxy import Attribute  # noqa: E402


class Tracer(TracerBase):
    """Records a module's (or a function's) forward as a Graph.  Override is_leaf_module to keep
    more or fewer submodules as call_module nodes."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(), param_shapes_constant=False):
        super().__init__()
        self._autowrap_function_ids = {id(value) for name, value in
                                       sum((list(m.__dict__.items()) for m in autowrap_modules), [])
                                       if not name.startswith("_") and callable(value)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_modules = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths = None
        self.root = None
        self.tensor_attrs = {}

    def create_arg(self, a):
        from .. import Tensor
        from ..nn import Module, Parameter
        if isinstance(a, Parameter):
            for n_, p_ in self.root.named_parameters():
                if a is p_:
                    return self.create_node("get_attr", n_, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, Module):
            for n_, p_ in self.root.named_modules():
                if a is p_:
                    return self.create_node("get_attr", n_, (), {})
            raise NameError("module is not installed as a submodule")
        if isinstance(a, Tensor):
            qualname = self.tensor_attrs.get(id(a))
            if qualname is None:
                i = 0
                while True:
                    qualname = f"_tensor_constant{i}"
                    if not hasattr(self.root, qualname):
                        break
                    i += 1
                self.tensor_attrs[id(a)] = qualname
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        return super().create_arg(a)

    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        """tapegrad.nn's own modules (but Sequential) stay calls; user modules are traced into."""
        from ..nn import Sequential
        module = type(m).__module__
        return ((module.startswith("tapegrad.nn") or module.startswith("tapegrad.ao.nn"))
                and not isinstance(m, Sequential))

    def path_of_module(self, mod) -> str:
        if self.submodule_paths:
            path = self.submodule_paths.get(id(mod))
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for n, p in self.root.named_modules():
            if mod is p:
                return n
        raise NameError("module is not installed as a submodule")

    def call_module(self, m, forward, args, kwargs):
        module_qualified_name = self.path_of_module(m)
        # the modules being called, in node.meta["nn_module_stack"] of the nodes made meanwhile
        calls = self.num_calls.get(module_qualified_name, 0)
        key = f"{module_qualified_name}@{calls}" if calls > 0 else module_qualified_name
        self.module_stack[key] = (module_qualified_name, type(m))
        self.num_calls[module_qualified_name] = calls + 1
        try:
            if not self.is_leaf_module(m, module_qualified_name):
                return forward(*args, **kwargs)
            return self.create_proxy("call_module", module_qualified_name, args, kwargs)
        finally:
            self.module_stack.pop(key, None)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        from .. import Tensor
        from ..nn import Parameter
        if isinstance(attr_val, Tensor):
            store = self.root.named_parameters() if isinstance(attr_val, Parameter) else self.root.named_buffers()
            for n, p in store:
                if attr_val is p:
                    if n not in parameter_proxy_cache:
                        kwargs = {}
                        if self.param_shapes_constant and isinstance(attr_val, Parameter):
                            kwargs["proxy_factory_fn"] = lambda node: ParameterProxy(self, node, n, attr_val)
                        parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {}, **kwargs)
                    return parameter_proxy_cache[n]
        return attr_val

    def create_args_for_root(self, root_fn, is_module, concrete_args=None):
        sig = inspect.signature(root_fn)
        params = list(sig.parameters.values())
        if is_module:
            params = params[1:]
        concrete_args = concrete_args or {}
        if isinstance(concrete_args, tuple):
            concrete_args = {p.name: v for p, v in zip(params, concrete_args)}
        args = []
        kwargs = {}
        # *args / **kwargs: one placeholder each, passed positionally to the function rebuilt
        # without them (PyTorch's tracer does the same), so the Proxy stands for the tuple/dict
        flatten = any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)
        if flatten:      # the code object's order: positional, keyword-only, *args, **kwargs
            kinds = inspect.Parameter
            order = [kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY,
                     kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD]
            params.sort(key=lambda param: order.index(param.kind))
        for p in params:
            name = p.name
            if name in concrete_args and concrete_args[name] is not PH:
                # the value is specialised: a placeholder (of the parameter's default) that the
                # generated forward checks against it, as PyTorch's
                value = concrete_args[name]
                default = () if p.default is p.empty else (p.default,)
                out = self.create_proxy("placeholder", f"{name}_1", default, {})
                message = f"{name} has been specialized to have value {value} but got another value"
                if type(value) in (bool, int, float, complex, str):
                    import tapegrad
                    self.create_proxy("call_function", tapegrad._assert, (out == value, message), {})
                elif value is None:
                    self.create_proxy("call_function", _assert_is_none, (out, message), {})
                arg = value
            else:
                if p.kind is p.VAR_POSITIONAL:
                    name, default = "*" + name, ()
                elif p.kind is p.VAR_KEYWORD:
                    name, default = "**" + name, ()
                else:
                    default = () if p.default is p.empty else (p.default,)
                arg = self.create_proxy("placeholder", name, default, {},
                                        type_expr=root_fn.__annotations__.get(p.name))
            if p.kind is p.KEYWORD_ONLY and not flatten:
                kwargs[p.name] = arg
            else:
                args.append(arg)
        return args, kwargs

    def trace(self, root, concrete_args=None):
        """The Graph of `root`'s forward (a Module) or of `root` (a function)."""
        from ..nn import Module
        from ..nn import functional
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            is_module = True
        else:
            self.root = Module()
            fn = root
            is_module = False
        self.graph = Graph(tracer_cls=getattr(self, "__class__", None))
        self.tensor_attrs = {}

        def collect(m, prefix):
            for k, v in vars(m).items():
                from .. import Tensor
                if isinstance(v, Tensor):
                    self.tensor_attrs.setdefault(id(v), ".".join(prefix + [k]))
            for k, v in m._buffers.items():
                if v is not None:
                    self.tensor_attrs.setdefault(id(v), ".".join(prefix + [k]))
            for k, v in m._modules.items():
                if v is not None:
                    collect(v, prefix + [k])
        collect(self.root, [])
        self.submodule_paths = {id(mod): name for name, mod in self.root.named_modules()}
        self.module_stack = collections.OrderedDict()
        self.num_calls = {}
        args, kwargs = self.create_args_for_root(fn, is_module, concrete_args)
        if fn.__code__.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
            fn = _without_variadic_parameters(fn)
        if is_module:
            args = [root] + args
        parameter_proxy_cache = {}
        orig_getattr = Module.__getattr__
        orig_call = Module.__call__
        tracer = self

        def module_getattr_wrapper(mod, attr):
            attr_val = orig_getattr(mod, attr)
            return tracer.getattr(attr, attr_val, parameter_proxy_cache)

        def module_call_wrapper(mod, *a, **k):
            def forward(*a2, **k2):
                return orig_call(mod, *a2, **k2)
            return tracer.call_module(mod, forward, a, k)

        _public_table()         # built from the unpatched namespaces
        with _Patcher() as patcher:
            patcher.patch(Module, "__getattr__", module_getattr_wrapper)
            patcher.patch(Module, "__call__", module_call_wrapper)
            for name in _functional_names():
                original, patched = _functional_recorder(name)
                if vars(functional).get(name) is original:
                    patcher.patch(functional, name, patched)
            for space, name in _dispatching_names():
                patcher.patch(space, name, _refusal_recorder(vars(space)[name]))
            self._patch_wrapped(patcher, fn.__globals__)
            result = fn(*args, **kwargs)
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=fn.__annotations__.get("return", None))
        self.submodule_paths = None
        return self.graph

    def _patch_wrapped(self, patcher, fn_globals):
        """fx.wrap'd functions and the autowrap modules' functions (math) called from the traced
        function's module: calls with a Proxy argument record a call_function node."""
        def recording(orig, name):
            @functools.wraps(orig)
            def wrapped(*args, **kwargs):
                proxy = _has_proxy(args, kwargs)
                if proxy is None:
                    return orig(*args, **kwargs)
                out = proxy.tracer.create_proxy("call_function", orig, args, kwargs)
                out.node.meta["is_wrapped"] = True
                return out
            return wrapped

        for (_gid, name), globals_ in list(_wrapped_fns_to_patch.items()):
            if name in globals_:
                orig = globals_[name]
                patcher.patch(globals_, name, recording(orig, name), is_dict=True)
            elif name in vars(builtins):
                patcher.patch(globals_, name, recording(vars(builtins)[name], name), is_dict=True)
        for space in [fn_globals] + [module.__dict__ for module in self._autowrap_modules]:
            for name, value in list(space.items()):
                if not name.startswith("_") and callable(value) and id(value) in self._autowrap_function_ids:
                    patcher.patch(space, name, recording(value, name), is_dict=True)


def _without_variadic_parameters(fn):
    """`fn` with its keyword-only, *args and **kwargs parameters made plain positional ones (in
    the code object's order: positional, keyword-only, *args, **kwargs), so that the tracer can
    bind one Proxy to each."""
    code = fn.__code__
    n = (code.co_argcount + code.co_kwonlyargcount
         + bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS))
    flat = code.replace(co_argcount=n, co_kwonlyargcount=0,
                        co_flags=code.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS))
    return types.FunctionType(flat, fn.__globals__, fn.__name__, None, fn.__closure__)


def symbolic_trace(root, concrete_args=None):
    """Trace `root` (a Module or a function) into a GraphModule."""
    from .graph_module import GraphModule
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    from ..nn import Module
    name = root.__class__.__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
