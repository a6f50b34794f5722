# Declarations of tapegrad._ops_nn (nn.functional: softmax, losses, normalisation, ...) that the
# modules above it cimport; the implementations are in ops_nn.pxi.

cimport numpy as cnp
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF, Py_XINCREF, Py_XDECREF
from libc.math cimport INFINITY
from libc.stddef cimport ptrdiff_t
from libc.stdint cimport int64_t, uint32_t, uint64_t

from tapegrad._core cimport *


cdef enum:
    NN_RED_NONE = 0
    NN_RED_MEAN = 1
    NN_RED_SUM = 2

cdef object nn_softmax_grad_value(object g, object y, object axis, bint log)

cdef int OP_SOFTMAX

cdef int OP_LOG_SOFTMAX

cdef object nn_index_grids(Py_ssize_t N, Py_ssize_t K)

cdef int OP_NLL
cdef int OP_CROSS_ENTROPY       # cross_entropy as one replay step (a replay record only)

cdef int OP_NLL2D

cdef int OP_NLL_VIEW

cdef int OP_CE_SMOOTH

cdef inline double smoothing_share(double ls, Py_ssize_t C) noexcept:
    """label_smoothing's share per class, ls / C, as PyTorch's double division: inf without
    classes (the smoothed loss is then NaN, as PyTorch's, not a ZeroDivisionError)."""
    return ls / C if C > 0 else INFINITY

cdef int OP_CE_PROBS_MEAN

cdef int OP_CE_PROBS

cdef enum:
    NN_MSE = 0
    NN_L1 = 1
    NN_SMOOTH_L1 = 2
    NN_HUBER = 3

cdef int OP_MSE_LOSS

cdef int refuse_mixed_huber_backward(tuple aux, bint input_grad, bint target_grad) except -1

cdef int OP_SMOOTH_L1_LOSS

cdef int OP_HUBER_LOSS

cdef int OP_PW_ABS

cdef int OP_PW_MEAN

cdef int OP_PW_SUM

cdef int OP_PW_MUL

cdef int OP_PW_DIV

cdef double BCE_EPSILON

cdef int OP_BCE

cdef int OP_BCE_LOGITS

cdef int OP_DROPOUT

cdef int OP_EMBEDDING

cdef int OP_LAYER_NORM

cdef int OP_BATCH_NORM

cdef int OP_CONSTANT_PAD

cdef dict NN_OVERWRITE_OPS
