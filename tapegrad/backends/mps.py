"""tapegrad.backends.mps: Apple's Metal backend is not built into tapegrad."""


def is_available() -> bool:
    """Always False: Apple's Metal backend is not built in."""
    return False


def is_built() -> bool:
    """Always False: Apple's Metal backend is not built in."""
    return False


def is_macos_or_newer(major: int, minor: int) -> bool:
    """Raise ``RuntimeError`` as PyTorch does without the MPS backend."""
    raise RuntimeError("Cannot execute isOnMacOSorNewer() without MPS backend.")


def is_macos13_or_newer(minor: int = 0) -> bool:
    """Raise ``RuntimeError`` as PyTorch does without the MPS backend."""
    return is_macos_or_newer(13, minor)
