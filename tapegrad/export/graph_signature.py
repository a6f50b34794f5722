"""torch.export.graph_signature: what each placeholder and output of an exported graph is (a user
input, a lifted parameter, buffer or constant; a user output), as PyTorch describes it."""
from __future__ import annotations as _annotations

import dataclasses
import enum
from .._torch_names import TorchNamedClass as _TorchNamedClass

__all__ = ["InputKind", "OutputKind", "TensorArgument", "ConstantArgument", "InputSpec",
           "OutputSpec", "ExportGraphSignature"]


class InputKind(enum.Enum):
    USER_INPUT = 1
    PARAMETER = 2
    BUFFER = 3
    CONSTANT_TENSOR = 4
    CUSTOM_OBJ = 5
    TOKEN = 6


class OutputKind(enum.Enum):
    USER_OUTPUT = 1
    LOSS_OUTPUT = 2
    BUFFER_MUTATION = 3
    PARAMETER_MUTATION = 4
    GRADIENT_TO_PARAMETER = 5
    GRADIENT_TO_USER_INPUT = 6
    USER_INPUT_MUTATION = 7
    TOKEN = 8


@dataclasses.dataclass
class TensorArgument:
    name: str


@dataclasses.dataclass
class ConstantArgument:
    name: str
    value: object


@dataclasses.dataclass
class InputSpec:
    kind: InputKind
    arg: object
    target: str | None
    persistent: bool | None = None

    def __str__(self):
        target = "" if self.target is None else f" target='{self.target}'"
        persistent = "" if self.persistent is None else f" persistent={self.persistent}"
        return f"{self.arg.name}: {self.kind.name}{target}{persistent}"


@dataclasses.dataclass
class OutputSpec:
    kind: OutputKind
    arg: object
    target: str | None

    def __str__(self):
        target = "" if self.target is None else f" target='{self.target}'"
        return f"{self.arg.name}: {self.kind.name}{target}"


def _user_value(arg):
    return arg.name if isinstance(arg, TensorArgument) else arg.value


@dataclasses.dataclass
class ExportGraphSignature(metaclass=_TorchNamedClass):
    """The specs of an exported graph's inputs (placeholders, in order) and outputs."""
    input_specs: list
    output_specs: list

    def _targets(self, kind):
        return tuple(s.target for s in self.input_specs if s.kind is kind)

    @property
    def parameters(self):
        return self._targets(InputKind.PARAMETER)

    @property
    def buffers(self):
        return self._targets(InputKind.BUFFER)

    @property
    def non_persistent_buffers(self):
        return tuple(s.target for s in self.input_specs
                     if s.kind is InputKind.BUFFER and s.persistent is False)

    @property
    def lifted_tensor_constants(self):
        return self._targets(InputKind.CONSTANT_TENSOR)

    @property
    def user_inputs(self):
        return tuple(_user_value(s.arg) for s in self.input_specs if s.kind is InputKind.USER_INPUT)

    @property
    def user_outputs(self):
        return tuple(_user_value(s.arg) for s in self.output_specs if s.kind is OutputKind.USER_OUTPUT)

    def _placeholders(self, kind):
        return {s.arg.name: s.target for s in self.input_specs if s.kind is kind}

    @property
    def inputs_to_parameters(self):
        return self._placeholders(InputKind.PARAMETER)

    @property
    def inputs_to_buffers(self):
        return self._placeholders(InputKind.BUFFER)

    @property
    def inputs_to_lifted_tensor_constants(self):
        return self._placeholders(InputKind.CONSTANT_TENSOR)

    @property
    def buffers_to_mutate(self):
        return {}

    def __str__(self):
        inputs = "\n".join(map(str, self.input_specs))
        outputs = "\n".join(map(str, self.output_specs))
        return f"\n# inputs\n{inputs}\n\n# outputs\n{outputs}\n"
