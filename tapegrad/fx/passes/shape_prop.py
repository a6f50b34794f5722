"""torch.fx.passes.shape_prop: ShapeProp runs a GraphModule and stores each node's tensor
metadata (shape, dtype, requires_grad, stride, memory_format) in node.meta['tensor_meta']."""
from __future__ import annotations as _annotations

from typing import Any, NamedTuple

from ..interpreter import Interpreter
from ..node import map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


class TensorMetadata(NamedTuple):
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: Any
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(result):
    import tapegrad
    memory_format = None
    for query in (tapegrad.contiguous_format, tapegrad.channels_last, tapegrad.channels_last_3d):
        try:
            if result.is_contiguous(memory_format=query):
                memory_format = query
                break
        except RuntimeError:
            continue
    is_quantized = bool(getattr(result, "is_quantized", False))
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, result.stride(),
                          memory_format, is_quantized, {})


class ShapeProp(Interpreter):
    """propagate(*args) runs the module and records each node's result metadata."""

    def run_node(self, n):
        import tapegrad
        result = super().run_node(n)
        found = []

        def extract(obj):
            if isinstance(obj, tapegrad.Tensor):
                found.append(True)
                return _extract_tensor_metadata(obj)
            return obj
        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        return super().run(*args)
