# tapegrad._graph_vjp: recorded (differentiable) VJPs and the sweep for create_graph=True.
# One extension module of the compiled core (_core.pyx describes the layering): it cimports the
# modules below it and registers its ops into the core's op table when it loads.

cimport cython
cimport numpy as cnp
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF, Py_XINCREF, Py_XDECREF
from libc.stddef cimport ptrdiff_t
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcpy, memset
from libc.math cimport INFINITY, M_2_SQRTPI
import math
import operator
import warnings

import numpy as np

from tapegrad._core cimport *
from tapegrad._ops_unary cimport *
from tapegrad._ops_reduce cimport *
from tapegrad._ops_shape cimport *
from tapegrad._ops_inplace cimport *
from tapegrad._ops_linalg cimport *
from tapegrad._ops_nn cimport *

from tapegrad._core import div, log, neg
from tapegrad._ops_unary import (abs_, cos, cosh, erf, gt, log1p, reciprocal, sigmoid, sign, sin,
                                sinh, softplus, sqrt, where)
from tapegrad._ops_shape import cat, clone, expand, t, transpose, unsqueeze
from tapegrad._ops_linalg import matmul, tril, triu

cnp.import_array()

include "graph_vjp.pxi"
