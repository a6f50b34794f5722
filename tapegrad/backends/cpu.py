"""tapegrad.backends.cpu: what the CPU backend offers (tapegrad relies on numpy's kernels)."""


def get_cpu_capability() -> str:
    """numpy picks its SIMD kernels itself; tapegrad reports the baseline as PyTorch names it."""
    return "DEFAULT"
