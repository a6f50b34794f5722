# ---------------------------------------------------------------------------------------------
# The reverse sweep.
#
# One downward walk of the arena from the highest root's record (several roots are seeded at
# once: backward([y1, y2]) and grad([y1, y2], ...) sum their contributions).  Adjoints live in a C
# array indexed by record (owned references to ndarrays).  A record with no pending adjoint is
# skipped; the walk stops below the lowest record that received one.  No recursion, no per-node
# Python call for built-in ops: each step is a call through the op table's C function pointer.
# The only records whose step calls Python are those with tensor hooks (Record.extra) and custom
# autograd.Functions (OP_FUNCTION, ops_function.pxi).
#
# Three modes:
#   SWEEP_ACCUMULATE  backward(): every leaf reached receives its total in .grad
#   SWEEP_INPUTS      backward(inputs=...): only the given tensors' .grad (non-leaf ones are
#                     retain_grad()ed first, as PyTorch does)
#   SWEEP_CAPTURE     autograd.grad(): the total adjoint arriving at each requested record (a
#                     non-leaf's own record, a leaf's LEAF record) is returned; no .grad changes
# With targets (the last two modes) a forward scan over [lowest target, top] first marks the
# records that lead to a target; the walk ignores the others (PyTorch runs only the nodes needed
# for the inputs) and stops at the lowest target.
#
# Accumulation follows HIPS autograd: the first contribution to an adjoint is kept by reference;
# the second creates a fresh sum, which the sweep then owns and may add later contributions into in
# place.  Leaves (LEAF records) and retain_grad() tensors receive their total in .grad: a copy of
# it the first time (created on first backward, as PyTorch does), an in-place add afterwards.
# ---------------------------------------------------------------------------------------------

from libc.stdlib cimport calloc
from cpython.ref cimport Py_DECREF, Py_XINCREF, Py_REFCNT

BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.")


cdef bint leaf_takes_grad(Record* r) except -1:
    """Whether LEAF record r accumulates into its tensor's .grad, as PyTorch's AccumulateGrad:
    it raises when the tensor was since given a history by an in-place op (fuzz seed 54001223:
    a leaf, its requires_grad turned off, then written with a value that requires grad), and
    does nothing when the tensor is gone, no longer requires grad, or is a view taken under
    no_grad."""
    if r.flags & RF_MOVED:
        raise RuntimeError("leaf variable has been moved into the graph interior")
    if r.out == NULL:
        return False
    cdef TensorBase t = <TensorBase>r.out
    return t._requires_grad and not no_grad_view_drops_grad(t)


cdef int check_saved_versions(Record* r) except -1:
    """Refuse to run a VJP whose saved values were overwritten in place since the forward."""
    cdef int j
    cdef Version v
    for j in range(MAX_SAVED):
        if r.ver[j] == NULL or (r.saved[j] != NULL and type(<object>r.saved[j]) is PackedSaved):
            continue                    # (a hooked value: unpack_saved decides, saved_hooks.pxi)
        v = <Version>r.ver[j]
        if v.value != r.ver_at[j]:
            if r.saved[j] == NULL:
                # a version kept alone (guard_version): PyTorch saved the tensor itself, and
                # names it as it is now, its dtype, shape and current grad_fn
                t = guarded_tensor(v)
                if t is not None:
                    raise modified_in_place_error(t._array, _grad_fn_name_of(t), v.value,
                                                  r.ver_at[j])
            saved = <object>r.saved[j] if r.saved[j] != NULL else None
            raise modified_in_place_error(saved, saved_value_node_name(r, j), v.value,
                                          r.ver_at[j])
    return 0


cdef TensorBase guarded_tensor(Version v):
    """The live tensor on the tape whose storage version counter is `v`, the latest written
    (an in-place write makes its tensor the output of the newest record), or None.  Only on
    the error path: a walk over the tape."""
    cdef Py_ssize_t i
    for i in range(TAPE.n - 1, -1, -1):
        if TAPE.recs[i].out != NULL and (<TensorBase>TAPE.recs[i].out)._version is v:
            return <TensorBase>TAPE.recs[i].out
    return None


cdef bint view_of_grad_tensor(object base) except -1:
    """Whether `base` is the array of a live tensor on the tape that requires grad (the tensor
    a saved numpy view was taken from).  Only on the error path: a walk over the tape."""
    cdef Py_ssize_t i
    for i in range(TAPE.n - 1, -1, -1):
        if TAPE.recs[i].out != NULL and (<TensorBase>TAPE.recs[i].out)._array is base:
            return (<TensorBase>TAPE.recs[i].out)._requires_grad
    return False


cdef object saved_value_node_name(Record* r, int j):
    """The node PyTorch's in-place error names for saved value j of record r (a copy of a tape
    record: the sweeps run on copies): "which is output 0 of Exp".  PyTorch keeps the node an
    output was saved with (r's own), and names a saved input by its tensor's grad_fn at the time
    of the error: the in-place op's when the write was recorded, none for a leaf.  Which of the
    two: the live tensor holding the value, its history followed back through the in-place
    records (each takes the tensor's previous history as input 0) to r (a saved output) or
    elsewhere.  Only on the error path: a walk over the tape."""
    cdef Py_ssize_t me = -1, i, k
    cdef TensorBase t = None
    saved = <object>r.saved[j] if r.saved[j] != NULL else None
    if (r.flags & (RF_SAVED_NO_HISTORY << j) and isinstance(saved, np.ndarray)
            and saved.dtype.kind in "biu"):
        # an index, mask or target (save_index): no history, ever, whatever tensor holds it now
        # (sort's returned indices too: PyTorch names no node for them)
        return None
    for i in range(TAPE.n - 1, -1, -1):
        if me < 0 and TAPE.recs[i].ver[j] == r.ver[j] and TAPE.recs[i].saved[j] == r.saved[j] \
                and TAPE.recs[i].op == r.op:
            me = i
        if t is None and saved is not None and TAPE.recs[i].out != NULL and \
                (<TensorBase>TAPE.recs[i].out)._array is saved:
            t = <TensorBase>TAPE.recs[i].out
    if t is None and r.flags & (RF_SAVED_NO_HISTORY << j):
        # an input that had no history when saved (a tensor that requires no grad) and got none
        # since (no record's output holds it): PyTorch names no node ("[torch.FloatTensor [3]] is
        # at version 1"); without this test it was named as r's own output
        return None
    if t is None and saved is not None and isinstance(saved, np.ndarray) \
            and saved.base is not None and view_of_grad_tensor(saved.base):
        # a view of a tensor that requires grad, dead since (weight.t() inside F.linear, w[0]):
        # PyTorch regenerates a view's grad_fn once its base is written in place, as
        # AsStridedBackward0, and names that node
        return "AsStridedBackward0"
    if t is None or me < 0:
        return grad_fn_name(r)
    k = t._node
    while k > me:
        k = rec_inputs(&TAPE.recs[k])[0] if TAPE.recs[k].n_in > 0 else -1
    return grad_fn_name(r) if k == me else _grad_fn_name_of(t)


cdef bint broadcasts_to(object g, object A) except -1:
    """Whether gradient g broadcasts to the shape of array A (a VJP's 0-d result does; a graph
    recorded before `t.data = other` changed t's shape does not)."""
    try:
        return np.broadcast_shapes(g.shape, A.shape) == A.shape
    except ValueError:
        return False


cdef bint keeps_recorded_shape(TensorBase t):
    """Whether t's node keeps the shape t had when recorded, t having another since
    (note_output_shape): the gradient reaching it has the recorded shape (arriving_shape), which
    t's retained .grad and autograd.grad's result for t keep, as PyTorch's."""
    return t._node >= 0 and checks_arrival(t._node)


cdef int deliver_grad(TensorBase t, object g, bint owned, bint retained=False,
                      object made_in=None) except -1:
    """Add adjoint `g` into t.grad: adopt it (or a copy) the first time, add in place afterwards.
    A non-leaf's retained .grad (`retained`) is PyTorch's retains_grad hook's instead: a
    row-major copy the first time, then a new tensor, grad + g (a .grad read after one backward
    keeps its value through the next, as PyTorch's).  `made_in`: the dtype a new .grad has when
    not t's own (leaf_grad_dtype)."""
    cdef TensorBase grad
    A = t._array
    dt = (made_in if made_in is not None else
          A.dtype if not GRAD_DTYPES_SET else grad_creation_dtype(t))    # (Tensor.grad_dtype)
    if g.shape != A.shape:
        if not broadcasts_to(g, A) or keeps_recorded_shape(t):
            # t.data = other of another shape since the graph was recorded: PyTorch's
            # AccumulateGrad takes the gradient as the graph made it
            A = g
        else:
            full = np.empty(A.shape, dtype=dt)
            full[...] = g
            g = full
            owned = True
    if t._grad is None:
        if (not retained and not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>A)
                and dense_layout(<cnp.ndarray>A)):
            # PyTorch's gradient layout contract: a leaf laid out densely (a transposed or
            # permuted tensor) gets its .grad with its own strides; any other leaf a row-major one
            if owned and g.dtype == dt and g.strides == A.strides and g.flags.writeable:
                t._grad = wrap(g)
            else:
                laid_out = np.empty_like(A, dtype=dt)
                np.copyto(laid_out, g, casting="unsafe")
                t._grad = wrap(laid_out)
        elif owned and g.dtype == dt and g.flags.c_contiguous and g.flags.writeable:
            t._grad = wrap(g)
        else:
            t._grad = wrap(np.array(g, dtype=dt, order="C", copy=True))
    elif not isinstance(t._grad, TensorBase):
        # a sparse gradient (embedding(sparse=True)) meets a dense one: PyTorch's
        # AccumulateGrad makes a new dense .grad, their sum
        dense = np.array(t._grad.to_dense()._array, dtype=dt, order="C", copy=True)
        np.add(dense, g, out=dense, casting="unsafe")
        t._grad = wrap(dense)
    elif retained:
        total = np.array((<TensorBase>t._grad)._array, copy=True, order="K")
        np.add(total, g, out=total, casting="unsafe")
        t._grad = wrap(total)
    else:
        grad = <TensorBase>t._grad
        if not grad._array.flags.writeable and any(
                st == 0 and n > 1 for st, n in zip(grad._array.strides, grad._array.shape)):
            # (a .grad assigned an expand()ed tensor: numpy marks it read-only; PyTorch refuses
            # the in-place accumulation, its elements sharing memory)
            raise RuntimeError("unsupported operation: more than one element of the written-to "
                               "tensor refers to a single memory location. Please clone() the "
                               "tensor before performing the operation.")
        np.add(grad._array, g, out=grad._array, casting="unsafe")
    return 0


cdef inline bint sole_reference(object a):
    """True when the caller's one local reference is the only one to ndarray `a` and `a` owns
    its memory: no tensor, saved value, seed, view or user variable can see it, so handing it over
    as a .grad cannot alias anything.  (The caller must have dropped its other references: the
    VJP's result tuple and the table slot.)"""
    return (Py_REFCNT(a) == 1 and cnp.PyArray_CheckExact(a)
            and cnp.PyArray_CHKFLAGS(<cnp.ndarray>a, cnp.NPY_ARRAY_OWNDATA))


# -- zero adjoints (PyTorch's ZeroTensor) ---------------------------------------------------------
# PyTorch's sgn of a real tensor returns a ZeroTensor as its gradient.  The backward formulas that
# are products, quotients, sums and views of it (mul, div, add, exp, log, pow, view, ...) give a
# ZeroTensor again whatever the other factor (inf included), and an accumulation skips it, so a
# NaN or inf factor on that path never meets it (x.exp().sgn() at x = 1000 has gradient 0, not
# inf * 0 = NaN); any other formula (neg, where, expand's sum_to, matmul, ...) materializes it as
# zeros, which such a factor then turns into NaN, as here.  The sweep's zero adjoint is a
# read-only zero array of that type: a record that receives it (or is sgn's) and whose PyTorch
# formula keeps it still runs its VJP for the shapes, whose results become zero adjoints (their
# values, NaN or not, unread); any other record, a hook, a Function or a target gets plain zeros.

# The nodes whose PyTorch backward keeps a ZeroTensor (checked against torch 2.13); sub's keeps it
# for its first input only (the second's is a negation, which materializes it)
ZERO_KEEPING_NODES = frozenset([
    "MulBackward0", "MulBackward1", "DivBackward0", "DivBackward1", "AddBackward0",
    "AddBackward1", "SubBackward0", "SubBackward1", "ExpBackward0", "Exp2Backward0",
    "Expm1Backward0", "LogBackward0", "Log1PBackward0", "SinBackward0", "CosBackward0",
    "TanBackward0", "AtanBackward0", "SqrtBackward0", "PowBackward0", "PowBackward1",
    "AbsBackward0", "ViewBackward0", "CloneBackward0", "UnsqueezeBackward0",
    "SqueezeBackward0", "SqueezeBackward1", "StackBackward0", "SumBackward0"])
ZERO_KEEPING_FIRST_ONLY = frozenset(["SubBackward0", "SubBackward1"])
cdef char ZERO_KEEPING[MAX_OPS]         # by opcode: 1 keeps it, 2 for the first input only
cdef Py_ssize_t zero_keeping_known = 0  # how many opcodes ZERO_KEEPING covers


cdef void note_zero_keeping_ops():
    """ZERO_KEEPING for the opcodes registered since the last call (op modules register theirs
    when they load)."""
    global zero_keeping_known
    cdef Py_ssize_t n = len(OP_NAMES), op
    for op in range(zero_keeping_known, min(n, MAX_OPS)):
        ZERO_KEEPING[op] = (2 if OP_NAMES[op] in ZERO_KEEPING_FIRST_ONLY else
                            1 if OP_NAMES[op] in ZERO_KEEPING_NODES else 0)
    zero_keeping_known = n

class ZeroAdjoint(np.ndarray):
    """A gradient known to be zero (PyTorch's ZeroTensor): added to nothing, skipped otherwise."""


cdef object zero_adjoint_like(object g):
    """The zero adjoint of g's shape and dtype (a broadcast zero: no memory of its size)."""
    return np.broadcast_to(np.zeros((), dtype=g.dtype), g.shape).view(ZeroAdjoint)


cdef object zero_adjoints_like(object grads, bint first_only):
    """A VJP's results (an array, or a tuple with None / ACCUMULATED entries) as zero adjoints
    (the first one only when `first_only`: the others stay the VJP's zeros, as plain arrays)."""
    if type(grads) is tuple:
        return tuple([gk if gk is None or gk is ACCUMULATED or not cnp.PyArray_Check(gk)
                      else (gk.view(np.ndarray) if first_only and q > 0
                            else zero_adjoint_like(gk))
                      for q, gk in enumerate(<tuple>grads)])
    return zero_adjoint_like(grads) if cnp.PyArray_Check(grads) else grads


cdef object materialized(object g):
    """A zero adjoint as the plain zeros a target, a hook or a Function's backward receives."""
    return np.zeros(g.shape, dtype=g.dtype) if type(g) is ZeroAdjoint else g


cdef object arriving_shape(Py_ssize_t k, object g, Record* producer, Py_ssize_t q):
    """The shape gradient g reaching record k (output q of `producer`'s VJP; NULL: backward's
    seed q) is to be summed to, or None where g fits.  Only a record whose output an unrecorded
    change reshaped since (note_output_shape; the caller checks checks_arrival(k)) has one:
    PyTorch's engine checks each gradient against the shape its node recorded
    (validate_outputs), sums one that broadcasts to it (a no_grad unsqueeze_(0)) and refuses
    any other (a no_grad t_) with this message, rather than let it flow on in the wrong shape."""
    shape = (<RecordExtra>TAPE.recs[k].extra).out_shape
    if shape is None:
        return None
    got = tuple(g.shape)
    if got == shape:
        return None
    cdef Py_ssize_t lead = len(got) - len(shape), d
    if lead >= 0 and all(shape[d] == 1 or shape[d] == got[lead + d] for d in range(len(shape))):
        return shape
    who = "" if producer == NULL else f"Function {record_name(producer)} returned an "
    raise RuntimeError(f"{who}invalid gradient at index {q} - got {list(got)} but expected "
                       f"shape compatible with {list(shape)}")


cdef inline bint checks_arrival(Py_ssize_t k) noexcept:
    """Whether record k's gradients are checked on arrival (its output was reshaped without a
    record since: note_output_shape): the one test the sweep's hot loop makes, in C."""
    return (TAPE.recs[k].extra != NULL
            and (<RecordExtra>TAPE.recs[k].extra).out_shape is not None)


cdef object fit_arriving(Py_ssize_t k, object g, Record* producer, Py_ssize_t q):
    """g fit to record k's recorded output shape (arriving_shape); the caller checks
    checks_arrival(k)."""
    shape = arriving_shape(k, g, producer, q)
    if shape is None:
        return g
    if type(g) is ZeroAdjoint:
        return np.broadcast_to(np.zeros((), dtype=g.dtype), shape).view(ZeroAdjoint)
    return sum_to(g, shape)


cdef inline bint is_bfloat16_record(Py_ssize_t k) noexcept:
    """Whether record k's output is a bfloat16 tensor: a result marked by
    mark_bfloat16_gradient, or a leaf of a bfloat16 class (which a leaf can take after its
    record exists: requires_grad_() after .to(torch.bfloat16))."""
    cdef Record* r = &TAPE.recs[k]
    if r.extra != NULL and (<RecordExtra>r.extra).bfloat16_gradient:
        return True
    return (r.op == OP_LEAF and r.out != NULL and BFLOAT16_CLASSES != NULL
            and (<PyObject*>r.out.ob_type == BFLOAT16_CLASSES[0]
                 or <PyObject*>r.out.ob_type == BFLOAT16_CLASSES[1]))


cdef int accumulate_bfloat16(PyObject** adj, char* owned, Py_ssize_t k, object gk) except -1:
    """accumulate() into a bfloat16 tensor's record: PyTorch's backward kernels write each
    contribution in bfloat16 and its engine adds them in bfloat16, so each contribution is
    rounded, and each sum."""
    cdef object prev
    gk = ROUND_BFLOAT16_ARRAY(gk)
    if adj[k] != NULL:
        prev = <object>adj[k]
        if type(prev) is not ZeroAdjoint and prev is not UNDEFINED_GRAD:
            gk = ROUND_BFLOAT16_ARRAY(prev + gk)
        Py_DECREF(prev)     # `prev` (a local) still holds a reference until the function returns
    Py_INCREF(gk)
    adj[k] = <PyObject*>gk
    owned[k] = 1
    return 0


cdef inline int accumulate(PyObject** adj, char* owned, Py_ssize_t k, object gk) except -1:
    cdef object prev
    if (is_bfloat16_record(k) and type(gk) is not ZeroAdjoint and gk is not UNDEFINED_GRAD
            and cnp.PyArray_Check(gk) and cnp.PyArray_TYPE(<cnp.ndarray>gk) == cnp.NPY_FLOAT32):
        return accumulate_bfloat16(adj, owned, k, gk)
    if adj[k] == NULL:
        Py_INCREF(gk)
        adj[k] = <PyObject*>gk
        owned[k] = 0
        return 0
    prev = <object>adj[k]
    if type(gk) is ZeroAdjoint or gk is UNDEFINED_GRAD:       # (adds nothing)
        return 0
    if type(prev) is ZeroAdjoint or prev is UNDEFINED_GRAD:   # (replaced by the first real one)
        Py_INCREF(gk)
        Py_DECREF(prev)     # `prev` (a local) still holds a reference until the function returns
        adj[k] = <PyObject*>gk
        owned[k] = 0
        return 0
    if owned[k] and prev.shape == gk.shape and prev.flags.writeable:
        np.add(prev, gk, out=prev, casting="unsafe")
        return 0
    # A first contribution that only the table holds (a VJP's fresh result: `prev` adds one
    # reference) is summed into in place: no new array per accumulation.
    if (Py_REFCNT(prev) == 2 and cnp.PyArray_CheckExact(prev)
            and cnp.PyArray_CHKFLAGS(<cnp.ndarray>prev, cnp.NPY_ARRAY_OWNDATA)
            and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>prev) and cnp.PyArray_Check(gk)
            and cnp.PyArray_TYPE(<cnp.ndarray>prev) == cnp.PyArray_TYPE(<cnp.ndarray>gk)
            and prev.shape == gk.shape):
        add_into(prev, gk)
        owned[k] = 1
        return 0
    summed = nd(prev + gk)
    Py_INCREF(summed)
    Py_DECREF(prev)     # `prev` (a local) still holds a reference until the function returns
    adj[k] = <PyObject*>summed
    owned[k] = 1
    return 0


cdef object undefined_for_none(object grads, Py_ssize_t n_in):
    """A custom Function's results with each None as the undefined gradient."""
    if n_in == 1:
        return UNDEFINED_GRAD if grads is None else grads
    for gk in <tuple>grads:             # (by identity: `None in` would compare arrays)
        if gk is None:
            return tuple([UNDEFINED_GRAD if gk is None else gk for gk in <tuple>grads])
    return grads


cdef Py_ssize_t pass_undefined(PyObject** adj, char* owned, Py_ssize_t i, char* need,
                               bint retain_graph, Py_ssize_t lowest) except -2:
    """Record i got only the undefined gradient: pass it on (undefined_passes_to) to the inputs
    that have no gradient yet; returns the new lowest record to visit."""
    cdef list to = undefined_passes_to(i, need, retain_graph)
    cdef Py_ssize_t k
    if to is None:                      # a custom Function's output: its Function's slot
        k = TAPE.recs[i].inp[0]
        if need == NULL or need[k]:
            route_function_output(adj, k, <Py_ssize_t>TAPE.recs[i].scalar, UNDEFINED_GRAD, i)
            return k if k < lowest else lowest
        return lowest
    for k in to:
        if adj[k] == NULL:
            accumulate(adj, owned, k, UNDEFINED_GRAD)
        if k < lowest:
            lowest = k
    return lowest


cdef list take_compiled_seeds(PyObject** adj, char* owned, Record* rec, char* need):
    """The adjoints a tapegrad.compile'd call's inputs have so far (the later uses' total), taken
    out of the table (one entry per input, None where none): the replay's backward adds its
    contributions to them in the eager sweep's order and returns the sums (CompiledBackward).
    Summing them after, as for any node, rounded (a + b) + c as a + (b + c) where an input
    is also used after the call (fuzz 65020624)."""
    cdef Py_ssize_t* ins = rec_inputs(rec)
    cdef Py_ssize_t q, k
    cdef list seeds = None
    cdef object a
    for q in range(rec.n_in):
        k = ins[q]
        if (k < 0 or adj[k] == NULL or (need != NULL and not need[k]) or checks_arrival(k)
                or is_bfloat16_record(k)):
            continue
        a = <object>adj[k]
        if not cnp.PyArray_CheckExact(a):         # (a ZeroAdjoint: adds nothing)
            continue
        if seeds is None:
            seeds = [None] * rec.n_in
        seeds[q] = a
        adj[k] = NULL
        owned[k] = 0
        Py_DECREF(a)        # (the table's reference; `a` and the list hold theirs)
    return seeds


cdef int return_unused_seeds(PyObject** adj, char* owned, Record* rec, list seeds,
                             object grads) except -1:
    """Put back the seeds of the inputs a compiled call's backward gave no gradient (None)."""
    cdef Py_ssize_t* ins = rec_inputs(rec)
    cdef Py_ssize_t q
    for q in range(rec.n_in):
        if seeds[q] is not None and (grads if rec.n_in == 1 else (<tuple>grads)[q]) is None:
            accumulate(adj, owned, ins[q], seeds[q])
    return 0


cdef inline void offer_owned_adjoints(PyObject** adj, char* owned, Record* rec,
                                      char* need) noexcept:
    """Offer a multiplication's VJP the adjoints of its inputs that the sweep owns (kernels.pxi:
    accumulate_product)."""
    cdef Py_ssize_t* ins = rec_inputs(rec)
    cdef Py_ssize_t k
    for q in range(2):
        k = ins[q]
        # (not to a record whose gradients are checked on arrival, arriving_shape, nor to a
        # bfloat16 one's, whose contributions are rounded as they arrive)
        if (k >= 0 and adj[k] != NULL and owned[k] and (need == NULL or need[k])
                and not checks_arrival(k) and not is_bfloat16_record(k)):
            offer_accumulator(rec, q, adj[k])


cdef inline object leaf_grad_dtype(Record* rec):
    """The dtype LEAF record rec makes a new .grad in when not its tensor's own: the one its
    tensor had when the record was left in older graphs (split_accumulator), else None."""
    if rec.extra == NULL:
        return None
    return (<RecordExtra>rec.extra).leaf_dtype


cdef int accumulate_leaf(Py_ssize_t i, object g, bint own, int mode, Py_ssize_t* slot,
                         list captured) except -1:
    """LEAF record i's AccumulateGrad, its tensor hooks already run on g: g into .grad (or into
    autograd.grad's result), then the post-accumulate and node hooks."""
    cdef Record* rec = &TAPE.recs[i]
    cdef object token
    if mode == SWEEP_CAPTURE:
        if PROFILING and slot[i] >= 0:
            profile_captured(rec)
        # (a view taken under no_grad has no gradient accumulator in PyTorch: the gradient
        # reaching it is dropped, for autograd.grad as for .grad)
        if slot[i] >= 0 and not (rec.out != NULL and no_grad_view_drops_grad(<TensorBase>rec.out)):
            captured[slot[i]] = g
    elif leaf_takes_grad(rec):
        # A fresh VJP result nobody else holds (a linear layer's weight gradient) is adopted as
        # .grad rather than copied.
        if PROFILING:
            token = profiler_open("torch::autograd::AccumulateGrad", None)
            deliver_grad(<TensorBase>rec.out, g, own or sole_reference(g), False,
                         leaf_grad_dtype(rec))
            profiler_close(token)
        else:
            deliver_grad(<TensorBase>rec.out, g, own or sole_reference(g), False,
                         leaf_grad_dtype(rec))
        if TAPE.recs[i].extra != NULL:
            run_post_accumulate_hooks(i)
            run_leaf_node_hooks(i, g)
    return 0


cdef int deliver_ready_leaves(list ready, PyObject** adj, char* owned, char* need, int mode,
                              Py_ssize_t* slot, list captured) except -1:
    """The leaves PyTorch's queue runs now (ReadyOrder.after), in its order: each one's whole
    step, as the walk's below would take it (tensor hooks, then the accumulation).  A leaf with
    no gradient, or only the undefined one, is left to the walk."""
    cdef Py_ssize_t k
    cdef bint own, zero
    for k in ready:
        if adj[k] == NULL or (need != NULL and not need[k]):
            continue
        g = <object>adj[k]
        if g is UNDEFINED_GRAD:
            continue
        Py_DECREF(g)
        adj[k] = NULL
        own = owned[k]
        if not cnp.PyArray_Check(g) and cnp.PyArray_IsAnyScalar(g):
            g = nd(g)
        zero = type(g) is ZeroAdjoint
        if TAPE.recs[k].extra != NULL:
            shown = materialized(g) if zero else g
            h = run_tensor_hooks(k, shown)
            if h is not shown:
                g = h
                own = False
                zero = False
            h = None
            shown = None
        if zero:
            g = materialized(g)
        accumulate_leaf(k, g, own, mode, slot, captured)
    return 0


cdef object sweep(list roots, list seeds, bint retain_graph, int mode, list targets):
    """Propagate seeds[j] (ndarrays) from records roots[j] down the tape.

    SWEEP_CAPTURE returns a list with one entry per target: the total adjoint that reached it
    (an ndarray) or None; the other modes return None."""
    cdef Py_ssize_t nr = len(roots), nt = 0 if targets is None else len(targets)
    cdef Py_ssize_t top = -1, lowest, stop = 0, i, k, j, lo
    cdef int sgn_code
    cdef bint zero
    cdef PyObject** adj = NULL
    cdef char* owned = NULL
    cdef char* need = NULL
    cdef Py_ssize_t* slot = NULL
    cdef Record rec                     # private copy: the arena may move while a VJP runs
    cdef Py_ssize_t* ins
    cdef int q, prev_disabled
    cdef char own
    cdef bint any_needed, node_hooked
    cdef vjp_fn vjp
    cdef list captured = None
    cdef object token = None            # the profiler's event of the node running (PROFILING)
    cdef list compiled_seeds = None     # a compiled call's inputs' adjoints (take_compiled_seeds)
    cdef ReadyOrder order = None        # when leaves are delivered, if Python can see it
    for j in range(nr):
        k = roots[j]
        if k > top:
            top = k
    lowest = top
    for j in range(nr):
        k = roots[j]
        if k < lowest:
            lowest = k
    cdef Py_ssize_t n = top + 1
    if n <= 0:
        return [None] * nt if mode == SWEEP_CAPTURE else None
    adj = <PyObject**>calloc(n, sizeof(PyObject*))
    owned = <char*>calloc(n, 1)
    if targets is not None:
        need = <char*>calloc(n, 1)
        slot = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    if adj == NULL or owned == NULL or (targets is not None and (need == NULL or slot == NULL)):
        free(adj)
        free(owned)
        free(need)
        free(slot)
        raise MemoryError("tapegrad: cannot allocate the adjoint table for backward")
    if targets is not None:
        # Which records lead to a target: creation order is topological, so one upward scan.
        for i in range(n):
            slot[i] = -1
        lo = n
        for j in range(nt):
            k = targets[j]
            if 0 <= k < n:
                need[k] = 1
                if slot[k] < 0:
                    slot[k] = j
                if k < lo:
                    lo = k
        for i in range(lo + 1, n):
            if need[i] or (TAPE.recs[i].flags & RF_FREE):
                continue
            ins = rec_inputs(&TAPE.recs[i])
            for q in range(TAPE.recs[i].n_in):
                k = ins[q]
                if k >= lo and need[k]:
                    need[i] = 1
                    break
        stop = lo
        if mode == SWEEP_CAPTURE:
            captured = [None] * nt
    TAPE.sweeping += 1
    for j in range(nr):                 # the roots stay alive whatever hooks and Functions do
        TAPE.recs[<Py_ssize_t>roots[j]].refcnt += 1
    global tapegrad_grad_disabled
    prev_disabled = tapegrad_grad_disabled
    tapegrad_grad_disabled = 1          # hooks and Function backwards run without recording
    try:
        order = ready_order_for(roots, n, need)
        for j in range(nr):
            k = roots[j]
            g = seeds[j]
            if checks_arrival(k):
                g = fit_arriving(k, g, NULL, j)
            accumulate(adj, owned, k, g)
        # (real sgn's record: its gradient is a zero adjoint; -1 while no sgn was recorded)
        sgn_code = GRAD_FN_NAME_CODES.get("SgnBackward0", -1)
        if zero_keeping_known != len(OP_NAMES):
            note_zero_keeping_ops()
        i = top
        while i >= lowest and i >= stop:
            if order is not None:
                deliver_ready_leaves(order.reached(i), adj, owned, need, mode, slot, captured)
            if adj[i] == NULL:
                i -= 1
                continue
            g = <object>adj[i]
            Py_DECREF(g)                # `g` (a local) keeps it alive; the table slot is emptied
            adj[i] = NULL
            if not cnp.PyArray_Check(g) and cnp.PyArray_IsAnyScalar(g):
                g = nd(g)               # (a VJP's numpy arithmetic on 0-d arrays gives scalars)
            own = owned[i]
            if need != NULL and not need[i]:
                i -= 1
                continue
            if g is UNDEFINED_GRAD:
                lowest = pass_undefined(adj, owned, i, need, retain_graph, lowest)
                i -= 1
                continue
            if TAPE.recs[i].flags & RF_INTEGER_OUTPUT:
                refuse_integer_gradient(&TAPE.recs[i])
            zero = type(g) is ZeroAdjoint
            if TAPE.recs[i].extra != NULL:
                # (a hook sees zeros; the zero adjoint goes on unless it returns another)
                shown = materialized(g) if zero else g
                h = run_tensor_hooks(i, shown, HOOKS_ALL if TAPE.recs[i].op == OP_LEAF
                                     else HOOKS_TENSOR)
                if h is not shown:
                    g = h
                    own = 0
                    zero = False
                h = None
                shown = None
            if zero and (TAPE.recs[i].name != 0 or not ZERO_KEEPING[TAPE.recs[i].op]):
                # (what a target, a Function or a formula that is not a product gets; a
                # composite's last record, renamed, is PyTorch's one node: not a product)
                g = materialized(g)
                zero = False
            rec = TAPE.recs[i]
            if rec.op == OP_LEAF:
                accumulate_leaf(i, g, own, mode, slot, captured)
                i -= 1
                continue
            if (rec.flags & RF_RETAIN_GRAD) and rec.out != NULL:
                deliver_grad(<TensorBase>rec.out, g, False, True)
            if slot != NULL and mode == SWEEP_CAPTURE and slot[i] >= 0:
                captured[slot[i]] = g
            if rec.extra != NULL and has_node_prehooks(i):
                # the grad_fn's pre-hooks run last, as PyTorch's: they see the gradient the
                # tensor hooks made, and what they return is not the retained .grad
                shown = materialized(g) if zero else g
                h = run_tensor_hooks(i, shown, HOOKS_NODE_PRE)
                if h is not shown:
                    g = h
                    own = 0
                    zero = False
                h = None
                shown = None
            if rec.op == OP_FN_OUTPUT:
                # Output j of a custom Function: its total joins slot j of the Function record's
                # adjoint (a list with one entry per output).
                k = rec.inp[0]
                if need == NULL or need[k]:
                    route_function_output(adj, k, <Py_ssize_t>rec.scalar, g, i)
                    if k < lowest:
                        lowest = k
                i -= 1
                continue
            if need != NULL:
                # Inputs that lead to no target get no gradient: VJPs skip their work.
                any_needed = False
                for q in range(rec.n_in):
                    k = rec_inputs(&rec)[q]
                    if k < 0:
                        continue
                    if need[k]:
                        any_needed = True
                    elif rec.more == NULL:
                        rec.inp[q] = -1
                if not any_needed:
                    if PROFILING and mode == SWEEP_CAPTURE and slot != NULL and slot[i] >= 0:
                        profile_captured(&rec)
                    i -= 1
                    continue
            # Hold the saved values for the duration of the VJP (a hook or another thread could
            # otherwise release them under us).
            for q in range(MAX_SAVED):
                Py_XINCREF(rec.saved[q])
            Py_XINCREF(rec.aux)
            Py_XINCREF(rec.extra)
            if PROFILING:               # (the node's events: evaluate_function, then the node)
                token = profiler_open(record_name(&rec), None)
            try:
                if rec.flags & RF_RELEASED:
                    raise RuntimeError(BACKWARD_TWICE)
                if rec.flags & RF_PACKED:
                    unpack_saved(&rec)  # (saved_hooks.pxi)
                check_saved_versions(&rec)
                vjp = OP_VJP[rec.op]
                node_hooked = has_node_hooks(&rec)      # (its post-hooks see g and the results)
                if (sole_reference(g) and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>g)
                        and not node_hooked):
                    offer_adjoint(g)    # its VJP may write its result into g (kernels.pxi)
                if (rec.op == OP_MUL and rec.aux == NULL and not ANOMALY_MODE and not node_hooked
                        and not zero):
                    offer_owned_adjoints(adj, owned, &rec, need)
                compiled_seeds = None
                if (rec.op == OP_FUNCTION and rec.aux != NULL and not ANOMALY_MODE
                        and not node_hooked and not zero
                        and isinstance(<object>rec.aux, CompiledBackward)):
                    compiled_seeds = take_compiled_seeds(adj, owned, &rec, need)
                    set_compiled_seeds(compiled_seeds)
                grads = vjp(&rec, g)
                if compiled_seeds is not None:
                    return_unused_seeds(adj, owned, &rec, compiled_seeds, grads)
                    compiled_seeds = None
                if zero or rec.name == sgn_code:
                    grads = zero_adjoints_like(grads, zero and ZERO_KEEPING[rec.op] == 2)
                if node_hooked:
                    grads = run_node_hooks(&rec, grads, g, False)
                if ANOMALY_MODE:
                    anomaly_check_nan(&rec, grads)
            except BaseException as e:
                if ANOMALY_MODE:
                    anomaly_reraise(&rec, e)
                raise
            finally:
                withdraw_adjoint()
                withdraw_accumulators()
                if compiled_seeds is not None:  # (a VJP that raised before taking them)
                    set_compiled_seeds(None)
                    compiled_seeds = None
                for q in range(MAX_SAVED):
                    Py_XDECREF(rec.saved[q])
                Py_XDECREF(rec.aux)
                Py_XDECREF(rec.extra)
                if token is not None:
                    profiler_close(token)
                    token = None
            ins = rec_inputs(&rec)
            if (rec.op == OP_FUNCTION and rec.aux != NULL
                    and not isinstance(<object>rec.aux, CompiledBackward)):
                # (a custom Function's None: PyTorch's undefined gradient, which still runs the
                # Functions upstream; a built-in VJP's None is no gradient at all)
                grads = undefined_for_none(grads, rec.n_in)
            if rec.n_in == 1:
                k = ins[0]
                if k >= 0 and grads is not None:
                    if checks_arrival(k) and grads is not UNDEFINED_GRAD:
                        grads = fit_arriving(k, grads, &rec, 0)
                    accumulate(adj, owned, k, grads)
                    if k < lowest:
                        lowest = k
            else:
                for q in range(rec.n_in):
                    k = ins[q]
                    if k < 0 or (need != NULL and not need[k]):
                        continue
                    gk = (<tuple>grads)[q]
                    if gk is None or gk is ACCUMULATED:     # ACCUMULATED: already in adj[k]
                        continue
                    if checks_arrival(k) and gk is not UNDEFINED_GRAD:
                        gk = fit_arriving(k, gk, &rec, q)
                    accumulate(adj, owned, k, gk)
                    if k < lowest:
                        lowest = k
                gk = None
            grads = None                # the adjoint table holds the results now (sole_reference)
            if order is not None:
                deliver_ready_leaves(order.ran_record(i), adj, owned, need, mode, slot, captured)
            if not retain_graph:
                TAPE.release_saved(i)
                if rec.op == OP_FUNCTION:
                    release_function_ctx(i)
            i -= 1
        if captured is not None:
            for j in range(nt):
                k = targets[j]
                if 0 <= k < n and slot[k] != j:
                    captured[j] = captured[slot[k]]
    finally:
        tapegrad_grad_disabled = prev_disabled
        TAPE.sweeping -= 1
        for i in range(n):
            Py_XDECREF(adj[i])
        free(adj)
        free(owned)
        free(need)
        free(slot)
        for j in range(nr):
            TAPE.decref(<Py_ssize_t>roots[j])
    return captured


cdef int refuse_integer_gradient(Record* r) except -1:
    """PyTorch's engine refuses a gradient for an integer or bool tensor (one an in-place fill
    with a value that requires grad gave a history: int_x.masked_fill_(mask, v)); carried on,
    the fill's backward delivered a gradient to v that PyTorch never computes."""
    raise RuntimeError(f"isDifferentiableType(grad.scalar_type()) INTERNAL ASSERT FAILED: a "
                       f"gradient reached {record_name(r)}, whose output is an integer or bool "
                       f"tensor (autograd does not differentiate integer dtypes)")


# -- the engine: PyTorch's torch.autograd.backward / grad front ends ----------------------------

cdef tuple as_tensor_tuple(object x):
    if isinstance(x, TensorBase):
        return (x,)
    return tuple(x)


cdef list make_grads(tuple outputs, tuple grads):
    """PyTorch's _make_grads: check each given grad_output against its output; create ones for
    scalar outputs given None.  Returns one TensorBase / ndarray / None per (output, grad) pair."""
    cdef list new = []
    cdef Py_ssize_t i
    for i in range(min(len(outputs), len(grads))):
        out = outputs[i]
        grad = grads[i]
        if not isinstance(out, TensorBase):
            raise TypeError(f"outputs must be Tensors, but got {type_name(out)}")
        A = (<TensorBase>out)._array
        if isinstance(grad, TensorBase):
            G = (<TensorBase>grad)._array
            if G.shape != A.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"torch.Size({list(G.shape)}) and output[{i}] has a shape of "
                                   f"torch.Size({list(A.shape)}).")
            if (cnp.PyArray_ISCOMPLEX(<cnp.ndarray>G) != cnp.PyArray_ISCOMPLEX(<cnp.ndarray>A)):
                # (a complex gradient would lose its imaginary part, silently, in the cast to a
                # real output's dtype; a real one for a complex output is refused as well)
                raise RuntimeError(f"For complex Tensors, both grad_output and output are "
                                   f"required to have the same dtype. Mismatch in dtype: "
                                   f"grad_output[{i}] has a dtype of {dtype_of_array(G)} and "
                                   f"output[{i}] has a dtype of {dtype_of_array(A)}.")
            new.append(grad)
        elif grad is None:
            if (<TensorBase>out)._requires_grad:
                if cnp.PyArray_SIZE(<cnp.ndarray>A) != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not cnp.PyArray_ISFLOAT(<cnp.ndarray>A):
                    raise RuntimeError("grad can be implicitly created only for real scalar "
                                       f"outputs but got {dtype_of_array(A)}")
                # the seed of loss.backward(): through the C API (np.ones costs 1.5 us)
                if PROFILING:
                    profiler_close(profiler_open("ones_like", (out,)))
                seed = cnp.PyArray_EMPTY(cnp.PyArray_NDIM(<cnp.ndarray>A),
                                         cnp.PyArray_DIMS(<cnp.ndarray>A),
                                         cnp.PyArray_TYPE(<cnp.ndarray>A), 0)
                cnp.PyArray_FillWithScalar(<cnp.ndarray>seed, 1.0)
                new.append(seed)
            else:
                new.append(None)
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got "
                            f"{type_name(grad)}")
    return new


cdef tuple normalize_inputs(object inputs, str fname):
    if isinstance(inputs, TensorBase):
        return (inputs,)
    if type(inputs) is dict:
        return tuple(inputs.values())
    if isinstance(inputs, dict):
        raise TypeError(f"`inputs` argument to `{fname}()` must be a dict, not "
                        f"{type_name(inputs)}. Other Mapping types are not supported.")
    graph = sys.modules.get("tapegrad.autograd.graph")     # (no edge exists before it loads)
    if graph is None:
        return tuple(inputs)
    if isinstance(inputs, graph.GradientEdge):
        inputs = (inputs,)
    return edges_as_tensors(tuple(inputs), graph.GradientEdge, fname == "backward")


cdef tuple edges_as_tensors(tuple inputs, object edge_type, bint leaves_only):
    """`inputs` with each GradientEdge replaced by the tensor whose gradient flows along it
    (_edge_tensor): the tape differentiates with respect to tensors.  `leaves_only` (backward):
    an edge into a non-leaf is dropped, as PyTorch accumulates its gradient nowhere a program
    sees (that tensor's .grad stays unset)."""
    cdef list out = []
    for x in inputs:
        if isinstance(x, edge_type):
            x = _edge_tensor(x.node, x.output_nr)
            if leaves_only and not is_leaf_c(<TensorBase>x):
                continue
        out.append(x)
    return tuple(out)


# -- one backward pass, and the callbacks that run when it ends ----------------------------------
# Each backward (or grad) call is a pass: code running inside it (a tensor hook) can tell passes
# apart (_backward_pass: the same object throughout one pass) and queue a callback that runs once
# the pass is done (PyTorch's engine queue_callback; register_multi_grad_hook uses both).  Per
# thread: a hook's backward nested in another is a pass of its own.

cdef object PASSES = _thread._local()


class _BackwardPass(list):
    """One backward pass: the callbacks queued to run when it ends (the list itself), and the
    ids of the tensors it started from (root_ids: ids, not the tensors, so that a hook that
    keeps the pass to tell passes apart keeps no tensor, nor its records, alive)."""
    __slots__ = ("root_ids",)


def _backward_pass():
    """The backward pass running on this thread (an object unique to it), or None."""
    stack = getattr(PASSES, "stack", None)
    return stack[len(stack) - 1] if stack else None


def _is_sole_backward_root(tensor):
    """Whether the backward pass running on this thread started from `tensor` alone: PyTorch's
    engine then starts at its node, which it does not count among the nodes it will execute, so
    a multi-grad hook over it does not wait for (or fire on) its gradient."""
    current = _backward_pass()
    return current is not None and current.root_ids == (id(tensor),)


def _queue_backward_callback(callback):
    """Run callback() when the backward pass running on this thread ends."""
    stack = getattr(PASSES, "stack", None)
    if not stack:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    (<list>stack[len(stack) - 1]).append(callback)


cdef object engine_run(tuple outputs, list grads, bint retain_graph, bint create_graph,
                       tuple inputs, bint allow_unused, bint accumulate_grad):
    """PyTorch's engine entry: one backward pass (engine_pass), then its queued callbacks."""
    stack = getattr(PASSES, "stack", None)
    if stack is None:
        stack = PASSES.stack = []
    callbacks = _BackwardPass()
    callbacks.root_ids = tuple([id(t) for t in outputs])   # (alive throughout the pass)
    stack.append(callbacks)
    try:
        result = engine_pass(outputs, grads, retain_graph, create_graph, inputs, allow_unused,
                             accumulate_grad)
        while callbacks:                # (a callback may queue another: it runs in this pass)
            callbacks.pop(0)()
    finally:
        stack.pop()
    return result


cdef object engine_pass(tuple outputs, list grads, bint retain_graph, bint create_graph,
                        tuple inputs, bint allow_unused, bint accumulate_grad):
    """Roots, seeds and targets, then one sweep.  With accumulate_grad, leaves' (or only
    `inputs`') .grad receive the gradients; otherwise the gradients of `inputs` are returned (a
    tuple of tensors / None)."""
    cdef Py_ssize_t i, n = len(outputs)
    cdef TensorBase t
    cdef list roots = [], seeds = [], targets = None
    if TAPE.pending_packs:
        flush_packs()                   # values saved under hooks are packed before any unpack
    if n != len(grads):
        raise RuntimeError(f"got {n} tensors and {len(grads)} gradients")
    for i in range(n):
        t = <TensorBase>outputs[i]
        fresh(t)
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
    if inputs is not None:
        targets = []
        for x in inputs:
            if not isinstance(x, TensorBase):
                raise RuntimeError("all inputs have to be Tensors or GradientEdges, but got "
                                   f"{type_name(x)}")
            t = <TensorBase>x
            fresh(t)
            if accumulate_grad:
                t.retain_grad()         # PyTorch: the inputs' .grad are populated, leaf or not
            elif not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
    if create_graph:
        return GRAPH_ENGINE_RUN(outputs, grads, retain_graph, inputs, allow_unused,
                                accumulate_grad)
    for i in range(n):
        t = <TensorBase>outputs[i]
        g = grads[i]
        if isinstance(g, TensorBase):
            g = (<TensorBase>g)._array
        if g.dtype != t._array.dtype:
            g = g.astype(t._array.dtype)
        roots.append(node_for_input(t))     # a leaf output gets its LEAF record
        seeds.append(g)
    if inputs is not None:
        for x in inputs:
            targets.append((<TensorBase>x)._node)
    mode = SWEEP_ACCUMULATE if inputs is None else (SWEEP_INPUTS if accumulate_grad
                                                    else SWEEP_CAPTURE)
    # One errstate for the whole sweep (not one per node): IEEE results (0 * inf = nan, ...) pass
    # silently, as in PyTorch, instead of numpy warnings.
    with IeeeResults():
        captured = sweep(roots, seeds, retain_graph, mode, targets)
    if accumulate_grad:
        return None
    return captured_results(inputs, captured, allow_unused)


cdef tuple captured_results(tuple inputs, list captured, bint allow_unused):
    cdef list out = []
    cdef Py_ssize_t j
    cdef TensorBase t
    for j in range(len(inputs)):
        g = captured[j]
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {j} appears to not have "
                                   "been used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
            out.append(None)
            continue
        t = <TensorBase>inputs[j]
        A = t._array
        dt = A.dtype if not GRAD_DTYPES_SET else grad_creation_dtype(t)    # (Tensor.grad_dtype)
        g = materialized(g)             # (a non-leaf target reached by a zero adjoint only)
        if isinstance(g, TensorBase):
            out.append(g)
            continue
        if g.shape != A.shape and (not broadcasts_to(g, A) or keeps_recorded_shape(t)):
            if g.dtype != dt:
                g = g.astype(dt)
        elif g.shape != A.shape or g.dtype != dt:
            full = np.empty(A.shape, dtype=dt)
            full[...] = g
            g = full
        out.append(wrap(nd(g)))                 # a VJP on 0-d arrays may give a numpy scalar
    return tuple(out)


def _backward(tensors, grad_tensors=None, retain_graph=None, bint create_graph=False,
              inputs=None):
    """torch.autograd.backward: accumulate into leaves' .grad."""
    backward_impl(tensors, grad_tensors, retain_graph, create_graph, inputs)


# The hidden leaves through which a weight looked up with embedding(sparse=True) receives its
# gradient (tapegrad/_sparse_embedding.py installs it): fn(inputs) -> tuple of leaves.
cdef object SPARSE_LOOKUP_LEAVES = None


def _set_sparse_lookup_leaves(fn):
    """Called once by tapegrad/_sparse_embedding.py."""
    global SPARSE_LOOKUP_LEAVES
    SPARSE_LOOKUP_LEAVES = fn


# How many torch.func transforms (grad, vjp, jvp, jacrev, vmap ...) are running: PyTorch refuses
# backward() inside one (its gradients would not reach the transform's own inputs).
cdef int TRANSFORMS_RUNNING = 0


def _enter_transform(int step):
    """tapegrad/func.py and tapegrad/_vmap.py count their transforms in (+1) and out (-1)."""
    global TRANSFORMS_RUNNING
    TRANSFORMS_RUNNING += step


cdef int backward_impl(object tensors, object grad_tensors, object retain_graph,
                       bint create_graph, object inputs) except -1:
    cdef tuple inputs_tuple = None
    if TRANSFORMS_RUNNING > 0:
        raise RuntimeError("backward() called inside a functorch transform. This is not "
                           "supported, please use functorch.grad or functorch.vjp instead or "
                           "call backward() outside of functorch transforms.")
    if inputs is not None:
        inputs_tuple = normalize_inputs(inputs, "backward")
        if len(inputs_tuple) == 0:
            if isinstance(inputs, (list, tuple)) and len(inputs) > 0:
                return 0                # (only edges into non-leaves: no .grad to fill; tapegrad
                                        # skips that pass, PyTorch runs it, hooks and all)
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        if SPARSE_LOOKUP_LEAVES is not None:
            # backward(inputs=[weight]) of a weight looked up with sparse=True: its gradient
            # arrives through its lookups' hidden leaves, targets too (unreached ones get none)
            inputs_tuple = inputs_tuple + SPARSE_LOOKUP_LEAVES(inputs_tuple)
    cdef tuple outs = as_tensor_tuple(tensors)
    cdef tuple gts = (None,) * len(outs) if grad_tensors is None else as_tensor_tuple(grad_tensors)
    cdef list grads = make_grads(outs, gts)
    cdef bint retain = create_graph if retain_graph is None else bool(retain_graph)
    engine_run(outs, grads, retain, create_graph, inputs_tuple, True, True)
    return 0


def _grad(outputs, inputs, grad_outputs=None, retain_graph=None, bint create_graph=False,
          allow_unused=None, bint materialize_grads=False):
    """torch.autograd.grad: the gradients of `outputs` with respect to `inputs`, as a tuple."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    cdef bint allow = materialize_grads if allow_unused is None else bool(allow_unused)
    cdef tuple outs = as_tensor_tuple(outputs)
    cdef tuple inputs_tuple = normalize_inputs(inputs, "grad")
    if len(inputs_tuple) == 0:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    cdef tuple gos = (None,) * len(outs) if grad_outputs is None else as_tensor_tuple(grad_outputs)
    cdef list grads = make_grads(outs, gos)
    cdef bint retain = create_graph if retain_graph is None else bool(retain_graph)
    result = engine_run(outs, grads, retain, create_graph, inputs_tuple, allow, False)
    if materialize_grads:
        result = tuple(r if r is not None else zeros_grad_like(<TensorBase>x, create_graph)
                       for r, x in zip(result, inputs_tuple))
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), result))
    return result


cdef object zeros_grad_like(TensorBase x, bint requires_grad):
    cdef TensorBase z = wrap(np.zeros(x._array.shape, dtype=x._array.dtype))
    if requires_grad:
        z._set_requires_grad(True)
    return z
