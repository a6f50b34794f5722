"""tapegrad.version: the package's version (its one source) and what torch.version reports for a
CPU-only build.

Two versions, both honest: `tapegrad_version` is the package's own (pyproject.toml reads it
with setuptools' static `attr:`; `python -m tapegrad --version` prints it: change it here only);
`__version__` (also `tapegrad.__version__`) says which PyTorch API tapegrad implements, the one
its behaviour is checked against, with tapegrad's version as the PEP 440 local label, as
PyTorch's own builds label theirs ("2.13.0+cpu").  Scripts compare `torch.__version__` to decide
which API to use (`>= "1.8"`, `packaging.version.parse(...)`, `.split(".")`): they take the
2.13 paths, which are the ones tapegrad implements (docs/differences.md).
"""
from .torch_version import TorchVersion

tapegrad_version = "0.1.0"
torch_api_version = "2.13.0"    # the PyTorch release whose behaviour is tapegrad's specification
__version__ = TorchVersion(f"{torch_api_version}+tapegrad.{tapegrad_version}")
git_version = "Unknown"   # what a PyTorch build made outside a git checkout reports
cuda = None     # no CUDA toolkit
hip = None      # no ROCm
rocm = None
xpu = None      # no Intel GPU runtime
debug = False
