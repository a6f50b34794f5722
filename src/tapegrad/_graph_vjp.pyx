# tapegrad._graph_vjp: recorded (differentiable) VJPs and the sweep for create_graph=True.
# One extension module of the compiled core (_core.pyx describes the layering): it cimports the
# modules below it and registers its ops into the core's op table when it loads.

include "module_prelude.pxi"
from tapegrad._ops_unary cimport *
from tapegrad._ops_reduce cimport *
from tapegrad._ops_shape cimport *
from tapegrad._ops_inplace cimport *
from tapegrad._ops_linalg cimport *
from tapegrad._ops_nn cimport *

from tapegrad._core import _grad_creation_dtype, _name_grad_fn, div, log, neg
from tapegrad._ops_unary import (abs_, cos, cosh, erf, gt, log1p, reciprocal, sigmoid, sign, sin,
                                sinh, softplus, sqrt, where)
from tapegrad._ops_shape import cat, clone, contiguous, expand, t, transpose, unsqueeze
from tapegrad._ops_linalg import matmul, tril, triu

include "graph_vjp.pxi"
