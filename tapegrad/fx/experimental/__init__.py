"""torch.fx.experimental: symbolic_shapes' exception types, which torch.export raises."""
from . import symbolic_shapes  # noqa: F401
