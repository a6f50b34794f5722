"""torch.cuda.nvtx: NVIDIA's range annotations for profilers.  PyTorch's CPU build stubs the NVTX
library, so each call fails as there: the named ranges with its RuntimeError, the id-based
range_start/range_end with the AttributeError of the stub lacking those entry points."""
from contextlib import contextmanager

__all__ = ["range_push", "range_pop", "range_start", "range_end", "mark", "range"]

_NOT_INSTALLED = "NVTX functions not installed. Are you sure you have a CUDA build?"


def _missing():
    raise RuntimeError(_NOT_INSTALLED)


def _stub_lacks(entry: str):
    raise AttributeError(f"'_NVTXStub' object has no attribute '{entry}'")


def range_push(msg):
    """Open a nested range: PyTorch's RuntimeError without CUDA."""
    _missing()


def range_pop():
    """Close the innermost range: PyTorch's RuntimeError without CUDA."""
    _missing()


def range_start(msg) -> int:
    """Open an unnested range: the AttributeError of PyTorch's NVTX stub."""
    _stub_lacks("rangeStartA")


def range_end(range_id) -> None:
    """Close an unnested range: the AttributeError of PyTorch's NVTX stub."""
    _stub_lacks("rangeEnd")


def mark(msg):
    """Mark an instant: PyTorch's RuntimeError without CUDA."""
    _missing()


@contextmanager
def range(msg, *args, **kwargs):
    """``with torch.cuda.nvtx.range("step"):`` pushes on entry, so it raises there, as in PyTorch."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
