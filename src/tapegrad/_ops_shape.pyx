# tapegrad._ops_shape: reshape, transpose, cat, split, ...; indexing, gather, index_select,
# masked_fill.
# One extension module of the compiled core (_core.pyx describes the layering): it cimports the
# modules below it and registers its ops into the core's op table when it loads.

include "module_prelude.pxi"

from tapegrad._core import TENSOR_METHODS, TORCH_FUNCTIONS, _real_parts, _name_grad_fn

include "ops_shape.pxi"
include "ops_index.pxi"
