"""Tensor repr, character for character as PyTorch prints it.

PyTorch's rules (torch/_tensor_str.py, default print options): floats print with 4 decimals, or
with none and a trailing '.' when every finite value is an integer ("int mode"), or in scientific
notation when the finite non-zero magnitudes span more than 1000x, exceed 1e8, or (outside int mode)
go below 1e-4. Every element is right-aligned to the widest; lines wrap at 80 columns; tensors of
more than 1000 elements show the first and last 3 entries of each dimension around '...'.
`set_printoptions` changes those numbers (and can force or forbid scientific notation), as
torch.set_printoptions does.
"""
from __future__ import annotations as _annotations

import math

import numpy as np

from . import _core



class _PrintOptions:
    """The current print options; one shared instance, changed by set_printoptions."""

    def __init__(self):
        self.precision = 4
        self.threshold = 1000
        self.edgeitems = 3
        self.linewidth = 80
        self.sci_mode = None        # None: chosen from the values; True/False: forced


PRINT_OPTS = _PrintOptions()

# PyTorch's named profiles: (precision, threshold, edgeitems, linewidth).
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None) -> None:
    """torch.set_printoptions: a profile first, then the explicit options over it.  As in
    PyTorch an unknown profile name is ignored, and sci_mode is always reset (None restores the
    automatic choice)."""
    _core._capture_setting("the print options (set_printoptions)")
    opts = PRINT_OPTS
    if profile in _PROFILES:
        opts.precision, opts.threshold, opts.edgeitems, opts.linewidth = _PROFILES[profile]
    if precision is not None:
        opts.precision = precision
    if threshold is not None:
        opts.threshold = threshold
    if edgeitems is not None:
        opts.edgeitems = edgeitems
    if linewidth is not None:
        opts.linewidth = linewidth
    opts.sci_mode = sci_mode


# dtypes PyTorch does not name in a repr: the default float dtype and the inferred int and bool.
def _implied_dtypes() -> tuple:
    default = _core.get_default_dtype().name
    return (default, "complex128" if default == "float64" else "complex64", "int64", "bool")


class _Formatter:
    """Chooses one notation and one width for all the elements that will be printed."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if not self.floating:
            for v in values.ravel().tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        flat = values.ravel()
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        vals = finite.tolist()
        mags = np.abs(finite.astype(np.float64))
        lo, hi = float(mags.min()), float(mags.max())
        self.int_mode = all(v == math.ceil(v) for v in vals)
        # One notation for all elements: forced by the print options, or chosen from the range.
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = bool(PRINT_OPTS.sci_mode)
        precision = PRINT_OPTS.precision
        if self.sci_mode:
            self.max_width = max(len(f"{v:.{precision}e}") for v in vals)
        elif self.int_mode:
            # the trailing '.' that marks an integral float counts in the width
            self.max_width = max(len(f"{v:.0f}") + 1 for v in vals)
        else:
            self.max_width = max(len(f"{v:.{precision}f}") for v in vals)

    def format(self, value) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.max_width}.{PRINT_OPTS.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if not (math.isinf(value) or math.isnan(value)):
                text += "."
        else:
            text = f"{value:.{PRINT_OPTS.precision}f}"
        return " " * (self.max_width - len(text)) + text


class _ComplexFormatter:
    """PyTorch's complex print: one formatter for the real parts and one for the imaginary
    parts, each element `real+imagj` (the imaginary part's own sign, its padding dropped)."""

    def __init__(self, values: np.ndarray):
        self.real = _Formatter(values.real)
        self.imag = _Formatter(values.imag)
        # the width an element takes, for the elements per line: both parts and the 'j'
        self.max_width = self.real.max_width + self.imag.max_width + 1

    def format(self, value) -> str:
        value = complex(value)
        real_str = self.real.format(value.real)
        imag_str = (self.imag.format(value.imag) + "j").lstrip()
        if imag_str[0] in "+-":
            return real_str + imag_str
        return real_str + "+" + imag_str


def _formatter(values: np.ndarray):
    return _ComplexFormatter(values) if values.dtype.kind == "c" else _Formatter(values)


def _summarized(a: np.ndarray) -> np.ndarray:
    """The elements a summarized print shows: edge items of every dimension."""
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * PRINT_OPTS.edgeitems:
        a = np.concatenate([a[:PRINT_OPTS.edgeitems], a[-PRINT_OPTS.edgeitems:]])
    if a.ndim == 1:
        return a
    if not PRINT_OPTS.edgeitems:
        return a[(slice(0, 0),) * a.ndim]
    return np.stack([_summarized(row) for row in a])


def _vector_str(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    element_length = fmt.max_width + 2
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / element_length)))
    if summarize and not PRINT_OPTS.edgeitems:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * PRINT_OPTS.edgeitems:
        data = ([fmt.format(v) for v in a[:PRINT_OPTS.edgeitems].tolist()] + [" ..."]
                + [fmt.format(v) for v in a[-PRINT_OPTS.edgeitems:].tolist()])
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, fmt)
    if summarize and a.shape[0] > 2 * PRINT_OPTS.edgeitems:
        edge = PRINT_OPTS.edgeitems
        rows = ([_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(edge)] + ["..."]
                + [_tensor_str(a[i], indent + 1, summarize, fmt)
                   for i in range(a.shape[0] - edge, a.shape[0])])
    else:
        rows = [_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _add_suffixes(text: str, suffixes: list[str], indent: int, force_newline: bool = False) -> str:
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if force_newline or last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            force_newline = False
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t) -> str:
    """The repr PyTorch gives tensor `t` (a tapegrad Tensor)."""
    a = t._array
    cls = type(t)
    # A user's Tensor subclass prints under its own name (M([1., 2.])), as in PyTorch; tapegrad's
    # own classes (Tensor, Parameter, ...) print as tensor(.
    prefix = "tensor(" if cls.__module__.startswith("tapegrad") else f"{cls.__name__}("
    indent = len(prefix)
    suffixes = []
    dtype_name = t.dtype.name
    if a.size == 0:
        if a.ndim != 1:
            suffixes.append("size=" + str(tuple(a.shape)))
        if dtype_name != _core.get_default_dtype().name:
            suffixes.append("dtype=" + repr(t.dtype))
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            # PyTorch names the size when edgeitems=0, whose print shows no element
            suffixes.append("size=" + str(tuple(a.shape)))
        if dtype_name not in _implied_dtypes():
            suffixes.append("dtype=" + repr(t.dtype))
        summarize = a.size > PRINT_OPTS.threshold
        fmt = _formatter(_summarized(a) if summarize else a)
        body = _tensor_str(a, indent, summarize, fmt)
    grad_fn = t.grad_fn
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(grad_fn).__name__}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    text = _add_suffixes(prefix + body, suffixes, indent)
    # A user subclass's instance made a Parameter (nn.Parameter keeps its class and flags it),
    # or a user's subclass of Parameter, says so, as PyTorch's repr does; a plain Parameter
    # says "Parameter containing:" instead.
    from .nn.parameter import Parameter
    if isinstance(t, Parameter) and not cls.__module__.startswith("tapegrad"):
        text = f"Parameter({text})"
    return text


def _body(a: np.ndarray, indent: int) -> str:
    """The bracketed elements of `a` as tensor_repr prints them, continuation lines at `indent`;
    an empty array names its size (PyTorch's sparse repr does so for any empty part)."""
    if a.size == 0:
        return "[], size=" + str(tuple(a.shape))
    summarize = a.size > PRINT_OPTS.threshold
    fmt = _formatter(_summarized(a) if summarize else a)
    return _tensor_str(a, indent, summarize, fmt)


def sparse_compressed_repr(indices, values, size: tuple, layout, suffixes: list[str]) -> str:
    """The repr PyTorch gives a sparse CSR/CSC tensor: its two index tensors (``indices``: pairs
    of name and tensor) and its values, each printed without a dtype, then size, nnz, the dtype
    when not implied, the layout and the autograd suffixes, wrapped as for a dense tensor."""
    prefix = "tensor("
    indent = len(prefix)
    lines = []
    for name, idx in indices:
        head = name + "=tensor("
        lines.append(head + _body(idx._array, indent + len(head)) + ")")
    values_prefix = "values=tensor("
    lines.append(values_prefix + _body(values._array, indent + len(values_prefix)) + ")")
    text = prefix + (",\n" + " " * indent).join(lines)
    head = ["size=" + str(tuple(size)), "nnz=" + str(values._array.shape[0])]
    if values.dtype.name not in _implied_dtypes():
        head.append("dtype=" + repr(values.dtype))
    head.append("layout=" + repr(layout))
    return _add_suffixes(text, head + suffixes, indent)


def sparse_coo_repr(indices, values, size: tuple, suffixes: list[str]) -> str:
    """The repr PyTorch gives a sparse COO tensor: its indices and values (each printed without
    a dtype), then size, nnz, the dtype when not implied, the layout and the autograd suffixes."""
    prefix = "tensor("
    indent = len(prefix)
    indices_prefix, values_prefix = "indices=tensor(", "values=tensor("
    text = (prefix + indices_prefix + _body(indices._array, indent + len(indices_prefix)) + "),\n"
            + " " * indent + values_prefix
            + _body(values._array, indent + len(values_prefix)) + ")")
    head = ["size=" + str(tuple(size)), "nnz=" + str(indices._array.shape[1])]
    if values.dtype.name not in _implied_dtypes():
        head.append("dtype=" + repr(values.dtype))
    head.append("layout=torch.sparse_coo")
    # PyTorch starts the size on its own line, then wraps the suffixes as for a dense tensor.
    return _add_suffixes(text, head + suffixes, indent, force_newline=True)
