# ---------------------------------------------------------------------------------------------
# When a sweep delivers each leaf's gradient: PyTorch's ready queue, replayed beside the walk.
#
# The walk runs the records from the top of the tape down, which is the order PyTorch's engine
# runs the other nodes in: its ready queue pops the highest sequence number first, and the
# highest record still to run is always ready (its consumers all lie above it).  Leaves are where
# the two differ.  PyTorch's AccumulateGrad nodes have the largest sequence number there is, so
# each runs as soon as its last consumer has run, before any other node: a layer's weight and
# bias are delivered right after its node, in the order of the node's next_functions
# (conv2d's weight, then bias), while the walk would reach them only at their LEAF records, the
# newest first.  What sees the difference is Python code that runs during the sweep: tensor and
# post-accumulate hooks, Module backward hooks, custom Functions (their prints, a .grad read).
#
# So when a sweep runs Python (a record on its path has hooks, or is a custom Function, or the
# profiler is on), it keeps a ReadyOrder: each node's count of edges still to arrive (PyTorch's
# dependencies), and a binary heap laid out exactly as std::priority_queue lays out PyTorch's
# (push_heap / pop_heap), because several AccumulateGrads ready at once (torch.stack of six
# leaves) pop in that heap's order, not first-in first-out.  After each record runs, its edges
# are pushed in PyTorch's order (the op's next_functions layout, graph_layout.pxi, with its extra
# nodes such as linear's TBackward0 of the weight run straight after it); the AccumulateGrads and
# extra nodes on top of the heap are then popped, and the sweep delivers those leaves at once.
# A leaf the replay never releases (an edge PyTorch lacks) is still delivered when the walk
# reaches its record, as before.  With no Python to observe it the order is never built.
# ---------------------------------------------------------------------------------------------

from libc.limits cimport LLONG_MAX

cdef enum:
    SUB_NODES = 64          # heap keys: record i is i * SUB_NODES + SUB_NODES - 1; the extra
                            # nodes of its layout come just below it (created just before it)


cdef inline Py_ssize_t as_node(Py_ssize_t k) noexcept:
    """The node an edge into record k reaches: a custom Function's output record stands for an
    input slot of the Function's own node, which PyTorch's edge points at."""
    if k >= 0 and TAPE.recs[k].op == OP_FN_OUTPUT:
        return TAPE.recs[k].inp[0]
    return k


cdef bint has_hooks(Record* r) noexcept:
    """Whether a record carries hooks (its RecordExtra also holds data no Python reads during a
    sweep: grad_fn.metadata, anomaly traces, recorded shapes)."""
    cdef RecordExtra ex
    if r.extra == NULL:
        return False
    ex = <RecordExtra>r.extra
    return bool(ex.hooks) or bool(ex.post_hooks) or bool(ex.node_hooks)


cdef bint runs_python(Record* r) noexcept:
    """Whether running record r runs code that could see the order leaves are delivered in: its
    hooks, or a custom Function's backward; not a replayed tapegrad.compile call
    (CompiledBackward) nor one of the library's kernel Functions (convolutions, pooling,
    recurrent layers, attention: their backward is tapegrad's array kernels), which are most of
    the OP_FUNCTION records of a model's step."""
    if has_hooks(r):
        return True
    if r.op != OP_FUNCTION or r.aux == NULL:
        return False
    ctx = <object>r.aux
    if isinstance(ctx, CompiledBackward):
        return False
    return not getattr(getattr(type(ctx), "_forward_cls", None), "_backward_is_kernels", False)


cdef ReadyOrder ready_order_for(list roots, Py_ssize_t n, char* need):
    """The ready queue of a sweep from `roots` over records [0, n), or None when nothing running
    during the sweep could observe the order leaves are delivered in."""
    cdef int* deps = <int*>calloc(n, sizeof(int))
    cdef char* reach = <char*>calloc(n, 1)
    cdef Py_ssize_t i, k, lowest = n, j
    cdef Py_ssize_t* ins
    cdef bint observed = PROFILING != 0
    cdef int q
    if deps == NULL or reach == NULL:
        free(deps)
        free(reach)
        raise MemoryError("tapegrad: cannot allocate the ready queue for backward")
    for j in range(len(roots)):         # (each root is an edge of PyTorch's GraphRoot)
        k = as_node(<Py_ssize_t>roots[j])
        if 0 <= k < n:
            deps[k] += 1
            reach[k] = 1
            if k < lowest:
                lowest = k
    # One downward pass: creation order is topological, so a record's consumers are all counted
    # before the pass reaches it.
    i = n - 1
    while i >= lowest:
        if reach[i] and TAPE.recs[i].op != OP_LEAF:
            if runs_python(&TAPE.recs[i]):
                observed = True
            ins = rec_inputs(&TAPE.recs[i])
            for q in range(TAPE.recs[i].n_in):
                k = as_node(ins[q])
                if k >= 0:
                    deps[k] += 1
                    reach[k] = 1
                    if k < lowest:
                        lowest = k
        elif reach[i] and has_hooks(&TAPE.recs[i]):
            observed = True             # (a leaf's own hooks)
        i -= 1
    if not observed:
        free(deps)
        free(reach)
        return None
    cdef ReadyOrder order = ReadyOrder.__new__(ReadyOrder)
    order.deps = deps
    order.reach = reach
    order.need = need
    order.n = n
    order.cursor = n
    order.virtual_nodes = []
    order.ran = <char*>calloc(n, 1)
    if order.ran == NULL:
        raise MemoryError("tapegrad: cannot allocate the ready queue for backward")
    for j in range(len(roots)):
        order.arrive(as_node(<Py_ssize_t>roots[j]))
    return order


@cython.auto_pickle(False)   # (unpicklable: see Tape's note)
cdef class ReadyOrder:
    """PyTorch's ready queue for one sweep (see the banner above)."""

    def __dealloc__(self):
        free(self.deps)
        free(self.reach)
        free(self.ran)
        free(self.keys)
        free(self.items)

    # -- the heap: libstdc++'s push_heap / pop_heap with PyTorch's comparison -----------------
    # (equal keys are two AccumulateGrads: their order is whatever these moves make of it)

    cdef int push(self, long long key, Py_ssize_t item) except -1:
        cdef Py_ssize_t hole, cap
        cdef long long* keys
        cdef Py_ssize_t* items
        if self.size == self.cap:
            cap = 16 if self.cap == 0 else 2 * self.cap
            keys = <long long*>realloc(self.keys, cap * sizeof(long long))
            if keys == NULL:
                raise MemoryError()
            self.keys = keys
            items = <Py_ssize_t*>realloc(self.items, cap * sizeof(Py_ssize_t))
            if items == NULL:
                raise MemoryError()
            self.items = items
            self.cap = cap
        hole = self.size
        self.size += 1
        self.sift_up(hole, key, item)
        return 0

    cdef void sift_up(self, Py_ssize_t hole, long long key, Py_ssize_t item) noexcept:
        cdef Py_ssize_t parent
        while hole > 0:
            parent = (hole - 1) // 2
            if not self.keys[parent] < key:
                break
            self.keys[hole] = self.keys[parent]
            self.items[hole] = self.items[parent]
            hole = parent
        self.keys[hole] = key
        self.items[hole] = item

    cdef void remove_at(self, Py_ssize_t at) noexcept:
        """pop_heap on the sub-heap rooted at `at` (at 0: the heap's top)."""
        cdef Py_ssize_t length, hole = at, child = at
        cdef long long key
        cdef Py_ssize_t item
        self.size -= 1
        length = self.size
        key = self.keys[length]
        item = self.items[length]
        if at == length:
            return
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if self.keys[child] < self.keys[child - 1]:
                child -= 1
            self.keys[hole] = self.keys[child]
            self.items[hole] = self.items[child]
            hole = child
        if (length & 1) == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            self.keys[hole] = self.keys[child - 1]
            self.items[hole] = self.items[child - 1]
            hole = child - 1
        self.sift_up(hole, key, item)

    # -- nodes ---------------------------------------------------------------------------------

    cdef int arrive(self, Py_ssize_t k) except -1:
        """One edge into node k has delivered: k joins the queue when it was the last."""
        if k < 0 or k >= self.n:
            return 0
        self.deps[k] -= 1
        if self.deps[k] != 0:
            return 0
        if TAPE.recs[k].op == OP_LEAF:
            return self.push(LLONG_MAX, k)
        return self.push(<long long>k * SUB_NODES + SUB_NODES - 1, k)

    cdef int push_entries(self, Py_ssize_t i, tuple entries) except -1:
        """Record i's edges as its ranked layout lists them: an input, None (no edge) or an
        extra node of PyTorch's, (rank, entries below it), ready at once (its one consumer has
        run), with a key just below i's."""
        cdef Py_ssize_t* ins = rec_inputs(&TAPE.recs[i])
        for entry in entries:
            if entry is None:
                continue
            if type(entry) is int:
                self.arrive(as_node(ins[<int>entry]))
                continue
            self.virtual_nodes.append((i, entry[1]))
            self.push(<long long>i * SUB_NODES + <int>entry[0],
                      -<Py_ssize_t>len(self.virtual_nodes))
        return 0

    cdef int run_node(self, Py_ssize_t i, bint pushes) except -1:
        """Record i ran: off the queue, and (unless PyTorch skips it) its edges pushed."""
        cdef Py_ssize_t at, q
        cdef Py_ssize_t* ins
        cdef int rank = 0
        if self.ran[i]:
            return 0
        self.ran[i] = 1
        for at in range(self.size):     # (the top, unless the walk and the queue disagree)
            if self.items[at] == i:
                self.remove_at(at)
                break
        if not pushes:
            return 0
        layout = OP_EDGES.get(TAPE.recs[i].op)
        entries = layout(make_grad_fn(i)) if layout is not None else None
        if entries is not None:
            return self.push_entries(i, ranked_layout(<tuple>entries, &rank))
        ins = rec_inputs(&TAPE.recs[i])
        for q in range(TAPE.recs[i].n_in):
            self.arrive(as_node(ins[q]))
        return 0

    cdef list reached(self, Py_ssize_t i):
        """The walk is at record i: first run, without a gradient, the records above i it passed
        over (PyTorch runs those with undefined gradients; a record off the path to autograd.grad's
        inputs pushes nothing); returns the leaves that made ready, to deliver before i runs."""
        cdef Py_ssize_t j = self.cursor - 1
        while j > i:
            if (self.reach[j] and not self.ran[j] and TAPE.recs[j].op != OP_LEAF
                    and TAPE.recs[j].op != OP_FN_OUTPUT):
                self.run_node(j, self.need == NULL or self.need[j])
            j -= 1
        if i + 1 < self.cursor:
            self.cursor = i + 1
        return self.pop_ready()

    cdef list ran_record(self, Py_ssize_t i):
        """Record i has run: its edges pushed; returns the leaves to deliver before the next."""
        self.run_node(i, True)
        self.cursor = i
        return self.pop_ready()

    cdef list pop_ready(self):
        """Pop what PyTorch runs before the next record: the AccumulateGrads (the leaves, in
        order, returned) and the extra nodes of a layout (whose edges are pushed in turn)."""
        cdef Py_ssize_t item
        cdef list ready = []
        while self.size > 0:
            item = self.items[0]
            if item >= 0 and TAPE.recs[item].op != OP_LEAF:
                break                   # the next record: the walk runs it
            self.remove_at(0)
            if item >= 0:
                ready.append(item)
            else:
                owner, entries = self.virtual_nodes[-item - 1]
                self.push_entries(<Py_ssize_t>owner, <tuple>entries)
        return ready


cdef tuple ranked_layout(tuple entries, int* count):
    """A layout (graph_layout.pxi) with each extra node (name, entries) turned into (rank,
    entries): ranks count the extra nodes depth first, a node's inputs before it, as PyTorch
    creates them (a node after the nodes of its inputs), so later ones pop first."""
    cdef list out = []
    for entry in entries:
        if entry is None or type(entry) is int:
            out.append(entry)
        else:
            below = ranked_layout(<tuple>entry[1], count)
            out.append((min(count[0], SUB_NODES - 2), below))
            count[0] += 1
    return tuple(out)
