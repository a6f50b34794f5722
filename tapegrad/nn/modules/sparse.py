"""Embedding."""
from __future__ import annotations

from ... import creation
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


class Embedding(Module):
    """A lookup table of `num_embeddings` vectors of size `embedding_dim` (N(0, 1) initialised)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 _weight=None, device=None, dtype=None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = padding_idx % num_embeddings
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(creation.empty(num_embeddings, embedding_dim, device=device,
                                                   dtype=dtype))
            init.normal_(self.weight)
            if padding_idx is not None:
                self.weight._array[padding_idx] = 0
        else:
            self.weight = Parameter(_weight)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s
