# The common header of the op-family extension modules (_core.pyx describes the layering): the C
# and Python names every family's .pxi files use, and the core's declarations (_core.pxd).  Each
# family's .pyx includes this first, then cimports the families below it that it calls.

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

cnp.import_array()


cdef inline bint is_half(object A) noexcept:
    """Whether A is a float16 array (computed in float32 by the ops, as PyTorch's opmath): a
    type-number test, where `A.dtype == float16` (an attribute lookup and a dtype comparison) cost
    ~40 ns on every small op."""
    return cnp.PyArray_Check(A) and cnp.PyArray_TYPE(<cnp.ndarray>A) == cnp.NPY_FLOAT16
