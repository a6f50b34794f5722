"""Testing helpers (as torch.testing is to PyTorch): finite differences and a count of the
Python-level calls a piece of code makes, used by tapegrad's own tests."""
from __future__ import annotations

import gc
import sys

import numpy as np


def numeric_grad(f, arrays, eps: float = 1e-6):
    """Central finite differences of scalar f(*arrays) with respect to each float64 array.

    The arrays are perturbed in place, one element at a time, and restored."""
    grads = []
    for a in arrays:
        g = np.zeros_like(a)
        it = np.nditer(a, flags=["multi_index"])
        for _ in it:
            i = it.multi_index
            old = a[i]
            a[i] = old + eps
            hi = f(*arrays)
            a[i] = old - eps
            lo = f(*arrays)
            a[i] = old
            g[i] = (hi - lo) / (2 * eps)
        grads.append(g)
    return grads


def count_python_calls(fn) -> int:
    """How many Python-level calls (Python functions and builtins called from Python code) fn()
    makes: the sweep's per-node work is compiled, so backward's count does not grow with the
    graph.  The garbage collector is paused so unrelated finalizers do not count."""
    calls = 0

    def profiler(frame, event, arg):
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    gc.disable()
    sys.setprofile(profiler)
    try:
        fn()
    finally:
        sys.setprofile(None)
        gc.enable()
    return calls
