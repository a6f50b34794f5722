"""pytest fixtures shared by the tests of the vectorised math kernels (tests/test_vecmath.py,
tests/test_vecmath_activations.py): a test module imports them by name (pytest finds fixtures
among a module's globals), since test modules cannot import one another.

    vm      the kernels built into a small shared library (vecmath_support.load), once per module;
            skips without a C compiler, or outside a source tree (tests run against an installed
            wheel from a copy of tests/: the C sources are not part of the package)
    level   each dispatch level in turn (scalar, avx2, avx512), skipping those this machine lacks
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import vecmath_support as vs


@pytest.fixture(scope="module")
def vm():
    if vs.compiler() is None:
        pytest.skip("no C compiler to build the vecmath kernels")
    if not (vs.SRC / vs.SOURCES[0]).exists():
        pytest.skip("the vecmath C sources are not here (tests run outside a source tree)")
    return vs.load()


@pytest.fixture(params=list(vs.LEVELS))
def level(request, vm):
    if request.param not in vm.levels():
        pytest.skip(f"dispatch level {request.param} is not available on this machine")
    vm.set_level(request.param)
    yield request.param
    vm.set_level(vm.levels()[-1])


def rng_for(*key) -> np.random.Generator:
    """A generator seeded by the test's own key (the same inputs at every run and in any order)."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))
