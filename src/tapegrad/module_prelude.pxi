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


cdef inline object number_arg(object v, str fn, str kw, int position, str kind="Number"):
    """v, a Number-typed argument (leaky_relu's negative_slope, dropout's p) after PyTorch's
    parser check: a tensor passes only 0-dim and not requiring grad.  A learnable slope would
    otherwise be read through float() and silently get no gradient, where PyTorch raises."""
    if type(v) is float or type(v) is int:
        return v
    if isinstance(v, TensorBase) and ((<TensorBase>v)._array.ndim != 0 or v.requires_grad):
        where = f" (position {position})" if position else ""
        raise TypeError(f"{fn}(): argument '{kw}'{where} must be {kind}, not Tensor")
    return v


cdef inline bint is_half(object A) noexcept:
    """Whether A is a float16 array (computed in float32 by the ops, as PyTorch's opmath): a
    type-number test, where `A.dtype == float16` (an attribute lookup and a dtype comparison) cost
    ~40 ns on every small op."""
    return cnp.PyArray_Check(A) and cnp.PyArray_TYPE(<cnp.ndarray>A) == cnp.NPY_FLOAT16


cdef inline object contiguous_result(object A):
    """A itself when its strides are PyTorch's contiguous ones (each the product of the later
    sizes), else a copy laid out so.  PyTorch allocates the results of reductions and softmax
    contiguous whatever the input's layout; numpy lays a reduction's result out in the input's
    order (a sum over a transposed or expanded tensor comes out transposed), so stride() differed
    and a later .view() raised where PyTorch's succeeds.  Size-1 dims are checked too: numpy calls
    such an array C-contiguous, but its stride() would still differ from PyTorch's.  Empty arrays
    are left as they are (numpy gives them zero strides, whatever the op)."""
    cdef cnp.ndarray a = <cnp.ndarray>A
    cdef int i
    cdef Py_ssize_t n, expect = cnp.PyArray_ITEMSIZE(a)
    if cnp.PyArray_SIZE(a) == 0:
        return A
    for i in range(cnp.PyArray_NDIM(a) - 1, -1, -1):
        if cnp.PyArray_STRIDE(a, i) != expect:
            return np.array(A, order="C")
        n = cnp.PyArray_DIM(a, i)
        expect *= n
    return A
