"""Attention, functional form: scaled_dot_product_attention and multi_head_attention_forward.

Without dropout, float32/float64 attention is one record (a custom Function over the compiled
core's _attention_forward/_attention_backward: two GEMMs and a C softmax forward, four GEMMs and its
VJP backward); multi-head self-attention takes its heads from the packed q/k/v projection as strided
views and writes the merged heads in place, so splitting and merging heads copies nothing.  Other
cases (dropout, broadcast batch dims, half precision, a mask that requires grad) are composed from
differentiable ops (matmul, softmax, masked_fill, dropout, linear); so is the fused records'
backward under create_graph, so gradients of any order work.  Masks are constants: they are built
with numpy and enter as added tensors (a bool mask as a 0 / -inf bias, as PyTorch adds it).
"""
from __future__ import annotations as _annotations

import math
import sys

import numpy as np

from .. import _core, _profiling
from .. import creation
from .._half_precision import in_float32_if_half
from ..autograd.function import KernelFunction
from ..grad_mode import enable_grad
from .attention import SDPBackend, _is_enabled, check_cpu_backend
from .attention.bias import CausalBias

_F = _core.NN_FUNCTIONS
_T = _core.TORCH_FUNCTIONS

def _c_name(t) -> str:
    """PyTorch's C++ spelling of t's dtype in its messages ("float", "c10::complex<float>")."""
    return _core.c_type_name_of(t._array.dtype)


def causal_mask_array(L: int, S: int) -> np.ndarray:
    """Boolean (L, S): True where query i may attend key j (j <= i, aligned top-left)."""
    return np.tri(L, S, dtype=bool)


def _broadcast_batch(*shapes):
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        return None


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(Q K^T * scale + mask) V over the last two dims; leading dims broadcast.

    attn_mask: bool (True = may attend) or float (added to the scores), broadcast to (..., L, S).
    A query row that may attend nothing gives zeros (as PyTorch's math kernel), not NaN.
    attn_mask may also be a torch.nn.attention.bias.CausalBias, which runs its own dispatch."""
    if not isinstance(query, _core.TensorBase):
        # nested tensors attend component by component (tapegrad.nested's ops); other
        # tensor-like objects (fx proxies) find their way below
        nested = sys.modules.get("tapegrad.nested._tensor")
        if nested is not None and isinstance(query, nested.NestedTensor):
            from ..nested._ops import call
            return call(scaled_dot_product_attention, (query, key, value),
                        {"attn_mask": attn_mask, "dropout_p": dropout_p, "is_causal": is_causal,
                         "scale": scale, "enable_gqa": enable_gqa})
    if isinstance(attn_mask, CausalBias):
        return attn_mask._dispatch(query, key, value, dropout_p=dropout_p, is_causal=is_causal,
                                   scale=scale, enable_gqa=enable_gqa)
    check_cpu_backend()
    _core.check_bool("scaled_dot_product_attention", "is_causal", is_causal)
    _core.check_bool("scaled_dot_product_attention", "enable_gqa", enable_gqa)
    if query.dtype != key.dtype or query.dtype != value.dtype:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {_c_name(query)} key.dtype: {_c_name(key)} and "
                           f"value.dtype: {_c_name(value)} instead.")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, "
                           f"but got query.dim: {query.dim()} key.dim: {key.dim()} and "
                           f"value.dim: {value.dim()} instead.")
    # (PyTorch's "float" is float32: a float32 mask is taken for any query, read in its dtype)
    if attn_mask is not None and attn_mask.dtype.name not in ("bool", "float32") \
            and attn_mask.dtype != query.dtype:
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                           f"dtype, but got attn_mask.dtype: {_c_name(attn_mask)} and  "
                           f"query.dtype: {_c_name(query)} instead.")
    if value.numel() == 0 or query.shape[-2] == 0:
        return _empty_attention(query, key, value)
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    # PyTorch's CPU flash kernel applies an explicit mask and the causal mask together; its
    # math kernel, which every other case takes, refuses the pair
    flash = _pytorch_picks_flash_kernel(query, key, value, attn_mask, dropout_p, enable_gqa)
    if not flash and not _is_enabled(SDPBackend.MATH):
        raise RuntimeError("No available kernel.  Aborting execution.")
    if is_causal and attn_mask is not None and not flash:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    L, E = query.shape[-2], query.shape[-1]
    S = key.shape[-2]
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hq % hk or hq % hv:
            raise RuntimeError("Number of heads in key and value must divide the number of "
                               "heads in ")
        key = _repeat_heads(key, hq // hk)
        value = _repeat_heads(value, hq // hv)
    batch = _broadcast_batch(tuple(query.shape[:-2]), tuple(key.shape[:-2]),
                             tuple(value.shape[:-2]))
    nb = int(np.prod(batch)) if batch is not None else 0
    if key.shape[-1] != E:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{nb}, {E}] but got: [{nb}, {key.shape[-1]}].")
    if value.shape[-2] != S:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{nb}, {S}] but got: [{nb}, {value.shape[-2]}].")
    if attn_mask is not None:
        _check_mask_fits_scores(attn_mask, query, key)
    scale_factor = 1.0 / math.sqrt(E) if scale is None else scale
    # Masks are added as a 0 / -inf bias, as PyTorch does: a NaN score at a masked position
    # stays NaN (nan + -inf), it is not overwritten as masked_fill would.
    bias = None
    if attn_mask is not None:
        if attn_mask.dtype.name == "bool":
            allowed = attn_mask._array & causal_mask_array(L, S) if is_causal else attn_mask._array
            bias = _bias(allowed, query._array.dtype)
        else:
            bias = attn_mask if attn_mask.dtype == query.dtype else attn_mask.to(query.dtype)
            if is_causal:       # (a mask that requires grad never gets here: math kernel)
                bias = bias + _bias(causal_mask_array(L, S), query._array.dtype)
    elif is_causal:
        bias = _bias(causal_mask_array(L, S), query._array.dtype)

    def attend(query, key, value, bias):
        if dropout_p == 0.0 and _fusable(query, key, value, bias):
            out = _core._capture_op_call(_FusedAttention.apply,
                                         (query, key, value, bias, float(scale_factor)), {})
            if not flash:
                # PyTorch's math kernel ends in a matmul: its node is what a print shows
                out = _core._name_grad_fn(out, "MmBackward0" if out.dim() == 2
                                          else "UnsafeViewBackward0")
            elif getattr(type(query), "_dtype_class", False):
                _flash_bfloat16_values(out, query, key, value, bias, float(scale_factor))
            return out
        return _attention_composite(query, key, value, bias, scale_factor, dropout_p)

    # float16 computed in float32 and cast back, as PyTorch's CPU math kernel does (its node is
    # ToCopyBackward0 too): the float16 scores of 60000 * 1.5 were inf, the softmax NaN
    event = _pytorch_kernel_event(flash, query, key, value, attn_mask, dropout_p, is_causal)
    if event is None:
        return in_float32_if_half(attend, query, key, value, bias)
    with event:
        event.result = in_float32_if_half(attend, query, key, value, bias)
    return event.result


def _flash_bfloat16_values(out, query, key, value, bias, scale) -> None:
    """The values PyTorch's CPU flash kernel gives bfloat16 operands, written into `out` (the
    fused record's float32 result, which its backward does not read; the bfloat16 dispatch
    rounds it after): the kernel rounds the unnormalised weights exp(s - max) to bfloat16
    before their product with v, and divides by their float32 sum after it.  Recovered from
    the probabilities p: the row's largest weight is exp(0) = 1, so its sum is 1 / max(p)."""
    from .._bfloat16 import round_to_bfloat16
    _, p = _core._attention_forward(query._array, key._array, value._array,
                                    None if bias is None else
                                    (bias._array if isinstance(bias, _core.TensorBase) else bias),
                                    scale)
    largest = p.max(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        total = np.float32(1) / largest
        values = np.matmul(round_to_bfloat16(p * total), value._array) / total
    out._array[...] = np.where(largest > 0, values, out._array)


def _empty_attention(query, key, value):
    """PyTorch's early return for attention with nothing to compute (no query rows, or an empty
    value): zeros of the query's shape with the value's feature size, before any check of the
    mask, dropout or the other shapes.  The zero-weighted sums of q, k and v tie the result to
    them, so backward gives each its zero gradient (PyTorch's grad_fn is this AddBackward0)."""
    shape = tuple(query.shape[:-1]) + (value.shape[-1],)
    out = creation.zeros(*shape, dtype=query.dtype)
    return out + (query.sum() + key.sum() + value.sum()) * 0


def _check_mask_fits_scores(attn_mask, query, key):
    """PyTorch adds the mask into the scores (..., L, S) in place: a mask that broadcasts them to
    a bigger shape (a length-1 query with a mask of L > 1) raises its in-place add's error.
    With a 4-D query PyTorch's kernel choice first reads the mask's size(-2), so there a mask of
    fewer than 2 dims is an IndexError (other ranks broadcast it)."""
    if query.dim() == 4 and attn_mask.dim() == 0:
        raise IndexError("Dimension specified as -2 but tensor has no dimensions")
    if query.dim() == 4 and attn_mask.dim() == 1:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got -2)")
    try:
        scores = np.broadcast_shapes(tuple(query.shape[:-2]), tuple(key.shape[:-2])) + (
            query.shape[-2], key.shape[-2])
        full = np.broadcast_shapes(scores, tuple(attn_mask.shape))
    except ValueError:
        return              # (shapes that do not broadcast raise the ops' own error later)
    if full != scores:
        raise RuntimeError(f"output with shape {list(scores)} doesn't match the broadcast shape "
                           f"{list(full)}")


def _attention_composite(query, key, value, bias, scale_factor, dropout_p=0.0):
    """softmax(query key^T * scale + bias) value from differentiable ops (bias: None or an additive
    tensor; dropout on the weights when dropout_p > 0)."""
    scores = _T["matmul"](query * scale_factor, key.transpose(-2, -1))
    if bias is not None:
        scores = scores + bias
    weights = _safe_softmax(scores)
    if dropout_p > 0.0:
        weights = _F["dropout"](weights, dropout_p, True)
    return _T["matmul"](weights, value)


_FUSED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _fusable(query, key, value, bias):
    """Whether the fused record computes this attention: float32/float64 operands of one dtype
    with the same batch dims, and a constant bias that broadcasts to the scores' shape."""
    dt = query._array.dtype
    if dt not in _FUSED_DTYPES:
        return False
    qs, ks, vs = query._array.shape, key._array.shape, value._array.shape
    if qs[:-2] != ks[:-2] or ks[:-2] != vs[:-2]:
        return False
    if bias is not None:
        if bias.requires_grad or bias._array.dtype != dt:
            return False
        scores = qs[:-1] + ks[-2:-1]
        if _broadcast_batch(tuple(bias._array.shape), scores) != scores:
            return False
    return True


_FLASH_DTYPES = ("float32", "float64", "bfloat16", "float16")


def _pytorch_picks_flash_kernel(query, key, value, attn_mask, dropout_p, enable_gqa):
    """Whether PyTorch's CPU dispatch runs its flash kernel on these arguments rather than its
    math kernel (its select_sdp_backend_cpp, gate by gate): the flash backend enabled, no
    dropout, 4-D query, key and value of one batch size and one head count (grouped-query: key's
    and value's heads equal and dividing query's), a mask that does not require grad and is
    2-D or 4-D of (batch or 1, heads or 1, L or 1, S or 1), one head size, non-empty sequences,
    unit stride along the head size, and a floating dtype.  The choice shows: in the grad_fn's
    name, in which mask/causal pairs are refused, and in FlopCounterMode's count (PyTorch's
    counts the math kernel's bmm and nothing for the flash kernel)."""
    from .attention import SDPBackend, _is_enabled
    operands = (query, key, value)
    if not _is_enabled(SDPBackend.FLASH_ATTENTION) or dropout_p > 0.0:
        return False
    if not all(t.dim() == 4 for t in operands):
        return False
    (batch, heads, L, E), (kb, kh, S, ke), (vb, vh, _, ve) = (tuple(t.shape) for t in operands)
    if not batch == kb == vb:
        return False
    if enable_gqa:
        if kh != vh or heads % kh:
            return False
    elif not heads == kh == vh:
        return False
    if attn_mask is not None:
        if attn_mask.requires_grad or attn_mask.dim() not in (2, 4):
            return False
        shape = tuple(attn_mask.shape)
        if shape[-2] not in (L, 1) or shape[-1] not in (S, 1):
            return False
        if attn_mask.dim() == 4 and (shape[0] not in (batch, 1) or shape[1] not in (heads, 1)):
            return False
    if not E == ke == ve or L == 0 or S == 0:
        return False
    if not all(t.stride(-1) == 1 for t in operands):
        return False
    return query.dtype.name in _FLASH_DTYPES


def _pytorch_kernel_event(flash, query, key, value, attn_mask, dropout_p, is_causal):
    """The profiler's event of the CPU kernel PyTorch's scaled_dot_product_attention runs (its
    operands as PyTorch passes them), or None when no profiler records.  FlopCounterMode counts
    the math kernel's products from it; the caller sets its `result` before closing it."""
    if not _profiling.RECORDING:
        return None
    if flash:
        return _profiling.kernel_event("aten::_scaled_dot_product_flash_attention_for_cpu",
                                       (query, key, value, dropout_p, is_causal))
    return _profiling.kernel_event("aten::_scaled_dot_product_attention_math",
                                   (query, key, value, attn_mask, dropout_p, is_causal))


def _materialized(g, like):
    return g._array if g is not None else np.zeros(like.shape, dtype=like.dtype)


class _FusedAttention(KernelFunction):
    """softmax(q k^T * scale + bias) v over the last two dims as one record; bias a constant."""

    saved_args = (0, 1, 2)

    @staticmethod
    def kernel_forward(q, k, v, bias, scale):
        out, p = _core._attention_forward(q, k, v, bias, scale)
        return out, (q, k, v, p, scale, bias)

    @staticmethod
    def kernel_backward(state, need, grads):
        q, k, v, p, scale, _ = state
        g = grads[0]
        if g is None:
            return None, None, None, None, None
        dq, dk, dv = _core._attention_backward(g, q, k, v, p, scale, need_q=need[0],
                                               need_k=need[1], need_v=need[2])
        return dq, dk, dv, None, None

    @staticmethod
    def graph_backward(ctx, saved, g):
        # create_graph: differentiate the composite
        q, k, v = saved
        if g is None:
            return None, None, None, None, None
        bias, scale = ctx.kernel_state[5], ctx.params[4]
        bias = None if bias is None else _constant(bias)
        return _composite_grads(
            lambda q_, k_, v_: _attention_composite(q_, k_, v_, bias, scale),
            (q, k, v), ctx.needs_input_grad, g) + (None, None)


# PyTorch's name for the grad_fn of CPU attention (its flash kernel).
_FusedAttention._backward_cls.__name__ = "ScaledDotProductFlashAttentionForCpuBackward0"
_FusedAttention._backward_cls.__qualname__ = "ScaledDotProductFlashAttentionForCpuBackward0"


def _composite_grads(composite, inputs, need, g):
    """The gradients of composite(*inputs) for the inputs in `need`, as recorded ops
    (create_graph=True): the composite is re-run from the inputs and differentiated."""
    from ..autograd import grad as autograd_grad
    wanted = [j for j, t in enumerate(inputs) if need[j]]
    with enable_grad():
        out = composite(*inputs)
        found = autograd_grad([out], [inputs[j] for j in wanted], [g], create_graph=True,
                              allow_unused=True)
    res = [None] * len(inputs)
    for j, gj in zip(wanted, found):
        res[j] = gj
    return tuple(res)


def _head_views(packed, num_heads):
    """The (N, H, L, hd) views of q, k and v in a packed (L, N, 3E) array (no copies)."""
    L, N, E3 = packed.shape
    E = E3 // 3
    hd = E // num_heads
    return tuple(packed[:, :, j * E:(j + 1) * E].reshape(L, N, num_heads, hd).transpose(1, 2, 0, 3)
                 for j in range(3))


class _PackedSelfAttention(KernelFunction):
    """Multi-head self-attention from the packed projection qkv (L, N, 3E) to the merged heads
    (L, N, E), before the output projection; bias a constant broadcasting to (N, H, L, L)."""

    saved_args = (0,)

    @staticmethod
    def kernel_forward(qkv, num_heads, bias, scale):
        A = np.ascontiguousarray(qkv)
        L, N, E3 = A.shape
        E = E3 // 3
        q, k, v = _head_views(A, num_heads)
        out = np.empty((L, N, E), dtype=A.dtype)
        merged = out.reshape(L, N, num_heads, E // num_heads).transpose(1, 2, 0, 3)
        _, p = _core._attention_forward(q, k, v, bias, scale, merged)
        return out, (A, p, scale, num_heads, bias)

    @staticmethod
    def kernel_backward(state, need, grads):
        A, p, scale, H, _ = state
        g = grads[0]
        if g is None:
            return None, None, None, None
        L, N, E3 = A.shape
        G = g.reshape(L, N, H, E3 // 3 // H).transpose(1, 2, 0, 3)
        d = np.empty_like(A)
        dq, dk, dv = _head_views(d, H)
        q, k, v = _head_views(A, H)
        _core._attention_backward(G, q, k, v, p, scale, dq, dk, dv)
        return d, None, None, None

    @staticmethod
    def graph_backward(ctx, saved, g):
        # create_graph: differentiate the composite
        qkv, = saved
        if g is None:
            return None, None, None, None
        H, scale, bias = ctx.params[1], ctx.params[3], ctx.kernel_state[4]
        bias = None if bias is None else _constant(bias)
        return _composite_grads(
            lambda t: _packed_composite(t, H, bias, scale), (qkv,), (True,), g
        ) + (None, None, None)


def _packed_composite(qkv, num_heads, bias, scale):
    """_PackedSelfAttention from differentiable ops (its create_graph backward)."""
    L, N, E3 = qkv.shape
    E = E3 // 3
    hd = E // num_heads
    heads = [t.reshape(L, N * num_heads, hd).transpose(0, 1).reshape(N, num_heads, L, hd)
             for t in qkv.chunk(3, -1)]
    out = _attention_composite(heads[0], heads[1], heads[2], bias, scale)
    return out.permute(2, 0, 1, 3).reshape(L, N, E)


def _repeat_heads(t, repeats):
    """Each head `repeats` times in a row along dim -3 (repeat_interleave, as views + reshape)."""
    if repeats == 1:
        return t
    shape = tuple(t.shape)
    expanded = t.unsqueeze(-3).expand(*shape[:-2], repeats, *shape[-2:])
    return expanded.reshape(shape[:-3] + (shape[-3] * repeats,) + shape[-2:])


def _constant(arr):
    # (not creation.from_numpy: a broadcast mask is a read-only view, and PyTorch never warns here)
    return _core.tensor_from_numpy(np.ascontiguousarray(arr))


def _bias(allowed, dtype):
    """The additive form of a bool mask (True = may attend): 0 where allowed, -inf elsewhere."""
    return _constant(np.where(allowed, 0.0, -np.inf).astype(dtype))


def _safe_softmax(scores):
    """softmax over the last dim; rows that are entirely -inf give zeros (and zero gradient)."""
    dead = np.isneginf(scores._array).all(axis=-1, keepdims=True)
    if not dead.any():
        return _F["softmax"](scores, -1)
    # Unmask the dead rows so softmax stays finite, then zero them by a constant factor.
    scores = scores.masked_fill(_constant(np.broadcast_to(dead, scores.shape)), 0.0)
    keep = _constant((~dead).astype(scores._array.dtype))
    return _F["softmax"](scores, -1) * keep


# -- multi-head attention -----------------------------------------------------------------------

def _canonical_mask(mask, mask_name, other_type, other_name, target_type):
    """Bool masks become float masks (-inf where True); float masks pass; others fail."""
    if mask is None:
        return None
    kind = mask._array.dtype.kind
    if kind != "b" and kind != "f":
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if other_type is not None and other_type != mask.dtype:
        import warnings
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use "
                      f"same type for both instead.", stacklevel=4)
    if kind == "b":
        arr = np.where(mask._array, -np.inf, 0.0).astype(target_type.np_dtype)
        return _constant(arr)
    return mask


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be "
                                 f"3-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 2-D but found {key_padding_mask.dim()}-D tensor "
                                 f"instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, "
                                 f"2-D or 3-D but found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be "
                                 f"2-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to "
                                 f"be `None` or 1-D but found {key_padding_mask.dim()}-D tensor "
                                 f"instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be "
                                     f"`None`, 2-D or 3-D but found {attn_mask.dim()}-D tensor "
                                     f"instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                         f"{attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.dim()}-D query tensor")


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """PyTorch's F.multi_head_attention_forward: sequence-first (L, N, E) or unbatched (L, E)."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       None if attn_mask is None else attn_mask.dtype,
                                       "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        # The hint lets attention build the causal mask itself.
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not "
                                 f"match value's {tuple(value.shape[:2])}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")

    # (the public entries, not the bare functions: PyTorch's composite reaches linear and bmm
    # through the dispatcher, so CPU autocast casts at each of them; tapegrad/_autocast.py)
    linear = sys.modules[__package__ + ".functional"].linear
    bmm = sys.modules["tapegrad"].bmm
    if not use_separate_proj_weight and in_proj_weight is None:
        raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
    packed = not use_separate_proj_weight and query is key and key is value
    if packed:
        qkv = linear(query, in_proj_weight, in_proj_bias)
    else:
        if not use_separate_proj_weight:
            w_q, w_k, w_v = in_proj_weight.chunk(3, 0)
        else:
            w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
        b_q = b_k = b_v = None
        if in_proj_bias is not None:
            b_q, b_k, b_v = in_proj_bias.chunk(3, 0)
        if use_separate_proj_weight:
            _check_projections(query, key, value, (w_q, w_k, w_v), (b_q, b_k, b_v))
        q = linear(query, w_q, b_q)
        k = linear(key, w_k, b_k)
        v = linear(value, w_v, b_v)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if (packed and bias_k is None and bias_v is None and static_k is None and static_v is None
            and not add_zero_attn and not need_weights and (dropout_p == 0.0 or not training)
            # (a vmap's BatchedTensor has no array: its samples take the general path's ops)
            and isinstance(qkv, _core.TensorBase) and qkv._array.dtype in _FUSED_DTYPES
            and not (attn_mask is not None and attn_mask.requires_grad)
            and not (key_padding_mask is not None and key_padding_mask.requires_grad)):
        # self-attention in one record, heads split and merged in place (_PackedSelfAttention)
        check_cpu_backend()                    # PyTorch's scaled_dot_product_attention path
        attn_mask = _merge_key_padding(attn_mask, key_padding_mask, bsz, num_heads, tgt_len)
        if attn_mask is not None:
            bias = (attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1
                    else attn_mask.reshape(bsz, num_heads, -1, tgt_len))
        elif is_causal:
            bias = _bias(causal_mask_array(tgt_len, tgt_len), qkv._array.dtype)
        else:
            bias = None
        out = _core._capture_op_call(_PackedSelfAttention.apply,
                                     (qkv, num_heads, bias, 1.0 / math.sqrt(head_dim)), {})
        # (linear folds the (L, N, E) rows itself: PyTorch's view, addmm, view; no views here,
        # so a capture keeps the steps of this call instead of re-running it whole)
        out = linear(out, out_proj_weight, out_proj_bias)
        return (out if is_batched else out.squeeze(1)), None
    if packed:
        q, k, v = qkv.chunk(3, -1)

    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key." if static_k is not None
                                 else "bias cannot be added to static value.")
        k = _T["cat"]([k, bias_k.reshape(1, 1, embed_dim).expand(1, bsz, embed_dim)], 0)
        v = _T["cat"]([v, bias_v.reshape(1, 1, embed_dim).expand(1, bsz, embed_dim)], 0)
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)

    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None \
        else _check_static(static_k, "static_k", bsz * num_heads, head_dim)
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None \
        else _check_static(static_v, "static_v", bsz * num_heads, head_dim)

    if add_zero_attn:
        zeros = creation.zeros(bsz * num_heads, 1, head_dim, dtype=q.dtype)
        k = _T["cat"]([k, zeros], 1)
        v = _T["cat"]([v, zeros], 1)
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)

    src_len = k.shape[1]
    attn_mask = _merge_key_padding(attn_mask, key_padding_mask, bsz, num_heads, src_len)
    if not training:
        dropout_p = 0.0

    if need_weights:
        q_scaled = q * math.sqrt(1.0 / float(head_dim))
        if attn_mask is not None:       # (PyTorch's baddbmm: a float16 product under autocast
            scores = sys.modules["tapegrad"].baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:                           # stays float16 with a float32 mask)
            scores = bmm(q_scaled, k.transpose(-2, -1))
        weights = _F["softmax"](scores, -1)
        if dropout_p > 0.0:
            weights = _F["dropout"](weights, dropout_p, True)
        out = bmm(weights, v)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias)
        # (the output size named: -1 cannot be inferred for an empty batch, bsz = 0)
        out = out.reshape(tgt_len, bsz, out.shape[-1])
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    # (through the namespace: under vmap its batching rule applies)
    sdpa = sys.modules[__package__ + ".functional"].scaled_dot_product_attention
    out = sdpa(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias)
    out = out.reshape(tgt_len, bsz, out.shape[-1])
    if not is_batched:
        out = out.squeeze(1)
    return out, None


def _check_projections(query, key, value, weights, biases):
    """PyTorch's checks of separate q/k/v projections against the inputs' feature sizes (a key
    of the wrong size is its AssertionError naming the weight, not a matmul's error)."""
    eq = query.shape[-1]
    for name, x, w in zip(("query", "key", "value"), (query, key, value), weights):
        if tuple(w.shape) != (eq, x.shape[-1]):
            raise AssertionError(f"expecting {name} weights shape of {(eq, x.shape[-1])}, but "
                                 f"got {w.shape}")
    for name, b in zip(("query", "key", "value"), biases):
        if b is not None and tuple(b.shape) != (eq,):
            raise AssertionError(f"expecting {name} bias shape of {(eq,)}, but got {b.shape}")


def _merge_key_padding(attn_mask, key_padding_mask, bsz, num_heads, src_len):
    """attn_mask (None, (1 or bsz*heads, L, S)) plus the float key padding mask repeated per head
    as (bsz*heads, 1, S)."""
    if key_padding_mask is None:
        return attn_mask
    for axis, want in enumerate((bsz, src_len)):     # PyTorch's messages, one dim at a time
        if key_padding_mask.shape[axis] != want:
            raise AssertionError(f"Expected key_padded_mask.shape[{axis}] to be {want}, but got "
                                 f"{key_padding_mask.shape[axis]}")
    kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
    kpm = kpm.reshape(bsz * num_heads, 1, src_len)
    return kpm if attn_mask is None else attn_mask + kpm


def _pad_last(mask):
    """One more key column that may be attended (mask value 0)."""
    if mask is None:
        return None
    pad = creation.zeros(*mask.shape[:-1], 1, dtype=mask.dtype)
    return _T["cat"]([mask, pad], -1)


def _check_static(t, name, rows, head_dim):
    if t.shape[0] != rows:
        raise AssertionError(f"expecting {name}.size(0) of {rows}, but got {t.shape[0]}")
    if t.shape[2] != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {t.shape[2]}")
    return t
