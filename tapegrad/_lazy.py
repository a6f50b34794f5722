"""Names a package loads on first use (PEP 562 module __getattr__), so that `import tapegrad`
stays close to `import numpy`: tapegrad and tapegrad.autograd each keep a table of them.

A package lists, per submodule (relative to the package), the names it provides; a submodule
whose name has no underscore or dot is itself public, as package.<submodule>.  table() turns
that into name -> (submodule, attribute or None); load() imports on the first access and stores
the value in the package's namespace, so later lookups are plain attribute reads and never come
back here.
"""
from __future__ import annotations as _annotations

import importlib


def table(by_module: dict) -> dict:
    """{name: (submodule, attribute)} from {submodule: names}; attribute None for a submodule
    that is itself the public name."""
    names = {}
    for module, attributes in by_module.items():
        if not module.startswith("_") and "." not in module:
            names[module] = (module, None)
        for attribute in attributes:
            if attribute in names:
                raise ValueError(f"lazy name {attribute!r} listed twice ({module}, "
                                 f"{names[attribute][0]})")
            names[attribute] = (module, attribute)
    return names


def load(namespace: dict, names: dict, name: str):
    """The value of the lazy `name` of the package whose globals are `namespace`, imported now;
    AttributeError, as for any missing attribute, when `name` is not one of `names`."""
    package = namespace["__name__"]
    if name not in names:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    module_name = names[name][0]
    module = importlib.import_module(f".{module_name}", package)
    # Every name this submodule provides, not only the one asked for: one import, and the
    # namespace never holds some of a submodule's names without the others.
    for other, (other_module, attribute) in names.items():
        if other_module == module_name:
            namespace[other] = getattr(module, attribute) if attribute else module
    return namespace[name]
