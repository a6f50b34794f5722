# tapegrad._ops_nn: nn.functional: softmax, losses, normalisation, ....
# One extension module of the compiled core (_core.pyx describes the layering): it cimports the
# modules below it and registers its ops into the core's op table when it loads.

include "module_prelude.pxi"
from tapegrad._ops_unary cimport *
from tapegrad._ops_shape cimport *
from tapegrad._ops_inplace cimport setitem_op

from tapegrad._core import (NN_FUNCTIONS, TENSOR_METHODS, TORCH_FUNCTIONS, div, log, sub,
                            register_edges)
from tapegrad._ops_unary import gt
from tapegrad._ops_reduce import mean, prod, var

include "ops_nn.pxi"
include "ops_nn_kernels.pxi"
