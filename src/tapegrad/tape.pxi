# ---------------------------------------------------------------------------------------------
# The tape: a flat arena of fixed-size records in creation order.
#
# Creation order is a topological order (a record only refers to older records), so backward is a
# single downward walk.  Lifetimes are reference counts on records: a record lives while its output
# tensor lives or a live later record uses it.  Releasing is iterative (explicit stack), so a chain
# of a million records is released without recursion.  When the topmost records are free the arena
# shrinks, so a training loop (record, backward, drop) reuses the same slots every step.  Lifetimes
# overlap (the previous step's loss lives while the next step records), leaving holes under a live
# top; when the arena is full and at most half of it is live, `compact` slides the live records
# down in order (creation order is preserved, so the tape stays topologically sorted) and renumbers
# every holder of an index: the output tensor, the cached grad_fn and later records' inputs.
#
# Indices are stable except inside `reserve`, which ops call before they read any input's index.
#
# Thread safety: all mutation happens with the GIL held and never spans a call that can run Python
# code or release the GIL; callers re-fetch `&tape.recs[i]` after any such call, because an append
# from another thread may move the arena.
# ---------------------------------------------------------------------------------------------

from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memset
from cpython.ref cimport Py_INCREF, Py_XDECREF


# auto_pickle(False) on the classes that hold C state (a non-trivial __cinit__): Cython otherwise
# generates a __reduce_cython__ and __setstate_cython__ for each that only raise TypeError, as
# pickle's default does without them (code in the wheel for nothing, issue 18).  The classes
# Cython can pickle by their fields (Version, RemovableHandle, the grad-mode guards ...) keep it.
@cython.auto_pickle(False)
cdef class Tape:

    def __cinit__(self):
        self.recs = NULL
        self.n = 0
        self.cap = 0
        self.live = 0
        self.stack = NULL
        self.stack_cap = 0
        self.sp = 0
        self.sweeping = 0
        self._resize(64)

    def __dealloc__(self):
        # The module-level tape lives as long as the interpreter; free what it owns on teardown.
        cdef Py_ssize_t i
        cdef int j
        if self.recs != NULL:
            for i in range(self.n):
                for j in range(MAX_SAVED):
                    Py_XDECREF(self.recs[i].saved[j])
                    Py_XDECREF(self.recs[i].ver[j])
                Py_XDECREF(self.recs[i].aux)
                Py_XDECREF(self.recs[i].extra)
                free(self.recs[i].more)
            free(self.recs)
        free(self.stack)

    cdef int _resize(self, Py_ssize_t min_cap) except -1:
        """Grow the arena (doubling) to hold at least `min_cap` records."""
        cdef Py_ssize_t new_cap = self.cap if self.cap > 0 else 64
        while new_cap < min_cap:
            new_cap *= 2
        if new_cap == self.cap:
            return 0
        cdef Record* grown = <Record*>realloc(self.recs, new_cap * sizeof(Record))
        if grown == NULL:
            raise MemoryError(f"tapegrad: cannot grow the tape to {new_cap} records")
        cdef Py_ssize_t* stack = <Py_ssize_t*>realloc(self.stack, new_cap * sizeof(Py_ssize_t))
        if stack == NULL:
            self.recs = grown
            raise MemoryError(f"tapegrad: cannot grow the tape to {new_cap} records")
        self.recs = grown
        self.stack = stack
        self.cap = new_cap
        self.stack_cap = new_cap
        return 0

    cdef int reserve(self, Py_ssize_t k) except -1:
        """Make room for `k` appends that will not move any record (compacting or growing now)."""
        if self.n + k <= self.cap:
            return 0
        # Never while a sweep walks indices or a release cascade holds them on its stack.
        if self.sweeping == 0 and self.sp == 0 and self.live <= self.n // 2:
            self.compact()
        if self.n + k > self.cap:
            self._resize(self.n + k)
        return 0

    cdef int compact(self) except -1:
        """Slide live records down over the holes, keeping their order; renumber references."""
        cdef Py_ssize_t* remap = <Py_ssize_t*>malloc(max(self.n, 1) * sizeof(Py_ssize_t))
        cdef Py_ssize_t i, j = 0
        cdef Py_ssize_t* ins
        cdef int q
        cdef Record* r
        if remap == NULL:
            raise MemoryError("tapegrad: cannot compact the tape")
        for i in range(self.n):
            if self.recs[i].flags & RF_FREE:
                remap[i] = -1
                continue
            remap[i] = j
            if i != j:
                self.recs[j] = self.recs[i]
            r = &self.recs[j]
            ins = rec_inputs(r)
            for q in range(r.n_in):
                if ins[q] >= 0:
                    ins[q] = remap[ins[q]]          # inputs are older: already renumbered
            if r.out != NULL and (<TensorBase>r.out)._node == i:
                # (not a LEAF record its tensor left for a new one: split_accumulator)
                (<TensorBase>r.out)._node = j
            if r.fn != NULL:
                (<GradFn>r.fn)._node = j
            j += 1
        free(remap)
        self.n = j
        return 0

    cdef Py_ssize_t append(self, int op, int n_in, Py_ssize_t* inp) except -1:
        """Append a record for `op` with inputs `inp`; the caller's output tensor holds its one ref."""
        cdef Py_ssize_t i, k
        cdef int j
        if self.n == self.cap:
            self._resize(self.n + 1)
        i = self.n
        cdef Py_ssize_t* more = NULL
        if n_in > MAX_IN:
            more = <Py_ssize_t*>malloc(n_in * sizeof(Py_ssize_t))
            if more == NULL:
                raise MemoryError("tapegrad: cannot allocate a record's inputs")
        cdef Record* r = &self.recs[i]
        memset(r, 0, sizeof(Record))
        r.op = op
        r.n_in = n_in
        r.refcnt = 1
        r.more = more
        for j in range(MAX_IN):
            r.inp[j] = -1
        cdef Py_ssize_t* ins = rec_inputs(r)
        for j in range(n_in):
            k = inp[j]
            ins[j] = k
            if k >= 0:
                self.recs[k].refcnt += 1
        self.n = i + 1
        self.live += 1
        return i

    cdef int release_saved(self, Py_ssize_t i) except -1:
        """Drop the values record i saved for backward (after a backward without retain_graph)."""
        cdef PyObject* held[2 * MAX_SAVED]
        cdef int j
        cdef bint had = False
        cdef Record* r = &self.recs[i]
        for j in range(MAX_SAVED):
            held[j] = r.saved[j]
            held[MAX_SAVED + j] = r.ver[j]
            if held[j] != NULL:
                had = True
            r.saved[j] = NULL
            r.ver[j] = NULL
        if had:
            r.flags |= RF_RELEASED
        # Decrefs last: they may run arbitrary code, after which `r` may be stale.
        for j in range(2 * MAX_SAVED):
            Py_XDECREF(held[j])
        return 0

    cdef int decref(self, Py_ssize_t i) except -1:
        """Drop one reference to record i; release it, and whatever only it kept alive, at zero."""
        cdef Py_ssize_t base = self.sp, k
        cdef int j
        cdef Record* r
        cdef Py_ssize_t* ins
        cdef PyObject* held[2 * MAX_SAVED + 2]
        cdef bint compiled
        self.recs[i].refcnt -= 1
        if self.recs[i].refcnt > 0:
            return 0
        # The stack pointer is a member, not a local: a decref below may run code that releases
        # other records re-entrantly, and it must push above our pending entries, not over them.
        self.stack[self.sp] = i
        self.sp += 1
        while self.sp > base:
            self.sp -= 1
            i = self.stack[self.sp]
            r = &self.recs[i]
            for j in range(MAX_SAVED):
                held[j] = r.saved[j]
                held[MAX_SAVED + 1 + j] = r.ver[j]
                r.saved[j] = NULL
                r.ver[j] = NULL
            held[MAX_SAVED] = r.aux
            r.aux = NULL
            compiled = r.op == OP_FUNCTION and held[MAX_SAVED] != NULL and \
                isinstance(<object>held[MAX_SAVED], CompiledBackward)
            held[2 * MAX_SAVED + 1] = r.extra
            r.extra = NULL
            r.out = NULL
            r.fn = NULL
            r.flags = RF_FREE
            self.live -= 1
            ins = rec_inputs(r)
            for j in range(r.n_in):
                k = ins[j]
                if k >= 0:
                    self.recs[k].refcnt -= 1
                    if self.recs[k].refcnt == 0:
                        # Each record is pushed at most once (when its count reaches zero), and at
                        # most `n` records exist, so the stack (capacity == arena capacity) suffices.
                        self.stack[self.sp] = k
                        self.sp += 1
            free(r.more)
            r.more = NULL
            if compiled:                # a replayed call's pooled state is free again
                (<CompiledBackward><object>held[MAX_SAVED]).release()
            for j in range(2 * MAX_SAVED + 2):
                Py_XDECREF(held[j])
        while self.n > 0 and (self.recs[self.n - 1].flags & RF_FREE):
            self.n -= 1
        return 0

    # -- debugging views ------------------------------------------------------------------------

    @property
    def size(self):
        """Records in the arena, free holes included (the top of the stack-like arena)."""
        return self.n

    @property
    def live_records(self):
        return self.live

    @property
    def capacity(self):
        return self.cap

    def records(self):
        """The arena as a list of (index, op name, inputs, refcount, flags) tuples, for debugging."""
        cdef Py_ssize_t i
        return [(i, OP_NAMES[self.recs[i].op] if not (self.recs[i].flags & RF_FREE) else "<free>",
                 tuple(rec_inputs(&self.recs[i])[j] for j in range(self.recs[i].n_in)),
                 self.recs[i].refcnt, self.recs[i].flags) for i in range(self.n)]


TAPE = Tape()


def tape():
    """The shared tape (for inspection and tests)."""
    return TAPE


RECORD_SIZE = sizeof(Record)
