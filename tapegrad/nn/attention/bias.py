"""tapegrad.nn.attention.bias: causal masks scaled_dot_product_attention takes as attn_mask.

``causal_upper_left(L, S)`` is the ``is_causal=True`` mask (query i sees keys 0..i);
``causal_lower_right(L, S)`` aligns the diagonal with the bottom-right corner (query i sees keys
0..i + S - L), the mask of a query block appended after S - L cached keys (KV-cache decoding).
A CausalBias holds only the variant and the two lengths; F.scaled_dot_product_attention runs it
as PyTorch's dispatch does: upper-left (or a square mask) as is_causal=True, lower-right as its
materialized bool mask.  Unlike PyTorch's, a CausalBias is not a Tensor subclass (tapegrad has
no tensor subclass dispatch for it to ride on); it prints as its materialized mask.
"""
from __future__ import annotations

import warnings
from enum import IntEnum, auto

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(IntEnum):
    """Which corner the causal diagonal is aligned to (PyTorch's numbering)."""
    UPPER_LEFT = auto()
    LOWER_RIGHT = auto()


class CausalBias:
    """A causal attention mask of `seq_len_q` queries by `seq_len_kv` keys, kept symbolic."""

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int) -> None:
        if not isinstance(variant, CausalVariant):
            raise AssertionError(f"variant must be a CausalVariant, got {type(variant).__name__}")
        self.variant = variant
        self.seq_len_q = seq_len_q
        self.seq_len_kv = seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warnings.warn("Lower right causal bias will produce NaNs in the output when "
                          "seq_len_q > seq_len_kv!", stacklevel=3)

    def _materialize(self, device=None):
        """The mask as a bool (seq_len_q, seq_len_kv) tensor: True where a query may attend."""
        from tapegrad import creation
        ones = creation.ones(self.seq_len_q, self.seq_len_kv, dtype=_bool())
        offset = self.seq_len_kv - self.seq_len_q if self.variant == CausalVariant.LOWER_RIGHT \
            else 0
        return ones.tril(offset)

    def _dispatch(self, query, key, value, dropout_p=0.0, is_causal=False, scale=None,
                  enable_gqa=False):
        from tapegrad.nn._attention import scaled_dot_product_attention as sdpa
        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        if self.seq_len_q == self.seq_len_kv or self.variant == CausalVariant.UPPER_LEFT:
            return sdpa(query, key, value, attn_mask=None, dropout_p=dropout_p, is_causal=True,
                        scale=scale, enable_gqa=enable_gqa)
        return sdpa(query, key, value, attn_mask=self._materialize(), dropout_p=dropout_p,
                    is_causal=False, scale=scale, enable_gqa=enable_gqa)

    def __repr__(self) -> str:
        return repr(self._materialize())


def _bool():
    from tapegrad import bool as bool_dtype
    return bool_dtype


def causal_upper_left(*size) -> CausalBias:
    """The (seq_len_q, seq_len_kv) causal mask aligned to the upper-left corner (is_causal)."""
    if len(size) != 2:
        raise AssertionError("causal_upper_left only supports 2D tensors")
    seq_len_q, seq_len_kv = size
    return CausalBias(CausalVariant.UPPER_LEFT, seq_len_q, seq_len_kv)


def causal_lower_right(*size) -> CausalBias:
    """The (seq_len_q, seq_len_kv) causal mask aligned to the lower-right corner."""
    if len(size) != 2:
        raise AssertionError("causal_lower_right only supports 2D tensors")
    seq_len_q, seq_len_kv = size
    return CausalBias(CausalVariant.LOWER_RIGHT, seq_len_q, seq_len_kv)
