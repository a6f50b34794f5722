# ---------------------------------------------------------------------------------------------
# The parts of autograd that call Python from the sweep: custom Functions, tensor hooks, anomaly
# mode.  Built-in ops never come here; the sweep tests one pointer (Record.extra) or one opcode.
#
# Custom autograd.Function (the Python side is tapegrad/autograd/function.py):
#   One OP_FUNCTION record per call: its inputs are the forward's positional arguments (-1 for
#   non-tensors and tensors that need no gradient), its aux is the ctx (which is also the outputs'
#   grad_fn, as in PyTorch), its scalar the number of outputs.  No tensor is its output.
#   Each differentiable output j gets a cheap OP_FN_OUTPUT record whose only input is the
#   OP_FUNCTION record and whose scalar is j: it is what the output tensor's _node names, so
#   retain_grad, hooks, autograd.grad captures and lifetimes work per output exactly as for
#   built-in ops.  The sweep routes an OP_FN_OUTPUT record's total adjoint into slot j of the
#   OP_FUNCTION record's adjoint, a list with one entry per output, so the Function's backward
#   runs once, with every output's gradient, after all of them are known (creation order: the
#   output records are younger than the Function record).  The OP_FUNCTION record lives while
#   any output record does (they hold references to it); when the last output dies it is
#   released and with it the ctx and its saved tensors.
#
# Tensor hooks: Record.extra holds a RecordExtra whose dicts map a handle id to the hook.  A
# non-leaf's hooks live on its record (they fire even after the tensor died, as PyTorch's live on
# its grad_fn); a leaf's on its LEAF record (created on register_hook).  The record moves with its
# struct when the tape compacts, so nothing is keyed by a record index.
#
# Anomaly mode: when on, every recorded op remembers the Python stack that created it (a list of
# (code, line) pairs, taken in C without running Python code); an error inside a VJP is re-raised
# naming the op and that stack, and VJPs that return NaN raise.
# ---------------------------------------------------------------------------------------------

import weakref

# frameobject.h, not Python.h: Python 3.10's Python.h does not declare PyFrame_GetBack (its
# cpython/frameobject.h does, and frameobject.h includes that on every version), so the C compiler
# would meet an implicit declaration first and then Cython's own include of frameobject.h.
cdef extern from "frameobject.h":
    ctypedef struct PyFrameObject:
        pass
    ctypedef struct PyCodeObject:
        pass
    PyFrameObject* PyEval_GetFrame()
    PyCodeObject* PyFrame_GetCode(PyFrameObject* frame)
    PyFrameObject* PyFrame_GetBack(PyFrameObject* frame)
    int PyFrame_GetLineNumber(PyFrameObject* frame)


@cython.auto_pickle(False)   # (unpicklable: see Tape's note)
cdef class RecordExtra:
    """What a record carries besides its op: tensor hooks and the anomaly-mode forward trace."""
    cdef public dict hooks              # handle id -> fn(grad) -> grad or None (pre-hooks)
    cdef public dict post_hooks         # handle id -> fn(tensor) (leaves, after accumulation)
    cdef public dict node_hooks         # handle id -> fn(grad_inputs, grad_outputs) -> None or
                                        # new grad_inputs (grad_fn.register_hook), after the VJP
    cdef public object metadata         # grad_fn.metadata: a dict, created on first read
    cdef public object trace            # anomaly mode: [(code, line), ...], innermost first
    cdef public object written_view     # weakref to the view an in-place op wrote this record's
                                        # output into (_note_written_view), or None
    cdef public object read_input       # an input PyTorch's node saves that no VJP of this
                                        # Python-level op reads (_guard_saved_version), or None
    cdef public object out_shape        # the output's shape when recorded, kept once an
                                        # unrecorded change gave its tensor another
                                        # (note_output_shape), or None
    cdef public bint bfloat16_gradient  # the output is a bfloat16 tensor (kept in float32):
                                        # its gradient is rounded to bfloat16 as it arrives
    cdef public object leaf_dtype       # a LEAF record its tensor left when it took another
                                        # dtype (split_accumulator): the numpy dtype a .grad it
                                        # creates has, or None
    cdef public object holds            # that LEAF record's tensor, held (its `out` is borrowed)

    def __cinit__(self):
        self.hooks = {}
        self.post_hooks = {}
        self.node_hooks = {}
        self.metadata = None
        self.trace = None
        self.written_view = None
        self.read_input = None
        self.out_shape = None
        self.bfloat16_gradient = False
        self.leaf_dtype = None
        self.holds = None


def _note_written_view(TensorBase view, TensorBase result):
    """After view.<op>_() was computed out of place as `result` (a fresh recorded tensor) and
    written back into the view with copy_: the view is the op's output, as in PyTorch, where the
    op's node saves the view as its result.  The output the record saved is guarded by the
    view's version counter (a later write into the view or its base makes backward raise, as
    PyTorch's), and a create_graph backward reads that output as the view itself
    (graph_vjp.pxi's node_tensor), so a second derivative flows through the view's history
    (the base's CopySlices) and reaches the retained .grad of the view and of its base, as
    PyTorch's (fuzz seeds 54001360, 54105721: through the dead result, the second pass missed
    them)."""
    if (view._base is None or result._node < 0 or result._base is not None or result is view
            or not grad_enabled() or not view._requires_grad
            or result._array.shape != view._array.shape):
        return
    cdef Py_ssize_t i = result._node
    cdef Record* r = &TAPE.recs[i]
    cdef object R = result._array
    cdef object version = version_of(view)
    cdef bint moved = False
    cdef int j
    for j in range(MAX_SAVED):
        # (the saved output may already be packed by a saved-tensor hook: the copy_ that wrote it
        # back flushed the packs; fuzz 62675653, the second pass then missed the view's history)
        if r.saved[j] != NULL and (<object>r.saved[j] is R or (
                type(<object>r.saved[j]) is PackedSaved and (<PackedSaved>r.saved[j]).of_output
                and r.out == <PyObject*>result)):
            Py_XDECREF(r.ver[j])
            Py_INCREF(version)
            r.ver[j] = <PyObject*>version
            r.ver_at[j] = (<Version>version).value
            moved = True
    if moved:
        extra_of(i).written_view = weakref.ref(view)


cdef RecordExtra extra_of(Py_ssize_t i):
    """Record i's RecordExtra, created on first need."""
    cdef RecordExtra ex
    if TAPE.recs[i].extra != NULL:
        return <RecordExtra>TAPE.recs[i].extra
    ex = RecordExtra.__new__(RecordExtra)
    keep(&TAPE.recs[i].extra, ex)
    return ex


cdef int note_output_shape(Py_ssize_t i, tuple shape) except -1:
    """Record i's output tensor takes another shape without a record (`.data = `, which a
    no_grad unsqueeze_ / t_ / squeeze_ does): keep `shape`, the one it was recorded with.
    PyTorch's node keeps its output's metadata, and its engine checks each gradient reaching the
    node against it (sweep.pxi: arriving_shape).  A leaf's gradient takes the leaf's new shape
    (PyTorch's AccumulateGrad reads the variable), so a leaf keeps nothing."""
    if TAPE.recs[i].op == OP_LEAF:
        return 0
    cdef RecordExtra ex = extra_of(i)
    if ex.out_shape is None:            # (the first change: the recorded shape)
        ex.out_shape = shape
    return 0


cdef int split_accumulator(TensorBase t, object old_dtype) except -1:
    """Leaf t took another dtype without a record (`.data = `, which Module.double() / half() /
    to(dtype) do) while graphs recorded it: PyTorch's set_data gives t a new gradient accumulator
    and leaves the old one in those graphs.  So a backward through them still reaches t.grad, in
    the dtype they were recorded with (a new .grad is made in it, an existing one is added into
    in its own), while autograd.grad asking for t, and any graph recorded from now on, know only
    the new accumulator (an old graph's output: "appears to not have been used in the graph").
    Here t's LEAF record stays in the old graphs, holding t (as AccumulateGrad holds its
    variable), and t gets a new one.  Tensor hooks belong to the tensor: both records share
    them.  A record no graph refers to serves the new dtype as it is."""
    cdef Py_ssize_t old = t._node, new
    if old < 0 or TAPE.recs[old].op != OP_LEAF or TAPE.recs[old].refcnt <= 1:
        return 0
    cdef RecordExtra was = extra_of(old), now
    TAPE.reserve(1)                     # (may compact: `old` is read again after it)
    old = t._node
    new = TAPE.append(OP_LEAF, 0, NULL)
    TAPE.recs[new].out = <PyObject*>t
    now = extra_of(new)
    now.hooks = was.hooks
    now.post_hooks = was.post_hooks
    was.leaf_dtype = old_dtype
    was.holds = t
    t._node = new
    TAPE.decref(old)                    # (t's claim; the graphs' references keep it alive)
    return 0


# -- hooks ---------------------------------------------------------------------------------------

cdef Py_ssize_t NEXT_HOOK_ID = 0


cdef class RemovableHandle:
    """What register_hook returns: .remove() unregisters the hook (also usable with `with`)."""
    _c_type_name = "torch.utils.hooks.RemovableHandle"      # (type(handle)'s repr)
    cdef object _hooks                  # the dict the hook lives in
    cdef readonly Py_ssize_t id

    def remove(self):
        if self._hooks is not None:
            (<dict>self._hooks).pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()

    def __repr__(self):
        from tapegrad._torch_names import object_repr  # PyTorch's <torch.utils.hooks...> path
        return object_repr(self, "tapegrad.utils.hooks")


cdef RemovableHandle add_hook(dict hooks, object fn):
    global NEXT_HOOK_ID
    cdef RemovableHandle h = RemovableHandle.__new__(RemovableHandle)
    NEXT_HOOK_ID += 1
    h.id = NEXT_HOOK_ID
    h._hooks = hooks
    hooks[h.id] = fn
    return h


def register_hook(TensorBase self, hook):
    """Register hook(grad) -> Tensor or None, called with this tensor's gradient every backward
    (before it flows on or is accumulated into .grad); a returned tensor replaces the gradient."""
    fresh(self)
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    # A replay runs its recorded steps, not the Python that registered the hook: a compiled call
    # that registers one must run eagerly every time, or its replays would skip the hook silently.
    capture_unsupported("it registers a gradient hook (register_hook) inside the call")
    cdef Py_ssize_t i = node_for_input(self)     # a leaf's hooks live on its LEAF record
    return add_hook(extra_of(i).hooks, hook)


def register_post_accumulate_grad_hook(TensorBase self, hook):
    """Register hook(tensor), called after this leaf's .grad was accumulated by backward()."""
    fresh(self)
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if not is_leaf_c(self):
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    capture_unsupported("it registers a gradient hook (register_post_accumulate_grad_hook) "
                        "inside the call")
    cdef Py_ssize_t i = node_for_input(self)
    return add_hook(extra_of(i).post_hooks, hook)


def _leaf_grad_hooks(TensorBase self):
    """(tensor hooks, post-accumulate-grad hooks) registered on leaf `self`, two lists in
    registration order: tapegrad/_sparse_embedding.py runs them around the sparse gradient it
    adds into .grad, which no sweep delivers."""
    cdef Py_ssize_t i = self._node
    if i < 0 or TAPE is None or i >= TAPE.n or TAPE.recs[i].op != OP_LEAF \
            or TAPE.recs[i].extra == NULL:
        return [], []
    cdef RecordExtra ex = <RecordExtra>TAPE.recs[i].extra
    return list(ex.hooks.values()), list(ex.post_hooks.values())


cdef str hook_name(object fn):
    return getattr(fn, "__name__", None) or repr(fn)


def node_hook_result(fn, res, tuple current):
    """What node hook `fn` returned, checked as PyTorch checks it: None keeps `current`; a
    replacement holds one tensor (of the same size) or None per entry of `current`.  The one
    check for a built-in op's node and a custom Function's (autograd/function.py)."""
    if res is None:
        return current
    if not isinstance(res, (tuple, list)):
        raise TypeError(f"expected tuple, but hook returned '{type_name(res)}'")
    if len(res) != len(current):
        raise RuntimeError(f"hook '{hook_name(fn)}' has returned an incorrect number of values "
                           f"(got {len(res)}, but expected {len(current)})")
    for new, old in zip(res, current):
        if new is None:
            continue
        if not isinstance(new, TensorBase):
            raise TypeError(f"expected Variable, but hook returned '{type_name(new)}'")
        if old is not None and (<TensorBase>new)._array.shape != (<TensorBase>old)._array.shape:
            raise RuntimeError(f"hook '{hook_name(fn)}' has changed the size of value")
    return tuple(res)


# -- hooks on a grad_fn node (GradFn.register_hook / register_prehook) ---------------------------
# A pre-hook sees the node's total incoming gradient, as a tensor hook on its output does (it is
# kept with those: fn((grad,)) -> None or (new_grad,)).  A post-hook runs after the node's VJP:
# fn(grad_inputs, grad_outputs) -> None or new grad_inputs, one entry per input (None where no
# gradient flows), as PyTorch's.

cdef class NodePreHook:
    """A grad_fn pre-hook in the tensor-hook chain: hook((grad,)) -> None or (new_grad,)."""
    cdef object fn

    def __call__(self, grad):
        res = self.fn((grad,))
        if res is None:
            return None
        if not isinstance(res, (tuple, list)) or len(res) != 1:
            got = len(res) if isinstance(res, (tuple, list)) else type(res).__name__
            raise RuntimeError(f"hook '{hook_name(self.fn)}' has returned an incorrect number of "
                               f"values (got {got}, but expected 1)")
        return res[0]

    @property
    def __name__(self):
        return hook_name(self.fn)


cdef RemovableHandle register_node_prehook(Py_ssize_t i, object fn):
    capture_unsupported("it registers a hook on a grad_fn inside the call")
    cdef NodePreHook h = NodePreHook.__new__(NodePreHook)
    h.fn = fn
    return add_hook(extra_of(i).hooks, h)


cdef RemovableHandle register_node_hook(Py_ssize_t i, object fn):
    capture_unsupported("it registers a hook on a grad_fn inside the call")
    return add_hook(extra_of(i).node_hooks, fn)


cdef bint has_node_hooks(Record* rec) noexcept:
    return rec.extra != NULL and bool((<RecordExtra>rec.extra).node_hooks)


cdef bint carries_hooks(Record* rec) noexcept:
    """Whether record rec carries hooks of any kind that see the gradient reaching it or leaving
    it: tensor hooks, its grad_fn's pre-hooks (both in .hooks) or post-hooks."""
    return rec.extra != NULL and bool((<RecordExtra>rec.extra).hooks
                                      or (<RecordExtra>rec.extra).node_hooks)


cdef object run_node_hooks(Record* rec, object grads, object g, bint graph):
    """Run record rec's post-hooks on its VJP's result `grads` (one entry per input, bare when
    there is one) given its incoming gradient g; returns the gradients to propagate.  graph:
    the entries are tensors already (create_graph)."""
    cdef RecordExtra ex = <RecordExtra>rec.extra
    cdef Py_ssize_t* ins = rec_inputs(rec)
    cdef int q, n = rec.n_in
    entries = [grads] if n == 1 else list(<tuple>grads)
    grad_inputs = tuple([None if (entries[q] is None or ins[q] < 0) else
                         (entries[q] if graph else wrap(nd(entries[q]))) for q in range(n)])
    grad_outputs = (g if graph else wrap(nd(g)),)
    for fn in list(ex.node_hooks.values()):
        grad_inputs = node_hook_result(fn, fn(grad_inputs, grad_outputs), grad_inputs)
    out = [None if (t is None or ins[q] < 0) else (t if graph else (<TensorBase>t)._array)
           for q, t in enumerate(grad_inputs)]
    return out[0] if n == 1 else tuple(out)


cdef int run_leaf_node_hooks(Py_ssize_t i, object g) except -1:
    """An AccumulateGrad node's post-hooks, after the leaf's .grad received g: fn((), (g,))."""
    cdef RecordExtra ex = <RecordExtra>TAPE.recs[i].extra
    if not ex.node_hooks:
        return 0
    grad_outputs = (wrap(nd(g)),)
    for fn in list(ex.node_hooks.values()):
        fn((), grad_outputs)
    return 0


class UndefinedGradient:
    """PyTorch's undefined gradient: what reaches a node when every backward that feeds it
    returned None for it (a custom Function dropping an input's gradient).  PyTorch's engine
    still runs the node: a built-in node passes the undefined gradient on without computing, a
    custom Function's backward gets zeros (materialize_grads; None without), a tensor hook gets
    None, and a leaf's .grad stays as it was.  The sweeps (sweep.pxi, graph_vjp.pxi) carry this
    one object in the adjoint table for it, so the Functions upstream run as PyTorch's do."""
    __slots__ = ()

    def __repr__(self):
        return "<undefined gradient>"


UNDEFINED_GRAD = UndefinedGradient()


cdef int hooks_see_undefined(Py_ssize_t i) except -1:
    """Run record i's tensor hooks on the undefined gradient (None, as PyTorch's); a hook may
    not replace it."""
    cdef RecordExtra ex = <RecordExtra>TAPE.recs[i].extra
    if not ex.hooks:
        return 0
    for fn in list(ex.hooks.values()):
        if fn(None) is not None:
            raise RuntimeError("can't replace a None gradient with a non-None value")
    return 0


from cpython.ref cimport Py_XINCREF, Py_XDECREF


cdef int check_saved_before_passing(Py_ssize_t i) except -1:
    """A node passing the undefined gradient on still unpacks its saved values first, as
    PyTorch's generated nodes do before they look at the gradient: freed values (a backward
    without retain_graph) raise, values overwritten in place raise, unpack hooks run."""
    cdef Record r = TAPE.recs[i]        # (a private copy, as the sweeps' own: unpack_saved)
    cdef int q
    if r.flags & RF_RELEASED:
        raise RuntimeError(BACKWARD_TWICE)
    if not (r.flags & RF_PACKED):
        return check_saved_versions(&r)
    for q in range(MAX_SAVED):
        Py_XINCREF(r.saved[q])
    try:
        unpack_saved(&r)
        check_saved_versions(&r)
    finally:
        for q in range(MAX_SAVED):
            Py_XDECREF(r.saved[q])
    return 0


cdef list undefined_passes_to(Py_ssize_t i, char* need, bint retain_graph):
    """The records record i passes the undefined gradient on to (its inputs that lead to a
    target), after its hooks saw it; a custom Function output passes it to its Function's slot
    (the caller's business: returns None).  The node counts as run: its saved values go."""
    if TAPE.recs[i].extra != NULL:
        hooks_see_undefined(i)
    cdef Record* rec = &TAPE.recs[i]
    if rec.op == OP_FN_OUTPUT:
        return None
    cdef list out = []
    cdef Py_ssize_t* ins
    cdef Py_ssize_t q, k
    if rec.op != OP_LEAF:
        check_saved_before_passing(i)
        rec = &TAPE.recs[i]             # (an unpack hook may have grown the tape)
        ins = rec_inputs(rec)
        for q in range(rec.n_in):
            k = ins[q]
            if k >= 0 and (need == NULL or need[k]):
                out.append(k)
        if not retain_graph:
            TAPE.release_saved(i)
            if rec.op == OP_FUNCTION:
                release_function_ctx(i)
    return out


# -- bfloat16 gradients -------------------------------------------------------------------------
# A bfloat16 tensor is kept in float32 storage (tapegrad/_bfloat16.py), and the VJPs compute in
# float32.  PyTorch's backward kernels of a bfloat16 op write bfloat16 gradients, so the gradient
# reaching each bfloat16 tensor is a rounded one.  The record of such a tensor is marked
# (mark_bfloat16_gradient) and the sweep rounds each contribution to its adjoint and each sum
# (sweep.pxi's accumulate_bfloat16), as PyTorch's engine adds bfloat16 gradients: every node
# above computes from the rounded values, as PyTorch's does.  A create_graph sweep rounds the
# total as the node starts (run_graph_hooks).  The rounding functions are _bfloat16's, set when
# it loads (one implementation of the rounding).

cdef object ROUND_BFLOAT16_ARRAY = None     # ndarray -> new ndarray of bfloat16 values
cdef object ROUND_BFLOAT16_TENSOR = None    # tensor -> bfloat16 tensor (recorded on a graph)
cdef object BFLOAT16_CLASS_REFS = None      # (tensor class, parameter class), kept alive
cdef PyObject** BFLOAT16_CLASSES = NULL     # ... as the pointers the sweep compares types with
cdef PyObject* BFLOAT16_CLASS_PAIR[2]


def _set_bfloat16_gradient_rounding(array_fn, tensor_fn, tuple classes not None):
    global ROUND_BFLOAT16_ARRAY, ROUND_BFLOAT16_TENSOR, BFLOAT16_CLASS_REFS, BFLOAT16_CLASSES
    if len(classes) != 2:
        raise ValueError("expected the bfloat16 tensor and parameter classes")
    ROUND_BFLOAT16_ARRAY = array_fn
    ROUND_BFLOAT16_TENSOR = tensor_fn
    BFLOAT16_CLASS_REFS = classes
    BFLOAT16_CLASS_PAIR[0] = <PyObject*>classes[0]
    BFLOAT16_CLASS_PAIR[1] = <PyObject*>classes[1]
    BFLOAT16_CLASSES = BFLOAT16_CLASS_PAIR


def mark_bfloat16_gradient(TensorBase t):
    """Round the gradient reaching t's node to bfloat16 in every later backward (t a bfloat16
    result with a history; a leaf is known by its class, sweep.pxi's is_bfloat16_record)."""
    if t._node >= 0 and t._requires_grad and TAPE.recs[t._node].op != OP_LEAF:
        extra_of(t._node).bfloat16_gradient = True


cdef object run_tensor_hooks(Py_ssize_t i, object g, int which=HOOKS_ALL):
    """Run record i's tensor hooks on its total adjoint `g`; returns the gradient to use.
    which: HOOKS_TENSOR the tensor hooks only, HOOKS_NODE_PRE its grad_fn's pre-hooks only,
    HOOKS_ALL both, in PyTorch's order: every tensor hook (in registration order), then every
    pre-hook (a pre-hook sees the gradient the tensor hooks made, whichever came first)."""
    cdef RecordExtra ex = <RecordExtra>TAPE.recs[i].extra
    cdef PyObject* out = TAPE.recs[i].out
    if not ex.hooks:
        return g
    # (the gradient in the tensor's shape, but for a node keeping the shape it was recorded
    # with: the gradient has that one, sweep.pxi's arriving_shape)
    if out != NULL and g.shape != (<TensorBase>out)._array.shape and ex.out_shape is None:
        full = np.empty((<TensorBase>out)._array.shape, dtype=g.dtype)
        full[...] = g
        g = full
    bfloat16 = is_bfloat16_record(i)
    for fn in hook_chain(ex, which):    # (a copy: a hook may remove itself or others)
        shown = wrap(g)
        if bfloat16:                    # (a bfloat16 tensor's gradient is one: PyTorch's dtype)
            shown.__class__ = BFLOAT16_CLASS_REFS[0]
        res = fn(shown)
        if res is None:
            continue
        if not isinstance(res, TensorBase):
            raise TypeError(f"expected Variable, but hook returned '{type_name(res)}'")
        R = (<TensorBase>res)._array
        if R.shape != g.shape:
            raise RuntimeError(f"hook '{hook_name(fn)}' has changed the size of value")
        if R.dtype != g.dtype:
            raise RuntimeError(f"hook '{hook_name(fn)}' has changed the type of value (was "
                               f"torch.{scalar_type_name(g.dtype)}Tensor got "
                               f"torch.{scalar_type_name(R.dtype)}Tensor)")
        g = R
    return g


cdef list hook_chain(RecordExtra ex, int which):
    """The hooks of ex.hooks that `which` asks for (HOOKS_ALL: the tensor hooks, then the
    pre-hooks), each group in registration order."""
    hooks = list(ex.hooks.values())
    tensor = [fn for fn in hooks if type(fn) is not NodePreHook]
    if which == HOOKS_TENSOR:
        return tensor
    pre = [fn for fn in hooks if type(fn) is NodePreHook]
    return pre if which == HOOKS_NODE_PRE else tensor + pre


cdef bint has_node_prehooks(Py_ssize_t i) except -1:
    cdef Record* rec = &TAPE.recs[i]
    if rec.extra == NULL:
        return False
    for fn in (<RecordExtra>rec.extra).hooks.values():
        if type(fn) is NodePreHook:
            return True
    return False


cdef object run_graph_hooks(Py_ssize_t i, object g, int which=HOOKS_ALL):
    """run_tensor_hooks with create_graph: the gradient is a tensor (with a graph)."""
    cdef RecordExtra ex = <RecordExtra>TAPE.recs[i].extra
    if ex.bfloat16_gradient and (<TensorBase>g)._array.dtype == np.float32:
        g = ROUND_BFLOAT16_TENSOR(g)
    if not ex.hooks:
        return g
    cdef TensorBase G = <TensorBase>g
    for fn in hook_chain(ex, which):
        res = fn(G)
        if res is None:
            continue
        if not isinstance(res, TensorBase):
            raise TypeError(f"expected Variable, but hook returned '{type_name(res)}'")
        R = (<TensorBase>res)._array
        if R.shape != G._array.shape:
            raise RuntimeError(f"hook '{hook_name(fn)}' has changed the size of value")
        if R.dtype != G._array.dtype:
            raise RuntimeError(f"hook '{hook_name(fn)}' has changed the type of value (was "
                               f"torch.{scalar_type_name(G._array.dtype)}Tensor got "
                               f"torch.{scalar_type_name(R.dtype)}Tensor)")
        G = <TensorBase>res
    return G


cdef int run_post_accumulate_hooks(Py_ssize_t i) except -1:
    cdef RecordExtra ex = <RecordExtra>TAPE.recs[i].extra
    cdef PyObject* out = TAPE.recs[i].out
    if not ex.post_hooks or out == NULL:
        return 0
    t = <object>out
    for fn in list(ex.post_hooks.values()):
        check_post_accumulate_result(fn(t), t)
    return 0


cpdef check_post_accumulate_result(object result, object tensor):
    """PyTorch's rule for what a post-accumulate-grad hook returns: such a hook acts on the tensor
    in place and cannot replace it, so the result is None or the tensor it was given (the
    documented `lambda p: p.add_(p.grad, alpha=-lr)` returns it); another tensor is refused and a
    non-tensor is a TypeError."""
    if result is None or result is tensor:
        return
    if not isinstance(result, TensorBase):
        raise TypeError(f"expected Variable, but hook returned '{type_name(result)}'")
    raise RuntimeError("Tensor post accumulate grad hooks should return None.")


# -- custom autograd.Function --------------------------------------------------------------------

FUNCTION_BACKWARD = None    # tapegrad.autograd.function._backward(ctx, grads)
cdef object FUNCTION_RELEASE = None     # tapegrad.autograd.function._release(ctx)


def _set_function_runtime(backward, release):
    """Called once by tapegrad/autograd/function.py."""
    global FUNCTION_BACKWARD, FUNCTION_RELEASE
    FUNCTION_BACKWARD = backward
    FUNCTION_RELEASE = release


# The seeds of the compiled call's record the sweep runs next (take_compiled_seeds, sweep.pxi),
# read and cleared by its vjp_function.
cdef list COMPILED_SEEDS = None


cdef inline void set_compiled_seeds(list seeds) noexcept:
    global COMPILED_SEEDS
    COMPILED_SEEDS = seeds


cdef object vjp_function(Record* r, object g):
    """g: a list with one entry (ndarray or None) per output of the forward; or, for a
    tapegrad.compile'd call's one-output record (scalar ONE_RECORD), that output's adjoint."""
    global COMPILED_SEEDS
    ctx = <object>r.aux
    if isinstance(ctx, CompiledBackward):     # a tapegrad.compile'd call (replay.pxi): no Python
        seeds = COMPILED_SEEDS
        COMPILED_SEEDS = None
        if r.scalar == ONE_RECORD and r.n_in == 1:
            return (<CompiledBackward>ctx).backward_one(g, None if seeds is None else seeds[0])
        res = (<CompiledBackward>ctx).backward([g] if r.scalar == ONE_RECORD else <list>g, seeds)
    else:
        res = FUNCTION_BACKWARD(ctx, g, False)
    return res[0] if r.n_in == 1 else res


cdef object vjp_function_output(Record* r, object g):
    return g                            # never called: the sweep routes these records itself


# An OP_FUNCTION record's scalar is its number of outputs, each with an OP_FN_OUTPUT record;
# a replayed tapegrad.compile'd call with one differentiable output is one OP_FUNCTION record
# that is its output's own node (scalar ONE_RECORD, _core.pxd: no output record, no adjoint
# list; Program.record in replay.pxi).
OP_FUNCTION = register_op("FunctionBackward", vjp_function)
OP_FN_OUTPUT = register_op("FunctionOutput", vjp_function_output)


# -- kernel Functions: custom Functions tapegrad.compile replays as one step ----------------------
# A custom Function whose numeric work is two array-level staticmethods (a KernelFunction,
# tapegrad/autograd/function.py: the convolutions, pooling, the recurrent layers, ...)
#     kernel_forward(*args) -> (outputs, state)      args: forward's positional arguments with
#                                                    each tensor's ndarray in its place; outputs:
#                                                    an ndarray or a tuple of them
#     kernel_backward(state, needs, grads) -> one gradient (ndarray or None) per argument
#                                                    (needs: needs_input_grad; grads: one ndarray
#                                                    or None per output)
# runs them from its own forward and (without create_graph) backward.  While a capture runs, each
# call is noted as one OP_KERNEL step (SK_OP, capture_kernel below) whose replay step calls the
# same two on the slots' arrays: no tensor, no ctx, nothing recorded, and values and gradients
# are eager's bit for bit because they come from the very same calls.  OP_KERNEL records exist
# only in a replay's private step records (the eager tape holds OP_FUNCTION records).

cdef object replay_kernel(Record* r, tuple ins, object attrs):
    """OP_KERNEL's replay step (replay_fn): attrs = (Function class, its positional arguments
    with None where a tensor goes, the positions of the tensors); ins: their arrays."""
    cls, template, positions = <tuple>attrs
    cdef list args = list(<tuple>template)
    cdef list needs = [False] * len(args)
    cdef Py_ssize_t* inp = rec_inputs(r)
    cdef Py_ssize_t j, p
    for j in range(len(<tuple>positions)):
        p = <Py_ssize_t>(<tuple>positions)[j]
        args[p] = ins[j]
        needs[p] = inp[j] >= 0
    outs, state = cls.kernel_forward(*args)
    keep(&r.aux, (cls, state, tuple(needs), positions))
    return outs


cdef object vjp_kernel(Record* r, object g):
    """OP_KERNEL's VJP: the Function's kernel_backward on the state its replay step kept; g: the
    output's adjoint, or a list with one adjoint (or None) per output."""
    cls, state, needs, positions = <tuple>r.aux
    grads = cls.kernel_backward(state, needs, g if type(g) is list else [g])
    if r.n_in == 1:
        return grads[(<tuple>positions)[0]]
    return tuple([grads[p] for p in <tuple>positions])


OP_KERNEL = register_op("KernelFunctionBackward", vjp_kernel)
register_replay(OP_KERNEL, replay_kernel)


def _capture_unsupported(str why, bint whole_call=False):
    """Make a running capture (tapegrad.compile) fall back to eager calls: the Python-side
    registration `why` (a hook on a custom Function's node) would be skipped by a replay.
    whole_call: a replay re-running the op that noted `why` would not lift it either (the op's
    Python makes state a replay's backward does not reach)."""
    if whole_call:
        WHOLE_CALL_REFUSALS.add(why)
    capture_unsupported(why)


def _capturing_ops():
    """Whether a capture of this thread notes ops one by one now (KernelFunction.apply asks)."""
    return capturing() and CAPTURE.depth == 0


def _capture_kernel(cls, tuple args, object out, tuple saved):
    """Note a KernelFunction call cls.apply(*args) -> out that has just run eagerly as one OP_KERNEL
    step; saved: per tensor argument, then per output, whether its backward reads it (version-
    checked by the replay as by the eager record).  A call handed other data (numpy arrays, tensors
    inside lists) is not noted: its outputs stay unclaimed, so the op around it is re-run whole or
    the function runs eagerly - never a replay of stale data."""
    cdef list template = [], positions = [], tensors = [], inner = []
    cdef Py_ssize_t j
    for j in range(len(args)):
        a = args[j]
        if isinstance(a, TensorBase):
            template.append(None)
            positions.append(j)
            tensors.append(a)
        else:
            collect_tensors(a, inner)
            if inner or holds_array(a):
                return
            template.append(a)
    cdef tuple outs = <tuple>out if isinstance(out, tuple) else (out,)
    if not outs or any([not isinstance(o, TensorBase) for o in outs]):
        return
    capture_step((SK_OP, OP_KERNEL, 0, None, None,
                  (tuple(tensors), len(tensors), (cls, tuple(template), tuple(positions)), outs,
                   saved), outs[0]))
    for o in outs[1:]:
        CAPTURE.claimed.add(oid(o))


cdef int route_function_output(PyObject** adj, Py_ssize_t k, Py_ssize_t j, object g,
                               Py_ssize_t i) except -1:
    """Put output j's total adjoint `g` into slot j of Function record k's adjoint list (whose
    second half holds the output records' indices, so backward can revive dead saved outputs)."""
    cdef list lst
    cdef Py_ssize_t n_out = <Py_ssize_t>TAPE.recs[k].scalar
    if adj[k] == NULL:
        lst = [None] * n_out + [-1] * n_out
        Py_INCREF(lst)
        adj[k] = <PyObject*>lst
    else:
        lst = <list>adj[k]
    prev = lst[j]
    if g is not UNDEFINED_GRAD:         # (undefined: the slot stays None, its record noted)
        lst[j] = g if prev is None else nd(prev + g)
    lst[n_out + j] = i
    return 0


def _resurrect(Py_ssize_t node, TensorBase like):
    """The output tensor of record `node`: the live one, or (when it died) a new tensor on
    like's storage that is that record's output again (so it has its grad_fn and graph)."""
    if node < 0 or node >= TAPE.n or (TAPE.recs[node].flags & RF_FREE):
        return like
    if TAPE.recs[node].out != NULL:
        return <object>TAPE.recs[node].out
    cdef TensorBase t = alias(like)
    t._node = node
    t._requires_grad = True
    TAPE.recs[node].refcnt += 1
    TAPE.recs[node].out = <PyObject*>t
    return t


def _on_node_of(TensorBase original, TensorBase value):
    """`value` (a saved-tensor hook's copy of `original`, unpacked for a create_graph backward)
    as PyTorch's unpacked saved variable: a tensor on value's storage at original's place in
    the graph (its record, not as its output), so derivatives through it reach original's
    history (a leaf's: the leaf)."""
    if not original._requires_grad:
        return value
    return attached_to_node(original._node, value)


def _on_input_node_of(Py_ssize_t fi, Py_ssize_t j, TensorBase value):
    """_on_node_of for input j of Function record fi, a tensor that has died since it was saved:
    the copy goes to that input's record, which fi still holds (during fi's backward)."""
    if fi < 0 or fi >= TAPE.n or (TAPE.recs[fi].flags & RF_FREE) or \
            TAPE.recs[fi].op != OP_FUNCTION or j < 0 or j >= TAPE.recs[fi].n_in:
        return value
    return attached_to_node(rec_inputs(&TAPE.recs[fi])[j], value)


cdef object attached_to_node(Py_ssize_t k, TensorBase value):
    """A tensor on value's storage at record k's place in the graph (not as its output)."""
    if k < 0 or k >= TAPE.n or (TAPE.recs[k].flags & RF_FREE):
        return value
    cdef TensorBase t = alias(value)
    t._node = k
    t._requires_grad = True
    TAPE.recs[k].refcnt += 1
    return t


def _revive_function_output(Py_ssize_t fi, Py_ssize_t j, TensorBase like):
    """During a create_graph backward of Function record `fi`: its saved output j died without a
    gradient, so its output record is gone.  Give it back as a new output record of `fi` (on
    like's storage), so that derivatives through the saved value reach the Function again, as
    PyTorch rebuilds a saved output from the Function node.  The sweep holds `fi` (and every
    index) in place while it runs; the new record comes after it, as the tape's order needs."""
    if fi < 0 or fi >= TAPE.n or (TAPE.recs[fi].flags & RF_FREE) or \
            TAPE.recs[fi].op != OP_FUNCTION:
        raise RuntimeError(f"internal error: record {fi} is not a live custom Function")
    begin_record(1)
    cdef TensorBase t = alias(like)
    cdef Py_ssize_t si = TAPE.append(OP_FN_OUTPUT, 1, &fi)
    TAPE.recs[si].scalar = <double>j
    TAPE.recs[si].out = <PyObject*>t
    t._node = si
    t._requires_grad = True
    return t


cdef int release_function_ctx(Py_ssize_t i) except -1:
    """After a backward without retain_graph: the ctx drops its saved tensors."""
    if TAPE.recs[i].aux == NULL:
        return 0
    ctx = <object>TAPE.recs[i].aux
    if isinstance(ctx, CompiledBackward):
        after = (<CompiledBackward>ctx).release()
        if after is not None:           # the ctx was a replay's pooled state, free again now: the
            replace_aux(i, after)       # record keeps a grad_fn that does not hold it
    elif FUNCTION_RELEASE is not None:
        FUNCTION_RELEASE(ctx)
    return 0


cdef tuple next_function(Py_ssize_t i):
    """The (node, output index) pair grad_fn.next_functions shows for an input whose gradient
    flows to record i (-1: none): a custom Function's output names its output number."""
    if i < 0:
        return (None, 0)
    cdef int k = <int>TAPE.recs[i].scalar if TAPE.recs[i].op == OP_FN_OUTPUT else 0
    return (make_grad_fn(i), k)


def _grad_accumulator(TensorBase t):
    """The AccumulateGrad node of leaf `t` that requires grad (what grad_fn.next_functions
    shows for it)."""
    if not t._requires_grad or not is_leaf_c(t):
        raise RuntimeError("_grad_accumulator: expected a leaf tensor that requires grad")
    begin_record(0)                     # (its LEAF record may be appended)
    return make_grad_fn(node_for_input(t))


def _edge_tensor(node, Py_ssize_t output_nr):
    """The live tensor whose gradient flows along the edge (node, output_nr) (a GradientEdge
    given to autograd.grad / backward as an input): the output of node's record, or of the
    custom Function's output record `output_nr` when node is a Function's ctx.  The tape knows
    a gradient by its record and reads the input's shape and dtype from the tensor, so an edge
    whose tensor is gone is refused (PyTorch's engine needs no tensor)."""
    cdef Py_ssize_t i, k = -1
    if isinstance(node, GradFn):
        k = (<GradFn>node)._node         # (split's pieces: one record, one grad_fn each)
    else:
        for i in range(TAPE.n - 1, -1, -1):
            if (TAPE.recs[i].op == OP_FN_OUTPUT and not (TAPE.recs[i].flags & RF_FREE)
                    and <Py_ssize_t>TAPE.recs[i].scalar == output_nr
                    and function_ctx_of(i) is node):
                k = i
                break
    if k < 0 or TAPE.recs[k].out == NULL:
        raise RuntimeError("tapegrad: the tensor of this GradientEdge is no longer alive (or its "
                           "node is not one tapegrad can differentiate to); pass the tensor "
                           "itself")
    return <object>TAPE.recs[k].out


cdef object function_ctx_of(Py_ssize_t node):
    """The grad_fn of a custom Function's output: its ctx (kept in the Function record's aux)."""
    cdef Py_ssize_t k = TAPE.recs[node].inp[0] if TAPE.recs[node].op == OP_FN_OUTPUT else node
    if k < 0 or TAPE.recs[k].aux == NULL:
        return None
    ctx = <object>TAPE.recs[k].aux
    if isinstance(ctx, CompiledBackward):   # a replayed call's record holds its replay state,
        face = ctx.grad_fn_node()           # whose grad_fn is made when first read (replay.pxi)
        if face is not ctx:
            replace_aux(k, face)
        return face
    return ctx


cdef void replace_aux(Py_ssize_t i, object value) noexcept:
    """Record i's aux becomes `value` (the old one is dropped last: it may run code)."""
    cdef PyObject* old = TAPE.recs[i].aux
    keep(&TAPE.recs[i].aux, value)
    Py_XDECREF(old)


cdef bint differentiable_output(object o, object returned, tuple non_differentiable):
    """Whether a custom Function's output o (what forward `returned`, or a view made of it)
    gets a node: a floating or complex tensor not marked non-differentiable."""
    if not isinstance(o, TensorBase) or any(returned is d for d in non_differentiable):
        return False
    cdef int typenum = cnp.PyArray_TYPE((<TensorBase>o)._array)
    return cnp.PyTypeNum_ISFLOAT(typenum) or cnp.PyTypeNum_ISCOMPLEX(typenum)


def _function_record(ctx, tuple args, object result, tuple dirty, tuple non_differentiable):
    """Link the outputs of a custom Function's forward (`result`: a tensor, or a tuple that may
    hold non-tensors) into the tape; returns what apply() gives the caller."""
    cdef bint is_tuple = isinstance(result, tuple)
    cdef tuple outs = <tuple>result if is_tuple else (result,)
    cdef Py_ssize_t n_in = len(args), n_out = len(outs), j, fi, si, old
    cdef list final = list(outs), olds = []
    cdef TensorBase t
    cdef Py_ssize_t* inp = NULL
    cdef bint recording = False
    if MetaTensorType is not None:      # the meta device is in use: a meta input makes the
        for a in args:                  # outputs meta tensors (_meta.py), nothing is recorded
            if is_meta_tensor(a):
                return meta_entry("function", (ctx, args, result))
    if grad_enabled():
        for a in args:
            if isinstance(a, TensorBase) and fresh(<TensorBase>a) == 0 and (
                    <TensorBase>a)._requires_grad:
                recording = True
                break
    for j in range(n_out):
        o = outs[j]
        if not isinstance(o, TensorBase):
            continue
        if any(o is d for d in dirty):
            if recording and (<TensorBase>o)._requires_grad and is_leaf_c(<TensorBase>o):
                raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                   "in-place operation.")
            bump_version(<TensorBase>o)    # PyTorch counts a marked write as one more version
            continue
        if (any(o is a for a in args) or (<TensorBase>o)._node >= 0
                or (<TensorBase>o)._requires_grad):
            final[j] = make_view((<TensorBase>o)._array, <TensorBase>o)  # PyTorch: a view of it
            if getattr(type(o), "_dtype_class", False):
                # a view of a bfloat16 tensor is one (its float32 storage alone read float32:
                # every module's full backward hook passed its bfloat16 input on as float32,
                # fuzz 67400028)
                final[j].__class__ = BFLOAT16_CLASS_REFS[0]
    if not recording:
        return tuple(final) if is_tuple else final[0]
    ctx._input_meta = tuple(((<TensorBase>a)._array.shape, (<TensorBase>a)._array.dtype)
                            if isinstance(a, TensorBase) else None for a in args)
    ctx._output_meta = tuple(((<TensorBase>o)._array.shape, (<TensorBase>o)._array.dtype)
                             if isinstance(o, TensorBase) else None for o in final)
    # the inputs and outputs of dtype bfloat16 (float32 storage, marked by their class): as
    # PyTorch's engine, backward receives the outputs' gradients as bfloat16 tensors and what
    # it returns for the inputs is cast to bfloat16 (autograd/function.py)
    # (set only when there are some: a compiled function's ctx takes no new attributes)
    bfloat16_outputs = tuple(j for j, o in enumerate(final)
                             if getattr(type(o), "_dtype_class", False))
    bfloat16_inputs = tuple(j for j, a in enumerate(args)
                            if getattr(type(a), "_dtype_class", False))
    if bfloat16_outputs:
        ctx._bfloat16_outputs = bfloat16_outputs
    if bfloat16_inputs:
        ctx._bfloat16_inputs = bfloat16_inputs
    trace = anomaly_trace() if ANOMALY_MODE else None
    inp = <Py_ssize_t*>malloc(max(n_in, 1) * sizeof(Py_ssize_t))
    if inp == NULL:
        raise MemoryError()
    try:
        begin_record(n_in + n_out + 1)
        for j in range(n_in):
            a = args[j]
            inp[j] = node_for_input(<TensorBase>a) if isinstance(a, TensorBase) else -1
        fi = TAPE.append(OP_FUNCTION, <int>n_in, inp)
    finally:
        free(inp)
    keep(&TAPE.recs[fi].aux, ctx)
    TAPE.recs[fi].scalar = <double>n_out
    # grad_fn.next_functions of the ctx: one (node, output index) per tensor argument.  The ctx
    # holds its inputs' nodes (not record indices, which move when the tape compacts); they are
    # older records, so no reference cycle forms.  (A compiled call's node has no such list.)
    cdef Py_ssize_t* fin = rec_inputs(&TAPE.recs[fi])
    if not isinstance(ctx, CompiledBackward):
        ctx._next_functions = tuple(next_function(fin[j]) for j in range(n_in)
                                    if isinstance(args[j], TensorBase))
    cdef list differentiable = [j for j in range(n_out) if differentiable_output(
        final[j], outs[j], non_differentiable)]
    # (where PyTorch has no custom Function, ctx._plain_output_views: tapegrad's own view ops
    # written as Functions, a non-reentrant checkpoint, a compiled call, outputs that are views
    # are ordinary ones)
    cdef bint guard_views = not (isinstance(ctx, CompiledBackward)
                                 or getattr(ctx, "_plain_output_views", False))
    for j in range(n_out - 1, -1, -1):     # output 0's record is the youngest: the sweep
        o = final[j]                        # meets the outputs (and their hooks) in order
        # (marked by the tensor forward returned: final[j] may be a view made of it above)
        if j not in differentiable:
            continue
        t = <TensorBase>o
        if guard_views and t._base is not None and not any(outs[j] is d for d in dirty):
            # PyTorch's CreationMeta of a view among the outputs: an in-place write into it
            # (or into a view of it) would be recorded as a view's CopySlices that bypasses
            # this Function's backward, so it is refused (views.pxi, view_refusal)
            if len(differentiable) > 1:
                t._view_kind = VIEW_MULTI_OUTPUT
                t._view_output = <int>j
            else:
                t._view_kind = VIEW_IN_CUSTOM_FUNCTION
        si = TAPE.append(OP_FN_OUTPUT, 1, &fi)
        TAPE.recs[si].scalar = <double>j
        TAPE.recs[si].out = <PyObject*>t
        old = t._node                   # a dirty (modified in place) output is rebound
        if old >= 0:
            TAPE.recs[si].flags |= TAPE.recs[old].flags & RF_RETAIN_GRAD   # (adopt_record's why)
            TAPE.recs[old].out = NULL
            olds.append(old)
        t._node = si
        t._requires_grad = True
        if j in bfloat16_outputs:       # (its class came before its record: mark's call missed)
            extra_of(si).bfloat16_gradient = True
        history_rewritten(t)            # a dirty base: its views taken before are stale
        if t._base is not None:         # a dirty view: this record is its history now
            t._view_version = version_of(t).value
    if trace is not None:
        extra_of(fi).trace = trace
    # Decrefs last: they may free records and run arbitrary code.
    TAPE.decref(fi)                     # the output records hold the Function record
    for old in olds:
        TAPE.decref(old)
    return tuple(final) if is_tuple else final[0]


def _version_of(TensorBase t):
    """The Version object (shared by views and aliases) of t's storage."""
    return version_of(t)


def modified_in_place_error(arr, grad_fn_name, version, expected):
    """PyTorch's error for a saved value (array `arr`, or None where only its version was kept)
    written in place after it was saved: its version moved from `expected`.  `grad_fn_name` is
    the node PyTorch names ("which is output 0 of Exp": the node's name without "Backward0",
    "Mean1" for MeanBackward1, the namespace before a hand-written node's name), None for a
    leaf.  The one message of the sweeps and of custom Functions' saved_tensors."""
    what = ("a tensor" if arr is None else
            f"[{BACKEND_TYPE_NAMES.get(arr.dtype.name, arr.dtype.name)} {list(arr.shape)}]")
    which = ""
    if grad_fn_name is not None:
        k = grad_fn_name.rfind("Backward")
        tail = grad_fn_name[k + 8:] if k >= 0 else "-"
        if grad_fn_name in ("CopyBackwards", "CopySlices"):
            node = "torch::autograd::" + grad_fn_name
        elif tail.isdigit() or not tail:
            node = grad_fn_name[:k] + ("" if tail == "0" else tail)
        else:
            node = grad_fn_name
        which = f", which is output 0 of {node},"
    hint = ("Hint: the backtrace further above shows the operation that failed to compute its "
            "gradient. The variable in question was changed in there or anywhere later. Good "
            "luck!" if ANOMALY_MODE else
            "Hint: enable anomaly detection to find the operation that failed to compute its "
            "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")
    return RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: {what}{which} is at version {version}; expected version {expected} "
        f"instead. {hint}")


def _grad_fn_name_of(TensorBase t):
    """The name of t's grad_fn for messages (None for leaves).  A view whose base was written
    since it was made reads as PyTorch's regenerated AsStridedBackward0, without regenerating it
    here (reading t.grad_fn would append a record; messages only look)."""
    if t._base is not None and not special_view(t) and _is_stale_view(t):
        return "AsStridedBackward0"
    if t._node < 0 or TAPE.recs[t._node].op == OP_LEAF:
        return None
    return type(make_grad_fn(t._node)).__name__


# -- anomaly mode --------------------------------------------------------------------------------

ANOMALY_MODE = 0
cdef int ANOMALY_CHECK_NAN = 1


def _set_anomaly_enabled(bint enabled, bint check_nan=True):
    """Returns the previous (enabled, check_nan)."""
    global ANOMALY_MODE, ANOMALY_CHECK_NAN
    prev = (bool(ANOMALY_MODE), bool(ANOMALY_CHECK_NAN))
    ANOMALY_MODE = 1 if enabled else 0
    ANOMALY_CHECK_NAN = 1 if check_nan else 0
    return prev


def _anomaly_enabled():
    return bool(ANOMALY_MODE)


def _anomaly_check_nan_enabled():
    return bool(ANOMALY_CHECK_NAN)


cdef list anomaly_trace():
    """The current Python stack as [(code, line), ...], innermost first; taken in C, so it runs
    no Python code (it may be called between reserving tape room and appending)."""
    cdef list out = []
    cdef PyFrameObject* f = PyEval_GetFrame()
    cdef PyFrameObject* back
    cdef PyObject* code
    if f == NULL:
        return out
    Py_INCREF(<object><PyObject*>f)
    while f != NULL:
        code = <PyObject*>PyFrame_GetCode(f)
        out.append((<object>code, PyFrame_GetLineNumber(f)))
        Py_DECREF(<object>code)         # the list's tuple holds it now
        back = PyFrame_GetBack(f)
        Py_DECREF(<object><PyObject*>f)
        f = back
    return out


cdef int attach_anomaly_trace(Py_ssize_t i, object trace) except -1:
    extra_of(i).trace = trace
    return 0


cdef str record_name(Record* r):
    if r.op == OP_FUNCTION and r.aux != NULL:
        return type(<object>r.aux).__name__
    return grad_fn_name(r)


cdef object PACKAGE_DIR = None


cdef list user_frames(object trace):
    """The trace's frames, outermost first, without tapegrad's own innermost frames (the Tensor
    method or Function.apply that recorded the op): the user's forward call comes last."""
    global PACKAGE_DIR
    import os
    if PACKAGE_DIR is None:
        PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
    cdef list frames = list(reversed(trace))   # (no negative indices: wraparound is off)
    while (len(frames) > 1 and
           os.path.abspath(frames[len(frames) - 1][0].co_filename).startswith(PACKAGE_DIR)):
        frames.pop()
    return frames


cdef str format_trace(list frames):
    import linecache
    lines = []
    for code, line in frames:
        lines.append(f'  File "{code.co_filename}", line {line}, in {code.co_name}\n')
        src = linecache.getline(code.co_filename, line).strip()
        if src:
            lines.append(f"    {src}\n")
    return "".join(lines)


cdef object anomaly_reraise(Record* r, object e):
    """Warn of error `e` from record r's VJP naming the op and the forward call that created it,
    then re-raise `e` unchanged: PyTorch keeps the error's own message (scripts print it) and
    gives the traceback of the forward call in the warning only."""
    name = record_name(r)
    trace = (<RecordExtra>r.extra).trace if r.extra != NULL else None
    if trace is None:
        where = "  (no forward trace: the op was recorded while anomaly mode was off)\n"
    else:
        where = format_trace(user_frames(trace))
    warnings.warn(triggered_internally(f"Error detected in {name}. Traceback of forward call that "
                                       f"caused the error:\n{where}",
                                       "torch/csrc/autograd/python_anomaly_mode.cpp:122"),
                  UserWarning, stacklevel=2)
    raise e


cdef int anomaly_check_nan(Record* r, object grads) except -1:
    if not ANOMALY_CHECK_NAN:
        return 0
    gs = (grads,) if r.n_in == 1 else grads
    for j, g in enumerate(gs):
        if g is None or not isinstance(g, np.ndarray) or g.dtype.kind not in "fc":
            continue
        if np.isnan(g).any():
            raise RuntimeError(f"Function '{record_name(r)}' returned nan values in its {j}th "
                               "output.")
    return 0


TENSOR_METHODS.update(register_hook=register_hook,
                      register_post_accumulate_grad_hook=register_post_accumulate_grad_hook)


def scalar_type_name_of(object np_dt):
    """PyTorch's ScalarType name ("Float", "Double", ...) of a numpy dtype, for messages."""
    return scalar_type_name(np.dtype(np_dt))


def can_cast_np(object src, object dst):
    """PyTorch's canCast for numpy dtypes (torch_castable), for the Python modules."""
    return torch_castable(np.dtype(src), np.dtype(dst))


def c_type_name_of(object np_dt):
    """The C++ type name PyTorch's messages give a numpy dtype ("float", "c10::complex<float>")."""
    name = np.dtype(np_dt).name
    return C_TYPE_NAMES.get(name, name)


def _sum_to(object arr, object shape):
    """Sum `arr` over broadcast dims down to `shape` (a gradient for an input of that shape)."""
    return sum_to(nd(arr), tuple(shape))


def _anomaly_trace_of(Py_ssize_t i):
    """Record i's forward trace in anomaly mode (for tests and debugging), or None."""
    if i < 0 or i >= TAPE.n or TAPE.recs[i].extra == NULL:
        return None
    return (<RecordExtra>TAPE.recs[i].extra).trace


def _current_trace():
    return anomaly_trace()


def np_dtype_to_dtype(object np_dt):
    """The tapegrad dtype of a numpy dtype."""
    return DTYPE_OF_NUM[np.dtype(np_dt).num]
