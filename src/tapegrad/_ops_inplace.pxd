# Declarations of tapegrad._ops_inplace (in-place ops and x[key] = value) that the modules above
# it cimport; the implementations are in ops_inplace.pxi.

cimport numpy as cnp
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF, Py_XINCREF, Py_XDECREF
from libc.stddef cimport ptrdiff_t
from libc.stdint cimport int64_t, uint32_t, uint64_t

from tapegrad._core cimport *


cdef bint records(TensorBase t, object other) noexcept

cdef object inplace_apply(TensorBase self, object fn, tuple args, object zeroed=*)

cdef int OP_SETITEM, OP_COPY, OP_SETITEM_FILL, OP_INDEX_PUT, OP_OVERLAPPING_SLICES

cdef object setitem_op(TensorBase self, object key, object value, bint onto_base=*, bint is_copy=*,
                       bint one_number=*)

cdef object write_out(str name, object out, tuple operands, object fn, dict kwargs)

# CPU autocast: the number of threads whose autocast flag is on, and the public matmul's entry
# (Tensor.__matmul__ goes through it while the count is not 0; ops_inplace.pxi)
cdef int AUTOCAST_THREADS
cdef object AUTOCAST_MATMUL
