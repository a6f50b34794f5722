# The typed header of tapegrad's compiled core: the tape record, the tape and the tensor base type.
# Implementations live in _core.pyx and the .pxi files it includes (one per concern / op family).

from cpython.ref cimport PyObject

cdef enum:
    MAX_IN = 3              # most inputs an op records (where(cond, a, b) has three)
    MAX_SAVED = 3           # most values an op saves for its backward

# Record flags (bits of Record.flags)
cdef enum:
    RF_FREE = 1             # slot released: no tensor and no later record refers to it
    RF_RETAIN_GRAD = 2      # output tensor asked for retain_grad(): deliver its adjoint to .grad
    RF_RELEASED = 4         # saved values freed by a backward without retain_graph

cdef struct Record:
    int op                          # opcode: index into the op table (OPS)
    int n_in                        # number of inputs in `inp`
    Py_ssize_t refcnt               # 1 while the output tensor lives + 1 per live later record using it
    int flags                       # RF_* bits
    Py_ssize_t inp[MAX_IN]          # record index of each input, or -1 when no gradient flows to it
    Py_ssize_t* more                # owned: all n_in inputs when n_in > MAX_IN (cat, stack), else NULL
    PyObject* saved[MAX_SAVED]      # owned: arrays (or scalars) the VJP needs, NULL when unused
    PyObject* aux                   # owned: attribute payload (shapes, axes, index key) or NULL
    double scalar                   # scalar attribute (exponent, constant factor, count)
    PyObject* out                   # borrowed: the output tensor, NULL once it has died
    PyObject* fn                    # borrowed: the cached grad_fn object, NULL when none lives
    PyObject* ver[MAX_SAVED]        # owned: Version of the storage saved[j] lives in (or NULL)
    Py_ssize_t ver_at[MAX_SAVED]    # that Version's value when it was saved (checked by the sweep)
    PyObject* extra                 # owned: RecordExtra (tensor hooks, anomaly trace) or NULL


cdef inline Py_ssize_t* rec_inputs(Record* r) noexcept:
    """The input indices of a record: inline, or in `more` for ops with many inputs."""
    return r.more if r.more != NULL else r.inp


cdef class Tape:
    cdef Record* recs               # the arena: records in creation order (a topological order)
    cdef Py_ssize_t n               # records in use: [0, n) (some may be RF_FREE holes)
    cdef Py_ssize_t cap             # records allocated
    cdef Py_ssize_t live            # records not RF_FREE
    cdef Py_ssize_t* stack          # scratch stack for iterative release
    cdef Py_ssize_t stack_cap
    cdef Py_ssize_t sp              # top of the release stack (shared by re-entrant releases)
    cdef int sweeping               # sweeps in progress: record indices must not move meanwhile

    cdef int _resize(self, Py_ssize_t min_cap) except -1
    cdef int reserve(self, Py_ssize_t k) except -1
    cdef int compact(self) except -1
    cdef Py_ssize_t append(self, int op, int n_in, Py_ssize_t* inp) except -1
    cdef int decref(self, Py_ssize_t i) except -1
    cdef int release_saved(self, Py_ssize_t i) except -1


cdef class GradFn:
    cdef Py_ssize_t _node           # the record this grad_fn names (kept alive by one reference)


cdef class Version:
    cdef readonly Py_ssize_t value  # bumped by every in-place write to the storage it guards


cdef class TensorBase:
    cdef public object _array       # the value: a numpy ndarray (0-d for scalars), never a numpy scalar
    cdef object _grad               # accumulated gradient (a Tensor) or None
    cdef bint _requires_grad
    cdef Py_ssize_t _node           # tape record producing this tensor (or its LEAF record), -1 if none
    cdef Version _version           # shared by every tensor viewing the same storage; None until needed
    cdef object _base               # the tensor this one is a view of, or None
    cdef Py_ssize_t _gen            # a base: how often a recorded in-place write gave it a new
                                    # history; a view: 2 * its base's _gen when the view's history
                                    # was taken, + 1 if it was taken in no_grad (ops_inplace.pxi)
    cdef object __weakref__

    cdef int _set_requires_grad(self, bint flag) except -1
