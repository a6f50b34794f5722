"""torch.fx.experimental.symbolic_shapes: the errors export raises when code asks the value of a
data-dependent quantity (`if x.sum() > 0`) or when a dim breaks its declared range."""
from __future__ import annotations as _annotations

__all__ = ["GuardOnDataDependentSymNode", "ConstraintViolationError"]


class GuardOnDataDependentSymNode(RuntimeError):
    pass


class ConstraintViolationError(RuntimeError):
    pass
