# tapegrad's compiled core.
#
# The compiled part of tapegrad is several extension modules linked by .pxd interfaces (cimport),
# layered so that a module cimports only the ones above it in this list, and none cimports back:
#   tapegrad._core        this module: the tape, recording, the sweep, TensorBase and the hot path
#   tapegrad._ops_unary   ops_unary.pxi, ops_math.pxi
#   tapegrad._ops_reduce  ops_reduce.pxi
#   tapegrad._ops_shape   ops_shape.pxi, ops_index.pxi
#   tapegrad._ops_inplace ops_inplace.pxi
#   tapegrad._ops_linalg  matmul_layout.pxi, ops_linalg.pxi
#   tapegrad._ops_nn      ops_nn.pxi
#   tapegrad._replay      replay.pxi
#   tapegrad._graph_vjp   graph_vjp.pxi
#   tapegrad._factories   _factories.pyx: the factories' common calls (loaded by tapegrad/_meta.py)
# Each op family registers its ops into the core's op table (ops_registry.pxi) when its module
# loads; where the core itself must reach a higher module (TensorBase's x[key], x[key] = v and
# x += y, the out= argument, create_graph=True), it calls through a pointer that module installs.
# tapegrad/_modules.py loads them all, in this order, and re-exports their public names from
# this module, so `tapegrad._core.<name>` stays the one namespace of the compiled core.
#
# This module is split by concern into the .pxi files included below (in dependency order):
#   grad_mode.pxi       thread-local grad mode flag
#   profiling.pxi       the profiler's per-op events: the flag every public call tests
#   fp_errors.pxi       IeeeResults: numpy's errstate(all="ignore") at C cost
#   kernels.pxi         the C elementwise kernels (kernels.c) and their drivers
#   cascade_sum.pxi     sums in PyTorch's order (cascade_sum.c): sum, mean, sum_to, replays
#   dtypes.pxi          dtype objects and PyTorch's promotion rules
#   ops_registry.pxi    the op table: names and VJP function pointers; the higher modules' entries
#   tape.pxi            the flat record arena and record lifetimes
#   capture.pxi         what tapegrad.compile notes of an eager call
#   tensor_base.pxi     TensorBase: value, grad, requires_grad, node; tensor creation helpers
#   saved_hooks.pxi     saved-tensor hooks: pack when a value is saved, unpack when it is read
#   record.pxi          how a forward op appends its record (the one place ops touch the tape)
#   dims.pxi            dim arguments as PyTorch parses them
#   views.pxi           version counters and stale views (shared by every in-place write)
#   ops_elementwise.pxi elementwise arithmetic: forward, VJP and registration side by side
#   ops_complex.pxi     complex elementwise ops: forward, VJP and registration side by side
#   ops_function.pxi    custom autograd.Function records, tensor hooks, anomaly mode
#   graph_layout.pxi    what grad_fn.next_functions shows where an op registered PyTorch's layout
#   ready_order.pxi     PyTorch's ready queue: when a sweep delivers each leaf's gradient
#   sweep.pxi           the reverse sweep (backward)

cimport numpy as cnp
import sys

import numpy as np

cnp.import_array()

include "grad_mode.pxi"
include "profiling.pxi"
include "fp_errors.pxi"
include "kernels.pxi"
include "pooled_kernels.pxi"
include "cascade_sum.pxi"
include "dtypes.pxi"
include "complex_hook.pxi"
include "ops_registry.pxi"
include "tape.pxi"
include "capture.pxi"
include "tensor_base.pxi"
include "saved_hooks.pxi"
include "record.pxi"
include "dims.pxi"
include "views.pxi"
include "ops_elementwise.pxi"
include "ops_complex.pxi"
include "ops_function.pxi"
include "graph_layout.pxi"
include "ready_order.pxi"
include "sweep.pxi"
