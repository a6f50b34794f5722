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
            return True
    return False


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
