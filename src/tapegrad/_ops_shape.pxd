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

cdef TensorBase view_result(TensorBase x, object out)

cdef int OP_TRANSPOSE

cdef int OP_T

cdef int OP_PERMUTE

cdef int OP_SQUEEZE_INPLACE

cdef int OP_SQUEEZE_DIM_INPLACE

cdef int OP_SQUEEZE_DIMS_INPLACE

cdef int OP_UNSQUEEZE_INPLACE

cdef int OP_TRANSPOSE_INPLACE

cdef int OP_T_INPLACE

cdef int inplace_view_op(int op) noexcept

cdef TensorBase permuted(int op, TensorBase x, list perm)

cdef int OP_EXPAND

cdef int OP_REPEAT

cdef int OP_CAT

cdef int OP_STACK

cdef int OP_SPLIT

cdef int OP_SPLIT_SIZES

cdef int OP_UNBIND

cdef int OP_UNSAFE_SPLIT

cdef int OP_UNSAFE_SPLIT_SIZES

cdef int OP_CLONE

cdef bint sequence_as_tuple(object key)
cdef object bad_index_item_error(object item)
cdef Py_ssize_t specified_dims(tuple items)
cdef object too_many_indices(Py_ssize_t ndim)
cdef str numpy_index_message(str msg, object key=*, Py_ssize_t ndim=*)

cdef tuple index_aux(Record* r)

cdef bint scatter_add_c(object Z, object key, object G) except -1

cdef object scatter_index(tuple aux, object g)

cpdef object index_shapes_error(tuple key)

cdef object mask_mismatch(object A, tuple key)

cdef object empty_index_result(object B, tuple key)

cdef object advanced_index(object B, object key)

cdef int OP_SELECT

cdef int OP_SLICE

cdef int OP_UNFOLD

cdef int OP_INDEX

cdef int OP_ALIAS

cdef int OP_INDEX_UNSQUEEZE

cdef object index_op(TensorBase x, object key)

cdef int OP_GATHER

cdef int OP_INDEX_SELECT

cdef int OP_MASKED_FILL

cdef int OP_MASKED_FILL_T

cdef int OP_MASKED_SELECT


# -- views whose elements share memory (expand), for the families' in-place writes ---------------

cdef inline bint overlaps_itself(object A):
    """Whether two elements of array A share one memory location (a dim of stride 0 spanning
    several elements: what expand() stretches)."""
    cdef Py_ssize_t k
    if A.size == 0:                      # (numpy gives empty arrays zero strides)
        return False
    for k in range(A.ndim):
        if A.strides[k] == 0 and A.shape[k] > 1:
            return True
    return False

cdef inline str overlapping_write_message():
    """PyTorch's refusal of such a write where the result would depend on the element order."""
    return ("unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation.")

# np.take_along_axis for int64 positions shaped as A but along axis (ops_index.pxi): max/min(dim),
# the values of sort/topk, gather.
cdef object values_at_positions(object A, object idx, int axis)

# A dim PyTorch requires that may come as numpy's axis= (ops_shape.pxi): the default that tells
# it was not given, and the reading of dim/axis that raises PyTorch's "missing" TypeError.
cdef object dim_not_given()
cdef object axis_alias(str fname, object dim, object axis, object default)

cdef object byte_mask_as_bool(object arr)
