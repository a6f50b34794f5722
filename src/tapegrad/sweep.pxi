# ---------------------------------------------------------------------------------------------
# The reverse sweep.
#
# One downward walk of the arena from the root's record.  Adjoints live in a C array indexed by
# record (owned references to ndarrays).  A record with no pending adjoint is skipped; the walk
# stops below the lowest record that received one.  No recursion, no per-node Python call for
# built-in ops: each step is a call through the op table's C function pointer.
#
# Accumulation follows HIPS autograd: the first contribution to an adjoint is kept by reference;
# the second creates a fresh sum, which the sweep then owns and may add later contributions into in
# place.  Leaves (LEAF records) and retain_grad() tensors receive their total in .grad: a copy of
# it the first time (created on first backward, as PyTorch does), an in-place add afterwards.
# ---------------------------------------------------------------------------------------------

from libc.stdlib cimport calloc
from cpython.ref cimport Py_DECREF, Py_XINCREF

cdef str BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.")


cdef int check_saved_versions(Record* r) except -1:
    """Refuse to run a VJP whose saved values were overwritten in place since the forward."""
    cdef int j
    cdef Version v
    for j in range(MAX_SAVED):
        if r.ver[j] == NULL:
            continue
        v = <Version>r.ver[j]
        if v.value != r.ver_at[j]:
            saved = <object>r.saved[j] if r.saved[j] != NULL else None
            what = (f"[torch.{type(saved).__name__ if saved is None else dtype_of_array(saved).name}"
                    f" {list(saved.shape) if saved is not None else ''}]")
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: {what}, which is saved by {OP_NAMES[r.op]}, is at version "
                f"{v.value}; expected version {r.ver_at[j]} instead. Hint: the value was "
                f"overwritten by an in-place operation (add_, mul_, x[i] = v, ...) after it was "
                f"used; use the out-of-place form (x = x + y) or .clone() it first.")
    return 0


cdef int deliver_grad(TensorBase t, object g, bint owned) except -1:
    """Add adjoint `g` into t.grad: adopt it (or a copy) the first time, add in place afterwards."""
    cdef TensorBase grad
    A = t._array
    if g.shape != A.shape:
        full = np.empty(A.shape, dtype=A.dtype)
        full[...] = g
        g = full
        owned = True
    if t._grad is None:
        if owned and g.dtype == A.dtype and g.flags.c_contiguous and g.flags.writeable:
            t._grad = wrap(g)
        else:
            t._grad = wrap(np.array(g, dtype=A.dtype, order="C", copy=True))
    else:
        grad = <TensorBase>t._grad
        np.add(grad._array, g, out=grad._array, casting="unsafe")
    return 0


cdef inline int accumulate(PyObject** adj, char* owned, Py_ssize_t k, object gk) except -1:
    cdef object prev
    if adj[k] == NULL:
        Py_INCREF(gk)
        adj[k] = <PyObject*>gk
        owned[k] = 0
        return 0
    prev = <object>adj[k]
    if owned[k] and prev.shape == gk.shape and prev.flags.writeable:
        np.add(prev, gk, out=prev, casting="unsafe")
        return 0
    summed = nd(prev + gk)
    Py_INCREF(summed)
    Py_DECREF(prev)     # `prev` (a local) still holds a reference until the function returns
    adj[k] = <PyObject*>summed
    owned[k] = 1
    return 0


cdef int sweep(Py_ssize_t root, object g0, bint retain_graph) except -1:
    """Propagate adjoint `g0` of record `root` down the tape into leaf and retained grads."""
    cdef Py_ssize_t n = root + 1, i, k, lowest = root
    cdef PyObject** adj = <PyObject**>calloc(n, sizeof(PyObject*))
    cdef char* owned = <char*>calloc(n, 1)
    cdef Record rec                     # private copy: the arena may move while a VJP runs
    cdef Py_ssize_t* ins
    cdef int j
    cdef vjp_fn vjp
    if adj == NULL or owned == NULL:
        free(adj)
        free(owned)
        raise MemoryError("tapegrad: cannot allocate the adjoint table for backward")
    TAPE.sweeping += 1
    try:
        Py_INCREF(g0)
        adj[root] = <PyObject*>g0
        i = root
        while i >= lowest:
            if adj[i] == NULL:
                i -= 1
                continue
            g = <object>adj[i]
            Py_DECREF(g)                # `g` (a local) keeps it alive; the table slot is emptied
            adj[i] = NULL
            rec = TAPE.recs[i]
            if rec.op == OP_LEAF:
                if rec.out != NULL and (<TensorBase>rec.out)._requires_grad:
                    deliver_grad(<TensorBase>rec.out, g, owned[i])
                i -= 1
                continue
            if (rec.flags & RF_RETAIN_GRAD) and rec.out != NULL:
                deliver_grad(<TensorBase>rec.out, g, False)
            if rec.flags & RF_RELEASED:
                raise RuntimeError(BACKWARD_TWICE)
            check_saved_versions(&rec)
            # Hold the saved values for the duration of the VJP (a hook or another thread could
            # otherwise release them under us).
            for j in range(MAX_SAVED):
                Py_XINCREF(rec.saved[j])
            Py_XINCREF(rec.aux)
            try:
                vjp = OP_VJP[rec.op]
                grads = vjp(&rec, g)
            finally:
                for j in range(MAX_SAVED):
                    Py_XDECREF(rec.saved[j])
                Py_XDECREF(rec.aux)
            ins = rec_inputs(&rec)
            if rec.n_in == 1:
                k = ins[0]
                if k >= 0 and grads is not None:
                    accumulate(adj, owned, k, grads)
                    if k < lowest:
                        lowest = k
            else:
                for j in range(rec.n_in):
                    k = ins[j]
                    if k < 0:
                        continue
                    gk = (<tuple>grads)[j]
                    if gk is None:
                        continue
                    accumulate(adj, owned, k, gk)
                    if k < lowest:
                        lowest = k
            if not retain_graph:
                TAPE.release_saved(i)
            i -= 1
    finally:
        TAPE.sweeping -= 1
        for i in range(n):
            Py_XDECREF(adj[i])
        free(adj)
        free(owned)
    return 0


cdef int run_backward(TensorBase root, object gradient, bint retain_graph) except -1:
    """Tensor.backward(): validate the seed gradient, then sweep (or deliver straight to a leaf)."""
    A = root._array
    if not root._requires_grad:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    if gradient is None:
        if A.size != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        g0 = np.ones(A.shape, dtype=A.dtype)
    else:
        if isinstance(gradient, TensorBase):
            g0 = (<TensorBase>gradient)._array
        else:
            raise TypeError(f"gradient must be a Tensor or None, got {type(gradient).__name__}")
        if g0.shape != A.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of "
                               f"torch.Size({list(g0.shape)}) and output[0] has a shape of "
                               f"torch.Size({list(A.shape)}).")
        if g0.dtype != A.dtype:
            g0 = g0.astype(A.dtype)
    if is_leaf_c(root):
        deliver_grad(root, g0, False)
        return 0
    # One errstate for the whole sweep (not one per node): IEEE results (0 * inf = nan, ...) pass
    # silently, as in PyTorch, instead of numpy warnings.
    with np.errstate(all="ignore"):
        return sweep(root._node, g0, retain_graph)
