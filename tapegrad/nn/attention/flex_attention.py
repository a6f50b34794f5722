"""tapegrad.nn.attention.flex_attention: attention with a user score_mod and mask_mod.

flex_attention(q, k, v, score_mod, block_mask) computes

    softmax(where(mask_mod(b, h, q_idx, kv_idx), score_mod(q k^T * scale, b, h, q_idx, kv_idx),
                  -inf)) v

as PyTorch's eager (CPU) implementation does: the scores in float32 (float64 for float64 queries),
the probabilities cast to the query's dtype before the product with v, a fully masked query row
giving zeros (and a logsumexp of -inf).  PyTorch vmaps score_mod and mask_mod over the four index
tensors, so each call sees 0-d tensors; here they are called once on broadcasting index grids
(b of shape (B, 1, 1, 1), h (1, H, 1, 1), q_idx (1, 1, M, 1), kv_idx (1, 1, 1, N), int64 as
PyTorch's aranges), which gives the same elementwise results for the tensor ops, comparisons,
torch.where and indexing into captured tensors that mods are written with, in one call per op
instead of one per element.  Everything is composed of differentiable tapegrad ops, so gradients
reach q, k, v and any tensor a score_mod captures (a learned bias table); PyTorch's CPU kernel
refuses backward, its CUDA kernel supports it, and these gradients are the CUDA kernel's.

The block structure of a BlockMask (kv_num_blocks, kv_indices, the full blocks and their
transposes) is kept as PyTorch keeps it, for scripts that print or inspect it; as in PyTorch's
eager path, the values come from its mask_mod evaluated on every element.
"""
from __future__ import annotations

import functools
import inspect
import itertools
import math
import operator
import warnings
from enum import Enum
from typing import Callable, NamedTuple

import numpy as _np

import tapegrad as _tg

__all__ = [
    "BlockMask",
    "flex_attention",
    "AuxOutput",
    "AuxRequest",
    "FlexKernelOptions",
    "create_block_mask",
    "create_mask",
    "or_masks",
    "and_masks",
    "noop_mask",
]

Tensor = _tg.Tensor

_score_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]
_mask_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]

_DEFAULT_SPARSE_BLOCK_SIZE = 128
_LARGE_SPARSE_BLOCK_SIZE = 1 << 30

# PyTorch's debug switch (it skips its internal compile); accepted, changes nothing here.
_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG = False

_WARNINGS_SHOWN: set = set()


def _warn_once(warning_id: str, message: str, category=UserWarning) -> None:
    """PyTorch warns each of its flex_attention warnings once per process (not while compiling)."""
    if warning_id not in _WARNINGS_SHOWN:
        if not _tg.compiler.is_compiling():
            warnings.warn(message, category, stacklevel=3)
        _WARNINGS_SHOWN.add(warning_id)


class FlexKernelOptions(dict):
    """PyTorch's TypedDict of kernel tuning options (BLOCK_M, PRESCALE_QK, BACKEND, ...): a plain
    dict; the CPU computation takes none of them."""


class AuxRequest(NamedTuple):
    """Which auxiliary outputs flex_attention returns (return_aux=)."""
    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """The auxiliary outputs of flex_attention (None where not requested)."""
    lse: Tensor | None = None
    max_scores: Tensor | None = None


class _ModificationType(Enum):
    SCORE_MOD = 1
    MASK_MOD = 2
    UNKNOWN = 3


def _get_mod_type(fn) -> _ModificationType:
    """A function of 5 positional parameters (without defaults) is a score_mod, of 4 a
    mask_mod, as PyTorch tells them apart."""
    if hasattr(fn, "__code__"):
        code = fn.__code__
        defaults = getattr(fn, "__defaults__", None) or ()
        num_positional_args = code.co_argcount - len(defaults)
    else:
        num_positional_args = sum(1 for p in inspect.signature(fn).parameters.values()
                                  if p.default is inspect.Parameter.empty)
    if num_positional_args not in (4, 5):
        raise AssertionError(f"Expected 4 or 5 positional args, got {num_positional_args}")
    return _ModificationType.SCORE_MOD if num_positional_args == 5 else _ModificationType.MASK_MOD


def _identity(score, batch, head, token_q, token_kv):
    return score


def noop_mask(batch, head, token_q, token_kv):
    """Returns a noop mask_mod"""
    return batch.new_ones(size=(), dtype=_tg.bool, device=batch.device)


def _sliced_mask_mod_error(batch, head, token_q, token_kv):
    raise RuntimeError(
        "Cannot use mask_mod from a sliced BlockMask. "
        "When you slice a BlockMask using [], the mask_mod attribute is reset. "
        "You must set it from the original BlockMask's mask_mod.")


def or_masks(*mask_mods):
    """Returns a mask_mod that's the union of provided mask_mods"""
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def or_mask(b, h, q_idx, kv_idx):
        result = b.new_zeros((), dtype=_tg.bool)
        for mask in mask_mods:
            result = result | mask(b, h, q_idx, kv_idx)
        return result

    return or_mask


def and_masks(*mask_mods):
    """Returns a mask_mod that's the intersection of provided mask_mods"""
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def and_mask(b, h, q_idx, kv_idx):
        result = b.new_ones((), dtype=_tg.bool)
        for mask in mask_mods:
            result = result & mask(b, h, q_idx, kv_idx)
        return result

    return and_mask


# -- the mods on index grids -------------------------------------------------------------------

def _index_grids(B: int, H: int, M: int, N: int):
    """b, h, q_idx, kv_idx as int64 aranges shaped to broadcast to (B, H, M, N)."""
    return (_tg.arange(B).view(B, 1, 1, 1), _tg.arange(H).view(1, H, 1, 1),
            _tg.arange(M).view(1, 1, M, 1), _tg.arange(N).view(1, 1, 1, N))


def _as_grid(value, shape, what: str):
    """A mod's result broadcast to the full (B, H, M, N) grid (a mod may return a 0-d tensor,
    or one that ignores some of the indices)."""
    if not isinstance(value, Tensor):
        value = _tg.tensor(value)
    if tuple(value.shape) != shape:
        try:
            value = value.expand(*shape)
        except RuntimeError as e:
            raise RuntimeError(f"{what} must return a scalar per (b, h, q_idx, kv_idx); its "
                               f"result of shape {tuple(value.shape)} does not broadcast to "
                               f"{shape}") from e
    return value


def _vmapped(mod, score):
    """``mod`` vmapped over the index dims as PyTorch's _vmap_for_bhqkv does (kv_idx innermost,
    then q_idx, h, b; a score_mod's score is mapped at every level): each call sees 0-d index
    tensors, so chained indexing of a captured table (``bias[h][q_idx - kv_idx]``) means what it
    means per element."""
    from ...func import vmap
    lead = (0,) if score else ()
    for k in (3, 2, 1, 0):
        mod = vmap(mod, in_dims=lead + tuple(0 if i == k else None for i in range(4)))
    return mod


def _call_mod(mod, score, B, H, M, N):
    """mod's (B, H, M, N) result with PyTorch's per-element (vmapped) semantics.

    The call on broadcasting index grids gives them for elementwise ops, comparisons, where and
    one indexing of a captured table by the indices, and costs a fraction of the vmapped call
    (whose four levels of batching rules cost ~1.5-3 ms per call whatever the mod does).  A
    mod written for 0-d indices may mean something else on grids: chained indexing
    (``bias[h][q_idx - kv_idx]``: on grids the second index meets a grid dim) raises, returns a
    shape that is not the grid's, or (``table[b][0]``) silently other values.  So the grid
    result is checked at a few elements against the mod called on those 0-d indices, and any
    failure or difference runs the vmapped call instead."""
    grid = (B, H, M, N)
    what = "mask_mod" if score is None else "score_mod"
    lead = (score,) if score is not None else ()
    try:
        out = _as_grid(mod(*lead, *_index_grids(B, H, M, N)), grid, what)
        if _matches_per_element(mod, score, out, grid):
            return out
    except (IndexError, RuntimeError, TypeError, ValueError):
        pass
    idx = (_tg.arange(B), _tg.arange(H), _tg.arange(M), _tg.arange(N))
    return _as_grid(_vmapped(mod, score is not None)(*lead, *idx), grid, what)


def _matches_per_element(mod, score, out, grid) -> bool:
    """Whether the grid result ``out`` equals the mod called on 0-d indices at a few elements
    (the corners and an interior point: a chained index reads other table entries there)."""
    B, H, M, N = grid
    points = {(0, 0, 0, 0), (B - 1, H - 1, M - 1, N - 1), (B // 2, (H - 1) // 2, M // 2, N // 3),
              (B - 1, 0, M - 1, 0)}
    expected, got = [], []
    for p in points:
        args = [_tg.tensor(i) for i in p]
        if score is not None:
            args.insert(0, score.detach()[p])
        value = mod(*args)
        if not isinstance(value, Tensor):
            value = _tg.tensor(value)
        if value.dim() != 0:
            return False
        expected.append(value.detach().to(out.dtype))
        got.append(out.detach()[p])
    got, expected = _tg.stack(got), _tg.stack(expected)
    if got.dtype == _tg.bool:
        return bool((got == expected).all())
    # (a tolerance: a vectorised kernel on the grid and a scalar one may round differently;
    # written with elementwise ops, as allclose is not seen by a compiled function's capture)
    close = ((got - expected).abs() <= 1e-6 + 1e-5 * expected.abs()) | (got == expected) | \
        (_tg.isnan(got) & _tg.isnan(expected))
    return bool(close.all())


def _mask_grid(mask_mod, B, H, M, N):
    return _call_mod(mask_mod, None, B, H, M, N)


def create_mask(mod_fn, B, H, Q_LEN, KV_LEN, device=None):
    """The (B, H, Q_LEN, KV_LEN) mask of a mask_mod (its result), or of a score_mod (True where
    it does not give -inf).  B and H of None are 1."""
    B = 1 if B is None else B
    H = 1 if H is None else H
    if _get_mod_type(mod_fn) == _ModificationType.SCORE_MOD:
        out = _call_mod(mod_fn, _tg.zeros(B, H, Q_LEN, KV_LEN), B, H, Q_LEN, KV_LEN)
        return _tg.where(_tg.isneginf(out), False, True)
    return _mask_grid(mod_fn, B, H, Q_LEN, KV_LEN)


# -- the block structure -------------------------------------------------------------------------
# Block maps are small int32 constants (no gradient); they are computed with numpy from the
# mask's values read by .numpy() (so a compiled function that builds a BlockMask runs eagerly
# instead of replaying a stale one).

def _i32(arr) -> Tensor:
    return _tg.from_numpy(_np.ascontiguousarray(arr, dtype=_np.int32))


def _ordered_to_dense_np(num_blocks: _np.ndarray, indices: _np.ndarray, num_cols: int):
    """(..., rows, num_cols) 0/1 int32: each row's first num_blocks[row] indices set."""
    rows, max_entries = indices.shape[-2:]
    valid = _np.arange(max_entries) < num_blocks[..., None]
    cols = _np.where(valid, indices, num_cols)
    dense = _np.zeros(indices.shape[:-1] + (num_cols + 1,), dtype=_np.int32)
    _np.put_along_axis(dense, cols.astype(_np.int64), 1, axis=-1)
    return dense[..., :num_cols]


def _dense_to_ordered_np(dense: _np.ndarray):
    """Each row's count of set blocks and the column order that lists them first (PyTorch's
    stable descending argsort)."""
    dense = dense.astype(_np.int32)
    num = dense.sum(axis=-1, dtype=_np.int32)
    order = _np.argsort(-dense, axis=-1, kind="stable").astype(_np.int32)
    return num, order


def _transpose_ordered(num_blocks: Tensor, indices: Tensor):
    dense = _ordered_to_dense_np(num_blocks.numpy(), indices.numpy(), indices.shape[-1])
    num, order = _dense_to_ordered_np(_np.swapaxes(dense, -2, -1))
    return _i32(num), _i32(order)


class BlockMask:
    """PyTorch's block-sparse description of an attention mask: per row of Q_BLOCK_SIZE queries,
    how many KV_BLOCK_SIZE key blocks are partly (kv_num_blocks / kv_indices) or fully
    (full_kv_num_blocks / full_kv_indices) attended, their transposes for the backward pass,
    the block sizes, the sequence lengths and the mask_mod itself."""

    def __init__(self, seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks,
                 full_kv_indices, q_num_blocks, q_indices, full_q_num_blocks, full_q_indices,
                 BLOCK_SIZE=(_DEFAULT_SPARSE_BLOCK_SIZE, _DEFAULT_SPARSE_BLOCK_SIZE),
                 mask_mod=noop_mask):
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError(
                "full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        if (full_q_num_blocks is None) != (full_q_indices is None):
            raise AssertionError(
                "full_q_num_blocks and full_q_indices must be both provided or omitted")
        self.seq_lengths = seq_lengths
        self.kv_num_blocks = kv_num_blocks
        self.kv_indices = kv_indices
        self.full_kv_num_blocks = full_kv_num_blocks
        self.full_kv_indices = full_kv_indices
        self.q_num_blocks = q_num_blocks
        self.q_indices = q_indices
        self.full_q_num_blocks = full_q_num_blocks
        self.full_q_indices = full_q_indices
        self.BLOCK_SIZE = BLOCK_SIZE
        self.mask_mod = mask_mod

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks, kv_indices, full_kv_num_blocks=None,
                       full_kv_indices=None, BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE,
                       mask_mod=None, seq_lengths=None, compute_q_blocks=True):
        """A BlockMask from its forward (kv) block lists; the q lists are their transposes."""
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError(
                "full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        q_num_blocks = q_indices = full_q_num_blocks = full_q_indices = None
        if compute_q_blocks:
            q_num_blocks, q_indices = _transpose_ordered(kv_num_blocks, kv_indices)
            if full_kv_num_blocks is not None:
                full_q_num_blocks, full_q_indices = _transpose_ordered(full_kv_num_blocks,
                                                                       full_kv_indices)
        if isinstance(BLOCK_SIZE, int):
            BLOCK_SIZE = (BLOCK_SIZE, BLOCK_SIZE)
        mask_mod = mask_mod if mask_mod is not None else noop_mask
        if seq_lengths is None:
            seq_lengths = (kv_indices.shape[-2] * BLOCK_SIZE[0],
                           kv_indices.shape[-1] * BLOCK_SIZE[1])
        return cls(seq_lengths=seq_lengths, kv_num_blocks=kv_num_blocks, kv_indices=kv_indices,
                   full_kv_num_blocks=full_kv_num_blocks, full_kv_indices=full_kv_indices,
                   q_num_blocks=q_num_blocks, q_indices=q_indices,
                   full_q_num_blocks=full_q_num_blocks, full_q_indices=full_q_indices,
                   BLOCK_SIZE=BLOCK_SIZE, mask_mod=mask_mod)

    def as_tuple(self, flatten: bool = True):
        """The BlockMask's fields in PyTorch's order (sequence lengths and block size as two
        ints each when flatten, else as tuples)."""
        seq = tuple(self.seq_lengths) if flatten else (self.seq_lengths,)
        block = tuple(self.BLOCK_SIZE) if flatten else (self.BLOCK_SIZE,)
        return (*seq, self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks,
                self.full_kv_indices, self.q_num_blocks, self.q_indices, self.full_q_num_blocks,
                self.full_q_indices, None, None, None, None, *block, self.mask_mod)

    @property
    def shape(self):
        *batch_dims, _, _ = self.kv_indices.shape
        return tuple(batch_dims) + tuple(self.seq_lengths)

    def numel(self) -> int:
        """Returns the number of elements (not accounting for sparsity) in the mask."""
        return functools.reduce(operator.mul, self.shape, 1)

    def sparsity(self) -> float:
        """Computes the percentage of blocks that are sparse (i.e. not computed)"""
        computed_blocks = int(self.kv_num_blocks.numpy().sum(dtype=_np.int64))
        if self.full_kv_num_blocks is not None:
            computed_blocks += int(self.full_kv_num_blocks.numpy().sum(dtype=_np.int64))
        computed_size = computed_blocks * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1]
        return 100 * (1 - computed_size / self.numel())

    def _dense_np(self):
        dense = _ordered_to_dense_np(self.kv_num_blocks.numpy(), self.kv_indices.numpy(),
                                     self.kv_indices.shape[-1])
        if self.full_kv_num_blocks is not None:
            dense = dense | _ordered_to_dense_np(self.full_kv_num_blocks.numpy(),
                                                 self.full_kv_indices.numpy(),
                                                 self.full_kv_indices.shape[-1])
        return dense

    def to_dense(self) -> Tensor:
        """Returns a dense block that is equivalent to the block mask."""
        return _i32(self._dense_np())

    def to_string(self, grid_size=(20, 20), limit: int = 4) -> str:
        """The block mask drawn with block characters (full, partial, empty), one picture per
        batch and head index, at most `limit` of them."""
        dense_mask = self._dense_np()
        *batch_dims, num_rows, num_cols = dense_mask.shape
        if isinstance(grid_size, int):
            max_rows = max_cols = grid_size
        elif grid_size == -1:
            max_rows, max_cols = num_rows, num_cols
        else:
            max_rows, max_cols = grid_size
        row_step = max(1, -(-num_rows // max_rows))
        col_step = max(1, -(-num_cols // max_cols))

        def create_block_vis(*batch_idx):
            vis = f"{batch_idx}\n"
            cur = dense_mask[batch_idx]
            for r in range(0, num_rows, row_step):
                for c in range(0, num_cols, col_step):
                    percentage = cur[r:r + row_step, c:c + col_step].astype(_np.float32).mean()
                    vis += ("█" if percentage == 1 else " " if percentage == 0 else "░") * 2
                vis += "\n"
            return vis

        total_vis = []
        for idx, batch_idx in enumerate(itertools.product(*[range(i) for i in batch_dims])):
            if idx == limit:
                total_vis.append("...")
                total_vis.append("To print out more, set BlockMask.to_string(limit=N)")
                total_vis.append("You can also index (BlockMask[batch, head]) to choose a "
                                 "specific batch or head")
                break
            total_vis.append(create_block_vis(*batch_idx))
        return "\n".join(total_vis)

    def __str__(self) -> str:
        return (f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, \n"
                + self.to_string().strip() + "\n)")

    def __repr__(self) -> str:
        def shape_or_none(x):
            return x.shape if x is not None else None

        name = getattr(self.mask_mod, "__name__", self.mask_mod)
        return (f"BlockMask(\n"
                f"    kv_num_blocks={self.kv_num_blocks.shape},\n"
                f"    kv_indices={self.kv_indices.shape},\n"
                f"    full_kv_num_blocks={shape_or_none(self.full_kv_num_blocks)},\n"
                f"    full_kv_indices={shape_or_none(self.full_kv_indices)},\n"
                f"    q_num_blocks={shape_or_none(self.q_num_blocks)},\n"
                f"    q_indices={shape_or_none(self.q_indices)},\n"
                f"    full_q_num_blocks={shape_or_none(self.full_q_num_blocks)},\n"
                f"    full_q_indices={shape_or_none(self.full_q_indices)},\n"
                f"    BLOCK_SIZE={self.BLOCK_SIZE},\n"
                f"    shape={self.shape},\n"
                f"    sparsity={self.sparsity():.2f}%,\n"
                f"    mask_mod={name}\n"
                f")")

    def __getitem__(self, index):
        """The BlockMask of some batch / head / query-block rows (an int keeps its dim); its
        mask_mod is reset, as PyTorch's (a sliced mask no longer matches the element indices)."""
        index = (index,) if not isinstance(index, tuple) else index
        padded = (*index, slice(None), slice(None), slice(None))[:3]
        sizes = self.kv_num_blocks.shape[:3]
        index = tuple((slice(i + n, i + n + 1) if -n <= i < 0 else slice(i, i + 1))
                      if isinstance(i, int) else i for i, n in zip(padded, sizes))
        full_num = full_idx = None
        if self.full_kv_num_blocks is not None:
            full_num = self.full_kv_num_blocks[index]
            full_idx = self.full_kv_indices[index]
        return BlockMask.from_kv_blocks(
            self.kv_num_blocks[index], self.kv_indices[index], full_num, full_idx,
            BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=_sliced_mask_mod_error,
            seq_lengths=self.seq_lengths, compute_q_blocks=self.q_indices is not None)

    def _adjust(self, new_q_len: int, new_kv_len: int):
        """The mask cropped to its upper-left (new_q_len, new_kv_len) corner."""
        rows = (new_q_len + self.BLOCK_SIZE[0] - 1) // self.BLOCK_SIZE[0]
        cols = (new_kv_len + self.BLOCK_SIZE[1] - 1) // self.BLOCK_SIZE[1]

        def adjust(num_blocks, indices):
            indices = indices.numpy()[:, :, :rows, :cols]
            num = _np.minimum(num_blocks.numpy()[:, :, :rows], cols)
            num = (indices < num[..., None]).sum(axis=-1)
            return _i32(num), _i32(indices)

        kv_num, kv_idx = adjust(self.kv_num_blocks, self.kv_indices)
        full_num = full_idx = None
        if self.full_kv_num_blocks is not None:
            full_num, full_idx = adjust(self.full_kv_num_blocks, self.full_kv_indices)
        return self.from_kv_blocks(kv_num, kv_idx, full_num, full_idx,
                                   BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=self.mask_mod,
                                   seq_lengths=(new_q_len, new_kv_len),
                                   compute_q_blocks=self.q_indices is not None)

    def to(self, device):
        """The BlockMask on `device` (a new BlockMask; the CPU is the only device)."""
        def move(t):
            return t.to(device) if t is not None else None

        return BlockMask(self.seq_lengths, move(self.kv_num_blocks), move(self.kv_indices),
                         move(self.full_kv_num_blocks), move(self.full_kv_indices),
                         move(self.q_num_blocks), move(self.q_indices),
                         move(self.full_q_num_blocks), move(self.full_q_indices),
                         BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=self.mask_mod)


def _convert_mask_to_block_mask(mask: _np.ndarray, Q_BLOCK_SIZE, KV_BLOCK_SIZE,
                                separate_full_blocks):
    """(partial, full) 0/1 block maps of a bool (B, H, M, N) mask padded to whole blocks;
    full is None unless separate_full_blocks (then partial holds only the partly set blocks)."""
    B, H, M, N = mask.shape
    rows, cols = -(-M // Q_BLOCK_SIZE), -(-N // KV_BLOCK_SIZE)
    padded = _np.zeros((B, H, rows * Q_BLOCK_SIZE, cols * KV_BLOCK_SIZE), dtype=_np.int64)
    padded[:, :, :M, :N] = mask
    sums = padded.reshape(B, H, rows, Q_BLOCK_SIZE, cols, KV_BLOCK_SIZE).sum(axis=(3, 5))
    if separate_full_blocks:
        full = Q_BLOCK_SIZE * KV_BLOCK_SIZE
        return (sums > 0) & (sums < full), sums == full
    return sums > 0, None


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None,
                      BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE, _compile=False,
                      separate_full_blocks=True, compute_dq_write_order=False,
                      dq_kv_order=True):
    """The BlockMask of a mask_mod over (B, H, Q_LEN, KV_LEN) (B, H of None: 1, broadcast)."""
    if _get_mod_type(mask_mod) != _ModificationType.MASK_MOD:
        raise AssertionError(f"create-block_mask requires a mask_mod function! Got {mask_mod}")
    B = 1 if B is None else B
    H = 1 if H is None else H
    if isinstance(BLOCK_SIZE, int):
        Q_BLOCK_SIZE = KV_BLOCK_SIZE = BLOCK_SIZE
    else:
        Q_BLOCK_SIZE, KV_BLOCK_SIZE = BLOCK_SIZE
    if _compile:
        warnings.warn(
            "_compile flag on create_block_mask was originally added to work around a "
            "torch.compile limitation. That limitation has since been addressed. So, to compile "
            "create_block_mask, we suggest doing torch.compile(create_block_mask). This still "
            "works for now, but will be removed in the future.", DeprecationWarning,
            stacklevel=2)
    if not isinstance(dq_kv_order, bool):
        raise ValueError("dq_kv_order must be a bool when using create_block_mask")
    if compute_dq_write_order:
        raise NotImplementedError("compute_dq_write_order (metadata for the CUDA FLASH "
                                  "backend's deterministic backward) is not supported")
    mask = create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device)
    if mask.dtype != _tg.bool:
        raise AssertionError(f"mask.dtype must be torch.bool, got {mask.dtype}")
    partial, full = _convert_mask_to_block_mask(mask.numpy(), Q_BLOCK_SIZE, KV_BLOCK_SIZE,
                                                separate_full_blocks)
    kv_num, kv_idx = _dense_to_ordered_np(partial)
    full_num = full_idx = None
    if full is not None:
        full_num, full_idx = (_i32(a) for a in _dense_to_ordered_np(full))
    return BlockMask.from_kv_blocks(_i32(kv_num), _i32(kv_idx), full_num, full_idx,
                                    BLOCK_SIZE=(Q_BLOCK_SIZE, KV_BLOCK_SIZE),
                                    mask_mod=mask_mod, seq_lengths=(Q_LEN, KV_LEN))


def _create_empty_block_mask(query, key) -> BlockMask:
    """The BlockMask flex_attention uses when given none: one block covering everything.
    (Its transposed q lists are the same single block: written directly, not transposed with
    numpy, so that a compiled function calling flex_attention without a mask replays.)"""
    def one():
        return _tg.ones([1, 1, 1], dtype=_tg.int32)

    def zero():
        return _tg.zeros([1, 1, 1, 1], dtype=_tg.int32)
    return BlockMask((1, 1), one(), zero(), None, None, one(), zero(), None, None,
                     BLOCK_SIZE=(_LARGE_SPARSE_BLOCK_SIZE, _LARGE_SPARSE_BLOCK_SIZE))


# -- flex_attention ------------------------------------------------------------------------------

def _check_inputs(query, key, value, block_mask, enable_gqa):
    """PyTorch's checks of flex_attention's arguments, in its order, with its messages."""
    for t in (query, key, value):
        if not isinstance(t, Tensor):       # (PyTorch's first look at them: t.is_nested)
            raise AttributeError(f"'{type(t).__name__}' object has no attribute 'is_nested'")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise ValueError(
            f"Expected query, key, and value to all be  at least 2 dimensional, but got "
            f"query.dim: {query.dim()}, key.dim: {key.dim()} and value.dim: {value.dim()} "
            f"instead.")
    if query.size(-1) != key.size(-1):
        raise ValueError(f"Expect query and key/value to have the same embedding dimension "
                         f"but got E={query.size(-1)} and E={key.size(-1)}.")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise NotImplementedError("NYI: query, key, and value must be 4D tensors")
    if (not enable_gqa) and query.size(-3) != key.size(-3):
        raise ValueError(f"Expect query and key/value to have the same number of heads "
                         f"but got Hq={query.size(-3)} and Hkv={key.size(-3)}. "
                         f"Try setting enable_gqa=True for GQA.")
    if enable_gqa and query.size(1) % key.size(1) != 0:
        raise ValueError(f"Expect number of query heads to be a multiple of kv heads for GQA "
                         f"but got Hq={query.size(1)} and Hkv={key.size(1)}.")
    if query.size(0) != key.size(0):
        if block_mask is None:
            raise ValueError(
                f"Expect query and key/value to have the same batch size, or non-none "
                f"block_mask, but got block_mask=None, Bq={query.size(0)}, and "
                f"Bkv={key.size(0)}.")
        if block_mask.kv_num_blocks.size(0) != query.size(0):
            raise ValueError(
                f"Expect query and key/value to have the same batch size, or block_mask and "
                f"query to have the same batch size, but got Bq={query.size(0)}, "
                f"Bkv={key.size(0)}, B_block_mask={block_mask.kv_num_blocks.size(0)}.")


def _check_block_mask_lengths(block_mask, query, key):
    if block_mask.BLOCK_SIZE[0] == _LARGE_SPARSE_BLOCK_SIZE and \
            block_mask.BLOCK_SIZE[1] == _LARGE_SPARSE_BLOCK_SIZE:
        return          # (the "no mask" BlockMask fits every length)
    q_len, kv_len = block_mask.shape[-2], block_mask.shape[-1]
    L, S = query.size(-2), key.size(-2)
    if L > q_len or S > kv_len:
        raise ValueError(
            f"block_mask was created for block_mask.shape={block_mask.shape} but got "
            f"q_len={L} and kv_len={S}. As the block mask was created for a smaller length "
            f"than you're using it for, you likely need to create a new block mask.")
    if (L < q_len and S <= kv_len) or (L <= q_len and S < kv_len):
        raise ValueError(
            f"block_mask was created for block_mask.shape={block_mask.shape} but got "
            f"q_len={L} and kv_len={S}. As the block mask was created for a larger length than "
            f"you're using it for, you can either 1. create a new block mask with the correct "
            f"length, or 2. 'adjust' the existing block mask to the correct length by calling "
            f"block_mask._adjust(q_len, kv_len). This essentially 'crops' the block mask to the "
            f"upper left corner, which does not work for all mask_mods!")


def _score_mod_dtype(score_mod, working):
    """The dtype PyTorch's vmapped score_mod returns.  Under vmap every argument is a 0-d
    tensor, so a captured 0-d tensor takes part in type promotion as an equal (score * a float64
    0-d tensor is float64), where on the index grids the dimensioned score would win: one call
    on 0-d zeros gives PyTorch's dtype.  (Not under no_grad: a view of a captured tensor that
    requires grad taken under no_grad would make a compiled caller run eagerly; the probe's few
    records are dropped with it.)"""
    zero = _tg.zeros((), dtype=_tg.int64)
    probe = score_mod(_tg.zeros((), dtype=working), zero, zero, zero, zero)
    return probe.dtype if isinstance(probe, Tensor) else working


def _fill_order_like(query):
    """PyTorch lays the output out in the query's stride order (its _permute_strides), with the
    last dim innermost: that order outermost first, or None for the row-major one."""
    strides = query.stride()
    fill = sorted(range(4), key=strides.__getitem__)        # innermost first (stable)
    if fill[0] != 3:
        fill.remove(3)
        fill = [3] + fill
    order = tuple(reversed(fill))
    return None if order == (0, 1, 2, 3) else order


def _attention(query, key, value, score_mod, mask_mod, scale):
    """(out, lse): PyTorch's math_attention, from differentiable ops."""
    working = _tg.float64 if query.dtype == _tg.float64 else _tg.float32
    G = query.size(1) // key.size(1)
    if G > 1:
        key = _tg.repeat_interleave(key, G, dim=1)
        value = _tg.repeat_interleave(value, G, dim=1)
    Bq, Bkv = query.size(0), key.size(0)
    if not (Bq == Bkv or (Bq > 1 and Bkv == 1)):
        raise RuntimeError(f"Bq and Bkv must broadcast. Got Bq={Bq} and Bkv={Bkv}")
    key = key.expand(Bq, *key.shape[1:])
    value = value.expand(Bq, *value.shape[1:])

    scores = _tg.matmul(query.to(working), key.to(working).transpose(-2, -1))
    scores = (scores * scale).to(working)
    B, H, M, N = scores.shape
    if score_mod is not _identity:
        modded = _call_mod(score_mod, scores, B, H, M, N)
        dtype = _score_mod_dtype(score_mod, working)
        scores = modded if modded.dtype == dtype else modded.to(dtype)
    if mask_mod is not noop_mask:
        allowed = _mask_grid(mask_mod, B, H, M, N)
        scores = _tg.where(allowed, scores, _tg.tensor(-math.inf, dtype=working))
    # A row with nothing to attend (every score -inf) gives zeros and a logsumexp of -inf, as
    # PyTorch's _safe_softmax; decided with tensor ops, so a compiled replay decides it anew.
    dead = _tg.isneginf(scores).all(dim=-1, keepdim=True)
    finite = _tg.where(dead, _tg.zeros((), dtype=scores.dtype), scores)
    probs = _tg.softmax(finite, dim=-1) * _tg.logical_not(dead)
    lse = _tg.where(dead.squeeze(-1), _tg.tensor(-math.inf, dtype=scores.dtype),
                    _tg.logsumexp(finite, dim=-1))
    # (PyTorch's kernel returns the base-2 logsumexp and scales it back by ln 2: the same
    # rounding here)
    lse = lse / math.log(2) * math.log(2)
    out = _tg.matmul(probs.to(query.dtype), value.to(query.dtype))
    return out, lse


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None,
                   enable_gqa=False, return_lse=False, kernel_options=None, *, return_aux=None):
    """Scaled dot product attention with a score_mod(score, b, h, q_idx, kv_idx) applied to each
    score and a BlockMask (its mask_mod(b, h, q_idx, kv_idx)) choosing which keys a query sees.

    query (B, Hq, L, E), key (B, Hkv, S, E), value (B, Hkv, S, Ev) -> (B, Hq, L, Ev); with
    enable_gqa each key/value head serves Hq // Hkv query heads.  return_lse (deprecated) or
    return_aux=AuxRequest(lse=True) also return the logsumexp of each query's scores (B, Hq, L),
    in float32 (float64 for float64 queries)."""
    _check_inputs(query, key, value, block_mask, enable_gqa)
    if score_mod is None:
        score_mod = _identity
    if block_mask is None:
        block_mask = _create_empty_block_mask(query, key)
    if getattr(block_mask, "mask_mod", None) is _sliced_mask_mod_error:
        raise RuntimeError("Cannot use mask_mod from a sliced BlockMask")
    _check_block_mask_lengths(block_mask, query, key)
    if scale is None:
        scale = 1.0 / math.sqrt(query.size(-1))
    if return_lse and return_aux is not None:
        raise ValueError("Cannot specify both return_lse and return_aux. return_lse is "
                         "deprecated, please use return_aux=AuxRequest(lse=True) instead.")
    if return_lse:
        _warn_once("deprecated_return_lse",
                   "return_lse is deprecated and will be removed in v2.10. Please use "
                   "return_aux=AuxRequest(lse=True) instead.", category=FutureWarning)
    options = dict(kernel_options or {})
    if "BACKEND" in options and options.get("FORCE_USE_FLEX_ATTENTION", False):
        raise RuntimeError(
            "BACKEND cannot be combined with legacy FORCE_USE_FLEX_ATTENTION. BACKEND supersedes "
            "the legacy knob; please drop FORCE_USE_FLEX_ATTENTION and only specify the desired "
            "BACKEND.")
    backends = ("AUTO", "TRITON", "FLASH", "TRITON_DECODE")
    if "BACKEND" in options and options["BACKEND"] not in backends:
        raise ValueError(f"Invalid BACKEND value '{options['BACKEND']}'. Must be one of "
                         f"{backends}")
    for internal in ("OUTPUT_LOGSUMEXP", "OUTPUT_MAX"):
        if internal in options:
            raise AssertionError(f"{internal} must not be in kernel_options")
    if return_aux is not None and return_aux.max_scores:
        if options.get("BACKEND") == "FLASH":
            raise NotImplementedError(
                "Returning max scores is not supported with BACKEND='FLASH'. Use "
                "return_aux=AuxRequest(lse=True) or omit max_scores.")
        raise NotImplementedError("Returning max scores is not supported on CPU/MPS.")
    if not _FLEX_ATTENTION_DISABLE_COMPILE_DEBUG:
        _warn_once(
            "flex_attention_performance",
            "flex_attention called without torch.compile() - this will use an unfused "
            "implementation that materializes the full scores matrix instead of generating a "
            "fused kernel.\n\nSOLUTION: Use torch.compile(flex_attention)(...)\n\nIf you want "
            "to debug your score_mod/mask_mod, you can set:\n"
            "torch.nn.attention.flex_attention._FLEX_ATTENTION_DISABLE_COMPILE_DEBUG = True\n\n"
            "This will allow you to use print statements or breakpoints. Note: This doesn't "
            "work with the backwards pass and may produce incorrect results.")

    order = _fill_order_like(query)
    out, lse = _attention(query, key, value, score_mod, block_mask.mask_mod, scale)
    if order is not None:
        inverse = tuple(sorted(range(4), key=order.__getitem__))
        out = out.permute(*order).contiguous().permute(*inverse)
    want_lse = return_lse or (return_aux is not None and return_aux.lse)
    if return_aux is not None:
        return out, AuxOutput(lse=lse if want_lse else None, max_scores=None)
    if return_lse:
        return out, lse
    return out
