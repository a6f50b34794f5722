# Declarations of tapegrad._replay (tapegrad.compile: a captured call replayed in C) that the modules above it cimport.
# Implementations: replay.pxi.

cimport numpy as cnp
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF, Py_XINCREF, Py_XDECREF
from libc.stddef cimport ptrdiff_t
from libc.stdint cimport int64_t, uint32_t, uint64_t

from tapegrad._core cimport *
