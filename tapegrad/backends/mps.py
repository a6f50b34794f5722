"""tapegrad.backends.mps: Apple's Metal backend is not built into tapegrad."""


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False


def is_macos_or_newer(major: int, minor: int) -> bool:
    raise RuntimeError("Cannot execute isOnMacOSorNewer() without MPS backend.")


def is_macos13_or_newer(minor: int = 0) -> bool:
    return is_macos_or_newer(13, minor)
