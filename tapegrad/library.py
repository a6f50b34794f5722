"""torch.library: define operators of your own and call them through torch.ops.

    @tapegrad.library.custom_op("mylib::numpy_sin", mutates_args=())
    def numpy_sin(x: Tensor) -> Tensor:
        return tapegrad.from_numpy(np.sin(x.numpy()))

    numpy_sin.register_autograd(backward, setup_context=setup_context)
    y = tapegrad.ops.mylib.numpy_sin(x)

`custom_op` infers the schema from the annotations and makes a CustomOpDef; `Library` (DEF /
IMPL / FRAGMENT) with `define` and `impl`, and the functions `define`, `impl`, `register_kernel`,
`register_fake`, `register_autograd` write into the same registry (tapegrad/_ops.py), which
dispatches a call; `opcheck` tests a registration as PyTorch's does, with what a CPU library can
run.
"""
from __future__ import annotations as _annotations

import inspect

from . import _core
from . import _ops
from ._op_schema import infer_schema, parse_schema

__all__ = ["Library", "custom_op", "define", "impl", "register_kernel", "register_fake",
           "register_autograd", "opcheck", "infer_schema", "fallthrough_kernel", "CustomOpDef"]

# PyTorch's dispatch keys a Python kernel may be registered under, and what each means here
# (_ops.OperatorEntry.device_kernel): device names of register_kernel / impl map to them.
_DEVICE_KEYS = {"cpu": "CPU", "meta": "Meta", None: "CompositeExplicitAutograd",
                "default": "CompositeExplicitAutograd"}
_KEYS = frozenset(("CPU", "Meta", "CompositeExplicitAutograd", "CompositeImplicitAutograd",
                   "Autograd", "AutogradCPU"))


def _split_qualname(qualname: str):
    """"ns::name" -> (ns, name); PyTorch's ValueError for any other form."""
    parts = qualname.split("::")
    if len(parts) != 2:
        raise ValueError(f"Expected there to be a namespace in {qualname}, i.e. The operator "
                         f"name should look something like ns::foo")
    if not all(p.replace(".", "_").isidentifier() for p in parts):   # ("ns::name.overload")
        raise RuntimeError(f"expected ident but found {qualname!r} here:\n{qualname}\n~ <--- HERE")
    return parts[0], parts[1]


class CustomOpDef:
    """What torch.library.custom_op returns: call it as the function it wraps; register_fake,
    register_autograd and register_kernel add to its operator."""

    def __init__(self, namespace: str, name: str, schema: str, fn):
        self._namespace, self._name = namespace, name
        self._init_fn = fn
        self._schema = schema
        full = parse_schema(f"{namespace}::{name}{schema}")
        # (defining a custom op again replaces the old one, as in PyTorch, where a module
        # re-run in a notebook does so)
        key = _ops.qualified(namespace, *name.partition(".")[::2])
        old = _ops._REGISTRY.get(key)
        if old is not None and old.custom_op is not None:
            del _ops._REGISTRY[key]
            getattr(_ops.ops, namespace).__dict__.pop(old.opname, None)
        self._entry = _ops.register(_ops.OperatorEntry(full, custom_op=self))
        self._entry.kernels["CompositeExplicitAutograd"] = fn
        self._opoverload = getattr(getattr(getattr(_ops.ops, namespace), self._entry.opname),
                                   self._entry.overload_name)
        self.__name__ = name
        self.__doc__ = fn.__doc__

    def __call__(self, *args, **kwargs):
        return self._entry.call(args, kwargs)

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._namespace}::{self._name})>"

    def register_fake(self, fn):
        """fn(*args) -> tensors of the output's shapes and dtypes, run for meta inputs."""
        self._entry.fake = fn
        return fn

    def register_autograd(self, backward, /, *, setup_context=None):
        """backward(ctx, *grads) -> one gradient per positional input; setup_context(ctx,
        inputs, output) saves what it needs (PyTorch's autograd.Function split)."""
        if not callable(backward):
            raise TypeError(f"Expected backward to be a function, got {type(backward)}")
        self._entry.autograd = (backward, setup_context)

    def register_kernel(self, device_types, fn=None, /):
        return _kernel_registration(self._entry, device_types, fn)

    def _check_no_alias(self, args, kwonly, result):
        """PyTorch's rule for custom_op outputs: new tensors, never an input or a view of one."""
        inputs = list(_ops._tensors_in((*args, *kwonly.values())))
        outputs = list(_ops._tensors_in(result if isinstance(result, (list, tuple)) else (result,)))
        import numpy as np
        for k, out in enumerate(outputs):
            others = inputs + outputs[:k]
            if any(out is t or np.may_share_memory(out._array, t._array) for t in others):
                raise RuntimeError(
                    f"{self._name} (with implementation in {inspect.getmodule(self._init_fn)}): "
                    f"The output of this custom operator (1) must not also be an input to this "
                    f"custom operator and (2) may not alias any inputs to this custom operator "
                    f"or other returns. The most common way to trigger this error is if we have "
                    f"y = custom_op(x) and y and x are the same Tensor. Please instead return a "
                    f"clone of the offending output tensor(s) (e.g. return x.clone()) or "
                    f"refactor the custom operator to not return y.")


def custom_op(name: str, fn=None, /, *, mutates_args, device_types=None, schema=None,
              tags=None):
    """Wrap fn (or decorate a function) as the operator `name` ("ns::opname")."""
    def wrap(func):
        text = schema if schema is not None else infer_schema(func, mutates_args=mutates_args)
        ns, opname = _split_qualname(name)
        op = CustomOpDef(ns, opname, text, func)
        if device_types is not None:
            op._entry.kernels.pop("CompositeExplicitAutograd")
            op.register_kernel(device_types, func)
        return op
    return wrap if fn is None else wrap(fn)


def _kernel_registration(entry, device_types, fn):
    """fn as entry's kernel for each of device_types ("cpu", "meta", None: every device); a
    decorator without fn."""
    def register(func):
        for device in (device_types,) if isinstance(device_types, (str, type(None))) \
                else device_types:
            entry.kernels[_device_key(device)] = func
        return func
    return register if fn is None else register(fn)


def _device_key(device) -> str:
    key = _DEVICE_KEYS.get(device)
    if key is None:
        raise ValueError(f"tapegrad runs on the CPU: no kernel for device type {device!r}")
    return key


def _entry_of(op) -> _ops.OperatorEntry:
    if isinstance(op, CustomOpDef):
        return op._entry
    if isinstance(op, _ops.OpOverload):
        return op._entry or _ops.lookup(op.name())
    if isinstance(op, _ops.OpOverloadPacket):
        return _ops.lookup(op._qualified_op_name)
    if isinstance(op, str):
        return _ops.lookup(op)
    raise ValueError(f"register: expected op to be a string, OpOverload or CustomOpDef, got "
                     f"{type(op)}")


class Library:
    """A handle on the operators of one namespace: kind "DEF" owns the namespace (one per
    namespace), "FRAGMENT" adds definitions to it, "IMPL" adds kernels."""

    _owners: dict = {}

    def __init__(self, ns: str, kind: str, dispatch_key: str = ""):
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        if ns in ("aten", "prim", "prims") and kind == "DEF":
            raise ValueError(f"{ns} is a reserved namespace. Please try creating a library with "
                             f"another name.")
        if kind == "DEF":
            if ns in Library._owners:
                raise RuntimeError(f"Only a single TORCH_LIBRARY can be used to register the "
                                   f"namespace {ns}; please put all of your definitions in a "
                                   f"single TORCH_LIBRARY block.  If you were trying to specify "
                                   f"implementations, consider using TORCH_LIBRARY_IMPL (which "
                                   f"can be duplicated).")
            Library._owners[ns] = self
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._op_defs: set = set()

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema: str, alias_analysis: str = "", *, tags=()) -> str:
        """Add the operator `schema` ("name(args) -> returns") to this namespace; returns its
        name."""
        if self.kind == "IMPL":
            raise RuntimeError("define() is not allowed on an IMPL library")
        parsed = parse_schema(schema)
        name = parsed.name if "::" in parsed.name else f"{self.ns}::{parsed.name}"
        full = type(parsed)(name, parsed.overload_name, parsed.arguments, parsed.returns)
        _ops.register(_ops.OperatorEntry(full))
        self._op_defs.add(_ops.qualified(*name.split("::"), parsed.overload_name))
        return parsed.name.split("::")[-1] + (f".{parsed.overload_name}"
                                               if parsed.overload_name else "")

    def impl(self, op_name, fn, dispatch_key: str = "", *, with_keyset: bool = False):
        """fn as op_name's kernel for dispatch_key (the library's own key by default)."""
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        if key not in _KEYS:
            raise ValueError(f"tapegrad runs on the CPU: no {key} dispatch key")
        if isinstance(op_name, str):
            qual = op_name if "::" in op_name else f"{self.ns}::{op_name}"
        else:
            qual = op_name.name()
        entry = _ops.lookup(qual)
        entry.kernels["CPU" if key == "AutogradCPU" else key] = fn

    def _destroy(self):
        for key in self._op_defs:
            _ops._REGISTRY.pop(key, None)
        if Library._owners.get(self.ns) is self:
            del Library._owners[self.ns]


_KEEP_ALIVE: list = []      # libraries made by the module-level define / impl, as PyTorch's


def define(qualname: str, schema: str, *, lib=None, tags=()):
    """torch.library.define("ns::name", "(args) -> returns")."""
    ns, name = _split_qualname(qualname)
    if lib is None:
        lib = Library(ns, "FRAGMENT")
        _KEEP_ALIVE.append(lib)
    lib.define(name + schema, tags=tags)


def impl(qualname, types, func=None, *, lib=None):
    """Register func as qualname's kernel for device type(s) `types` ("cpu", or a dispatch key
    such as "CompositeImplicitAutograd"); a decorator without func."""
    def register(fn):
        entry = _entry_of(qualname)
        for t in (types,) if isinstance(types, str) else types:
            key = t if t in _KEYS else _device_key(t)
            entry.kernels[key] = fn
        return fn
    return register if func is None else register(func)


def register_kernel(op, device_types, func=None, /, *, lib=None):
    """func as op's kernel for device_types ("cpu" or None: every device)."""
    return _kernel_registration(_entry_of(op), device_types, func)


def register_fake(op, func=None, /, *, lib=None, _stacklevel=1):
    """func as op's fake (meta) kernel; a decorator without func."""
    entry = _entry_of(op)

    def register(fn):
        entry.fake = fn
        return fn
    return register if func is None else register(func)


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    """backward (and setup_context) as op's gradient formula."""
    if isinstance(op, CustomOpDef):
        return op.register_autograd(backward, setup_context=setup_context)
    _entry_of(op).autograd = (backward, setup_context)


def fallthrough_kernel():
    """A kernel that defers to the next one (PyTorch's marker for Library.impl)."""
    raise NotImplementedError("fallthrough_kernel() should never be called.")


# -- opcheck ---------------------------------------------------------------------------------

class OpCheckError(Exception):
    pass


_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor",
          "test_aot_dispatch_dynamic")


def opcheck(op, args, kwargs=None, *, test_utils=_TESTS, raise_exception=True, atol=None,
            rtol=None):
    """Check op's registration on these arguments, as PyTorch's opcheck: its schema (no
    undeclared writes, no aliased outputs), its autograd registration, its fake kernel against
    the real one (shapes, dtypes), and the forward + backward through the registration (PyTorch
    compiles that one; tapegrad runs it eagerly).  Returns {test: "SUCCESS" or the exception}."""
    entry = _entry_of(op)
    kwargs = kwargs or {}
    tests = (test_utils,) if isinstance(test_utils, str) else tuple(test_utils)
    results = {}
    for test in tests:
        if test not in _TESTS:
            raise ValueError(f"test_utils={test!r} is not a valid test; choose from {_TESTS}")
        try:
            globals()["_" + test](entry, op, args, kwargs)
            results[test] = "SUCCESS"
        except Exception as e:          # noqa: BLE001 (reported, as PyTorch's opcheck)
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {test} failed with {e} (scroll up for "
                                   f"stack trace)") from e
            results[test] = e
    return results


def _map_tensors(values, fn):
    """values with fn applied to each tensor, and to each tensor of a list of tensors."""
    return [fn(v) if isinstance(v, _core.TensorBase) else
            [fn(t) for t in v] if isinstance(v, list) and v and
            all(isinstance(t, _core.TensorBase) for t in v) else v for v in values]


def _cloned(values):
    return _map_tensors(values, lambda t: t.detach().clone())


def _test_schema(entry, op, args, kwargs):
    from .grad_mode import no_grad
    before = _cloned(args)
    kw_before = dict(zip(kwargs, _cloned(kwargs.values())))
    with no_grad():
        op(*args, **kwargs)
    written = {a.name for a in entry.schema.arguments if a.is_write}
    names = [a.name for a in entry.schema.arguments if not a.kwarg_only]
    pairs = list(zip(names, args, before)) + [(k, kwargs[k], kw_before[k]) for k in kwargs]
    for name, now, then in pairs:
        for t_now, t_then in zip(_ops._tensors_in((now,)), _ops._tensors_in((then,))):
            if name not in written and not _same(t_now, t_then):
                raise RuntimeError(f"Argument {name} is not defined as mutable but was mutated")


def _same(a, b) -> bool:
    import numpy as np
    return a.shape == b.shape and np.array_equal(a.detach().numpy(), b.detach().numpy(),
                                                 equal_nan=True)


def _test_autograd_registration(entry, op, args, kwargs):
    needs = any(t.requires_grad for t in _ops._tensors_in((*args, *kwargs.values())))
    if needs and entry.custom_op is None and entry.autograd is None and not (
            {"Autograd", "CompositeImplicitAutograd"} & set(entry.kernels)):
        raise AssertionError(f"{entry.schema.name}: at least one input requires grad but the "
                             f"operator has no autograd registration (register_autograd, or a "
                             f"CompositeImplicitAutograd / Autograd kernel)")


def _to_meta(values):
    return _map_tensors(values, lambda t: t.to("meta"))


def _test_faketensor(entry, op, args, kwargs):
    from .grad_mode import no_grad
    with no_grad():
        real = op(*_cloned(args), **dict(zip(kwargs, _cloned(kwargs.values()))))
        fake = op(*_to_meta(args), **dict(zip(kwargs, _to_meta(kwargs.values()))))
    reals = list(_ops._tensors_in(real if isinstance(real, (list, tuple)) else (real,)))
    fakes = list(_ops._tensors_in(fake if isinstance(fake, (list, tuple)) else (fake,)))
    if len(reals) != len(fakes):
        raise RuntimeError(f"the fake kernel returned {len(fakes)} tensors, the real one "
                           f"{len(reals)}")
    for k, (r, f) in enumerate(zip(reals, fakes)):
        if tuple(r.shape) != tuple(f.shape) or r.dtype != f.dtype:
            raise RuntimeError(f"output {k}: the fake kernel gives {f.dtype} of shape "
                               f"{tuple(f.shape)}, the real one {r.dtype} of shape "
                               f"{tuple(r.shape)}")


def _test_aot_dispatch_dynamic(entry, op, args, kwargs):
    _test_faketensor(entry, op, args, kwargs)
    inputs = [t for t in _ops._tensors_in(args) if t.requires_grad]
    if not inputs:
        return
    from . import autograd
    out = op(*args, **kwargs)
    outs = [t for t in _ops._tensors_in(out if isinstance(out, (list, tuple)) else (out,))
            if t.requires_grad]
    if outs:
        grads = autograd.grad(outs, inputs, [o.detach().clone().fill_(1) for o in outs],
                              allow_unused=True)
        for t, g in zip(inputs, grads):
            if g is not None and tuple(g.shape) != tuple(t.shape):
                raise RuntimeError(f"the gradient of an input of shape {tuple(t.shape)} has "
                                   f"shape {tuple(g.shape)}")
