# ---------------------------------------------------------------------------------------------
# Recording: the one place forward ops touch the tape.
#
# An op computes its forward value first (which may raise), wraps it, and only then appends its
# record, so a failing op never leaves a half-written record behind.  Between `record_op` and the
# op's `keep(...)` calls nothing runs Python code, so the returned Record* stays valid.
#
# begin_record, keep and needs_grad are defined in _core.pxd (inlined in every module).
# ---------------------------------------------------------------------------------------------


cdef inline bint wants_record(Py_ssize_t* inp, int n_in) noexcept:
    cdef int j
    for j in range(n_in):
        if inp[j] >= 0:
            return not inference_only(inp, n_in)
    return False


cdef bint inference_only(Py_ssize_t* inp, int n_in) noexcept:
    """Whether every operand of an op (inp: their records) is an inference tensor used outside
    inference mode: a leaf made to require grad inside torch.inference_mode().  PyTorch's
    inference tensors carry no autograd dispatch key, so an op whose operands are all such
    tensors never reaches autograd: nothing is recorded and the result does not require grad
    (x.sum(), x.exp(), x[0], x + x).  An op with any other operand records (and then refuses to
    save an inference tensor for backward, check_saveable).  An operand without a record (-1)
    may be a normal tensor that needs no gradient, or a Python number, which PyTorch's binary
    operators wrap as a normal tensor (x + 1 records AddBackward0): it counts as normal."""
    cdef int j
    cdef Record* rec
    if n_in <= 0 or inference_mode_on():
        return False
    for j in range(n_in):
        if inp[j] < 0:
            return False
        rec = &TAPE.recs[inp[j]]
        if rec.op != OP_LEAF or rec.out == NULL or \
                (<TensorBase>rec.out)._inference != INFERENCE_TENSOR:
            return False
    return True


cdef inline int drop_no_grad_view_edges(int n_in, Py_ssize_t* inp) noexcept:
    """An input that is a view taken under no_grad of a tensor requiring grad has no gradient
    edge in PyTorch (no accumulator; next_functions shows None): the record gets none either, so
    its VJP neither computes that gradient nor saves the other operands it would need for it
    (fuzz seed 51019236: F.linear(no_grad_view, W, b) saved W, and W.add_() then made backward
    raise where PyTorch runs).  Returns the RF_NO_GRAD_VIEW_INPUT bits of the dropped inputs:
    the input still requires grad, so a create_graph gradient computed from it must too."""
    cdef int j, dropped = 0
    cdef Py_ssize_t k
    cdef PyObject* out
    for j in range(n_in):
        k = inp[j]
        if k >= 0 and TAPE.recs[k].op == OP_LEAF:
            out = TAPE.recs[k].out
            if out != NULL and no_grad_view_drops_grad(<TensorBase>out):
                inp[j] = -1
                if j < MAX_IN:
                    dropped |= RF_NO_GRAD_VIEW_INPUT << j
    return dropped


cdef int check_complex_record(int op, TensorBase result, int n_in, Py_ssize_t* inp) except -1:
    """Refuse to record a compiled op on complex values whose VJP is not right for them (see
    complex_hook.pxi): a gradient computed as if the values were real would be silently wrong."""
    cdef int j
    cdef bint complex_values = dtype_kind(<cnp.ndarray>result._array) == c'c'
    cdef PyObject* o
    for j in range(n_in):
        if complex_values:
            break
        if inp[j] >= 0:
            o = TAPE.recs[inp[j]].out
            complex_values = (o != NULL and
                              dtype_kind(<cnp.ndarray>(<TensorBase>o)._array) == c'c')
    if complex_values and not COMPLEX_SAFE[op]:
        raise NotImplementedError(
            f"tapegrad: the gradient of {OP_NAMES[op]} is not implemented for complex tensors "
            f"(its compiled VJP is real-valued); see docs/differences.md")
    return 0


cdef Record* record_op(int op, TensorBase result, int n_in, Py_ssize_t* inp) except NULL:
    """Append the record of `result` (which then requires grad and is no longer a leaf)."""
    if COMPLEX_IN_USE:
        check_complex_record(op, result, n_in, inp)
    cdef int dropped = drop_no_grad_view_edges(n_in, inp)
    cdef Py_ssize_t i = TAPE.append(op, n_in, inp)
    if ANOMALY_MODE:                    # anomaly mode: remember where the forward ran (taken in C)
        attach_anomaly_trace(i, anomaly_trace())
    cdef Record* r = &TAPE.recs[i]
    r.flags |= dropped
    if not (cnp.PyArray_ISFLOAT(<cnp.ndarray>result._array)
            or cnp.PyArray_ISCOMPLEX(<cnp.ndarray>result._array)):
        r.flags |= RF_INTEGER_OUTPUT
    r.out = <PyObject*>result
    result._node = i
    result._requires_grad = True
    if SAVED_HOOKS_DEPTH:               # saved-tensor hooks: packed after the op (saved_hooks.pxi)
        note_pack(i)
        r = &TAPE.recs[i]
    return r


cdef int save_value(Record* r, int j, object value, object owner) except -1:
    """Save `value`, an array the VJP reads, derived from `owner` (an operand: a tensor, or a
    Python number), version-checked when a write into owner could change what backward reads:
      - value lives in owner's storage (the array itself or a numpy view of it);
      - value is a copy (promoted to the result dtype, made contiguous) of an owner that requires
        grad: a create_graph backward computes with the live operand (graph_vjp.pxi's in_value),
        not with the copy, so without the check a write between forward and a double backward
        gave a silently wrong second derivative (mul of a float32 and a float64 tensor; the same
        flaw as layer_norm's, fuzz seed 54101800).  PyTorch raises there too.
    A copy of an owner without grad is read as a constant by both backwards: no write reaches
    it (PyTorch, which sometimes saves such a copy too, computes from it: matmul's folds)."""
    cdef PyObject* b
    cdef PyObject* ob
    if isinstance(owner, TensorBase):
        if (<TensorBase>owner)._inference:
            check_saveable(<TensorBase>owner)     # even a copy of it: PyTorch saves the tensor
        if (<TensorBase>owner)._requires_grad:
            return keep_saved(r, j, value, <TensorBase>owner)
        if cnp.PyArray_Check(value):
            arr = (<TensorBase>owner)._array
            b = cnp.PyArray_BASE(<cnp.ndarray>value)
            ob = cnp.PyArray_BASE(<cnp.ndarray>arr)
            if value is arr or (b != NULL and (b == <PyObject*>arr or (ob != NULL and b == ob))):
                # an input with no history: the in-place error names no node for it, as
                # PyTorch's (saved_value_node_name)
                r.flags |= RF_SAVED_NO_HISTORY << j
                return keep_saved(r, j, value, <TensorBase>owner)
    keep(&r.saved[j], value)
    return 0


# -- index tensors saved for backward --------------------------------------------------------
# An op that reads an index, mask or target tensor (x[idx], x[idx] = v, gather, scatter,
# embedding, nll_loss's target, ...) saves it for its backward as PyTorch does: the tensor's own
# array, in a saved slot, under the tensor's version, so a write into it before backward raises
# PyTorch's error.  Before, the VJPs read a copy (no error where PyTorch raises) or the live array
# (x[:, idx] = v kept it in its aux: the gradient went through the new indices, silently wrong;
# fuzz seed 65605814).  No copy is made.  An index the op made itself (a mask's nonzero(), a
# Python list's array) needs no check: nothing else can write it.

@cython.auto_pickle(False)   # (unpicklable: see Tape's note)
cdef class SavedIndex:
    """A part of an op's saved index key that is the array in saved slot `slot`: the VJP reads
    it from the slot (resolve_index_key), so it sees what a saved-tensor hook unpacked."""
    def __cinit__(self, int slot):
        self.slot = slot

    def __repr__(self):
        return f"SavedIndex({self.slot})"


cdef int save_index(Record* r, int j, TensorBase owner) except -1:
    """Save owner's array (an index, mask or target: no gradient, no history) in slot j,
    version-checked.  The in-place error names no node for it, as PyTorch's."""
    r.flags |= RF_SAVED_NO_HISTORY << j
    return keep_saved(r, j, owner._array, owner)


cdef dict save_indices(Record* r, object owners, int first=0):
    """save_index for each distinct tensor of `owners` (other entries, None, are skipped) in the
    free slots of r from `first` on (no value, and no version guard_version put there).
    Returns id(its array) -> its slot, or -1 for a tensor no slot was left for."""
    cdef int j
    cdef dict slot_of = {}
    for o in owners:
        if not isinstance(o, TensorBase) or id((<TensorBase>o)._array) in slot_of:
            continue
        slot_of[id((<TensorBase>o)._array)] = -1
        for j in range(first, MAX_SAVED):
            if r.saved[j] == NULL and r.ver[j] == NULL:
                save_index(r, j, <TensorBase>o)
                slot_of[id((<TensorBase>o)._array)] = j
                break
    return slot_of


cdef object saved_index_key(Record* r, object key, object owners, int first=0):
    """`key` (a numpy index: a tuple of parts, or one part) as r keeps it for its VJP: the
    index tensors it was made from (`owners`) are saved in r (save_indices), and a part that is
    one's array becomes SavedIndex(its slot).  When no slot is left, such a part is copied
    instead (a write into the tensor then goes unnoticed, but cannot move the gradient)."""
    cdef dict slot_of = save_indices(r, owners, first)
    cdef int j
    parts = key if type(key) is tuple else (key,)
    out = []
    for part in parts:
        j = slot_of.get(id(part), -2) if cnp.PyArray_Check(part) else -2
        out.append(part if j == -2 else SavedIndex(j) if j >= 0 else np.array(part, copy=True))
    return tuple(out) if type(key) is tuple else out[0]


cdef object resolve_index_key(Record* r, object key):
    """The numpy key saved_index_key made, with each SavedIndex replaced by its slot's array."""
    if type(key) is SavedIndex:
        return saved_index_part(r, <SavedIndex>key)
    if type(key) is not tuple:
        return key
    cdef bint any_saved = False
    for part in <tuple>key:
        if type(part) is SavedIndex:
            any_saved = True
            break
    if not any_saved:
        return key
    return tuple([saved_index_part(r, <SavedIndex>part) if type(part) is SavedIndex else part
                  for part in <tuple>key])


cdef object saved_index_part(Record* r, SavedIndex part):
    if r.saved[part.slot] == NULL:
        raise RuntimeError(BACKWARD_TWICE)
    return <object>r.saved[part.slot]


cdef Record* record_from(int op, TensorBase result, tuple inputs) except? NULL:
    """Record `result = op(*inputs)` when grad mode is on and some tensor input requires grad.

    Non-tensor entries of `inputs` get no gradient.  Returns NULL when nothing was recorded, else
    the record, whose saved values and aux the caller then fills with keep().  The VJP returns one
    gradient per entry of `inputs` (a tuple; a bare array when there is one input)."""
    if not grad_enabled():
        return NULL
    cdef Py_ssize_t n = len(inputs), j
    cdef Py_ssize_t small[8]
    cdef Py_ssize_t* inp = &small[0]
    if n > 8:
        inp = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
        if inp == NULL:
            raise MemoryError()
    try:
        begin_record(n)
        for j in range(n):
            x = inputs[j]
            inp[j] = node_for_input(<TensorBase>x) if isinstance(x, TensorBase) else -1
        if not wants_record(inp, <int>n):
            return NULL
        return record_op(op, result, <int>n, inp)
    finally:
        if inp != &small[0]:
            free(inp)
