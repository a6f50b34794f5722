"""tapegrad.version: what torch.version reports, for a CPU-only build."""
from . import __version__  # noqa: F401  (the package's)
cuda = None     # no CUDA toolkit
hip = None      # no ROCm
debug = False
