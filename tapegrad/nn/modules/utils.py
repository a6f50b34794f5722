"""torch.nn.modules.utils: the argument normalisers custom layers import (`_pair(3)` is (3, 3))
and the helper that strips a DataParallel/DDP "module." prefix from a saved state dict."""
from __future__ import annotations as _annotations

from itertools import repeat
from collections.abc import Iterable


def _ntuple(n: int, name: str = "parse"):
    """A function turning a scalar into an n-tuple of it; an iterable becomes a tuple as is."""
    def parse(x):
        if isinstance(x, Iterable):
            return tuple(x)
        return tuple(repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n: int) -> tuple:
    """Each element of `t`, last first, repeated n times: conv padding sizes in F.pad's order."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults):
    """An adaptive pool's output size with None entries taken from the input's trailing sizes."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]


def consume_prefix_in_state_dict_if_present(state_dict, prefix: str) -> None:
    """Remove `prefix` from every key of `state_dict` that has it, in place (keys keep their
    relative order, moved to the end), and from the keys of its `_metadata`, if any."""
    for key in [k for k in state_dict if k.startswith(prefix)]:
        state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is None:
        return
    for key in list(metadata):
        # The metadata of the prefix's own module is keyed without the trailing dot.
        if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
            metadata[key[len(prefix):]] = metadata.pop(key)


__all__ = ["consume_prefix_in_state_dict_if_present"]
