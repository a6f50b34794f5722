"""torch.get_file_path: paths under the directory holding the package (PyTorch's
torch._utils_internal.get_file_path, which scripts use to find files installed beside torch)."""
from __future__ import annotations as _annotations

import os

_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def get_file_path(*path_components: str) -> str:
    """The directory holding the tapegrad package joined with `path_components` (os.path.join's
    TypeError for a component that is not a path)."""
    return os.path.join(_PACKAGE_PARENT, *path_components)
