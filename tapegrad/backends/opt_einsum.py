"""tapegrad.backends.opt_einsum: PyTorch's switch for choosing einsum's contraction order with
the opt_einsum package.  Available when that package is importable, as PyTorch's; tapegrad's
einsum picks its own contraction order (numpy's), so the flags are checked and remembered as
PyTorch checks them, with no effect on the result.  Without the package, `enabled` is False,
`strategy` None, and set_flags / flags() refuse to turn them on with PyTorch's ValueError."""
from __future__ import annotations as _annotations

import contextlib
import functools

try:
    import opt_einsum as _opt_einsum
except ImportError:
    _opt_einsum = None

__all__ = ["is_available", "get_opt_einsum", "set_flags", "flags"]


@functools.lru_cache(maxsize=None)
def is_available() -> bool:
    """Whether the opt_einsum package could be imported."""
    return _opt_einsum is not None


def get_opt_einsum():
    """The opt_einsum package, or None."""
    return _opt_einsum


# The flags as set_flags / flags() set them.  Read as module attributes; an attribute assigned
# directly (`opt_einsum.enabled = True`) is unchecked and shadows them from then on, as in
# PyTorch, whose module wrapper keeps such assignments apart from its flags.
_state = {"enabled": is_available(), "strategy": "auto" if is_available() else None}


def __getattr__(name):
    if name in _state:
        return _state[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _set_enabled(value: bool) -> None:
    if not is_available() and value:
        raise ValueError(
            f"opt_einsum is not available, so setting `enabled` to {value} will not reap the "
            "benefits of calculating an optimal path for einsum. torch.einsum will fall back to "
            "contracting from left to right. To enable this optimal path calculation, please "
            "install opt-einsum.")
    _state["enabled"] = value


def _set_strategy(value: str) -> None:
    if not is_available():
        raise ValueError(
            f"opt_einsum is not available, so setting `strategy` to {value} will not be "
            "meaningful. torch.einsum will bypass path calculation and simply contract from left "
            "to right. Please install opt_einsum or unset `strategy`.")
    if not _state["enabled"]:
        raise ValueError(
            f"opt_einsum is not enabled, so setting a `strategy` to {value} will not be "
            "meaningful. torch.einsum will bypass path calculation and simply contract from left "
            "to right. Please set `enabled` to `True` as well or unset `strategy`.")
    if value not in ("auto", "greedy", "optimal"):
        raise ValueError(f"`strategy` must be one of the following: [auto, greedy, optimal] but is {value}")
    _state["strategy"] = value


def set_flags(_enabled=None, _strategy=None):
    """Set the flags given; the previous (enabled, strategy)."""
    from .. import _core
    # (not flags()'s with block, which restores them before the call ends)
    _core._capture_setting("the opt_einsum flags (set_flags)")
    return _set_flags(_enabled, _strategy)


def _set_flags(_enabled=None, _strategy=None):
    previous = (_state["enabled"], _state["strategy"] if is_available() else None)
    if _enabled is not None:
        _set_enabled(_enabled)
    if _strategy is not None:
        _set_strategy(_strategy)
    return previous


@contextlib.contextmanager
def flags(enabled=None, strategy=None):
    """The flags set for the block, restored after it."""
    previous = _set_flags(enabled, strategy)
    try:
        yield
    finally:
        _set_flags(*previous)
