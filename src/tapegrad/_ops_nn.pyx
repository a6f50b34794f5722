# tapegrad._ops_nn: nn.functional: softmax, losses, normalisation, ....
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
from tapegrad._ops_shape cimport *

from tapegrad._core import NN_FUNCTIONS, TENSOR_METHODS, TORCH_FUNCTIONS, div, log, sub
from tapegrad._ops_unary import gt
from tapegrad._ops_reduce import mean, prod, var

cnp.import_array()

include "ops_nn.pxi"
