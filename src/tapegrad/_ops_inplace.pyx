# tapegrad._ops_inplace: in-place ops and x[key] = value.
# One extension module of the compiled core (_core.pyx describes the layering): it cimports the
# modules below it and registers its ops into the core's op table when it loads.

include "module_prelude.pxi"
from tapegrad._ops_shape cimport *

import sys as _sys

from tapegrad._core import TENSOR_METHODS

include "ops_inplace.pxi"
