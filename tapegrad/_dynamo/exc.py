"""torch._dynamo.exc: the exception types torch.export raises for user errors (a dynamic_shapes
spec that does not fit the inputs, a constraint the code violates)."""
from __future__ import annotations as _annotations

import enum

__all__ = ["TorchDynamoException", "UserError", "UserErrorType", "Unsupported"]


class TorchDynamoException(RuntimeError):
    pass


class Unsupported(TorchDynamoException):
    pass


class UserErrorType(enum.Enum):
    DYNAMIC_CONTROL_FLOW = enum.auto()
    ANTI_PATTERN = enum.auto()
    STANDARD_LIBRARY = enum.auto()
    CONSTRAINT_VIOLATION = enum.auto()
    DYNAMIC_DIM = enum.auto()
    INVALID_INPUT = enum.auto()
    INVALID_OUTPUT = enum.auto()
    UNSUPPORTED_NON_STRICT = enum.auto()


class UserError(Unsupported):
    def __init__(self, error_type, msg, case_name=None):
        super().__init__(msg)
        self.error_type = error_type
        self.message = msg
