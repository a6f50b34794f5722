"""torch.export: export(mod, args) traces a Module's forward on example inputs into an
ExportedProgram, an aten-level graph with parameters and buffers lifted to inputs; Dim and
dynamic_shapes make sizes dynamic; save / load keep a program in a file; unflatten gives back a
Module; ExportedProgram.module() runs it.

The tracer is tapegrad.fx's, run on values (_tracer.py); shapes are specialised unless declared
dynamic; a branch on a tensor's value raises PyTorch's data-dependent error.
"""
from __future__ import annotations as _annotations

from .dynamic_shapes import Dim, dims
from .exported_program import ExportedProgram
from .graph_signature import (ConstantArgument, ExportGraphSignature, InputKind, InputSpec,
                              OutputKind, OutputSpec, TensorArgument)

__all__ = ["export", "ExportedProgram", "ExportGraphSignature", "Dim", "dims", "save", "load",
           "unflatten", "InputKind", "InputSpec", "OutputKind", "OutputSpec", "TensorArgument",
           "ConstantArgument", "ShapesCollection"]


def export(mod, args, kwargs=None, *, dynamic_shapes=None, strict=False,
           preserve_module_call_signature=(), prefer_deferred_runtime_asserts_over_guards=False):
    """Trace `mod`'s forward on `args` / `kwargs` into an ExportedProgram (see the module doc)."""
    import inspect

    from .. import Tensor
    from ..fx import GraphModule
    from ..nn import Module
    from ._tracer import ExportTracer
    from .dynamic_shapes import resolve
    if not isinstance(mod, Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got {type(mod)}.")
    if not isinstance(args, tuple):
        raise ValueError(f"Expected `args` to be a tuple, got {type(args)}")
    kwargs = dict(kwargs or {})
    bound = inspect.signature(mod.forward).bind(*args, **kwargs)
    spec = resolve(dynamic_shapes, list(bound.arguments), list(bound.arguments.values()))
    tracer = ExportTracer(mod, args, kwargs, spec)
    graph = tracer.trace_export()
    state_dict = {}
    constants = dict(tracer.constants)
    persistent = mod.state_dict(keep_vars=True)
    for s in tracer.input_specs:
        if s.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            value = mod.get_parameter(s.target) if s.kind is InputKind.PARAMETER else mod.get_buffer(s.target)
            (state_dict if s.target in persistent else constants)[s.target] = value
    graph_module = GraphModule({}, graph, "GraphModule")
    names = tracer.user_input_names
    values = dict(zip(bound.arguments, bound.arguments.values()))
    guards = _guards(names, values, spec)
    example = (tuple(args), kwargs)
    signature = ExportGraphSignature(tracer.input_specs, tracer.output_specs)
    del Tensor
    return ExportedProgram(graph_module, signature, state_dict, constants,
                           dict(spec.range_constraints), names, tracer.out_spec, guards, example)


def _guards(names, values, spec):
    """module()'s input checks: each static dim's size, each dynamic dim's range (its lower bound
    only above 2, as PyTorch's 0/1 specialisation leaves it), each scalar input's value."""
    from .. import Tensor
    from .exported_program import Guard
    guards = []
    for name in names:
        value = values[name]
        if not isinstance(value, Tensor):
            guards.append(Guard(name, None, "==", value))
            continue
        for d, size in enumerate(value.shape):
            dynamic = spec.dynamic.get((name, d))
            if dynamic is None:
                guards.append(Guard(name, d, "==", size))
                continue
            _symbol, lower, upper = dynamic
            if lower > 2:
                guards.append(Guard(name, d, ">=", lower))
            if upper is not None:
                guards.append(Guard(name, d, "<=", upper))
    return guards


class ShapesCollection(dict):
    """dynamic_shapes by tensor: `shapes[x] = {0: Dim("batch")}`."""

    def __setitem__(self, tensor, spec):
        super().__setitem__(id(tensor), (tensor, spec))

    def dynamic_shapes(self, m, args, kwargs=None):
        by_id = {key: spec for key, (_t, spec) in self.items()}
        return tuple(by_id.get(id(a)) for a in args)


def save(ep, f, *, extra_files=None, opset_version=None, pickle_protocol=2):
    from ._serialize import save as _save
    _save(ep, f)


def load(f, *, extra_files=None, expected_opset_version=None):
    from ._serialize import load as _load
    return _load(f)


def unflatten(ep, flat_args_adapter=None):
    """A Module with ep's state at its original paths, running ep's graph (PyTorch's
    UnflattenedModule keeps the submodule hierarchy; this one runs the flat graph)."""
    return ep.module()
