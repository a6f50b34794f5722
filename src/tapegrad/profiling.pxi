# ---------------------------------------------------------------------------------------------
# The profiler's per-op events (tapegrad/profiler.py keeps them; this is where the core calls it).
#
# While a profiler is active, every public call is an event named as PyTorch's aten op: the
# entries of the public functions and Tensor methods (out_arg_call.h), TensorBase's operator
# slots (tensor_base.pxi), the Tensor dunders of the op families, and each node the sweeps run
# ("autograd::engine::evaluate_function: MmBackward0").  When none is active the cost is one test
# of the C int PROFILING per call: no Python call, no lookup.  profile.__enter__ / __exit__ set it
# through _ops_inplace's _set_profiler, which sets the entries' pointers and this module's flag
# in one call.
#
# PROFILER_OPEN(name, args) -> token opens an event: `name` a public name ("add", "matmul"), args
# the call's operands (record_shapes reads their shapes); args None opens a backward node's pair
# of events, `name` its grad_fn name; a name with "::" in it is the event's own name.
# PROFILER_CLOSE(token, result) closes what it opened; result is the op's (None for a backward
# node, a failed call, or an op whose caller does not pass it): tapegrad.utils.flop_counter reads it.
# ---------------------------------------------------------------------------------------------

cdef int PROFILING = 0
cdef object PROFILER_OPEN = None
cdef object PROFILER_CLOSE = None


cdef int set_core_profiler(object open_event, object close_event) except -1:
    """Route op events to open_event / close_event (None, None: profiling off)."""
    global PROFILING, PROFILER_OPEN, PROFILER_CLOSE
    PROFILER_OPEN = open_event
    PROFILER_CLOSE = close_event
    PROFILING = 1 if open_event is not None else 0
    return 0


cdef object profiler_open(str name, object args):
    """Open the event of `name` (args None: a backward node's); the token to close it with."""
    if not PROFILING:
        return None
    return PROFILER_OPEN(name, args)


cdef int profiler_close(object token, object result=None) except -1:
    """Close what profiler_open opened, with the op's result when it has one (a FlopCounterMode
    counts from its shape and hooks its node); an exception in flight stays set."""
    if token is not None and PROFILER_CLOSE is not None:
        PROFILER_CLOSE(token, result)
    return 0


cdef object profiled_call(str name, object fn, tuple args):
    """fn(*args) as one event `name` (a caller that has tested PROFILING)."""
    token = profiler_open(name, args)
    result = None
    try:
        result = fn(*args)
        return result
    finally:
        profiler_close(token, result)


cdef object profiled_binary(str name, int op, object a, object b):
    """binary_op(op, a, b) as one event `name` (TensorBase's operator slots)."""
    token = profiler_open(name, (a, b))
    result = None
    try:
        result = binary_op(op, a, b)
        return result
    finally:
        profiler_close(token, result)


cdef int profile_captured(Record* r) except -1:
    """The event of a node autograd.grad captures a gradient at without running it (an input's
    record: a leaf's AccumulateGrad, a non-leaf's own node), as PyTorch's engine shows it: its
    evaluate_function alone."""
    name = "torch::autograd::AccumulateGrad" if r.op == OP_LEAF else record_name(r)
    profiler_close(profiler_open("autograd::engine::evaluate_function: " + name, ()))
    return 0
