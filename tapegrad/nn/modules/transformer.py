"""MultiheadAttention and the Transformer layers, with PyTorch's parameter names and defaults.

The math lives in tapegrad.nn._attention (functional, differentiable ops only).  Parameter names
(in_proj_weight, in_proj_bias, out_proj.*, linear1, norm1, ...) match PyTorch's so state dicts
interchange.
"""
from __future__ import annotations as _annotations

import copy
import warnings

import numpy as np

from ... import _core, _profiling, creation
from ..._device import check_device
from .. import _attention
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm


class NonDynamicallyQuantizableLinear(Linear):
    """PyTorch's name for MultiheadAttention.out_proj (a plain Linear)."""


class MultiheadAttention(Module):
    """Attention over num_heads heads; (L, N, E) inputs, or (N, L, E) with batch_first."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None) -> None:
        super().__init__()
        check_device(device, allow_meta=True)
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        empty = lambda *shape: Parameter(creation.empty(*shape, dtype=dtype, device=device))  # noqa: E731
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = empty(embed_dim, embed_dim)
            self.k_proj_weight = empty(embed_dim, self.kdim)
            self.v_proj_weight = empty(embed_dim, self.vdim)
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = empty(3 * embed_dim, embed_dim)
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = empty(3 * embed_dim)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        dtype=dtype)
        if add_bias_kv:
            self.bias_k = empty(1, 1, embed_dim)
            self.bias_v = empty(1, 1, embed_dim)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        is_batched = query.dim() == 3
        # PyTorch's inference fast path computes the attention weights even when they are not
        # returned: a query that may attend nothing gives NaN there (its other paths give the
        # attention kernel's zeros).  A floating-point mask keeps it off that path.
        weights_wanted = need_weights
        if (not need_weights and (attn_mask is not None or key_padding_mask is not None)
                and not any(m is not None and m.is_floating_point()
                            for m in (attn_mask, key_padding_mask))
                and self._takes_fast_path(query, key, value)):
            need_weights = True
        if self.batch_first and is_batched:
            # Keep the identity of shared inputs: self-attention projects q, k, v in one matmul.
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = query.transpose(1, 0), key.transpose(1, 0)
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        with (_profiling.kernel_event("aten::_native_multi_head_attention", (query, key, value))
              if _profiling.RECORDING and self._takes_fast_path(query, key, value)
              else _profiling.NO_LABEL):
            out, weights = _attention.multi_head_attention_forward(
                query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
                self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
                self.out_proj.weight, self.out_proj.bias, training=self.training,
                key_padding_mask=key_padding_mask, need_weights=need_weights,
                attn_mask=attn_mask, use_separate_proj_weight=not self._qkv_same_embed_dim,
                q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
                v_proj_weight=self.v_proj_weight, average_attn_weights=average_attn_weights,
                is_causal=is_causal)
        if self.batch_first and is_batched:
            out = out.transpose(1, 0)
        return out, (weights if weights_wanted else None)

    def merge_masks(self, attn_mask, key_padding_mask, query):
        """The mask the fused kernel takes and its type: the key padding mask alone (type 1), or
        the attention mask expanded to (batch, heads, L, L), plus the padding mask when both are
        given (type 2); (None, None) without masks.  `query` is batch-first."""
        mask_type, merged_mask = None, None
        if key_padding_mask is not None:
            mask_type, merged_mask = 1, key_padding_mask
        if attn_mask is not None:
            batch_size, seq_len, _ = query.shape
            mask_type = 2
            if attn_mask.dim() == 3:
                merged_mask = attn_mask.view(batch_size, -1, seq_len, seq_len)
            else:
                merged_mask = attn_mask.view(1, 1, seq_len, seq_len).expand(
                    batch_size, self.num_heads, -1, -1)
            if key_padding_mask is not None:
                merged_mask = merged_mask + key_padding_mask.view(
                    batch_size, 1, 1, seq_len).expand(-1, self.num_heads, -1, -1)
        return merged_mask, mask_type

    def _takes_fast_path(self, query, key, value):
        """Whether PyTorch's forward runs its fused inference kernel (its why_not_fast_path
        checks: batched self-attention in eval, batch_first, an even number of heads, packed
        projections with biases, no extra key/value biases, nothing that needs a gradient)."""
        if (query.dim() != 3 or query is not key or key is not value or self.training
                or not self.batch_first or self.num_heads % 2 or self.bias_k is not None
                or self.bias_v is not None or self.add_zero_attn
                or not self._qkv_same_embed_dim or self.in_proj_weight is None
                or self.in_proj_bias is None or self.out_proj.bias is None
                or query.dtype != self.in_proj_weight.dtype):
            return False
        from ...grad_mode import is_grad_enabled
        tensors = (query, self.in_proj_weight, self.in_proj_bias, self.out_proj.weight,
                   self.out_proj.bias)
        return not (is_grad_enabled() and any(t.requires_grad for t in tensors))


def _activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if isinstance(activation, str):
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return activation


def _clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _seq_len(src, batch_first):
    if src.dim() == 2:
        return src.shape[0]
    return src.shape[1 if batch_first else 0]


def _square_causal_array(sz, dtype):
    return np.triu(np.full((sz, sz), -np.inf, dtype=dtype), 1)


def _detect_is_causal_mask(mask, is_causal, size):
    """PyTorch's hint: a mask equal to the square causal mask counts as is_causal=True."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        arr = mask._array
        if arr.shape == (size, size):
            make_causal = bool(np.array_equal(arr, _square_causal_array(size, arr.dtype)))
        else:
            make_causal = False
    return make_causal


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with residual and LayerNorm."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None) -> None:
        super().__init__()
        check_device(device, allow_meta=True)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        activation = _activation_fn(activation)
        from .activation import GELU, ReLU
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        src_key_padding_mask, src_mask = _canonical_pair(
            src_key_padding_mask, "src_key_padding_mask", src_mask, "src_mask", src)
        fast = self._takes_fast_path(src)
        if fast:
            # PyTorch's fused encoder-layer kernel reads its (float) masks as boolean: every
            # nonzero entry is masked out, a soft -0.5 as much as -inf; a query left with no
            # key gives NaN there (MultiheadAttention's fast path, which bool masks take).
            src_key_padding_mask, src_mask = (None if m is None else m != 0
                                              for m in (src_key_padding_mask, src_mask))
        with (_profiling.kernel_event("aten::_transformer_encoder_layer_fwd", (src,))
              if fast and _profiling.RECORDING else _profiling.NO_LABEL):
            x = src
            if self.norm_first:
                x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
                x = x + self._ff_block(self.norm2(x))
            else:
                x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask,
                                                  is_causal))
                x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def _takes_fast_path(self, src):
        """Whether PyTorch's forward runs its fused inference kernel (its
        why_not_sparsity_fast_path checks, beyond those of the attention's own fast path)."""
        if (not self.activation_relu_or_gelu or self.norm1.eps != self.norm2.eps
                or not self.self_attn._takes_fast_path(src, src, src)
                or any(len(getattr(m, "_forward_hooks", {}))
                       + len(getattr(m, "_forward_pre_hooks", {})) for m in self.modules())):
            return False
        from ...grad_mode import is_grad_enabled
        return not (is_grad_enabled() and any(
            p is not None and p.requires_grad
            for p in (self.norm1.weight, self.norm1.bias, self.norm2.weight, self.norm2.bias,
                      self.linear1.weight, self.linear1.bias, self.linear2.weight,
                      self.linear2.bias)))


class TransformerEncoder(Module):
    """A stack of num_layers copies of an encoder layer, then an optional norm."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why_not = _why_no_nested_tensor(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why_not}", stacklevel=2)
            self.use_nested_tensor = False

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        src_key_padding_mask, mask = _canonical_pair(src_key_padding_mask, "src_key_padding_mask",
                                                     mask, "mask", src)
        first = self.layers[0]
        is_causal = _detect_is_causal_mask(mask, is_causal,
                                           _seq_len(src, first.self_attn.batch_first))
        nested = self._pads_with_zeros(src, mask, src_key_padding_mask)
        if nested:
            # PyTorch's inference path runs on nested tensors: the padded positions (every
            # nonzero entry of the mask, a float mask's soft -0.5 as well as -inf) are dropped
            # from the sequences, so the layers see them as keys masked out entirely.
            pad = _mask_bool(src_key_padding_mask)
            src_key_padding_mask = _attention._canonical_mask(
                creation.from_numpy(np.ascontiguousarray(pad)), "src_key_padding_mask",
                None, "", src.dtype)
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=is_causal,
                           src_key_padding_mask=src_key_padding_mask)
        if nested:
            # ...and it returns zeros at padding: a fully padded sequence is empty there,
            # zeros too, not the NaN of its attention over no keys (so masked_fill, not a
            # product with 0); all sequences empty is its to_padded_tensor's error.
            # (PyTorch: TORCH_WARN_ONCE, on that path)
            _core.warn_once(_NESTED_PROTOTYPE, "aten/src/ATen/NestedTensorImpl.cpp:177")
            if pad.all():
                raise RuntimeError("to_padded_tensor: at least one constituent tensor should "
                                   "have non-zero numel")
            output = output.masked_fill(
                creation.from_numpy(np.ascontiguousarray(pad[:, :, None])), 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output

    def _pads_with_zeros(self, src, mask, key_padding_mask):
        if (not self.use_nested_tensor or self.layers[0].training or src.dim() != 3
                or key_padding_mask is None or mask is not None):
            return False
        from ...grad_mode import is_grad_enabled
        if is_grad_enabled() and (src.requires_grad
                                  or any(p.requires_grad for p in self.layers[0].parameters())):
            return False
        pad = _mask_bool(key_padding_mask)
        # Only left-aligned padding (each row: tokens, then padding) takes that path.
        return not self.mask_check or bool(np.all(pad[:, :-1] <= pad[:, 1:]))


# What PyTorch's nested-tensor inference path warns, once per process.
_NESTED_PROTOTYPE = (
    "The PyTorch API of nested tensors is in prototype stage and will change in the near future. "
    "We recommend specifying layout=torch.jagged when constructing a nested tensor, as this "
    "layout receives active development, has better operator coverage, and works with "
    "torch.compile.")


def _canonical_pair(key_padding_mask, kpm_name, mask, mask_name, src):
    """Both masks as float masks, warning (as PyTorch) when their types differ."""
    kpm = _attention._canonical_mask(key_padding_mask, kpm_name,
                                     None if mask is None else mask.dtype, mask_name, src.dtype)
    return kpm, _attention._canonical_mask(mask, mask_name, None, "", src.dtype)


def _mask_bool(mask):
    """The padded positions as PyTorch's nested path reads a key padding mask: its
    logical_not() keeps the zeros, so every nonzero entry of a float mask is padding."""
    arr = mask._array
    return arr if arr.dtype == bool else arr != 0


def _why_no_nested_tensor(layer):
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    if layer.norm_first:
        return f"{name}.norm_first was True"
    if not layer.self_attn.batch_first:
        return (f"{name}.self_attn.batch_first was not True"
                f"(use batch_first for better inference performance)")
    if not layer.self_attn._qkv_same_embed_dim:
        return f"{name}.self_attn._qkv_same_embed_dim was not True"
    if layer.self_attn.in_proj_bias is None:
        return f"{name}.self_attn was passed bias=False"
    if not layer.activation_relu_or_gelu:
        return f"{name}.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
    if layer.self_attn.num_heads % 2 == 1:
        return f"{name}.self_attn.num_heads is odd"
    return ""


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's memory, then feed-forward."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None) -> None:
        super().__init__()
        check_device(device, allow_meta=True)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation_fn(activation)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask,
                                    memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoder(Module):
    """A stack of num_layers copies of a decoder layer, then an optional norm."""

    def __init__(self, decoder_layer, num_layers, norm=None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        first = self.layers[0]
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal,
                                               _seq_len(tgt, first.self_attn.batch_first))
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask,
                           tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """Encoder-decoder transformer ("Attention Is All You Need"), PyTorch's layout."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation=F.relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None) -> None:
        super().__init__()
        check_device(device, allow_meta=True)
        layer_args = dict(dim_feedforward=dim_feedforward, dropout=dropout,
                          activation=activation, layer_norm_eps=layer_norm_eps,
                          batch_first=batch_first, norm_first=norm_first, bias=bias, dtype=dtype)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, **layer_args)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, **layer_args)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        is_batched = src.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if is_batched and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """(sz, sz) float mask: -inf above the diagonal (future positions), 0 elsewhere."""
        check_device(device, allow_meta=True)
        np_dtype = np.float32 if dtype is None else dtype.np_dtype
        return creation.from_numpy(_square_causal_array(sz, np_dtype))
