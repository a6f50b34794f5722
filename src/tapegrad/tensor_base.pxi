# ---------------------------------------------------------------------------------------------
# TensorBase: the compiled part of a tensor.  It holds the value (an ndarray), the gradient, the
# requires_grad flag and the index of the tape record that produced it (or its LEAF record).
# tapegrad.Tensor (Python) subclasses it for the conveniences; everything on the per-op path
# (arithmetic slots, result construction, recording) is here.
# ---------------------------------------------------------------------------------------------

import warnings

from cpython.object cimport PyTypeObject
from cpython.ref cimport Py_INCREF


# nd, wrap, version_of, keep_saved, node_for_input, fresh and is_leaf_c, on every op's path, are
# defined in _core.pxd so that each extension module inlines them.

TensorType = TensorBase                 # replaced by tapegrad.Tensor when the package imports
EMPTY_TUPLE = ()


def _set_tensor_class(cls):
    """Called once by tapegrad/tensor.py: results of ops are created as instances of `cls`."""
    global TensorType
    if not isinstance(cls, type) or not issubclass(cls, TensorBase):
        raise TypeError("the tensor class must subclass TensorBase")
    TensorType = cls


# torch.Size (tapegrad/tensor.py's Size), replaced when the package imports.
cdef object SizeType = tuple


def _set_size_class(cls):
    """Called once by tapegrad/tensor.py: the class of t.shape."""
    global SizeType
    SizeType = cls


cdef extern from *:
    """
    /* A tuple subclass's instance holding the items of a tuple, made by tuple's own tp_new: the
     * class's Python-level __new__ (Size's check of its items) and a lookup of tuple.__new__ are
     * both skipped (~50 ns of every t.shape read). */
    static PyObject* tg_tuple_subclass_new(PyObject* cls, PyObject* items) {
        PyObject* args = PyTuple_Pack(1, items);
        PyObject* made;
        if (args == NULL) return NULL;
        made = PyTuple_Type.tp_new((PyTypeObject*)cls, args, NULL);
        Py_DECREF(args);
        return made;
    }
    """
    object tg_tuple_subclass_new(object cls, object items)


def shape_of(TensorBase t):
    """t.shape as a torch.Size: Tensor.shape's getter, compiled so that a read (at every step of
    a script) runs no Python frame (nor Size's check of its items: numpy's sizes are ints)."""
    return tg_tuple_subclass_new(SizeType, t._array.shape)


MetaTensorType = None
MetaParameterType = None
META_ENTRY = None


def _set_meta_classes(tensor_cls, parameter_cls, entry):
    """Called by tapegrad/_meta.py: the meta tensor classes, and `entry(name, args)`, which runs
    a CPU op `name` that was handed a meta tensor among `args` (PyTorch's device error, or a
    meta result where the CPU tensors are 0-d)."""
    global MetaTensorType, MetaParameterType, META_ENTRY
    MetaTensorType = tensor_cls
    MetaParameterType = parameter_cls
    META_ENTRY = entry


cdef object meta_entry(str name, tuple args):
    return META_ENTRY(name, args)


cdef object as_ndarray(object x):
    """nd's conversion of a non-array (a numpy or Python scalar) to an ndarray."""
    return np.asarray(x)


def wrap_array(object arr, bint requires_grad=False):
    """Tensor creation for the facade: wrap ndarray `arr` (not copied) as a leaf tensor."""
    arr = nd(arr)
    cdef int type_num = cnp.PyArray_TYPE(<cnp.ndarray>arr)
    if type_num == LONGLONG_NUM:            # (dtypes.pxi: the same integers, one type number)
        arr = arr.view(NP_INT64)
    elif type_num == ULONGLONG_NUM:
        arr = arr.view(np.uint64)
    cdef TensorBase t = wrap(arr)
    if not COMPLEX_IN_USE and dtype_kind(<cnp.ndarray>arr) == c'c':
        _complex_in_use()
    if requires_grad:
        t._set_requires_grad(True)
    return t


def _swap_tensor_impl(TensorBase a, TensorBase b):
    """torch.utils.swap_tensors' last step (torch._C._swap_tensor_impl): exchange everything the
    two tensor objects hold at the C level (value, grad, autograd state, view state), so each
    object keeps its identity and takes the other's content; the records the two produced are
    pointed at their new owners.  The facade swaps the Python-level class and __dict__."""
    capture_unsupported("torch.utils.swap_tensors")
    a._array, b._array = b._array, a._array
    a._grad, b._grad = b._grad, a._grad
    a._requires_grad, b._requires_grad = b._requires_grad, a._requires_grad
    a._inference, b._inference = b._inference, a._inference
    a._node, b._node = b._node, a._node
    a._version, b._version = b._version, a._version
    a._base, b._base = b._base, a._base
    a._gen, b._gen = b._gen, a._gen
    a._view_kind, b._view_kind = b._view_kind, a._view_kind
    a._view_output, b._view_output = b._view_output, a._view_output
    a._view_version, b._view_version = b._view_version, a._view_version
    # a record's `out` is its output tensor (borrowed): it follows the content
    for t, other in ((a, b), (b, a)):
        if t._node >= 0 and TAPE.recs[t._node].out == <PyObject*>other:
            TAPE.recs[t._node].out = <PyObject*>t


# PyTorch's numpy dtype refusal lists the types tensor_from_numpy takes.
cdef str NUMPY_TYPES_TAKEN = ("float64, float32, float16, complex64, complex128, int64, int32, "
                              "int16, int8, uint64, uint32, uint16, uint8, and bool")


def plainly_shared(object a):
    """torch.from_numpy's common case, a writable non-empty ndarray (not a subclass), as the
    tensor on a view of its own of a's memory; None for any other array, which the facade
    (creation.py's _shared_with_numpy) takes with its warnings and stride bookkeeping."""
    if type(a) is not np.ndarray or not cnp.PyArray_ISWRITEABLE(<cnp.ndarray>a) \
            or cnp.PyArray_SIZE(<cnp.ndarray>a) == 0:
        return None
    return tensor_from_numpy(a.view())


def tensor_from_numpy(cnp.ndarray arr):
    """torch.from_numpy's tensor on ndarray `arr`'s memory (not copied), after PyTorch's refusals
    (check_numpy_convertible).  Also Tensor.__eq__'s conversion of an array operand, so
    `t == a[::-1]` raises as in PyTorch."""
    check_numpy_convertible(arr)
    return wrap_array(arr)


def check_numpy_convertible(cnp.ndarray arr):
    """PyTorch's refusals of an ndarray, in its order: strides that are not whole elements,
    negative strides, a foreign byte order (ValueError), a dtype no tensor has (TypeError).
    torch.tensor and the legacy constructors read an array through the same conversion as
    torch.from_numpy before copying it, so they refuse the same arrays."""
    cdef int i, nd_ = cnp.PyArray_NDIM(arr)
    cdef Py_ssize_t item = cnp.PyArray_ITEMSIZE(arr)
    for i in range(nd_):
        if item and cnp.PyArray_STRIDE(arr, i) % item:
            raise ValueError("given numpy array strides not a multiple of the element byte size. "
                             "Copy the numpy array to reallocate the memory.")
    for i in range(nd_):
        if cnp.PyArray_STRIDE(arr, i) < 0:
            raise ValueError("At least one stride in the given numpy array is negative, and "
                             "tensors with negative strides are not currently supported. (You "
                             "can probably work around this by making a copy of your array  with "
                             "array.copy().) ")
    dt = arr.dtype
    if not dt.isnative:
        raise ValueError("given numpy array has byte order different from the native byte "
                         "order. Conversion between byte orders is currently not supported.")
    # (numpy's unsigned long long, a second type number of uint64's bits, is refused by PyTorch;
    # its signed twin long long is read as int64)
    if not ((dt.kind == "f" and item in (2, 4, 8)) or (dt.kind == "c" and item in (8, 16))
            or (dt.kind in "iu" and item in (1, 2, 4, 8)) or dt.kind == "b") \
            or cnp.PyArray_TYPE(arr) == ULONGLONG_NUM:
        raise TypeError(f"can't convert np.ndarray of type numpy.{dt.type.__name__}. The only "
                        f"supported types are: {NUMPY_TYPES_TAKEN}.")


# hook(tensor, value) after `tensor.data = value`: tapegrad/_bfloat16.py's, whose tensors carry
# their dtype in their class (None until bfloat16 is first used).
cdef object DATA_CLASS_HOOK = None


def _set_data_class_hook(hook):
    global DATA_CLASS_HOOK
    DATA_CLASS_HOOK = hook


# route(tensor, gradient, retain_graph, create_graph, inputs) for a backward() called while a
# compiled function captures on this thread: tapegrad/_step_phases.py notes it as a phase of a
# whole training step (None outside captures: the eager path tests one pointer).
cdef object STEP_PHASE_ROUTE = None
# grad_route(tensor) for a `.grad = None` in such a capture: a phase too (a replay clears the
# .grad again before its backward, where skipping it let the backward accumulate onto the old one)
cdef object GRAD_PHASE_ROUTE = None


def _set_step_phase_route(route, grad_route=None):
    global STEP_PHASE_ROUTE, GRAD_PHASE_ROUTE
    STEP_PHASE_ROUTE = route
    GRAD_PHASE_ROUTE = grad_route


cdef class Version:
    """The version counter of a storage, shared by the tensors that view it (tensor._version)."""


cdef inline TensorBase alias(TensorBase t):
    """A graph-free tensor on t's storage that shares t's version counter (detach)."""
    cdef TensorBase a = wrap(t._array)
    a._version = version_of(t)
    # (PyTorch's detach of an inference tensor is an inference tensor that takes in-place writes
    # outside inference mode; its views do not)
    a._inference = INFERENCE_DETACHED if t._inference else 0
    return a


cdef TensorBase make_view(object arr, TensorBase base):
    """A tensor for `arr`, a numpy view of base's storage: it shares base's version counter
    and remembers its base, so in-place writes through either are seen by the sweep's checks."""
    cdef TensorBase v = wrap(arr)
    become_view(v, base, grad_enabled())
    return v


# The live views taken under no_grad of each leaf that requires grad: id(leaf) -> [weakref to
# the leaf, {id(view): weakref to the view}, the view count after the last sweep] (keyed by id:
# a tensor's == is elementwise). PyTorch's such view requires grad while its base does (its
# requires_grad reads the base's); the core keeps the flag on each tensor, where every op reads
# it, so the leaf's requires_grad_() passes its new flag on to them (requires_grad_(False) on
# the leaf left the view requiring grad, its ops recording and its in-place writes refused).
# Registering is on the path of every view op under no_grad, so the weakrefs carry no
# callbacks: dead entries are swept when a table has doubled since its last sweep.
import weakref as _weakref
cdef dict NO_GRAD_VIEWS = {}
cdef Py_ssize_t NO_GRAD_LEAVES_SWEPT = 0        # len(NO_GRAD_VIEWS) after the last sweep


cdef int follow_base_requires_grad(TensorBase v) except -1:
    """Register no_grad view v of a leaf that requires grad (NO_GRAD_VIEWS)."""
    global NO_GRAD_LEAVES_SWEPT
    base = v._base
    key = id(base)
    entry = NO_GRAD_VIEWS.get(key)
    if entry is None or (<list>entry)[0]() is not base:
        if len(NO_GRAD_VIEWS) >= 2 * NO_GRAD_LEAVES_SWEPT + 16:
            for k in [k for k, e in NO_GRAD_VIEWS.items() if (<list>e)[0]() is None]:
                del NO_GRAD_VIEWS[k]
            NO_GRAD_LEAVES_SWEPT = len(NO_GRAD_VIEWS)
        entry = NO_GRAD_VIEWS[key] = [_weakref.ref(base), {}, 0]
    cdef dict views = <dict>(<list>entry)[1]
    if len(views) >= 2 * <Py_ssize_t>(<list>entry)[2] + 16:
        for k in [k for k, r in views.items() if r() is None]:
            del views[k]
        (<list>entry)[2] = len(views)
    views[id(v)] = _weakref.ref(v)
    return 0


cdef list no_grad_views_of(TensorBase leaf):
    """The live views NO_GRAD_VIEWS holds for `leaf`."""
    entry = NO_GRAD_VIEWS.get(id(leaf))
    if entry is None or (<list>entry)[0]() is not leaf:
        return []
    return [v for v in (ref() for ref in list((<dict>(<list>entry)[1]).values()))
            if v is not None]


cdef int become_view(TensorBase v, TensorBase base, bint grad_mode) except -1:
    """Make new tensor v, on base's storage, a view of base taken with grad mode `grad_mode`."""
    v._version = version_of(base)
    # (a view is an inference tensor iff its base is one; a writable detached one's views are not
    # writable, as PyTorch's)
    v._inference = INFERENCE_TENSOR if base._inference else 0
    v._base = base if base._base is None else base._base
    v._gen = ((<TensorBase>v._base)._gen << 1) | (not grad_mode)
    init_view(v, base)
    if v._gen & 1:
        # A view taken under no_grad requires grad when its input does (a leaf without grad_fn,
        # as PyTorch's); ops on it record, but the gradient reaching it goes nowhere (no_grad_view_
        # drops_grad) and in-place writes to it with grad enabled are refused (check_inplace).
        v._requires_grad = base._requires_grad
        if v._requires_grad and is_leaf_c(<TensorBase>v._base):
            follow_base_requires_grad(v)
    return 0


def _reinterpreting_view(TensorBase view, TensorBase base, bint grad_mode):
    """Make `view`, made outside the view machinery on base's storage read as another dtype
    (.real, .imag, view_as_real, view_as_complex, by tapegrad._complex under grad mode
    `grad_mode`), a view of base as PyTorch's are: it shares base's version counter, and once
    base or another view of it is written in place, its history is regenerated from the base's
    (views.pxi, rebase_view: over the storage's real numbers)."""
    become_view(view, base, grad_mode)


cdef TensorBase wrap_result(object out, TensorBase x):
    """wrap(out) for an op on x; when out is a numpy view of x's storage (reshape, transpose,
    basic indexing, ...) the result is a view tensor: it shares x's version counter."""
    cdef PyObject* b
    cdef PyObject* xb
    if cnp.PyArray_Check(out):
        b = cnp.PyArray_BASE(<cnp.ndarray>out)
        if b != NULL:
            xb = cnp.PyArray_BASE(<cnp.ndarray>x._array)
            if b == <PyObject*>x._array or (xb != NULL and b == xb):
                return make_view(out, x)
    return wrap(out)


cdef str INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a clone "
    "to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
    "`torch.inference_mode()`.")


cdef int check_saveable(TensorBase t) except -1:
    """PyTorch's refusal to save an inference tensor for backward (ops only record outside
    inference mode, so any recording op that saves one raises)."""
    if t._inference:
        raise RuntimeError(INFERENCE_SAVED)
    return 0


cdef str NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field to "
    "be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access "
    "the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See "
    "github.com/pytorch/pytorch/pull/30531 for more information.")


# PyTorch's hand-written C++ nodes (not generated from its derivatives table) give their
# namespace in name(), as AccumulateGrad does: "torch::autograd::CopySlices".
cdef frozenset NAMESPACED_NODES = frozenset(("CopySlices", "CopyBackwards"))


@cython.auto_pickle(False)   # (unpicklable: see Tape's note)
cdef class GradFn:
    """The grad_fn of a non-leaf tensor: names its backward op and keeps its record alive."""

    def __cinit__(self):
        self._node = -1

    def __dealloc__(self):
        cdef Py_ssize_t i = self._node
        if i >= 0 and TAPE is not None:
            self._node = -1
            TAPE.recs[i].fn = NULL
            TAPE.decref(i)

    def name(self):
        if TAPE.recs[self._node].op == OP_LEAF:
            return "torch::autograd::AccumulateGrad"
        name = type(self).__name__
        return "torch::autograd::" + name if name in NAMESPACED_NODES else name

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) -> None or new grad_inputs, after this node computed
        the gradients of its inputs (one entry per input, None where none flows); on an
        AccumulateGrad node, fn((), (grad,)) after the leaf's .grad was accumulated."""
        if not callable(fn):
            raise TypeError("register_hook(): argument 'fn' must be callable, got "
                            f"{type_name(fn)}")
        # (in PyTorch's order where the op shows its inputs in another: graph_layout.pxi)
        return register_node_hook(self._node, hook_in_layout(self, fn))

    def register_prehook(self, fn):
        """fn(grad_outputs) -> None or new grad_outputs, before this node runs (with the
        gradient arriving at its output, as a tensor hook on that output)."""
        if not callable(fn):
            raise TypeError("register_prehook(): argument 'fn' must be callable, got "
                            f"{type_name(fn)}")
        return register_node_prehook(self._node, fn)

    @property
    def metadata(self):
        """A dict kept with this node for as long as it lives (empty at first)."""
        ex = extra_of(self._node)
        if ex.metadata is None:
            ex.metadata = {}
        return ex.metadata

    @property
    def next_functions(self):
        """((node, 0), ...) per input edge, as PyTorch's: the input's grad_fn, the
        AccumulateGrad node of a leaf that requires grad, or None where no gradient flows
        (the index is the output number of a custom Function's node, else 0: built-in ops record
        one output per node), in PyTorch's order and with its intermediate nodes where the op
        registered a layout (graph_layout.pxi)."""
        if TAPE.recs[self._node].op == OP_LEAF:
            return ()
        # Kept: PyTorch's node objects live as long as their nodes, so a script that walks the
        # graph keeping only id()s of the nodes it has seen (torchviz, node counters) never meets
        # a recycled id; here a node's object lives while a reader holds it, and the nodes below
        # one it has read live with it.  (An EdgeNode refers back to its owner: a cycle the
        # garbage collector frees.)
        if self._edges is None:
            self._edges = node_edges(self)  # (graph_layout.pxi: the op's layout, if it has one)
        return self._edges

    @property
    def variable(self):
        """The leaf tensor an AccumulateGrad node delivers its gradient to."""
        cdef Record* r = &TAPE.recs[self._node]
        if r.op != OP_LEAF:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute 'variable'")
        return None if r.out == NULL else <object>r.out

    def __repr__(self):
        return f"<{type(self).__name__} object at {id(self):#x}>"

    # -- what the node saved, read by the `_saved_*` attributes (tapegrad/autograd/saved.py) --------

    @property
    def _opcode(self):
        """The record's opcode (several opcodes may share one PyTorch name)."""
        return TAPE.recs[self._node].op

    @property
    def _aux(self):
        """The record's attribute payload (its layout is the op's own) or None."""
        cdef Record* r = &TAPE.recs[self._node]
        return None if r.aux == NULL else <object>r.aux

    @property
    def _scalar(self):
        return TAPE.recs[self._node].scalar

    @property
    def _released(self):
        """Whether a backward without retain_graph freed the saved values."""
        return bool(TAPE.recs[self._node].flags & RF_RELEASED)

    def _check_saved(self):
        """Raise as PyTorch does when saved values are read after a backward freed them, or after
        an in-place write overwrote one."""
        if TAPE.recs[self._node].flags & RF_PACK_PENDING:
            flush_packs()               # (saved_hooks.pxi)
        cdef Record* r = &TAPE.recs[self._node]
        if r.flags & RF_RELEASED:
            raise RuntimeError(BACKWARD_TWICE)
        check_saved_versions(r)

    def _unpacked(self, int j):
        """Saved value j as the saved-tensor unpack hook gives it (a tensor), None when the value
        was not packed by a hook."""
        self._check_saved()
        if j < 0 or j >= MAX_SAVED:
            return None
        return unpacked_slot(self._node, j)

    def _slot_value(self, int j):
        """Saved value j as the VJP reads it (an array or a Python number), None when unused."""
        self._check_saved()
        cdef Record* r = &TAPE.recs[self._node]
        if j < 0 or j >= MAX_SAVED or r.saved[j] == NULL:
            return None
        if type(<object>r.saved[j]) is PackedSaved:
            return (<PackedSaved>r.saved[j]).unpacked()[1]
        return <object>r.saved[j]

    def _pack_slot(self, int j, pack_hook, unpack_hook):
        """SavedTensor.register_hooks: pack saved value j now, unpack it whenever it is read."""
        self._check_saved()
        cdef Record* r = &TAPE.recs[self._node]
        if j < 0 or j >= MAX_SAVED or r.saved[j] == NULL:
            raise RuntimeError("tapegrad: this node keeps no value for this saved tensor")
        if not cnp.PyArray_Check(<object>r.saved[j]) and type(<object>r.saved[j]) is not PackedSaved:
            raise RuntimeError("tapegrad: this saved value is not a tensor")
        if type(<object>r.saved[j]) is PackedSaved:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already "
                               "been set. Hint: only one pair of hooks is allowed at a time.")
        pack_slot(self._node, j, pack_hook, unpack_hook, 0, True)

    def _input_tensor(self, int j, int slot=-1):
        """Input j as PyTorch unpacks a saved input: the input tensor itself while it lives; once
        it died, a new tensor on saved value `slot` that becomes its record's output again (so it
        has that grad_fn), when the slot holds the input's own storage; None when neither."""
        cdef Record* r = &TAPE.recs[self._node]
        if j < 0 or j >= r.n_in:
            return None
        cdef Py_ssize_t i = rec_inputs(r)[j]
        if i < 0:
            return None
        if TAPE.recs[i].out != NULL:
            return <object>TAPE.recs[i].out
        if slot < 0 or slot >= MAX_SAVED or r.saved[slot] == NULL or r.ver[slot] == NULL:
            return None
        cdef TensorBase t = wrap(<object>r.saved[slot])
        t._version = <Version>r.ver[slot]
        t._requires_grad = True
        t._node = i
        TAPE.recs[i].refcnt += 1
        TAPE.recs[i].out = <PyObject*>t
        return t

    def _as_saved_input(self, int j, TensorBase t):
        """What unpack gave for input j, as PyTorch shows an unpacked saved input (in input j's
        place in the graph): the input itself when t holds its values, a new tensor on t's values
        made the input's record's output again when the input died; else t as it is (a record
        has one output tensor: only that one is renumbered when the tape compacts)."""
        cdef Record* r = &TAPE.recs[self._node]
        if j < 0 or j >= r.n_in or rec_inputs(r)[j] < 0:
            return t
        cdef Py_ssize_t k = rec_inputs(r)[j]
        if TAPE.recs[k].out != NULL:
            live = <object>TAPE.recs[k].out
            return live if (<TensorBase>live)._array is t._array else t
        cdef TensorBase v = wrap(t._array)
        v._version = version_of(t)
        v._requires_grad = True
        v._node = k
        TAPE.recs[k].refcnt += 1
        TAPE.recs[k].out = <PyObject*>v
        return v

    def _result_tensor(self, int j, shape=None):
        """The op's output as a saved result: a new tensor on saved value j (the output's
        storage; j < 0: the live output's), reshaped to `shape` if given.  While the output
        lives this is a graph-free alias of it (a record has one output tensor: only that one is
        moved when the tape compacts); once it died, the new tensor becomes the record's output
        again, with this node as its grad_fn, as PyTorch unpacks a saved output."""
        self._check_saved()
        cdef Record* r = &TAPE.recs[self._node]
        if 0 <= j < MAX_SAVED and r.saved[j] != NULL:
            value = <object>r.saved[j]
        elif r.out != NULL:
            value = (<TensorBase>r.out)._array
        else:
            return None
        value = nd(value)
        if shape is not None:
            value = value.reshape(shape)
        cdef TensorBase t = wrap(value)
        if 0 <= j < MAX_SAVED and r.ver[j] != NULL:
            t._version = <Version>r.ver[j]
        elif r.out != NULL:
            t._version = version_of(<TensorBase>r.out)
        if r.out == NULL:
            t._requires_grad = True
            t._node = self._node
            r.refcnt += 1
            r.out = <PyObject*>t
        return t

    def __getattr__(self, str name):
        if SAVED_ATTRIBUTES is not None and name.startswith(("_saved_", "_raw_saved_")):
            return SAVED_ATTRIBUTES(self, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __dir__(self):
        names = list(object.__dir__(self))
        if SAVED_ATTRIBUTES is not None:
            names.extend(SAVED_ATTRIBUTES(self, None))
        return sorted(set(names))


# The reader of grad_fn._saved_* attributes, installed by tapegrad/autograd/saved.py:
# reader(grad_fn, name) -> value (raises AttributeError for a name the node lacks);
# reader(grad_fn, None) -> the names it has.
cdef object SAVED_ATTRIBUTES = None


def _set_saved_attribute_reader(reader):
    global SAVED_ATTRIBUTES
    SAVED_ATTRIBUTES = reader


# -- Tensor.grad_dtype ----------------------------------------------------------------------------
# The dtype a leaf's .grad has: by default the leaf's own; set to another dtype, the engine casts
# the gradients it delivers (and autograd.grad's results) to it; set to None, a .grad of any
# dtype may be assigned.  Rare, so it is kept in the tensor's instance __dict__ ("_grad_dtype":
# a dtype or None; absent: the default), and looked up only once some tensor has set one.
cdef bint GRAD_DTYPES_SET = False
cdef object GRAD_DTYPE_DEFAULT = object()


cdef object grad_dtype_setting(TensorBase t):
    """t's grad_dtype as set: GRAD_DTYPE_DEFAULT, None, or a tapegrad dtype."""
    if not GRAD_DTYPES_SET:
        return GRAD_DTYPE_DEFAULT
    attributes = getattr(t, "__dict__", None)
    if attributes is None:
        return GRAD_DTYPE_DEFAULT
    return (<dict>attributes).get("_grad_dtype", GRAD_DTYPE_DEFAULT)


cdef object grad_creation_dtype(TensorBase t):
    """The numpy dtype of the gradients the engine gives t (its .grad, autograd.grad's result)."""
    setting = grad_dtype_setting(t)
    if setting is GRAD_DTYPE_DEFAULT or setting is None:
        return t._array.dtype
    return (<dtype>setting).np_dtype


def _grad_creation_dtype(TensorBase t):
    """grad_creation_dtype for the graph sweep's module."""
    return grad_creation_dtype(t)


cdef int check_grad_fits(TensorBase t, object gdt, tuple shape) except -1:
    """PyTorch's checks of a gradient assigned to t.grad (the dtype before the size)."""
    setting = grad_dtype_setting(t)
    wanted = t._array.dtype if setting is GRAD_DTYPE_DEFAULT else (
        None if setting is None else (<dtype>setting).np_dtype)
    if wanted is not None and gdt != wanted:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{C_TYPE_NAMES[gdt.name]}' to a "
            f"tensor with grad_dtype '{scalar_type_name(wanted)}'. The gradient "
            "must match the tensor's grad_dtype (defaults to the tensor's dtype). You can set "
            "the tensor's grad_dtype attribute with a specific dtype, or None to allow any "
            "dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and its "
            "gradient may break downstream systems that assume they match.")
    if shape != t._array.shape:
        raise RuntimeError(f"attempting to assign a gradient of size '{list(shape)}' to a "
                           f"tensor of size '{list(t._array.shape)}'. Please ensure that the "
                           "gradient and the tensor are the same size")
    return 0


# -- the name of a record's node -----------------------------------------------------------------
# A composite (an op tapegrad builds from several recorded ops: sort from an index, hardtanh from
# a where) leaves its result on the record of its last internal op, while PyTorch names that node
# after the composite (SortBackward0, HardtanhBackward0).  _name_grad_fn gives the record that
# name: Record.name indexes GRAD_FN_NAMES (0: the op's own name, OP_NAMES[op]).  Kept in the
# record, the name moves with it when the tape compacts, is copied with it into the sweeps, and
# costs no allocation; every reader of a node's name (grad_fn, the anomaly, profiler and in-place
# error messages) reads it through grad_fn_name.
cdef list GRAD_FN_NAMES = [None]
cdef dict GRAD_FN_NAME_CODES = {}       # name -> its index in GRAD_FN_NAMES


cdef str grad_fn_name(Record* r):
    """The PyTorch name of record r's node: the composite's that made its output, else its op's."""
    return OP_NAMES[r.op] if r.name == 0 else <str>GRAD_FN_NAMES[r.name]


def _name_grad_fn(result, str name):
    """Name the grad_fn of `result` (the output of a composite's last internal op) `name`, the
    node PyTorch records for the composite; returns result.  Gradients are untouched: only the
    name changes.  Nothing happens for a tensor without history (no cost without grad), a leaf,
    or a record whose grad_fn object was already handed out (its class is fixed, and
    `y.grad_fn is y.grad_fn` must hold).  The output of an autograd Function (whose grad_fn is
    its ctx, shared by its outputs) gets a ctx of a subclass so named.  The caller must pass a
    tensor its composite recorded, never one of its inputs returned as it is."""
    if not isinstance(result, TensorBase):
        return result
    cdef Py_ssize_t i = (<TensorBase>result)._node
    if i < 0 or TAPE is None or i >= TAPE.n:
        return result
    cdef Record* r = &TAPE.recs[i]
    if r.op == OP_FUNCTION or r.op == OP_FN_OUTPUT:
        rename_function_node(function_ctx_of(i), name)
        return result
    if r.op == OP_LEAF or r.fn != NULL or r.out != <PyObject*>result:
        return result
    code = GRAD_FN_NAME_CODES.get(name)
    if code is None:
        code = len(GRAD_FN_NAMES)
        GRAD_FN_NAMES.append(name)
        GRAD_FN_NAME_CODES[name] = code
    r.name = <int>code
    return result


cdef dict RENAMED_FUNCTION_NODES = {}   # (ctx class, name) -> its subclass of that name


cdef int rename_function_node(object ctx, str name) except -1:
    """A Function's ctx becomes an instance of a subclass of its class named `name` (made once
    per class and name): the same object, so hooks and `grad_fn is grad_fn` are kept."""
    if ctx is None or type(ctx).__name__ == name:
        return 0
    cls = type(ctx)
    renamed = RENAMED_FUNCTION_NODES.get((cls, name))
    if renamed is None:
        try:
            renamed = type(name, (cls,), {"__module__": cls.__module__, "__qualname__": name})
        except TypeError:               # a ctx of a final (compiled) type keeps its name
            return 0
        RENAMED_FUNCTION_NODES[(cls, name)] = renamed
    ctx.__class__ = renamed
    return 0


cdef dict GRAD_FN_CLASSES = {}          # name -> its GradFn subclass (one class per name)


cdef object make_grad_fn(Py_ssize_t node):
    """The grad_fn object of record `node`: one per record while it lives (so `is` works)."""
    if TAPE.recs[node].fn != NULL:
        return <object>TAPE.recs[node].fn
    cdef int op = TAPE.recs[node].op
    if op == OP_FN_OUTPUT or op == OP_FUNCTION:
        return function_ctx_of(node)    # a custom Function's grad_fn is its ctx (ops_function)
    name = grad_fn_name(&TAPE.recs[node])
    cls = GRAD_FN_CLASSES.get(name)
    if cls is None:
        # Module "builtins", as PyTorch's C++ node classes: type(y.grad_fn) prints
        # <class 'SumBackward0'>.  Nothing pickles or imports these classes by module.
        cls = type(name, (GradFn,), {"__module__": "builtins"})
        GRAD_FN_CLASSES[name] = cls
    cdef GradFn fn = <GradFn>cls.__new__(cls)
    fn._node = node
    TAPE.recs[node].refcnt += 1
    TAPE.recs[node].fn = <PyObject*>fn
    return fn


cdef str size_mismatch_message(tuple a, tuple b):
    """PyTorch's broadcasting error for shapes a and b (which do not broadcast)."""
    cdef Py_ssize_t k
    for k in range(1, min(len(a), len(b)) + 1):     # (from the right; no wraparound here)
        x, y = a[len(a) - k], b[len(b) - k]
        if x != y and x != 1 and y != 1:
            return (f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                    f"at non-singleton dimension {max(len(a), len(b)) - k}")
    return "The size of tensor a must match the size of tensor b"


cdef int rebind_saved_inputs(TensorBase t, object old, object new) except -1:
    """`t.data = other` swaps t's storage under the records that saved t as an input: PyTorch's
    SavedVariable of an input holds the tensor itself, so its backward reads the new values
    (`y = x * x; x.data = z; y.backward()` differentiates at z), while a saved output keeps its
    own alias of the old storage (exp's result).  A record that saved t's array itself as an
    input reads the new array from now on; t's own record (its saved output) is left alone.  New
    values of another dtype of the same kind are read in the saved dtype (the VJP's kernels see
    one dtype), and of a shape that does not broadcast with the saved one make that record's
    backward raise PyTorch's size error (its formula meets the graph's gradient of the old
    shape), not numpy's."""
    if old is new or not (cnp.PyArray_Check(old) and cnp.PyArray_Check(new)):
        return 0
    if old.shape != new.shape:
        try:
            np.broadcast_shapes(old.shape, new.shape)
            return 0                    # (PyTorch broadcasts there: left as saved)
        except ValueError:
            pass
        reading = None
    elif old.dtype != new.dtype:
        if not np.can_cast(new.dtype, old.dtype, "same_kind"):
            return 0                    # (complex values for a real formula: left as saved)
        reading = new.astype(old.dtype)
    else:
        reading = new
    cdef Py_ssize_t i
    cdef int j
    cdef Record* r
    for i in range(TAPE.n):
        r = &TAPE.recs[i]
        if (r.flags & RF_FREE) or i == t._node:
            continue
        for j in range(MAX_SAVED):
            if r.saved[j] == <PyObject*>old:
                if reading is not None:
                    value = reading
                else:
                    value = refused_on_unpack(old, j, size_mismatch_message(old.shape,
                                                                            new.shape))
                Py_INCREF(value)
                r.saved[j] = <PyObject*>value
                Py_DECREF(old)
                if reading is None:
                    r.flags |= RF_PACKED
    return 0


@cython.auto_pickle(False)   # (unpicklable: see Tape's note)
cdef class TensorBase:

    def __cinit__(self):
        self._grad = None
        self._requires_grad = False
        self._node = -1

    def __dealloc__(self):
        cdef Py_ssize_t i = self._node
        if i >= 0 and TAPE is not None:
            self._node = -1
            if TAPE.recs[i].out == <PyObject*>self:  # (a saved result shares its output's record)
                TAPE.recs[i].out = NULL
            TAPE.decref(i)

    # -- autograd state --------------------------------------------------------------------------

    cdef int _set_requires_grad(self, bint flag) except -1:
        if not is_leaf_c(self):
            if flag:
                raise RuntimeError("you can only change requires_grad flags of leaf variables.")
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().")
        if flag and not self._can_require_grad():
            # (the message of PyTorch's `.requires_grad = True`; requires_grad_() and Parameter
            # check first and word it as PyTorch's do)
            raise RuntimeError("only Tensors of floating point and complex dtype can require "
                               "gradients")
        if flag and self._inference and not inference_mode_on():
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed.")
        if not flag and no_grad_view_drops_grad(self):
            # PyTorch: a view requires grad while its base does, whatever its own flag (fuzz
            # seed 54002622: requires_grad_(False) on a no_grad view left it True)
            return 0
        if flag != self._requires_grad:
            # a replay reads requires_grad once per call (its signature and the plan's gradient
            # slots), so a call that flips it runs eagerly (tapegrad.compile)
            capture_unsupported("requires_grad_() or .requires_grad = on a tensor")
        self._requires_grad = flag
        if NO_GRAD_VIEWS:
            if self._base is not None:
                entry = NO_GRAD_VIEWS.get(id(self._base))
                if flag and entry is not None:          # its own flag now holds it True
                    (<dict>(<list>entry)[1]).pop(id(self), None)
            else:
                for v in no_grad_views_of(self):
                    (<TensorBase>v)._requires_grad = flag
        return 0

    @property
    def requires_grad(self):
        if not stale_special_view(self):  # (PyTorch reads it without regenerating grad_fn)
            fresh(self)
            return self._requires_grad
        # a no_grad or multi-output view whose base was since written: PyTorch's view reports
        # its base's requires_grad (using the view then raises, see refresh_view)
        return self._requires_grad or (<TensorBase>self._base)._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if value is not True and value is not False:    # (PyTorch's setter takes no 1 either)
            raise RuntimeError("requires_grad must be a bool")
        self._set_requires_grad(value)

    def _can_require_grad(self):
        """Whether the dtype can carry gradients (floating point or complex)."""
        return (cnp.PyTypeNum_ISFLOAT(cnp.PyArray_TYPE(self._array))
                or cnp.PyTypeNum_ISCOMPLEX(cnp.PyArray_TYPE(self._array)))

    def requires_grad_(self, requires_grad=True):
        """Set requires_grad in place (leaves only) and return self."""
        # (PyTorch's message names position 1, as nearly every call gives it)
        flag = check_bool("requires_grad_", "requires_grad", requires_grad, 1)
        if flag and not self._can_require_grad():
            # PyTorch words this refusal differently from the attribute setter's
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if flag and not is_leaf_c(self):
            # (a result of the graph already requires grad: PyTorch's method lets it be, only the
            # attribute setter and requires_grad_(False) refuse a non-leaf)
            return self
        self._set_requires_grad(flag)
        return self

    def is_inference(self):
        """True for a tensor created in inference mode (or a view of one)."""
        return self._inference != 0

    def _set_inference(self, bint flag):
        """For tensors made by a Python constructor (ops' results get it from wrap): whether
        this is an inference tensor."""
        self._inference = flag

    @property
    def is_leaf(self):
        fresh(self)
        return is_leaf_c(self)

    @property
    def grad_fn(self):
        fresh(self)
        if self._node < 0 or TAPE.recs[self._node].op == OP_LEAF:
            return None
        return make_grad_fn(self._node)

    @property
    def grad(self):
        if stale_special_view(self):      # a leaf's .grad, readable as in PyTorch
            return self._grad
        fresh(self)
        if (not is_leaf_c(self) and self._grad is None
                and not (TAPE.recs[self._node].flags & RF_RETAIN_GRAD)):
            # stacklevel 1 is the innermost Python frame (a compiled getter has none): the line
            # that read .grad, where PyTorch's C++ warning points too.
            warnings.warn(triggered_internally(NON_LEAF_GRAD_WARNING,
                                               "build/aten/src/ATen/core/TensorBody.h:493"),
                          UserWarning, stacklevel=1)
        return self._grad

    @grad.setter
    def grad(self, value):
        if GRAD_PHASE_ROUTE is not None and capturing():
            if value is None:
                GRAD_PHASE_ROUTE(self)              # (noted, then set with the capture paused)
                return
            # a tensor made or held by the call: a replay would not assign it again
            capture_unsupported("it assigns a tensor to a .grad (a replay would not assign it "
                                "again)")
        if value is None:
            self._grad = None
            return
        if not isinstance(value, TensorBase):
            if getattr(type(value), "is_sparse", False) is True:
                # a sparse COO gradient (tapegrad/_sparse_coo.py), as embedding(sparse=True)
                # gives a dense weight: PyTorch's dtype and size checks, then kept as it is
                check_grad_fits(self, value.dtype.np_dtype, tuple(value.shape))
                self._grad = value
                return
            raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                            f"{type_name(value)}")
        if value is self:
            raise RuntimeError("can't assign Variable as its own grad")
        check_grad_fits(self, (<TensorBase>value)._array.dtype, (<TensorBase>value)._array.shape)
        self._grad = value

    @property
    def grad_dtype(self):
        """The dtype .grad must have (default: the tensor's); None allows any.  Leaves only."""
        if not is_leaf_c(self):
            raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
        setting = grad_dtype_setting(self)
        return self.dtype if setting is GRAD_DTYPE_DEFAULT else setting

    @grad_dtype.setter
    def grad_dtype(self, value):
        global GRAD_DTYPES_SET
        if not is_leaf_c(self):
            self.grad                   # (PyTorch reads .grad first: its non-leaf warning)
            raise RuntimeError("grad_dtype can only be set on leaf tensors.")
        if value is not None and not isinstance(value, dtype):
            raise RuntimeError(f"grad_dtype must be a torch.dtype or None, but got "
                               f"{type_name(value)}")
        if (value is not None and isinstance(self._grad, TensorBase)
                and (<TensorBase>self._grad)._array.dtype != (<dtype>value).np_dtype):
            current = (<TensorBase>self._grad)._array.dtype
            raise RuntimeError(
                f"Cannot set grad_dtype to '{scalar_type_name((<dtype>value).np_dtype)}' because "
                f"there is already a gradient with dtype '{C_TYPE_NAMES[current.name]}'. Please "
                "clear the gradient (.grad = None) before changing grad_dtype, or ensure the new "
                "grad_dtype matches the existing gradient's dtype.")
        self.__dict__["_grad_dtype"] = value
        GRAD_DTYPES_SET = True

    def retain_grad(self):
        """Ask backward() to populate .grad of this non-leaf tensor (a no-op on leaves, and,
        as in PyTorch, on a view that had no history and whose base has one since, until its
        history is read: PyTorch tests its leafness before regenerating it; fuzz seed 54106587)."""
        if stale_view_without_history(self):
            return
        fresh(self)
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if not is_leaf_c(self):
            TAPE.recs[self._node].flags |= RF_RETAIN_GRAD

    @property
    def retains_grad(self):
        try:
            fresh(self)
        except RuntimeError:
            # a view PyTorch refuses to rebase (made under no_grad, its base since written):
            # reading grad_fn raises, but retains_grad answers False, as PyTorch's
            return False
        return (not is_leaf_c(self)) and bool(TAPE.recs[self._node].flags & RF_RETAIN_GRAD)

    def detach(self):
        """A new leaf tensor sharing this tensor's storage (and its version counter), cut from
        the graph."""
        if PROFILING:
            token = profiler_open("detach", (self,))
            try:
                return alias(self)
            finally:
                profiler_close(token)
        return alias(self)

    def detach_(self):
        """Cut this tensor from the graph in place: it becomes a leaf that does not require grad."""
        cdef Py_ssize_t i = self._node
        if self._base is not None:
            # PyTorch refuses: the view would stay tied to its base's storage and version
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                "called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
        if i >= 0:
            self._node = -1
            if TAPE.recs[i].out == <PyObject*>self:
                TAPE.recs[i].out = NULL
            TAPE.decref(i)
        self._requires_grad = False
        return self

    @property
    def data(self):
        """The value as a tensor that shares storage and is cut from the graph.  Unlike detach(),
        it has a version counter of its own, as PyTorch's: writes through `.data` are invisible
        to autograd (`conv.weight.data *= mask` between a forward and its backward raises
        nothing; the backward reads the new values, as PyTorch's does)."""
        cdef TensorBase a = alias(self)
        a._version = None
        return a

    @data.setter
    def data(self, value):
        # PyTorch's set_data swaps the storage and keeps this tensor's own version counter
        if not isinstance(value, TensorBase):
            raise TypeError(f"Variable data has to be a tensor, but got {type_name(value)}")
        # a tensor that requires grad keeps requiring it, so its new values must be of a dtype
        # that can (`emb.weight.data = torch.arange(30).view(10, 3)` is refused, as PyTorch's)
        if self._requires_grad and not (<TensorBase>value)._can_require_grad():
            raise RuntimeError("data set to a tensor that requires gradients must be floating "
                               "point or complex dtype")
        old = self._array
        if self._node >= 0 and old.shape != (<TensorBase>value)._array.shape:
            note_output_shape(self._node, old.shape)
        self._array = (<TensorBase>value)._array
        rebind_saved_inputs(self, old, self._array)
        if DATA_CLASS_HOOK is not None:
            DATA_CLASS_HOOK(self, value)
        if self._node >= 0 and old.dtype != self._array.dtype:
            split_accumulator(self, old.dtype)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into the .grad of every leaf that requires grad (or only of
        `inputs`), as torch.autograd.backward(self, gradient, ...)."""
        if STEP_PHASE_ROUTE is not None and capturing():
            return STEP_PHASE_ROUTE(self, gradient, retain_graph, create_graph, inputs)
        backward_impl(self, gradient, retain_graph, bool(create_graph), inputs)

    # -- metadata --------------------------------------------------------------------------------

    @property
    def dtype(self):
        return dtype_of_array(self._array)

    @property
    def ndim(self):
        return cnp.PyArray_NDIM(self._array)

    # -- arithmetic (C number slots; forward + record in ops_elementwise.pxi) --------------------

    def __add__(self, other):
        if PROFILING:
            return profiled_binary("add", OP_ADD, self, other)
        return binary_op(OP_ADD, self, other)

    def __radd__(self, other):
        # PyTorch's __radd__ is self.add(other): the tensor is the first input of the node
        # (grad_fn.next_functions lists it first); addition commutes, so the value is the same.
        if PROFILING:
            return profiled_binary("add", OP_ADD, self, other)
        return binary_op(OP_ADD, self, other)

    def __sub__(self, other):
        if PROFILING:
            return profiled_binary("sub", OP_SUB, self, other)
        return binary_op(OP_SUB, self, other)

    def __rsub__(self, other):
        if PROFILING:
            return profiled_binary("rsub", OP_RSUB, other, self)
        return binary_op(OP_RSUB, other, self)

    def __mul__(self, other):
        if PROFILING:
            return profiled_binary("mul", OP_MUL, self, other)
        return binary_op(OP_MUL, self, other)

    def __rmul__(self, other):
        # As __radd__: PyTorch records `2 * t` as t.mul(2), the tensor first.
        if PROFILING:
            return profiled_binary("mul", OP_MUL, self, other)
        return binary_op(OP_MUL, self, other)

    def __truediv__(self, other):
        if PROFILING:
            return profiled_binary("div", OP_DIV, self, other)
        return binary_op(OP_DIV, self, other)

    def __rtruediv__(self, other):
        # PyTorch computes other / self as self.reciprocal() * other (Tensor.__rdiv__): a
        # MulBackward0 over a ReciprocalBackward0 that saves the reciprocal, not self, so writing
        # self in place after the forward is legal; and the values are the reciprocal's times
        # other (other / self rounds differently at times).  torch.div(other, self) divides.
        if is_meta_tensor(self):
            return binary_op(OP_DIV, other, self)
        if PROFILING:
            recip = profiled_call("reciprocal", TORCH_FUNCTIONS["reciprocal"], (self,))
            res = profiled_binary("mul", OP_MUL, recip, other)
        else:
            recip = TORCH_FUNCTIONS["reciprocal"](self)
            res = binary_op(OP_MUL, recip, other)
        if res is not NotImplemented:
            return res
        # PyTorch's __rdiv__ multiplies with Python's `*`, under a wrapper that turns a
        # TypeError into NotImplemented: an operand mul refuses goes on to its reflected method
        # (array / t: ndarray.__rmul__, numpy's ufunc on the reciprocal, see as_operand).
        try:
            return recip * other
        except TypeError:
            return NotImplemented

    def __pow__(self, other, modulo):
        if modulo is not None:
            return NotImplemented
        if PROFILING:
            return profiled_binary("pow", OP_POW, self, other)
        return binary_op(OP_POW, self, other)

    def __rpow__(self, other, modulo):
        if modulo is not None:
            return NotImplemented
        if PROFILING:
            return profiled_binary("pow", OP_POW, other, self)
        return binary_op(OP_POW, other, self)

    def __neg__(self):
        if PROFILING:
            token = profiler_open("neg", (self,))
            try:
                return unary_op(OP_NEG, self)
            finally:
                profiler_close(token)
        return unary_op(OP_NEG, self)

    def __pos__(self):
        if self._array.dtype.kind == "b":       # (torch.positive's refusal, as PyTorch's)
            raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
        return self

    def __getitem__(self, key):
        if PROFILING:
            token = profiler_open("__getitem__", (self, key))
            try:
                return INDEX_OP(self, key)
            finally:
                profiler_close(token)
        return INDEX_OP(self, key)

    def __setitem__(self, key, value):
        if PROFILING:
            token = profiler_open("__setitem__", (self, key, value))
            try:
                SETITEM_OP(self, key, value)
            finally:
                profiler_close(token)
            return
        SETITEM_OP(self, key, value)

    def __delitem__(self, key):
        # (without it, Cython's slot raises NotImplementedError; PyTorch's is a TypeError)
        raise TypeError("Tensor does not support deleting items")

    # -- in place (ops_inplace.pxi) ----------------------------------------------------------------

    def __iadd__(self, other):
        if PROFILING:
            token = profiler_open("add_", (self, other))
            try:
                return INPLACE_BINARY(OP_ADD, self, other)
            finally:
                profiler_close(token)
        return INPLACE_BINARY(OP_ADD, self, other)

    def __isub__(self, other):
        if PROFILING:
            token = profiler_open("sub_", (self, other))
            try:
                return INPLACE_BINARY(OP_SUB, self, other)
            finally:
                profiler_close(token)
        return INPLACE_BINARY(OP_SUB, self, other)

    def __imul__(self, other):
        if PROFILING:
            token = profiler_open("mul_", (self, other))
            try:
                return INPLACE_BINARY(OP_MUL, self, other)
            finally:
                profiler_close(token)
        return INPLACE_BINARY(OP_MUL, self, other)

    def __itruediv__(self, other):
        if PROFILING:
            token = profiler_open("div_", (self, other))
            try:
                return INPLACE_BINARY(OP_DIV, self, other)
            finally:
                profiler_close(token)
        return INPLACE_BINARY(OP_DIV, self, other)

    @property
    def _view_base(self):
        """The tensor this one is a view of (the root of a chain of views), or None
        (torch: t._base)."""
        return self._base

    def _is_view(self):
        """Whether this tensor is a view of another one (shares its storage, torch's sense)."""
        return self._base is not None

    @property
    def output_nr(self):
        """Which output of its grad_fn this tensor is: a custom Function's output number, a
        split / chunk / unbind piece's index, else 0."""
        fresh(self)
        if self._node >= 0 and TAPE.recs[self._node].op == OP_FN_OUTPUT:
            return <int>TAPE.recs[self._node].scalar
        if self._view_kind == VIEW_MULTI_OUTPUT and self._node >= 0 and not is_leaf_c(self):
            return self._view_output
        return 0

    @property
    def _version_value(self):
        """How many in-place writes this tensor's storage has seen (torch: t._version)."""
        if self._inference == INFERENCE_TENSOR:
            raise RuntimeError("Inference tensors do not track version counter.")
        return 0 if self._version is None else self._version.value


# -- the garbage collector sees through a tensor into the node only it keeps alive ------------------
# A record holds Python objects in C fields the collector cannot see: saved values, its aux (a
# custom Function's ctx), its extra (tensor hooks).  A cycle through them lived for good: a hook
# that refers to its own tensor (`y.register_hook(lambda g, y=y: ...)`: tensor -> record ->
# RecordExtra -> closure -> tensor), or a custom Function that keeps its output on its ctx
# (`ctx.y = y`: y -> its output record -> the Function record's aux, the ctx -> y).  PyTorch's
# THPVariable traverse visits the Python objects of its grad_fn when the tensor is that node's
# only owner; tapegrad's does the same with its node: its record when the tensor is the record's
# one reference (refcnt 1: no later record, no grad_fn object, no second tensor holds it), and
# for a custom Function's output, the Function record too when that output record is its one
# reference (the two records are PyTorch's one node).  Unreachable, such a cycle is then cleared
# through the ctx or the hook dicts, and the tensor's release frees the records.
# Only sole ownership, because the collector subtracts one reference per visit and frees a group
# whose references all come from inside it: visiting for a record that something else also keeps
# alive would let it clear objects a live graph still needs (a ctx emptied under a later
# backward).  And only the node, as PyTorch: walking on through the records of dead intermediates
# would cost each collection the length of the graph behind every young tensor (a loop keeping
# objects while extending one chain went quadratic).

cdef extern from "Python.h":
    ctypedef int (*tg_visitproc "visitproc")(PyObject*, void*)
    ctypedef int (*tg_traverseproc "traverseproc")(PyObject*, tg_visitproc, void*)
    ctypedef struct tg_type_gc_slots "PyTypeObject":
        tg_traverseproc tp_traverse
    void PyType_Modified(object)


cdef tg_traverseproc TENSOR_FIELDS_TRAVERSE = NULL     # Cython's traverse of TensorBase's fields


cdef int visit_record_objects(Record* r, tg_visitproc visit, void* arg) noexcept:
    cdef int j, err
    for j in range(MAX_SAVED):
        if r.saved[j] != NULL:
            err = visit(r.saved[j], arg)
            if err:
                return err
    if r.aux != NULL:
        err = visit(r.aux, arg)
        if err:
            return err
    return visit(r.extra, arg) if r.extra != NULL else 0


cdef int traverse_tensor(PyObject* o, tg_visitproc visit, void* arg) noexcept:
    cdef int err = TENSOR_FIELDS_TRAVERSE(o, visit, arg)
    if err:
        return err
    cdef Py_ssize_t i = (<TensorBase>o)._node, k
    cdef Record* r
    if i < 0 or TAPE is None or i >= TAPE.n:
        return 0
    r = &TAPE.recs[i]
    if r.out != o or r.refcnt != 1 or r.fn != NULL:
        return 0
    err = visit_record_objects(r, visit, arg)
    if err or r.op != OP_FN_OUTPUT:
        return err
    k = r.inp[0]
    if k >= 0 and TAPE.recs[k].refcnt == 1:    # this output record is its one reference
        return visit_record_objects(&TAPE.recs[k], visit, arg)
    return 0


TENSOR_FIELDS_TRAVERSE = (<tg_type_gc_slots*>TensorBase).tp_traverse
(<tg_type_gc_slots*>TensorBase).tp_traverse = traverse_tensor
PyType_Modified(TensorBase)
