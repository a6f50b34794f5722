"""The tensors among a call's arguments, for the handlers of dtypes numpy lacks (bfloat16,
float8), which decide a result's dtype from its inputs."""
from __future__ import annotations as _annotations

from . import _core


def tensors_in(values, into: list) -> list:
    """`into` extended with the tensors among `values`, inside nested lists and tuples too."""
    for v in values:
        if isinstance(v, _core.TensorBase):
            into.append(v)
        elif isinstance(v, (list, tuple)):
            tensors_in(v, into)
    return into
