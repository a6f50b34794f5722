"""Loads the compiled core: tapegrad._core and the extension modules of its op families.

The core is split into several extension modules (src/tapegrad/_core.pyx lists them) so that it
builds in parallel and an edit rebuilds one module.  Each family cimports the modules below it and
registers its ops into the core's op table when it is imported, so they are imported here, in
layer order, before anything uses the core.  Their public names are then re-exported from
tapegrad._core, which stays the one namespace of the compiled code (tapegrad/_core.pyi, the
facade's `_core.<name>` calls).
"""
from importlib import import_module

from . import _core

FAMILIES = (
    "_ops_unary",
    "_ops_reduce",
    "_ops_shape",
    "_ops_inplace",
    "_ops_linalg",
    "_ops_nn",
    "_replay",
    "_graph_vjp",
)


def _load() -> None:
    for name in FAMILIES:
        module = import_module(f"{__package__}.{name}")
        # Everything the family defines at module level, as the single module of old had it; a
        # name a lower module already holds (one the family imported from it) stays as it is.
        for attr, value in vars(module).items():
            if not attr.startswith("__") and not hasattr(_core, attr):
                setattr(_core, attr, value)


_load()
