"""The memory of uninitialised tensors (empty, empty_like, new_empty, empty_strided, the legacy
constructors, resize_ growing a tensor): np.empty, except that while deterministic algorithms are
on and torch.utils.deterministic.fill_uninitialized_memory is True (its default), PyTorch fills
it with a known value (NaN, NaN+0j, the largest integer, True), and so does tapegrad.

This module holds the deterministic-algorithms flag itself (tapegrad._settings sets and reports
it): the factories read it on every call, without importing the settings module.
"""
from __future__ import annotations

import numpy as np

flags = {"deterministic": False, "fill_uninitialized_memory": True}


def uninitialised(shape, dtype) -> np.ndarray:
    """A new array for an uninitialised tensor of `shape` and numpy `dtype`."""
    arr = np.empty(shape, dtype)
    if flags["deterministic"] and flags["fill_uninitialized_memory"]:
        kind = arr.dtype.kind
        if kind in "fc":
            arr.fill(np.nan)
        elif kind in "iu":
            arr.fill(np.iinfo(arr.dtype).max)
        elif kind == "b":
            arr.fill(True)
    return arr
