# ---------------------------------------------------------------------------------------------
# Views and version counters: the bookkeeping every op family shares (the in-place ops themselves
# are ops_inplace.pxi, their own extension module).
#
# Every in-place write bumps the storage's version counter (bump_version), so a record that saved
# the old value raises PyTorch's "modified by an inplace operation" error instead of computing a
# wrong gradient.  Other views of a base whose history a recorded write replaced still carry the
# old history.  As in PyTorch, such a stale view is rebased when next used (as an op input, or
# when its autograd state is read): it becomes an AsStridedBackward0 view of the base's current
# history, so its gradient flows through the write.  Staleness costs nothing on the per-op path
# of non-views: a base counts its rewritten histories (_gen), a view remembers the count it was
# derived at, and only a view (t._base set) compares the two (refresh_view).
#
# A write no record describes (under no_grad, or into a tensor that does not require grad) also
# makes a view with a history stale, as PyTorch regenerates a view's grad_fn whenever its
# storage's version moved since the grad_fn was made (its NOTE [ View + Inplace detection ]): the
# view then reads the base's history from that point, and its retain_grad() follows it, so the
# ops that used the view before the write no longer feed the view's retained .grad.  A view
# remembers the version its history was made at (t._view_version, also set at its creation).
# ---------------------------------------------------------------------------------------------


import weakref


# A view rebased onto its base's new history (refresh_view): an index of the base.  Its VJP is
# the index family's (ops_index.pxi installs it into the op table when its module loads).
OP_AS_STRIDED = register_op("AsStridedBackward0", NULL)

# The marker, in an AsStridedBackward0 record's aux, of a view that reads its base's storage as
# another dtype (.real / .imag / view_as_real of a complex base, view_as_complex of a real one):
# its key indexes the base's real numbers, and its gradient's real numbers are scattered there.
# For any such view that is the whole gradient: with PyTorch's convention (z.grad = dL/dx +
# i dL/dy) a gradient lies in memory as the values it is the gradient of.
REINTERPRETED = "real numbers"


cdef inline bint reinterprets(TensorBase t) noexcept:
    """Whether view t reads its base's storage as another dtype."""
    return t._base is not None and cnp.PyArray_Check(t._array) and cnp.PyArray_Check(
        (<TensorBase>t._base)._array) and cnp.PyArray_TYPE(<cnp.ndarray>t._array) != \
        cnp.PyArray_TYPE(<cnp.ndarray>(<TensorBase>t._base)._array)


def _real_parts(arr):
    """Array arr as real numbers, on its memory: a complex one as its (..., 2) pairs (real part,
    imaginary part), a real one itself."""
    arr = np.asarray(arr)
    if arr.dtype.kind != "c":
        return arr
    # A size-1 last dim of stride one complex element, read as two reals: a numpy view whose
    # .base chain leads to arr's memory owner, so storage_offset() and untyped_storage() see
    # the storage (numpy's stride_tricks.as_strided hides it behind a buffer object).
    return np.expand_dims(arr, -1).view(arr.real.dtype)


# PyTorch refuses in-place writes (with grad mode on) to a view that is not an ordinary one:
# a view taken in no_grad (t._gen & 1), an output of a function that returns several views
# (split, chunk, unbind, or a custom Function with several differentiable outputs:
# VIEW_MULTI_OUTPUT), the one differentiable output of a custom Function when it is a view
# (VIEW_IN_CUSTOM_FUNCTION: autograd's view+inplace handling would bypass the Function's
# backward), and a view taken of any of these (the creation is inherited).  It also refuses to use such a view once its storage was written after the view
# was taken (t._view_version), by any write: through the base, another view, or the view itself
# under no_grad.  view_refusal names the case as PyTorch's message does.

cdef str MULTI_OUTPUT_RULE = (
    " This view is the output of a function that returns multiple views. Such functions do not "
    "allow the output views to be modified inplace. You should replace the inplace operation by "
    "an out-of-place one.")

cdef str CUSTOM_FUNCTION_RULE = (
    " This view was created inside a custom Function (or because an input was returned as-is) "
    "and the autograd logic to handle view+inplace would override the custom backward associated "
    "with the custom Function, leading to incorrect gradients. This behavior is forbidden. You "
    "can fix this by cloning the output of the custom Function.")

cdef str NO_GRAD_RULE = (
    " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your "
    "code by moving both the view and the inplace either both inside the no_grad block (if you "
    "don't want the inplace to be tracked) or both outside (if you want the inplace to be "
    "tracked).")


cdef str view_refusal(TensorBase t, bint indirect):
    """PyTorch's message refusing a write into view t (indirect: its storage was written since t
    was taken, and t's history is being read)."""
    modified = "its base or another view of its base has been" if indirect else "is being"
    cdef bint multi = t._view_kind == VIEW_MULTI_OUTPUT and not (t._gen & 1)
    cdef bint custom = t._view_kind == VIEW_IN_CUSTOM_FUNCTION
    cdef bint has_fn = not is_leaf_c(t)
    if has_fn:
        # (a custom Function's output is named by its Function, as PyTorch names the node)
        name = type(function_ctx_of(t._node)).__name__ if TAPE.recs[t._node].op == OP_FN_OUTPUT \
            else grad_fn_name(&TAPE.recs[t._node])
        cut = name.rfind("Backward")
        head = f"Output {t._view_output if multi else 0} of {name[:cut] if cut > 0 else name}"
    if (multi or custom) and has_fn:
        msg = f"{head} is a view and {modified} modified inplace."
    else:
        prefix = f"{head} is a view of a view which was created in" if has_fn else \
            "A view was created in"
        msg = f"{prefix} no_grad mode and {modified} modified inplace with grad mode enabled."
    return msg + (MULTI_OUTPUT_RULE if multi else CUSTOM_FUNCTION_RULE if custom and has_fn
                  else NO_GRAD_RULE)


cdef inline bint special_view(TensorBase t) noexcept:
    """Whether view t is one PyTorch refuses to write in place (taken in no_grad, an output of
    a multi-output view function, or a view of either)."""
    return t._base is not None and ((t._gen & 1) or t._view_kind != VIEW_DEFAULT)


cdef inline bint stale_special_view(TensorBase t) noexcept:
    """Whether special view t's storage was written since t was taken, or its base's history
    replaced (reading t's graph then raises view_refusal(t, True))."""
    return special_view(t) and (
        (t._version is not None and t._version.value != t._view_version)
        or (t._gen >> 1) != (<TensorBase>t._base)._gen)


cdef int init_view(TensorBase v, TensorBase of) except -1:
    """Set new view v's creation from the tensor it was taken of (`of`, itself a view or not):
    taken in no_grad, or inheriting a multi-output / no_grad creation, as PyTorch propagates
    its CreationMeta."""
    v._view_version = v._version.value
    if v._gen & 1 or of._base is None:
        return 0
    if of._view_kind == VIEW_MULTI_OUTPUT or of._view_kind == VIEW_IN_CUSTOM_FUNCTION:
        v._view_kind = of._view_kind                # (output 0 of its own op)
    elif of._gen & 1 or of._view_kind == VIEW_OF_NO_GRAD_VIEW:
        v._view_kind = VIEW_OF_NO_GRAD_VIEW
    return 0


cdef int mark_multi_output_views(tuple views) except -1:
    """Mark the outputs of split / chunk / unbind (taken with grad mode on) as PyTorch's
    multi-output views: output k is named "Output k of ..." when refused."""
    cdef Py_ssize_t k
    cdef TensorBase v
    if not grad_enabled():
        return 0                    # (taken in no_grad: the no_grad rule applies instead)
    for k in range(len(views)):
        v = <TensorBase>views[k]
        if v._base is not None:
            v._view_kind = VIEW_MULTI_OUTPUT
            v._view_output = <int>k
    return 0


cdef void history_rewritten(TensorBase t) noexcept:
    """A recorded in-place write gave t a new history: t's views taken before are now stale."""
    if t._base is None:
        t._gen += 1
    if CONJ_LINKS:
        try:
            rebase_conj_mirrors(t)
        except BaseException:           # (noexcept: a failure must not pass silently)
            import traceback
            traceback.print_exc()


# -- conj() ----------------------------------------------------------------------------------------
# PyTorch's conj() of a complex tensor is a lazy view (the conjugate bit): writes through either
# side reach the other. numpy has no conjugating view, so tapegrad's conj() holds its values
# materialised (the mirror) and keeps the two storages in step: every in-place write ends in
# bump_version, which copies the conjugate of the written side into the other (sync_conj). A
# recorded write into the source's storage regenerates the mirror's history as a conj of the
# source's new history (history_rewritten), as PyTorch regenerates a view's grad_fn; a write
# into the mirror that autograd would record is refused (PyTorch records it on the source as
# CopySlices; tapegrad cannot), never lost. Costs nothing while no conj() mirror is alive.

cdef class ConjLink:
    """mirror = conj(source), kept in step while the mirror's storage lives.  The link follows
    storages, not tensor objects: a view of the mirror (z.conj().imag, z.conj()[0]) outlives the
    conj() result it was taken from and must still see writes to the source, and the source's
    other views must still see writes through it (PyTorch's lazy conj is one storage)."""
    cdef object source               # weakref to the source tensor (its history, its _array)
    cdef object mirror               # weakref to the mirror tensor (its history, its _array)
    cdef object source_array         # the source's values once its tensor is gone (kept alive:
                                     # PyTorch's conj view keeps the source storage alive too)
    cdef object mirror_storage       # weakref to the array owning the mirror's memory: its death
                                     # (no tensor views the mirror's values) ends the link
    cdef object mirror_array         # the array the mirror tensor was created with, while it lives
    cdef Version source_version
    cdef Version mirror_version


cdef dict CONJ_LINKS = {}        # Version (either side's storage) -> list of ConjLink


cdef int forget_conj_link(ConjLink link) except -1:
    for v in (link.source_version, link.mirror_version):
        links = CONJ_LINKS.get(v)
        if links is not None:
            if link in links:
                links.remove(link)
            if not links:
                del CONJ_LINKS[v]
    return 0


def _link_conj(TensorBase source, TensorBase mirror):
    """Called by conj(): mirror (conj(source), its own storage) follows source's storage."""
    cdef ConjLink link = ConjLink()
    link.source_version = version_of(source)
    link.mirror_version = version_of(mirror)
    link.source = weakref.ref(source)
    link.mirror = weakref.ref(mirror)
    link.source_array = source._array
    owner = mirror._array
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    link.mirror_storage = weakref.ref(owner, lambda _, l=link: forget_conj_link(l))
    link.mirror_array = weakref.ref(mirror._array)
    CONJ_LINKS.setdefault(link.source_version, []).append(link)
    CONJ_LINKS.setdefault(link.mirror_version, []).append(link)


def _mark_no_grad_conj_view(TensorBase mirror, TensorBase source):
    """conj() under no_grad: PyTorch's result is a view taken in no_grad (requires grad as its
    base does, no grad_fn, refused in-place writes with grad mode on, gradients reaching it
    dropped).  tapegrad's mirror has its own storage (the conj link keeps the two in step), so
    it takes a no_grad view's marks and keeps its own version counter."""
    mirror._base = source if source._base is None else source._base
    mirror._gen = ((<TensorBase>mirror._base)._gen << 1) | 1
    mirror._requires_grad = source._requires_grad
    mirror._view_version = version_of(mirror).value


def _is_conj_mirror(TensorBase t):
    """Whether t's storage is a conj() mirror (t is a conj() result or a view of one)."""
    cdef ConjLink link
    for link in CONJ_LINKS.get(version_of(t), ()):
        if link.mirror_version is version_of(t):
            return True
    return False


cdef object link_source_array(ConjLink link):
    """The source's values: its tensor's array while it lives (a set_() may replace it), then
    the array it had."""
    src = link.source()
    return link.source_array if src is None else (<TensorBase>src)._array


cdef object link_mirror_array(ConjLink link):
    """The mirror's values: its tensor's array while it lives, then the array it was created
    with while views of it hold it (None once no tensor views it)."""
    mir = link.mirror()
    return link.mirror_array() if mir is None else (<TensorBase>mir)._array


cdef int sync_conj(Version v, ConjLink came_through=None) except -1:
    """After an in-place write to the storage of version v: copy the conjugate across each of its
    links, except the one the write came through; a side written that way passes it on across
    its own other links once (conj of conj of ...)."""
    cdef ConjLink link
    cdef Version tv
    for link in list(CONJ_LINKS.get(v, ())):
        if link is came_through:
            continue
        src_arr = link_source_array(link)
        mir_arr = link_mirror_array(link)
        if mir_arr is None or src_arr.shape != mir_arr.shape:
            continue
        if v is link.mirror_version:
            to_arr, frm_arr, tv = src_arr, mir_arr, link.source_version
        else:
            to_arr, frm_arr, tv = mir_arr, src_arr, link.mirror_version
        np.copyto(to_arr, np.conjugate(frm_arr))
        tv.value += 1
        if came_through is None and tv is not v and tv in CONJ_LINKS:
            sync_conj(tv, link)
    return 0


cdef int rebase_conj_mirrors(TensorBase t) except -1:
    """t's storage got a new history: each conj() mirror of it that has a history becomes a
    conj of its source's current history (its old one no longer describes its values)."""
    cdef ConjLink link
    cdef TensorBase src, mir
    cdef Py_ssize_t inp[1]
    cdef Py_ssize_t old
    cdef Record* r
    for link in list(CONJ_LINKS.get(version_of(t), ())):
        if link.source_version is not version_of(t):
            continue
        src = link.source()
        mir = link.mirror()
        if src is None or mir is None:
            continue
        if mir._node < 0:
            # a conj() taken while its source had no history (nothing required grad): PyTorch's
            # lazy conj view gets one from this write (ConjBackward0 of the source's new
            # history), or its gradient would be lost (fuzz 65203012); one taken under no_grad
            # (its _base set) stays a no_grad view
            if mir._base is None and not mir._requires_grad:
                inp[0] = node_for_input(src)
                if inp[0] >= 0:
                    record_op(OP_COMPLEX_CONJ, mir, 1, inp)
            continue
        if TAPE.recs[mir._node].op == OP_LEAF:
            continue
        old = mir._node
        inp[0] = node_for_input(src)
        if inp[0] < 0:
            mir._requires_grad = False
            mir._node = -1
        else:
            r = record_op(OP_COMPLEX_CONJ, mir, 1, inp)
            r.flags |= TAPE.recs[old].flags & RF_RETAIN_GRAD
        if TAPE.recs[old].out == <PyObject*>mir:
            TAPE.recs[old].out = NULL
        TAPE.decref(old)
    return 0


cdef int refresh_view(TensorBase t) except -1:
    """If view t is older than its base's last recorded in-place write, make it a view of the
    base's current history (AsStridedBackward0: the base's elements t covers, so its gradient
    is scattered into the base's shape at t's position)."""
    cdef TensorBase b = <TensorBase>t._base
    if special_view(t) and stale_special_view(t):
        # PyTorch regenerates such a view's grad_fn only to refuse it, when it has a history or
        # its base requires grad (and only where it reads the graph: with grad mode on)
        if grad_enabled() and (not is_leaf_c(t) or b._requires_grad):
            raise RuntimeError(view_refusal(t, True))
        return 0
    if (t._gen >> 1) == b._gen and not written_unrecorded(t):
        return 0
    return rebase_view(t, view_key(t))


def _is_stale_view(TensorBase t):
    """Whether reading view t's autograd state (requires_grad, grad_fn, is_leaf, ...) would
    regenerate its history now (refresh_view: an AsStridedBackward0 record, or the refusal of a
    special view).  Code that only inspects tensors (tapegrad.compile's plan) must not: a record
    appended earlier than the eager program appends it changes the order in which the sweep adds
    adjoints, so float gradients differ in the last bits (fuzz seed 52001622)."""
    if t._base is None:
        return False
    if special_view(t):
        return stale_special_view(t)
    return (t._gen >> 1) != (<TensorBase>t._base)._gen or written_unrecorded(t)


cdef inline bint written_unrecorded(TensorBase t) noexcept:
    """Whether view t, which has a history (a leaf view, made to require grad itself, has none
    to regenerate: PyTorch leaves it alone), had its storage written since that history was made
    (a recorded write into t or its base rebases t at once, which updates t._view_version)."""
    return (t._node >= 0 and TAPE.recs[t._node].op != OP_LEAF and t._version is not None
            and t._version.value != t._view_version)


cdef int rebase_view(TensorBase t, tuple key) except -1:
    """Make view t (covering base elements `key`, see view_key) an AsStridedBackward0 view of its
    base's current history, replacing the history it had."""
    cdef TensorBase b = <TensorBase>t._base
    t._gen = b._gen << 1
    t._view_version = version_of(t).value           # (after the write that rebases it, if any)
    cdef Py_ssize_t old = t._node
    cdef Py_ssize_t inp[1]
    cdef Record* r
    # No begin_record here: it may compact the tape, and this can run while an op is collecting
    # its inputs' record indices (node_for_input).  Plain appends only ever grow the tape.
    inp[0] = node_for_input(b)
    if inp[0] < 0:                       # the base no longer requires grad (detach_)
        t._requires_grad = False
        t._node = -1
    else:
        r = record_op(OP_AS_STRIDED, t, 1, inp)
        if reinterprets(t):
            # the gradient's real numbers scattered into the base's (ops_index.pxi, scatter_index)
            keep(&r.aux, (b._array.shape, b._array.dtype, REINTERPRETED,
                          _real_parts(b._array).shape, key))
        elif b._array.ndim == 0:           # the key indexes the base seen as shape (1,)
            keep(&r.aux, ((), b._array.dtype, (None,), (1,), key))
        else:
            keep(&r.aux, (b._array.shape, b._array.dtype, None, b._array.shape, key))
        if old >= 0:                     # retain_grad() follows the view to its new history
            r.flags |= TAPE.recs[old].flags & RF_RETAIN_GRAD
    if old >= 0:
        if TAPE.recs[old].out == <PyObject*>t:
            TAPE.recs[old].out = NULL
        TAPE.decref(old)
    return 0


CONJ_WRITE_REFUSAL = (
    "in-place operations on a conj() view that autograd records are not supported by tapegrad "
    "(PyTorch records them on the view's base): write the base instead, or use "
    "conj_physical() for a tensor of its own")


INFERENCE_INPLACE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone "
    "to get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for more details.")


cdef inline int check_inference_write(TensorBase t) except -1:
    if t._inference == INFERENCE_TENSOR and not inference_mode_on():
        raise RuntimeError(INFERENCE_INPLACE)
    return 0


cdef int bump_version(TensorBase t) except -1:
    # Every in-place write ends here, and this is where an inference tensor's write outside
    # inference mode is refused: PyTorch refuses it when it bumps the version, after its kernel
    # wrote (the values change, the error follows, and an argument error such as a shape
    # mismatch is raised first), and before the write is recorded in autograd's history.
    check_inference_write(t)
    cdef Version v = version_of(t)
    v.value += 1
    if CONJ_LINKS and v in CONJ_LINKS:
        sync_conj(v)
    if CAPTURE is not None:
        capture_unsupported(IN_PLACE_WRITE)
    return 0


cdef int check_inplace(TensorBase t, bint recording, bint via_base=False) except -1:
    """Refuse in-place writes that PyTorch refuses, or that tapegrad cannot record correctly
    (via_base: the caller records a write into a view on its base when writes_through_view)."""
    if TAPE.pending_packs:
        flush_packs(True)               # pack hooks see values as saved, not as written now
    if recording:
        # A write autograd would record is refused before anything is computed or saved (PyTorch
        # names the inference tensor there too); an unrecorded one is refused by bump_version,
        # after the write, as PyTorch refuses it.
        check_inference_write(t)
    if not grad_enabled():
        return 0
    # (before the leaf check: a view taken in no_grad of a tensor that requires grad is a leaf
    # that requires grad, and PyTorch names the no_grad view)
    if t._base is not None and special_view(t) and (
            recording or t._requires_grad or (<TensorBase>t._base)._requires_grad):
        raise RuntimeError(view_refusal(t, False))      # PyTorch's rule for such views
    if recording and CONJ_LINKS and _is_conj_mirror(t):
        raise RuntimeError(CONJ_WRITE_REFUSAL)
    if t._requires_grad and t._base is not None and not (<TensorBase>t._base)._requires_grad:
        # t is a leaf made from a view (x.view(3, 4).requires_grad_()) or a view of one: its
        # base is a leaf, and PyTorch names the view before it would name t a leaf
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    if t._requires_grad and is_leaf_c(t):
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    if t._base is not None and recording:
        if (<TensorBase>t._base)._requires_grad and is_leaf_c(<TensorBase>t._base):
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        if not (via_base and writes_through_view(t)):
            raise RuntimeError("in-place operations on a view of a tensor that requires grad are "
                               "not supported by tapegrad (the history of its other views would "
                               "not be rebased); use the out-of-place form, e.g. y = x + 1, or "
                               "write into x.clone()")
    return 0


cdef inline bint writes_through_view(TensorBase t) noexcept:
    """Whether a recorded in-place write into view t can go to its base as a CopySlices record:
    the view's history, if any, reads the base's current history (a view taken before the base
    was last written would carry a stale one), and the base is no leaf that requires grad."""
    if t._base is None or reinterprets(t):
        return False                    # (a write into .real or view_as_complex: not yet)
    cdef TensorBase b = <TensorBase>t._base
    if not t._requires_grad:
        return not b._requires_grad
    if not b._requires_grad or b._node < 0 or is_leaf_c(b) or t._node < 0:
        return False
    cdef Record* r = &TAPE.recs[t._node]
    return r.n_in >= 1 and rec_inputs(r)[0] == b._node


cdef object element_offsets(object arr, Py_ssize_t origin, Py_ssize_t unit):
    """(address of each element of numpy array `arr` - origin) / unit, in arr's shape: unit 1
    gives byte offsets, the itemsize element offsets (when every stride is a multiple of it)."""
    cdef Py_ssize_t k, nd_ = cnp.PyArray_NDIM(<cnp.ndarray>arr)
    cdef Py_ssize_t start = <Py_ssize_t>cnp.PyArray_DATA(<cnp.ndarray>arr) - origin
    pos = np.full(arr.shape, start // unit, dtype=np.intp)
    for k in range(nd_):
        step = np.arange(cnp.PyArray_DIMS(<cnp.ndarray>arr)[k], dtype=np.intp) * (
            cnp.PyArray_STRIDES(<cnp.ndarray>arr)[k] // unit)
        pos += step.reshape((-1,) + (1,) * (nd_ - 1 - k))
    return pos


cdef object positions_in_contiguous(object B, object V):
    """The flat index in B of each element of V, a view of B's memory, when B is C-contiguous and
    V's elements are whole elements of B (offset and strides multiples of the itemsize); None
    otherwise.  view_key's direct route: no sort of B's addresses (a full-size array per write)."""
    if not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>B):
        return None
    cdef Py_ssize_t item = cnp.PyArray_ITEMSIZE(<cnp.ndarray>B), k
    cdef Py_ssize_t origin = <Py_ssize_t>cnp.PyArray_DATA(<cnp.ndarray>B)
    if cnp.PyArray_ITEMSIZE(<cnp.ndarray>V) != item or (
            <Py_ssize_t>cnp.PyArray_DATA(<cnp.ndarray>V) - origin) % item:
        return None
    for k in range(cnp.PyArray_NDIM(<cnp.ndarray>V)):
        if cnp.PyArray_STRIDES(<cnp.ndarray>V)[k] % item:
            return None
    pos = element_offsets(V, origin, item)
    if pos.min() < 0 or pos.max() >= B.size:
        return None                     # (not within B: view_key's general route raises)
    return pos


cdef tuple view_key(TensorBase view):
    """The advanced-index key (one int64 array per base dim, each of the view's shape) of the
    base elements that `view`, a numpy view of its base's storage, covers (of a 0-d base: of
    the base seen as shape (1,)).  Of a view reading the storage as another dtype (reinterprets):
    the same over both seen as real numbers (_real_parts), so each key array has the shape of
    the view's real numbers and indexes the base's."""
    B = (<TensorBase>view._base)._array
    V = view._array
    if reinterprets(view):              # (.real, view_as_complex, ...): keyed by real numbers
        B = _real_parts(B)
        V = _real_parts(V)
    if V.size == 0 or B.ndim == 0:
        # no element, or every element the base's one (a 0-d base's key indexes it seen as
        # shape (1,): see rebase_view, and base_key in ops_inplace.pxi)
        return tuple(np.zeros(V.shape, dtype=NP_INT64) for _ in range(max(B.ndim, 1)))
    pos = positions_in_contiguous(B, V)
    if pos is not None:
        return tuple(k.astype(NP_INT64, copy=False) for k in np.unravel_index(pos, B.shape))
    base_addr = element_offsets(B, 0, 1).ravel()
    order = np.argsort(base_addr, kind="stable")
    ordered = base_addr[order]
    view_addr = element_offsets(V, 0, 1)
    pos = np.minimum(np.searchsorted(ordered, view_addr), ordered.size - 1)
    if ordered.size == 0 or not np.array_equal(ordered[pos], view_addr):
        raise RuntimeError("in-place write into a view that does not cover whole elements of its "
                           "base: not supported by tapegrad")
    return tuple(k.astype(NP_INT64, copy=False)
                 for k in np.unravel_index(order[pos], B.shape))


cdef int guard_version(Record* r, TensorBase t) except -1:
    """Make record r refuse its backward once t is written in place, as PyTorch's node refuses
    it when it saved t, where r's VJP needs no value of t (or reads a copy made before the
    write): the gradient would stay right, but PyTorch raises, and a program must see the same
    outcome.  Takes a free saved slot (a version with no value); returns 1 if it found one.
    Not under saved-tensor hooks (the record is then pending its pack): PyTorch checks no hooked
    value's version, so the write computes there, and the gradient stays right here too (the VJP
    reads no value of t from this slot)."""
    cdef int j
    cdef Version v
    if r.flags & RF_PACK_PENDING:
        return 0
    for j in range(MAX_SAVED):
        if r.saved[j] == NULL and r.ver[j] == NULL:
            v = version_of(t)
            Py_INCREF(v)
            r.ver[j] = <PyObject*>v
            r.ver_at[j] = v.value
            return 1
    return 0


cdef Py_ssize_t node_checking(object result) except -2:
    """The record whose backward checks the saved versions for `result` (a tensor, or the first
    of a tuple) of a Python-level op, or -1 when nothing was recorded."""
    if isinstance(result, tuple):
        result = result[0]
    if not isinstance(result, TensorBase) or (<TensorBase>result)._node < 0 or not grad_enabled():
        return -1
    cdef Py_ssize_t i = (<TensorBase>result)._node
    if TAPE.recs[i].op == OP_FN_OUTPUT:
        i = TAPE.recs[i].inp[0]         # an output of a Function: its node checks the versions
    return -1 if TAPE.recs[i].op == OP_LEAF else i


def _guard_saved_version(result, *tensors):
    """guard_version for the record of `result` (a tensor, or the first of a tuple), for each
    of `tensors` that is a tensor (the Python-level ops whose PyTorch node saves an input or
    output that their own record does not keep)."""
    if _saved_hooks_active() is not None:
        return                          # (saved under hooks: no version check, guard_version)
    cdef Py_ssize_t i = node_checking(result)
    if i < 0:
        return
    for t in tensors:
        if isinstance(t, TensorBase):
            guard_version(&TAPE.recs[i], <TensorBase>t)


def _save_index_of(result, *indices):
    """save_index (record.pxi) into a free slot of the record of `result`, for each of
    `indices` that is a tensor: the Python-level ops (scatter, index_add, embedding_bag,
    ...) whose key into their input is a numpy array of their own, where PyTorch's node saves the
    index tensor: writing it before backward raises there.  Under saved-tensor hooks the pack
    hook sees it, as PyTorch's."""
    cdef Py_ssize_t i = node_checking(result)
    if i < 0:
        return
    if keeps_any_saved_value(&TAPE.recs[i]):
        save_indices(&TAPE.recs[i], indices)
        return
    for t in indices:                   # (the message then says "a tensor")
        if isinstance(t, TensorBase):
            guard_version(&TAPE.recs[i], <TensorBase>t)


cdef bint keeps_any_saved_value(Record* r) except -1:
    """Whether a value in a free saved slot of r leaves its VJP as it was: a Function's (its
    saved tensors live in its ctx), an index write's (vjp_setitem reads only its key), an
    advanced index's (vjp_index reads slot 0, its key).  Another op may read an optional slot
    when it is set (embedding's scale, a view's index key): only a version goes there."""
    if r.op == OP_FUNCTION:
        return True
    name = OP_NAMES[r.op]
    if name == "IndexBackward0":
        return r.saved[0] != NULL and type(<object>r.saved[0]) is tuple
    if name == "CloneBackward0":        # (clone's; matmul's, which also has that name, saves)
        return r.saved[0] == NULL and r.saved[1] == NULL and r.saved[2] == NULL
    return name in ("CopySlices", "IndexPutBackward0", "CopyBackwards", "FillBackward3")


def _reads_saved_input(result, TensorBase input):
    """_guard_saved_version(result, input) for a composition whose records' VJPs read only
    the adjoint, where PyTorch's one node saves `input`: under create_graph its gradients
    require grad with `input`, as PyTorch's (graph_vjp.pxi's linked_to_read_input)."""
    _guard_saved_version(result, input)
    if isinstance(result, tuple):
        result = result[0]
    if not isinstance(result, TensorBase) or (<TensorBase>result)._node < 0 \
            or not grad_enabled() or not input._requires_grad:
        return
    cdef Py_ssize_t i = (<TensorBase>result)._node
    if TAPE.recs[i].op == OP_FN_OUTPUT:
        i = TAPE.recs[i].inp[0]
    if TAPE.recs[i].op != OP_LEAF and input._node != i:
        extra_of(i).read_input = input


cdef inline bint stale_view_without_history(TensorBase t) noexcept:
    """Whether t is a view taken (with grad mode on) while its base did not require grad, whose
    base has a history since and whose own history was not read since: PyTorch's raw grad_fn of
    such a view is still empty, so its C++ is_leaf() holds (in-place writes and retain_grad
    treat it as a leaf) until its history is regenerated."""
    return (t._base is not None and t._node < 0 and (<TensorBase>t._base)._requires_grad
            and (t._gen >> 1) != (<TensorBase>t._base)._gen and not (t._gen & 1))


cdef inline int fresh_operands(TensorBase t, object other) except -1:
    """Rebase the operands of an in-place op that are stale views (refresh_view).  PyTorch's
    quirk first: a stale view that had no history (taken while its base did not require grad)
    counts as a leaf that requires grad until its history is read, so writing into it raises."""
    if grad_enabled() and stale_view_without_history(t):
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    fresh(t)
    if isinstance(other, TensorBase):
        fresh(<TensorBase>other)
    return 0

