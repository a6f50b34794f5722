# tapegrad._ops_reduce: reductions.
# One extension module of the compiled core (_core.pyx describes the layering): it cimports the
# modules below it and registers its ops into the core's op table when it loads.

include "module_prelude.pxi"
from tapegrad._ops_unary cimport *
from tapegrad._ops_shape cimport values_at_positions, dim_not_given, axis_alias

from tapegrad._core import TENSOR_METHODS, TORCH_FUNCTIONS
from tapegrad import _core as _core_module     # (a Python-level helper: the default thread count)

include "ops_reduce.pxi"
