"""Embedding and EmbeddingBag."""
from __future__ import annotations as _annotations

from ... import creation
from .. import functional as F
from .. import init
from ...grad_mode import no_grad
from ..parameter import Parameter
from .module import Module


def _set_up_table(module, num_embeddings: int, embedding_dim: int, padding_idx, max_norm,
                  norm_type: float, scale_grad_by_freq: bool, weight, freeze: bool, device, dtype,
                  padding_message: str) -> None:
    """The lookup-table state Embedding and EmbeddingBag share: sizes, the (normalised)
    padding_idx, the max_norm options and the weight, N(0, 1) with the padding row zeroed unless
    given (then only its shape is checked)."""
    module.num_embeddings = num_embeddings
    module.embedding_dim = embedding_dim
    if padding_idx is not None:
        if not -num_embeddings <= padding_idx < num_embeddings:
            raise AssertionError(padding_message)
        if padding_idx < 0:     # a non-negative one is kept as given (so it shows so in the repr)
            padding_idx = num_embeddings + padding_idx
    module.padding_idx = padding_idx
    module.max_norm = max_norm
    module.norm_type = norm_type
    module.scale_grad_by_freq = scale_grad_by_freq
    if weight is None:
        module.weight = Parameter(creation.empty(num_embeddings, embedding_dim, device=device,
                                                 dtype=dtype), requires_grad=not freeze)
        module.reset_parameters()
    else:
        if list(weight.shape) != [num_embeddings, embedding_dim]:
            raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
        module.weight = Parameter(weight, requires_grad=not freeze)


def _norm_options_repr(module, show=str) -> str:
    """The max_norm options' part of the repr, each value shown by ``show``: PyTorch's
    Embedding formats them with str, its EmbeddingBag with repr (``np.int64(7)`` stays so)."""
    s = ""
    if module.max_norm is not None:
        s += f", max_norm={show(module.max_norm)}"
    if module.norm_type != 2:
        s += f", norm_type={show(module.norm_type)}"
    if module.scale_grad_by_freq is not False:
        s += f", scale_grad_by_freq={show(module.scale_grad_by_freq)}"
    return s


class _LookupTable(Module):
    """reset_parameters for Embedding and EmbeddingBag, as PyTorch defines it on each."""

    def reset_parameters(self) -> None:
        """The table redrawn from N(0, 1), the padding_idx row (if any) zeroed."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)


class Embedding(_LookupTable):
    """A lookup table of `num_embeddings` vectors of size `embedding_dim` (N(0, 1) initialised)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False, _weight=None,
                 _freeze: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        _set_up_table(self, num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
                      scale_grad_by_freq, _weight, _freeze, device, dtype,
                      "Padding_idx must be within num_embeddings")
        self.sparse = sparse

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        s += _norm_options_repr(self)
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, sparse: bool = False) -> "Embedding":
        """An Embedding whose table is `embeddings` (2-D), frozen unless ``freeze=False``."""
        rows, cols = _pretrained_shape(embeddings)
        return cls(rows, cols, padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse, _weight=embeddings,
                   _freeze=freeze)


def _pretrained_shape(embeddings) -> tuple[int, int]:
    if embeddings.dim() != 2:
        raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
    return embeddings.shape[0], embeddings.shape[1]


class EmbeddingBag(_LookupTable):
    """Sums, means or maxima of bags of embeddings without building the (bags, N, dim) tensor
    of rows in between (N(0, 1) initialised, the padding_idx row zeroed)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight=None, include_last_offset: bool = False,
                 padding_idx: int | None = None, device=None, dtype=None) -> None:
        super().__init__()
        _set_up_table(self, num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
                      scale_grad_by_freq, _weight, False, device, dtype,
                      "padding_idx must be within num_embeddings")
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        mode: str = "mean", sparse: bool = False,
                        include_last_offset: bool = False,
                        padding_idx: int | None = None) -> "EmbeddingBag":
        """An EmbeddingBag whose table is `embeddings` (2-D), frozen unless ``freeze=False``."""
        rows, cols = _pretrained_shape(embeddings)
        bag = cls(rows, cols, max_norm=max_norm, norm_type=norm_type,
                  scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
                  _weight=embeddings, include_last_offset=include_last_offset,
                  padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings!r}, {self.embedding_dim!r}" + _norm_options_repr(self, repr)
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx!r}"
        return s
