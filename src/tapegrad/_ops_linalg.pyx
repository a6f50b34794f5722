# tapegrad._ops_linalg: matmul and friends, and the faster layout of A @ W^T.
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
from tapegrad._ops_inplace cimport *

from tapegrad._core import NN_FUNCTIONS, TENSOR_METHODS, TORCH_FUNCTIONS

cnp.import_array()

include "matmul_layout.pxi"
include "ops_linalg.pxi"
