# ---------------------------------------------------------------------------------------------
# Recording: the one place forward ops touch the tape.
#
# An op computes its forward value first (which may raise), wraps it, and only then appends its
# record, so a failing op never leaves a half-written record behind.  Between `record_op` and the
# op's `keep(...)` calls nothing runs Python code, so the returned Record* stays valid.
# ---------------------------------------------------------------------------------------------


cdef inline int begin_record(Py_ssize_t n_in) except -1:
    """Called before an op reads its inputs' record indices: room for the record and for one
    LEAF record per input, so no index moves until the op has appended."""
    return TAPE.reserve(n_in + 1)


cdef inline bint wants_record(Py_ssize_t* inp, int n_in) noexcept:
    cdef int j
    for j in range(n_in):
        if inp[j] >= 0:
            return True
    return False


cdef Record* record_op(int op, TensorBase result, int n_in, Py_ssize_t* inp) except NULL:
    """Append the record of `result` (which then requires grad and is no longer a leaf)."""
    cdef Py_ssize_t i = TAPE.append(op, n_in, inp)
    cdef Record* r = &TAPE.recs[i]
    r.out = <PyObject*>result
    result._node = i
    result._requires_grad = True
    return r


cdef inline void keep(PyObject** slot, object value) noexcept:
    """Store an owned reference to `value` in a record slot (saved value or aux)."""
    Py_INCREF(value)
    slot[0] = <PyObject*>value
