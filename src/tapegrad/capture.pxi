# ---------------------------------------------------------------------------------------------
# Capture: what tapegrad.compile sees of an eager call (the replay itself is replay.pxi).
#
# While a Capture is active (on the thread that started it) the ops describe themselves with
# capture_step: (kind, op, operands..., result).  The elementwise ops and reductions that replay.pxi
# runs in C have hooks of their own; ops with a registered replay step (OP_REPLAY: linear, softmax,
# nll_loss, ...) note it with capture_op; every other public op is noted as a whole by _capture_op_call
# (the public functions' entry sends their calls there during a capture, out_arg_call.h; Tensor's
# methods are routed by tapegrad/replay.py), as a step that re-runs it.  Every tensor any op creates goes through wrap() and is noted in `created`; a
# created tensor that no step claims was made by an op reached some other way, so the call is not
# replayable (it keeps running eagerly): no op can be replayed with stale values.
#
# Other things that would make a replay differ from an eager run are noted too: in-place writes
# (version bumps), and Python-level reads of tensor values (item, bool, float, ...), which become
# value guards checked after each replayed forward.
# ---------------------------------------------------------------------------------------------

import operator


# The kinds of captured steps (and of the replay's steps, replay.pxi).


@cython.auto_pickle(False)   # (unpicklable: see Tape's note)
cdef class Capture:
    """The trace of one eager call (see tapegrad/compile.py for how it becomes a plan)."""

    def __cinit__(self):
        self.created = []
        self.steps = []
        self.claimed = set()
        self.reads = []
        self.unsupported = []
        self.thread = PyThread_get_thread_ident()


cdef inline Py_ssize_t oid(object o) noexcept:
    """id(o) without the builtin call (the capture holds every object it names)."""
    return <Py_ssize_t><PyObject*>o


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


def _capture_setting(str what):
    """Called by the setters of library-wide settings (the default dtype and device, print
    options, thread count, deterministic mode, anomaly detection, a torch.backends flag): a
    function that sets one stays eager.  Eager sets it at every call and a replay never, so the
    code after a replayed call saw whatever the script had set in between; and setting an
    unchanged value is a write no snapshot of the setting could see."""
    capture_unsupported(f"it sets {what}, a library-wide setting a replay would not set again")


# Reasons that re-running the op whole in a replay would not lift (embedding(sparse=True) makes a
# hidden leaf whose gradient only an eager backward turns into the weight's sparse .grad): an op
# call collapsing into one re-run step keeps them, so the compiled call stays eager.
cdef set WHOLE_CALL_REFUSALS = set()


cdef bint refused_whole(Capture cap, Py_ssize_t n_unsupported):
    """Whether a reason noted since n_unsupported is one a re-run step cannot lift."""
    if not WHOLE_CALL_REFUSALS:
        return False
    return any([why in WHOLE_CALL_REFUSALS for why in cap.unsupported[n_unsupported:]])


cdef int collect_tensors(object obj, list out) except -1:
    """The tensors in an op's argument: itself, or inside (nested) lists and tuples (cat)."""
    if isinstance(obj, TensorBase):
        out.append(obj)
    elif type(obj) is list or type(obj) is tuple:
        for o in <object>obj:
            collect_tensors(o, out)
    return 0


cdef bint holds_array(object obj) except -1:
    """Whether an op's argument is or contains (in lists and tuples) a numpy array."""
    if cnp.PyArray_Check(obj):
        return True
    if type(obj) is list or type(obj) is tuple:
        for o in <object>obj:
            if holds_array(o):
                return True
    return False


cdef bint made_here(object res, set made) except -1:
    """Whether `res` is a tensor, or a tuple/list of tensors (and None: multi_head_attention's
    (output, None)), that the call made (not an input it returned as is: in-place ops, a no-op
    contiguous() or to())."""
    if isinstance(res, TensorBase):
        return oid(res) in made
    cdef bint some = False
    if isinstance(res, (tuple, list)):
        for o in <object>res:
            if o is None:
                continue
            if not isinstance(o, TensorBase) or oid(o) not in made:
                return False
            some = True
    return some


cdef int forget_steps(Capture cap, Py_ssize_t n_steps, Py_ssize_t n_created) except -1:
    """Drop the steps noted since n_steps and the tensors made since n_created, and every claim
    on them: each result of a multi-output step (a kernel Function's values and indices) is
    claimed, not only the step's last element.  A claim left behind names a tensor the capture no
    longer holds: its address, reused by a later op's result, would make that result look noted
    already (no step: a replay returns the capture's tensor, or the plan finds a read of a tensor
    "made after it")."""
    cdef tuple st
    for st in cap.steps[n_steps:]:
        cap.claimed.discard(oid(st[len(st) - 1]))
        if <Py_ssize_t>st[0] == SK_OP or <Py_ssize_t>st[0] == SK_CALL:   # all their results
            for o in <tuple>(<tuple>st[5])[3 if <Py_ssize_t>st[0] == SK_OP else 4]:
                cap.claimed.discard(oid(o))
    for t in cap.created[n_created:]:
        cap.claimed.discard(oid(t))
    del cap.steps[n_steps:]
    del cap.created[n_created:]
    return 0


cdef object collapse_call(Capture cap, object fn, tuple args, dict kwargs, object res,
                          Py_ssize_t n_created, Py_ssize_t n_steps, Py_ssize_t n_unsupported,
                          Py_ssize_t n_reads, list versions):
    """Note the op call fn(*args, **kwargs) -> res, which has just run under the capture, as one
    SK_CALL step that re-runs it whole: what the op did inside (the tensors it made, the steps of
    the ops it called, the values it read in Python, the ops it ran that the replay cannot) is
    its own business, since a replay runs it again.  Unless it wrote into one of its inputs
    (`versions`: their version counters' values before the call): a replay would write again."""
    cdef list tensors = []
    if refused_whole(cap, n_unsupported):
        return res
    collect_tensors(args, tensors)
    if kwargs:
        collect_tensors(tuple(kwargs.values()), tensors)
    if holds_array(args) or (kwargs and holds_array(tuple(kwargs.values()))):
        # numpy data handed to an op (tensor(a), a mask or index array) may be derived from
        # tensor values by code the capture cannot see: replaying it would replay stale data.
        cap.unsupported.append(f"{getattr(fn, '__name__', fn)} given a numpy array")
        return res
    cdef Py_ssize_t j
    for j in range(len(versions)):
        if version_of(<TensorBase>tensors[j]).value != <Py_ssize_t>versions[j]:
            return res                  # an in-place op: its write stays noted as unsupported
    forget_steps(cap, n_steps, n_created)
    del cap.unsupported[n_unsupported:]
    del cap.reads[n_reads:]
    outs = call_outputs(res)
    cap.created.extend(outs)
    capture_step((SK_CALL, 0, 0, None, None, (fn, args, kwargs or {}, tuple(tensors), outs),
                  outs[0]))
    for o in outs[1:]:
        cap.claimed.add(oid(o))
    return res


cdef tuple call_outputs(object res):
    """The tensors an op call returned (made_here's): itself, or those of a tuple/list."""
    if isinstance(res, TensorBase):
        return (res,)
    return tuple([o for o in res if o is not None])


cdef list input_versions(tuple args, dict kwargs):
    cdef list tensors = []
    collect_tensors(args, tensors)
    if kwargs:
        collect_tensors(tuple(kwargs.values()), tensors)
    return [version_of(<TensorBase>t).value for t in tensors]


cdef object capture_call(object fn, tuple args, dict kwargs):
    """fn(*args, **kwargs) for an op the replay re-runs as a whole (matmul, linear, losses, ...):
    one step whose result is claimed (collapse_call).  fn is the public op itself: called here
    (depth > 0) or by a replay (no capture), it runs its eager body."""
    cdef Capture cap = CAPTURE
    if kwargs is None:
        kwargs = {}
    if cap.depth > 0:
        return fn(*args, **kwargs)
    cdef Py_ssize_t n_created = len(cap.created), n_steps = len(cap.steps)
    cdef Py_ssize_t n_unsupported = len(cap.unsupported), n_reads = len(cap.reads)
    cdef list versions = input_versions(args, kwargs)
    cap.depth += 1
    try:
        res = fn(*args, **kwargs)
    finally:
        cap.depth -= 1
    if not made_here(res, set([oid(t) for t in cap.created[n_created:]])):
        cap.unsupported.append(f"{getattr(fn, '__name__', fn)} returning something other than "
                               "new tensors")
        return res
    return collapse_call(cap, fn, args, kwargs, res, n_created, n_steps, n_unsupported, n_reads,
                         versions)


cdef bint saved_by(Record* r, object A) noexcept:
    """Whether record r saved array A, or a numpy view of it, for its VJP."""
    cdef int j
    cdef PyObject* b
    for j in range(MAX_SAVED):
        if r.saved[j] == NULL or not cnp.PyArray_Check(<object>r.saved[j]):
            continue
        if r.saved[j] == <PyObject*>A:
            return True
        b = cnp.PyArray_BASE(<cnp.ndarray>r.saved[j])
        if b != NULL and b == <PyObject*>A:
            return True
    return False


cdef bint checks_version(Record* r, TensorBase t) except -1:
    """Whether record r refuses its backward once t is written in place (it saved a value
    derived from t with t's version: layer_norm's normalised input), as if it had saved t."""
    cdef int j
    cdef object v = version_of(t)
    for j in range(MAX_SAVED):
        if r.ver[j] != NULL and r.ver[j] == <PyObject*>v:
            return True
    return False


cdef int capture_op(int op, tuple tensors, int n_rec_in, object attrs, TensorBase res) except -1:
    """Note an op that has a registered replay step (OP_REPLAY[op]) and has just run eagerly:
    `tensors` its record's inputs (n_rec_in of them, None for an absent optional one) then the
    other tensors it read, `attrs` what its replay step needs besides their arrays.  What the
    eager record saved (inputs and result) is noted too: the replay checks the versions of the
    externals among them and hands out a copy of a result the backward reads."""
    cdef Record* r = NULL
    if res._node >= 0 and TAPE.recs[res._node].op != OP_LEAF:
        r = &TAPE.recs[res._node]
    saved = tuple([r != NULL and t is not None and (saved_by(r, (<TensorBase>t)._array)
                                                    or checks_version(r, <TensorBase>t))
                   for t in tensors]) + ((r != NULL and saved_by(r, res._array)),)
    return capture_step((SK_OP, op, 0, None, None, (tensors, n_rec_in, attrs, (res,), saved),
                         res))


# -- every public op, without a hook of its own ---------------------------------------------------
# While a capture runs, the library's public ops reach _capture_op_call: the public functions
# (tapegrad.*, nn.functional.*, linalg, special, fft) from their entry (out_arg_call.h) and the
# creation functions' meta wrapper, Tensor's methods through routes tapegrad/replay.py installs.
# An op whose work the capture already noted step by step (the C-replayed elementwise ops and
# reductions, which have hooks) keeps those steps; any other op becomes one SK_CALL step.  So every
# op of the library replays, and an op added tomorrow does too, with no replay code of its own.

cdef int ROUTED_DEPTH = 0       # > 0 inside a routed op (the ops it calls are its own business)


def _capture_op_call(fn, tuple args, dict kwargs):
    """fn(*args, **kwargs), noted by the active capture of this thread (see above)."""
    global ROUTED_DEPTH
    if ROUTED_DEPTH > 0 or not capturing() or CAPTURE.depth > 0:
        return fn(*args, **kwargs)
    cdef Capture cap = CAPTURE
    cdef Py_ssize_t n_created = len(cap.created), n_steps = len(cap.steps)
    cdef Py_ssize_t n_unsupported = len(cap.unsupported), n_reads = len(cap.reads)
    cdef list versions = input_versions(args, kwargs)
    ROUTED_DEPTH += 1
    try:
        res = fn(*args, **kwargs)
    finally:
        ROUTED_DEPTH -= 1
    cdef set made = set([oid(t) for t in cap.created[n_created:]])
    if not made_here(res, made):
        return res
    if (len(cap.unsupported) == n_unsupported and len(cap.reads) == n_reads
            and made <= cap.claimed):
        return res                      # noted step by step already: those steps stay
    return collapse_call(cap, fn, args, kwargs, res, n_created, n_steps, n_unsupported, n_reads,
                         versions)


cdef str IN_PLACE_WRITE = "an in-place write to a tensor"    # (bump_version's reason)


def _capture_inplace_call(fn, tuple args, dict kwargs, list effects):
    """fn(*args, **kwargs) for a public in-place op (add_, fill_, x[i] = v, +=, ...) while a
    capture runs.  A write that records nothing into a tensor the call did not make (a module
    buffer: BatchNorm's num_batches_tracked.add_(1)) is noted in `effects` as
    (fn, args, kwargs, tensors read, target): the replay performs it again after its forward
    (tapegrad/replay.py checks that no step reads the target, so the order against the steps
    cannot matter).  Any other in-place write stays noted as unsupported (bump_version)."""
    global ROUTED_DEPTH
    if ROUTED_DEPTH > 0 or not capturing() or CAPTURE.depth > 0:
        return fn(*args, **kwargs)
    cdef Capture cap = CAPTURE
    cdef Py_ssize_t n_created = len(cap.created), n_steps = len(cap.steps)
    cdef Py_ssize_t n_unsupported = len(cap.unsupported), n_reads = len(cap.reads)
    cdef list tensors = []
    collect_tensors(args, tensors)
    if kwargs:
        collect_tensors(tuple(kwargs.values()), tensors)
    cdef list versions = [version_of(<TensorBase>t).value for t in tensors]
    cdef bint recording = grad_enabled()
    ROUTED_DEPTH += 1
    try:
        res = fn(*args, **kwargs)
    finally:
        ROUTED_DEPTH -= 1
    target = args[0] if args else None
    if not isinstance(target, TensorBase) or (res is not None and res is not target):
        return res
    cdef TensorBase tt = <TensorBase>target
    if tt._base is not None or tt._requires_grad or (
            tt._node >= 0 and TAPE.recs[tt._node].op != OP_LEAF):
        return res                      # a view, a parameter, or a write that recorded
    if recording and any([(<TensorBase>t)._requires_grad for t in tensors]):
        return res
    if any([t is target for t in cap.created[:n_created]]):
        return res                      # a tensor the call made: its readers are steps
    if len(cap.reads) != n_reads or any([why != IN_PLACE_WRITE
                                         for why in cap.unsupported[n_unsupported:]]):
        return res
    if holds_array(args) or (kwargs and holds_array(tuple(kwargs.values()))):
        return res
    cdef Py_ssize_t j
    for j in range(len(tensors)):       # the op wrote into its target only
        if tensors[j] is not target and version_of(
                <TensorBase>tensors[j]).value != <Py_ssize_t>versions[j]:
            return res
    forget_steps(cap, n_steps, n_created)   # what the op did inside is its own business
    del cap.unsupported[n_unsupported:]
    effects.append((fn, args, kwargs or {}, tuple(tensors), target))
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


def _capture_suspend():
    """Stop noting this thread's ops for a while (a whole training step's backward() or
    optimizer step, run eagerly inside the capture: tapegrad/_step_phases.py); returns the
    Capture for _capture_resume.  None when no capture runs on this thread."""
    global CAPTURE
    if not capturing():
        return None
    cap = CAPTURE
    CAPTURE = None
    return cap


def _capture_resume(Capture cap):
    """Note ops again into `cap` (from _capture_suspend)."""
    global CAPTURE
    CAPTURE = cap


def _capture_read(TensorBase t, str kind, value):
    """Called by the facade's item/bool/tolist/numpy (float/int go through item): a Python-level
    read of t's values, which a replay must re-check (kind: "item", "bool", "tolist", "numpy").
    numpy() hands out the memory itself: values saved under saved-tensor hooks are packed first
    (saved_hooks.pxi), before the caller can write through it."""
    if kind == "numpy" and TAPE.pending_packs:
        flush_packs(True)
    if capturing():
        CAPTURE.reads.append((t, kind, value))


# -- capture hooks (called by the ops; replay.pxi replays what they note) -------------------

cdef int capture_binary(int kop, object a, object b, bint promote, bint in_c,
                        TensorBase res) except -1:
    if (promote or not in_c or (kop == TG_POW and not (
            isinstance(a, TensorBase) and not isinstance(b, TensorBase)
            and (b == 0 or special_exponent(b - 1))))):
        # Mixed dtypes, a layout the C kernels do not take, or a pow whose derivative eager takes
        # from numpy: the replay re-runs the operator on the slots (a SK_CALL step).
        if kop > TG_POW:
            return capture_unsupported(f"{TG_BINARY_NAMES[kop]} with mixed dtypes, a "
                                       "non-contiguous operand or a broadcast the C kernels do "
                                       "not take")
        tensors = [o for o in (a, b) if isinstance(o, TensorBase)]
        return capture_step((SK_CALL, 0, 0, None, None,
                             (TG_BINARY_OPERATORS[kop], (a, b), {}, tuple(tensors), (res,)), res))
    return capture_step((SK_BINARY, 0, kop, a, b, None, res))


cdef int capture_unary(int op, int kop, TensorBase x, object A, bint in_c,
                       TensorBase res) except -1:
    if A is not x._array or not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>A):
        return capture_unsupported(f"{OP_NAMES[op]} of a non-float or non-contiguous tensor")
    # aux: whether the op's VJP reads its input (else its output, or nothing): what the replay
    # hands the VJP as saved value 0, read off the eager record when there is one
    cdef bint saves_input = op == OP_LOG
    if res._node >= 0 and TAPE.recs[res._node].op == op:
        saves_input = TAPE.recs[res._node].saved[0] == <PyObject*>A
    return capture_step((SK_UNARY if in_c else SK_UNARY_NUMPY, op, kop, x, None, saves_input,
                         res))


cdef int capture_reduce(int op, TensorBase x, object A, tuple axes, bint keepdim, double count,
                        TensorBase res) except -1:
    if A is not x._array or A.dtype.kind != "f":
        return capture_unsupported(f"{OP_NAMES[op]} with a dtype argument or of integers")
    if not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>A):     # its summation order is the view's
        return capture_unsupported(f"{OP_NAMES[op]} of a non-contiguous tensor")
    return capture_step((SK_REDUCE, op, 0, x, None, (axes, keepdim, count), res))


cdef list TG_BINARY_NAMES = ["add", "sub", "mul", "div", "pow", "maximum", "minimum"]
cdef list TG_BINARY_OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv,
                                 operator.pow]


# -- kernels on raw buffers ----------------------------------------------------------------------
