"""CPU autocast: which ops cast their inputs, to what, and the cast itself.

PyTorch's CPU autocast (aten/src/ATen/autocast_mode.cpp, ``AutocastCPU``) gives some ops a
cast policy; every other op runs in its inputs' dtypes:

- lower_precision_fp: the op runs in the autocast dtype (``get_autocast_dtype('cpu')``): its
  floating tensor arguments are cast to it (matmuls, convolutions, linear, prelu, attention);
- fp32: its floating arguments are cast to float32 (losses, norms, decompositions, FFTs, ...);
- promote: its floating arguments are cast to the widest floating dtype among them (cat, stack,
  index_copy).

A tensor is cast only if it is a floating-point tensor other than float64 (PyTorch's
``is_eligible``: float64, integer, bool and complex tensors pass as they are).  Each cast is
``tensor.to(dtype)``, recorded on the graph as any other (a float32 parameter gets a float32
``.grad``, through ToCopyBackward0), and the op then runs with autocast off for its own inner
calls, as PyTorch's autocast kernel excludes its dispatch key.

Where the policy is applied: each public entry (src/tapegrad/out_arg_call.h: tapegrad.*,
nn.functional.*, linalg.*, fft.*, and Tensor's methods) carries its op's policy, found in
``POLICIES`` by namespace and name when the entry is made (tapegrad/_public_calls.py).  While
autocast is on in a thread, a call of an entry with a policy comes to :func:`autocast_call`;
outside autocast the cost is the entry's test of its policy byte (and, for a listed op, of one
thread-local flag).  ``Tensor.__matmul__`` goes through the public matmul's entry while any
thread autocasts (ops_inplace.pxi).

The weight cache: a lower-precision cast of a float32 leaf that requires grad (a parameter) is
kept until the outermost autocast region exits (``clear_autocast_cache``), so a weight used by
several ops in one forward is cast once, as PyTorch's cache (``cache_enabled``).

bfloat16: tapegrad's casts go through ``tensor.to``; while tapegrad has no bfloat16 tensors,
the first op that would cast to bfloat16 raises NotImplementedError naming the autocast (a
region that reaches no such op runs).
"""
from __future__ import annotations as _annotations

import contextlib
import weakref

from . import _core

LOWER_PRECISION_FP = 1
FP32 = 2
PROMOTE = 3

# PyTorch's AutocastCPU registrations, by the namespace tapegrad exposes each op in (None: the
# top-level namespace; "Tensor": its methods).  Ops with no public spelling (_convolution,
# _addmm_activation, mkldnn_rnn_layer, _native_multi_head_attention, the pad kernels that
# F.pad reaches) are not listed: nothing calls them by name.
_LISTS = {
    LOWER_PRECISION_FP: {
        None: "conv1d conv2d conv3d bmm mm baddbmm addmm addbmm matmul conv_tbc "
              "conv_transpose1d conv_transpose2d conv_transpose3d prelu",
        "nn.functional": "linear conv1d conv2d conv3d conv_transpose1d conv_transpose2d "
                         "conv_transpose3d prelu scaled_dot_product_attention",
        # (linalg.matmul is matmul under another name)
        "linalg": "vecdot matmul",
        "Tensor": "matmul mm bmm baddbmm addmm addbmm prelu",
    },
    FP32: {
        None: "prod quantile nanquantile stft cdist trace cholesky cholesky_inverse "
              "cholesky_solve inverse lu_solve orgqr ormqr pinverse geqrf qr svd "
              "triangular_solve polar view_as_complex binary_cross_entropy_with_logits kl_div "
              "cosine_embedding_loss hinge_embedding_loss poisson_nll_loss "
              "margin_ranking_loss triplet_margin_loss ctc_loss grid_sampler "
              "grid_sampler_2d grid_sampler_3d max_pool3d fake_quantize_per_tensor_affine",
        "nn.functional": "avg_pool3d max_pool3d max_unpool2d max_unpool3d adaptive_avg_pool3d "
                         "adaptive_max_pool3d fractional_max_pool2d fractional_max_pool3d "
                         "binary_cross_entropy grid_sample mse_loss cosine_embedding_loss "
                         "nll_loss hinge_embedding_loss poisson_nll_loss smooth_l1_loss "
                         "cross_entropy l1_loss huber_loss margin_ranking_loss "
                         "soft_margin_loss triplet_margin_loss multi_margin_loss ctc_loss "
                         "kl_div multilabel_margin_loss binary_cross_entropy_with_logits",
        "fft": "fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn irfftn hfft ihfft",
        "linalg": "cond matrix_rank solve cholesky svdvals eigvals eigvalsh inv "
                  "householder_product tensorinv tensorsolve qr cholesky_ex svd eig eigh "
                  "lstsq inv_ex",
        "Tensor": "prod quantile nanquantile stft trace cholesky cholesky_inverse "
                  "cholesky_solve inverse lu_solve orgqr ormqr pinverse geqrf qr svd "
                  "triangular_solve",
    },
    PROMOTE: {
        None: "stack cat index_copy",
        "Tensor": "index_copy",
    },
}

POLICIES: dict = {(namespace, name): policy
                  for policy, spaces in _LISTS.items()
                  for namespace, names in spaces.items()
                  for name in names.split()}


def policy_of(module: str | None, name: str) -> int:
    """The policy of the public function `name` of `module` ("tapegrad", "tapegrad.linalg",
    ..., or "Tensor" for a method), 0 when it has none."""
    if module is not None and module != "Tensor":
        module = None if module == "tapegrad" else module.removeprefix("tapegrad.")
    return POLICIES.get((module, name), 0)


# -- the state the handler reads (tapegrad/_settings.py owns it) -------------------------------------

def _autocast_dtype():
    from ._settings import get_autocast_dtype
    return get_autocast_dtype("cpu")


# -- the cast ------------------------------------------------------------------------------------

def _eligible(t) -> bool:
    """PyTorch's is_eligible: a floating-point tensor other than float64."""
    return isinstance(t, _core.TensorBase) and t.is_floating_point() and \
        t.dtype is not _core.float64


# id(source) -> (weakref to the source, its cast): PyTorch's cached_casts
_cache: dict = {}


def clear_cache() -> None:
    """Drop the cached weight casts (the outermost autocast region's exit)."""
    _cache.clear()


def _cacheable(t, dtype, lower) -> bool:
    # (as PyTorch's: a cast made under no_grad, which records no ToCopyBackward0, is not kept,
    # or the region's later uses of the weight would give it no gradient)
    from ._settings import is_autocast_cache_enabled
    return (dtype is lower and t.dtype is _core.float32 and t.requires_grad and t.is_leaf
            and not t._is_view() and is_autocast_cache_enabled() and _core.is_grad_enabled())


def _to(t, dtype, name: str):
    try:
        return t.to(dtype)
    except TypeError as e:
        if dtype is not _core.bfloat16:
            raise
        if _core._subclass_dispatch_set_off(None):
            # a listed op inside a bfloat16 op's run on its float32 storage (inner's mm):
            # the storage stands for bfloat16 values, and the bfloat16 op rounds its result
            return t
        raise NotImplementedError(
            f"torch.autocast('cpu', dtype=torch.bfloat16) would run {name} in torch.bfloat16, "
            f"which tapegrad cannot yet ({e}); use dtype=torch.float16, or enabled=False"
        ) from None


def _cast(t, dtype, lower, name: str):
    if not _eligible(t) or t.dtype is dtype:
        return t
    if not _cacheable(t, dtype, lower):
        return _to(t, dtype, name)
    entry = _cache.get(id(t))
    if entry is not None and entry[0]() is t:
        return entry[1]
    cast = _to(t, dtype, name)
    _cache[id(t)] = (weakref.ref(t), cast)
    return cast


def _cast_value(value, dtype, lower, name: str):
    """value with its eligible tensors cast (also those in a list or tuple argument)."""
    if isinstance(value, _core.TensorBase):
        return _cast(value, dtype, lower, name)
    if isinstance(value, (list, tuple)) and any(_eligible(v) for v in value):
        return type(value)(_cast(v, dtype, lower, name) for v in value)
    return value


def _widest(values, lower):
    """PyTorch's promote_type (autocast_mode.h, prioritize): the eligible tensors (in the
    arguments or their lists), in order, from the lower-precision dtype: float32 once any is
    float32; the lower dtype while all are of it; a float16 among bfloat16 (or the reverse)
    before any float32 raises, as PyTorch's does (stack of two float16 tensors under a bfloat16
    autocast, fuzz 66600126)."""
    current = lower
    for value in values:
        for v in (value if isinstance(value, (list, tuple)) else (value,)):
            if not _eligible(v):
                continue
            if current is _core.float32 or v.dtype is _core.float32:
                current = _core.float32
            elif v.dtype is not lower:
                raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return current


def autocast_call(entry, policy: int, args: tuple, kwargs: dict):
    """entry(*args, **kwargs) under its autocast policy, with autocast off for its inner calls
    (out_arg_call.h calls this for a listed entry while this thread autocasts)."""
    # (an op given out= is not autocast-eligible, as PyTorch documents: it runs in its operands'
    # dtypes, torch.mm(a32, b32, out=o32) computing in float32 and a float16 out refused by
    # mm's dtype check; cast, it returned a float16 tensor that was not out, fuzz 66900188)
    if kwargs.get("out") is None:
        lower = _autocast_dtype()
        if policy == LOWER_PRECISION_FP:
            dtype = lower
        elif policy == FP32:
            dtype = _core.float32
        else:
            dtype = _widest((*args, *kwargs.values()), lower)
        name = entry.name
        args = tuple(_cast_value(a, dtype, lower, name) for a in args)
        if kwargs:
            kwargs = {k: _cast_value(v, dtype, lower, name) for k, v in kwargs.items()}
    _core._exclude_autocast(True)
    try:
        return entry(*args, **kwargs)
    finally:
        _core._exclude_autocast(False)


# -- compositions: what PyTorch's decomposition of an op reaches ----------------------------------
# An op PyTorch composes of others in C++ (einsum, tensordot, bilinear) is cast where, and only
# where, its decomposition calls a listed op; tapegrad's own composition may call other ops, so
# such an op says what PyTorch's reaches.

def lower_precision_operands(name: str, *tensors) -> tuple:
    """The operands of a listed lower-precision op (bmm, mm) inside a composition, cast as
    PyTorch's dispatcher casts them while this thread autocasts (unchanged when it does not);
    also the recurrent layers' lstm, rnn_tanh and rnn_relu, which PyTorch's CPU autocast runs in
    the autocast dtype from internal calls no entry sees (gru it leaves alone)."""
    if not _core._set_autocast_on(None):
        return tensors
    lower = _autocast_dtype()
    return tuple(_cast(t, lower, lower, name) for t in tensors)


@contextlib.contextmanager
def uncast():
    """The calls inside are not cast: a composition whose PyTorch decomposition reaches no
    listed op (bilinear's _trilinear, a full tensordot's dot) runs in its inputs' dtypes."""
    if not _core._set_autocast_on(None):
        yield
        return
    _core._exclude_autocast(True)
    try:
        yield
    finally:
        _core._exclude_autocast(False)


def install(matmul_entry) -> None:
    """Route listed entries' calls under autocast here (called once, by tapegrad/__init__)."""
    _core._set_autocast_handler(autocast_call, matmul_entry)
