"""Standard-library submodules that PyTorch's import happens to load, reachable as attributes.

`import torch` imports urllib.request and importlib.metadata among its own dependencies, so a
script may write `import urllib` and then call `urllib.request.build_opener()` (PyTorch's
spatial-transformer tutorial does, before downloading MNIST).  Importing those two modules here
would cost 40 ms or more of import time (urllib.request pulls in http.client, email and ssl),
more than the rest of tapegrad's import.  Instead each package gets a module-level __getattr__
(PEP 562) that imports the submodule when the attribute is first read, and only where the
package has no __getattr__ of its own: the same attribute, paid for by the scripts that use it.
"""
from __future__ import annotations as _annotations

import importlib
import sys

# package -> the submodules PyTorch's import leaves as its attributes
_LOADED_BY_TORCH = {"urllib": ("request", "parse", "error"), "importlib": ("metadata",)}


def _submodule_on_first_read(package, names):
    def __getattr__(name):
        if name in names:
            return importlib.import_module(f"{package.__name__}.{name}")
        raise AttributeError(f"module {package.__name__!r} has no attribute {name!r}")
    return __getattr__


def install() -> None:
    for package_name, names in _LOADED_BY_TORCH.items():
        package = sys.modules.get(package_name) or importlib.import_module(package_name)
        if "__getattr__" not in vars(package):
            package.__getattr__ = _submodule_on_first_read(package, names)
