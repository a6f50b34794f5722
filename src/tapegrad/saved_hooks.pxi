# ---------------------------------------------------------------------------------------------
# Saved-tensor hooks (torch.autograd.graph.saved_tensors_hooks, SavedTensor.register_hooks).
#
# While a (pack, unpack) pair is active on a thread, every value a record saves for backward goes
# through pack when it is saved, and what pack returned goes through unpack when the value is
# needed (by the sweep, or by grad_fn._saved_*).  The VJPs never see the difference: the sweep
# works on a private copy of each record (sweep.pxi), and puts the unpacked arrays into that copy.
#
# When: a hook runs Python code, which may record, release records or move the arena, so it cannot
# run inside an op (between record_op and the op's keep() calls a Record* is held).  record_op
# only marks the record (RF_PACK_PENDING) and notes it in the saving thread's own list; the
# packing runs at that thread's next point where no op holds an index: its next op's
# begin_record, the start of its backward, a read of a saved attribute, the exit of the hooks'
# context; not inside a bfloat16 op's computation on its float32 storage (the subclass dispatch
# off), which packs around it instead (flush_packs).  So pack sees every saved value, runs
# before it can matter and, as in PyTorch, always
# on the thread that saved the value: a thread flushes only its own list.  Another thread's
# backward that reaches a record still pending uses the value as saved (pack has not run, so
# there is nothing to unpack), and leaves the packing to the saving thread.  Only pack's order
# against the user's own code between two ops may differ from PyTorch (docs/differences.md).
# Nothing of this runs while no hooks are active: record_op tests one int, and begin_record
# tests TAPE.pending_packs (records pending on any thread).
#
# Which tensor pack receives: the input or output tensor itself when the record saved that
# tensor's array, else a tensor on the saved array (sharing the version counter of the storage it
# was saved from).  In-place safety: PyTorch skips its version check for hooked values; tapegrad
# keeps it when the unpacked tensor is still on the saved storage (same version counter), so an
# identity hook cannot turn an in-place write into a silently wrong gradient, and drops it when
# the hook made a copy (save_on_cpu, a hook that clones or writes to disk).
# ---------------------------------------------------------------------------------------------

# threading.local is _thread._local: taken from there, `import tapegrad` does not load the
# threading module (~0.7 CPU-ms of issue 18's import time; the sweep's PASSES use it too).
import _thread
import collections

cdef int SAVED_HOOKS_DEPTH = 0          # hook pairs active on all threads (the one int tested)
cdef object HOOK_STATE = _thread._local()       # .stack: this thread's [(pack, unpack)], .disabled,
                                        # .pending: its deque of (record index, pack, unpack),
                                        # in creation order, .flushing: packing them now
cdef dict PENDING_OWNER = {}            # record index -> the pending entry noted for it last:
                                        # an entry left by a record freed since (whose index a
                                        # record of another thread reuses) is not that record's


cdef bint saved_hooks_on() noexcept:
    """Whether any thread has saved-tensor hooks active (compiled calls then run eagerly)."""
    return SAVED_HOOKS_DEPTH > 0


cdef class PackedSaved:
    """What a record's saved slot holds once packed: pack's result, the unpack hook, and the
    layout of the saved array (the VJP reads the unpacked value as it read the original)."""
    cdef object packed
    cdef object unpack
    cdef tuple shape
    cdef object dtype
    cdef int order                      # 1: C-contiguous, 2: F-contiguous, 0: neither
    cdef int rank                       # when it was packed among its record's values (unpacked
                                        # in the same order, as PyTorch's nodes do)
    cdef bint of_output                 # the value was its record's own output (an in-place
                                        # op on a view reads it through the view, _note_written_view)

    cdef tuple unpacked(self):
        """(tensor unpack returned, its array in the saved layout)."""
        t = _unpack_with_hook(self.unpack, self.packed)
        a = (<TensorBase>t)._array
        if a.shape != self.shape:
            try:
                np.broadcast_shapes(a.shape, self.shape)
            except ValueError:
                # PyTorch's backward formula meets the unpacked value and the gradient (of the
                # saved shape) and refuses them as any elementwise op would
                raise RuntimeError(size_mismatch_message(self.shape, a.shape)) from None
            raise RuntimeError(
                f"saved tensor unpack_hook returned a tensor of shape {list(a.shape)} for a value "
                f"saved with shape {list(self.shape)}: the unpacked tensor must have the saved "
                "tensor's content")
        if a.dtype != self.dtype:
            a = a.astype(self.dtype)
        if self.order == 1 and not a.flags.c_contiguous:
            a = np.ascontiguousarray(a)
        elif self.order == 2 and not a.flags.f_contiguous:
            a = np.asfortranarray(a)
        return t, a


class _RefusedOnUnpack:
    """The unpack of a saved input that cannot be read any more: it raises `message`."""

    def __init__(self, message):
        self.message = message

    def __call__(self, packed):
        raise RuntimeError(self.message)


cdef object refused_on_unpack(object value, int rank, str message):
    """A saved slot in place of array `value` whose unpacking (the record's backward, with the
    record flagged RF_PACKED) raises RuntimeError(message): a saved input whose tensor
    `.data = other` gave a shape the graph's gradient cannot meet (rebind_saved_inputs)."""
    cdef PackedSaved p = PackedSaved.__new__(PackedSaved)
    p.packed = None
    p.unpack = _RefusedOnUnpack(message)
    p.shape = tuple(value.shape)
    p.dtype = value.dtype
    p.order = 0
    p.rank = rank
    p.of_output = False
    return p


cdef int saved_input(Record* r, object value) noexcept:
    """Which input of record r (that requires grad) has `value` as its array, or -1."""
    cdef Py_ssize_t* ins = rec_inputs(r)
    cdef Py_ssize_t k
    cdef int q
    for q in range(r.n_in):
        k = ins[q]
        if k >= 0 and TAPE.recs[k].out != NULL and (<TensorBase>TAPE.recs[k].out)._array is value:
            return q
    return -1


cdef object saved_tensor_for(Py_ssize_t i, object value, PyObject* ver):
    """The tensor pack receives for `value`, saved by record i (see the header)."""
    cdef Record* r = &TAPE.recs[i]
    if r.out != NULL and (<TensorBase>r.out)._array is value:
        return <object>r.out
    cdef int q = saved_input(r, value)
    if q >= 0:
        return <object>TAPE.recs[rec_inputs(r)[q]].out
    # an argument that needs no grad, which the record knows by its array only: the tensor
    # itself when the flush was told the op's arguments (a bfloat16 op's facade: a new tensor on
    # the float32 storage would say float32; PyTorch's pack receives the argument itself)
    for known in getattr(HOOK_STATE, "known", ()):
        if (<TensorBase>known)._array is value:
            return known
    cdef TensorBase t = wrap(value)
    if ver != NULL:
        t._version = <Version>ver
    saved_as = getattr(HOOK_STATE, "saved_as", None)
    if saved_as is not None:
        saved_as(t)             # (the facade's: a view of a bfloat16 input is bfloat16)
    return t


cdef list pack_order(Py_ssize_t i):
    """The saved slots of record i to pack, in PyTorch's order: saved inputs last input first
    (PyTorch's nodes save `other` before `self`), then the rest (the result) in slot order."""
    cdef Record* r = &TAPE.recs[i]
    cdef list keyed = []
    cdef int j, q
    for j in range(MAX_SAVED):
        if r.saved[j] != NULL and cnp.PyArray_Check(<object>r.saved[j]):
            q = saved_input(r, <object>r.saved[j])
            keyed.append((0, -q, j) if q >= 0 else (1, j, j))
    keyed.sort()
    return [key[2] for key in keyed]


cdef int pack_slot(Py_ssize_t i, int j, object pack, object unpack, int rank,
                   bint detached=False) except -1:
    """Run pack on saved value j of record i and keep its result there in place of the value.
    detached: pack receives a graph-free tensor on the value (SavedTensor.register_hooks, as
    PyTorch packs a saved variable's data there)."""
    cdef Record* r = &TAPE.recs[i]
    value = <object>r.saved[j]
    if r.ver[j] != NULL and (<Version>r.ver[j]).value != r.ver_at[j]:
        # written since it was saved by a writer that does not flush first (a direct write
        # into the storage): pack would keep the new value, a wrong gradient; refuse instead
        raise RuntimeError(
            f"one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [torch.{scalar_type_name(value.dtype)}Tensor {list(value.shape)}], which "
            f"is saved by {OP_NAMES[r.op]}, was written before the saved-tensor pack hook ran "
            f"(tapegrad runs pack hooks when the op is done, at the next op: "
            f"docs/differences.md). Hint: clone() the tensor before writing it in place.")
    cdef TensorBase t
    if detached:
        t = wrap(value)
        if r.ver[j] != NULL:
            t._version = <Version>r.ver[j]
    else:
        t = saved_tensor_for(i, value, r.ver[j])
    packed = _pack_with_hook(pack, t)
    r = &TAPE.recs[i]                   # (re-fetched: the hook ran Python code)
    if (r.flags & (RF_FREE | RF_RELEASED)) or r.saved[j] != <PyObject*>value:
        return 0
    cdef PackedSaved ps = PackedSaved.__new__(PackedSaved)
    ps.packed, ps.unpack, ps.rank = packed, unpack, rank
    ps.of_output = r.out != NULL and (<TensorBase>r.out)._array is value
    ps.shape, ps.dtype = value.shape, value.dtype
    ps.order = 1 if value.flags.c_contiguous else (2 if value.flags.f_contiguous else 0)
    Py_INCREF(ps)
    r.saved[j] = <PyObject*>ps
    r.flags |= RF_PACKED
    Py_DECREF(value)                    # the slot's reference (the local `value` holds one)
    return 0


cdef int flush_packs(bint written=False, tuple known=(), object saved_as=None) except -1:
    """Pack the saved values of the records this thread noted since its last flush (see the
    header): pack runs on the saving thread, as PyTorch's.  written: a saved value is about to
    be written or handed out (check_inplace, numpy()), so pack must run now, whatever the
    subclass dispatch says.  known: the tensors the op that saved them was given, which pack
    receives for their arrays (saved_tensor_for); saved_as(t): told of each other tensor made
    for a saved value, before pack receives it (it may give t its dtype's class)."""
    pending = getattr(HOOK_STATE, "pending", None)
    if not pending or getattr(HOOK_STATE, "flushing", False):
        return 0                        # (nothing of ours, or an op run by one of our pack hooks)
    if SUBCLASS_DISPATCH_SET_OFF(-1) and not written:
        # Inside a dtype class's op (tapegrad/_bfloat16.py) the ops run on its float32 storage
        # with the dispatch off: a tensor packed now would say float32 and give numpy() what
        # PyTorch refuses, and the op's result is not yet rounded and marked.  Its facade
        # flushes before it turns the dispatch off; what the op saved is packed after it, at
        # the next point with the dispatch on.
        return 0
    cdef Py_ssize_t i
    cdef int j
    HOOK_STATE.flushing = True
    HOOK_STATE.known = known
    HOOK_STATE.saved_as = saved_as
    TAPE.sweeping += 1                  # pinned: no compaction moves the noted indices
    try:
        while pending:
            entry = pending.popleft()
            i, pack, unpack = entry
            if PENDING_OWNER.get(i) is not entry:
                continue                # the record was freed and its index reused since
            del PENDING_OWNER[i]
            TAPE.pending_packs = len(PENDING_OWNER)
            if not (TAPE.recs[i].flags & RF_PACK_PENDING) or (TAPE.recs[i].flags & RF_FREE):
                continue
            TAPE.recs[i].flags &= ~RF_PACK_PENDING
            for rank, j in enumerate(pack_order(i)):
                if TAPE.recs[i].saved[j] != NULL and cnp.PyArray_Check(
                        <object>TAPE.recs[i].saved[j]):
                    pack_slot(i, j, pack, unpack, rank)
    except BaseException:
        # A pack hook raised: the error surfaces here; the records still waiting keep their
        # values unpacked (their backward reads them as saved), none is left half-done.
        for entry in pending:
            i = entry[0]
            if PENDING_OWNER.get(i) is entry:
                del PENDING_OWNER[i]
                TAPE.recs[i].flags &= ~RF_PACK_PENDING
        pending.clear()
        TAPE.pending_packs = len(PENDING_OWNER)
        raise
    finally:
        TAPE.sweeping -= 1
        HOOK_STATE.flushing = False
        HOOK_STATE.known = ()
        HOOK_STATE.saved_as = None
    return 0


cdef int note_pack(Py_ssize_t i) except -1:
    """record_op's part: record i saves under this thread's innermost hooks, if it has any."""
    stack = getattr(HOOK_STATE, "stack", None)
    if not stack:
        return 0
    pack, unpack = stack[len(stack) - 1]
    pending = getattr(HOOK_STATE, "pending", None)
    if pending is None:
        pending = HOOK_STATE.pending = collections.deque()    # (flush_packs takes from the front)
    entry = (i, pack, unpack)
    TAPE.recs[i].flags |= RF_PACK_PENDING
    pending.append(entry)
    PENDING_OWNER[i] = entry
    TAPE.pending_packs = len(PENDING_OWNER)
    capture_unsupported("saved tensor hooks")
    return 0


cdef int unpack_saved(Record* rec) except -1:
    """Put the unpacked arrays into `rec`, the sweep's private copy of a record (whose saved slots
    the sweep holds a reference to, and drops after the VJP: the same holds for what we put)."""
    cdef int q
    cdef PyObject* old
    cdef list ranked = []
    for q in range(MAX_SAVED):
        if rec.saved[q] != NULL and type(<object>rec.saved[q]) is PackedSaved:
            ranked.append(((<PackedSaved>rec.saved[q]).rank, q))
    ranked.sort()
    for _, q in ranked:
        t, a = (<PackedSaved>rec.saved[q]).unpacked()
        if rec.ver[q] != NULL and (<TensorBase>t)._version is not <object>rec.ver[q]:
            rec.ver[q] = NULL           # a copy made by the hook: no write can reach it
        old = rec.saved[q]
        Py_INCREF(a)
        rec.saved[q] = <PyObject*>a
        Py_DECREF(<object>old)
    return 0


cdef object unpacked_slot(Py_ssize_t i, int j):
    """The tensor unpack gives for saved slot j of record i, or None when it is not packed."""
    if TAPE.recs[i].flags & RF_PACK_PENDING:
        flush_packs()
    cdef PyObject* s = TAPE.recs[i].saved[j]
    if s == NULL or type(<object>s) is not PackedSaved:
        return None
    ps = <object>s                      # (held: the hook may release the record)
    return (<PackedSaved>ps).unpacked()[0]


# -- the Python API (tapegrad/autograd/graph.py) --------------------------------------------------

def _pack_with_hook(pack, TensorBase t):
    """pack(t) as PyTorch calls a pack hook: grad mode off, t not to be written in place
    (also for custom Functions' saved tensors, tapegrad/autograd/function.py)."""
    version = version_of(t).value
    prev = set_grad_disabled(1)
    # (with the subclass dispatch on: a Function's forward saves inside a bfloat16 op, which
    # runs on the float32 storage with it off, and pack must see a bfloat16 tensor there)
    dispatch_was_off = SUBCLASS_DISPATCH_SET_OFF(0)
    try:
        packed = pack(t)
    finally:
        SUBCLASS_DISPATCH_SET_OFF(dispatch_was_off)
        set_grad_disabled(prev)
    if version_of(t).value != version:
        raise RuntimeError(
            "A saved tensor pack hook is modifying its input in place. Tensors provided as input "
            "to pack hook cannot be modified by in-place operations as this can lead to unexpected "
            "side-effects. Please open an issue if you need to perform in-place operations on the "
            "input to a pack hook.")
    return packed


def _unpack_with_hook(unpack, packed):
    """unpack(packed), which must give a tensor."""
    t = unpack(packed)
    if not isinstance(t, TensorBase):
        raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got "
                        f"result of type {type_name(t)}")
    return t


def _saved_hooks_push(pack_hook, unpack_hook):
    """Make (pack_hook, unpack_hook) this thread's innermost saved-tensor hooks."""
    global SAVED_HOOKS_DEPTH
    disabled = getattr(HOOK_STATE, "disabled", None)
    if disabled is not None:
        raise RuntimeError(disabled)
    if not callable(pack_hook) or not callable(unpack_hook):
        raise TypeError("saved_tensors_hooks: pack_hook and unpack_hook must be callables, got "
                        f"{type_name(pack_hook)} and {type_name(unpack_hook)}")
    flush_packs()                       # what was saved before belongs to the outer hooks
    stack = getattr(HOOK_STATE, "stack", None)
    if stack is None:
        stack = HOOK_STATE.stack = []
    stack.append((pack_hook, unpack_hook))
    SAVED_HOOKS_DEPTH += 1


def _saved_hooks_pop():
    """Leave the innermost hooks (what was saved under them is packed now)."""
    global SAVED_HOOKS_DEPTH
    try:
        flush_packs()
    finally:
        HOOK_STATE.stack.pop()
        SAVED_HOOKS_DEPTH -= 1


def _saved_hooks_active():
    """This thread's innermost (pack, unpack), or None."""
    stack = getattr(HOOK_STATE, "stack", None)
    return stack[len(stack) - 1] if stack else None


def _saved_hooks_disable(message):
    """Refuse saved-tensor hooks on this thread with `message` (None: allow them again); returns
    the previous setting.  Refused too while hooks are active, as PyTorch does."""
    prev = getattr(HOOK_STATE, "disabled", None)
    if message is not None and getattr(HOOK_STATE, "stack", None):
        raise RuntimeError(message)
    HOOK_STATE.disabled = message
    return prev


def _flush_saved_packs(known=(), saved_as=None):
    """Pack what this thread's ops saved since its last flush; `known`: the tensors among the
    last op's arguments (pack receives them for their arrays, not a new tensor on each);
    saved_as: flush_packs's."""
    flush_packs(False, tuple(t for t in known if isinstance(t, TensorBase)), saved_as)
