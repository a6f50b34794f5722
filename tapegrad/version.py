"""tapegrad.version: the package's version (its one source) and what torch.version reports for a
CPU-only build.

pyproject.toml reads `__version__` from this file (setuptools' static `attr:`), and
`tapegrad.__version__` and `python -m tapegrad --version` import it: change the version here only.
"""
__version__ = "0.1.0"
cuda = None     # no CUDA toolkit
hip = None      # no ROCm
debug = False
