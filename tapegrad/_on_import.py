"""Run an action on a third-party module once it is imported (now, if it already is).

Some libraries recognise PyTorch tensors by looking up the module named "torch" in sys.modules
(einops' backends, matplotlib's cbook).  Under `import tapegrad as torch` that module is absent,
or is PyTorch itself, so they need a word about our tensors; importing those libraries for it
would cost every tapegrad user their import time.  when_imported(name, action) calls
action(module) as soon as the module `name` has executed: a finder first on sys.meta_path lets
the import run as usual, then calls the action (once).
"""
from __future__ import annotations as _annotations

import importlib.util
import sys


class _ActAfterImport:
    """Lets module `name` load as usual, then calls action on it.  (A finder on sys.meta_path is
    any object with find_spec: importlib.abc.MetaPathFinder as its base would import
    importlib.abc, which brings importlib.resources, tempfile, shutil, bz2, lzma and random into
    every `import tapegrad`, several ms of issue 18's import-time target.)"""

    def __init__(self, name: str, action):
        self.name = name
        self.action = action

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)          # (one use; and find_spec below must not meet us)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run_module = spec.loader.exec_module
        action = self.action

        def exec_module(module):
            run_module(module)
            action(module)

        spec.loader.exec_module = exec_module   # (this spec's own loader instance)
        return spec


def when_imported(name: str, action) -> None:
    loaded = sys.modules.get(name)
    if loaded is not None:
        action(loaded)
    elif not any(isinstance(finder, _ActAfterImport) and finder.name == name
                 for finder in sys.meta_path):
        sys.meta_path.insert(0, _ActAfterImport(name, action))
