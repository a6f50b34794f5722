# Declarations of tapegrad._ops_reduce (reductions) that the modules above it cimport; the
# implementations are in ops_reduce.pxi.

cimport numpy as cnp
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF, Py_XINCREF, Py_XDECREF
from libc.stddef cimport ptrdiff_t
from libc.stdint cimport int64_t, uint32_t, uint64_t

from tapegrad._core cimport *


cdef tuple keep_shape(tuple shape, tuple axes)

cdef int OP_SUM

cdef int OP_SUM_DIM

cdef int OP_MEAN

cdef int OP_MEAN_DIM

cdef object reduce_op(int op, TensorBase x, object dim, bint keepdim, object dtype=*)

cdef int OP_PROD

cdef int OP_PROD_DIM

cdef int OP_MAX_ALL

cdef int OP_MIN_ALL

cdef int OP_MAX_DIM

cdef int OP_MIN_DIM

cdef int OP_AMAX

cdef int OP_AMIN

cdef object extremum_of_saved_input(object A, tuple axes, bint largest, bint absolute)

cdef int OP_VAR

cdef int OP_STD

cdef int OP_LOGSUMEXP

cdef int OP_NORM
