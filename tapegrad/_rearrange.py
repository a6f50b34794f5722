"""torch.func.rearrange: einops' `rearrange` ("b (h h1) w c -> b h (w h1) c") as one reshape, one
permute and one reshape, so it is differentiable through the ops it is made of.

A side of the pattern is a list of axes; an axis is a name, a parenthesized group of names (one
tensor dimension that is their product), `1` or `()` (a dimension of length 1), or `...` (the
dimensions no name covers).  The left side splits the input's dimensions into elementary named
axes, the right side regroups them in its order.
"""
from __future__ import annotations

import re

_TOKEN = re.compile(r"\.\.\.|\(|\)|[A-Za-z_][A-Za-z0-9_]*|\d+|\S")
_ELLIPSIS = "..."


class DimensionBindError(Exception):
    """A length that cannot be bound: an unknown length that does not divide its dimension, or
    two unknown lengths in one group (PyTorch raises functorch.dim's error of this name)."""


def _parse_side(text: str, expression: str) -> list[list[str]]:
    """The groups of one side: each a list of names ([] for an axis of length 1); `...` is a
    group of its own, [_ELLIPSIS]."""
    groups, current = [], None
    for token in _TOKEN.findall(text):
        if token == "(":
            if current is not None:
                raise ValueError(f"Imbalanced parentheses in expression: '{expression}'")
            current = []
        elif token == ")":
            if current is None:
                raise ValueError(f"Imbalanced parentheses in expression: '{expression}'")
            groups.append(current)
            current = None
        elif token == _ELLIPSIS or token.isidentifier() or token == "1":
            names = [] if token == "1" else [token]
            if current is None:
                groups.append(names)
            elif token == _ELLIPSIS:
                raise ValueError(f"Ellipsis inside parenthesis in expression: '{expression}'")
            else:
                current.extend(names)
        else:
            raise ValueError(f"Invalid axis identifier {token!r} in expression: '{expression}'")
    if current is not None:
        raise ValueError(f"Imbalanced parentheses in expression: '{expression}'")
    names = [n for g in groups for n in g]
    for name in set(names):
        if names.count(name) > 1:
            raise ValueError(f"Indexing expression contains duplicate dimension '{name}'")
    return groups


def _expand_ellipsis(groups: list[list[str]], count: int) -> list[list[str]]:
    out = []
    for group in groups:
        if group == [_ELLIPSIS]:
            out.extend([f"{_ELLIPSIS}{i}"] for i in range(count))
        else:
            out.append(group)
    return out


def rearrange(tensor, pattern: str, **axes_lengths: int):
    """Reorder, split and merge the dimensions of ``tensor`` (or of a list of tensors stacked on a
    new first dimension) as ``pattern`` says; ``axes_lengths`` give the lengths of split axes."""
    import tapegrad
    if isinstance(tensor, (list, tuple)):
        tensor = tapegrad.stack(list(tensor))
    if "->" not in pattern:
        raise ValueError(f"Pattern must contain '->': '{pattern}'")
    left_text, right_text = pattern.split("->", 1)
    left, right = _parse_side(left_text, left_text), _parse_side(right_text, right_text)

    left_has_ellipsis = [_ELLIPSIS] in left
    if left_has_ellipsis != ([_ELLIPSIS] in right):
        raise ValueError(f"Ellipsis found in one side of the pattern only: '{pattern}'")
    named = len(left) - left_has_ellipsis
    if (tensor.dim() < named) if left_has_ellipsis else (tensor.dim() != named):
        raise ValueError(f"Number of dimensions in pattern ({len(left)}) must be equal to the "
                         f"number of dimensions in the tensor ({tensor.dim()})")
    extra = tensor.dim() - named
    left, right = _expand_ellipsis(left, extra), _expand_ellipsis(right, extra)

    left_names = [n for g in left for n in g]
    right_names = [n for g in right for n in g]
    only_one_side = set(left_names) ^ set(right_names)
    if only_one_side:
        raise ValueError(f"Identifiers only on one side of rearrange expression (should be on "
                         f"both): {only_one_side}")
    unused = set(axes_lengths) - set(left_names)
    if unused:
        raise ValueError(f"Identifiers not found in rearrange expression: {unused}")

    # The length of each elementary axis: given, or what its group's dimension leaves for it.
    lengths = {}
    for group, size in zip(left, tensor.shape):
        unknown = [n for n in group if n not in axes_lengths]
        known = 1
        for n in group:
            if n in axes_lengths:
                lengths[n] = int(axes_lengths[n])
                known *= lengths[n]
        if len(unknown) > 1:
            raise DimensionBindError(f"cannot infer the sizes of two dimensions at once "
                                     f"{unknown[0]} and {unknown[1]}")
        if unknown:
            if known == 0 or size % known:
                given = tuple("?" if n in unknown else lengths[n] for n in group)
                raise DimensionBindError(f"inferred dimension does not evenly fit into larger "
                                         f"dimension: {size} vs {given}")
            lengths[unknown[0]] = size // known
        elif known != size:
            raise DimensionBindError(f"Dimension sizes do not match ({size} != {known}) when "
                                     f"matching dimension pack {tuple(group)}")

    elementary = tensor.reshape([lengths[n] for n in left_names])
    moved = elementary.permute([left_names.index(n) for n in right_names])
    out_shape = []
    for group in right:
        size = 1
        for n in group:
            size *= lengths[n]
        out_shape.append(size)
    return moved.reshape(out_shape)
