"""How much of PyTorch's public API tapegrad has, and which names the corpus uses that it lacks.

    python tools/api_coverage.py            # writes docs/api_coverage.md (needs PyTorch installed)
    python tools/api_coverage.py --stdout   # prints the report instead

For each namespace below, the public names of PyTorch's object are listed and looked up, as
attributes, on tapegrad's counterpart (`torch.nn.functional` -> `tapegrad.nn.functional`, ...).
Then the corpus scripts (tools/corpus/*.py) are parsed with `ast`, and every torch name they use
(`torch.X`, `nn.X`, `F.X`, `from torch.x import Y`, tensor methods) is checked the same way.

Which names count as public (the rule is applied to PyTorch's names; see NOT_API below):
  1. no leading underscore;
  2. not a module from outside torch and not an object defined outside torch (re-exported
     helpers such as `typing.Any` or the `os` module some torch modules import);
  3. not a backend- or kernel-specific entry point (`cudnn_*`, `miopen_*`, `mkldnn_*`,
     `fbgemm_*`, `native_*`, `quantized_*`, `q_*`, `*_copy` view-copy variants, ...): scripts
     do not call these, and a CPU-only numpy library has no backend to expose.
A tensor method in a script is recognised by name: an attribute access `expr.name` where `expr`
is not a torch module alias and `name` is a `torch.Tensor` attribute that plain Python
containers and strings lack (so `words.split()` or `d.items()` are not counted) and that is not
a field of torch's named-tuple results (`values`, `indices`); a method counts only where it is
called, a property wherever it is read.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import re
import sys
import types
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CORPUS = ROOT / "tools" / "corpus"
OUTPUT = ROOT / "docs" / "api_coverage.md"

NAMESPACES = [
    "torch", "torch.Tensor", "torch.nn", "torch.nn.functional", "torch.optim",
    "torch.utils.data", "torch.autograd", "torch.distributions",
]
# Rule 3: kernel/backend entry points no user script calls.
NOT_API = re.compile(
    r"^(cudnn_|miopen_|mkldnn_|fbgemm_|native_|quantized_|quantize_per|q_|sparse_coo_tensor_unsafe|"
    r"xnnpack|vulkan|mps_|cuda_|mtia|xpu|hpu|ipu|lazy|fake_quantize|fused_|segment_reduce|"
    r"is_vulkan|is_mkldnn|is_quantized|is_meta|is_nested|is_sparse_csr|is_xla|is_ipu|is_maia)"
    r"|_copy$"
)
# Attribute names a script may read from something other than a tensor: Python's own types, and
# the fields of the named tuples torch returns (`x.max(dim=1).indices`).
_AMBIGUOUS_ATTRS = set().union(*(dir(t) for t in (str, bytes, list, dict, tuple, set, int, float)),
                               {"values", "indices"})


def _resolve(dotted: str):
    """The object at a dotted path, importing submodules on the way; None if it is missing."""
    parts = dotted.split(".")
    obj = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], start=1):
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        try:
            obj = importlib.import_module(".".join(parts[: i + 1]))
        except ImportError:
            return None
    return obj


def _tapegrad_path(torch_path: str) -> str:
    return "tapegrad" + torch_path[len("torch"):]


def _is_public(name: str, value) -> bool:
    if name.startswith("_") or NOT_API.search(name):
        return False
    if isinstance(value, types.ModuleType):
        return value.__name__.startswith("torch")
    module = getattr(value, "__module__", None)
    if isinstance(value, type) or isinstance(value, types.FunctionType):
        return module is None or module.startswith("torch")
    if module in ("typing", "typing_extensions", "collections", "abc"):
        return False
    return True


def public_names(torch_path: str) -> list[str]:
    obj = _resolve(torch_path)
    names = []
    for name in dir(obj):
        try:
            value = getattr(obj, name)
        except Exception:  # a lazily imported attribute that fails on this machine
            continue
        if _is_public(name, value):
            names.append(name)
    return sorted(names)


def namespace_coverage(torch_path: str) -> tuple[list[str], list[str]]:
    """(present, missing) names of one namespace."""
    names = public_names(torch_path)
    target = _resolve(_tapegrad_path(torch_path))
    present = [n for n in names if target is not None and hasattr(target, n)]
    missing = [n for n in names if target is None or not hasattr(target, n)]
    return present, missing


# --- what the corpus uses -------------------------------------------------------------------

class _UsageCollector(ast.NodeVisitor):
    def __init__(self, tensor_attrs: set[str]):
        self.aliases: dict[str, str] = {}   # local name -> dotted torch path
        self.used: set[str] = set()          # dotted torch paths
        self.tensor_methods: set[str] = set()
        self.tensor_attrs = tensor_attrs
        self.called: set[int] = set()  # ids of the expressions that are called
        import torch
        self.tensor_methods_callable = {n for n in tensor_attrs if callable(getattr(torch.Tensor, n, None))}

    def visit_Import(self, node):
        for alias in node.names:
            if alias.name == "torch" or alias.name.startswith("torch."):
                if alias.asname:
                    self.aliases[alias.asname] = alias.name
                else:
                    self.aliases["torch"] = "torch"
                self.used.add(alias.name)

    def visit_ImportFrom(self, node):
        module = node.module or ""
        if module == "torch" or module.startswith("torch."):
            for alias in node.names:
                path = f"{module}.{alias.name}"
                self.aliases[alias.asname or alias.name] = path
                self.used.add(path)

    def _dotted(self, node) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self._dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def visit_Attribute(self, node):
        dotted = self._dotted(node)
        if dotted:
            self.used.add(dotted)
        elif node.attr in self.tensor_attrs and node.attr not in _AMBIGUOUS_ATTRS:
            # A Tensor method counts only where it is called (`self.tril[:T]` is a buffer named
            # tril, not Tensor.tril); a property (`.shape`, `.device`) counts wherever it is read.
            if id(node) in self.called or node.attr not in self.tensor_methods_callable:
                self.tensor_methods.add(node.attr)
        self.generic_visit(node)

    def visit_Call(self, node):
        self.called.add(id(node.func))
        self.generic_visit(node)


def corpus_usage(tensor_attrs: set[str]) -> dict[str, set[str]]:
    """Name ('torch.x.y' or 'Tensor.m') -> the corpus scripts that use it."""
    users: dict[str, set[str]] = defaultdict(set)
    for script in sorted(CORPUS.glob("*.py")):
        collector = _UsageCollector(tensor_attrs)
        collector.visit(ast.parse(script.read_text(), filename=str(script)))
        for path in collector.used:
            users[path].add(script.stem)
        for name in collector.tensor_methods:
            users[f"Tensor.{name}"].add(script.stem)
    return users


def _exists_in_tapegrad(name: str) -> bool:
    if name.startswith("Tensor."):
        import tapegrad
        return hasattr(tapegrad.Tensor, name.split(".", 1)[1])
    return _resolve(_tapegrad_path(name)) is not None


def _exists_in_torch(name: str) -> bool:
    if name.startswith("Tensor."):
        import torch
        return hasattr(torch.Tensor, name.split(".", 1)[1])
    return _resolve(name) is not None


# --- report ---------------------------------------------------------------------------------

def build_report() -> str:
    import torch

    lines = [
        "# PyTorch API coverage of tapegrad",
        "",
        f"Generated by `python tools/api_coverage.py` against PyTorch {torch.__version__}; do not edit by hand.",
        "",
        "A name counts when PyTorch's object has it as a public attribute and tapegrad's",
        "counterpart has an attribute of that name (existence only, not behaviour: behaviour is",
        "what `tools/run_corpus.py` and the tests measure). Public means: no leading underscore, not",
        "an object re-exported from outside torch, not a backend/kernel entry point (`cudnn_*`,",
        "`mkldnn_*`, `native_*`, `q_*`, `*_copy`, ...); the exact rule is in the script's docstring.",
        "",
        "| namespace | public names | in tapegrad | coverage |",
        "|---|---:|---:|---:|",
    ]
    details = []
    for ns in NAMESPACES:
        present, missing = namespace_coverage(ns)
        total = len(present) + len(missing)
        pct = 100.0 * len(present) / total if total else 0.0
        lines.append(f"| `{ns}` | {total} | {len(present)} | {pct:.0f}% |")
        details.append(f"<details><summary><code>{ns}</code>: {len(missing)} missing</summary>\n\n"
                       + ", ".join(f"`{n}`" for n in missing) + "\n\n</details>\n")

    tensor_attrs = set(public_names("torch.Tensor"))
    users = corpus_usage(tensor_attrs)
    used = sorted(n for n in users if _exists_in_torch(n))
    missing_used = [n for n in used if not _exists_in_tapegrad(n)]
    missing_used.sort(key=lambda n: (-len(users[n]), n))
    lines += [
        "",
        f"## Names the corpus uses that tapegrad lacks ({len(missing_used)} of {len(used)} used)",
        "",
        "The corpus is `tools/corpus/*.py` (run it with `python tools/run_corpus.py`). Names found",
        "by parsing the scripts: module attributes through their import aliases, and tensor methods",
        "by name. A name listed here stops every script that reaches it.",
        "",
        "| name | scripts | used by |",
        "|---|---:|---|",
    ]
    for name in missing_used:
        scripts = sorted(users[name])
        shown = ", ".join(scripts[:6]) + (f", +{len(scripts) - 6} more" if len(scripts) > 6 else "")
        lines.append(f"| **`{name}`** | {len(scripts)} | {shown} |")
    lines += ["", "## Missing names per namespace", ""] + details
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stdout", action="store_true", help="print instead of writing docs/api_coverage.md")
    args = parser.parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.exit("api_coverage needs PyTorch installed: it lists PyTorch's names")
    report = build_report()
    if args.stdout:
        print(report)
    else:
        OUTPUT.parent.mkdir(parents=True, exist_ok=True)
        OUTPUT.write_text(report)
        print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
