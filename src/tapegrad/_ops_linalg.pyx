# tapegrad._ops_linalg: matmul and friends, and the faster layout of A @ W^T.
# One extension module of the compiled core (_core.pyx describes the layering): it cimports the
# modules below it and registers its ops into the core's op table when it loads.

include "module_prelude.pxi"
from tapegrad._ops_unary cimport *
from tapegrad._ops_inplace cimport *
from tapegrad._ops_shape cimport overlaps_itself, overlapping_write_message, view_result

from tapegrad._core import NN_FUNCTIONS, TENSOR_METHODS, TORCH_FUNCTIONS, register_edges

include "matmul_layout.pxi"
include "ops_linalg.pxi"
