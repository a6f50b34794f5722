"""tapegrad.onnx: what scripts that merely import ``torch.onnx`` touch.

Training scripts import ``torch.onnx`` at the top for an optional export at the end, so the
import must succeed.  tapegrad records no traceable program that an ONNX graph could be built
from, so :func:`export` raises ``NotImplementedError`` (a script that asks for an export learns
it cannot have one; no file is written).
"""
from __future__ import annotations as _annotations

__all__ = ["export", "is_in_onnx_export"]


def is_in_onnx_export() -> bool:
    """Always False: tapegrad never runs a model under an ONNX export."""
    return False


def export(model, args=(), f=None, **kwargs):
    """Not available in tapegrad: raises ``NotImplementedError`` (ONNX export needs a traced
    graph of the model, which tapegrad does not build)."""
    raise NotImplementedError("tapegrad cannot export models to ONNX (torch.onnx.export needs "
                              "PyTorch's tracer); save the weights with tapegrad.save instead")
