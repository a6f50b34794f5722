"""The ``out=`` keyword of the public functions that take it in PyTorch (``torch.tanh(x, out=y)``,
``torch.cat(ts, out=y)``, ``torch.max(x, 1, out=(values, indices))`` ...).

One mechanism for all of them: the function is wrapped once, in the public functions' entry
(tapegrad/_public_calls.py's `install`, given OUT_FUNCTIONS for the tapegrad namespace), and a
call with ``out`` computes the result as usual and hands it to the core's ``write_out``
(src/tapegrad/ops_inplace.pxi), which applies PyTorch's rules: refused when grad mode is on and an argument requires grad, each result
cast to its out tensor's dtype when the cast is "same kind" (else "result type Float can't be cast
to the desired output type Long"), out resized to the result's shape (with PyTorch's deprecation
warning unless it was empty), out's version bumped.  A call without ``out`` goes straight to the
function.

The names are the public functions whose PyTorch signature has ``out`` (read from torch 2.13's
signatures when this list was written); those of them that already take ``out`` themselves (the
core's add, mul, matmul ...) are left alone.
"""
from __future__ import annotations

import numpy as np

from . import _core

# torch functions with an out= variant (elementwise math, comparisons, reductions along a dim,
# products, joins, factories ...).
OUT_FUNCTIONS = """
abs absolute acos acosh addcdiv addcmul addmm all amax amin aminmax any arange arccos arccosh
arcsin arcsinh arctan arctan2 arctanh argmax argmin asin asinh atan atan2 atanh baddbmm
bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor bmm cat
ceil clamp clamp_max clamp_min clip column_stack concat concatenate cos cosh cumprod cumsum diag
diff divide dot dstack empty eq erf exp expm1 eye fix floor floor_divide fmod frac full gather ge ger
greater greater_equal gt histc histogram hstack index_add index_copy index_select isneginf isposinf le lerp
less less_equal linspace log log10 log1p log2 logaddexp logical_and logical_not logical_or
logical_xor logspace logsumexp lt masked_select matrix_power max maximum mean median min minimum
mm mode msort multiply mv nan_to_num nanmean nanmedian nansum ne neg negative norm not_equal ones
outer pow prod reciprocal remainder round row_stack rsqrt sgn sigmoid sign signbit sin sinh sort
sqrt square stack std subtract sum tan tanh topk tril triu true_divide trunc var vstack where
xlogy zeros
""".split()

# Functions whose out tensor's dtype is the dtype they compute in (PyTorch passes it as their
# dtype): the factories, and the sums and products (torch.sum(x_float, 1, out=long) sums the
# values cast to long).
DTYPE_FROM_OUT = frozenset("""
arange empty eye full linspace logspace ones zeros sum prod nansum cumsum cumprod
""".split())


# -- for functions written in Python that handle out= themselves -------------------------------

def compute_then_write(name: str, out, operands, compute):
    """compute() run without recording, its result (a tensor, or a tuple matching a tuple `out`)
    written into out by the core's write_out (refused if an operand or out requires grad while
    grad mode is on); returns out."""
    return _core._write_out(name, out, tuple(operands), lambda *_: compute(), None)


def write_into(name: str, out, result):
    """result's values in out (cast to out's dtype, out resized to result's shape)."""
    return _core._write_out(name, out, (), lambda: result, None)


def require_dtype(name: str, out, np_dtype, label: str = "Long") -> None:
    """Ops whose out must have one exact dtype (nonzero's Long indices)."""
    if isinstance(out, _core.TensorBase) and out._array.dtype != np.dtype(np_dtype):
        raise RuntimeError(f"{name}: Expected out tensor to have scalar type {label} but got "
                           f"scalar type{_core.scalar_type_name_of(out._array.dtype)}")
