"""torch.export.ExportedProgram: an exported graph (aten-level, parameters lifted to inputs), its
signature, the state it reads, its range constraints; `module()` turns it back into a runnable
Module that checks its inputs against the guards export recorded, as PyTorch's does."""
from __future__ import annotations as _annotations

import copy
import re

from ..fx import Graph, GraphModule
from .graph_signature import ExportGraphSignature, InputKind
from .._torch_names import TorchNamedClass as _TorchNamedClass

__all__ = ["ExportedProgram"]

_DTYPE_ABBREVIATIONS = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
                        "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
                        "bool": "b8", "complex64": "c64", "complex128": "c128"}


def _annotation(node) -> str | None:
    """A node's value as export annotates it: "f32[s77, 3]" (a tensor), "Sym(s77 + 1)" (a
    symbolic size), None (anything else)."""
    from .. import Tensor
    value = node.meta.get("val")
    if "sym_int" in node.meta:
        return f'"Sym({node.meta["sym_int"]})"'
    if not isinstance(value, Tensor):
        return None
    dtype = _DTYPE_ABBREVIATIONS.get(str(value.dtype).removeprefix("torch."), str(value.dtype))
    sizes = node.meta.get("sym_shape") or [str(size) for size in value.shape]
    return f'"{dtype}[{", ".join(sizes)}]"'


class Guard:
    """One check of module()'s inputs: `x.size()[0] <= 64` (dim 0 of x, "<=", 64) or `n == 3`
    (dim None).  Plain data, so a saved program keeps its guards."""

    def __init__(self, name, dim, relation, bound):
        self.name, self.dim, self.relation, self.bound = name, dim, relation, bound

    @property
    def text(self):
        source = self.name if self.dim is None else f"{self.name}.size()[{self.dim}]"
        return f"{source} {self.relation} {self.bound!r}"

    def holds(self, value) -> bool:
        if self.dim is not None:
            if self.dim >= value.dim():
                return False
            value = value.shape[self.dim]
        return {"==": value == self.bound, "<=": value <= self.bound,
                ">=": value >= self.bound}[self.relation]

    def as_data(self):
        return (self.name, self.dim, self.relation, self.bound)


class ExportedProgram(metaclass=_TorchNamedClass):
    """The result of torch.export.export."""

    def __init__(self, graph_module, graph_signature, state_dict, constants, range_constraints,
                 in_names, out_spec, guards, example_inputs):
        self._graph_module = graph_module
        self._graph_signature = graph_signature
        self._state_dict = state_dict
        self._constants = constants
        self._range_constraints = range_constraints
        self._in_names = in_names            # the forward's inputs, as export bound them
        self._out_spec = out_spec
        self._guards = guards
        self._example_inputs = example_inputs

    @property
    def graph_module(self):
        return self._graph_module

    @property
    def graph(self):
        return self._graph_module.graph

    @property
    def graph_signature(self) -> ExportGraphSignature:
        return self._graph_signature

    @property
    def state_dict(self):
        return self._state_dict

    @property
    def constants(self):
        return self._constants

    @property
    def tensor_constants(self):
        return self._constants

    @property
    def range_constraints(self):
        return self._range_constraints

    @property
    def example_inputs(self):
        return self._example_inputs

    def parameters(self):
        for _name, p in self.named_parameters():
            yield p

    def named_parameters(self):
        for target in self._graph_signature.parameters:
            yield target, self._state_dict[target]

    def buffers(self):
        for _name, b in self.named_buffers():
            yield b

    def named_buffers(self):
        for target in self._graph_signature.buffers:
            yield target, self._state_dict.get(target, self._constants.get(target))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Unable to call ExportedProgram directly. You should use "
                           "`exported_program.module()` instead.")

    def _lifted_value(self, spec):
        return self._state_dict[spec.target] if spec.target in self._state_dict \
            else self._constants[spec.target]

    # -- back to a module -------------------------------------------------------------------------
    def module(self, *, check_guards=True):
        """A Module running the graph with the parameters, buffers and constants as its own
        attributes (at their original paths), checking its inputs against export's guards."""
        from ..nn import Parameter
        graph = Graph()
        env = {}
        root = {}
        kinds = {s.arg.name: s for s in self._graph_signature.input_specs}
        for node in self.graph.nodes:
            if node.op == "placeholder" and kinds[node.target].kind is not InputKind.USER_INPUT:
                spec = kinds[node.target]
                value = self._lifted_value(spec)
                if spec.kind is InputKind.PARAMETER and not isinstance(value, Parameter):
                    value = Parameter(value)
                root[spec.target] = value
                env[node] = graph.create_node("get_attr", spec.target, name=spec.target.replace(".", "_"))
            else:
                env[node] = graph.node_copy(node, lambda n: env[n])
        module = _ExportedModule(root, graph, "GraphModule")
        module._export_guards = self._guards if check_guards else []
        module._export_in_names = self._in_names
        module._export_out_spec = self._out_spec
        return module

    def run_decompositions(self, decomp_table=None, decompose_custom_triton_ops=False):
        """A copy of this program with its ops decomposed (_decompositions.py)."""
        from ._decompositions import decompose
        program = copy.copy(self)
        program._graph_module = decompose(self._graph_module, decomp_table)
        return program

    def validate(self):
        self.graph.lint()

    # -- printing ---------------------------------------------------------------------------------
    def _readable_graph(self) -> str:
        """The graph module as export prints it: forward's arguments and each node's result
        annotated with dtype and shape."""
        names = {node.name: node for node in self.graph.nodes}
        names.update({node.target: node for node in self.graph.nodes if node.op == "placeholder"})
        lines = self._graph_module.code.strip().split("\n")
        out = []
        for line in lines:
            if line.startswith("def forward("):
                params = []
                for p in line[len("def forward("):line.rindex(")")].split(", ")[1:]:
                    note = _annotation(names[p]) if p in names else None
                    params.append(p if note is None else f"{p}: {note}")
                out.append(f"def forward(self, {', '.join(params)}):")
                out.append("    # No stacktrace found for following nodes")
                continue
            match = re.match(r"    (\w+) = ", line)
            if match and match.group(1) in names:
                note = _annotation(names[match.group(1)])
                if note is not None:
                    line = f"    {match.group(1)}: {note} = {line[match.end():]}"
            out.append(line.rstrip() if line.strip() else "")
        body = "\n".join("        " + line if line else "" for line in out)
        return f"    class GraphModule(torch.nn.Module):\n{body}\n"

    def __str__(self):
        signature = "\n".join("    " + line for line in str(self._graph_signature).split("\n")[1:])
        constraints = ", ".join(f"{k}: {v}" for k, v in self._range_constraints.items())
        return (f"ExportedProgram:\n{self._readable_graph()}    \nGraph signature: \n{signature}"
                f"\nRange constraints: {{{constraints}}}\n")

    def __repr__(self):
        return str(self)


def _exported_module_base():
    return GraphModule


class _ExportedModule(_exported_module_base()):
    """module() of an ExportedProgram: checks its inputs, returns the outputs' original nest."""

    def __call__(self, *args, **kwargs):
        from ..utils._pytree import tree_unflatten
        flat = self._bind_inputs(args, kwargs)
        values = dict(zip(self._export_in_names, flat))
        for guard in self._export_guards:
            if not guard.holds(values[guard.name]):
                raise AssertionError(f"Guard failed: {guard.text}")
        result = super().__call__(*flat)
        return tree_unflatten(list(result), self._export_out_spec)

    def _bind_inputs(self, args, kwargs):
        names = self._export_in_names
        given = len(args) + len(kwargs)
        if given != len(names) or any(k not in names[len(args):] for k in kwargs):
            raise ValueError("Trying to flatten user inputs with exported input tree spec, but "
                             f"actually got {given} inputs where {len(names)} were exported.\n"
                             "Please check that the inputs have the same number and type of args "
                             "and kwargs as the ones you used when tracing.")
        return list(args) + [kwargs[n] for n in names[len(args):]]
