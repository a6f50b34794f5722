# tapegrad._ops_unary: math functions, activations, clamp, where, comparisons, conversions; log10,
# sinh, ..., rounding, atan2, fmod, remainder, floor_divide.
# One extension module of the compiled core (_core.pyx describes the layering): it cimports the
# modules below it and registers its ops into the core's op table when it loads.

include "module_prelude.pxi"

from tapegrad._ops_shape cimport overlaps_itself, overlapping_write_message

from tapegrad._core import _iterator_layout as _core_iterator_layout
from tapegrad._core import (NN_FUNCTIONS, TENSOR_METHODS, TORCH_FUNCTIONS, neg, relu, tanh,
                            tensor_from_numpy)

include "ops_unary.pxi"
include "ops_math.pxi"
