# tapegrad's compiled core.
#
# One extension module, split by concern into the .pxi files included below (in dependency order):
#   grad_mode.pxi       thread-local grad mode flag
#   fp_errors.pxi       IeeeResults: numpy's errstate(all="ignore") at C cost
#   kernels.pxi         the C elementwise kernels (kernels.c) and their drivers
#   dtypes.pxi          dtype objects and PyTorch's promotion rules
#   tape.pxi            the flat record arena and record lifetimes
#   capture.pxi         what tapegrad.compile notes of an eager call
#   ops_registry.pxi    the op table: names and VJP function pointers
#   tensor_base.pxi     TensorBase: value, grad, requires_grad, node; tensor creation helpers
#   record.pxi          how a forward op appends its record (the one place ops touch the tape)
#   ops_elementwise.pxi elementwise arithmetic: forward, VJP and registration side by side
#   ops_unary.pxi       math functions, activations, clamp, where, comparisons, conversions
#   ops_math.pxi        log10, sinh, asin, ..., rounding, atan2, fmod, remainder, floor_divide
#   ops_reduce.pxi      reductions
#   matmul_layout.pxi   A @ W^T: the faster of two bit-identical BLAS layouts, per shape
#   ops_linalg.pxi      matmul and friends
#   ops_shape.pxi       reshape, transpose, cat, split, ...
#   ops_index.pxi       indexing, gather, index_select, masked_fill
#   ops_nn.pxi          nn.functional: softmax, losses, normalisation, ...
#   ops_inplace.pxi     in-place ops and x[key] = value, with version counters
#   replay.pxi          tapegrad.compile: a captured call replayed in C (capture.pxi: capturing)
#   ops_function.pxi    custom autograd.Function records, tensor hooks, anomaly mode
#   graph_vjp.pxi       recorded (differentiable) VJPs for create_graph=True
#   sweep.pxi           the reverse sweep (backward)

cimport numpy as cnp
import numpy as np

cnp.import_array()

include "grad_mode.pxi"
include "fp_errors.pxi"
include "kernels.pxi"
include "dtypes.pxi"
include "ops_registry.pxi"
include "tape.pxi"
include "capture.pxi"
include "tensor_base.pxi"
include "record.pxi"
include "ops_elementwise.pxi"
include "ops_unary.pxi"
include "ops_math.pxi"
include "ops_reduce.pxi"
include "matmul_layout.pxi"
include "ops_linalg.pxi"
include "ops_shape.pxi"
include "ops_index.pxi"
include "ops_nn.pxi"
include "ops_inplace.pxi"
include "replay.pxi"
include "ops_function.pxi"
include "graph_vjp.pxi"
include "sweep.pxi"
