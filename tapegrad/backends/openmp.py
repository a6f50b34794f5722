"""tapegrad.backends.openmp: tapegrad's kernels do not use OpenMP."""


def is_available() -> bool:
    """Always False: tapegrad is not built with OpenMP."""
    return False
