"""Draw the recorded tape behind a tensor as a Graphviz graph.

`graph(t)` walks the autograd graph from ``t.grad_fn`` through ``next_functions`` (the same
public introspection PyTorch offers) and returns it as DOT source, a plain string that needs no
dependency. With ``format="svg"`` (or ``"png"``, ...) it renders the graph through the
``graphviz`` Python package, which must be installed together with Graphviz's ``dot`` program.

What the picture shows
----------------------
- one grey box per recorded operation, named as its ``grad_fn`` prints it (``MulBackward0``),
  with its output shape when it is known: the core exposes no shape on a ``grad_fn``, so shapes
  come from the tensors you pass (the output and ``named``) and from custom Functions, whose
  ctx records its outputs' shapes;
- one blue box per leaf that requires grad (its ``AccumulateGrad`` node), with its name, shape
  and dtype;
- one box per tensor you pass (the output in green; a tensor that retains its grad, through
  ``retain_grad()``, in yellow, marked ``retains_grad``), linked by a dashed edge to the
  operation that produced it.

Edges point the way the values flowed in the forward pass (an input towards the operation that
used it), so the output is at the bottom.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
from collections.abc import Mapping

__all__ = ["graph"]

_GRAPH_ATTRS = ('    node [shape=box, style="filled,rounded", fillcolor=lightgrey, '
                'fontname="Helvetica", fontsize=11];\n'
                '    edge [arrowsize=0.7];\n')
_LEAF_COLOR = "lightblue"
_OUTPUT_COLOR = "darkolivegreen1"
_RETAINED_COLOR = "lightgoldenrod1"
_TENSOR_COLOR = "white"


def _quote(text: str) -> str:
    """A DOT double-quoted string (lines joined by DOT's centred line break)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _shape(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _dtype(dtype) -> str:
    return str(dtype).replace("torch.", "")


def _describe(tensor) -> str:
    return f"{_shape(tensor.shape)} {_dtype(tensor.dtype)}"


def _function_output_shapes(fn):
    """The output shapes a custom Function's ctx recorded (None for a built-in op node)."""
    meta = getattr(fn, "_output_meta", None)
    if not meta:
        return None
    shapes = [_shape(m[0]) for m in meta if m is not None]
    return ", ".join(shapes) if shapes else None


def _is_tensor(x) -> bool:
    # Duck-typed on the public autograd attributes, so a PyTorch tensor draws the same way (the
    # tests compare the two graphs).
    return all(hasattr(type(x), a) for a in ("grad_fn", "requires_grad", "shape", "dtype"))


def _roots_of(output) -> list:
    roots = [output] if _is_tensor(output) else list(output)
    for r in roots:
        if not _is_tensor(r):
            raise TypeError(f"graph() expects a Tensor or a sequence of Tensors, but got "
                            f"{_type_name(r)}")
    return roots


def _named_tensors(named) -> list:
    if named is None:
        return []
    if not isinstance(named, Mapping):
        raise TypeError(f"graph(): named must be a mapping of names to Tensors, but got "
                        f"{_type_name(named)}")
    # Passing locals() is the idiom: keep only the tensors among the values.
    return [(str(k), v) for k, v in named.items() if _is_tensor(v)]


def graph(output, named: Mapping | None = None, *, format: str | None = None):
    """The recorded graph behind ``output`` as Graphviz DOT source (or rendered).

    Parameters
    ----------
    output : Tensor or sequence of Tensor
        The tensor(s) whose history is drawn, usually a loss. A tensor that does not require
        grad draws as a single box.
    named : mapping of str to Tensor, optional
        Names for tensors of the graph, e.g. ``{"x": x, "y": y}`` or ``locals()`` (values that
        are not tensors are ignored). A named leaf labels its ``AccumulateGrad`` box; a named
        non-leaf gets its own box next to the operation that produced it, showing its shape and
        whether it retains its grad. Unnamed tensors other than the output are not drawn (the
        graph only knows their operations).
    format : str, optional
        ``None`` (default) returns DOT source as a ``str``. Any output format of Graphviz
        (``"svg"``, ``"png"``, ``"pdf"``, ...) renders it with the ``graphviz`` package:
        ``"svg"`` returns a ``str``, binary formats ``bytes``.

    Returns
    -------
    str or bytes
        DOT source, or the rendered image.

    Raises
    ------
    TypeError
        If ``output`` is not a tensor or a sequence of tensors, or ``named`` is not a mapping.
    ImportError
        If ``format`` is given and the ``graphviz`` Python package is not installed.

    Notes
    -----
    The walk uses only ``grad_fn``, ``next_functions`` and ``AccumulateGrad.variable``, so it
    draws what a backward from ``output`` would sweep, and it records nothing. After a
    ``backward()`` without ``retain_graph=True`` the nodes are still drawn (their saved values
    are what was freed). A node without ``next_functions`` (a ``tapegrad.compile``'d call's) has
    its box marked ``inputs not shown``.

    Examples
    --------
    >>> import tapegrad as torch
    >>> from tapegrad.utils.viz import graph
    >>> x = torch.tensor([1.], requires_grad=True)
    >>> y = x ** 2
    >>> dot = graph(y, {"x": x, "y": y})
    >>> "PowBackward0" in dot and "AccumulateGrad" in dot
    True
    >>> print(dot.splitlines()[0])
    digraph tape {
    """
    roots = _roots_of(output)
    named_list = _named_tensors(named)
    dot = _Dot()
    leaf_names = {}
    # id(grad_fn) -> [(name, tensor, is_output)]: the tensors drawn as boxes of their own. A
    # grad_fn object lives only while referenced, so `holders` keeps each one (and its id).
    produced_by, holders = {}, []
    for name, t in named_list:
        fn = t.grad_fn
        if fn is None:
            leaf_names.setdefault(id(t), name)
        else:
            holders.append(fn)
            produced_by.setdefault(id(fn), []).append((name, t, False))
    for k, r in enumerate(roots):
        name = _root_name(r, named_list, k, len(roots))
        fn = r.grad_fn
        if fn is None:
            dot.tensor_box(r, name, output=True, leaf=r.requires_grad)
        else:
            holders.append(fn)
            entries = produced_by.setdefault(id(fn), [])
            entries[:] = [e for e in entries if e[1] is not r]
            entries.append((name, r, True))

    # Depth-first over grad_fn nodes with an explicit stack: deep graphs never touch Python's
    # recursion limit. `seen` holds the nodes themselves, which keeps their ids unique.
    seen = {}
    stack = [fn for fn in reversed(holders) if any(fn is r.grad_fn for r in roots)]
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen[id(fn)] = fn
        node = dot.op_box(fn, leaf_names, produced_by.get(id(fn), ()))
        for name, t, is_output in produced_by.get(id(fn), ()):
            box = dot.tensor_box(t, name, output=is_output, leaf=False)
            dot.edge(node, box, dashed=True)
        inputs = getattr(fn, "next_functions", None)
        for parent, _ in reversed(inputs or ()):
            if parent is not None and id(parent) not in seen:
                stack.append(parent)
    for fn in seen.values():
        for parent, _ in getattr(fn, "next_functions", None) or ():
            if parent is not None:
                dot.edge(dot.ids[id(parent)], dot.ids[id(fn)])
    source = dot.source()
    if format is None:
        return source
    return _render(source, format)


def _root_name(root, named_list, k, n) -> str:
    for name, t in named_list:
        if t is root:
            return name
    return "output" if n == 1 else f"output {k}"


class _Dot:
    """Accumulates numbered nodes and edges, in the order the walk meets them."""

    def __init__(self):
        self.lines = []
        self.ids = {}          # id(grad_fn) -> DOT node id
        self.count = 0

    def _new(self, key, label, color, extra="") -> str:
        node = f"n{self.count}"
        self.count += 1
        if key is not None:
            self.ids[key] = node
        self.lines.append(f"    {node} [label={_quote(label)}, fillcolor={color}{extra}];")
        return node

    def op_box(self, fn, leaf_names, produced) -> str:
        kind = type(fn).__name__
        if kind == "AccumulateGrad":
            leaf = fn.variable
            if leaf is None:      # the leaf died: only its node is left
                return self._new(id(fn), "AccumulateGrad\n(leaf freed)", _LEAF_COLOR)
            name = leaf_names.get(id(leaf))
            label = "\n".join(([name] if name else []) + [_describe(leaf), "AccumulateGrad"])
            return self._new(id(fn), label, _LEAF_COLOR)
        lines = [kind]
        shape = _function_output_shapes(fn)
        if shape is None and produced:
            shape = _shape(produced[0][1].shape)
        if shape is not None:
            lines.append(shape)
        if getattr(fn, "next_functions", None) is None:
            lines.append("(inputs not shown)")
        return self._new(id(fn), "\n".join(lines), "lightgrey")

    def tensor_box(self, t, name, *, output, leaf) -> str:
        lines = [name, _describe(t)]
        if leaf:
            lines.append("leaf, requires_grad")
        elif not t.requires_grad:
            lines.append("requires_grad=False")
        retains = not leaf and t.requires_grad and t.retains_grad
        if retains:
            lines.append("retains_grad")
        color = (_RETAINED_COLOR if retains else _OUTPUT_COLOR if output
                 else _LEAF_COLOR if leaf else _TENSOR_COLOR)
        return self._new(None, "\n".join(lines), color, ", shape=box, style=filled")

    def edge(self, tail, head, *, dashed=False):
        self.lines.append(f"    {tail} -> {head}" + (" [style=dashed];" if dashed else ";"))

    def source(self) -> str:
        return "digraph tape {\n" + _GRAPH_ATTRS + "\n".join(self.lines) + "\n}\n"


def _render(source: str, format: str):
    try:
        import graphviz
    except ImportError as exc:
        raise ImportError(
            f"graph(..., format={format!r}) renders through the 'graphviz' Python package, which "
            "is not installed: pip install graphviz (it also needs Graphviz's 'dot' program on "
            "PATH). Without format=, graph() returns DOT source and needs nothing.") from exc
    data = graphviz.Source(source).pipe(format=format)
    return data.decode("utf-8") if format == "svg" else data
