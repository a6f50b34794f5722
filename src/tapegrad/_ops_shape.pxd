# Declarations of tapegrad._ops_shape (reshape, transpose, cat, split, ...; indexing, gather,
# index_select, masked_fill) that the modules above it cimport; the implementations are in
# ops_shape.pxi, ops_index.pxi.

cimport numpy as cnp
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF, Py_XINCREF, Py_XDECREF
from libc.stddef cimport ptrdiff_t
from libc.stdint cimport int64_t, uint32_t, uint64_t

from tapegrad._core cimport *


cdef int OP_VIEW

cdef int OP_RESHAPE_ALIAS

cdef int OP_UNSAFE_VIEW

cdef int OP_SQUEEZE

cdef int OP_SQUEEZE_DIM

cdef int OP_SQUEEZE_DIMS

cdef int OP_UNSQUEEZE

cdef TensorBase reshape_to(TensorBase x, tuple shape)

cdef int OP_TRANSPOSE

cdef int OP_T

cdef int OP_PERMUTE

cdef TensorBase permuted(int op, TensorBase x, list perm)

cdef int OP_EXPAND

cdef int OP_REPEAT

cdef int OP_CAT

cdef int OP_STACK

cdef int OP_SPLIT

cdef int OP_SPLIT_SIZES

cdef int OP_UNBIND

cdef int OP_CLONE

cdef bint sequence_as_tuple(list key)

cdef tuple index_aux(Record* r)

cdef bint scatter_add_c(object Z, object key, object G) except -1

cdef object scatter_index(tuple aux, object g)

cdef int OP_SELECT

cdef int OP_SLICE

cdef int OP_INDEX

cdef int OP_ALIAS

cdef int OP_INDEX_UNSQUEEZE

cdef object index_op(TensorBase x, object key)

cdef int OP_GATHER

cdef int OP_INDEX_SELECT

cdef int OP_MASKED_FILL

cdef int OP_MASKED_FILL_T

cdef int OP_MASKED_SELECT
