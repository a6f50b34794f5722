# ---------------------------------------------------------------------------------------------
# The op table.  Each op family registers its ops next to their forward and VJP code: an opcode is
# an index into OP_VJP (the compiled VJP the sweep calls) and OP_NAMES (the grad_fn name PyTorch
# shows, e.g. "MulBackward0").  The sweep dispatches through this table of typed function pointers
# (numpy.random's pattern) instead of one long switch, so adding an op touches only its family file.
#
# A VJP receives a private copy of the record (its saved values kept alive for the call) and the
# output's adjoint `g` (an ndarray); it returns the input adjoints: one array for a one-input op,
# otherwise a tuple with one entry per input (None where no gradient is needed).
# ---------------------------------------------------------------------------------------------

ctypedef object (*vjp_fn)(Record* r, object g)

cdef enum:
    MAX_OPS = 256

cdef vjp_fn OP_VJP[MAX_OPS]
cdef list OP_NAMES = []


cdef int register_op(str name, vjp_fn vjp) except -1:
    cdef int code = len(OP_NAMES)
    if code >= MAX_OPS:
        raise RuntimeError("tapegrad: op table full")
    OP_NAMES.append(name)
    OP_VJP[code] = vjp
    return code


# The LEAF record stands for a leaf tensor that requires grad: the sweep delivers its adjoint into
# the tensor's .grad.  It has no VJP.
cdef int OP_LEAF = register_op("AccumulateGrad", NULL)


def op_names():
    """Opcode -> grad_fn name, for debugging."""
    return list(OP_NAMES)


# What the Python namespaces expose, filled by each op family next to its definitions:
# Tensor methods, tapegrad.* functions and tapegrad.nn.functional functions.
TENSOR_METHODS = {}
TORCH_FUNCTIONS = {}
NN_FUNCTIONS = {}
