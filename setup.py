"""Build script: declares the compiled core (tapegrad._core) built from src/.

Set TAPEGRAD_DEBUG=1 to build with bounds checks on and no optimisation, and
TAPEGRAD_ASAN=1 to build with AddressSanitizer.
"""
import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("TAPEGRAD_DEBUG") == "1"
ASAN = os.environ.get("TAPEGRAD_ASAN") == "1"

compile_args = ["-O0", "-g"] if DEBUG else ["-O3"]
link_args = []
if ASAN:
    # -O1 keeps the sanitizer build (of a large generated C file) quick; ASan needs no more.
    compile_args = ["-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer"]
    link_args += ["-fsanitize=address"]

core = Extension(
    "tapegrad._core",
    sources=["src/tapegrad/_core.pyx", "src/tapegrad/kernels.c"],
    include_dirs=[numpy.get_include(), "src/tapegrad"],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION")],
    extra_compile_args=compile_args,
    extra_link_args=link_args,
)

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": DEBUG,
    "embedsignature": True,
    "binding": True,
}

setup(ext_modules=cythonize([core], compiler_directives=directives, include_path=["src"]))
