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


OP_NAMES = []


cdef int register_op(str name, vjp_fn vjp) except -1:
    cdef int code = len(OP_NAMES)
    if code >= MAX_OPS:
        raise RuntimeError("tapegrad: op table full")
    OP_NAMES.append(name)
    OP_VJP[code] = vjp
    OP_REPLAY[code] = NULL
    return code


cdef int register_replay(int op, replay_fn forward) except -1:
    """Give op `op` a replay step (see replay_fn in _core.pxd): tapegrad.compile then replays it
    on slot arrays with its own VJP, instead of re-running the eager op on tensors."""
    if not 0 <= op < len(OP_NAMES):
        raise RuntimeError(f"tapegrad: register_replay of an unknown op {op}")
    OP_REPLAY[op] = forward
    return 0


# opcode -> layout(grad_fn): the order and intermediate nodes grad_fn.next_functions shows where
# they are not the record's inputs in order (graph_layout.pxi).
cdef dict OP_EDGES = {}


def register_edges(int op, layout):
    """Give op `op` a layout for grad_fn.next_functions (graph_layout.pxi describes it)."""
    if not 0 <= op < len(OP_NAMES):
        raise RuntimeError(f"tapegrad: register_edges of an unknown op {op}")
    OP_EDGES[op] = layout


def op_replayed_natively(int op):
    """Whether op `op` has a registered replay step (for tests and explain())."""
    return 0 <= op < len(OP_NAMES) and OP_REPLAY[op] != NULL


# The LEAF record stands for a leaf tensor that requires grad: the sweep delivers its adjoint into
# the tensor's .grad.  It has no VJP.
OP_LEAF = register_op("AccumulateGrad", NULL)


def op_names():
    """Opcode -> grad_fn name, for debugging."""
    return list(OP_NAMES)


# What the Python namespaces expose, filled by each op family next to its definitions:
# Tensor methods, tapegrad.* functions and tapegrad.nn.functional functions.
TENSOR_METHODS = {}
TORCH_FUNCTIONS = {}
NN_FUNCTIONS = {}


# -- entry points into higher extension modules --------------------------------------------------
# The op families are extension modules of their own that cimport this one, so the core cannot call
# them directly.  Where it needs one (TensorBase's x[key], x[key] = v and x += y slots, the `out=`
# argument of its arithmetic functions, backward with create_graph=True), it calls through these
# pointers, which the family installs when it loads (the package loads every family right after
# the core: tapegrad/_modules.py).  Until then they raise instead of crashing.

cdef object family_missing(str what):
    raise RuntimeError(f"tapegrad: {what} lives in an extension module that is not loaded; "
                       "import tapegrad (not tapegrad._core alone)")


cdef object index_missing(TensorBase x, object key):
    return family_missing("indexing (tapegrad._ops_shape)")


cdef object setitem_missing(TensorBase x, object key, object value):
    return family_missing("x[key] = value (tapegrad._ops_inplace)")


cdef object inplace_binary_missing(int op, TensorBase x, object other):
    return family_missing("in-place arithmetic (tapegrad._ops_inplace)")


cdef object write_out_missing(str name, object out, tuple operands, object fn, dict kwargs):
    return family_missing("the out= argument (tapegrad._ops_inplace)")


cdef object graph_engine_missing(tuple outputs, list grads, bint retain_graph, tuple inputs,
                                 bint allow_unused, bint accumulate_grad):
    return family_missing("create_graph=True (tapegrad._graph_vjp)")


cdef int dispatch_never_off(int off) noexcept:
    return 0


INDEX_OP = index_missing
SETITEM_OP = setitem_missing
INPLACE_BINARY = inplace_binary_missing
WRITE_OUT = write_out_missing
GRAPH_ENGINE_RUN = graph_engine_missing
SUBCLASS_DISPATCH_SET_OFF = dispatch_never_off


cdef class CompiledBackward:
    """What the core knows of a tapegrad.compile'd call's backward (a custom Function record's
    ctx): the replay module's CompiledFunctionBackward subclasses it.

    seeds: one entry per input, the adjoint the sweep had summed for it so far (None where
    none): the backward adds its contributions to that value, in the order the eager sweep
    would (the later uses' total first), and returns the sum, so a replayed call's input that
    is also used outside the call gets the eager gradient bit for bit (take_compiled_seeds)."""

    cdef object backward(self, list g, list seeds):
        raise NotImplementedError

    cdef object backward_one(self, object g, object seed):
        """backward([g], [seed])[0] for a call with one input and one output (vjp_function)."""
        return self.backward([g], [seed])[0]

    cdef object graph_backward(self, list g, list seeds):
        """backward with create_graph=True: g, seeds and the result are tensors (or None)."""
        raise NotImplementedError

    cdef release(self):
        """The graph no longer needs the backward (swept without retain_graph, or its record
        died): returns what the record's aux becomes instead, or None to keep this."""
        return None

    def grad_fn_node(self):
        """What grad_fn shows for the record holding this (which then holds that instead)."""
        return self
