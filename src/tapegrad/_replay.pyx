# tapegrad._replay: tapegrad.compile: a captured call replayed in C.
# One extension module of the compiled core (_core.pyx describes the layering): it cimports the
# modules below it and registers its ops into the core's op table when it loads.

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
from tapegrad._ops_reduce cimport *
from tapegrad._ops_linalg cimport *

from tapegrad._core import _function_record, _grad

cnp.import_array()

include "replay.pxi"
