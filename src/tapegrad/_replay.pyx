# tapegrad._replay: tapegrad.compile: a captured call replayed in C.
# One extension module of the compiled core (_core.pyx describes the layering): it cimports the
# modules below it and registers its ops into the core's op table when it loads.

include "module_prelude.pxi"
from tapegrad._ops_reduce cimport *
from tapegrad._ops_linalg cimport *

from tapegrad._core import _function_record, _grad, _grad_fn_name_of
from tapegrad._core import modified_in_place_error
from tapegrad._core import _set_grad_enabled

include "replay.pxi"
include "fusion.pxi"
