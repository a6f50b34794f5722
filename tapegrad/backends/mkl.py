"""tapegrad.backends.mkl: tapegrad is not built with Intel's MKL (its kernels are its own and
numpy's)."""

VERBOSE_OFF = 0
VERBOSE_ON = 1


def is_available() -> bool:
    """Always False: tapegrad is not built with MKL."""
    return False
