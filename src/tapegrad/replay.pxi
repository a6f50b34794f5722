# ---------------------------------------------------------------------------------------------
# Replay: a captured call (capture.pxi) run again on new values, forward and backward, in C.
#
# tapegrad/compile.py turns a Capture into a Program: numbered value slots (the external tensors
# first: arguments and tensors the function closed over, read in place at each replay; then one
# slot per intermediate) and a list of steps in creation order, already pruned to what reaches the
# outputs.  A BufferSet holds one replay's values: every intermediate and adjoint buffer is
# allocated once and reused by later replays (a set whose graph is still alive is never reused:
# the next replay takes another set).
#
# Each step repeats exactly what the eager op computes (the same C kernels on the same operands,
# the same numpy calls where eager uses numpy), and its backward repeats the eager VJP's formula
# term by term, so replayed values and gradients equal eager ones bit for bit.  The common steps
# (elementwise ops on contiguous float buffers) run without touching a Python object.
# ---------------------------------------------------------------------------------------------

from libc.math cimport copysign
from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memcpy, memset
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.list cimport PyList_GET_ITEM, PyList_New, PyList_SET_ITEM


cdef struct Step:
    int kind
    int op              # OP_* code (unary / reduce)
    int kop             # TG_* kernel code
    int a, b, out       # slots; -1: a Python scalar operand (ca / cb)
    double ca, cb
    float fa, fb        # the scalars as float32 (what the float32 kernels read)
    Py_ssize_t n        # elements of the output
    bint grad_a, grad_b # whether a / b receive a gradient
    bint bcast_a, bcast_b   # a / b has another shape than out (summed down in backward)
    # SK_BINARY: the operands as the C kernels read them (KernelOperands): element stride within
    # a row (0: one value), the bytes they move on by between rows, and the row length (0: no
    # operand repeats over rows, one kernel call for all n).
    ptrdiff_t stride_a, stride_b, step_a, step_b, cols
    double count        # SK_SUM_ALL: the divisor of a mean (0 for a sum)
    Py_ssize_t n_out    # slots the step writes: out .. out + n_out - 1 (several: a SK_CALL of
                        # an op returning a tuple)
    int group           # the fused group it belongs to (fusion.pxi), or -1
    int bc_a, bc_b      # in a group: index of a / b's full-size contribution buffer (a
                        # one-element slot's gradient, summed after the block loop), or -1
    int partner         # in a group, a sin (cos) whose input gets a gradient: index of the
                        # buffer filled with the cos (sin) of its input in the same pass
                        # (tg_sincos), for its backward (full-size, filled by the forward; a
                        # block row in a recomputing group, filled by its backward); or -1


cdef enum:
    FUSE_MIN_N = 1024           # smaller steps: a block is the whole buffer, nothing to gain
    FUSE_ROW_BYTES = 32768      # the rows of one group's block stay in L1 (48 KiB here): with
                                # them in L2 (196608, earlier) a block of + and * steps ran at
                                # L2's bandwidth (300-op chain of * + at 1e6: 67 -> 29 ms)
    FUSE_MAX_BLOCK = 8192
    FUSE_MIN_BLOCK = 256
    FUSE_RECOMPUTE_ROW_BYTES = 1048576  # a recomputing backward's block rows (all the group's
                                        # values): half the L2 of a core here (2 MiB)
    FUSE_RECOMPUTE_BYTES = 16777216     # saved values a group's backward would read, above which
                                        # it recomputes them (fusion.pxi; measured crossover of
                                        # the 300-op bench chain: ~16 MB, 10,000 elements)


cdef struct FuseGroup:
    Py_ssize_t first, last      # its steps: first .. last (consecutive)
    Py_ssize_t n                # elements of every step's result
    Py_ssize_t block            # elements per block (a multiple of 64, or n)
    int n_rows                  # value rows + adjoint rows + 2 scratch rows
    int scratch                 # index of the first scratch row
    int n_bc                    # contributions to one-element slots (full-size buffers)
    int bc_base                 # index of its first one among the program's
    bint recompute              # its backward recomputes its values block by block from its
                                # inputs instead of reading full-size saved values (fusion.pxi)
    int* brow                   # recompute: slot -> its value row in the backward's block, or -1
                                # (not a member: its input's copy or its full-size buffer)
    Py_ssize_t bblock           # elements per block of its backward (block unless recompute)
    int bscratch                # its backward's first scratch row (scratch unless recompute)
    int copy_base, n_copies     # recompute: its inputs the forward copies (Program.copy_slots)


cdef inline void k_binary(bint f64, int kop, Py_ssize_t n, const void* a, Py_ssize_t sa,
                          const void* b, Py_ssize_t sb, void* out) noexcept nogil:
    if f64:
        pooled_binary_f64(kop, n, <const double*>a, sa, <const double*>b, sb, <double*>out)
    else:
        pooled_binary_f32(kop, n, <const float*>a, sa, <const float*>b, sb, <float*>out)


cdef inline void k_rows(bint f64, int kop, Py_ssize_t n, Py_ssize_t cols,
                        const void* a, Py_ssize_t sa, Py_ssize_t da,
                        const void* b, Py_ssize_t sb, Py_ssize_t db, void* out) noexcept nogil:
    """k_binary with an operand repeated over rows of `cols` elements (see binary_rows)."""
    cdef KernelOperands ko
    ko.t = cnp.NPY_FLOAT64 if f64 else cnp.NPY_FLOAT32
    ko.pa = <const char*>a
    ko.sa = sa
    ko.da = da
    ko.pb = <const char*>b
    ko.sb = sb
    ko.db = db
    ko.cols = cols
    binary_rows(kop, n, &ko, <char*>out)


cdef inline void k_unary(bint f64, int kop, Py_ssize_t n, const void* a,
                         void* out) noexcept nogil:
    if f64:
        pooled_unary_f64(kop, n, <const double*>a, <double*>out)
    else:
        pooled_unary_f32(kop, n, <const float*>a, <float*>out)


cdef object new_empty(tuple shape, int typenum):
    """np.empty(shape, dtype) by the C API (no argument parsing: it runs at every replay).
    PyArray_SimpleNew, not PyArray_EMPTY: the same array for a number dtype, ~100 fewer
    instructions a call (PyArray_Empty's descriptor adaptation; an output and a handed-out
    gradient are made at every replayed call)."""
    cdef cnp.npy_intp dims[64]
    cdef int nd = len(shape), j
    if nd > 64:
        return np.empty(shape, cnp.PyArray_TypeObjectFromType(typenum))
    for j in range(nd):
        dims[j] = shape[j]
    return cnp.PyArray_SimpleNew(nd, dims, typenum)


cdef extern from *:
    """
    /* Whether a fresh slot's array from an earlier replay (borrowed from the set's list) can take
       this replay's result in place of a new array: nothing but the set refers to it any more
       (the tensor handed out for it died, and with it every view, buffer export and saved value
       made from it, each of which holds a reference), it owns its memory, is writeable and is
       still the one the set wrote.  Nobody can observe the reuse; a replay at size 1 skips an
       allocation and a free. */
    static inline int tg_reusable_result(PyObject* a, void* data) {
        return a != NULL && Py_REFCNT(a) == 1 && PyArray_CheckExact(a)
            && PyArray_CHKFLAGS((PyArrayObject*)a, NPY_ARRAY_OWNDATA | NPY_ARRAY_WRITEABLE)
            && PyArray_DATA((PyArrayObject*)a) == data;
    }
    """
    bint reusable_result "tg_reusable_result" (PyObject* a, void* data) noexcept


cdef inline void list_put(list items, Py_ssize_t i, object o) noexcept:
    """items[i] = o in a list made by PyList_New(n) (its entries start NULL): a call path's list
    made at its final size, without append's growth (a reallocation per list)."""
    Py_INCREF(o)                        # (PyList_SET_ITEM steals a reference)
    PyList_SET_ITEM(items, i, o)


cdef inline void list_set(list items, Py_ssize_t i, object o) noexcept:
    """items[i] = o for an index known to be in range, without the generic item assignment's
    checks (the call path assigns a slot's array or adjoint several times per replay)."""
    cdef PyObject* old = <PyObject*>PyList_GET_ITEM(items, i)
    Py_INCREF(o)                        # (PyList_SET_ITEM steals a reference)
    PyList_SET_ITEM(items, i, o)
    Py_XDECREF(old)


cdef inline void fill_f64(double* dst, Py_ssize_t n, double v) noexcept:
    cdef Py_ssize_t j
    for j in range(n):
        dst[j] = v


cdef inline void fill_f32(float* dst, Py_ssize_t n, float v) noexcept:
    cdef Py_ssize_t j
    for j in range(n):
        dst[j] = v


# -- debug: thread CPU time per step (tapegrad._replay._set_step_timing) -----------------------
# Off unless a profiling session turns it on: one flag test per step.  Keys: ("forward" or
# "backward", the step's kind, its op or re-run function's name); values: [ns, count].

cdef extern from "<time.h>" nogil:
    ctypedef struct timespec_t "struct timespec":
        long tv_sec
        long tv_nsec
    int clock_gettime(int clk, timespec_t* ts)
    int CLOCK_THREAD_CPUTIME_ID

cdef bint step_timing = False
cdef dict step_times = {}
_STEP_KINDS = {SK_BINARY: "binary", SK_UNARY: "unary", SK_UNARY_NUMPY: "unary_numpy",
               SK_REDUCE: "reduce", SK_SUM_ALL: "sum_all", SK_CALL: "call",
               SK_MATMUL: "matmul", SK_OP: "op"}


cdef inline long long thread_ns() noexcept nogil:
    cdef timespec_t ts
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return ts.tv_sec * 1000000000LL + ts.tv_nsec


cdef int note_step_time(Program p, Py_ssize_t i, bint backward, long long t0) except -1:
    cdef long long dt = thread_ns() - t0
    cdef Step* s = &p.steps[i]
    if s.group >= 0:
        key = ("backward" if backward else "forward", "fused",
               f"{p.groups[s.group].last - p.groups[s.group].first + 1} steps")
    else:
        name = OP_NAMES[s.op] if 0 <= s.op < len(OP_NAMES) else str(s.op)
        if s.kind == SK_CALL:
            name = getattr((<tuple>p.aux[i])[0], "__name__", "?")
        key = ("backward" if backward else "forward", _STEP_KINDS.get(s.kind, s.kind), name)
    return note_time(key, dt)


cdef int note_time(tuple key, long long dt) except -1:
    entry = step_times.get(key)
    if entry is None:
        step_times[key] = [dt, 1]
    else:
        entry[0] += dt
        entry[1] += 1
    return 0


def _set_step_timing(bint on):
    """Debug: time every replayed step (thread CPU time) into _step_times() (cleared here)."""
    global step_timing
    step_timing = on
    step_times.clear()


def _step_times():
    """Debug: {(direction, kind, name): [ns, count]} since _set_step_timing(True)."""
    return {k: tuple(v) for k, v in step_times.items()}


cdef class BufferSet(CompiledBackward):
    """One replay's values and adjoints (see the top of this file).  A recorded replay's
    OP_FUNCTION record holds its set as its ctx, with the call's backward state below (no node
    object per call: its grad_fn, a CompiledFunctionBackward, is made when first read)."""
    cdef list arrays            # slot -> ndarray (externals: the tensors' arrays at forward)
    cdef void** ptr             # slot -> data pointer of arrays[slot]
    cdef list adj               # slot -> adjoint buffer (None for slots that get no gradient)
    cdef list given             # slot -> an array a re-run op's VJP returned, adopted in this
                                # backward as the slot's adjoint instead of copying it into adj
                                # (read only: a second contribution moves it into adj first)
    cdef Py_ssize_t n_given     # given[] entries set since drop_given last cleared them (an
                                # upper bound: drop_given skips its walk when 0)
    cdef void** aptr            # slot -> data of the current adjoint (given[k], else adj[k])
    cdef char* touched          # slot -> whether its adjoint holds a value in this backward
    cdef object scratch0, scratch1
    cdef void* s0
    cdef void* s1
    cdef public bint in_use
    cdef list calls             # step -> (result tensor, {slot: proxy tensor}) of re-run ops
    cdef list contiguous        # slot -> the C-contiguous copy ptr[slot] points into (re-run
                                # ops' non-contiguous results that C kernels read), or None
    cdef Record* recs           # step -> the record an SK_OP step's replay fills for its VJP
    cdef Py_ssize_t n_recs
    # fused groups (fusion.pxi)
    cdef object rows            # the block rows of each lane (values, adjoints, scratch)
    cdef char* rowp
    cdef Py_ssize_t n_lanes     # lanes the rows and the lane flags below have room for
    cdef char* lane_touched     # each lane's `touched` while a group's backward runs
    cdef char* lane_bcw         # each lane's written-flags of the contributions below
    cdef list bc                # contribution to a one-element slot -> its full-size buffer
    cdef void** bcp
    cdef char* bcw              # whether it was written in this backward
    cdef list partners          # partner -> its full-size buffer (Step.partner; none for the
    cdef void** pptr            # partners of recomputing groups, which live in block rows)
    cdef list copies            # Program.copy_slots[j] -> its copy made by the forward
    cdef void** cptr
    # the backward of the recorded call holding the set (Program.run), cleared by release():
    # an idle pooled set holding its Program would be a cycle (Program -> pool -> set -> Program)
    # that only the cyclic collector frees, with the last call's inputs
    cdef Program program
    cdef Py_ssize_t n_out
    cdef list versions          # (Version, value at forward) of the externals and outputs
                                # the backward reads (None: none)
    cdef list inputs            # the externals
    # what a create_graph backward needs to run the call again eagerly (rerun)
    cdef ReplayPlan plan
    cdef object call
    cdef tuple args
    cdef dict kwargs
    cdef object rng_state       # the global stream's state before the replay's forward, or None

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.recs != NULL:
            for i in range(self.n_recs):
                clear_step_record(&self.recs[i])
            free(self.recs)
        free(self.ptr)
        free(self.aptr)
        free(self.touched)
        free(self.lane_touched)
        free(self.lane_bcw)
        free(self.bcp)
        free(self.bcw)
        free(self.pptr)
        free(self.cptr)

    cdef int check_versions(self) except -1:
        cdef Version v
        if self.versions is None:
            return 0
        for v, at, arr, node in self.versions:
            if v.value != at:
                # eager's message (the one builder): a saved external is named by its tensor's
                # grad_fn now (none for a leaf), a saved output by the node that made it in the
                # capture (eager's record saved it with that node)
                raise modified_in_place_error(
                    arr, _grad_fn_name_of(node) if isinstance(node, TensorBase) else node,
                    v.value, at)
        return 0

    cdef Program owner(self):
        if self.program is None:        # (a record never holds a released set: release)
            raise RuntimeError(BACKWARD_TWICE)
        return self.program

    cdef object backward(self, list g, list seeds):
        cdef Program program = self.owner()
        self.check_versions()
        return program.backward_c(self, g, seeds)

    cdef object backward_one(self, object g, object seed):
        cdef Program program = self.owner()
        self.check_versions()
        return program.backward_one(self, g, seed)

    cdef object rerun(self, tuple args, dict kwargs):
        """The Program's outputs of the call computed eagerly again (on args, kwargs: the call's
        own, or aliases of its tensors): the same values as the replay's, its random draws
        included (the global stream is set back to its state before the replay's forward for
        the re-run, then restored)."""
        cdef list kept = self.program.state_before_rerun(self.inputs)
        try:
            if self.rng_state is None:
                return self.plan.program_outputs(self.call(*args, **(kwargs or {})))
            bits = self.program.global_rng().bit_generator
            now = bits.state
            bits.state = self.rng_state
            try:
                return self.plan.program_outputs(self.call(*args, **(kwargs or {})))
            finally:
                bits.state = now
        finally:
            restore_state(kept)

    cdef object graph_backward(self, list g, list seeds):
        """create_graph=True: the call run again eagerly on the same externals (its values are
        the replay's: same ops, same inputs), then its recorded backward, itself recorded.  An
        input's seed (its adjoint so far, CompiledBackward) is that input's own gradient in the
        backward, so the call's contributions are summed onto it in the eager order."""
        cdef Program program = self.owner()
        if program.rerun_kind == RERUN_NONE:
            raise RuntimeError(
                "create_graph=True through a tapegrad.compile'd call that draws random numbers "
                "from a generator= argument is not supported: call the original function "
                "(compiled.fn) for higher-order derivatives")
        self.check_versions()
        cdef bint was = grad_enabled()
        # The re-run reads each argument tensor that takes a gradient through an alias (one
        # per tensor, so `a is b` in the call still holds) whose gate is closed while the
        # gradients are asked for, by the aliases: each input, an argument computed from
        # another one (f(x, g(x))) or a parameter the call reads that an argument is computed
        # from (f(x, w.sum())), gets its direct gradient only; the sweep carries it on through
        # its history.  (By the arguments themselves, x's gradient included the path through
        # g(x), which the sweep added again: SILENT.)
        cdef dict aliases = {}
        cdef list gate = [True]
        _set_grad_enabled(True)
        try:
            args = aliased_args(self.args, aliases, gate)
            kwargs = ({k: aliased_args(v, aliases, gate) for k, v in (<dict>self.kwargs).items()}
                      if self.kwargs else self.kwargs)
            outs = self.rerun(args, kwargs)
        finally:
            _set_grad_enabled(was)
        cdef list inputs = [aliases.get(oid(t), t) for t in self.inputs]
        cdef list given = seeds
        cdef list roots = []
        seeds = []
        cdef Py_ssize_t j
        for j in range(self.n_out):
            if g[j] is not None and (<TensorBase>outs[j])._requires_grad:
                roots.append(outs[j])
                seeds.append(g[j])
        if given is not None:
            for j in range(min(len(given), len(inputs))):
                if given[j] is not None and (<TensorBase>inputs[j])._requires_grad:
                    roots.append(inputs[j])
                    seeds.append(given[j])
        wanted = [t for t in inputs if (<TensorBase>t)._requires_grad]
        if not roots or not wanted:
            return (None,) * len(inputs)
        gate[0] = False
        try:
            grads = _grad(tuple(roots), tuple(wanted), tuple(seeds), True, True, True, False)
        finally:
            gate[0] = True
        found = {id(t): gr for t, gr in zip(wanted, grads)}
        return tuple([found.get(id(t)) for t in inputs])

    cdef release(self):
        """The graph was freed (backward without retain_graph, or its record died): the set can
        be reused.  Returns the grad_fn its record keeps instead (one without a backward)."""
        cdef Program program = self.program
        if program is None:
            return None
        self.program = None
        self.in_use = False
        # (each field's old value is dropped after the field is cleared: dropping may run code)
        self.inputs = None              # the call's tensors, and what holds the ReplayPlan (a
        self.args = None                # cycle through its Program)
        self.kwargs = None
        self.plan = None
        self.call = None
        self.versions = None
        self.rng_state = None
        if program.freed is None:       # one for all its calls: no node per call
            program.freed = released_node(program.input_meta, program.output_meta)
        return program.freed

    def grad_fn_node(self):
        """The grad_fn of the recorded call holding the set: a node that holds the set now (its
        record holds the node instead, so it shows the same node at every read)."""
        cdef Program program = self.owner()
        cdef CompiledFunctionBackward node = released_node(program.input_meta,
                                                           program.output_meta)
        node.state = self
        return node


cdef void clear_step_record(Record* r) noexcept:
    """Drop what an SK_OP step's replay put in its record (replay_fn), leaving it zeroed."""
    cdef int j
    for j in range(MAX_SAVED):
        Py_XDECREF(r.saved[j])
        Py_XDECREF(r.ver[j])
    Py_XDECREF(r.aux)
    free(r.more)                        # (an op with more than MAX_IN inputs: forward_op)
    memset(r, 0, sizeof(Record))


cdef class Lease:
    """Program.forward's handle on a replay's BufferSet (Python callers): the set is free again
    when this dies or is released.  (A recorded replay's record holds its set itself.)"""
    cdef public BufferSet buffers

    def array(self, Py_ssize_t k):
        """Slot k's value in this replay."""
        return self.buffers.arrays[k]

    def release(self):
        if self.buffers is not None:
            self.buffers.in_use = False
            self.buffers = None

    def __dealloc__(self):
        if self.buffers is not None:
            self.buffers.in_use = False


@cython.auto_pickle(False)   # (unpicklable: see Tape's note)
cdef class Program:
    """A captured call as steps over slots (built by tapegrad/compile.py)."""
    cdef Step* steps
    cdef Py_ssize_t n_steps, n_slots, n_ext, max_n
    cdef bint f64
    cdef object dtype
    cdef list shapes            # slot -> shape
    cdef list typenums          # slot -> dtype number (what a re-run op must give back)
    cdef list sizes             # slot -> size
    cdef list grad              # slot -> bool: receives a gradient
    cdef list aux               # step -> Python data (reduce axes ...)
    cdef list call_grad_slots   # SK_CALL step -> its operand slots that receive a gradient
    cdef list call_args         # SK_CALL step -> (its positional arguments with None for each
                                # slot, ((position, slot), ...)) when the slots are top-level
                                # arguments and it has no keywords (no fill_slots walk), or None
    cdef list outputs           # slots returned by the call
    cdef set fresh              # slots given a new array at every replay (outputs, reductions)
    cdef list fresh_new         # those of them the forward allocates (not computed elsewhere)
    cdef int typenum            # the program's dtype number
    cdef set replaced           # slots whose array a step computes outside the set's buffers
    cdef set c_read             # slots C kernels read through raw pointers (C-contiguous)
    cdef list adj_dtypes        # slot -> dtype of its adjoint (the program's, but for slots only
                                # re-run ops touch: those may be of another float dtype)
    cdef int* adj_typenum       # slot -> adj_dtypes[slot].num (read at every gradient given)
    cdef list pool
    cdef bint any_grad          # some external receives a gradient
    cdef bint all_c             # every step is a C step (none re-runs an op: deterministic)
    cdef public int rerun_kind  # how a create_graph backward can run the call again eagerly:
                                # RERUN_SAME (its re-run ops draw no random numbers), RERUN_RNG
                                # (they draw from the global stream: its state is kept at each
                                # replay and restored for the re-run), RERUN_NONE (they draw
                                # from a generator= argument: not supported)
    cdef public object global_rng   # () -> the numpy Generator of the global stream
    cdef object input_meta, output_meta     # the replay node's (shape, dtype)s: computed once
    cdef CompiledFunctionBackward freed     # the grad_fn of its calls whose graph was freed
    cdef list out_copy          # output j -> whether a step's backward reads its buffer where no
                                # version check guards it (handed out as a copy: run)
    cdef list out_call          # output j -> (step, index) of the re-run op (SK_CALL) that made
                                # it, whose result tensor's version counter the handed-out
                                # tensor shares (run), or None
    cdef Py_ssize_t item        # bytes per element of the program's dtype
    # fused groups of elementwise steps (fusion.pxi)
    cdef FuseGroup* groups
    cdef Py_ssize_t n_groups
    cdef int* vrow              # slot -> its value row in its group's block, or -1 (full buffer)
    cdef int* arow              # slot -> its adjoint row in its group's block, or -1
    cdef int* prow              # partner -> its row in a recomputing group's backward, or -1
                                # (a full-size buffer the forward fills)
    cdef list copy_slots        # -> a recomputing group's input slot, copied by its forward
    cdef Py_ssize_t recompute_bytes     # a group whose backward would read more saved bytes
                                        # than this recomputes them (fusion.pxi)
    cdef Py_ssize_t n_bc        # contributions to one-element slots in groups
    cdef list bc_slots          # -> (slot, the step's out slot)
    cdef Py_ssize_t n_partner   # the partner buffers of fused sin / cos steps (Step.partner)
    cdef list group_writes      # group -> the full-size adjoints its backward writes
    cdef Py_ssize_t rows_bytes  # the largest group's block rows
    cdef list effects           # (fn, args template, kwargs template): in-place writes into
                                # tensors the call did not make (module buffers), performed
                                # again after the forward (add_effect)

    def __cinit__(self):
        self.steps = NULL
        self.adj_typenum = NULL
        self.groups = NULL
        self.vrow = NULL
        self.arow = NULL
        self.prow = NULL

    def __dealloc__(self):
        cdef Py_ssize_t g
        if self.groups != NULL:         # (each group's row map first: it lives in the array)
            for g in range(self.n_groups):
                free(self.groups[g].brow)
        free(self.groups)
        free(self.steps)
        free(self.adj_typenum)
        free(self.vrow)
        free(self.arow)
        free(self.prow)

    def __init__(self, dtype, list shapes, list grad, Py_ssize_t n_ext, list steps,
                 list outputs, list typenums=None, observed=(), bint fuse=True,
                 Py_ssize_t recompute_bytes=FUSE_RECOMPUTE_BYTES):
        """steps: (kind, op, kop, a, b, out, ca, cb, aux) tuples in forward order; observed:
        slots Python reads besides the outputs (value guards); fuse: form fused groups;
        recompute_bytes: the saved bytes above which a group's backward recomputes its values
        (fusion.pxi; < 0: never)."""
        cdef Py_ssize_t i
        cdef Step* s
        self.dtype = np.dtype(dtype)
        self.typenum = self.dtype.num
        self.f64 = self.typenum == cnp.NPY_FLOAT64
        self.item = 8 if self.f64 else 4
        self.shapes = [tuple(sh) for sh in shapes]
        self.typenums = list(typenums) if typenums is not None else None
        self.sizes = [shape_prod(sh, 0, len(sh)) for sh in self.shapes]
        self.grad = list(grad)
        self.n_slots = len(shapes)
        self.n_ext = n_ext
        self.outputs = list(outputs)
        self.max_n = max(self.sizes + [1])
        self.n_steps = len(steps)
        self.steps = <Step*>calloc(max(self.n_steps, 1), sizeof(Step))
        if self.steps == NULL:
            raise MemoryError()
        self.aux = []
        self.call_args = [None] * self.n_steps
        self.call_grad_slots = [None] * self.n_steps
        self.fresh = set(outputs)
        self.replaced = set()
        self.c_read = set()
        self.adj_dtypes = [np.dtype(self.dtype) if self.typenums is None or not self.grad[k]
                           else np.dtype(cnp.PyArray_TypeObjectFromType(self.typenums[k]))
                           for k in range(self.n_slots)]
        self.adj_typenum = <int*>malloc(max(self.n_slots, 1) * sizeof(int))
        if self.adj_typenum == NULL:
            raise MemoryError()
        for k in range(self.n_slots):
            self.adj_typenum[k] = (<object>self.adj_dtypes[k]).num
        for i in range(self.n_steps):
            kind, op, kop, a, b, out, ca, cb, aux = steps[i]
            s = &self.steps[i]
            s.kind = kind
            s.op = op
            s.kop = kop
            s.a = a
            s.b = b
            s.out = out
            s.ca = ca
            s.cb = cb
            s.fa = <float>s.ca
            s.fb = <float>s.cb
            s.n = self.sizes[out]
            s.n_out = 1
            s.grad_a = a >= 0 and self.grad[a]
            s.grad_b = b >= 0 and self.grad[b]
            s.bcast_a = a >= 0 and self.shapes[a] != self.shapes[out]
            s.bcast_b = b >= 0 and self.shapes[b] != self.shapes[out]
            self.aux.append(aux)
            if kind == SK_BINARY or kind == SK_UNARY or kind == SK_REDUCE:
                if a >= 0:
                    self.c_read.add(a)
                if b >= 0:
                    self.c_read.add(b)
            if kind == SK_BINARY:
                self.set_layout(s)
            elif kind == SK_CALL:
                s.n_out = len(aux[4])
                self.call_args[i] = flat_call_args(aux[1], aux[2])
                self.call_grad_slots[i] = [k for k in aux[3] if self.grad[k]]
                self.fresh.update(aux[4])
                self.replaced.update(aux[4])
            elif kind == SK_OP:
                in_slots, n_rec_in, attrs, out_slots, saved = aux
                if OP_REPLAY[op] == NULL:
                    raise RuntimeError(f"tapegrad.compile: {OP_NAMES[op]} has no replay step")
                s.n_out = len(out_slots)
                self.call_grad_slots[i] = [k for k in in_slots[:n_rec_in]
                                           if k >= 0 and self.grad[k]]
                self.fresh.update(out_slots)
                self.replaced.update(out_slots)
            elif kind == SK_MATMUL:
                self.fresh.add(out)
                self.replaced.add(out)
            elif kind == SK_REDUCE:
                axes, keepdim, count = aux
                if len(axes) == len(self.shapes[a]) and self.sizes[a] > 0:
                    s.kind = SK_SUM_ALL         # all dims: eager's cascade_reduce, in C
                    s.count = count if op == OP_MEAN else 0
                else:
                    self.fresh.add(out)
                    self.replaced.add(out)
        self.pool = []
        self.effects = []
        self.bc_slots = []
        self.group_writes = []
        self.copy_slots = []
        self.recompute_bytes = recompute_bytes
        self.vrow = <int*>malloc(max(self.n_slots, 1) * sizeof(int))
        self.arow = <int*>malloc(max(self.n_slots, 1) * sizeof(int))
        if self.vrow == NULL or self.arow == NULL:
            raise MemoryError()
        for k in range(self.n_slots):
            self.vrow[k] = self.arow[k] = -1
        for i in range(self.n_steps):
            self.steps[i].group = -1
            self.steps[i].bc_a = self.steps[i].bc_b = -1
            self.steps[i].partner = -1
        self.any_grad = any(self.grad[:n_ext])
        self.fresh_new = sorted([k for k in self.fresh
                                 if k >= self.n_ext and k not in self.replaced])
        read = self.backward_read_slots()
        self.out_copy = [k in read for k in self.outputs]
        made_by = {}
        for i in range(self.n_steps):
            if self.steps[i].kind == SK_CALL:
                for j, k in enumerate(self.aux[i][4]):
                    made_by[k] = (i, j)
        self.out_call = [made_by.get(k) for k in self.outputs]
        self.all_c = self.deterministic()
        self.rerun_kind = RERUN_SAME if self.all_c else RERUN_NONE
        if fuse:
            form_groups(self, observed)

    cdef int set_layout(self, Step* s) except -1:
        """A binary step's operands as the kernels read them: the result's shape at stride 1,
        one value (a scalar, a one-element slot) at stride 0, or a row or one value per row
        repeated over the result's rows: the layouts kernel_operands took in the eager op."""
        cdef Py_ssize_t item = 8 if self.f64 else 4
        cdef bint rows_a = self.operand_layout(s.a, s.out, &s.stride_a, &s.step_a)
        cdef bint rows_b = self.operand_layout(s.b, s.out, &s.stride_b, &s.step_b)
        s.cols = 0
        if rows_a or rows_b:
            s.cols = self.shapes[s.out][len(self.shapes[s.out]) - 1]
        s.step_a = s.step_a * item if rows_a else (s.cols * item if s.stride_a == 1 else 0)
        s.step_b = s.step_b * item if rows_b else (s.cols * item if s.stride_b == 1 else 0)
        return 0

    cdef bint operand_layout(self, Py_ssize_t k, Py_ssize_t out, ptrdiff_t* stride,
                             ptrdiff_t* step) except -1:
        """Slot k's layout against slot out (see set_layout); True for a repeated row or value
        per row (*step then in elements)."""
        cdef cnp.npy_intp dk[64]
        cdef cnp.npy_intp do[64]
        stride[0] = 0
        step[0] = 0
        if k < 0:
            return False
        shape_k, shape_out = self.shapes[k], self.shapes[out]
        if shape_k == shape_out:
            stride[0] = 1
            return False
        if self.sizes[k] == 1:
            return False
        if len(shape_k) <= 64 and len(shape_out) <= 64:
            for i in range(len(shape_k)):
                dk[i] = shape_k[i]
            for i in range(len(shape_out)):
                do[i] = shape_out[i]
            if rows_layout(len(shape_out), do, len(shape_k), dk, stride, step):
                return True
        raise RuntimeError(f"tapegrad.compile: a binary step's operand of shape {shape_k} does "
                           f"not broadcast to {shape_out} as the C kernels read it")

    cdef BufferSet new_buffers(self):
        cdef BufferSet bs = BufferSet.__new__(BufferSet)
        cdef Py_ssize_t k, i
        bs.ptr = <void**>calloc(self.n_slots, sizeof(void*))
        bs.aptr = <void**>calloc(self.n_slots, sizeof(void*))
        bs.touched = <char*>calloc(self.n_slots, sizeof(char))
        if bs.ptr == NULL or bs.aptr == NULL or bs.touched == NULL:
            raise MemoryError()
        bs.arrays = [None] * self.n_slots
        bs.adj = [None] * self.n_slots
        bs.given = [None] * self.n_slots
        bs.calls = [None] * self.n_steps
        bs.contiguous = [None] * self.n_slots
        bs.recs = <Record*>calloc(max(self.n_steps, 1), sizeof(Record))
        if bs.recs == NULL:
            raise MemoryError()
        bs.n_recs = self.n_steps
        bs.bcp = <void**>calloc(max(self.n_bc, 1), sizeof(void*))
        bs.bcw = <char*>calloc(max(self.n_bc, 1), sizeof(char))
        if bs.bcp == NULL or bs.bcw == NULL:
            raise MemoryError()
        bs.bc = [None] * self.n_bc
        bs.pptr = <void**>calloc(max(self.n_partner, 1), sizeof(void*))
        if bs.pptr == NULL:
            raise MemoryError()
        bs.partners = []
        for i in range(self.n_steps):
            if self.steps[i].partner >= 0 and self.prow[self.steps[i].partner] < 0:
                arr = np.empty(self.steps[i].n, self.dtype)
                bs.pptr[self.steps[i].partner] = cnp.PyArray_DATA(<cnp.ndarray>arr)
                bs.partners.append(arr)
        bs.n_lanes = 0                  # the fused groups' rows: at their first run (fusion.pxi)
        bs.cptr = <void**>calloc(max(len(self.copy_slots), 1), sizeof(void*))
        if bs.cptr == NULL:
            raise MemoryError()
        bs.copies = []
        for k in self.copy_slots:
            arr = np.empty(self.sizes[k], self.dtype)
            bs.cptr[len(bs.copies)] = cnp.PyArray_DATA(<cnp.ndarray>arr)
            bs.copies.append(arr)
        for k in range(self.n_slots):
            if k >= self.n_ext and k not in self.fresh and self.vrow[k] < 0:
                arr = np.empty(self.shapes[k], self.dtype)
                bs.arrays[k] = arr
                bs.ptr[k] = cnp.PyArray_DATA(<cnp.ndarray>arr)
            if self.grad[k] and self.arow[k] < 0:
                arr = new_empty(self.shapes[k], self.adj_typenum[k])
                bs.adj[k] = arr
                bs.aptr[k] = cnp.PyArray_DATA(<cnp.ndarray>arr)
        bs.scratch0 = np.empty(self.max_n, self.dtype)
        bs.scratch1 = np.empty(self.max_n, self.dtype)
        bs.s0 = cnp.PyArray_DATA(<cnp.ndarray>bs.scratch0)
        bs.s1 = cnp.PyArray_DATA(<cnp.ndarray>bs.scratch1)
        return bs

    cdef BufferSet take_buffers(self):
        cdef BufferSet bs
        for bs in self.pool:
            if not bs.in_use:
                bs.in_use = True
                return bs
        bs = self.new_buffers()
        bs.in_use = True
        if len(self.pool) < 4:          # more live graphs than that: extra sets are not kept
            self.pool.append(bs)
        return bs

    cdef inline int set_slot(self, BufferSet bs, Py_ssize_t k, object arr) except -1:
        list_set(bs.arrays, k, arr)
        bs.ptr[k] = cnp.PyArray_DATA(<cnp.ndarray>arr)
        return 0

    cdef inline int set_result(self, BufferSet bs, Py_ssize_t k, object arr) except -1:
        """Slot k takes an array a step computed outside the set's buffers (numpy, an eager op),
        as it is: a view stays a view, so the numpy-level steps and re-run ops that read it
        compute on the layout eager gave them (a product, a reduction: the same order).  The C
        kernels read it through ptr[k]: a C-contiguous copy when it is not (elementwise kernels
        give the same values on any layout)."""
        self.set_slot(bs, k, arr)
        if k in self.c_read and not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>arr):
            copy = np.ascontiguousarray(arr)
            bs.contiguous[k] = copy
            bs.ptr[k] = cnp.PyArray_DATA(<cnp.ndarray>copy)
        return 0

    def forward(self, list externals, list tensors=None):
        """Run the steps on the externals' arrays (checked by the caller: shapes, dtype,
        C-contiguous; `tensors`: the external tensors, whose version counters re-run ops share);
        returns (Lease, [output arrays])."""
        cdef Py_ssize_t k
        cdef Lease lease = Lease.__new__(Lease)
        lease.buffers = self.forward_c(tensors, externals)
        return lease, [lease.buffers.arrays[k] for k in self.outputs]

    cdef BufferSet forward_c(self, list tensors, list externals):
        """forward() for the call path: the externals' arrays are the tensors' own unless
        `externals` is given; returns the BufferSet holding the values, taken (in_use) until
        the caller releases it (it is released here if a step raises)."""
        cdef BufferSet bs = self.take_buffers()
        try:
            self.forward_steps(bs, tensors, externals)
        except BaseException:
            bs.in_use = False
            raise
        return bs

    cdef int forward_steps(self, BufferSet bs, list tensors, list externals) except -1:
        cdef Py_ssize_t i, k
        cdef Step* s
        cdef bint f64 = self.f64
        cdef const void* pa
        cdef const void* pb
        if externals is None:
            for k in range(self.n_ext):
                self.set_slot(bs, k, (<TensorBase>tensors[k])._array)
        else:
            for k in range(self.n_ext):
                self.set_slot(bs, k, externals[k])
        for k in self.fresh_new:
            if not reusable_result(<PyObject*>PyList_GET_ITEM(bs.arrays, k), bs.ptr[k]):
                self.set_slot(bs, k, new_empty(self.shapes[k], self.typenum))
        cdef long long t0 = 0
        cdef Py_ssize_t started = 0
        i = 0
        while i < self.n_steps:
            s = &self.steps[i]
            i += 1
            if step_timing:
                if t0:
                    note_step_time(self, started, False, t0)
                t0 = thread_ns()
                started = i - 1
            if s.group >= 0:                # a fused group: all its steps, block by block
                fused_forward(self, bs, &self.groups[s.group])
                i = self.groups[s.group].last + 1
            elif s.kind == SK_BINARY:
                pa = bs.ptr[s.a] if s.a >= 0 else (<void*>&s.ca if f64 else <void*>&s.fa)
                pb = bs.ptr[s.b] if s.b >= 0 else (<void*>&s.cb if f64 else <void*>&s.fb)
                k_rows(f64, s.kop, s.n, s.cols, pa, s.stride_a, s.step_a,
                       pb, s.stride_b, s.step_b, bs.ptr[s.out])
            elif s.kind == SK_UNARY:
                k_unary(f64, s.kop, s.n, bs.ptr[s.a], bs.ptr[s.out])
            elif s.kind == SK_SUM_ALL:
                self.sum_all(s, bs.ptr[s.a], bs.ptr[s.out])
            elif s.kind == SK_MATMUL:
                self.set_result(bs, s.out, product(bs.arrays[s.a], bs.arrays[s.b]))
            elif s.kind == SK_OP:
                self.forward_op(bs, i - 1)
            elif s.kind == SK_CALL:
                self.forward_call(bs, i - 1, tensors)
            else:
                self.forward_numpy(bs, i - 1)
        if t0:
            note_step_time(self, started, False, t0)
        return 0

    cdef int forward_call(self, BufferSet bs, Py_ssize_t i, list tensors) except -1:
        """Re-run an eager op on proxies of its operand slots: tensors on the slots' arrays (an
        external's proxy shares its version counter, so the op's own saved-value checks see
        in-place writes to it), leaves requiring grad where a gradient flows.  Its results must
        have the shapes and dtypes of the capture (an op whose result shape depends on values:
        masked_select, nonzero, ...), else _ReplayDiffers."""
        cdef Step* s = &self.steps[i]
        cdef TensorBase p
        cdef Py_ssize_t j, k
        fn, template, kw_template, slots, out_slots = self.aux[i]
        cdef dict proxies = {}
        cdef bint recording = grad_enabled()
        for k in slots:
            p = wrap(bs.arrays[k])
            if tensors is not None and k < self.n_ext:
                p._version = version_of(<TensorBase>tensors[k])
            if recording and self.grad[k]:
                p._requires_grad = True
            proxies[k] = p
        flat = self.call_args[i]
        if flat is not None:            # slots as top-level arguments, no keywords
            args = list(<tuple>(<tuple>flat)[0])
            for j, k in <tuple>(<tuple>flat)[1]:
                args[j] = proxies[k]
            res = fn(*args)
        elif kw_template:
            res = fn(*fill_slots(template, proxies), **fill_slots(kw_template, proxies))
        else:
            res = fn(*fill_slots(template, proxies))
        outs = (res,) if isinstance(res, TensorBase) else tuple([o for o in res if o is not None])
        if len(outs) != len(out_slots):
            raise _ReplayDiffers()
        for j in range(len(outs)):
            k = out_slots[j]
            A = (<TensorBase>outs[j])._array
            if not shape_is(A, <tuple>self.shapes[k]) or (
                    self.typenums is not None and cnp.PyArray_TYPE(A) != <int>self.typenums[k]):
                raise _ReplayDiffers()
            self.set_result(bs, k, A)
        bs.calls[i] = (outs, proxies) if recording else None
        return 0

    cdef int forward_op(self, BufferSet bs, Py_ssize_t i) except -1:
        """An op's registered replay step (OP_REPLAY, replay_fn in _core.pxd) on its slots'
        arrays: it returns the result and fills the step's record for the op's own VJP, which
        backward_op runs.  No tensor is made and nothing is recorded."""
        cdef Step* s = &self.steps[i]
        cdef Record* r = &bs.recs[i]
        cdef tuple in_slots = <tuple>(<tuple>self.aux[i])[0]
        cdef int n_rec_in = (<tuple>self.aux[i])[1]
        cdef Py_ssize_t j, k, n = len(in_slots)
        cdef bint recording = grad_enabled()
        clear_step_record(r)
        r.op = s.op
        r.n_in = n_rec_in
        if n_rec_in > MAX_IN:           # (a kernel Function of many tensors: the LSTM layer)
            r.more = <Py_ssize_t*>malloc(n_rec_in * sizeof(Py_ssize_t))
            if r.more == NULL:
                raise MemoryError()
        cdef Py_ssize_t* inp = rec_inputs(r)
        for j in range(n_rec_in):
            k = <Py_ssize_t>in_slots[j]
            inp[j] = 0 if k >= 0 and recording and self.grad[k] else -1
        cdef tuple ins = PyTuple_New(n)
        for j in range(n):
            k = <Py_ssize_t>in_slots[j]
            A = bs.arrays[k] if k >= 0 else None
            Py_INCREF(A)                    # (PyTuple_SET_ITEM steals a reference)
            PyTuple_SET_ITEM(ins, j, A)
        A = OP_REPLAY[s.op](r, ins, (<tuple>self.aux[i])[2])
        if s.n_out == 1:
            return self.set_output(bs, s.out, A)
        if not isinstance(A, tuple) or len(<tuple>A) != s.n_out:    # (a step of several outputs)
            raise _ReplayDiffers()
        for j in range(s.n_out):
            self.set_output(bs, s.out + j, (<tuple>A)[j])
        return 0

    cdef inline int set_output(self, BufferSet bs, Py_ssize_t k, object A) except -1:
        """set_result for a replay step's result, which must have the capture's shape and dtype."""
        if not shape_is(A, <tuple>self.shapes[k]) or (
                self.typenums is not None and cnp.PyArray_TYPE(A) != <int>self.typenums[k]):
            raise _ReplayDiffers()
        return self.set_result(bs, k, A)

    cdef int backward_op(self, BufferSet bs, Py_ssize_t i) except -1:
        """An SK_OP step's gradients: the op's own VJP on the record its replay filled."""
        cdef Step* s = &self.steps[i]
        cdef Record* r = &bs.recs[i]
        cdef tuple in_slots = <tuple>(<tuple>self.aux[i])[0]
        cdef Py_ssize_t j, k
        if r.aux == NULL:
            raise RuntimeError(BACKWARD_TWICE)
        if s.n_out == 1:
            grads = OP_VJP[r.op](r, self.adjoint(bs, s.out))
        else:                           # one adjoint per output, None where none arrived
            grads = OP_VJP[r.op](r, [self.adjoint(bs, k) if bs.touched[k] else None
                                     for k in range(s.out, s.out + s.n_out)])
        cdef Py_ssize_t* inp = rec_inputs(r)
        for j in range(r.n_in):
            if inp[j] < 0:
                continue
            gq = grads if r.n_in == 1 else (<tuple>grads)[j]
            k = <Py_ssize_t>in_slots[j]
            if gq is not None:
                self.give_array(bs, k, gq)
        return 0

    cdef inline void sum_all(self, Step* s, const void* src, void* dst) noexcept:
        """dst[0] = sum (or mean) of the input slot, as eager's cascade_reduce [/ count]."""
        cdef Py_ssize_t n = self.sizes[s.a]
        cdef double d
        cdef float f
        if self.f64:
            d = cascade_sum_f64(n, <const double*>src)
            (<double*>dst)[0] = d / s.count if s.count != 0 else d
        else:
            f = cascade_sum_f32(n, <const float*>src)
            (<float*>dst)[0] = f / <float>s.count if s.count != 0 else f

    cdef int forward_numpy(self, BufferSet bs, Py_ssize_t i) except -1:
        cdef Step* s = &self.steps[i]
        A = bs.arrays[s.a]
        if s.kind == SK_UNARY_NUMPY:
            np.copyto(bs.arrays[s.out], unary_numpy(s.op, A))
            return 0
        axes, keepdim, count = self.aux[i]
        with IeeeResults():                 # as eager's reduce_op (contiguous floats only)
            out = cascade_reduce(A, axes, keepdim, -1 if s.op == OP_SUM else count)
            if out is None:                     # dims that are not one block: numpy's order
                out = np.add.reduce(A, axis=axes, keepdims=keepdim)
                out = nd(out if s.op == OP_SUM else out / count)
        return self.set_result(bs, s.out, out)

    # -- backward ----------------------------------------------------------------------------

    cdef int give(self, BufferSet bs, Py_ssize_t k, const void* src, Py_ssize_t stride,
                  Py_ssize_t n) except -1:
        """Add a gradient (n elements, stride 0 or 1) to slot k's adjoint: the first one is
        copied, later ones summed in place, as the eager sweep does."""
        cdef Py_ssize_t item = 8 if self.f64 else 4, j
        cdef void* own
        if bs.touched[k]:
            if bs.given[k] is not None:     # not ours to write: its value moves into adj[k]
                own = cnp.PyArray_DATA(<cnp.ndarray>bs.adj[k])
                memcpy(own, bs.aptr[k], self.sizes[k] * item)
                bs.aptr[k] = own
                bs.given[k] = None
            k_binary(self.f64, TG_ADD, n, bs.aptr[k], 1, src, stride, bs.aptr[k])
        elif stride == 1:
            memcpy(bs.aptr[k], src, n * item)
            bs.touched[k] = 1
        else:                               # one value broadcast to all n
            if self.f64:
                fill_f64(<double*>bs.aptr[k], n, (<const double*>src)[0])
            else:
                fill_f32(<float*>bs.aptr[k], n, (<const float*>src)[0])
            bs.touched[k] = 1
        return 0

    cdef int give_array(self, BufferSet bs, Py_ssize_t k, object g) except -1:
        """give() for a gradient computed by numpy (any layout) of slot k's shape.  The first
        one is adopted, not copied (a weight gradient from a re-run linear layer is large)."""
        cdef int t = -1
        cdef int dt_num = self.adj_typenum[k]
        cdef long long t0
        if not (kernel_array(g, &t) and t == dt_num
                and cnp.PyArray_SIZE(<cnp.ndarray>g) == <Py_ssize_t>self.sizes[k]):
            t0 = thread_ns() if step_timing else 0
            g = np.ascontiguousarray(np.broadcast_to(g, self.shapes[k]), self.adj_dtypes[k])
            if t0:
                note_time(("give_array copy", str(self.shapes[k]), ""), thread_ns() - t0)
        if bs.touched[k]:
            if dt_num != self.typenum:      # a slot only re-run ops touch: summed by numpy
                bs.given[k] = nd(self.adjoint(bs, k).reshape(-1) + g.reshape(-1))
                bs.n_given += 1
                bs.aptr[k] = cnp.PyArray_DATA(<cnp.ndarray>bs.given[k])
                return 0
            return self.give(bs, k, cnp.PyArray_DATA(<cnp.ndarray>g), 1, self.sizes[k])
        list_set(bs.given, k, g)
        bs.n_given += 1
        bs.aptr[k] = cnp.PyArray_DATA(<cnp.ndarray>g)
        bs.touched[k] = 1
        return 0

    cdef object adjoint(self, BufferSet bs, Py_ssize_t k):
        """Slot k's adjoint in this backward, as an array of the slot's shape."""
        g = bs.given[k]
        if g is None:
            return bs.adj[k]
        return g if g.shape == self.shapes[k] else g.reshape(self.shapes[k])

    cdef int drop_given(self, BufferSet bs) except -1:
        """Forget the adopted adjoints (the set keeps no reference to arrays it handed out)."""
        cdef Py_ssize_t k
        if bs.n_given == 0:
            return 0
        for k in range(self.n_slots):
            if bs.given[k] is not None:
                list_set(bs.given, k, None)
                bs.aptr[k] = cnp.PyArray_DATA(<cnp.ndarray>bs.adj[k])
        bs.n_given = 0
        return 0

    cdef inline bint c_summable(self, Py_ssize_t k, Py_ssize_t out) noexcept:
        # A gradient of out's shape sums down to slot k in C: k has one element.
        return self.sizes[k] == 1

    cdef int give_full(self, BufferSet bs, Py_ssize_t k, void* full, Py_ssize_t out,
                       bint bcast) except -1:
        """Slot k's share of a gradient `full` of the output's shape: as is, or summed down to
        k's shape (eager's sum_to; numpy's reduction reads `full` from a scratch array then,
        copied to s0 unless it is one)."""
        cdef Py_ssize_t n = self.sizes[out]
        cdef double d
        cdef float f
        if not bcast:
            return self.give(bs, k, full, 1, n)
        if self.c_summable(k, out):         # the C sum is eager's sum_to (cascade_reduce) here
            if self.f64:
                d = cascade_sum_f64(n, <const double*>full)
                return self.give(bs, k, &d, 1, 1)
            f = cascade_sum_f32(n, <const float*>full)
            return self.give(bs, k, &f, 1, 1)
        if full != bs.s0 and full != bs.s1:     # numpy reads a scratch array: copy there
            memcpy(bs.s0, full, n * (8 if self.f64 else 4))
            full = bs.s0
        view = np.asarray(bs.scratch0 if full == bs.s0 else bs.scratch1)[:n]
        return self.give_array(bs, k, sum_to(view.reshape(self.shapes[out]), self.shapes[k]))

    def backward(self, Lease lease, list out_grads):
        """Gradients of the externals (None where none flows) given the outputs' gradients."""
        return list(self.backward_c(lease.buffers, out_grads, None))

    cdef tuple backward_c(self, BufferSet bs, list out_grads, list seeds):
        """Gradients of the externals (None where none flows) given the outputs' gradients (the
        first len(self.outputs) entries of out_grads), each the sum of its seed (the adjoint the
        eager sweep had for it, CompiledBackward) and the steps' contributions."""
        cdef Py_ssize_t j, k
        self.sweep_steps(bs, out_grads, None, seeds, None)
        cdef tuple res = PyTuple_New(self.n_ext)
        for k in range(self.n_ext):
            g = self.hand_out(bs, k)
            Py_INCREF(g)                    # (PyTuple_SET_ITEM steals a reference)
            PyTuple_SET_ITEM(res, k, g)
        g = None
        self.drop_given(bs)
        return res

    cdef object backward_one(self, BufferSet bs, object g, object seed):
        """backward_c of a program with one output and one external (a replayed call's
        one-record node): its gradient given the output's, without a list or a tuple around
        either (a replay at size 1 pays for each object it makes)."""
        self.sweep_steps(bs, None, g, None, seed)
        g = self.hand_out(bs, 0)
        self.drop_given(bs)
        return g

    cdef int sweep_steps(self, BufferSet bs, list out_grads, object g0, list seeds,
                         object seed0) except -1:
        """The backward of every step, from the outputs' gradients (out_grads; or, out_grads
        None, g0 the one output's) to the adjoints of the externals, which start from their
        seeds (seeds, one per external, or seed0 for external 0; None: none)."""
        if bs is None:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time or if "
                "you need to access saved tensors after calling backward.")
        cdef Py_ssize_t i, k, j
        # The eager sweep may have offered an output gradient for in-place reuse (offer_adjoint)
        # to this call's record; the steps below hand it to slots and re-run ops' VJPs, which
        # would write into it while a slot still holds it (fuzz 58107723: add(x, y, alpha=a)
        # re-run under saved-tensor hooks gave x the gradient a instead of 1).  Not ours to reuse.
        withdraw_adjoint()
        memset(bs.touched, 0, self.n_slots)
        self.drop_given(bs)                 # left by a backward that raised
        # The seeds first: the eager sweep had summed them (the uses after the call) before the
        # call's own records added theirs.  Adopted as given arrays, which no step writes into.
        if seeds is not None:
            for k in range(min(len(seeds), self.n_ext)):
                if seeds[k] is not None and self.grad[k]:
                    self.give_array(bs, k, seeds[k])
        elif seed0 is not None and self.grad[0]:
            self.give_array(bs, 0, seed0)
        for j in range(len(self.outputs) if out_grads is not None else 1):
            g = out_grads[j] if out_grads is not None else g0
            k = self.outputs[j]
            if g is not None and self.grad[k]:
                self.give_array(bs, k, g)
        g = None
        cdef long long t0
        i = self.n_steps - 1
        while i >= 0:
            t0 = thread_ns() if step_timing else 0
            if self.steps[i].group >= 0:
                fused_backward(self, bs, self.steps[i].group)
                if t0:
                    note_step_time(self, i, True, t0)
                i = self.groups[self.steps[i].group].first - 1
                continue
            if self.any_touched(bs, &self.steps[i]):
                self.backward_step(bs, i)
                if t0:
                    note_step_time(self, i, True, t0)
            i -= 1
        return 0

    cdef object hand_out(self, BufferSet bs, Py_ssize_t k):
        """External k's gradient after sweep_steps, or None where none flows."""
        if not (self.grad[k] and bs.touched[k]):
            return None
        if bs.given[k] is not None:
            return self.adjoint(bs, k)
        # hand the buffer itself out (it may become a .grad) and take a new one
        g = bs.adj[k]
        arr = new_empty(self.shapes[k], self.adj_typenum[k])
        list_set(bs.adj, k, arr)
        bs.aptr[k] = cnp.PyArray_DATA(<cnp.ndarray>arr)
        return g

    cdef inline bint any_touched(self, BufferSet bs, Step* s) noexcept:
        cdef Py_ssize_t k
        for k in range(s.out, s.out + s.n_out):
            if bs.touched[k]:
                return True
        return False

    cdef int backward_call(self, BufferSet bs, Py_ssize_t i) except -1:
        """A re-run op's gradients: its own records swept (as in the eager graph) from its
        result to the proxies of the slots that need a gradient."""
        cdef Step* s = &self.steps[i]
        outs, proxies = bs.calls[i]
        cdef list ks = self.call_grad_slots[i]
        cdef Py_ssize_t j
        if s.n_out == 1:
            G = self.adjoint(bs, s.out)
            if self.backward_records(bs, <TensorBase>outs[0], <dict>proxies, ks, G):
                return 0
            roots, gs = outs, (wrap(G),)
        else:                           # the outputs that received a gradient
            roots = tuple([outs[j] for j in range(s.n_out) if bs.touched[s.out + j]])
            gs = tuple([wrap(self.adjoint(bs, s.out + j)) for j in range(s.n_out)
                        if bs.touched[s.out + j]])
        # A slot that already holds an adjoint (from the steps after this one) seeds the nested
        # sweep with it, so the op's records add their contributions to it one by one, as the
        # eager sweep adds them: their subtotal added at the end would associate the sum
        # differently (last bits apart from eager: cosine_embedding_loss, logsumexp)
        cdef list seeded = []
        cdef TensorBase p
        for j in range(len(ks)):
            p = <TensorBase>proxies[ks[j]]
            if bs.touched[ks[j]] and p._array.dtype == self.adj_dtypes[ks[j]]:
                seeded.append(ks[j])
        if seeded:
            roots = tuple(roots) + tuple([proxies[k] for k in seeded])
            gs = tuple(gs) + tuple([wrap(np.array(self.adjoint(bs, k))) for k in seeded])
        grads = _grad(roots, tuple([proxies[k] for k in ks]), gs, True, False, True, False)
        for j in range(len(ks)):
            if grads[j] is not None:
                if ks[j] in seeded:         # the seed is in it: it replaces the adjoint
                    self.forget_adjoint(bs, ks[j])
                self.give_array(bs, ks[j], (<TensorBase>grads[j])._array)
        return 0

    cdef int forget_adjoint(self, BufferSet bs, Py_ssize_t k) except -1:
        """Slot k holds no adjoint any more (the next give() sets it)."""
        if bs.given[k] is not None:
            list_set(bs.given, k, None)
            bs.aptr[k] = cnp.PyArray_DATA(<cnp.ndarray>bs.adj[k])
        bs.touched[k] = 0
        return 0

    cdef bint backward_records(self, BufferSet bs, TensorBase res, dict proxies, list ks,
                               object g) except -1:
        """backward_call without a nested sweep, for the common records of a re-run op: a chain
        from its result back to the proxies' leaves in which every record has at most one input
        made inside the op (linear and matmul make one record; cross_entropy two, log_softmax
        then nll).  Runs their VJPs as the sweep does, each record's adjoint being the one
        gradient the next record gave it; False (nothing done) for anything else (custom
        Functions, hooks, a record that uses an inner value twice), which takes the nested
        sweep."""
        cdef Record rec                 # private copies, as the sweep takes
        cdef Py_ssize_t q, k, node = res._node, inner, j, n_chain = 0, n_leaf = len(ks)
        cdef Py_ssize_t chain[8]        # the records, from the result down
        cdef Py_ssize_t leaf_node[16]   # the proxies' leaf records and their slots
        cdef Py_ssize_t leaf_slot[16]
        cdef Py_ssize_t* ins
        cdef TensorBase p
        if node < 0 or n_leaf > 16:
            return False
        for j in range(n_leaf):
            k = ks[j]
            p = <TensorBase>proxies[k]
            if p._node < 0:
                return False
            leaf_node[j] = p._node
            leaf_slot[j] = k
        while node >= 0:                # walk the chain from the result to the leaves
            rec = TAPE.recs[node]
            if (rec.op == OP_FUNCTION or rec.op == OP_FN_OUTPUT or rec.extra != NULL
                    or rec.flags & RF_RETAIN_GRAD or n_chain == 8):
                return False
            chain[n_chain] = node
            n_chain += 1
            ins = rec_inputs(&rec)
            inner = -1
            for q in range(rec.n_in):
                if ins[q] >= 0 and leaf_index(leaf_node, n_leaf, ins[q]) < 0:
                    if inner >= 0:
                        return False        # two inner inputs (or one used twice): sweep it
                    inner = ins[q]
            node = inner
        for k in range(n_chain):
            rec = TAPE.recs[chain[k]]
            if rec.flags & RF_RELEASED:
                raise RuntimeError(BACKWARD_TWICE)
            check_saved_versions(&rec)
            grads = OP_VJP[rec.op](&rec, g)
            ins = rec_inputs(&rec)
            g = None
            for q in range(rec.n_in):
                gq = grads if rec.n_in == 1 else (<tuple>grads)[q]
                if ins[q] < 0 or gq is None:
                    continue
                j = leaf_index(leaf_node, n_leaf, ins[q])
                if j >= 0:
                    self.give_array(bs, leaf_slot[j], gq)
                else:
                    g = gq                  # the next record's adjoint
            if g is None:
                break                       # no gradient flows further down
        return True

    cdef int backward_step(self, BufferSet bs, Py_ssize_t i) except -1:
        cdef Step* s = &self.steps[i]
        if s.kind == SK_OP:
            return self.backward_op(bs, i)
        if s.kind == SK_CALL:
            return self.backward_call(bs, i)
        if s.kind == SK_MATMUL:                         # as vjp_matmul, gradient of a first
            G = self.adjoint(bs, s.out)
            if s.grad_a:
                self.give_array(bs, s.a, matmul_grad_a(G, bs.arrays[s.b], self.shapes[s.a],
                                                       column_major(bs.arrays[s.a])))
            if s.grad_b:
                self.give_array(bs, s.b, matmul_grad_b(G, bs.arrays[s.a], self.shapes[s.b],
                                                       column_major(bs.arrays[s.b])))
            return 0
        cdef bint f64 = self.f64
        cdef Py_ssize_t n = s.n, fs
        cdef void* g = bs.aptr[s.out]
        cdef const void* pa
        cdef const void* pb
        cdef int kop
        cdef void* dst
        if s.kind == SK_BINARY:
            # g, dst and the scratch buffers have the result's layout (stride 1, a row of cols
            # elements after another: fs bytes); a and b keep theirs (set_layout).
            kop = s.kop
            pa = bs.ptr[s.a] if s.a >= 0 else (<void*>&s.ca if f64 else <void*>&s.fa)
            pb = bs.ptr[s.b] if s.b >= 0 else (<void*>&s.cb if f64 else <void*>&s.fb)
            fs = s.cols * (8 if f64 else 4)
            if kop == TG_ADD or kop == TG_SUB:
                if s.grad_a:
                    self.give_full(bs, s.a, g, s.out, s.bcast_a)
                if s.grad_b:
                    dst = self.grad_dest(bs, s.b, s.bcast_b)
                    if kop == TG_SUB:
                        k_unary(f64, TG_NEG, n, g, dst)
                    else:
                        memcpy(dst, g, n * (8 if f64 else 4))
                    self.took(bs, s.b, dst, s.out, s.bcast_b)
            elif kop == TG_MUL:
                if s.grad_a:
                    dst = self.grad_dest(bs, s.a, s.bcast_a)
                    k_rows(f64, TG_MUL, n, s.cols, g, 1, fs, pb, s.stride_b, s.step_b, dst)
                    self.took(bs, s.a, dst, s.out, s.bcast_a)
                if s.grad_b:
                    dst = self.grad_dest(bs, s.b, s.bcast_b)
                    k_rows(f64, TG_MUL, n, s.cols, g, 1, fs, pa, s.stride_a, s.step_a, dst)
                    self.took(bs, s.b, dst, s.out, s.bcast_b)
            elif kop == TG_DIV:
                # grad / b and -grad * ((a / b) / b), as vjp_div (a / b recomputed in the
                # result's layout: the result's own buffer may have been written since)
                if s.grad_a:
                    dst = self.grad_dest(bs, s.a, s.bcast_a)
                    k_rows(f64, TG_DIV, n, s.cols, g, 1, fs, pb, s.stride_b, s.step_b, dst)
                    self.took(bs, s.a, dst, s.out, s.bcast_a)
                if s.grad_b:
                    dst = self.grad_dest(bs, s.b, s.bcast_b)
                    k_rows(f64, TG_DIV, n, s.cols, pa, s.stride_a, s.step_a,
                           pb, s.stride_b, s.step_b, bs.s1)
                    k_rows(f64, TG_DIV, n, s.cols, bs.s1, 1, fs, pb, s.stride_b, s.step_b, bs.s1)
                    k_unary(f64, TG_NEG, n, g, dst)
                    k_binary(f64, TG_MUL, n, dst, 1, bs.s1, 1, dst)
                    self.took(bs, s.b, dst, s.out, s.bcast_b)
            else:
                # tensor ** e: g * (a ** (e - 1) * e), 0 for e == 0, as vjp_pow (e is a
                # number, so a has the result's shape: capture_binary)
                if s.grad_a:
                    dst = self.grad_dest(bs, s.a, False)
                    if s.cb == 0:
                        self.zero_fill(dst, n)
                    else:
                        self.pow_minus_one(s, pa, bs.s1)
                        k_binary(f64, TG_MUL, n, bs.s1, 1,
                                 <void*>&s.cb if f64 else <void*>&s.fb, 0, bs.s1)
                        k_binary(f64, TG_MUL, n, g, 1, bs.s1, 1, dst)
                    self.took(bs, s.a, dst, s.out, False)
            return 0
        if s.kind == SK_UNARY or s.kind == SK_UNARY_NUMPY:
            if not (s.op == OP_NEG or s.op == OP_EXP or s.op == OP_LOG or s.op == OP_TANH
                    or s.op == OP_RELU):
                return self.backward_unary(bs, i)
            dst = self.grad_dest(bs, s.a, False)
            if s.op == OP_NEG:
                k_unary(f64, TG_NEG, n, g, dst)
            elif s.op == OP_EXP:
                k_binary(f64, TG_MUL, n, g, 1, bs.ptr[s.out], 1, dst)
            elif s.op == OP_LOG:
                k_binary(f64, TG_DIV, n, g, 1, bs.ptr[s.a], 1, dst)
            elif s.op == OP_TANH:
                k_binary(f64, TG_TANH_GRAD, n, g, 1, bs.ptr[s.out], 1, dst)
            else:
                k_binary(f64, TG_RELU_GRAD, n, g, 1, bs.ptr[s.out], 1, dst)
            return self.took(bs, s.a, dst, s.out, False)
        # reductions: the gradient expanded back over the reduced dims, as vjp_sum / vjp_mean
        cdef double d
        cdef float f
        if s.kind == SK_SUM_ALL:
            if f64:
                d = (<double*>g)[0]
                if s.count != 0:
                    d = d / s.count
                return self.give(bs, s.a, &d, 0, self.sizes[s.a])
            f = (<float*>g)[0]
            if s.count != 0:
                f = f / <float>s.count
            return self.give(bs, s.a, &f, 0, self.sizes[s.a])
        axes, keepdim, count = self.aux[i]
        G = self.adjoint(bs, s.out)
        if s.op == OP_MEAN:
            G = nd(G / count)
        shape = self.shapes[s.a]
        if not keepdim:
            kshape = list(shape)
            for ax in axes:
                kshape[ax] = 1
            G = G.reshape(kshape)
        if cnp.PyArray_SIZE(<cnp.ndarray>G) == 1:       # a full reduction: one value for all
            G = np.ascontiguousarray(G, self.dtype)
            return self.give(bs, s.a, cnp.PyArray_DATA(<cnp.ndarray>G), 0, self.sizes[s.a])
        return self.give_array(bs, s.a, G)

    cdef int backward_unary(self, BufferSet bs, Py_ssize_t i) except -1:
        """A one-input op of the op table replayed by its C kernel (math_op's: sin, sigmoid, abs,
        ...): its own VJP (OP_VJP) on a record holding the slot it saved, or for the commonest
        ones at the sizes where that VJP runs the C kernels, the same kernels without a record."""
        cdef Step* s = &self.steps[i]
        cdef bint f64 = self.f64
        cdef Py_ssize_t n = s.n
        cdef void* g = bs.aptr[s.out]
        cdef void* dst
        cdef bint fast = n <= SIMD_TRANSCENDENTAL_MIN_SIZE
        if s.kop == TG_SIGMOID or (fast and (s.kop == TG_SIN or s.kop == TG_COS)):
            dst = self.grad_dest(bs, s.a, False)
            if s.kop == TG_SIGMOID:             # vjp_sigmoid: grad * y * (1 - y)
                k_binary(f64, TG_SIGMOID_GRAD, n, g, 1, bs.ptr[s.out], 1, dst)
            elif s.kop == TG_SIN:               # vjp_sin: grad * cos(x)
                k_unary(f64, TG_COS, n, bs.ptr[s.a], bs.s1)
                k_binary(f64, TG_MUL, n, g, 1, bs.s1, 1, dst)
            else:                               # vjp_cos: grad * -sin(x)
                k_unary(f64, TG_SIN, n, bs.ptr[s.a], bs.s1)
                k_unary(f64, TG_NEG, n, bs.s1, bs.s1)
                k_binary(f64, TG_MUL, n, g, 1, bs.s1, 1, dst)
            return self.took(bs, s.a, dst, s.out, False)
        cdef Record rec
        memset(&rec, 0, sizeof(Record))
        rec.op = s.op
        rec.n_in = 1
        saved = bs.arrays[s.a] if self.aux[i] else bs.arrays[s.out]
        rec.saved[0] = <PyObject*>saved         # borrowed: `saved` holds it for the call
        return self.give_array(bs, s.a, OP_VJP[s.op](&rec, self.adjoint(bs, s.out)))

    cdef inline void* grad_dest(self, BufferSet bs, Py_ssize_t k, bint bcast) noexcept:
        """Where a step writes its contribution to slot k: straight into k's own adjoint when it
        is the first one and needs no summing down (no copy), else scratch s0 (see took)."""
        if not bcast and not bs.touched[k]:     # untouched: aptr[k] is the set's own buffer
            return bs.aptr[k]
        return bs.s0

    cdef inline int took(self, BufferSet bs, Py_ssize_t k, void* dst, Py_ssize_t out,
                         bint bcast) except -1:
        """Finish a contribution written at grad_dest(bs, k, bcast)."""
        if dst != bs.s0:
            bs.touched[k] = 1
            return 0
        return self.give_full(bs, k, bs.s0, out, bcast)

    cdef int pow_minus_one(self, Step* s, const void* pa, void* dst) except -1:
        """a ** (e - 1) by the C kernel, as vjp_pow's fast path (e - 1 is a special exponent)."""
        cdef double e1 = s.cb - 1
        cdef float f1 = <float>e1
        k_binary(self.f64, TG_POW, s.n, pa, 1, <void*>&e1 if self.f64 else <void*>&f1, 0, dst)
        return 0

    cdef int zero_fill(self, void* dst, Py_ssize_t n) except -1:
        memset(dst, 0, n * (8 if self.f64 else 4))
        return 0

    @property
    def n_steps(self):
        return self.n_steps

    def calls(self):
        """The (fn, args, kwargs, slots, out slots) of each step that re-runs an op."""
        return [self.aux[i] for i in range(self.n_steps) if self.steps[i].kind == SK_CALL]

    @property
    def fused_groups(self):
        """(first step, last step, elements per block) of each fused group (fusion.pxi)."""
        return [(self.groups[g].first, self.groups[g].last, self.groups[g].block)
                for g in range(self.n_groups)]

    @property
    def recomputed_groups(self):
        """Indexes (into fused_groups) of the groups whose backward recomputes their values
        block by block instead of reading saved full-size values (fusion.pxi)."""
        return [g for g in range(self.n_groups) if self.groups[g].recompute]

    cdef bint deterministic(self):
        """Whether every step is a C step (no op re-run whole, which might draw random values)."""
        cdef Py_ssize_t i
        for i in range(self.n_steps):
            if self.steps[i].kind == SK_CALL:
                return False
        return True

    cdef object run(self, list tensors, ReplayPlan plan, object call, tuple args, dict kwargs,
                    bint single):
        """Replay on `tensors` (the externals, checked by the caller): the outputs as tensors
        (linked into the tape as one node when a gradient flows), or None when the plan's value
        guards say the replay differs from an eager run.  call(*args, **kwargs): the function,
        run again eagerly by a create_graph backward (kwargs None: none).  single: the program
        has one output, returned as the tensor itself (no list around it)."""
        cdef Py_ssize_t k, j, n_out = len(self.outputs)
        cdef BufferSet bs
        rng_state = None
        cdef bint recording = self.any_grad and grad_enabled()
        if recording and self.rerun_kind == RERUN_RNG:
            rng_state = self.global_rng().bit_generator.state     # before the forward draws
        try:
            bs = self.forward_c(tensors, None)
        except _ReplayDiffers:
            return None
        if plan.guards and not plan.guards_hold_c(bs):
            bs.in_use = False
            return None
        if self.effects:
            try:
                self.run_effects(bs, tensors)
            except BaseException:
                bs.in_use = False
                raise
        if not recording:
            bs.in_use = False
            if single:
                return wrap(bs.arrays[<Py_ssize_t>self.outputs[0]])
            return [wrap(bs.arrays[k]) for k in self.outputs]
        # The backward reads some of the program's buffers (a saved exp or tanh output, a
        # product's operands), and eager's version check cannot see a write into a fresh tensor
        # wrapped around one: the caller gets its own copy of each such buffer the program owns,
        # so `y = f(x); y.mul_(2)` before backward cannot change what the backward reads (outputs
        # that view an external stay views; an output no backward reads needs no copy).
        cdef list results
        if single:
            results = None
            t0 = self.output_tensor(bs, 0)
        else:
            results = PyList_New(n_out)
            for j in range(n_out):
                list_put(results, j, self.output_tensor(bs, j))
        # The record holds the set itself as its ctx, with the call's backward state (no node
        # object per call); the set holds the Program until release() (record.pxi's decref, or
        # the sweep without retain_graph): see BufferSet.program.
        bs.program = self
        bs.n_out = n_out
        bs.versions = None
        if plan.saved_ext or plan.saved_out:
            # (Version, its value now, the array and what names it in the error: an external's
            # tensor, whose grad_fn at the error names it, or an output's node name)
            bs.versions = [(version_of(<TensorBase>tensors[k]),
                            version_of(<TensorBase>tensors[k]).value,
                            (<TensorBase>tensors[k])._array, tensors[k]) for k in plan.saved_ext]
            for j, k in enumerate(plan.saved_out):  # an in-place write to one raises at
                o = results[k] if results is not None else t0   # backward, as eager
                bs.versions.append((version_of(<TensorBase>o), version_of(<TensorBase>o).value,
                                    (<TensorBase>o)._array, plan.saved_out_nodes[j]))
        bs.inputs = tensors             # (a fresh list: call_externals')
        bs.plan, bs.call, bs.args, bs.kwargs = plan, call, args, kwargs
        bs.rng_state = rng_state
        if self.input_meta is None:     # the same at every replay: the guards fix them
            self.input_meta = tuple([((<TensorBase>t)._array.shape, (<TensorBase>t)._array.dtype)
                                     for t in tensors])
            self.output_meta = tuple([((<TensorBase>t)._array.shape, (<TensorBase>t)._array.dtype)
                                      for t in (results if results is not None else [t0])])
        if ANOMALY_MODE:                # the general path takes the anomaly trace (the set's
            if results is None:         # node holds it from the start: it frees it if this raises)
                results = [t0]
            non_diff = tuple([results[k] for k in range(n_out)
                              if not self.grad[self.outputs[k]]])
            out = _function_record(bs.grad_fn_node(), tuple(tensors), tuple(results), (),
                                   non_diff)
            if single:
                return out[0] if isinstance(out, tuple) else out
            return list(out) if isinstance(out, tuple) else [out]   # (a list: replay's cast)
        try:
            self.record(bs, tensors, results, t0 if single else None)
        except BaseException:           # (record raises only before its record holds the set)
            bs.release()
            raise
        return t0 if single else results

    cdef TensorBase output_tensor(self, BufferSet bs, Py_ssize_t j):
        """Output j of a recorded replay as the tensor handed to the caller."""
        o = bs.arrays[<Py_ssize_t>self.outputs[j]]
        if self.out_copy[j] and cnp.PyArray_CHKFLAGS(<cnp.ndarray>o, cnp.NPY_ARRAY_OWNDATA):
            o = cnp.PyArray_NewCopy(<cnp.ndarray>o, cnp.NPY_CORDER)
        cdef TensorBase t = wrap(o)
        made = self.out_call[j]
        if made is not None:            # a re-run op's result: writes bump its version too
            made_by = bs.calls[<Py_ssize_t>(<tuple>made)[0]]
            t._version = version_of(
                <TensorBase>(<tuple>(<tuple>made_by)[0])[<Py_ssize_t>(<tuple>made)[1]])
        return t

    cdef int record(self, BufferSet state, list tensors, list results,
                    object only) except -1:
        """Link the results into the tape as _function_record does for a custom Function's
        outputs (one OP_FUNCTION record holding the set, one OP_FN_OUTPUT record per output a
        gradient flows through), specialised to what a replay gives it: fresh float results, no
        in-place outputs, metadata computed once.  One output (a loss): the OP_FUNCTION record
        is the output's own node (scalar ONE_RECORD), one record for the whole call.  `only`:
        the one output, given without a list (results None)."""
        cdef Py_ssize_t n_in = len(tensors), j, fi, si
        cdef Py_ssize_t n_out = len(results) if results is not None else 1
        cdef bint one = n_out == 1 and self.grad[<Py_ssize_t>self.outputs[0]]
        cdef Py_ssize_t few[8]
        cdef Py_ssize_t* inp = &few[0]
        if n_in > 8:
            inp = <Py_ssize_t*>malloc(n_in * sizeof(Py_ssize_t))
        cdef TensorBase t
        if inp == NULL:
            raise MemoryError()
        try:
            begin_record(n_in + n_out + 1)
            for j in range(n_in):
                t = <TensorBase>tensors[j]
                fresh(t)
                inp[j] = node_for_input(t)
            fi = TAPE.append(OP_FUNCTION, <int>n_in, inp)
        finally:
            if inp != &few[0]:
                free(inp)
        keep(&TAPE.recs[fi].aux, state)
        if one:                         # the output holds the record's one reference
            TAPE.recs[fi].scalar = ONE_RECORD
            t = <TensorBase>(results[0] if results is not None else only)
            TAPE.recs[fi].out = <PyObject*>t
            t._node = fi
            t._requires_grad = True
            return 0
        TAPE.recs[fi].scalar = <double>n_out
        for j in range(n_out - 1, -1, -1):     # output 0's record is the youngest, as there
            if not self.grad[<Py_ssize_t>self.outputs[j]]:
                continue
            t = <TensorBase>(results[j] if results is not None else only)
            si = TAPE.append(OP_FN_OUTPUT, 1, &fi)
            TAPE.recs[si].scalar = <double>j
            TAPE.recs[si].out = <PyObject*>t
            t._node = si
            t._requires_grad = True
        TAPE.decref(fi)                 # the output records hold the Function record
        return 0

    def add_effect(self, fn, tuple args, dict kwargs, dict slot_of):
        """An in-place write fn(*args, **kwargs) into a tensor the call did not make (its
        target, args[0]), performed again after each replayed forward: the tensors it reads
        (slot_of: id -> slot, its target excepted) come from the replay's slots, its target is
        the tensor itself (tapegrad/replay.py checks that no step reads or returns it)."""
        self.effects.append((fn, effect_template(args, slot_of), effect_template(kwargs, slot_of)))

    cdef list state_before_rerun(self, list inputs):
        """What a create_graph re-run of the call (CompiledFunctionBackward.rerun) could write
        besides its results: the effects' targets (num_batches_tracked) and, when ops are re-run
        whole, the externals that take no gradient (BatchNorm's running statistics, which its
        op updates): each with a copy of its values and its version, put back after the re-run
        (restore_state), so the backward leaves them as eager's does."""
        cdef list out = []
        cdef TensorBase t
        if not self.effects and self.all_c:
            return out
        for fn, template, kw_template in self.effects:
            target = (<tuple>template)[0]
            out.append((target, np.array((<TensorBase>target)._array, copy=True),
                        version_of(<TensorBase>target).value))
        if not self.all_c:
            for x in inputs:
                t = <TensorBase>x
                if not t._requires_grad:
                    out.append((t, np.array(t._array, copy=True), version_of(t).value))
        return out

    cdef int run_effects(self, BufferSet bs, list tensors) except -1:
        """The call's in-place writes into module buffers (add_effect), in their order, with grad
        mode off (they recorded nothing eagerly either)."""
        cdef dict proxies = {}
        cdef Py_ssize_t k
        cdef bint was = grad_enabled()
        _set_grad_enabled(False)
        try:
            for fn, template, kw_template in self.effects:
                for k in effect_slots(template) + effect_slots(kw_template):
                    if k not in proxies:
                        proxies[k] = tensors[k] if k < self.n_ext else wrap(bs.arrays[k])
                fn(*fill_slots(template, proxies), **fill_slots(kw_template, proxies))
        finally:
            _set_grad_enabled(was)
        return 0

    def outputs_checked(self, saved_out):
        """The outputs (indexes) whose versions the replay's node checks at backward (the plan's
        saved_out: eager raises for an in-place write into them too): handed out uncopied."""
        for j in saved_out:
            self.out_copy[j] = False

    cdef set backward_read_slots(self):
        """The slots whose values some step's backward reads (a superset: what each kind of step
        may read), so the outputs among them are handed to the caller as copies (run) unless a
        version check guards them: the ones a record of the captured call saved
        (outputs_checked), and a re-run op's own results, whose handed-out tensors share the
        version counter of the op's result tensor, which that op's records check as in eager."""
        cdef set out = set()
        cdef Py_ssize_t i
        cdef Step* s
        for i in range(self.n_steps):
            s = &self.steps[i]
            if s.kind == SK_CALL:
                if any([self.grad[k] for k in self.aux[i][3]]):
                    out.update(self.aux[i][3])
            elif s.kind == SK_OP:
                if self.call_grad_slots[i]:     # what the eager record saved (capture_op)
                    in_slots, _, _, out_slots, saved = self.aux[i]
                    for k, was_saved in zip(tuple(in_slots) + tuple(out_slots), saved):
                        if was_saved:
                            out.add(k)
            elif s.kind == SK_MATMUL:
                if s.grad_a or s.grad_b:
                    out.update((s.a, s.b))
            elif s.kind == SK_BINARY:
                if (s.grad_a or s.grad_b) and not (s.kop == TG_ADD or s.kop == TG_SUB):
                    out.update((s.a, s.b))
                    if not (s.kop == TG_MUL or s.kop == TG_DIV):
                        out.add(s.out)
            elif s.kind == SK_UNARY or s.kind == SK_UNARY_NUMPY:
                if s.grad_a and s.op != OP_NEG:
                    out.update((s.a, s.out))
            # sums and means read their gradient only
        out.discard(-1)
        return out


cdef enum:
    RERUN_SAME = 0
    RERUN_RNG = 1
    RERUN_NONE = 2


cdef class CompiledFunctionBackward(CompiledBackward):
    """The grad_fn of a replayed call's outputs, made when first read (BufferSet.grad_fn_node):
    then the aux of its OP_FUNCTION record, whose backward the sweep runs through here without
    calling Python (ops_function.pxi)."""
    cdef BufferSet state        # the replay's set, until the graph frees it (None after)
    cdef public object _input_meta, _output_meta    # set by _function_record

    def name(self):
        return "CompiledFunctionBackward"

    def __repr__(self):
        return f"<CompiledFunctionBackward object at {id(self):#x}>"

    cdef BufferSet held(self):
        if self.state is None:
            raise RuntimeError(BACKWARD_TWICE)
        return self.state

    cdef object backward(self, list g, list seeds):
        return self.held().backward(g, seeds)

    cdef object backward_one(self, object g, object seed):
        return self.held().backward_one(g, seed)

    cdef object graph_backward(self, list g, list seeds):
        return self.held().graph_backward(g, seeds)

    cdef release(self):
        cdef BufferSet state = self.state
        if state is not None:
            self.state = None
            state.release()
        return None

    def __dealloc__(self):
        if self.state is not None:
            self.state.release()


cdef CompiledFunctionBackward released_node(tuple input_meta, tuple output_meta):
    """A grad_fn without a backward (its graph was freed)."""
    cdef CompiledFunctionBackward node = CompiledFunctionBackward.__new__(
        CompiledFunctionBackward)
    node._input_meta = input_meta
    node._output_meta = output_meta
    return node


# -- building a Program from a capture --------------------------------------------------------

@cython.auto_pickle(False)   # (unpicklable: see Tape's note)
cdef class SlotRef:
    """Stands for slot k's value in the arguments of a re-run op (SK_CALL)."""
    cdef readonly Py_ssize_t k

    def __cinit__(self, Py_ssize_t k):
        self.k = k


class _ReplayDiffers(Exception):
    """A re-run op gave results of other shapes or dtypes than at capture: replay refused."""


cdef object fill_slots(object template, dict proxies):
    """A re-run op's argument: the template with each SlotRef replaced by its slot's proxy
    (inside lists and tuples too)."""
    if isinstance(template, SlotRef):
        return proxies[(<SlotRef>template).k]
    if type(template) is tuple or type(template) is list:
        return type(template)([fill_slots(v, proxies) for v in <object>template])
    if type(template) is dict:
        return {name: fill_slots(v, proxies) for name, v in (<dict>template).items()}
    return template


cdef inline Py_ssize_t leaf_index(Py_ssize_t* nodes, Py_ssize_t n, Py_ssize_t node) noexcept:
    cdef Py_ssize_t j
    for j in range(n):
        if nodes[j] == node:
            return j
    return -1


cdef object flat_call_args(object template, object kw_template):
    """Program.call_args' entry for a re-run op's argument templates, or None."""
    if kw_template or type(template) is not tuple:
        return None
    cdef list base = []
    cdef list where = []
    for j, v in enumerate(<tuple>template):
        if isinstance(v, SlotRef):
            where.append((j, (<SlotRef>v).k))
            v = None
        elif type(v) is list or type(v) is dict:
            return None                 # (fill_slots gives the op a fresh copy of each)
        elif type(v) is tuple and has_slot_ref(v):
            return None
        base.append(v)
    return (tuple(base), tuple(where))


cdef bint has_slot_ref(object v):
    if isinstance(v, SlotRef):
        return True
    if type(v) is tuple or type(v) is list:
        return any([has_slot_ref(x) for x in <object>v])
    if type(v) is dict:
        return any([has_slot_ref(x) for x in (<dict>v).values()])
    return False


cdef int restore_state(list kept) except -1:
    """Put back what Program.state_before_rerun kept."""
    cdef TensorBase t
    for x, values, version in kept:
        t = <TensorBase>x
        np.copyto(t._array, values, casting="no")
        version_of(t).value = version
    return 0


cdef object effect_template(object arg, dict slot_of):
    """slot_template for an in-place write replayed after the forward: the tensors slot_of
    names become SlotRefs, any other (its target) stays itself."""
    if isinstance(arg, TensorBase):
        k = slot_of.get(oid(arg))
        return arg if k is None else SlotRef(k)
    if type(arg) is tuple or type(arg) is list:
        return type(arg)([effect_template(v, slot_of) for v in <object>arg])
    if type(arg) is dict:
        return {name: effect_template(v, slot_of) for name, v in (<dict>arg).items()}
    return arg


cdef list effect_slots(object template):
    """The slots a template's SlotRefs name."""
    if isinstance(template, SlotRef):
        return [(<SlotRef>template).k]
    cdef list out = []
    if type(template) is tuple or type(template) is list:
        for v in <object>template:
            out.extend(effect_slots(v))
    elif type(template) is dict:
        for v in (<dict>template).values():
            out.extend(effect_slots(v))
    return out


cdef object slot_template(object arg, dict slots_of):
    """fill_slots' template of an op's argument: each tensor replaced by SlotRef(its slot)."""
    if isinstance(arg, TensorBase):
        return SlotRef(slots_of[oid(arg)])
    if type(arg) is tuple or type(arg) is list:
        return type(arg)([slot_template(v, slots_of) for v in <object>arg])
    if type(arg) is dict:
        return {name: slot_template(v, slots_of) for name, v in (<dict>arg).items()}
    return arg


cdef inline Py_ssize_t oid(object o) noexcept:
    """id(o) without the builtin call (the capture holds every object it names)."""
    return <Py_ssize_t><PyObject*>o


cdef extern from *:
    """
    #define TG_NO_TENSOR PY_SSIZE_T_MIN
    """
    const Py_ssize_t TG_NO_TENSOR   # an operand code (_plan_steps): a Python number or None


def _plan_steps(list steps, set claimed, list roots, bint grad_mode):
    """The slots and steps of a Program from a Capture's steps ((kind, op, kop, a, b, aux,
    result) tuples; a, b: tensors, Python scalars or None): the tensors the steps read but no
    step made become the externals (slots 0..), then one slot per step that reaches a root (the
    outputs and the values Python read).  Returns (externals, shapes, grad, program steps,
    {id(root): slot}, externals the backward reads, dtype numbers)."""
    cdef Py_ssize_t n = len(steps), j, k, out
    cdef char* live = <char*>calloc(max(n, 1), 1)
    cdef Py_ssize_t* step_slot = <Py_ssize_t*>malloc(max(n, 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t* code = <Py_ssize_t*>malloc(max(2 * n, 1) * sizeof(Py_ssize_t))
    if live == NULL or step_slot == NULL or code == NULL:
        free(live)
        free(step_slot)
        free(code)
        raise MemoryError()
    try:
        return plan_steps(steps, claimed, roots, grad_mode, n, live, step_slot, code)
    finally:
        free(live)
        free(step_slot)
        free(code)


cdef dict slot_readers(list program):
    """slot -> the indices of the program steps reading it (_plan_steps' steps)."""
    cdef dict readers = {}
    cdef Py_ssize_t i
    for i in range(len(program)):
        st = <tuple>program[i]
        kind = st[0]
        slots = ((<tuple>st[8])[0] if kind == SK_OP else (<tuple>st[8])[3] if kind == SK_CALL
                 else (st[3], st[4]))
        for k in slots:
            if k >= 0:
                readers.setdefault(k, []).append(i)
    return readers


cdef inline bint is_kernel_step(tuple st):
    return st[0] == SK_OP and OP_NAMES[st[1]] == "KernelFunctionBackward"


def _fuse_kernel_inputs(list program, list grad, Py_ssize_t n_ext, set keep):
    """Fold each kernel step into the kernel step that makes its first argument, when its
    Function has a variant computing both (KernelFunction.input_fused, {producer class: fused
    class}: relu + max pooling after a convolution, whose variant pools each block of the
    convolution's output rows while they are in cache): a replay then never writes the full-size
    intermediate nor reads it back.  The fused class takes the producer's arguments followed by
    the consumer's after its first, returns the consumer's outputs and the gradients of all its
    arguments, computing element for element what the two steps compute, so values and gradients
    stay eager's bit for bit.  Only when the intermediate slot is the producer's one output, read
    by the consumer alone (once, its only tensor argument) and not in `keep`.  The fused step
    takes the producer's place (its operands are read where eager read them; the consumer read
    nothing else).  program: _plan_steps' steps after _fuse_relu_kernels; grad: its slot flags
    (the intermediate's is cleared).  Returns the steps."""
    cdef dict readers = slot_readers(program)
    cdef dict producer = {}             # slot -> the kernel step whose one output it is
    cdef Py_ssize_t i, j, a
    cdef set dropped = set()
    for i in range(len(program)):
        st = <tuple>program[i]
        if is_kernel_step(st) and len(<tuple>(<tuple>st[8])[3]) == 1:
            producer[(<tuple>(<tuple>st[8])[3])[0]] = i
    for j in range(len(program)):
        st = <tuple>program[j]
        if not is_kernel_step(st):
            continue
        in_slots, n_rec_in, attrs, out_slots, saved_mask = <tuple>st[8]
        table = getattr((<tuple>attrs)[0], "input_fused", None)
        if not table or len(<tuple>in_slots) != 1:
            continue
        a = (<tuple>in_slots)[0]
        if a < n_ext or a in keep or readers.get(a) != [j] or a not in producer:
            continue
        i = producer[a]
        if i in dropped:
            continue
        pst = <tuple>program[i]
        p_in, p_n, p_attrs, p_out, p_saved = <tuple>pst[8]
        fused = table.get((<tuple>p_attrs)[0])
        if fused is None:
            continue
        # arguments: the producer's, then the consumer's after its first (no tensor among them)
        fused_attrs = (fused, tuple(p_attrs[1]) + tuple(attrs[1][1:]), tuple(p_attrs[2]))
        saved = tuple(p_saved[:len(p_in)]) + tuple(saved_mask[1:])
        program[i] = pst[:5] + (st[5],) + pst[6:8] + ((p_in, p_n, fused_attrs, out_slots,
                                                       saved),)
        grad[a] = False
        dropped.add(j)
    if not dropped:
        return program
    return [program[i] for i in range(len(program)) if i not in dropped]


def _fuse_relu_kernels(list program, list grad, Py_ssize_t n_ext, set keep):
    """Fold each relu step into the kernel step that alone reads its output, when that step's
    Function has a variant taking relu's input instead (KernelFunction.relu_fused: max pooling,
    whose variant pools relu(x) plane by plane from a cache-sized buffer and masks its gradient
    with x): a replay then never writes the full-size relu output, reads it back, nor runs relu's
    gradient as a pass of its own.  The variant computes what the two steps compute, element for
    element, so values and gradients stay eager's bit for bit.  Only when relu's input is an
    intermediate slot relu alone reads (its adjoint is then that one contribution, with no other
    to be summed in another order) and neither slot is in `keep` (returned, guarded, read by an
    in-place effect).  program: _plan_steps' steps; grad: its slot flags (the relu output's is
    cleared: no adjoint buffer).  Returns the steps."""
    cdef dict readers = slot_readers(program)
    cdef Py_ssize_t i, j, a, out
    cdef set dropped = set()
    for i in range(len(program)):
        st = <tuple>program[i]
        if st[0] != SK_UNARY or st[1] != OP_RELU:
            continue
        a, out = st[3], st[5]
        if a < n_ext or a in keep or out in keep or readers.get(a) != [i]:
            continue
        r = readers.get(out)
        if r is None or len(<list>r) != 1:
            continue
        j = (<list>r)[0]
        pst = <tuple>program[j]
        if pst[0] != SK_OP or OP_NAMES[pst[1]] != "KernelFunctionBackward":
            continue
        in_slots, n_rec_in, attrs, out_slots, saved_mask = <tuple>pst[8]
        fused = getattr((<tuple>attrs)[0], "relu_fused", None)
        # (relu's output must be the step's first tensor, read once: the variant's x)
        if fused is None or in_slots[0] != out or list(in_slots).count(out) != 1:
            continue
        program[j] = pst[:8] + (((a,) + tuple(in_slots[1:]), n_rec_in,
                                 (fused,) + tuple(attrs[1:]), out_slots, saved_mask),)
        grad[out] = False
        dropped.add(i)
    if not dropped:
        return program
    return [program[i] for i in range(len(program)) if i not in dropped]


cdef inline Py_ssize_t plan_operand(dict where, set claimed, list ext, object o) except? -2:
    """An operand's code for _plan_steps: external k (>= 0, a new one for a tensor no step made),
    step j's result as -(j + 1), or TG_NO_TENSOR."""
    if not isinstance(o, TensorBase):
        return TG_NO_TENSOR
    key = oid(o)
    c = where.get(key)
    if c is not None:
        return <Py_ssize_t>c
    if key in claimed:              # made by a later step: cannot happen in a forward trace
        raise AssertionError("a captured step reads a tensor made after it")
    where[key] = len(ext)
    ext.append(o)
    return len(ext) - 1


cdef inline bint recorded(TensorBase t) noexcept:
    """Whether the eager op that made t recorded it, so that a gradient reaching t flows on to
    its inputs (not so for a result made under no_grad inside the function)."""
    return t._node >= 0 and TAPE.recs[t._node].op != OP_LEAF


cdef set PURE_CALLS = set()     # re-run ops that read no tensor values (_set_pure_calls)


def _set_pure_calls(fns):
    """The library functions (tapegrad/replay.py lists them) a replay may skip when nothing
    reads their results: they read no tensor's values, draw nothing, write nothing and raise
    on nothing the guards do not fix (shapes, dtypes, the Python arguments)."""
    PURE_CALLS.clear()
    PURE_CALLS.update(fns)


cdef bint pure_call(tuple call) except -1:
    """Whether a SK_CALL step's (fn, args, kwargs, tensors, outs) is a PURE_CALLS function
    without an out= argument (a write into a tensor)."""
    fn = call[0]
    try:
        if fn not in PURE_CALLS:
            return False
    except TypeError:                   # (an unhashable callable)
        return False
    return not (call[2] and "out" in <dict>call[2])


cdef tuple plan_steps(list steps, set claimed, list roots, bint grad_mode, Py_ssize_t n,
                      char* live, Py_ssize_t* step_slot, Py_ssize_t* code):
    """_plan_steps' work; code[2j], code[2j + 1]: the codes of step j's operands a and b."""
    cdef dict where = {}            # oid(tensor) -> external k (>= 0) or step j as -(j + 1)
    cdef dict out_index = {}        # oid(tensor) -> which output of its step it is (when not 0)
    cdef list ext = []
    cdef Py_ssize_t k, j, out
    cdef int q
    cdef tuple st
    for j in range(n):
        st = <tuple>steps[j]
        if <Py_ssize_t>st[0] == SK_CALL:
            for o in <tuple>(<tuple>st[5])[3]:
                plan_operand(where, claimed, ext, o)
            code[2 * j] = code[2 * j + 1] = TG_NO_TENSOR
            for q, o in enumerate(<tuple>(<tuple>st[5])[4]):
                where[oid(o)] = -(j + 1)
                if q:
                    out_index[oid(o)] = q
        elif <Py_ssize_t>st[0] == SK_OP:
            for o in <tuple>(<tuple>st[5])[0]:
                if o is not None:
                    plan_operand(where, claimed, ext, o)
            code[2 * j] = code[2 * j + 1] = TG_NO_TENSOR
            for q, o in enumerate(<tuple>(<tuple>st[5])[3]):    # its results (st[6] first)
                where[oid(o)] = -(j + 1)
                if q:
                    out_index[oid(o)] = q
        else:
            code[2 * j] = plan_operand(where, claimed, ext, st[3])
            code[2 * j + 1] = plan_operand(where, claimed, ext, st[4])
            where[oid(st[6])] = -(j + 1)
    for t in roots:
        if oid(t) not in where:
            where[oid(t)] = len(ext)
            ext.append(t)
    for t in roots:
        k = where[oid(t)]
        if k < 0:
            live[-k - 1] = 1
    # An op re-run on the slots (SK_CALL) or run by its replay step (SK_OP) stays even when
    # nothing uses its result: it may raise on values (binary_cross_entropy's range check, a
    # class index out of range) or draw from a generator (dropout, randn), and eager does both;
    # dropping it made a compiled call return where eager raises (fuzz seed 51039596) and would
    # shift the random stream of later draws.  The C elementwise steps, which can do neither,
    # are dropped when dead, and so are re-run ops that read no values (PURE_CALLS: factories
    # and shape ops, whose shapes and arguments the guards fix): an LSTM's initial zeros and
    # its final states' stack, which the caller discards, cost 0.15 ms of each replayed step.
    for j in range(n):
        st = <tuple>steps[j]
        if <Py_ssize_t>st[0] == SK_OP or (<Py_ssize_t>st[0] == SK_CALL
                                          and not pure_call(<tuple>st[5])):
            live[j] = 1
    for j in range(n - 1, -1, -1):           # a live step's operands are live
        if not live[j]:
            continue
        st = <tuple>steps[j]
        if <Py_ssize_t>st[0] == SK_CALL or <Py_ssize_t>st[0] == SK_OP:
            for o in <tuple>(<tuple>st[5])[3 if <Py_ssize_t>st[0] == SK_CALL else 0]:
                if o is None:
                    continue
                k = where[oid(o)]
                if k < 0:
                    live[-k - 1] = 1
        else:
            for q in range(2):
                k = code[2 * j + q]
                if k != TG_NO_TENSOR and k < 0:
                    live[-k - 1] = 1
    cdef Py_ssize_t n_ext = len(ext)
    cdef list shapes = [], grad = [], program = []
    cdef set saved = set(), dtypes = set(), grad_dtypes = set()
    cdef list typenum = []          # slot -> dtype number
    for t in ext:
        fresh(<TensorBase>t)
        shapes.append((<TensorBase>t)._array.shape)
        grad.append(grad_mode and (<TensorBase>t)._requires_grad)
        typenum.append(cnp.PyArray_TYPE((<TensorBase>t)._array))
        if grad[len(grad) - 1]:
            grad_dtypes.add(typenum[len(typenum) - 1])
    cdef Py_ssize_t sa, sb, kind, kop
    cdef bint ga, gb
    for j in range(n):
        step_slot[j] = -1
        if not live[j]:
            continue
        st = <tuple>steps[j]
        kind = st[0]
        kop = st[2]
        a, b, aux, res = st[3], st[4], st[5], st[6]
        k = code[2 * j]
        sa = -1 if k == TG_NO_TENSOR else (k if k >= 0 else
                                           step_slot[-k - 1] + out_index.get(oid(a), 0))
        k = code[2 * j + 1]
        sb = -1 if k == TG_NO_TENSOR else (k if k >= 0 else
                                           step_slot[-k - 1] + out_index.get(oid(b), 0))
        ga = sa >= 0 and grad[sa]
        gb = sb >= 0 and grad[sb]
        out = len(shapes)
        step_slot[j] = out
        shapes.append((<TensorBase>res)._array.shape)
        typenum.append(cnp.PyArray_TYPE((<TensorBase>res)._array))
        if kind == SK_CALL:
            # re-run whole: any dtypes; a slot that gets a gradient is in the program's dtype
            fn, args, kwargs, tensors, outs = aux
            slots_of = {}
            ga = False
            for o in tensors:
                k = where[oid(o)]
                slots_of[oid(o)] = k if k >= 0 else step_slot[-k - 1] + out_index.get(oid(o), 0)
                ga = ga or grad[slots_of[oid(o)]]
            for q, o in enumerate(outs):
                if q:
                    shapes.append((<TensorBase>o)._array.shape)
                    typenum.append(cnp.PyArray_TYPE((<TensorBase>o)._array))
                grad.append(ga and recorded(<TensorBase>o))
                if grad[out + q]:
                    grad_dtypes.add(typenum[out + q])
            program.append((SK_CALL, 0, 0, -1, -1, out, 0.0, 0.0,
                            (fn, slot_template(args, slots_of), slot_template(kwargs, slots_of),
                             tuple(sorted(set(slots_of.values()))),
                             tuple(range(out, out + len(outs))))))
            continue
        if kind == SK_OP:
            # an op's replay step (any dtypes, as a re-run op): slots of its operands
            tensors, n_rec_in, attrs, outs, saved_mask = aux
            in_slots = []
            for o in tensors:
                if o is None:
                    in_slots.append(-1)
                    continue
                k = where[oid(o)]
                in_slots.append(k if k >= 0 else step_slot[-k - 1] + out_index.get(oid(o), 0))
            ga = False
            for q in range(<int>n_rec_in):
                ga = ga or (in_slots[q] >= 0 and grad[in_slots[q]])
            for q, o in enumerate(<tuple>outs):
                if q:
                    shapes.append((<TensorBase>o)._array.shape)
                    typenum.append(cnp.PyArray_TYPE((<TensorBase>o)._array))
                grad.append(ga and recorded(<TensorBase>o))
                if grad[out + q]:
                    grad_dtypes.add(typenum[out + q])
            if ga:                  # the operands the eager record saved: version-checked
                for q in range(len(in_slots)):
                    if saved_mask[q] and 0 <= in_slots[q] < n_ext:
                        saved.add(in_slots[q])
            program.append((SK_OP, st[1], 0, -1, -1, out, 0.0, 0.0,
                            (tuple(in_slots), n_rec_in, attrs,
                             tuple(range(out, out + len(<tuple>outs))), saved_mask)))
            continue
        grad.append((ga or gb) and recorded(<TensorBase>res))
        dtypes.add(typenum[out])            # C steps: one float dtype for every slot they touch
        if sa >= 0:
            dtypes.add(typenum[sa])
        if sb >= 0:
            dtypes.add(typenum[sb])
        if kind == SK_BINARY:
            if ga or gb:            # the operands the backward reads (the eager op saves them)
                if kop == TG_MUL:
                    if gb:
                        saved.add(sa)
                    if ga:
                        saved.add(sb)
                elif kop == TG_DIV:
                    if gb:
                        saved.add(sa)
                    saved.add(sb)
                elif kop == TG_POW:
                    saved.add(sa)
            program.append((SK_BINARY, 0, kop, sa, sb, out,
                            0.0 if sa >= 0 else float(a), 0.0 if sb >= 0 else float(b), None))
        elif kind == SK_MATMUL:
            if gb:                  # the operands the backward reads (the eager op saves them)
                saved.add(sa)
            if ga:
                saved.add(sb)
            program.append((SK_MATMUL, 0, 0, sa, sb, out, 0.0, 0.0, None))
        elif kind == SK_REDUCE:
            program.append((SK_REDUCE, st[1], 0, sa, -1, out, 0.0, 0.0, aux))
        else:
            if ga and aux:
                saved.add(sa)
            program.append((kind, st[1], kop, sa, -1, out, 0.0, 0.0, aux))
    cdef dict root_slot = {}
    for t in roots:
        k = where[oid(t)]
        root_slot[oid(t)] = k if k >= 0 else step_slot[-k - 1] + out_index.get(oid(t), 0)
    return (ext, shapes, grad, program, root_slot,
            sorted([k for k in saved if 0 <= k < n_ext]), dtypes, grad_dtypes, typenum)


# -- the per-call checks of tapegrad.compile, in C (they run at every replayed call) ---------------

cdef object aliased_args(object a, dict aliases, list gate):
    """a (a call's argument, lists and tuples walked as flatten_into walks them) with each
    tensor that requires grad replaced by its gated alias (autograd.function.GatedAlias), one
    per tensor: aliases maps oid(tensor) -> alias."""
    if type(a) is list or type(a) is tuple:
        items = [aliased_args(b, aliases, gate) for b in <object>a]
        return items if type(a) is list else tuple(items)
    if isinstance(a, TensorBase) and (<TensorBase>a)._requires_grad:
        alias = aliases.get(oid(a))
        if alias is None:
            from tapegrad.autograd.function import GatedAlias
            alias = aliases[oid(a)] = GatedAlias.apply(a, gate)
        return alias
    return a


cdef int flatten_into(object items, list flat, list nesting) except -1:
    for a in items:
        if type(a) is list or type(a) is tuple:
            nesting.append((type(a) is list, len(<object>a)))
            flatten_into(a, flat, nesting)
        else:
            flat.append(a)
    return 0


def _call_key(tuple args, dict kwargs):
    """(flat, key) for a call: its arguments with lists and tuples flattened (a list of
    parameters is common), and what a capture depends on: grad mode, the nesting, each tensor's
    shape, dtype, requires_grad, layout and which arguments are the same tensor, the other
    arguments' values.  key is None when it cannot be a dict key (an unhashable argument)."""
    flat, key = call_key(args, kwargs)
    try:
        hash(key)
    except TypeError:
        return flat, None
    return flat, key


cdef enum:
    KEY_SEEN_MAX = 16       # tensors told apart by a linear search (beyond: a dict)


cdef tuple call_key(tuple args, dict kwargs):
    """_call_key without the hash check (the caller's dict lookup makes it)."""
    cdef list flat = [], nesting = []
    cdef list parts
    cdef dict seen = None
    cdef PyObject* seen_c[KEY_SEEN_MAX]
    cdef Py_ssize_t n_seen = 0, j, which
    cdef object A
    if kwargs:
        names = tuple(sorted(kwargs))
        flatten_into(args + tuple([kwargs[k] for k in names]), flat, nesting)
        nesting.append(names)
    else:
        flatten_into(args, flat, nesting)
    parts = [grad_enabled(), tuple(nesting)]
    for a in flat:
        if isinstance(a, TensorBase):
            A = (<TensorBase>a)._array
            # which argument tensor it is the same object as (its first position among them)
            which = -1
            for j in range(min(n_seen, KEY_SEEN_MAX)):
                if seen_c[j] == <PyObject*>a:
                    which = j
                    break
            if which < 0 and n_seen >= KEY_SEEN_MAX:
                if seen is None:
                    seen = {}
                which = seen.setdefault(oid(a), n_seen)
            if which < 0 or which == n_seen:
                which = n_seen
                if n_seen < KEY_SEEN_MAX:
                    seen_c[n_seen] = <PyObject*>a
                n_seen += 1
            parts.append((A.shape, cnp.PyArray_TYPE(A), (<TensorBase>a)._requires_grad,
                          cnp.PyArray_IS_C_CONTIGUOUS(A), which))
        elif type(a) is float and a == 0.0:
            # 0.0 == -0.0 (and they hash alike), but `x / c` captured at one of them gives the
            # other's infinities: the sign is part of the signature.
            parts.append((float, a, copysign(1.0, a)))
        else:
            parts.append((type(a), a))
    return flat, tuple(parts)


def _call_externals(list sources, list metas, list flat):
    """The external tensors of a replay: sources[k] is an index into `flat` (an argument, already
    checked by the signature) or a tensor the function closed over, which must still match its
    capture (metas[k]: shape, dtype number, requires_grad, or None for arguments); None if not."""
    return call_externals(sources, metas, flat)


cdef list call_externals(list sources, list metas, object flat):
    """_call_externals; `flat` a list or (the fast call path's arguments) a tuple."""
    cdef Py_ssize_t k, n = len(sources)
    cdef list out = PyList_New(n)
    cdef TensorBase t
    cdef object A
    cdef bint is_list = type(flat) is list
    for k in range(n):
        src = sources[k]
        if type(src) is int:
            list_put(out, k, (<list>flat)[<Py_ssize_t>src] if is_list
                     else (<tuple>flat)[<Py_ssize_t>src])
            continue
        t = <TensorBase>src
        A = t._array
        shape, typenum, requires_grad = <tuple>metas[k]
        if (not shape_is(A, <tuple>shape) or cnp.PyArray_TYPE(A) != <int>typenum
                or not cnp.PyArray_IS_C_CONTIGUOUS(A) or t._requires_grad != requires_grad):
            return None                 # (a list with NULL entries frees as any other)
        list_put(out, k, t)
    return out


cdef inline bint shape_is(object A, tuple shape) except -1:
    """A.shape == shape without making the shape tuple (A an ndarray, shape a tuple of ints)."""
    cdef int nd = cnp.PyArray_NDIM(<cnp.ndarray>A), j
    cdef cnp.npy_intp* dims = cnp.PyArray_DIMS(<cnp.ndarray>A)
    if len(shape) != nd:
        return False
    for j in range(nd):
        if dims[j] != <cnp.npy_intp>(<Py_ssize_t>shape[j]):
            return False
    return True


# -- the call path of tapegrad.compile, in C ----------------------------------------------------
# A replayed call runs from the compiled function's tp_call to the Program and back without a
# Python frame: the signature key, the environment guard, the externals, the replay, the value
# guards and the rebuilt return value.  Anything else (a first call, a guard failure, a function
# that runs eagerly) goes to the Python subclass's _slow_call (tapegrad/replay.py).

cdef object NOT_REPLAYED = object()


cdef class ReplayPlan:
    """One captured signature: a Program and how to feed it, or why it runs eagerly (built by
    tapegrad/replay.py)."""
    cdef public Program program
    cdef public object reason           # None: replayable
    cdef public list sources            # external slot -> index into the flat arguments, or tensor
    cdef public list ext_meta           # external slot -> (shape, dtype number, requires_grad)
    cdef public list guards             # (slot, kind, value) of the values Python read
    cdef public list output_map         # fn's tensor outputs: Program output j, or ~external
    cdef public list saved_ext          # externals whose values the backward reads
    cdef public tuple saved_out         # Program outputs whose values the backward reads
    cdef public tuple saved_out_nodes   # saved_out's grad_fn names in the capture (errors name
                                        # them: "which is output 0 of Exp")
    cdef public object structure        # how to rebuild fn's return value (None: one tensor;
                                        # else an output spec: rebuild_output)
    cdef public tuple env               # (namespace, name, value) the capture read by name
    cdef public bint direct             # output_map is 0, 1, ...: fn returns the Program's
                                        # outputs in their order
    cdef public object phases           # None, or phases(value) -> fn's return value: the
                                        # calls a whole training step makes after its forward
                                        # (backward(), zero_grad(), an optimizer's step), run
                                        # on the replayed value (tapegrad/_step_phases.py)

    def __init__(self, reason=None):
        self.program = None
        self.reason = reason
        self.sources = []
        self.ext_meta = []
        self.guards = []
        self.output_map = []
        self.saved_ext = []
        self.saved_out = ()
        self.saved_out_nodes = ()
        self.structure = None
        self.env = ()
        self.direct = False
        self.phases = None

    def externals(self, list flat):
        """The external tensors for this call (`flat`: its flattened arguments), or None if a
        tensor the function closed over no longer matches its capture."""
        return _call_externals(self.sources, self.ext_meta, flat)

    cdef bint guards_hold_c(self, BufferSet bs) except -1:
        for slot, kind, value in self.guards:
            if read_guarded(bs.arrays[slot], kind) != value:
                return False
        return True

    def guards_hold(self, Lease lease):
        return self.guards_hold_c(lease.buffers)

    def program_outputs(self, result):
        """The Program's outputs among fn's return value (a create_graph re-run's)."""
        cdef list outs
        if self.structure is None:
            outs = [result]
        else:
            outs = [None] * len(self.output_map)
            output_leaves(self.structure, result, outs)
        return tuple([t for t, k in zip(outs, self.output_map) if k >= 0])

    def rebuild(self, outs):
        if self.structure is None:
            return outs[0] if outs else None
        return rebuild_output(self.structure, outs)

    cdef object replay(self, object flat, object call, tuple args, dict kwargs):
        """The call replayed, as fn would return it, or NOT_REPLAYED (a guard failed).  `flat`:
        the flattened arguments (a list), or the arguments themselves when nothing nests."""
        if self.phases is not None:
            # a whole training step: its forward replayed (every guard checked), then its
            # backward() and optimizer calls, in their order, on the replayed values
            value = self.replay_forward(flat, call, args, kwargs)
            if value is NOT_REPLAYED:
                return value
            return self.phases(value)
        return self.replay_forward(flat, call, args, kwargs)

    cdef object replay_forward(self, object flat, object call, tuple args, dict kwargs):
        tensors = call_externals(self.sources, self.ext_meta, flat)
        if tensors is None:
            return NOT_REPLAYED
        cdef bint single = self.direct and self.structure is None and len(self.output_map) == 1
        outs = self.program.run(<list>tensors, self, call, args, kwargs, single)
        if outs is None:
            return NOT_REPLAYED
        if single:                      # fn returns the Program's one output
            return outs
        if self.direct:                 # fn returns the Program's outputs, in order
            if self.structure is None:
                return (<list>outs)[0]
            return self.rebuild(outs)
        cdef list mapped = []
        cdef Py_ssize_t k
        for j in self.output_map:
            k = j
            mapped.append((<list>outs)[k] if k >= 0 else (<list>tensors)[~k])
        if self.structure is None:
            return mapped[0] if mapped else None
        return self.rebuild(mapped)


# fn's return value, nested (`out, (h, c)` of an LSTM, torch.return_types, a dict of tensors):
# its spec (tapegrad/replay.py, _output_spec) is None (no value), an int (the call's i-th
# distinct tensor: a tensor returned twice is one output, returned as the same object), or
# (make, keys, children): a container made by make(items) - tuple, list, a namedtuple's _make,
# a torch.return_types type - or, for a mapping, make(zip(keys, items)).

cdef object rebuild_output(object spec, list outs):
    """The return value of spec, over the call's distinct tensors `outs`."""
    if spec is None:
        return None
    if isinstance(spec, int):
        return outs[<Py_ssize_t>spec]
    make, keys, children = <tuple>spec
    cdef list items = [rebuild_output(child, outs) for child in <tuple>children]
    return make(items) if keys is None else make(zip(<tuple>keys, items))


cdef int output_leaves(object spec, object value, list into) except -1:
    """Puts the tensors of `value`, a return value of spec's form (an eager re-run's), at their
    indices in `into`."""
    if spec is None:
        return 0
    if isinstance(spec, int):
        into[<Py_ssize_t>spec] = value
        return 0
    _, keys, children = <tuple>spec
    if keys is not None:
        value = [value[key] for key in <tuple>keys]
    for child, item in zip(<tuple>children, value):
        output_leaves(child, item, into)
    return 0


cdef object read_guarded(object arr, str kind):
    """What Python read of a value (item, bool, tolist) in this replay."""
    if kind == "tolist":
        return arr.tolist()
    value = arr.reshape(()).item()
    return bool(value) if kind == "bool" else value


cdef bint same_binding(object a, object b) except -1:
    """Whether a name still holds what the capture read (identity first, then equality, so 0.0
    and -0.0 differ too; a tensor only by identity)."""
    if a is b:
        return True
    if isinstance(a, TensorBase) or isinstance(b, TensorBase) or type(a) is not type(b):
        return False
    if isinstance(a, (dict, list, tuple)):
        # a container on the path to a guarded item (cfg["lr"]): the item's own entry reads
        # the container of the capture, so another container, however equal, is a change
        # (and == on containers of tensors would raise)
        return False
    if isinstance(a, (float, np.floating)) and a == 0 and b == 0:
        return bool(np.signbit(a) == np.signbit(b))
    return bool(a == b)


cdef bint env_holds(tuple env) except -1:
    """Whether every closure cell, global, attribute and constant subscript of one
    (cfg["lr"], sizes[0]) the capture read still holds its value.  ns is a cell (name None), a
    dict (the globals, an object's __dict__, a Module's _parameters/_buffers/_modules, or a
    dict the function subscripts), a list (name: the index) or a class (name: the attribute).
    A value of _ENV_ABSENT guards that a name is still missing (an instance attribute that
    would shadow the class attribute the capture read)."""
    cdef object missing = NOT_REPLAYED
    for ns, name, value in env:
        if name is None:
            try:
                now = ns.cell_contents
            except ValueError:
                return False
        elif isinstance(ns, dict):
            now = (<dict>ns).get(name, missing)
        elif isinstance(ns, list):
            try:
                now = ns[name]          # Python indexing, checked
            except IndexError:
                return False
        else:
            # a class attribute (Config.lr, or a class-level default an instance reads), looked
            # up through the class's MRO as the function's read was
            try:
                now = getattr(ns, name, missing)
            except Exception:
                return False
        if now is not value and not same_binding(now, value):
            return False
    return True


_ENV_ABSENT = NOT_REPLAYED


def _env_holds(tuple env):
    return env_holds(env)


def _same_binding(a, b):
    return same_binding(a, b)


cdef bint same_signature(tuple key, tuple args) except -1:
    """Whether a call with positional arguments `args` (none of them a list or tuple) has the
    signature `key` (call_key's) - the key compared in place, without building a new one."""
    cdef PyObject* seen_c[KEY_SEEN_MAX]
    cdef Py_ssize_t n = len(args), i, j, n_seen = 0, which
    cdef tuple part
    cdef object A, v
    if len(key) != n + 2 or <bint>key[0] != grad_enabled() or len(<tuple>key[1]) != 0:
        return False
    for i in range(n):
        a = args[i]
        part = <tuple>key[i + 2]
        if isinstance(a, TensorBase):
            if len(part) != 5:
                return False
            A = (<TensorBase>a)._array
            if (not shape_is(A, <tuple>part[0]) or cnp.PyArray_TYPE(A) != <int>part[1]
                    or (<TensorBase>a)._requires_grad != <bint>part[2]
                    or cnp.PyArray_IS_C_CONTIGUOUS(A) != <bint>part[3]):
                return False
            which = -1                  # which argument tensor it is (as call_key numbers them)
            for j in range(n_seen):
                if seen_c[j] == <PyObject*>a:
                    which = j
                    break
            if which < 0:
                if n_seen == KEY_SEEN_MAX:
                    return False        # (call_key's dict numbering: the slow path)
                seen_c[n_seen] = <PyObject*>a
                which = n_seen
                n_seen += 1
            if which != <Py_ssize_t>part[4]:
                return False
        else:
            if len(part) == 5 or type(a) is not part[0]:
                return False
            v = part[1]
            if a is v:
                continue
            if type(a) is float and a == 0.0:       # the sign is part of the signature
                if len(part) != 3 or copysign(1.0, a) != <double>part[2]:
                    return False
            elif not (a == v):
                return False
    return True


cdef extern from *:
    """
    /* The compiled function's type takes calls by vectorcall (PEP 590) through a function
       pointer each instance holds `offset` bytes in: a call from Python reaches the replay
       without the argument tuple and keyword dict of tp_call. */
    static int tg_enable_vectorcall(PyObject* type, Py_ssize_t offset) {
        PyTypeObject* t = (PyTypeObject*)type;
        t->tp_vectorcall_offset = offset;
        t->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
        PyType_Modified(t);
        return 0;
    }
    """
    ctypedef PyObject* (*vectorcallfunc)(PyObject* callable, PyObject* const* args,
                                         size_t nargsf, PyObject* kwnames)
    int enable_vectorcall "tg_enable_vectorcall" (object type, Py_ssize_t offset) except -1
    Py_ssize_t PyVectorcall_NARGS(size_t nargsf)


# Set while torch.compiler.set_stance holds a stance other than "default": every call of a
# compiled function then goes to its _stance_call (tapegrad/_compile_stance.py), which decides
# whether it runs eagerly, raises, or takes the ordinary path (_default_call).
cdef bint compile_stance_set = False


def _set_compile_stance_active(bint on):
    """Called by tapegrad/_compile_stance.py when the stance changes."""
    global compile_stance_set
    compile_stance_set = on


# How many threads are in a context a replay would skip: a torch function mode (each thread with
# one counts once, tapegrad/overrides.py) or CPU autocast (tapegrad/_settings.py).  While any is,
# every call of a compiled function goes to its _context_call (tapegrad/replay.py), which runs the
# function eagerly in a thread in such a context; otherwise a call costs one int test more.
cdef Py_ssize_t replay_skipping_contexts = 0


def _note_replay_skipping_context(int change):
    """+1 when a thread enters a context a replay would skip, -1 when it leaves it."""
    global replay_skipping_contexts
    replay_skipping_contexts += change


# The Tensor subclasses that dispatch to their __torch_function__ (tapegrad/overrides.py's set,
# which it keeps adding to; None before the first): a call with an instance of one among its
# arguments runs eagerly (_context_call), so that the subclass sees its calls.  Tested here, at C
# cost, rather than counted as a context above: tapegrad.nn's own UninitializedParameter and
# UninitializedBuffer keep the protocol, so any program that imports nn has such types, and
# every compiled call of it took the Python detour (~30 us of an MLP step's call, caches cold).
cdef set dispatching_subclasses = None


def _set_replay_dispatching_subclasses(set types):
    """Called by tapegrad/overrides.py at the first Tensor subclass that dispatches: compiled
    calls look for instances of the types in `types` among their arguments from now on."""
    global dispatching_subclasses
    dispatching_subclasses = types


cdef inline bint dispatching_item(object item) except -1:
    return type(item) in dispatching_subclasses


cdef bint holds_dispatching_instance(tuple args, dict kwargs) except -1:
    """tapegrad/overrides.py's _holds_dispatching_instance in C: whether an argument, or an
    item of a list or tuple argument, is an instance of a dispatching subclass (by exact type,
    as there)."""
    cdef object value
    for value in args:
        if holds_dispatching_value(value):
            return True
    if kwargs:
        for value in kwargs.values():
            if holds_dispatching_value(value):
                return True
    return False


cdef bint holds_dispatching_value(object value) except -1:
    cdef object item
    if isinstance(value, (list, tuple)):
        for item in value:
            if dispatching_item(item):
                return True
        return False
    return dispatching_item(value)


@cython.auto_pickle(False)   # (unpicklable: see Tape's note)
cdef class CompiledCall:
    """The call path of tapegrad.compile's CompiledFunction (its Python subclass adds the
    capture, explain() ...): a replayable signature is replayed here, anything else goes to
    self._slow_call(args, kwargs, flat, key, plan, guard_failed).

    Calls arrive by vectorcall (compiled_call_vectorcall; tp_call is the same path for callers
    that hold an argument tuple).  The plan the previous call replayed is kept with its
    signature key: a call with the same positional arguments (no keywords, no lists or tuples)
    is matched against that key in place (same_signature) instead of building its key and
    looking it up - what most loops do."""
    cdef vectorcallfunc entry           # what a vectorcall of this object runs
    cdef public object fn
    cdef public dict _plans
    cdef dict _stats
    cdef Py_ssize_t replays             # replays not yet added to _stats["replays"]
    cdef public ReplayPlan _last_plan   # the plan the previous call replayed, and its key
    cdef public tuple _last_key

    def __cinit__(self):
        self.entry = <vectorcallfunc>compiled_call_vectorcall

    @property
    def stats(self):
        """{"captures", "replays", "eager", "guard_failures"}: how the calls went."""
        if self.replays:
            self._stats["replays"] += self.replays
            self.replays = 0
        return self._stats

    @stats.setter
    def stats(self, dict value):
        self._stats = value
        self.replays = 0

    def __call__(self, *args, **kwargs):
        return self.call(args, kwargs)

    def _default_call(self, tuple args, dict kwargs):
        """The call as the default stance makes it (_stance_call's way back)."""
        return self.default_call(args, kwargs)

    cdef object call(self, tuple args, dict kwargs):
        """The call fn(*args, **kwargs) (kwargs None: no keywords)."""
        if replay_skipping_contexts > 0 or (
                dispatching_subclasses and holds_dispatching_instance(args, kwargs)):
            return self._context_call(args, {} if kwargs is None else kwargs)
        if compile_stance_set:
            return self._stance_call(args, {} if kwargs is None else kwargs)
        return self.default_call(args, kwargs)

    cdef object default_call(self, tuple args, dict kwargs):
        cdef ReplayPlan plan = self._last_plan
        if saved_hooks_on():            # a replay would bypass the pack and unpack hooks
            return self.fn(*args, **(kwargs or {}))
        if plan is not None and not kwargs and same_signature(self._last_key, args):
            if env_holds(plan.env):
                out = plan.replay(args, self.fn, args, kwargs)
                if out is not NOT_REPLAYED:
                    self.replays += 1
                    return out
            if kwargs is None:
                kwargs = {}
            flat, key = call_key(args, kwargs)
            return self._slow_call(args, kwargs, flat, key, plan, True)     # a guard failed
        if kwargs is None:
            kwargs = {}
        flat, key = call_key(args, kwargs)
        try:
            found = self._plans.get(key)
        except TypeError:                   # an unhashable argument: not cached
            key = found = None
        if found is not None and (<ReplayPlan>found).program is not None:
            plan = <ReplayPlan>found
            if env_holds(plan.env):
                out = plan.replay(<list>flat, self.fn, args, kwargs)
                if out is not NOT_REPLAYED:
                    self.replays += 1
                    self._last_plan, self._last_key = plan, <tuple>key
                    return out
            return self._slow_call(args, kwargs, flat, key, plan, True)     # a guard failed
        return self._slow_call(args, kwargs, flat, key, found, False)


cdef object compiled_call_vectorcall(PyObject* callable, PyObject** argv, size_t nargsf,
                                     PyObject* kwnames):
    """CompiledCall's vectorcall: the positional arguments as a tuple (kept by a replay's node
    for a create_graph re-run), keywords (rare) as a dict."""
    cdef Py_ssize_t n = PyVectorcall_NARGS(nargsf), j, n_kw
    cdef tuple args = PyTuple_New(n)
    for j in range(n):
        Py_INCREF(<object>argv[j])      # (PyTuple_SET_ITEM steals a reference)
        PyTuple_SET_ITEM(args, j, <object>argv[j])
    if kwnames == NULL:
        return (<CompiledCall><object>callable).call(args, None)
    cdef dict kwargs = {}
    n_kw = len(<tuple><object>kwnames)
    for j in range(n_kw):
        kwargs[(<tuple><object>kwnames)[j]] = <object>argv[n + j]
    return (<CompiledCall><object>callable).call(args, kwargs)


cdef Py_ssize_t vectorcall_offset():
    """Where a CompiledCall holds its vectorcall function (the same in every subclass)."""
    cdef CompiledCall probe = CompiledCall.__new__(CompiledCall)
    return <Py_ssize_t>(<char*>&probe.entry - <char*><PyObject*>probe)


def _enable_vectorcall(type cls):
    """Make calls of `cls` (CompiledCall or a subclass that keeps its __call__) vectorcalls: a
    Python subclass does not inherit the flag (Python 3.11)."""
    if not issubclass(cls, CompiledCall) or cls.__call__ is not CompiledCall.__call__:
        raise TypeError(f"{cls.__name__} does not take CompiledCall's call path")
    enable_vectorcall(cls, vectorcall_offset())


_enable_vectorcall(CompiledCall)
