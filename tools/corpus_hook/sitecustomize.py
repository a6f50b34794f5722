"""Makes `import torch` (and `import torch.x.y`) load tapegrad (and `tapegrad.x.y`), and
`import functorch` (shipped in the torch wheel) load tapegrad._functorch.

tools/run_corpus.py puts this directory on PYTHONPATH when it runs a corpus script "under
tapegrad", so the script runs unchanged: Python imports `sitecustomize` at start-up, before the
script's first line.  The finder sits first on sys.meta_path, so an installed PyTorch is never
reached.  A submodule tapegrad lacks fails as a missing torch submodule would
(ModuleNotFoundError naming `torch.x`), which is what a script run against it should see.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys

# `functorch` is the torch wheel's second top-level package: it goes with torch.
_ALIASES = {"torch": "tapegrad", "functorch": "tapegrad._functorch"}


class _AliasLoader(importlib.abc.Loader):
    """Hands back the already-imported tapegrad module, so torch.X and tapegrad.X are one object."""

    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self.target_spec = module.__spec__
        return module

    def exec_module(self, module):
        # The target module executed when create_module imported it; nothing is left to run.
        # The import system has meanwhile set module.__spec__ to the alias's spec ("torch.x"),
        # while __package__ stays "tapegrad.x": a relative import the module makes later (a
        # function importing a sibling on first use) then warns "__package__ != __spec__.parent"
        # (ImportWarning), which a script that records its warnings would see.  The module keeps
        # its own spec.
        module.__spec__ = self.target_spec


class TorchToTapegradFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        source = fullname.partition(".")[0]
        if source not in _ALIASES:
            return None
        target_name = _ALIASES[source] + fullname[len(source):]
        try:
            found = importlib.util.find_spec(target_name)
        except ModuleNotFoundError:  # a missing parent package of the target
            return None
        if found is None:
            return None
        return importlib.util.spec_from_loader(
            fullname, _AliasLoader(target_name), is_package=found.submodule_search_locations is not None
        )


def _make_this_repos_tapegrad_importable() -> None:
    """This hook lives in <repo>/tools/corpus_hook.  A script outside the repo (`PYTHONPATH=
    tools/corpus_hook python /elsewhere/script.py`) has its own directory, not the repo, first on
    sys.path: without this, `import torch` would find no tapegrad and silently load the installed
    PyTorch, so a comparison would set PyTorch against itself; or it would find another checkout's
    tapegrad (an editable install of the main checkout, seen from a git worktree), so a helper
    would measure that checkout instead of its own.  This repo's tapegrad goes first."""
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    package = os.path.join(repo, "tapegrad")
    if not os.path.isdir(package):
        return
    found = importlib.util.find_spec("tapegrad")
    origin = os.path.abspath(found.origin) if found is not None and found.origin else ""
    if not origin.startswith(package + os.sep):
        sys.path.insert(0, repo)


def install() -> None:
    if not any(isinstance(f, TorchToTapegradFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, TorchToTapegradFinder())


_make_this_repos_tapegrad_importable()
install()
