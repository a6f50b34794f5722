# Declarations of tapegrad._ops_linalg (matmul and friends, and the faster layout of A @ W^T) that
# the modules above it cimport; the implementations are in matmul_layout.pxi, ops_linalg.pxi.

cimport numpy as cnp
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF, Py_XINCREF, Py_XDECREF
from libc.stddef cimport ptrdiff_t
from libc.stdint cimport int64_t, uint32_t, uint64_t

from tapegrad._core cimport *


cdef Py_ssize_t shape_prod(object shape, Py_ssize_t start, Py_ssize_t stop)

cdef object last(object shape)

cdef object product(object A, object B)

# mm_layout's flags in a matmul record's aux: which matrix operands were column-major (see the
# VJP in ops_linalg.pxi)
cdef enum:
    A_COLUMN_MAJOR = 1
    B_COLUMN_MAJOR = 2

cdef bint column_major(object X)

cdef object matmul_grad_a(object g, object B, tuple shape_a, bint column_major_result=*)

cdef object matmul_grad_b(object g, object A, tuple shape_b, bint column_major_result=*)

cdef int OP_DOT

cdef int OP_MV

cdef int OP_MM

cdef int OP_BMM

cdef int OP_MATMUL_VM

cdef int OP_MATMUL_VIEW

cdef int OP_MATMUL_CLONE

cdef int OP_MATMUL_T

cdef int OP_ADDMM

cdef int OP_LINEAR_VIEW

cdef int OP_LINEAR_ADD

cdef int OP_OUTER

cdef int OP_TRIL

cdef int OP_TRIU
