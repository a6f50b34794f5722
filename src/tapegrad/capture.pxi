# ---------------------------------------------------------------------------------------------
# Capture: what tapegrad.compile sees of an eager call (the replay itself is replay.pxi).
#
# While a Capture is active (on the thread that started it) the ops that replay.pxi can replay
# describe themselves with capture_step: (kind, op, operands..., result).  Every tensor any op
# creates goes through wrap() and is noted in `created`; a created tensor that no step claims was
# made by an op the replay does not know, so the call is not replayable (it keeps running eagerly).
# That check is what makes the list of supported ops safe to extend one op at a time: an op
# without a capture hook can never be replayed with stale values.
#
# Other things that would make a replay differ from an eager run are noted too: in-place writes
# (version bumps), and Python-level reads of tensor values (item, bool, float, ...), which become
# value guards checked after each replayed forward.
# ---------------------------------------------------------------------------------------------

# The kinds of captured steps (and of the replay's steps, replay.pxi).


cdef class Capture:
    """The trace of one eager call (see tapegrad/compile.py for how it becomes a plan)."""

    def __cinit__(self):
        self.created = []
        self.steps = []
        self.claimed = set()
        self.reads = []
        self.unsupported = []
        self.thread = PyThread_get_thread_ident()


CAPTURE = None     # the active capture, or None (then every hook is one test)
# capturing(), the test every hook makes, is defined in _core.pxd (inlined in every module).


cdef int capture_created(object t) except -1:
    if capturing():
        CAPTURE.created.append(t)
    return 0


cdef int capture_step(tuple step) except -1:
    """Note a replayable op; step[len(step) - 1] is its result tensor."""
    CAPTURE.steps.append(step)
    CAPTURE.claimed.add(<Py_ssize_t><PyObject*>step[len(step) - 1])
    return 0


cdef int capture_unsupported(str why) except -1:
    if capturing():
        CAPTURE.unsupported.append(why)
    return 0


cdef object capture_call(object fn, tuple args, dict kwargs):
    """fn(*args, **kwargs) for an op the replay re-runs as a whole (matmul, linear, losses, ...):
    one step whose result is claimed; what the op does inside is its own business (the tensors
    it makes, the steps of the ops it calls are dropped from the capture).  fn is the public op
    itself: called here (depth > 0) or by a replay (no capture), it runs its eager body."""
    cdef Capture cap = CAPTURE
    if kwargs is None:
        kwargs = {}
    if cap.depth > 0:
        return fn(*args, **kwargs)
    cdef Py_ssize_t n_created = len(cap.created), n_steps = len(cap.steps)
    cdef Py_ssize_t n_unsupported = len(cap.unsupported)
    cap.depth += 1
    try:
        res = fn(*args, **kwargs)
    finally:
        cap.depth -= 1
    for st in cap.steps[n_steps:]:
        cap.claimed.discard(<Py_ssize_t><PyObject*>st[len(st) - 1])
    del cap.steps[n_steps:]
    del cap.created[n_created:]
    del cap.unsupported[n_unsupported:]
    if not isinstance(res, TensorBase):
        cap.unsupported.append(f"{getattr(fn, '__name__', fn)} returning several tensors")
        return res
    cdef list tensors = [a for a in args if isinstance(a, TensorBase)]
    if kwargs:
        tensors += [v for v in kwargs.values() if isinstance(v, TensorBase)]
    cap.created.append(res)
    capture_step((SK_CALL, 0, 0, None, None, (fn, args, kwargs, tuple(tensors)), res))
    return res


def _capture_begin():
    """Start capturing this thread's ops; returns the Capture."""
    global CAPTURE
    if CAPTURE is not None:
        raise RuntimeError("tapegrad.compile: a compiled function is already being captured "
                           "(nested or concurrent captures are not supported)")
    CAPTURE = Capture.__new__(Capture)
    return CAPTURE


def _capture_end():
    global CAPTURE
    CAPTURE = None


def _capture_read(TensorBase t, str kind, value):
    """Called by the facade's item/bool/tolist/numpy (float/int go through item): a Python-level
    read of t's values, which a replay must re-check (kind: "item", "bool", "tolist", "numpy")."""
    if capturing():
        CAPTURE.reads.append((t, kind, value))


# -- capture hooks (called by the ops; replay.pxi replays what they note) -------------------

cdef int capture_binary(int kop, object a, object b, bint promote, bint in_c,
                        TensorBase res) except -1:
    if promote or not in_c:
        return capture_unsupported(f"{TG_BINARY_NAMES[kop]} with mixed dtypes, a non-contiguous "
                                   "operand or a broadcast the C kernels do not take")
    if kop == TG_POW and not (isinstance(a, TensorBase) and not isinstance(b, TensorBase)
                              and (b == 0 or special_exponent(b - 1))):
        return capture_unsupported("pow other than tensor ** e with e in 0, -1, 0.5, 1.5, 2, 3, 4 "
                                   "(eager computes the others' derivative with numpy)")
    return capture_step((SK_BINARY, 0, kop, a, b, None, res))


cdef int capture_unary(int op, int kop, TensorBase x, object A, bint in_c,
                       TensorBase res) except -1:
    if A is not x._array or not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>A):
        return capture_unsupported(f"{OP_NAMES[op]} of a non-float or non-contiguous tensor")
    return capture_step((SK_UNARY if in_c else SK_UNARY_NUMPY, op, kop, x, None, op == OP_LOG,
                         res))


cdef int capture_reduce(int op, TensorBase x, object A, tuple axes, bint keepdim, double count,
                        TensorBase res) except -1:
    if A is not x._array or A.dtype.kind != "f":
        return capture_unsupported(f"{OP_NAMES[op]} with a dtype argument or of integers")
    return capture_step((SK_REDUCE, op, 0, x, None, (axes, keepdim, count), res))


cdef list TG_BINARY_NAMES = ["add", "sub", "mul", "div", "pow", "maximum", "minimum"]


# -- kernels on raw buffers ----------------------------------------------------------------------
