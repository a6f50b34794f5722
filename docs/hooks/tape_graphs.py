"""MkDocs hook: run the tutorial's examples at build time and draw their tapes.

A page marks an example by an HTML comment right after its ```python block:

    <!-- tape-graph: y -->                  draw the graph behind the variable y
    <!-- tape-graph: y raises=RuntimeError --> the block must raise RuntimeError

The hook runs the block (with `import tapegrad as torch` done), puts what it printed (and the
expected exception's message) under it, and draws `tapegrad.utils.viz.graph(y, named=the block's
variables)`: as inline SVG when the `graphviz` package and Graphviz's `dot` program are both
installed, else as DOT source in a code block (the site builds without Graphviz; CI has no
`dot`). Anything unexpected (another exception, a missing variable) fails the build, so the
tutorial cannot drift from what tapegrad does.
"""
from __future__ import annotations

import contextlib
import html
import io
import re
import shutil
import traceback

_EXAMPLE = re.compile(
    r"```python\n(?P<code>.*?)```\n\s*<!-- tape-graph: (?P<var>\w+)(?: raises=(?P<exc>\w+))? -->",
    re.S)


class ExampleError(Exception):
    """A tutorial example did not behave as its page says."""


def _can_render() -> bool:
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return False
    return shutil.which("dot") is not None


def _run(code: str, var: str, expected: str | None, where: str):
    import tapegrad
    from tapegrad.utils.viz import graph
    namespace = {"torch": tapegrad}
    out = io.StringIO()
    raised = None
    with contextlib.redirect_stdout(out):
        try:
            exec(compile(code, where, "exec"), namespace)
        except Exception as exc:   # noqa: BLE001  (compared with the expected type below)
            raised = exc
    if (raised is None) != (expected is None) or (
            raised is not None and type(raised).__name__ != expected):
        detail = "".join(traceback.format_exception(raised)) if raised else "nothing"
        raise ExampleError(f"{where}: expected {expected or 'no exception'}, got {detail}")
    printed = out.getvalue()
    if raised is not None:
        printed += f"{type(raised).__name__}: {raised}\n"
    if var not in namespace:
        raise ExampleError(f"{where}: the example defines no variable {var!r}")
    named = {k: v for k, v in namespace.items() if not k.startswith("__")}
    return printed, graph(namespace[var], named)


def _svg(dot: str) -> str:
    import graphviz
    svg = graphviz.Source(dot).pipe(format="svg").decode("utf-8")
    return svg[svg.index("<svg"):]      # drop the XML prolog and DOCTYPE: inline in the page


def on_page_markdown(markdown, page, config, files):
    if "<!-- tape-graph:" not in markdown:
        return markdown
    render = _can_render()

    def replace(match):
        where = f"{page.file.src_uri}: example drawing {match.group('var')}"
        printed, dot = _run(match.group("code"), match.group("var"), match.group("exc"), where)
        parts = ["```python\n" + match.group("code") + "```\n"]
        if printed:
            parts.append('Output:\n\n```text\n' + printed + "```\n")
        caption = f"The tape behind <code>{html.escape(match.group('var'))}</code>"
        if render:
            parts.append(f'<figure class="tape-graph">\n{_svg(dot)}\n'
                         f"<figcaption>{caption}</figcaption>\n</figure>\n")
        else:
            parts.append(f"{caption} (Graphviz DOT source; paste it into any DOT viewer, or "
                         "build the docs with the `graphviz` package and `dot` installed to "
                         "see it drawn):\n\n```dot\n" + dot + "```\n")
        return "\n".join(parts)

    return _EXAMPLE.sub(replace, markdown)
