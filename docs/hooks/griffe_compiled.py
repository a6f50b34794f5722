"""Griffe extension: show the compiled core's docstrings as the plain text they are.

Docstrings of functions compiled in `tapegrad._core` are written as plain text (formulas such as
``out[i][j] = input[index[i][j]][j]``), and Cython's embedsignature puts the C signature on their
first line. Read as Markdown, ``[i][j]`` is a reference link and the strict build fails on it.
This extension drops the embedded signature line (the page shows the signature already) and
escapes Markdown's link brackets in those docstrings only.
"""
from __future__ import annotations

import re

import griffe

_SIGNATURE_LINE = re.compile(r"^\w+\(.*\)\s*(->.*)?$")


class CompiledDocstrings(griffe.Extension):
    def on_instance(self, *, node, obj, agent, **kwargs):
        runtime = getattr(node, "obj", None)
        if obj.docstring is None or not _is_compiled(runtime):
            return
        lines = obj.docstring.value.splitlines()
        if lines and _SIGNATURE_LINE.match(lines[0].strip()):
            lines = lines[1:]
        text = "\n".join(lines).strip()
        obj.docstring.value = text.replace("[", "\\[").replace("]", "\\]")


def _is_compiled(runtime) -> bool:
    module = getattr(runtime, "__module__", None) or ""
    # the core and its op-family modules (tapegrad._ops_unary, _replay, ...) are all compiled
    return (module == "tapegrad._core" or module.startswith(("tapegrad._ops_", "tapegrad._replay",
                                                             "tapegrad._graph_vjp"))
            or type(runtime).__name__ == "cython_function_or_method")
