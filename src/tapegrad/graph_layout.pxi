# ---------------------------------------------------------------------------------------------
# How a node shows its inputs (grad_fn.next_functions) to a script that walks the graph.
#
# Scripts walk grad_fn (torchviz's make_dot, notebooks printing next_functions) and expect
# PyTorch's nodes.  Where one tapegrad record stands for several PyTorch nodes (nn.Linear's fused
# product is PyTorch's AddmmBackward0 over its bias, its input and a TBackward0 of its weight), or
# keeps its inputs in another order, the op registers a layout next to its VJP:
# register_edges(opcode, layout) (ops_registry.pxi), layout(grad_fn) -> None (the record's inputs in order) or a tuple
# with one entry per edge PyTorch shows, in its order:
#   j                       the record's input j (its node, an AccumulateGrad, or None)
#   None                    an edge that carries no gradient (PyTorch shows None)
#   (name, (entries, ...))  a node PyTorch has and the record does not: an EdgeNode, made when a
#                           script reads it (the sweep never sees it), None when no entry below
#                           it carries a gradient (PyTorch's node would not exist either)
# The gradients are the record's, unchanged: only what the walk shows follows PyTorch.
# ---------------------------------------------------------------------------------------------

# (OP_EDGES and register_edges live in ops_registry.pxi, with the op table, so that every op family
# can register a layout when it loads.)


cdef bint carries_gradient(list inputs, object entry) except -1:
    if entry is None:
        return False
    if type(entry) is int:
        return inputs[<int>entry] >= 0
    for below in entry[1]:
        if carries_gradient(inputs, below):
            return True
    return False


cdef tuple laid_out_edges(GradFn owner, tuple entries, tuple path):
    """next_functions of `owner`'s node (path ()) or of one of its EdgeNodes (path: the entry
    positions leading to it)."""
    cdef Record* r = &TAPE.recs[owner._node]
    cdef Py_ssize_t* inp = rec_inputs(r)
    cdef list inputs = [inp[j] for j in range(r.n_in)]
    cdef list out = []
    cdef Py_ssize_t k
    for k in range(len(entries)):
        entry = entries[k]
        if entry is None:
            out.append((None, 0))
        elif type(entry) is int:
            out.append(next_function(inputs[<int>entry]))
        elif carries_gradient(inputs, entry):
            out.append((edge_node(owner, path + (k,), entry), 0))
        else:
            out.append((None, 0))
    return tuple(out)


cdef tuple node_edges(GradFn fn):
    """grad_fn.next_functions of a built-in op's node: its layout's, or its inputs in order."""
    cdef Record* r = &TAPE.recs[fn._node]
    layout = OP_EDGES.get(r.op)
    entries = layout(fn) if layout is not None else None
    if entries is not None:
        return laid_out_edges(fn, <tuple>entries, ())
    cdef Py_ssize_t* inp = rec_inputs(r)
    cdef Py_ssize_t j
    return tuple([next_function(inp[j]) for j in range(r.n_in)])


# (owner's id, path) -> its EdgeNode while one lives, so a walk meets the same object each time it
# reaches it (torchviz keys its nodes by id).  Weak values: no cycle holds a record alive.
cdef object EDGE_NODES = weakref.WeakValueDictionary()
cdef dict EDGE_NODE_CLASSES = {}


cdef object edge_node(GradFn owner, tuple path, tuple entry):
    key = (id(owner), path)
    node = EDGE_NODES.get(key)
    if node is not None:
        return node
    name = entry[0]
    cls = EDGE_NODE_CLASSES.get(name)
    if cls is None:
        cls = type(name, (EdgeNode,), {"__module__": "builtins"})   # (as GRAD_FN_CLASSES)
        EDGE_NODE_CLASSES[name] = cls
    cdef EdgeNode e = <EdgeNode>cls.__new__(cls)
    e.owner = owner
    e.path = path
    e.below = <tuple>entry[1]
    EDGE_NODES[key] = e
    return e


cdef class EdgeNode:
    """A node of PyTorch's graph that a tapegrad record computes as part of its own backward
    (nn.Linear's TBackward0 of the weight): name(), next_functions and metadata as a node's; its
    gradient is its record's, so hooks go on that record's node or on the tensors."""
    cdef readonly GradFn owner          # the record's grad_fn: keeps the record alive
    cdef tuple path
    cdef tuple below
    cdef object _metadata
    cdef tuple _edges                   # next_functions once read (kept, as GradFn._edges)
    cdef object __weakref__

    def name(self):
        return type(self).__name__

    @property
    def next_functions(self):
        if self._edges is None:
            self._edges = laid_out_edges(self.owner, self.below, self.path)
        return self._edges

    @property
    def metadata(self):
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def register_hook(self, fn):
        raise RuntimeError(f"tapegrad: {type(self).__name__} is computed inside "
                           f"{type(self.owner).__name__}'s backward and has no hooks of its own; "
                           "register the hook on that node or on a tensor")

    def register_prehook(self, fn):
        self.register_hook(fn)

    def __repr__(self):
        return f"<{type(self).__name__} object at {id(self):#x}>"


# -- a node post-hook sees grad_inputs in the node's laid-out order -------------------------------
# PyTorch's post-hook on nn.Linear's AddmmBackward0 receives (bias, input, weight.t()) gradients,
# the last one transposed (the deprecated Module.register_backward_hook hangs there); the record
# computes (input, weight, bias).  Where the layout is the record's own inputs reordered, with
# at most a TBackward0 of one of them, the hook sees PyTorch's entries and what it returns is
# mapped back; a layout with other nodes inside keeps the record's order (no gradient of theirs
# exists to show).

cdef object hook_in_layout(GradFn owner, object fn):
    layout = OP_EDGES.get(TAPE.recs[owner._node].op)
    entries = layout(owner) if layout is not None else None
    if entries is None:
        return fn
    places = []
    for entry in <tuple>entries:
        if entry is None or type(entry) is int:
            places.append(entry)
        elif entry[0] == "TBackward0" and len(entry[1]) == 1 and type(entry[1][0]) is int:
            places.append(("T", entry[1][0]))
        else:
            return fn
    return LaidOutNodeHook(fn, tuple(places))


cdef object transposed(object g):
    return None if g is None else g.t()


class LaidOutNodeHook:
    """fn(grad_inputs, grad_outputs) called with the entries in the layout's order (see above)."""

    def __init__(self, fn, places):
        self.fn = fn
        self.places = places
        self.__name__ = hook_name(fn)

    def __call__(self, grad_inputs, grad_outputs):
        shown = tuple([None if p is None else
                       grad_inputs[p] if type(p) is int else transposed(grad_inputs[p[1]])
                       for p in self.places])
        res = node_hook_result(self.fn, self.fn(shown, grad_outputs), shown)
        out = list(grad_inputs)
        for p, new in zip(self.places, res):
            if p is None:
                continue
            if type(p) is int:
                out[p] = new
            else:
                out[p[1]] = transposed(new)
        return tuple(out)
