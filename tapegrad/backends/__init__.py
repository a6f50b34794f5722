"""tapegrad.backends: the torch.backends flags of a CPU-only build (no CUDA, cuDNN or MPS)."""
from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum, quantized  # noqa: F401
