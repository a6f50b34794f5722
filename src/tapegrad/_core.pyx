# tapegrad's compiled core.
#
# One extension module, split by concern into the .pxi files included below (in dependency order):
#   grad_mode.pxi       thread-local grad mode flag
#   kernels.pxi         the C elementwise kernels (kernels.c) and their drivers
#   dtypes.pxi          dtype objects and PyTorch's promotion rules
#   tape.pxi            the flat record arena and record lifetimes
#   ops_registry.pxi    the op table: names and VJP function pointers
#   tensor_base.pxi     TensorBase: value, grad, requires_grad, node; tensor creation helpers
#   record.pxi          how a forward op appends its record (the one place ops touch the tape)
#   ops_elementwise.pxi elementwise ops: forward, VJP and registration side by side
#   ops_reduce.pxi      reductions
#   ops_index.pxi       indexing
#   sweep.pxi           the reverse sweep (backward)

cimport numpy as cnp
import numpy as np

cnp.import_array()

include "grad_mode.pxi"
include "kernels.pxi"
include "dtypes.pxi"
include "ops_registry.pxi"
include "tape.pxi"
include "tensor_base.pxi"
include "record.pxi"
include "ops_elementwise.pxi"
include "ops_reduce.pxi"
include "ops_index.pxi"
include "sweep.pxi"
