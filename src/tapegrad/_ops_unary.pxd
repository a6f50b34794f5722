# Declarations of tapegrad._ops_unary (math functions, activations, clamp, where, comparisons,
# conversions; log10, sinh, ..., rounding, atan2, fmod, remainder, floor_divide) that the modules
# above it cimport; the implementations are in ops_unary.pxi, ops_math.pxi.

cimport numpy as cnp
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF, Py_XINCREF, Py_XDECREF
from libc.stddef cimport ptrdiff_t
from libc.stdint cimport int64_t, uint32_t, uint64_t

from tapegrad._core cimport *


cdef Record* record1(int op, TensorBase res, TensorBase x) except? NULL

cdef object sign_numpy(object A)

cdef object operand_layout(object out, object a, object b)

cdef object ucall(int kop, object A)

cdef int OP_ABS

cdef int OP_SIGN

cdef int OP_LOG1P

cdef int OP_EXPM1

cdef int OP_SQRT

cdef int OP_RSQRT

cdef int OP_SIN

cdef int OP_COS

cdef int OP_SIGMOID

cdef int OP_RECIPROCAL

cdef int OP_ERF

cdef int OP_LEAKY_RELU

cdef int OP_ELU

cdef int OP_SOFTPLUS

cdef int OP_SILU

cdef int OP_GELU

cdef int OP_CLAMP

cdef int OP_CLAMP_MIN

cdef int OP_CLAMP_MAX

cdef int OP_CLAMP_T

cdef int OP_CLAMP_MIN_T

cdef int OP_CLAMP_MAX_T

cdef int OP_MAXIMUM

cdef int OP_MINIMUM

cdef int OP_WHERE

cdef int OP_TO_COPY

cdef object convert(TensorBase x, object np_dt, bint copy)

cdef double LN10

cdef double LN2

cdef int OP_LOG10

cdef int OP_LOG2

cdef int OP_SINH

cdef int OP_COSH

cdef int OP_ASIN

cdef int OP_ACOS

cdef int OP_ATAN

cdef int OP_FLOOR

cdef int OP_CEIL

cdef int OP_ROUND

cdef int OP_ROUND_DECIMALS

cdef int OP_TRUNC

cdef int OP_FRAC

cdef int OP_ATAN2

cdef int OP_FMOD

cdef int OP_FMOD_T

cdef int OP_REMAINDER

cdef int OP_REMAINDER_T

cdef int OP_NOT_IMPLEMENTED
