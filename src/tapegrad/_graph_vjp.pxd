# Declarations of tapegrad._graph_vjp (recorded (differentiable) VJPs and the sweep for create_graph=True) that the modules above it cimport.
# Implementations: graph_vjp.pxi.

cimport numpy as cnp
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF, Py_XINCREF, Py_XDECREF
from libc.stddef cimport ptrdiff_t
from libc.stdint cimport int64_t, uint32_t, uint64_t

from tapegrad._core cimport *
