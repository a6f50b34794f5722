# ---------------------------------------------------------------------------------------------
# In-place ops: +=, -=, *=, /=, add_ sub_ mul_ div_ zero_ fill_ copy_, and x[key] = value.
#
# Every in-place write bumps the storage's version counter, so a record that saved the old value
# raises PyTorch's "modified by an inplace operation" error instead of computing a wrong gradient.
# On a leaf that requires grad they raise outside no_grad (and work inside it: the SGD idiom).  On
# a non-leaf, the write is recorded: the op is recorded out of place on a copy of the old value,
# the result is written into the tensor's storage, and the tensor is rebound to the new record.
# An in-place write through a view whose base does not require grad, of a value that does (the
# `dC[i] += v` idiom), is recorded on the base as PyTorch's CopySlices: the base takes the new
# history and the view is rebased onto it.  A write through a view of a tensor that
# requires grad goes to the base the same way when the view reads the base's current history;
# other writes through views of a tensor that requires grad are refused.
#
# The version counters and the rebasing of stale views that every family's in-place writes share
# (bump_version, check_inplace, refresh_view) are the core's views.pxi.
# ---------------------------------------------------------------------------------------------


cdef str OVERLAPPING_WRITE = overlapping_write_message()     # (and overlaps_itself: _ops_shape.pxd)


# PyTorch refuses an in-place write whose source partly shares memory with the destination
# (`v[1:] += v[:-1]`, `v[0:1].mul_(v)`, `v.mul_(v.t())`): the result would depend on the order
# the elements are written in.  Like PyTorch it compares only what it can decide cheaply: two
# layouts that each cover their memory densely (non-overlapping and dense); the same memory with
# the same strides is the element-wise case (`v.mul_(v)`), allowed except for index_put_.

cdef str SOURCE_OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer to "
    "a single memory location. Please clone() the tensor before performing the operation.")


cdef inline void byte_extent(cnp.ndarray A, Py_ssize_t* lo, Py_ssize_t* hi) noexcept:
    """The first and one-past-last byte address A's elements touch (A non-empty)."""
    cdef Py_ssize_t k, span
    lo[0] = <Py_ssize_t>cnp.PyArray_DATA(A)
    hi[0] = lo[0] + cnp.PyArray_ITEMSIZE(A)
    for k in range(cnp.PyArray_NDIM(A)):
        span = (cnp.PyArray_DIMS(A)[k] - 1) * cnp.PyArray_STRIDES(A)[k]
        if span < 0:
            lo[0] += span
        else:
            hi[0] += span


# (dense_layout, PyTorch's is_non_overlapping_and_dense, is in _core.pxd: the sweep's gradient
# layout contract reads it too)


cdef bint same_strides(object D, object S) except -1:
    """Whether arrays D and S have PyTorch's equal strides.  PyTorch compares every dim's, size-1
    dims too (v[::2] of a (1, 2) v is a partial overlap of v); but numpy's broadcast_to, behind
    expand(), gives a size-1 dim stride 0 where PyTorch's expand keeps the dim's own, so a 0
    there matches any stride (x.view(1, 1, 1).expand(-1, -1, -1) is x's layout; 62656185)."""
    if D.ndim != S.ndim:
        return False
    return all(sd == ss or (nd == 1 and ns == 1 and (sd == 0 or ss == 0))
               for sd, ss, nd, ns in zip(D.strides, S.strides, D.shape, S.shape))


cdef int check_source_overlap(object D, object S, bint same_too) except -1:
    """Raise PyTorch's error when array S (an in-place op's source) partly overlaps array D (the
    memory written); `same_too`: also when S is D's memory with D's layout (index_put_)."""
    if not (cnp.PyArray_Check(D) and cnp.PyArray_Check(S)):
        return 0
    cdef cnp.ndarray d = <cnp.ndarray>D, s = <cnp.ndarray>S
    cdef Py_ssize_t dlo, dhi, slo, shi
    if cnp.PyArray_SIZE(d) == 0 or cnp.PyArray_SIZE(s) == 0:
        return 0
    byte_extent(d, &dlo, &dhi)
    byte_extent(s, &slo, &shi)
    if dlo >= shi or slo >= dhi:
        return 0                            # (the common case: separate memory)
    cdef bint same_start = cnp.PyArray_DATA(d) == cnp.PyArray_DATA(s)
    if same_start and D.shape == S.shape and same_strides(D, S):
        if same_too:
            raise RuntimeError(SOURCE_OVERLAP)
        return 0
    if not (dense_layout(d) and dense_layout(s)):
        return 0                            # (PyTorch too leaves these unchecked)
    if same_start and dhi == shi and same_strides(D, S) and not same_too:
        return 0
    raise RuntimeError(SOURCE_OVERLAP)


cdef object ordered_overlap_values(object D, object S):
    """The values D holds after D[...] = S in PyTorch, when S partly overlaps D's memory where
    check_source_overlap lets it through (a layout that is not dense: PyTorch finds the overlap
    too hard to check and copies anyway); None when that does not apply (no overlap, a dtype
    cast, a dense pair).  PyTorch's copy then reads each source element just before writing its
    destination, walking the destination's dims from the largest stride to the smallest, so a
    shifted copy of a slice into itself smears values along the shift (x[:, 1:, :, :c] =
    x[:, :-1, :, :c], the spatial shift of S2-MLP); numpy buffers the source, a silently
    different result.  Computed on a scratch copy of the bytes D and S span, so a recorded write
    can go the usual way first and take these values after.
    (Not emulated: PyTorch's vectorised inner loop reads a contiguous row in chunks whose width
    depends on the CPU, so a shift by less than a chunk within one row has no fixed answer.)"""
    if not (cnp.PyArray_Check(D) and cnp.PyArray_Check(S)):
        return None
    cdef cnp.ndarray d = <cnp.ndarray>D, s = <cnp.ndarray>S
    cdef Py_ssize_t dlo, dhi, slo, shi
    if cnp.PyArray_SIZE(d) < 2 or cnp.PyArray_SIZE(s) == 0:
        return None
    # (the memory test first, in C: every x[key] = v asks, and most sources lie elsewhere)
    byte_extent(d, &dlo, &dhi)
    byte_extent(s, &slo, &shi)
    if dlo >= shi or slo >= dhi or (dense_layout(d) and dense_layout(s)) or D.dtype != S.dtype:
        return None
    if cnp.PyArray_DATA(d) == cnp.PyArray_DATA(s) and D.shape == S.shape and same_strides(D, S):
        return None                         # (the same elements: a no-op either way)
    Sb = S if S.shape == D.shape else np.broadcast_to(S, D.shape)
    # TensorIterator's order: the destination's smallest stride innermost (stable on ties)
    order = sorted(range(D.ndim), key=lambda k: -abs(D.strides[k]))
    Dp = D.transpose(order)
    Sp = Sb.transpose(order)
    cdef Py_ssize_t lo = min(dlo, slo), span = max(dhi, shi) - lo
    cdef cnp.ndarray doff = element_offsets(Dp) + (<Py_ssize_t>cnp.PyArray_DATA(d) - lo)
    cdef cnp.ndarray soff = element_offsets(Sp) + (<Py_ssize_t>cnp.PyArray_DATA(s) - lo)
    cdef cnp.ndarray scratch = np.empty(span, dtype=np.uint8)
    cdef cnp.ndarray out = np.empty(Dp.shape, dtype=D.dtype)
    cdef const Py_ssize_t* do = <const Py_ssize_t*>cnp.PyArray_DATA(doff)
    cdef const Py_ssize_t* so = <const Py_ssize_t*>cnp.PyArray_DATA(soff)
    cdef char* buf = <char*>cnp.PyArray_DATA(scratch)
    cdef char* o = <char*>cnp.PyArray_DATA(out)
    cdef Py_ssize_t i, n = cnp.PyArray_SIZE(doff), item = D.dtype.itemsize
    with nogil:
        memcpy(buf, <const char*>lo, span)
        for i in range(n):
            memcpy(buf + do[i], buf + so[i], item)
        for i in range(n):
            memcpy(o + i * item, buf + do[i], item)
    return out.transpose(np.argsort(order))


cdef bint ordered_overlap_copy(object D, object S) except -1:
    """D[...] = S as PyTorch writes a partly overlapping source (ordered_overlap_values); False
    (nothing written) where that does not apply."""
    values = ordered_overlap_values(D, S)
    if values is None:
        return False
    writable(D)[...] = values
    return True


cdef object element_offsets(object A):
    """The byte offset from A's data pointer of each element of A, in C order (intp array)."""
    off = np.zeros((), dtype=np.intp)
    for n, st in zip(A.shape, A.strides):
        off = off[..., None] + np.arange(n, dtype=np.intp) * st
    return np.ascontiguousarray(off.reshape(-1))


cdef bint same_data(object D, object S) except -1:
    """Whether arrays D and S are the same elements: one start, shape, strides and dtype."""
    if not (cnp.PyArray_Check(D) and cnp.PyArray_Check(S)):
        return False
    return (cnp.PyArray_DATA(<cnp.ndarray>D) == cnp.PyArray_DATA(<cnp.ndarray>S)
            and D.shape == S.shape and same_strides(D, S) and D.dtype == S.dtype)


cdef object writable(object A, bint overlapping=False):
    """A, made writable for an in-place write.  numpy marks every broadcast view read-only;
    PyTorch refuses a write only where two elements share one memory location, and writes an
    expand() that stretches nothing (or a part of one that has no such pair) like any view.
    `overlapping`: such a write is allowed (index_put_), through a writable alias of A (A stays
    read-only, so later in-place ops on it are still refused)."""
    if A.flags.writeable:
        return A
    cdef bint overlap = overlaps_itself(A)
    if overlap and not overlapping:
        raise RuntimeError(OVERLAPPING_WRITE)
    W = A.view() if overlap else A
    try:
        W.flags.writeable = True        # a view of writable memory: numpy allows it
    except ValueError:
        raise RuntimeError("cannot write into a read-only tensor (its memory is a read-only "
                           "numpy array); clone() it first") from None
    return W


cdef int check_result(TensorBase t, object value) except -1:
    """PyTorch's checks before an in-place op stores `value` into t: t's shape, castable dtype."""
    A = t._array
    if value.shape != A.shape:
        raise RuntimeError(f"output with shape {list(A.shape)} doesn't match the broadcast shape "
                           f"{list(value.shape)}")
    if not torch_castable(value.dtype, A.dtype):
        raise RuntimeError(f"result type {scalar_type_name(value.dtype)} can't be cast to the "
                           f"desired output type {scalar_type_name(A.dtype)}")
    writable(A)
    return 0


cdef int write_result(TensorBase t, object value) except -1:
    """Store `value` into t's storage (same shape; castable to t's dtype, as PyTorch requires)."""
    check_result(t, value)              # (t's array is writable after it)
    if value.dtype == t._array.dtype:
        np.copyto(t._array, value, casting="unsafe")
    else:
        with IeeeResults():             # (a cast to inf or from NaN: PyTorch's is silent)
            np.copyto(t._array, value, casting="unsafe")
    return 0


cdef int adopt_record(TensorBase t, TensorBase result) except -1:
    """Make t the output of result's record (the in-place op's), dropping result's claim."""
    cdef Py_ssize_t new = result._node, old = t._node
    if new < 0:
        return 0
    result._node = -1
    result._requires_grad = False
    TAPE.recs[new].out = <PyObject*>t
    t._node = new
    t._requires_grad = True
    history_rewritten(t)
    if old >= 0:
        # retain_grad() belongs to the tensor, not to one version of it: the new version's
        # gradient is the one .grad reports (as PyTorch moves its retains_grad hook).
        TAPE.recs[new].flags |= TAPE.recs[old].flags & RF_RETAIN_GRAD
        if TAPE.recs[old].op == OP_LEAF:
            TAPE.recs[old].flags |= RF_MOVED       # (a gradient reaching it raises: sweep.pxi)
        TAPE.recs[old].out = NULL
        TAPE.decref(old)            # the new record still holds its own reference to `old`
    return 0


cdef bint rebase_pending(TensorBase t, bint writes) except -1:
    """Whether view_reads_base(t, writes) rebases t (see there)."""
    if t._base is None or t._node < 0 or (t._gen & 1) or t._view_kind != VIEW_DEFAULT:
        return False                # (a view taken in no_grad or an output of split, chunk,
                                    # unbind, or a view of either: check_inplace refuses it)
    cdef TensorBase b = <TensorBase>t._base
    if not b._requires_grad or b._node < 0 or is_leaf_c(b):
        return False
    cdef Record* r = &TAPE.recs[t._node]
    return not (r.n_in >= 1 and rec_inputs(r)[0] == b._node and not (writes and carries_hooks(r)))


cdef int view_reads_base(TensorBase t, bint writes=True, bint shared_ok=False) except -1:
    """Before a recorded write through view t of a tensor that requires grad: make t's history
    read the base's directly (a view of a view becomes one AsStridedBackward0 of the base, as in
    PyTorch), so the write can go to the base (writes_through_view).
    PyTorch records the write as CopySlices on the base, which sends the gradient of t's old
    value straight into the base's history: t's own grad_fn leaves the graph, and the hooks on
    it (tensor hooks registered before the write, grad_fn pre- and post-hooks) never see that
    gradient.  So a t whose record carries hooks is rebased too, onto a fresh hookless record
    (fuzz seed 67300341, silent: a hook returning a new gradient changed the base's); ops that
    read t before the write still reach the old record and its hooks, as PyTorch's still reach
    the old grad_fn.  A record without hooks that reads the base gives the same gradient, so
    no record is added for it.  `writes` False: an in-place view op (unsqueeze_, t_), which
    PyTorch records on t's own history, old grad_fn and hooks included."""
    if not rebase_pending(t, writes):
        return 0
    if writes and not shared_ok and overlaps_itself(t._array):
        # PyTorch refuses a write into a tensor two of whose elements share memory (an
        # expand()) before it records anything: refused after the rebase, t was left on a new
        # history, so the gradients of its earlier uses never reached its retained .grad, nor
        # its hooks (fuzz seed 67305212, silent).  `shared_ok`: the caller's write may be one
        # PyTorch allows there (fill_, index_put_), and the caller refuses the others first.
        raise RuntimeError(OVERLAPPING_WRITE)
    return rebase_view(t, view_key(t))


# -- what an in-place op through a view reads -----------------------------------------------------
#
# PyTorch records `view.op_(...)` on the base as CopySlices: the gradient of the op's input (the
# view's old value) goes straight into the base's gradient, ASSIGNED at the view's positions.
# tapegrad computes the op on a copy of the view, so that gradient flows back through the view's
# own history, which ADDS the gradients of positions that share a base element.  The two agree
# unless the view overlaps itself (unfold with step < size, as_strided): there the addition
# counted each shared element once per position (fuzz seed 63005906, silent).  The copy then
# reads the view at each base element's last position only (the assignment's survivor, in C
# order) and is detached at the others.

cdef bint may_overlap_itself(cnp.ndarray A) noexcept:
    """False when A's elements provably occupy distinct memory (each stride, in increasing
    order, steps past everything the smaller ones reach); True when they might share it.  In C:
    it runs on every recorded in-place op through a view that requires grad."""
    cdef Py_ssize_t stride[64]          # NPY_MAXDIMS (numpy 2)
    cdef Py_ssize_t extent[64]
    cdef Py_ssize_t s, n, reach = cnp.PyArray_ITEMSIZE(A)
    cdef int nd = cnp.PyArray_NDIM(A), i, j, m = 0
    for i in range(nd):                             # insertion sort of the dims longer than 1
        n = cnp.PyArray_DIMS(A)[i]
        if n < 2:
            continue
        s = cnp.PyArray_STRIDES(A)[i]
        s = -s if s < 0 else s
        j = m
        while j > 0 and stride[j - 1] > s:
            stride[j] = stride[j - 1]
            extent[j] = extent[j - 1]
            j -= 1
        stride[j] = s
        extent[j] = n
        m += 1
    for i in range(m):
        if stride[i] < reach:
            return True
        reach += stride[i] * (extent[i] - 1)
    return False


cdef object last_write_mask(TensorBase view):
    """For a view of its base that overlaps itself: a bool array of the view's shape, True at the
    last position (C order) of each base element the view covers.  None when no two of the
    view's elements are one element of the base (every ordinary view)."""
    V = view._array
    if V.size < 2 or not may_overlap_itself(V):
        return None
    B = (<TensorBase>view._base)._array
    key = view_key(view)
    flat = np.ravel_multi_index(key, B.shape if B.ndim else (1,)).reshape(-1)
    first_from_end = np.unique(flat[::-1], return_index=True)[1]
    if first_from_end.size == flat.size:
        return None
    mask = np.zeros(flat.size, dtype=NP_BOOL)
    mask[flat.size - 1 - first_from_end] = True
    return mask.reshape(V.shape)


cdef object overlap_operand(TensorBase self, bint shared_ok=False):
    """For a recorded in-place op on a view that overlaps itself: the copy of self's value it
    computes from, whose gradient reaches each base element once (see above); None for any
    other tensor (the caller reads self, or its own copy of it).  `shared_ok`: the op is one
    PyTorch runs on a view whose elements share memory (masked_fill_, index_fill_, index_put_);
    any other is refused there (view_reads_base)."""
    if self._base is None or not grad_enabled() or not self._requires_grad:
        return None
    if not shared_ok and overlaps_itself(self._array) and rebase_pending(self, True):
        # (a write the final copy into self refuses, before the rebase: view_reads_base; the
        # op computes on a throwaway copy so that its own argument errors come first)
        return self.detach().clone()
    view_reads_base(self, True, shared_ok)  # (the op reads the view's old value: see there)
    mask = last_write_mask(self)
    if mask is None:
        return None
    from tapegrad._ops_unary import where
    return where(wrap(mask), self, self.detach())


def _overlap_operand(TensorBase self, bint shared_ok=False):
    """What an in-place op computed in Python from self itself (then written back with copy_)
    reads: self, or for a view that overlaps itself, overlap_operand's copy (`shared_ok`:
    there)."""
    source = overlap_operand(self, shared_ok)
    return self if source is None else source


def _check_operands_overlap(TensorBase self, operands, bint same_too=False):
    """PyTorch's refusal (check_source_overlap) of an in-place op computed in Python, as its
    out-of-place form written back with copy_, whose tensor operands partly share memory with
    self: the copy_ of a fresh result cannot see it (`v[:3].addcdiv_(v[1:], d)`, fuzz 63013796).
    `same_too`: an operand that is self's memory with self's layout is refused too (PyTorch's
    index and scatter writes: x.index_copy_(0, i, x))."""
    for x in operands:
        if same_too and x is self:
            # (PyTorch's overlap status of a tensor with itself is a full overlap before it
            # looks at the elements: refused without any too, x.scatter_(0, i, x) of an empty x)
            raise RuntimeError(SOURCE_OVERLAP)
        if isinstance(x, TensorBase) and (same_too or x is not self):
            check_source_overlap(self._array, (<TensorBase>x)._array, same_too)


def _in_place_operand(TensorBase self, bint shared_ok=False):
    """The copy of self that an in-place op computed in Python computes from: self.clone(), or
    overlap_operand's copy for a view that overlaps itself (`shared_ok`: there)."""
    source = overlap_operand(self, shared_ok)
    return self.clone() if source is None else source


cdef inline bint records(TensorBase t, object other) noexcept:
    return grad_enabled() and (t._requires_grad or
                               (isinstance(other, TensorBase) and (<TensorBase>other)._requires_grad))


cdef bint inplace_int64(int op, object A, object other) except -1:
    """int64 self (+ - *)= a Python int within int64 or an int64 tensor of self's shape (or 0-d),
    by one numpy ufunc into self's storage (wrapping on overflow, as PyTorch's): the counters of
    training loops (`correct += (pred == y).sum()`, BatchNorm's num_batches_tracked.add_(1)),
    which took numpy's general route at ~35x the float kernels' cost.  False for anything else
    (/, other dtypes, broadcasting self to a larger shape), which that route checks and words."""
    if op == OP_DIV:
        return False
    if type(other) is int:
        if not (-(1 << 63) <= other < (1 << 63)):
            return False
        B = other
    elif isinstance(other, TensorBase):
        B = (<TensorBase>other)._array
        if not cnp.PyArray_Check(B) or cnp.PyArray_TYPE(<cnp.ndarray>B) != cnp.NPY_INT64 or not (
                cnp.PyArray_NDIM(<cnp.ndarray>B) == 0 or B.shape == A.shape):
            return False
    else:
        return False
    ufunc = np.add if op == OP_ADD else (np.subtract if op == OP_SUB else np.multiply)
    ufunc(A, B, out=A)                  # (numpy buffers a B that overlaps A)
    return True


cdef bint inplace_in_c(int op, TensorBase self, object other) except -1:
    """Unrecorded self (op)= other straight into self's storage by a C kernel (the SGD update
    `p -= lr * p.grad` under no_grad), or False when numpy's path is needed: +, -, *, / only
    (correctly rounded, so C and numpy agree to the bit), a writeable self that the kernels take
    with `other` (kernel_operands) and that gives the result its shape, and no storage shared
    with a broadcast `other` that the kernel would read after writing it (see below)."""
    if op != OP_ADD and op != OP_SUB and op != OP_MUL and op != OP_DIV:
        return False
    A = self._array
    if not cnp.PyArray_Check(A) or not cnp.PyArray_ISWRITEABLE(<cnp.ndarray>A):
        return False
    if cnp.PyArray_TYPE(<cnp.ndarray>A) == cnp.NPY_INT64:
        return inplace_int64(op, A, other)
    cdef KernelOperands ko
    if isinstance(other, TensorBase):
        B = (<TensorBase>other)._array
    elif kernel_scalar(other):
        B = other
    else:
        return False
    if kernel_operands(A, B, &ko) is not A:
        return False
    cdef cnp.ndarray a = <cnp.ndarray>A
    if cnp.PyArray_Check(B) and ko.pb < ko.pa + cnp.PyArray_NBYTES(a) and (
            ko.pa < ko.pb + cnp.PyArray_NBYTES(<cnp.ndarray>B)):
        # Overlapping storage.  Safe in one kernel call when other is self's very elements or
        # one value (read once before the loop); otherwise numpy buffers it: a row or column of
        # self broadcast over self's rows would be read after the first rows were written.
        if ko.cols != 0 or (ko.sb != 0 and ko.pb != ko.pa):
            return False
    run_binary(kernel_of(op), cnp.PyArray_SIZE(a), &ko, <void*>ko.pa)
    return True


cdef object inplace_binary(int op, TensorBase self, object other):
    """self (op)= other, recorded when a gradient must flow through it."""
    if is_meta_tensor(other):                           # written into a CPU tensor: refused
        return meta_entry("inplace", (self, other))
    if not (kernel_scalar(other) or isinstance(other, (TensorBase, complex))):
        operand = as_operand(other)
        if isinstance(operand, TensorBase):
            other = operand     # a real torch tensor, read as a tapegrad one (as_operand)
        elif operand is NotImplemented:
            # An operand the op does not take (an ndarray: as_operand) is refused before the leaf
            # and view checks, as by PyTorch's argument parser: `t += array` then rebinds t to
            # t + array (numpy's result), the named forms raise TypeError.
            # An operand type may refuse that rebinding instead (vmap's BatchedTensor: one tensor
            # cannot hold every sample's result, and PyTorch raises).
            refusal = getattr(type(other), "_inplace_into_plain_error", None)
            if refusal is not None:
                raise refusal(self, other, op == OP_ADD)
            # A sparse COO operand (tapegrad/_sparse_coo.py) adds its entries into self itself:
            # `p.add_(sparse_grad, alpha=-lr)` in SGD, `dense += sparse`.
            add_into_dense = getattr(type(other), "_add_into_dense", None)
            if add_into_dense is not None and (op == OP_ADD or op == OP_SUB):
                return add_into_dense(other, self, -1 if op == OP_SUB else 1)
            return NotImplemented
    fresh_operands(self, other)
    cdef bint recording = records(self, other)
    if recording:
        view_reads_base(self)
    check_inplace(self, recording, True)
    if isinstance(other, TensorBase):
        check_source_overlap(self._array, (<TensorBase>other)._array, False)
    if recording and writes_through_view(self):
        return inplace_binary_on_view(op, self, other)
    if not recording and inplace_in_c(op, self, other):
        bump_version(self)
        return self
    orig = self._array
    if recording:
        # Record on a private copy of the old value: the VJP may need it (mul_, div_) and the
        # storage is about to be overwritten.
        # The copy gets its own version counter: it is private, later writes to self do not
        # touch it.
        orig_version = self._version
        self._array = orig.copy()
        self._version = None
        try:
            result = binary_op(op, self, other)
        finally:
            self._array = orig
            self._version = orig_version
    else:
        with no_grad_scope():
            result = binary_op(op, self, other)
    if result is NotImplemented:
        return NotImplemented
    write_result(self, (<TensorBase>result)._array)
    if recording and other is self and (op == OP_MUL or op == OP_DIV):
        # x.mul_(x), x /= x: the record read both operands from the private copy, but PyTorch's
        # MulBackward0 / DivBackward0 save `other` itself, which this very write overwrites, so
        # their backward raises the in-place error: the same refusal here (before the bump).
        guard_version(&TAPE.recs[(<TensorBase>result)._node], self)
    bump_version(self)
    if recording:
        adopt_record(self, <TensorBase>result)
    return self


cdef object inplace_binary_on_view(int op, TensorBase view, object other):
    """view (op)= other, recorded as base[key] = view_old (op) other (CopySlices on the base, as
    PyTorch's); the op reads a private copy of the old value (see inplace_binary), or for a view
    that overlaps itself, overlap_operand's."""
    source = overlap_operand(view)
    if source is not None:
        result = binary_op(op, source, other)
    else:
        orig = view._array
        orig_version = view._version
        view._array = orig.copy()
        view._version = None
        try:
            result = binary_op(op, view, other)
        finally:
            view._array = orig
            view._version = orig_version
    if result is NotImplemented:
        return NotImplemented
    check_result(view, (<TensorBase>result)._array)
    cdef tuple key = view_key(view)
    bkey = base_key(<TensorBase>view._base, key)
    if bkey is not None:
        setitem_op(<TensorBase>view._base, bkey, result, True)
    rebase_view(view, key)                 # the view reads the base's new history
    return view


cdef object base_key(TensorBase base, tuple key):
    """A key from view_key (or a part of one) as a key of `base` itself.  A 0-d base's key
    indexes it seen as shape (1,): a key that selects its one element is `...` on the base
    itself, one that selects nothing a 0-d False mask (a write of nothing that PyTorch's
    index_put_ still records, so base and view require grad: fuzz seed 54107820)."""
    if base._array.ndim != 0:
        return key
    return Ellipsis if key[0].size else np.zeros((), dtype=np.bool_)


cdef object inplace_apply(TensorBase self, object fn, tuple args, object zeroed=None):
    """self = fn(self, *args) in place (tril_, triu_), recorded like inplace_binary.  `zeroed`:
    the elements fn sets to zero (a bool mask broadcastable to self), for a self two of whose
    elements share memory (zero_shared_elements)."""
    fresh_operands(self, None)
    cdef bint recording = grad_enabled() and self._requires_grad
    if zeroed is not None and overlaps_itself(self._array) and (not recording
                                                                or self._base is not None):
        return zero_shared_elements(self, zeroed, recording)
    if recording and self._base is not None:
        # through a view: its new value, recorded out of place, goes to the base as
        # view[...] = value does (CopySlices), as PyTorch's
        source = overlap_operand(self)
        setitem_op(self, Ellipsis, fn(self if source is None else source, *args))
        return self
    check_inplace(self, recording)
    if recording:
        orig = self._array
        orig_version = self._version
        self._array = orig.copy()
        self._version = None
        try:
            result = fn(self, *args)
        finally:
            self._array = orig
            self._version = orig_version
    else:
        with no_grad_scope():
            result = fn(self, *args)
    write_result(self, (<TensorBase>result)._array)
    bump_version(self)
    if recording:
        adopt_record(self, <TensorBase>result)
    return self


cdef object zero_shared_elements(TensorBase self, object zeroed, bint recording):
    """An op that only zeroes elements (tril_, triu_) on a view whose elements share memory (an
    expand()): PyTorch's kernel writes just those zeros, with no overlap check, so a memory
    location that any zeroed element sees is zero at every element seeing it.  A recorded one
    goes to the base as view[...] = value (its CopySlices raises the overlap error at backward,
    as PyTorch's; fuzz seed 62668407)."""
    A = self._array
    mask = np.broadcast_to(zeroed, A.shape)
    if not recording:
        check_inplace(self, False)
        writable(A, True)[mask] = 0
        bump_version(self)
        return self
    # the elements sharing a location differ only along the stride-0 dims
    shared = tuple(k for k in range(A.ndim) if A.strides[k] == 0)
    new = A.copy()
    new[np.broadcast_to(mask.any(axis=shared, keepdims=True), A.shape)] = 0
    setitem_op(self, Ellipsis, wrap(new), False, False, True)
    return self


# -- x[key] = value ------------------------------------------------------------------------------

cdef object vjp_setitem(Record* r, object g):
    key, advanced, squeezed_shape, value_shape, value_dtype = <tuple>r.aux
    key = resolve_index_key(r, key)
    gx = gv = None
    if needs_grad(r, 0):
        gx = np.array(g, copy=True)
        gx[key] = 0                                     # overwritten elements get no gradient
    if needs_grad(r, 1):
        picked = np.asarray(g[key])
        if advanced:
            # numpy lays out x[:, idx] with the index's dims first (strided); PyTorch's index
            # (index_copy's index_select) is row-major, and its .view(-1) works
            picked = np.ascontiguousarray(picked)
        # (a value of another dtype was cast: its own dtype, a real value of a complex
        # destination the real part, as the graph VJP's t_cast)
        gv = fit_grad(sum_to(nd(picked), squeezed_shape).reshape(value_shape), None,
                      value_dtype)
    return (gx, gv)


OP_SETITEM = register_op("CopySlices", vjp_setitem)


cdef object vjp_overlapping_slices(Record* r, object g):
    if needs_grad(r, 0):
        raise RuntimeError(OVERLAPPING_WRITE)
    return vjp_setitem(r, g)


# A write PyTorch allows into a view two of whose elements share memory (an expand()): one value
# filled (fill_ and zero_ with a number, masked_fill_, index_fill_, index_put_).  Its CopySlices
# copies the base's gradient into that view at backward, which PyTorch refuses with the overlap
# error: the forward writes, a backward that wants the base's gradient raises (fuzz seed
# 60635163); the value's gradient alone is computed (its CopySlices skips that copy).
OP_OVERLAPPING_SLICES = register_op("CopySlices", vjp_overlapping_slices)
# A recorded write of all of self itself, not through a view: PyTorch's copy_ (CopyBackwards),
# which x[key] = v also is for a key that takes no view, except that a 0-d value there is its
# fill_ (FillBackward3).  The same write with the same VJP: only grad_fn's name differs.
OP_COPY = register_op("CopyBackwards", vjp_setitem)
OP_SETITEM_FILL = register_op("FillBackward3", vjp_setitem)
# x[key] = v with an advanced key (index tensors, lists, masks) that takes no view first (its
# other items whole slices or Ellipsis): PyTorch's index_put_ on x itself (IndexPutBackward0).
OP_INDEX_PUT = register_op("IndexPutBackward0", vjp_setitem)


cdef bint only_whole_slices_beside(object key) except -1:
    """Whether the basic items of an advanced key are all `:` or Ellipsis, so that PyTorch's
    indexing takes no view before its index_put_ (an int, a partial slice or None would)."""
    for item in (key if type(key) is tuple else (key,)):
        if item is None or isinstance(item, (int, np.integer)):
            return False
        if type(item) is slice and not ((<slice>item).start is None and (<slice>item).stop is None
                                         and (<slice>item).step in (None, 1)):
            return False
    return True


cdef object setitem_key_item(object item, list advanced):
    if isinstance(item, slice) and item.step is not None and item.step <= 0:
        raise ValueError("step must be greater than zero")     # (numpy would write reversed)
    if (type(item) is int and not isinstance(item, bool)
            and not -0x8000000000000000 <= item <= 0x7fffffffffffffff):
        raise ValueError("Overflow when unpacking long long")  # (as x[i] reads it)
    if isinstance(item, TensorBase):
        item = (<TensorBase>item)._array
    elif isinstance(item, (list, range)):
        item = np.asarray(item)
        if item.dtype.kind in "US":
            raise bad_index_item_error(item.flat[0])
        if item.size == 0 and item.dtype.kind not in "biu":
            item = item.astype(NP_INT64)
    elif isinstance(item, np.integer):
        return int(item)
    elif isinstance(item, np.bool_):
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                         "Variables are valid indices (got numpy.bool)")
    if isinstance(item, np.ndarray):
        if item.dtype.kind not in "biu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if item.dtype == np.uint8:
            # a byte tensor is a mask, as x[mask] reads it (classify_array), not integer indices
            advanced.append(BYTE_MASK)
            return byte_mask_as_bool(item)
        if item.ndim == 0 and item.dtype.kind != "b":
            # a 0-d integer tensor indexes as the integer (a view, as x[i] reads it): PyTorch's
            # select, so `dC[ix] += v` writes the view back onto itself, not an index_put_
            return int(item)
        if item.dtype.kind != "b" and item.dtype.itemsize < 4:
            # (as x[idx] refuses them: an index array must be int32 or int64)
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        advanced.append(True)
    elif isinstance(item, bool):
        advanced.append(True)
    elif not (item is None or item is Ellipsis or isinstance(item, (int, slice, tuple))):
        real = real_torch_tensor(item)      # a real PyTorch tensor: read as a tensor is
        if real is not NotImplemented:
            return setitem_key_item(real, advanced)
        raise bad_index_item_error(item)     # (numpy's own refusal spoke of numpy.newaxis)
    return item


cdef object BYTE_MASK = object()        # setitem_key's note of a uint8 mask among `advanced`


cdef object setitem_key(object key, list advanced, Py_ssize_t ndim):
    """The numpy key for x[key] = v (tensors and lists become index arrays) on a tensor of ndim
    dims."""
    if isinstance(key, (list, str)) and sequence_as_tuple(key):
        key = tuple(key)
    items = key if isinstance(key, tuple) else (key,)
    try:
        nkey = tuple([setitem_key_item(k, advanced) for k in items])
    except (TypeError, IndexError, ValueError):
        if specified_dims(items) > ndim:    # PyTorch counts the key's dims before reading items
            raise too_many_indices(ndim) from None
        raise
    return nkey if isinstance(key, tuple) else nkey[0]


cdef object expanded_like_torch(object V, tuple shape):
    """V broadcast to `shape` with the strides PyTorch's expand() gives (only for the overlap
    check, never read): a stretched or new dim of size > 1 has stride 0, a new dim of size 1
    the stride that makes it contiguous with the next (0 for the last dim of a 0-d V, as
    PyTorch's expand of a 0-d tensor gives)."""
    cdef Py_ssize_t nd_ = len(shape), lead = nd_ - V.ndim, i
    if lead < 0:
        return V
    strides = [0] * nd_
    for i in range(nd_ - 1, -1, -1):
        if i >= lead:
            strides[i] = 0 if V.shape[i - lead] == 1 and shape[i] != 1 else V.strides[i - lead]
        else:
            strides[i] = 0 if shape[i] != 1 else (
                shape[i + 1] * strides[i + 1] if i + 1 < nd_ else 0)
    return np.lib.stride_tricks.as_strided(V, shape, tuple(strides), writeable=False)


cdef bint index_put_key(object nkey, object V):
    """Whether x[nkey] = V is PyTorch's index_put_ (which refuses a value of another dtype): a
    key with an index array, except a key whose one index array is a boolean mask, with a
    one-element value (masked_fill_ on the view the rest of the key takes, which casts:
    x[:, mask] = torch.tensor([9.0]) into float64).  Python bools and None index like slices."""
    arrays = [nkey] if isinstance(nkey, np.ndarray) else (
        [k for k in nkey if isinstance(k, np.ndarray)] if isinstance(nkey, tuple) else [])
    if not arrays:
        return False
    return not (len(arrays) == 1 and arrays[0].dtype.kind == "b" and arrays[0].ndim > 0
                and V.size == 1)        # (a 0-d bool tensor goes to index_put_)


cdef object fit_value(object V, tuple target, bint advanced, object value):
    """V (the value array of x[key] = value) with its leading size-1 dims removed (as PyTorch
    does), checked to broadcast to the indexing result's shape `target`, with PyTorch's
    messages: an advanced key's index_put_ names both shapes, a basic key's copy_ is an
    expand()."""
    value_shape = V.shape
    while V.ndim and V.shape[0] == 1:
        V = V.reshape(V.shape[1:])
    cdef Py_ssize_t nv = V.ndim, nt = len(target), i
    if advanced:
        try:
            fits = V.shape == target or np.broadcast_shapes(V.shape, target) == target
        except ValueError:
            fits = False
        if not fits:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(value_shape)} cannot "
                               f"be broadcast to indexing result of shape {list(target)}")
        return V
    if nv > nt:
        type_name = value.type() if isinstance(value, TensorBase) else "torch.Tensor"
        raise RuntimeError(f"expand({type_name}{{{list(V.shape)}}}, size={list(target)}): the "
                           f"number of sizes provided ({nt}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({nv})")
    for i in range(1, nv + 1):
        if V.shape[nv - i] != 1 and V.shape[nv - i] != target[nt - i]:
            raise RuntimeError(f"The expanded size of the tensor ({target[nt - i]}) must match the "
                               f"existing size ({V.shape[nv - i]}) at non-singleton dimension "
                               f"{nt - i}.  Target sizes: {list(target)}.  Tensor sizes: "
                               f"{list(V.shape)}")
    return V


cdef int refuse_meta_source(TensorBase self, object value) except -1:
    """A meta tensor has no values to write into a CPU tensor (`cpu[:] = meta`, `cpu.copy_(meta)`
    would write the stand-in's zeros): PyTorch's refusal."""
    if is_meta_tensor(value) and not is_meta_tensor(self):
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    return 0


cdef int check_setitem_value(TensorBase self, object value) except -1:
    """PyTorch assigns a tensor or a number, nothing else (None would write NaN)."""
    refuse_meta_source(self, value)
    if isinstance(value, (TensorBase, bool, int, float, np.bool_, np.number)):
        if isinstance(value, (np.complexfloating)) and self._array.dtype.kind != "c":
            value = complex(value)
        else:
            return 0
    if isinstance(value, complex):
        if self._array.dtype.kind == "c":
            return 0
        raise RuntimeError(f"value cannot be converted to type "
                           f"{C_TYPE_NAMES.get(self._array.dtype.name, self._array.dtype.name)} "
                           "without overflow")
    raise TypeError(f"can't assign a {c_type_name(type(value))} to a {self.type()}")


cdef bint key_is_whole(TensorBase self, object key) except -1:
    """Whether `key` selects all of self as it is (Ellipsis, and slices each covering its whole
    dim with step 1): PyTorch's indexing then takes no view (its applySlicing skips them)."""
    items = key if type(key) is tuple else (key,)
    cdef Py_ssize_t n = self._array.ndim, k, before = 0
    cdef bint seen_ellipsis = False
    for item in items:
        if item is Ellipsis:
            if seen_ellipsis:
                return False
            seen_ellipsis = True
        elif type(item) is not slice:
            return False
    dims = [i for i in items if i is not Ellipsis]
    if len(dims) > n:
        return False
    for item in items:
        if item is Ellipsis:
            break
        before += 1
    for k in range(len(dims)):
        d = k if k < before else n - (len(dims) - k)
        size = self._array.shape[d]
        if not slice_is_whole(<slice>dims[k], size):
            return False
    return True


cdef bint slice_is_whole(slice item, Py_ssize_t size) except -1:
    """PyTorch's test for a slice its indexing skips: start 0 as written (a negative start
    that wraps to 0 still takes a view), a stop at or past the end, step 1."""
    start, stop, step = item.start, item.stop, item.step
    return ((start is None or start == 0) and (stop is None or stop >= size)
            and (step is None or step == 1))


cdef bint key_takes_view(TensorBase self, object key) except -1:
    """Whether PyTorch's indexing takes a view before it writes self[key] = value: an integer,
    True, None, a 0-d tensor or a slice not covering its whole dim does (the write is then into
    a view, and a leaf's refusal names the view); Ellipsis, whole slices and index arrays alone
    leave self itself, written by index_put_."""
    items = key if type(key) is tuple else (key,)
    cdef Py_ssize_t n = self._array.ndim, d = 0, i, after
    for i in range(len(items)):
        item = items[i]
        if item is Ellipsis:
            after = 0                   # the dims the items after the Ellipsis index
            for rest in items[i + 1:]:
                if rest is not None and rest is not Ellipsis:
                    after += (<TensorBase>rest)._array.ndim if (
                        isinstance(rest, TensorBase) and (<TensorBase>rest)._array.dtype == np.bool_) else 1
            d = n - after
        elif item is None or item is True:
            return True
        elif type(item) is slice:
            if d >= n or not slice_is_whole(<slice>item, self._array.shape[d]):
                return True
            d += 1
        elif isinstance(item, TensorBase):
            if (<TensorBase>item)._array.ndim == 0:
                return True
            d += (<TensorBase>item)._array.ndim if (<TensorBase>item)._array.dtype == np.bool_ else 1
        elif isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
            return True
        else:
            d += 1
    return False


cdef object index_error_like_torch(object e, object key, object nkey, Py_ssize_t ndim):
    """numpy's IndexError from self[key] = value (A[nkey] in numpy) in PyTorch's words, as x[key]
    reads them: a slice of a 0-d tensor, its count of too many indices, an index array's
    place for numpy's axis (numpy_index_message)."""
    if str(e).startswith("too many indices"):
        if ndim == 0 and type(key) is slice:
            return IndexError("slice() cannot be applied to a 0-dim tensor.")
        return too_many_indices(ndim)
    return IndexError(numpy_index_message(str(e), nkey, ndim))


cdef object setitem_op(TensorBase self, object key, object value, bint onto_base=False,
                       bint is_copy=False, bint one_number=False):
    """self[key] = value.  `onto_base`: a write into a view or an in-place op on one, already
    checked as the user wrote it, going to the view's base under the base's index arrays.
    `is_copy`: self.copy_(value) (key `...`).  `one_number`: fill_ or zero_ with a number,
    which PyTorch writes even where elements share memory (or a value already equal at the
    elements that share one: zero_shared_elements)."""
    cdef list advanced = []
    check_setitem_value(self, value)
    if not onto_base and key_is_whole(self, key):
        # PyTorch's indexing returns self itself for such a key, and copies into it: the leaf
        # quirk of an in-place op applies (fuzz seed 56200018)
        fresh_operands(self, value)
    else:
        # PyTorch indexes first (reading self's history, so no leaf quirk as in fresh_operands)
        fresh(self)
        if isinstance(value, TensorBase):
            fresh(<TensorBase>value)
    cdef bint had_history = self._node >= 0
    # (an integer or bool tensor records nothing: a value that requires grad is cast, and no
    # gradient flows through the cast)
    cdef bint recording = records(self, value) and self._array.dtype.kind in "fc"
    cdef Record* r
    cdef tuple vkey
    nkey = setitem_key(key, advanced, self._array.ndim)
    if (not advanced and isinstance(value, TensorBase)
            and (<TensorBase>value)._array.dtype.kind == "c"):
        value = complex_cast_to(value, self._array.dtype.kind)     # (a basic key: as copy_)
    if BYTE_MASK in advanced and not index_put_key(
            nkey, (<TensorBase>value)._array if isinstance(value, TensorBase) else np.empty(1)):
        # (PyTorch's masked_fill_ path of a one-element value refuses a byte mask, after
        # checking the mask's shape)
        err = mask_mismatch(self._array, nkey if isinstance(nkey, tuple) else (nkey,))
        if err is not None:
            raise err
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           "unsigned char")
    if not advanced:
        # PyTorch takes the view self[key] before its in-place checks: a key out of range is
        # its IndexError, not a leaf's refusal
        try:
            self._array[nkey]
        except IndexError as e:
            raise index_error_like_torch(e, key, nkey, self._array.ndim) from None
    if (self._requires_grad and grad_enabled() and is_leaf_c(self) and not onto_base
            and key_takes_view(self, key)):
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    cdef bint shared_ok
    if recording:
        # (after the key's own errors, which leave self as it was; a basic key's part that
        # shares memory is refused before the rebase, as view_reads_base explains, after a
        # value of a shape that does not fit, as PyTorch's copy checks the shapes first)
        shared_ok = (bool(advanced) or one_number
                     or not overlaps_itself(self._array[nkey]))
        if not shared_ok and rebase_pending(self, True):
            fit_value((<TensorBase>value)._array if isinstance(value, TensorBase)
                      else np.asarray(value), np.shape(self._array[nkey]), False, value)
        view_reads_base(self, True, shared_ok)
    check_inplace(self, recording, True)
    A = self._array
    if isinstance(value, TensorBase):
        V = (<TensorBase>value)._array
    else:
        V = np.asarray(value, dtype=A.dtype)
    value_shape = V.shape
    try:
        T = A[nkey]                    # (a view of A for a basic key)
    except IndexError as e:
        tkey = nkey if isinstance(nkey, tuple) else (nkey,)
        # a mask that does not fit its dims: PyTorch's refusal, not numpy's words
        err = mask_mismatch(A, tkey)
        if err is not None:
            raise err from None
        if str(e).startswith("shape mismatch"):         # (index arrays that do not broadcast)
            raise index_shapes_error(tkey) from None
        # an index out of range where nothing is written: PyTorch writes nothing, as x[key]
        # reads nothing (empty_index_result); a dim of size 0 indexed is refused in both
        if all(isinstance(k, (slice, np.ndarray)) for k in tkey):
            T = empty_index_result(A, tkey)
            if T is not None:
                bump_version(self)
                return None
            if str(e).endswith(" with size 0"):    # (PyTorch's message: no index, no dim)
                raise IndexError("index is out of bounds for dimension with size 0") from None
        raise index_error_like_torch(e, key, nkey, A.ndim) from None
    # PyTorch's overlap checks: index_put_ refuses any sharing (before checking the shapes); a
    # basic key writes through a view, as copy_ does, from the value without its leading
    # size-1 dims
    if (not recording and not advanced and isinstance(value, TensorBase)
            and same_data(T, (<TensorBase>value)._array)):
        # PyTorch's copy_ returns at once when source and target are the same memory with the
        # same layout (x[...] = x of an expand()ed x: no overlap refusal; fuzz seed 53006038)
        bump_version(self)
        return None
    if advanced and not onto_base and index_put_key(nkey, V):
        # PyTorch's index_put_ also refuses an index array sharing self's memory, a number
        # value too (x[x] = 7: where the writes land would depend on the writes before them)
        for k in (nkey if isinstance(nkey, tuple) else (nkey,)):
            check_source_overlap(A, k, True)
    cdef bint check_overlap = isinstance(value, TensorBase) and not onto_base
    if check_overlap and advanced:
        if index_put_key(nkey, V):
            if value is self and not (V.ndim and V.shape[0] == 1):
                # (PyTorch's overlap test finds a tensor itself fully overlapping before it
                # looks at sizes: refused even without elements; x[x > 0] = x, fuzz 63019660.
                # But x[k] = v writes v without its leading size-1 dims, a view, another
                # tensor: its memory is compared, and an empty one shares none (x of shape
                # (1, 0), fuzz 62705660); index_put_, which takes v as given, refuses it)
                raise RuntimeError(SOURCE_OVERLAP)
            check_source_overlap(A, V, True)
        else:
            # one mask and a one-element value: PyTorch's masked_fill_, which reads the value
            # before writing and checks no overlap (x[x > 0] = x[0:1]; fuzz seed 50002974)
            V = V.copy()
            if V.dtype.kind == "c" and A.dtype.kind != "c" and np.any(V.imag != 0):
                # (its value is a number then: a complex one is refused for a real target, not
                # cut to its real part)
                raise RuntimeError(f"value cannot be converted to type "
                                   f"{C_TYPE_NAMES.get(A.dtype.name, A.dtype.name)} "
                                   "without overflow")
            if V.dtype.kind == "c" and A.dtype.kind != "c":
                # (a real number then, converted without a warning: numpy's ComplexWarning
                # leaked out of the write below, an error under -W error)
                V = V.real
    given = V
    V = fit_value(V, np.shape(T), bool(advanced), value)
    if V.dtype.kind == "c" and not advanced:
        # a complex value into a tensor (copy_, x[k] = z); an advanced key is PyTorch's
        # index_put_, which checks the dtypes further on
        V = complex_cast_to(V, A.dtype.kind)
    if (check_overlap and not advanced and isinstance(T, np.ndarray)
            and not (given.ndim == 0 and T.ndim != 0)):
        # (PyTorch copies a value of the target's shape as it is, any other without its
        # leading size-1 dims, expanded; a 0-d value into a target of other shape is its fill_,
        # which reads the value first and checks no overlap: v.flatten()[...] = v of a 0-d v,
        # fuzz seed 62627564)
        # A value that loses every dim written to one element (v[0] = v of a (1, 1) v) is
        # PyTorch's expand of a 0-d tensor, all strides 0, which PyTorch compares literally with
        # the target's: compared as the 0-d array itself, since same_strides takes a size-1
        # dim's stride 0 for numpy's broadcast of any layout (fuzz 65016220)
        check_source_overlap(T, given if given.shape == T.shape
                             else V if V.ndim == 0 and T.size == 1
                             else expanded_like_torch(V, T.shape), False)
    if (isinstance(value, TensorBase) and V.dtype != A.dtype and not onto_base
            and index_put_key(nkey, V)):
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{scalar_type_name(A.dtype)} for the destination and "
                           f"{scalar_type_name(V.dtype)} for the source.")
    if advanced:
        if overlaps_itself(A):
            torch_warn("Use of index_put_ on expanded tensors is deprecated. Please clone() "
                       "the tensor before performing this operation. This also applies to "
                       "advanced indexing e.g. tensor[indices] = tensor",
                       "aten/src/ATen/native/TensorAdvancedIndexing.cpp:976")
    elif isinstance(T, np.ndarray) and overlaps_itself(T) and not one_number:
        raise RuntimeError(OVERLAPPING_WRITE)
    cdef Py_ssize_t base_node
    if recording and writes_through_view(self):
        # view[key] = value as base[the base positions of view[key]] = value (CopySlices)
        vkey = view_key(self)
        try:
            bkey = base_key(<TensorBase>self._base, tuple(k[nkey] for k in vkey))
        except IndexError as e:
            raise IndexError(str(e).replace("axis", "dimension")) from None
        if bkey is not None:
            base_node = (<TensorBase>self._base)._node
            # (the base's key may be index arrays, which numpy writes buffered: PyTorch's order
            # of a partly overlapping source is applied to the written view afterwards)
            smeared = None if advanced else ordered_overlap_values(T, V)
            setitem_op(<TensorBase>self._base, bkey, value, True)
            if smeared is not None:
                writable(T)[...] = smeared
            if (<TensorBase>self._base)._node != base_node:
                # (bkey's arrays are the base's positions, made here: the index tensors the
                # user wrote with are saved as PyTorch's CopySlices saves them, save_index)
                save_indices(&TAPE.recs[(<TensorBase>self._base)._node], key_tensors(key))
            if ((<TensorBase>self._base)._node != base_node
                    and overlaps_itself(written_view(A, nkey, bool(advanced)))):
                TAPE.recs[(<TensorBase>self._base)._node].op = OP_OVERLAPPING_SLICES
        if had_history or key is Ellipsis:
            rebase_view(self, vkey)
        # else: as in PyTorch the view stays without a history of its own until it is read
        # (refresh_view); an in-place op on it before that raises (fresh_operands).  A write
        # into the whole view (copy_, view[...] = v) is PyTorch's write into the view itself,
        # which gives it its history at once (fuzz seed 53001126's sibling: view.copy_(leaf)
        # then view.abs_() runs there)
        return None
    if not recording:
        if V.dtype == A.dtype:
            assign_unrecorded(A, T, nkey, V, bool(advanced))
        else:
            with IeeeResults():         # (a cast to inf or from NaN: PyTorch's is silent)
                assign_unrecorded(A, T, nkey, V, bool(advanced))
        bump_version(self)
        return None
    # Recorded: the new value of self is a function of its old value and `value`.  Written in
    # place before recording (the record saves no value of self, its VJP reads only the key):
    # a copy of all of self per write made a loop that fills a path tensor column by column
    # (x[:, t] = f(x[:, t - 1]), each write recorded) quadratic in the number of columns.
    # numpy buffers a value that overlaps A, so `value` is read whole before the write.
    with IeeeResults():
        if advanced or not ordered_overlap_copy(T, V):
            writable(A)[nkey] = V
    result = wrap(A)
    cdef int op = OP_SETITEM
    if is_copy:
        op = OP_COPY
    elif not onto_base and key_is_whole(self, key):
        op = OP_SETITEM_FILL if V.ndim == 0 and A.ndim != 0 else OP_COPY
    elif advanced and not onto_base and only_whole_slices_beside(key):
        op = OP_INDEX_PUT
    r = record_from(op, result, (self, value if isinstance(value, TensorBase) else None))
    if r != NULL:
        # the index tensors are saved themselves, version-checked (record.pxi, save_index): a
        # write into one before backward raises, as PyTorch's, where the VJP read the live
        # array in the aux and sent the gradient through the new indices (fuzz seed 65605814)
        keep(&r.aux, (saved_index_key(r, callers_arrays_copied(nkey, key), key_tensors(key)),
                      bool(advanced), V.shape, value_shape,
                      V.dtype if V.dtype != A.dtype else None))
    bump_version(self)
    adopt_record(self, result)
    return None


cdef list key_tensors(object key):
    """The index and mask tensors (with dims) among the items of x[key] = v's key."""
    if isinstance(key, list) and sequence_as_tuple(key):
        key = tuple(key)
    return [it for it in (key if type(key) is tuple else (key,))
            if isinstance(it, TensorBase) and (<TensorBase>it)._array.ndim > 0]


cdef object callers_arrays_copied(object nkey, object key):
    """nkey with the parts that are writeable numpy arrays of the caller's (items of `key`)
    copied, as PyTorch makes tensors of them: a later write into them cannot reach the record
    (the library's own keys come read-only: _scatter_ops._overwrite)."""
    if isinstance(key, list) and sequence_as_tuple(key):
        key = tuple(key)
    callers = [id(it) for it in (key if type(key) is tuple else (key,))
               if isinstance(it, np.ndarray) and (<cnp.ndarray>it).flags.writeable]
    if not callers:
        return nkey
    if type(nkey) is not tuple:
        return np.array(nkey, copy=True) if id(nkey) in callers else nkey
    return tuple([np.array(part, copy=True) if id(part) in callers else part for part in nkey])


cdef object written_view(object A, object nkey, bint advanced):
    """The view of A that PyTorch's in-place op writes for A[nkey] = value: A[nkey] for a basic
    key; for an advanced one the view its basic items take (index_put_ or masked_fill_ then
    writes into all of it: an index array stands for its whole dim, a mask for its dims)."""
    if not advanced:
        return A[nkey]
    items = []
    for item in (nkey if type(nkey) is tuple else (nkey,)):
        if isinstance(item, np.ndarray):
            items.extend([slice(None)] * ((<cnp.ndarray>item).ndim
                                          if item.dtype == np.bool_ else 1))
        elif isinstance(item, bool):
            items.append(None)          # (a Python bool adds a dim of size 1, as None)
        else:
            items.append(item)
    return A[tuple(items)]


cdef int assign_unrecorded(object A, object T, object nkey, object V, bint advanced) except -1:
    """A[nkey] = V (T: A[nkey] as setitem_op indexed it), into a read-only A too."""
    if not advanced and ordered_overlap_copy(T, V):
        return 0
    if A.flags.writeable:
        A[nkey] = V
    elif advanced:                      # (overlapping: PyTorch warned above, and writes)
        writable(A, True)[nkey] = V
    elif isinstance(T, np.ndarray):
        writable(T)[...] = V
    else:                               # one element (a numpy scalar, not a view)
        writable(A, True)[nkey] = V
    return 0


cdef extern from "out_arg_call.h":
    int tg_setitem_value_dispatches(object self, object value)
    object tg_subclass_handler_ref()


cdef object user_setitem(TensorBase self, object key, object value):
    if isinstance(value, TensorBase) and tg_setitem_value_dispatches(self, value):
        # (a bfloat16 value into a float32 self: its handler refuses the dtypes as PyTorch)
        return tg_subclass_handler_ref()(TensorBase.__setitem__, (self, key, value), {})
    if key is False:
        # PyTorch's t[False] = v returns before anything (python_variable_indexing.cpp): no
        # write, no record, no version bump (fuzz seed 54107820)
        return None
    # vmap's BatchedTensor as the value or an index item: its type refuses the write (a plain
    # tensor cannot hold every sample's result); asked only off the plain paths
    if not isinstance(value, TensorBase) and not isinstance(value, (int, float, bool, complex)):
        real = real_torch_tensor(value)     # a real PyTorch tensor: written as a tensor is
        if real is not NotImplemented:
            return user_setitem(self, key, real)
        refusal = getattr(type(value), "_setitem_plain", None)
        if refusal is not None:
            return refusal(self, key, value)
    if not isinstance(key, (int, slice, TensorBase)):
        for it in (key if isinstance(key, tuple) else (key,)):
            if it is None or it is Ellipsis or isinstance(it, (int, slice, TensorBase)):
                continue
            refusal = getattr(type(it), "_setitem_plain", None)
            if refusal is not None:
                return refusal(self, key, value)
    if not isinstance(value, TensorBase):
        value = setitem_scalar(self, value)
    return setitem_op(self, key, value, False)


cdef str c_type_name(type cls):
    """The name CPython's tp_name holds: bare for a builtin or a class defined in Python, with
    its module for an extension type (numpy.float32)."""
    if cls.__module__ == "builtins" or cls.__flags__ & (1 << 9):     # Py_TPFLAGS_HEAPTYPE
        return cls.__name__
    return f"{cls.__module__}.{cls.__name__}"


cdef object setitem_scalar(TensorBase self, object value):
    """The number of x[key] = number as PyTorch's indexing reads it (valueToTensor): a Python
    bool, int, float or complex, or a numpy integer (numpy's float64 and complex128 are float
    and complex; its float32, float16, bool and complex64 scalars are refused, as sequences
    and arrays are), converted to x's dtype by the conversion every number written into a
    tensor shares (scalar_to_dtype; float16 checked as a double) and returned as written."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, np.integer)):
        v = int(value)
        if v < -(1 << 63) or v >= (1 << 63):
            raise ValueError("Overflow when unpacking long long")
    elif not isinstance(value, (float, complex)):
        raise TypeError(f"can't assign a {c_type_name(type(value))} to a {self.type()}")
    return scalar_to_dtype(value, self._array.dtype, True)


# -- out= ----------------------------------------------------------------------------------------

cdef bint any_requires_grad(object args) except -1:
    """Whether a tensor among `args` (a tuple, list or dict's values; one level of nested
    lists, as cat's and stack's tensors) requires grad."""
    for a in (args.values() if isinstance(args, dict) else args):
        if isinstance(a, TensorBase):
            if (<TensorBase>a)._requires_grad:
                return True
        elif isinstance(a, (list, tuple)):
            for t in a:
                if isinstance(t, TensorBase) and (<TensorBase>t)._requires_grad:
                    return True
    return False


# PyTorch's clamp with Number bounds checks that its result casts to the output itself and names
# the output's dtype by its C++ type ("desired output type long int"); every other op, and clamp
# with a Tensor bound, by its ScalarType ("Long").
cdef frozenset NUMBER_CLAMPS = frozenset(("clamp", "clamp_min", "clamp_max", "clip"))


cpdef str output_type_name(str name, tuple operands, object kwargs, object np_dt):
    """How PyTorch's refusal to cast op `name`'s result into an output (out=, or self for its
    in-place form) names the output's dtype `np_dt`, given the op's operands (self first)."""
    if name not in NUMBER_CLAMPS:
        return scalar_type_name(np_dt)
    for a in operands[1:]:
        if isinstance(a, TensorBase):
            return scalar_type_name(np_dt)
    if kwargs:
        for a in kwargs.values():
            if isinstance(a, TensorBase):
                return scalar_type_name(np_dt)
    return C_TYPE_NAMES.get(np_dt.name, np_dt.name)


# The ops whose out= PyTorch refuses in any dtype but the result's, even where the cast is "same
# kind" (torch.abs(x64, out=f32), torch.max(x, 1, out=...), the products, linalg ...): name ->
# PyTorch's message, a format string of {out} / {result} (ScalarType names: Float) and {out_c} /
# {result_c} (C type names: float) and {name}, or a tuple of them, one per result.
# tapegrad/_out_arg.py's EXACT_OUT_DTYPE, set at import.
cdef dict exact_out_dtype = {}
# How an out of another shape (not empty) is resized: name -> PyTorch's warning for that op, a
# (format string of {shape} {numel} {n} {result_shape} {result_tuple}, its origin in PyTorch's
# sources) pair, or None for no warning (the factories); any other op warns with RESIZED.
# tapegrad/_out_arg.py's OUT_RESIZE_WARNING.
cdef dict out_resize_warning = {}
# The ops that refuse an out their result cannot be cast to with another exception than
# TensorIterator's RuntimeError: name -> (exception type, format string of {out}).
# tapegrad/_out_arg.py's UNCASTABLE_OUT.
cdef dict uncastable_out = {}
cdef tuple RESIZED = ((
    "An output with one or more elements was resized since it had shape {shape}, which does not "
    "match the required output shape {result_shape}. This behavior is deprecated, and in a future "
    "PyTorch release outputs will not be resized unless they have zero elements. You can "
    "explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
    "t.resize_(0)."), "aten/src/ATen/native/Resize.cpp:30")


# The ops whose out PyTorch refuses when it partly shares memory with an input
# (torch.exp(x[:4], out=x[2:])): name -> whether all of it with the same layout is refused too
# (torch.cat([x], out=x)).  tapegrad/_out_arg.py's OVERLAP_CHECKED_OUT.
cdef dict overlap_checked_out = {}
# Of those, the ops that check their out tensor as given, before resizing it (TensorIterator's
# ops, index_select, take, masked_select); the others resize it first and check the resized
# tensor (gather, cat, the scans and sorts ...).  tapegrad/_out_arg.py's OUT_CHECKED_BEFORE_RESIZE.
cdef frozenset out_checked_before_resize = frozenset()
# The ops that refuse a dtype= argument other than their out tensor's dtype (torch.sum(x, 0,
# dtype=torch.int32, out=int16_tensor)), with PyTorch's message for each: name -> template.
# tapegrad/_out_arg.py's DTYPE_ARG_MATCHES_OUT.
cdef dict dtype_arg_matches_out = {}
# The ops whose results PyTorch never differentiates (comparisons, argmax, isin, histc ...): their
# out= takes an operand that requires grad.  tapegrad/_out_arg.py's NONDIFFERENTIABLE_OUT.
cdef frozenset nondifferentiable_out = frozenset()
# The exact-out ops whose complex input gives a real result (abs): a real out takes that result
# in any dtype it casts to, a complex out must have the input's dtype and gets it as complex.
# tapegrad/_out_arg.py's COMPLEX_TO_FLOAT_OUT.
cdef frozenset complex_to_float_out = frozenset()
# The factories (zeros, arange, eye ...): PyTorch's binding names them "aten::zeros()" in its
# autograd refusal and, once out is written, sets out's requires_grad to the call's
# requires_grad argument (default False), so torch.arange(n, out=param) under no_grad leaves
# param frozen.  name -> whether the factory resizes out first, refusing one that requires grad
# whatever its shape (empty).  tapegrad/_out_arg.py's FACTORY_OUT.
cdef dict factory_out = {}
cdef dict kernel_dtype_out = {}
# The ops whose out= overloads take a tensor where their other overloads also take a Python
# number (torch.where(c, x, 0.0, out=o)): name -> check(args, kwargs), which raises PyTorch's
# parser TypeError for such a call before anything else runs, out left as it was.
# tapegrad/_out_arg.py's OUT_TENSOR_ARGUMENTS.
cdef dict out_tensor_arguments = {}


# The nondifferentiable ops whose out PyTorch writes even when it requires grad (its
# comparisons, histc, the special functions without a derivative): tapegrad/_out_arg.py's
# OUT_REQUIRING_GRAD_WRITTEN.
cdef frozenset out_requiring_grad_written = frozenset()
# The ops PyTorch composes of others, whose out= with an operand that requires grad records the
# result instead of refusing (a copy into out, or a node without a derivative): name ->
# record(name, out, operands, fn, kwargs), which returns out.  tapegrad/_out_arg.py's
# RECORDED_OUT.
cdef dict recorded_out = {}
# The name PyTorch's refusal of an out= call that requires grad gives, where it is not the
# function's: the aten op the alias or composite runs (torch.absolute: "abs()", torch.norm:
# "linalg_vector_norm()").  tapegrad/_out_arg.py's OUT_REFUSAL_NAMES.
cdef dict out_refusal_names = {}


def _set_out_tensor_arguments(dict checks):
    global out_tensor_arguments
    out_tensor_arguments = checks


def _set_out_autograd(frozenset requiring_grad_written, dict recorded, dict refusal_names):
    global out_requiring_grad_written, recorded_out, out_refusal_names
    out_requiring_grad_written = requiring_grad_written
    recorded_out = recorded
    out_refusal_names = refusal_names


def _set_out_rules(dict exact_dtype, dict resize_warning, dict uncastable,
                   dict overlap_checked, dict dtype_matches_out, frozenset nondifferentiable,
                   frozenset complex_to_float, dict factories, dict kernel_dtype,
                   frozenset checked_before_resize):
    global exact_out_dtype, out_resize_warning, uncastable_out, overlap_checked_out
    global dtype_arg_matches_out, nondifferentiable_out, complex_to_float_out, factory_out
    global kernel_dtype_out, out_checked_before_resize
    out_checked_before_resize = checked_before_resize
    kernel_dtype_out = kernel_dtype
    exact_out_dtype = exact_dtype
    out_resize_warning = resize_warning
    uncastable_out = uncastable
    overlap_checked_out = overlap_checked
    dtype_arg_matches_out = dtype_matches_out
    nondifferentiable_out = nondifferentiable
    complex_to_float_out = complex_to_float
    factory_out = factories


cdef int refuse_out_overlap(tuple outs, tuple operands, object kwargs, bint same_too) except -1:
    """PyTorch's refusal of an out that partly shares memory with a tensor operand (or one in a
    list of them, cat's): the result would depend on the order its elements are written in.  The
    same elements with the same layout (torch.exp(x, out=x)) are the element-wise case, allowed
    unless `same_too`."""
    tensors = []
    for a in operands + (tuple(kwargs.values()) if kwargs else ()):
        if isinstance(a, TensorBase):
            tensors.append(a)
        elif isinstance(a, (tuple, list)):
            tensors.extend(t for t in a if isinstance(t, TensorBase))
    for o in outs:
        for a in tensors:
            check_source_overlap(o._array if isinstance(o, TensorBase) else o,
                                 (<TensorBase>a)._array, same_too)
    return 0


cdef int refuse_resized_view_overlap(TensorBase o, tuple shape, str name, tuple operands,
                                     object kwargs, bint resized) except -1:
    """PyTorch's overlap errors for an out view of another shape than the result's, which
    tapegrad refuses by design (it cannot re-point a view): where PyTorch raises for the
    overlap, tapegrad raises PyTorch's error too.  The ops that check out as given (called with
    `resized` False, before the resize warning, as PyTorch raises before it resizes) look for
    two of its elements sharing memory (an expand()); the others resize it first, warning (a
    view keeps its start, its strides become contiguous), and compare that layout with their
    operands (called with `resized` True)."""
    same_too = overlap_checked_out.get(name)
    if same_too is None or o._base is None:
        return 0
    A = o._array
    if name in out_checked_before_resize:
        if not resized and overlaps_itself(A):
            raise RuntimeError(OVERLAPPING_WRITE)
        return 0
    if not resized:
        return 0
    cdef Py_ssize_t n = 1, k
    for k in shape:
        n *= k
    if n == 0 or A.size == 0:
        return 0
    strides = []
    cdef Py_ssize_t step = A.itemsize
    for k in reversed(shape):
        strides.append(step)
        step *= k
    # (only its addresses are read: overlap checks compare extents, never elements)
    layout = np.lib.stride_tricks.as_strided(A.view(np.ndarray), shape, tuple(reversed(strides)),
                                             writeable=False)
    refuse_out_overlap((layout,), operands, kwargs, same_too)
    return 0


cdef bint promoted_input(tuple operands, object R):
    """Whether the op's input (its first tensor operand that is not a bool condition, as where's)
    has another dtype than its result R."""
    for a in operands:
        if isinstance(a, TensorBase) and (<TensorBase>a)._array.dtype != np.bool_:
            return (<TensorBase>a)._array.dtype != R.dtype
    return False


cdef bint elementwise_input(TensorBase o, tuple operands, tuple result_shape) except -1:
    """Whether out tensor `o` is itself one of the tensor operands of an elementwise op, whose
    result shape is the operands' broadcast shape (maximum(x, y, out=x)): a reduction's or a
    product's out is resized as any other."""
    shapes = [(<TensorBase>a)._array.shape for a in operands if isinstance(a, TensorBase)]
    if not any(a is o for a in operands):
        return False
    try:
        return np.broadcast_shapes(*shapes) == result_shape
    except ValueError:
        return False


# The comparisons take an out of any dtype whatever their operands' (their result is bool):
# their missing kernel speaks whatever the out.
cdef frozenset COMPARISONS = frozenset(
    "eq ne lt le gt ge less less_equal greater greater_equal not_equal".split())


cdef int refuse_out_before_kernel(str name, tuple outs, tuple operands, str missing) except -1:
    """PyTorch checks an elementwise op's out against its operands' promoted dtype before it
    looks up the kernel: for an op with no kernel for that dtype (floor of bools, hypot of
    integers, erf of complex) an out that dtype cannot go to is refused with store_out's error
    (exact_out_dtype's or the cast's), not the missing kernel's NotImplementedError `missing`.
    Called when the op raised that; one out and one or two operands only.  An op's own refusal
    (floor of complex: "floor is not supported ...") comes before the out check and stays."""
    if not missing.startswith('"') or name in COMPARISONS:
        return 0
    if len(outs) != 1 or not 1 <= len(operands) <= 2 or not isinstance(operands[0], TensorBase):
        return 0
    if len(operands) == 2 and not isinstance(operands[1], (TensorBase, bool, int, float, complex)):
        return 0
    promoted = ((<TensorBase>operands[0])._array.dtype if len(operands) == 1
                else result_dtype(operands[0], operands[1]))
    A = (<TensorBase>outs[0])._array
    rule = exact_out_dtype.get(name)
    if isinstance(rule, str) and promoted != A.dtype:
        raise RuntimeError(rule.format(
            name=name, out=scalar_type_name(A.dtype), result=scalar_type_name(promoted),
            out_c=C_TYPE_NAMES.get(A.dtype.name, A.dtype.name),
            result_c=C_TYPE_NAMES.get(promoted.name, promoted.name)))
    if not torch_castable(promoted, A.dtype):
        raise RuntimeError(f"result type {scalar_type_name(promoted)} can't be cast to the "
                           f"desired output type {scalar_type_name(A.dtype)}")
    return 0


cdef int store_out(TensorBase o, object res, str name, tuple operands, object kwargs,
                   object rule=None, Py_ssize_t index=0, bint write=True) except -1:
    """Write result `res` (a tensor) of op `name` on `operands` into out tensor `o`: cast to o's
    dtype if it can be (unless `rule`, PyTorch's message for an op that allows no cast:
    exact_out_dtype), o resized (with PyTorch's warning unless it was empty) to res's shape; a
    refused cast names o's dtype as output_type_name says.  `write` False: the dtype checks
    only."""
    R = (<TensorBase>res)._array
    A = o._array
    if rule is not None and name in complex_to_float_out:
        source = ((<TensorBase>operands[0])._array.dtype
                  if operands and isinstance(operands[0], TensorBase) else None)
        if source is not None and source.kind == "c":
            if A.dtype.kind == "c" and A.dtype != source:
                raise RuntimeError(rule.format(
                    name=name, out=scalar_type_name(A.dtype), result=scalar_type_name(source),
                    out_c=C_TYPE_NAMES.get(A.dtype.name, A.dtype.name),
                    result_c=C_TYPE_NAMES.get(source.name, source.name)))
            rule = None
    cdef bint castable = torch_castable(R.dtype, A.dtype)
    # PyTorch checks an exact op's out dtype first, unless the op promoted its input (clamp of
    # an int64 tensor to 0.5: its cast check speaks first)
    if rule is not None and R.dtype != A.dtype and (castable or not promoted_input(operands, R)):
        raise RuntimeError(rule.format(
            name=name, out=scalar_type_name(A.dtype), result=scalar_type_name(R.dtype),
            out_c=C_TYPE_NAMES.get(A.dtype.name, A.dtype.name),
            result_c=C_TYPE_NAMES.get(R.dtype.name, R.dtype.name)))
    if not castable:
        refusal = uncastable_out.get(name)
        if refusal is not None:
            # (one message, or one per result of a tuple-returning op: eig's eigenvalues and
            # eigenvectors are named apart)
            message = (<tuple>refusal)[1]
            if isinstance(message, tuple):
                message = (<tuple>message)[index]
            raise (<tuple>refusal)[0]((<str>message).format(
                out=scalar_type_name(A.dtype), result=scalar_type_name(R.dtype)))
        raise RuntimeError(f"result type {scalar_type_name(R.dtype)} can't be cast to the desired "
                           f"output type {output_type_name(name, operands, kwargs, A.dtype)}")
    if not write:
        return 0
    if A.shape != R.shape:
        if elementwise_input(o, operands, R.shape):
            # PyTorch's TensorIterator never resizes an out that is also an input (it would be
            # read while resized): the in-place ops' broadcast error instead
            raise RuntimeError(f"output with shape {list(A.shape)} doesn't match the broadcast "
                               f"shape {list(R.shape)}")
        refuse_resized_view_overlap(o, R.shape, name, operands, kwargs, False)
        resized = out_resize_warning.get(name, RESIZED)
        if A.size and resized is not None:
            torch_warn((<str>resized[0]).format(
                shape=list(A.shape), numel=A.size, n=R.size, result_shape=list(R.shape),
                result_tuple=tuple(R.shape)), resized[1])
        if o._base is not None:
            refuse_resized_view_overlap(o, R.shape, name, operands, kwargs, True)
            raise RuntimeError("tapegrad cannot resize a view given as out=; pass a tensor of "
                               f"shape {list(R.shape)}")
        with IeeeResults():
            o._array = R.astype(A.dtype, copy=True)
    else:
        with IeeeResults():
            np.copyto(writable(A), R, casting="unsafe")
    bump_version(o)
    return 0


cdef object write_out(str name, object out, tuple operands, object fn, dict kwargs):
    """fn(*operands, **kwargs) written into `out`, PyTorch's out= semantics: not differentiable
    (refused when grad mode is on and out or an operand requires grad), each result cast to its
    out tensor's dtype if it can be, and out resized (with PyTorch's warning unless it was
    empty) to the result's shape.  `out` is one tensor, or a tuple of them for a function that
    returns several (max along a dim, sort, topk ...).  Returns out (a tuple of several as the
    function's own result type)."""
    cdef tuple outs
    if isinstance(out, TensorBase):
        outs = (out,)
    elif isinstance(out, (tuple, list)) and all(isinstance(o, TensorBase) for o in out):
        outs = tuple(out)
    elif isinstance(out, (tuple, list)):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not "
                        f"{type_name(out)}")
    else:
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type_name(out)}")
    cdef bint out_grad, operand_grad
    if grad_enabled():
        out_grad = name not in out_requiring_grad_written and any_requires_grad(outs)
        operand_grad = name not in nondifferentiable_out and (
            any_requires_grad(operands) or (kwargs and any_requires_grad(kwargs)))
        if operand_grad and not out_grad:
            record = recorded_out.get(name)
            if record is not None:
                return record(name, out, operands, fn, kwargs)
    else:
        out_grad = operand_grad = False
    if out_grad or operand_grad:
        raise RuntimeError(f"{'aten::' if name in factory_out else ''}"
                           f"{out_refusal_names.get(name, name)}(): functions with "
                           "out=... arguments don't support automatic differentiation, but one "
                           "of the arguments requires grad.")
    same_too = overlap_checked_out.get(name)
    if same_too is not None:
        refuse_out_overlap(outs, operands, kwargs, same_too)
    try:
        with no_grad_scope():
            res = fn(*operands, **(kwargs or {}))
    except NotImplementedError as error:
        refuse_out_before_kernel(name, outs, operands, str(error))
        raise
    results = tuple(res) if isinstance(res, tuple) else (res,)
    if len(results) != len(outs) or not all(isinstance(r, TensorBase) for r in results):
        raise TypeError(f"{name}(): argument 'out' must be "
                        + ("Tensor" if len(results) == 1 else
                           f"tuple of {len(results)} Tensors") + f", not {type_name(out)}")
    cdef Py_ssize_t k
    rule = exact_out_rule(name, operands, kwargs)
    if isinstance(rule, tuple) and len(rule) != len(outs):
        # (a rule per result of the op's tuple-returning overload, max(x, dim)'s: its
        # single-result overloads, max(x) and max(x, y), cast into out as any op)
        rule = None
    if len(outs) > 1:
        # every out's dtype checked before any is written: PyTorch refuses torch.min(x, 0,
        # out=(values, float32_indices)) leaving values as they were (fuzz 66900109)
        for k in range(len(outs)):
            store_out(<TensorBase>outs[k], results[k], name, operands, kwargs,
                      rule[k] if isinstance(rule, tuple) else rule, k, False)
        # ... and every out of the result's shape writable: PyTorch refuses an expanded one
        # (torch.max(x, 0, out=(values, indices.expand(...)))) before writing any; values were
        # written, then the indices refused (fuzz 67200527, 67200581).  Not sort's: its kernel
        # writes the sorted values, then refuses the indices.
        for k in range(len(outs)):
            if name != "sort" and \
                    (<TensorBase>outs[k])._array.shape == (<TensorBase>results[k])._array.shape:
                writable((<TensorBase>outs[k])._array)
    for k in range(len(outs)):
        store_out(<TensorBase>outs[k], results[k], name, operands, kwargs,
                  rule[k] if isinstance(rule, tuple) else rule, k)
    if isinstance(out, TensorBase):
        return out
    if type(res) is tuple:
        return outs
    # (a namedtuple takes its fields as arguments; a return type as torch.return_types' one
    # sequence, and is given back as its "<name>_out" twin, as PyTorch's out= overloads do)
    if hasattr(res, "_make"):
        return type(res)._make(outs)
    plain = type(res)
    return getattr(_sys.modules[plain.__module__], plain.__name__ + "_out", plain)(outs)


# The clamp family: exact out dtype with number bounds only (see exact_out_rule).
cdef frozenset CLAMP_FAMILY = frozenset(("clamp", "clip", "clamp_min", "clamp_max"))


cdef object exact_out_rule(str name, tuple operands, object kwargs):
    """exact_out_dtype's rule for op `name` on these operands, or None.  The clamp family refuses
    an out of another dtype only with number bounds (its clamp.Scalar kernel checks out's
    dtype): with a tensor bound it is TensorIterator's clamp.Tensor, which casts into out as any
    elementwise op (torch.clamp(x_float32, min=t, out=float64) computes)."""
    rule = exact_out_dtype.get(name)
    if rule is None or name not in CLAMP_FAMILY:
        return rule
    for a in operands[1:] + tuple(v for k, v in (kwargs or {}).items() if k != "out"):
        if isinstance(a, TensorBase):
            return None
    return rule


def _exact_out_rule(str name, tuple operands, dict kwargs or None):
    """exact_out_rule, for the bfloat16 facade's own out= check (tapegrad/_bfloat16.py)."""
    return exact_out_rule(name, operands, kwargs)


def _write_out(str name, out, tuple operands, fn, dict kwargs or None):
    """For Python-level functions that handle out= themselves (tapegrad/_out_arg.py): see
    write_out."""
    return write_out(name, out, operands, fn, kwargs)


cdef extern from "out_arg_call.h":
    object tg_out_arg_type(object slow_call)
    object tg_out_arg_set_signature_hook(object hook)
    int tg_out_arg_set_meta(object tensor_cls, object parameter_cls, object entry) except -1
    int tg_out_arg_set_capture_route(object route) except -1
    object tg_out_arg_capture_route()
    int tg_out_arg_set_argument_error(object ndarray_type, object handler, object binding,
                                      object method) except -1
    object tg_method_type(object tensor_base)
    int tg_set_profiler(object open_event, object close_event) except -1
    int tg_set_subclass_dispatch(object types, object tensor_base, object handler) except -1
    int tg_subclass_dispatch_set_off(int off)
    int tg_set_function_modes(object handler, Py_ssize_t depth) except -1
    int tg_autocast_set_on(int on)
    int tg_autocast_set_handler(object handler) except -1
    int tg_set_dispatching_dtype(object dtype, object handler) except -1


cdef int refuse_dtype_other_than_out(str name, object dtype, object out_dt) except -1:
    """PyTorch's refusal of an explicit dtype= that is not out's dtype, for the ops that compute
    in the dtype they are given (sums, means, factories): it would otherwise be silently
    overridden by out's."""
    template = dtype_arg_matches_out.get(name)
    if template is None:
        return 0
    asked = to_np_dtype(dtype, name)
    if asked != out_dt:
        raise RuntimeError((<str>template).format(
            dtype=scalar_type_name(asked), out=scalar_type_name(out_dt),
            dtype_c=C_TYPE_NAMES.get(asked.name, asked.name),
            out_c=C_TYPE_NAMES.get(out_dt.name, out_dt.name)))
    return 0


cdef int refuse_kernel_out_dtype(tuple kernel, object input, TensorBase out) except -1:
    """An out= (no dtype=) that an op's floating-only kernel cannot run in (KERNEL_DTYPE_OUT,
    tapegrad/_out_arg.py), refused as PyTorch does."""
    if not isinstance(input, TensorBase):
        return 0                        # (the op's own refusal of its argument)
    name, not_floating = kernel
    kind = (<TensorBase>input)._array.dtype.kind
    if kind != "f":
        if not_floating is not None and kind != "c":
            raise RuntimeError(not_floating)
        return 0
    if out._array.dtype.kind != "f":
        raise NotImplementedError(
            f"\"{name}\" not implemented for '{scalar_type_name(out._array.dtype)}'")
    return 0


def _call_with_out(fn, str name, bint dtype_from_out, tuple args, dict kwargs):
    """A call of WithOut that names out (out_arg_call.h forwards the others to fn untouched):
    out=None is a plain call; `dtype_from_out` functions compute in out's dtype unless given
    one."""
    if kwargs["out"] is not None:
        check = out_tensor_arguments.get(name)
        if check is not None:
            check(name, args, kwargs)
    out = kwargs.pop("out")
    if out is None:
        return fn(*args, **kwargs)
    resizes_first = factory_out.get(name)
    if resizes_first and isinstance(out, TensorBase) and (<TensorBase>out)._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    dtype = kwargs.get("dtype")
    if isinstance(out, TensorBase):
        if dtype is None:
            kernel = kernel_dtype_out.get(name)
            if kernel is not None:
                refuse_kernel_out_dtype(<tuple>kernel, args[0] if args else kwargs.get("input"),
                                        <TensorBase>out)
            if dtype_from_out:
                kwargs["dtype"] = (<TensorBase>out).dtype
        else:
            refuse_dtype_other_than_out(name, dtype, (<TensorBase>out)._array.dtype)
    result = write_out(name, out, args, fn, kwargs)
    if resizes_first is not None:
        _factory_requires_grad(out, kwargs.get("requires_grad", False))
    return result


def _factory_requires_grad(TensorBase out, requires_grad):
    """A factory's out after it was written, as PyTorch's binding leaves it: its requires_grad
    set to the call's requires_grad (a leaf's; a graph result keeps requiring grad)."""
    if not is_leaf_c(out):
        return out
    if requires_grad and out._array.dtype.kind not in "fc":
        raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                           "gradients")
    out._set_requires_grad(bool(requires_grad))
    return out


# WithOut(name, fn, dtype_from_out): a public function given PyTorch's keyword-only out=
# (tapegrad/_out_arg.py wraps each one that takes it in PyTorch).  A C type (out_arg_call.h) so
# that a call without out reaches the function through vectorcall at the cost of one indirect
# call; its attributes: __out_arg_of__ (the function: what replay's routes map back to), name,
# dtype_from_out (the function computes in out's dtype: factories, sums), and a __dict__.
WithOut = tg_out_arg_type(_call_with_out)


def _set_out_signature_hook(hook):
    """hook(entry) -> the inspect.Signature of a WithOut entry that takes out= (computed on its
    first inspect.signature, out_arg_call.h)."""
    return tg_out_arg_set_signature_hook(hook)


def _set_public_call_meta(tensor_cls, parameter_cls, entry):
    """Called by tapegrad/_meta.py at the first meta tensor (and when its Parameter class is
    made): WithOut calls with a meta argument go to entry("call", (function, name, args,
    kwargs)) from then on (out_arg_call.h)."""
    tg_out_arg_set_meta(tensor_cls, parameter_cls, entry)


def _set_subclass_dispatch(set types, handler):
    """Called by tapegrad/overrides.py at the first Tensor subclass that keeps the
    __torch_function__ protocol: public functions' and Tensor methods' calls with an instance of
    a type in `types` (a set it keeps adding to) go to handler(entry, args, kwargs) from then on
    (out_arg_call.h)."""
    tg_set_subclass_dispatch(types, TensorBase, handler)


def _set_function_modes(handler, Py_ssize_t depth):
    """Called by tapegrad/overrides.py as this thread's torch function mode stack changes:
    while `depth` > 0, public functions' and Tensor methods' calls go to handler(entry, args,
    kwargs) (out_arg_call.h)."""
    tg_set_function_modes(handler, depth)


def _set_dispatching_dtype(dtype, handler):
    """Called by tapegrad/_bfloat16.py when torch.bfloat16 is first used: a public function's or
    Tensor method's call with `dtype` among its arguments (dtype=torch.bfloat16) goes to
    handler(entry, args, kwargs), the subclass handler (out_arg_call.h), from then on."""
    tg_set_dispatching_dtype(dtype, handler)


def _subclass_dispatch_set_off(off):
    """Turns that dispatch off (True) or on (False) for this thread, or leaves it (None);
    returns the previous setting."""
    return bool(tg_subclass_dispatch_set_off(-1 if off is None else (1 if off else 0)))


cdef int subclass_dispatch_set_off(int off) noexcept:
    return tg_subclass_dispatch_set_off(off)


SUBCLASS_DISPATCH_SET_OFF = subclass_dispatch_set_off     # the core's slot (ops_registry.pxi)


def _capture_route():
    """The route WithOut calls go to while a capture runs, else None (out_arg_call.h)."""
    return tg_out_arg_capture_route()


def _set_argument_error(handler, binding, method):
    """Called once by tapegrad/_public_calls.py: a public function's call with an ndarray among
    its arguments raises handler(function, name, error, args, kwargs)'s exception instead of its
    outcome (error: what it raised, or None), unless that returns None; an in-place function's
    before it runs.  A call without one that raised a TypeError raises binding(entry, name,
    error, args, kwargs)'s instead, unless that returns None; a TensorMethod's call that raised
    one, method(entry, name, error, args, kwargs)'s (out_arg_call.h)."""
    tg_out_arg_set_argument_error(np.ndarray, handler, binding, method)


# TensorMethod(name, fn): a method of Tensor (tapegrad/_public_calls.py install_methods), a C
# method descriptor that calls fn with the caller's vector and hands a call that raised a
# TypeError to method_error, for PyTorch's wording of a method's argument errors.
TensorMethod = tg_method_type(TensorBase)


def _set_profiler(open_event, close_event):
    """Called by tapegrad/profiler.py when the first profiler starts and the last one stops
    (None, None): while set, every public call, Tensor method, operator and backward node is an
    event open_event(name, operands) -> token ... close_event(token) (src/tapegrad/profiling.pxi:
    the entries' pointers and the core's flag, set together)."""
    if open_event is None:
        tg_set_profiler(None, None)
        set_core_profiler(None, None)
    else:
        tg_set_profiler(open_event, close_event)
        set_core_profiler(open_event, close_event)


# -- CPU autocast (tapegrad/_autocast.py) ---------------------------------------------------------
# The entries of the ops on PyTorch's CPU autocast lists test this thread's flag (out_arg_call.h);
# Tensor.__matmul__, which is no entry, tests AUTOCAST_THREADS, the number of threads whose flag
# is on (one int read outside autocast), and then calls the public matmul's entry, which tests
# the thread's own flag.

cdef int AUTOCAST_THREADS = 0
cdef object AUTOCAST_MATMUL = None


def _set_autocast_handler(handler, matmul_entry):
    """Called once by tapegrad/_autocast.py: an autocast-listed entry's call while this thread's
    flag is on goes to handler(entry, policy, args, kwargs); `matmul_entry` is the public
    matmul, which Tensor.__matmul__ calls while some thread autocasts."""
    global AUTOCAST_MATMUL
    tg_autocast_set_handler(handler)
    AUTOCAST_MATMUL = matmul_entry


def _set_autocast_on(on):
    """Turn this thread's autocast flag on or off (None: leave it); returns the previous
    setting.  tapegrad/_autocast.py's state keeps it equal to is_autocast_enabled('cpu')."""
    global AUTOCAST_THREADS
    cdef int previous = tg_autocast_set_on(-1 if on is None else (1 if on else 0))
    if on is not None and bool(on) != bool(previous):
        AUTOCAST_THREADS += 1 if on else -1
    return bool(previous)


def _exclude_autocast(exclude):
    """While an autocast policy runs its op: this thread's flag off (exclude True) or back to
    what it was (exclude False), leaving AUTOCAST_THREADS as it is (the thread's region goes on,
    only its op's inner calls are not cast, as PyTorch's excluded dispatch key)."""
    tg_autocast_set_on(0 if exclude else 1)


def _set_capture_route(route):
    """Called by tapegrad.compile around a capture (tapegrad/replay.py): WithOut calls without
    out= go to route(function, args, kwargs) (capture.pxi's _capture_op_call) while it is set;
    None ends it (out_arg_call.h)."""
    tg_out_arg_set_capture_route(route)


# -- in-place view ops (unsqueeze_, t_, as_strided_ ...) on tensors in a graph -------------------

def _inplace_view(TensorBase self, fn, tuple args):
    """self becomes fn(self, *args), a view op's result, in place, where autograd records it
    (self requires grad, grad mode on): as PyTorch's in-place view ops, the view op is recorded
    on self's history and self becomes its output, with the view's shape and strides over the
    same storage; self's other views are rebased onto the new history when next used.  The
    caller handles the unrecorded case.  Returns self."""
    fresh_operands(self, None)
    view_reads_base(self, False)
    check_inplace(self, True, True)
    result = fn(self, *args)
    if not isinstance(result, TensorBase) or (<TensorBase>result)._node < 0:
        raise RuntimeError("tapegrad: the view op of an in-place view op recorded nothing")
    cdef Py_ssize_t node = (<TensorBase>result)._node
    TAPE.recs[node].op = inplace_view_op(TAPE.recs[node].op)     # (its name: TransposeBackward1)
    self._array = (<TensorBase>result)._array
    bump_version(self)
    if self._base is not None:
        # (a layout change writes no value: the view's new history is current, not a history
        # that an unrecorded write made stale, see written_unrecorded)
        self._view_version = version_of(self).value
    adopt_record(self, <TensorBase>result)
    return self


# -- named in-place methods ----------------------------------------------------------------------

from tapegrad._deprecated_overloads import NOT_GIVEN as SCALAR_FIRST_NOT_GIVEN, scalar_first

def add_(TensorBase self, other, other_after_scale=SCALAR_FIRST_NOT_GIVEN, *, alpha=1):
    """self += alpha * other, in place (add_(alpha, other): PyTorch's deprecated form)."""
    if other_after_scale is not SCALAR_FIRST_NOT_GIVEN:
        alpha, (other,) = scalar_first("add_", "alpha", other, alpha, (other_after_scale,))
    values = half_alpha_values(self, other, alpha, False)     # (before self is written)
    return with_half_alpha_values(named_result(
        inplace_binary(OP_ADD, self, scaled_operand("add_", self, other, alpha)), "add_", self,
        other), values)

def sub_(TensorBase self, other, other_after_scale=SCALAR_FIRST_NOT_GIVEN, *, alpha=1):
    """self -= alpha * other, in place (sub_(alpha, other): PyTorch's deprecated form)."""
    if other_after_scale is not SCALAR_FIRST_NOT_GIVEN:
        alpha, (other,) = scalar_first("sub_", "alpha", other, alpha, (other_after_scale,))
    values = half_alpha_values(self, other, alpha, True)     # (before self is written)
    return with_half_alpha_values(named_result(
        inplace_binary(OP_SUB, self, scaled_operand("sub_", self, other, alpha)), "sub_", self,
        other), values)

def mul_(TensorBase self, other):
    """self *= other, in place (other broadcast to self's shape; the product must cast to
    self's dtype): returns self.  ``t = tapegrad.ones(2); t.mul_(3)`` makes t ``tensor([3.,
    3.])``."""
    return named_result(inplace_binary(OP_MUL, self, other), "mul_", self, other)

def div_(TensorBase self, other):
    return named_result(inplace_binary(OP_DIV, self, other), "div_", self, other)

cdef bint plain_copy(TensorBase self, TensorBase src) except -1:
    """copy_ of an unrecorded source of self's shape and kind into a writeable, dense self (the
    optimizers' and the in-place methods' write-back: `target.copy_(tau * p + ...)`): the checks
    every in-place write makes (the leaf quirk and view rebase, the in-place refusals, source
    overlap), then numpy's copy, without setitem_op's indexing path (a third of the time).
    False, having written nothing, where that path is needed."""
    A = self._array
    V = src._array
    if not (cnp.PyArray_Check(A) and cnp.PyArray_Check(V)):
        return False
    cdef cnp.ndarray a = <cnp.ndarray>A
    if (not cnp.PyArray_ISWRITEABLE(a) or not cnp.PyArray_IS_C_CONTIGUOUS(a)
            or A.shape != V.shape or (V.dtype.kind == "c" and A.dtype.kind != "c")):
        return False                    # (an expanded self, broadcasting, complex to real: below)
    fresh_operands(self, src)
    check_inplace(self, False, True)
    check_source_overlap(A, V, False)
    if cnp.PyArray_DESCR(a) is cnp.PyArray_DESCR(<cnp.ndarray>V) or A.dtype == V.dtype:
        cnp.PyArray_CopyInto(a, <cnp.ndarray>V)
    else:
        with IeeeResults():             # (numpy's unsafe cast, as copy_'s; silent as PyTorch's)
            cnp.PyArray_CopyInto(a, <cnp.ndarray>V)
    bump_version(self)
    return True


def copy_(TensorBase self, other, non_blocking=False):
    """Copy other's values (broadcast to self's shape, cast to self's dtype) into self (PyTorch
    2.13 names the source `other`)."""
    src = other
    refuse_meta_source(self, src)
    if ((src is self or isinstance(src, TensorBase)
            and same_data(self._array, (<TensorBase>src)._array))
            and not records(self, src)):
        # (PyTorch's kernel returns at once: nothing is written, no overlap is checked; the
        # version still moves)
        bump_version(self)
        return self
    # (a copy onto itself that autograd sees is an in-place op in PyTorch, its checks and
    # record included: a leaf's view copied onto itself is refused; fuzz seed 50015864)
    if isinstance(src, TensorBase):
        if (<TensorBase>src)._array.dtype.kind == "c":
            # (into a real tensor the real part is written, and the gradient flows back to it)
            src = complex_cast_to(src, self._array.dtype.kind)
        if not records(self, src) and plain_copy(self, <TensorBase>src):
            return self
        # PyTorch broadcasts src to self's shape as a binary op would (no leading 1s dropped)
        shape = self._array.shape
        out_shape = broadcast_shapes_torch(shape, (<TensorBase>src)._array.shape)
        if out_shape != shape:
            raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast "
                               f"shape {list(out_shape)}")
    elif isinstance(src, (bool, int, float, complex, np.bool_, np.number)):
        if isinstance(src, (complex, np.complexfloating)):
            src = complex_cast_to(src, self._array.dtype.kind)
    else:
        raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not "
                        f"{type_name(src)}")
    if isinstance(src, TensorBase):
        # (copy_ compares the source as given, before broadcasting it: PyTorch's copy_)
        check_source_overlap(self._array, (<TensorBase>src)._array, False)
    setitem_op(self, Ellipsis, src, True, True)
    return self

def _adopt_in_place_result(TensorBase self, TensorBase result):
    """Finish `self.<op>_()` computed out of place as `result` (from a clone of self) by making
    self the op's output, as PyTorch's in-place ops are: result's values written into self's
    storage, result's record becoming self's, and an output the record saved for backward
    (sqrt_, tanh_, exp_, sigmoid_ save theirs) becoming self's storage under self's version.
    Through a copy_ record instead, a second derivative reaches the op's saved output by a
    tensor that is not self, so self's retained .grad misses it, and a later write into self
    would go unnoticed by the graph VJP, which reads the live self.  Returns False (nothing
    done) where that does not apply: self a view, or a tensor requiring grad without a record,
    or result not a fresh recorded tensor of self's dtype and shape; the caller then writes
    with copy_.  A self that does not require grad adopts the record too: PyTorch's
    `zeros(n).index_copy_(0, i, w)` is the op's output (IndexCopyBackward0), not a copy_."""
    if (self._base is not None or (self._node < 0 and self._requires_grad)
            or result._base is not None
            or result._node < 0 or result is self or not grad_enabled()
            or result._array.dtype != self._array.dtype
            or result._array.shape != self._array.shape):
        return False
    cdef object R = result._array
    cdef Record* r = &TAPE.recs[result._node]
    cdef int j
    for j in range(MAX_SAVED):
        # a saved array that merely shares the output's memory cannot be moved onto self's
        if (r.saved[j] != NULL and <object>r.saved[j] is not R and cnp.PyArray_Check(<object>r.saved[j])
                and np.shares_memory(<object>r.saved[j], R)):
            return False
    check_inplace(self, True)
    write_result(self, R)
    bump_version(self)
    r = &TAPE.recs[result._node]        # (re-fetched: the calls above ran Python code)
    for j in range(MAX_SAVED):
        if r.saved[j] != NULL and <object>r.saved[j] is R:
            Py_XDECREF(r.ver[j])
            r.ver[j] = NULL
            Py_DECREF(R)                # the slot's reference (R itself is held by `result`)
            r.saved[j] = NULL
            keep_saved(r, j, self._array, self)
    adopt_record(self, result)
    return True

def _fresh_for_write(TensorBase self):
    """Before a Python-level in-place op (Tensor.<op>_ computed out of place) reads self's
    autograd state: PyTorch's leaf quirk for a stale view without history, then the rebase
    (fresh_operands), as the compiled in-place ops do (fuzz seed 53001126: view[::2] = leaf,
    then view.abs_() raised in PyTorch, ran here)."""
    fresh_operands(self, None)


def _mark_written(TensorBase self):
    """For code that writes a tensor's array directly (optimizers, initialisers, under no_grad):
    bump the version so records that saved the old value refuse to use it."""
    bump_version(self)
    return self


def _add_scaled_grads(list params, double alpha):
    """The plain SGD update p += alpha * p.grad (alpha = -lr) of every parameter in `params`
    that has a gradient, in one call: each as optimizer.add_alpha computes it (the fused
    multiply-add kernel of fused_multiply_add, alpha rounded once to the dtype), after bumping
    the parameter's version as _mark_written does.  True when done; False, with nothing
    written, when some parameter or gradient is not a writable C-contiguous float32/float64
    array of the other's shape and dtype (a sparse or complex gradient ...): the caller's
    general path then takes the group, with its checks and errors.  (torch.optim.SGD's update
    in Python cost ~8 calls per parameter, ~30 us of the MLP step's on a loaded host.)"""
    cdef list ready = []
    cdef int tp = -1, tq = -1
    cdef TensorBase p
    for item in params:
        if not isinstance(item, TensorBase):
            return False
        g = item.grad                   # (the property, as the general path reads it)
        if g is None:
            continue
        if not isinstance(g, TensorBase):
            return False
        P = (<TensorBase>item)._array
        G = (<TensorBase>g)._array
        if not (kernel_array(P, &tp) and kernel_array(G, &tq) and tp == tq
                and same_shape(<cnp.ndarray>P, <cnp.ndarray>G)
                and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>P)):
            return False
        ready.append((item, P, G))
    cdef float alpha32 = <float>alpha
    cdef cnp.ndarray A, B
    for item, P, G in ready:
        bump_version(<TensorBase>item)
        A = <cnp.ndarray>P
        B = <cnp.ndarray>G
        if cnp.PyArray_TYPE(A) == cnp.NPY_FLOAT64:
            tg_fma_f64(cnp.PyArray_SIZE(A), <const double*>cnp.PyArray_DATA(B), &alpha, 0,
                       <const double*>cnp.PyArray_DATA(A), <double*>cnp.PyArray_DATA(A))
        else:
            tg_fma_f32(cnp.PyArray_SIZE(A), <const float*>cnp.PyArray_DATA(B), &alpha32, 0,
                       <const float*>cnp.PyArray_DATA(A), <float*>cnp.PyArray_DATA(A))
    return True


# zero_, fill_, normal_ and uniform_ live with the creation functions (tapegrad/creation.py).
TENSOR_METHODS.update(add_=add_, sub_=sub_, mul_=mul_, div_=div_, copy_=copy_)


# The core's slots for TensorBase's x[key] = v and x += y and the out= argument (ops_registry.pxi).
SETITEM_OP = user_setitem
INPLACE_BINARY = inplace_binary
WRITE_OUT = write_out
