# ---------------------------------------------------------------------------------------------
# Reductions.  aux = (input shape, axes, keepdim, count): the VJP re-inserts the reduced dims and
# broadcasts the gradient back (a read-only view: the sweep copies before it accumulates in place).
# ---------------------------------------------------------------------------------------------


cdef tuple normalize_dims(object dim, int ndim):
    """dim (None, int or sequence, negatives allowed) -> sorted tuple of axes; PyTorch's errors."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    cdef int lo = -ndim if ndim > 0 else -1, hi = ndim - 1 if ndim > 0 else 0
    axes = []
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool):
            raise TypeError(f"dim must be an int or a tuple of ints, got {type(d).__name__}")
        if d < lo or d > hi:
            raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], "
                             f"but got {d})")
        a = d + ndim if d < 0 else d
        if ndim == 0:
            a = 0
        if a in axes:
            raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
        axes.append(a)
    return tuple(sorted(axes)) if ndim > 0 else ()


cdef object expand_reduced(object g, tuple aux):
    """Broadcast the gradient of a reduction back to the input's shape."""
    shape, axes, keepdim = aux[0], aux[1], aux[2]
    if not keepdim and axes:
        full = list(shape)
        for a in axes:
            full[a] = 1
        g = g.reshape(full)
    # Materialised with C-level numpy calls (np.broadcast_to is a Python function, and the sweep
    # makes no Python-level call per node); the result is fresh, so it can become a .grad as is.
    out = np.empty(shape, dtype=g.dtype)
    out[...] = g
    return out


cdef object vjp_sum(Record* r, object g):
    return expand_reduced(g, <tuple>r.aux)

cdef object vjp_mean(Record* r, object g):
    return expand_reduced(nd(g / r.scalar), <tuple>r.aux)


cdef int OP_SUM = register_op("SumBackward0", vjp_sum)
cdef int OP_SUM_DIM = register_op("SumBackward1", vjp_sum)
cdef int OP_MEAN = register_op("MeanBackward0", vjp_mean)
cdef int OP_MEAN_DIM = register_op("MeanBackward1", vjp_mean)


cdef object reduce_op(int op, TensorBase x, object dim, bint keepdim):
    cdef Py_ssize_t inp[1]
    cdef Record* r
    A = x._array
    cdef int ndim = cnp.PyArray_NDIM(A)
    cdef tuple axes = normalize_dims(dim, ndim)
    cdef double count = 1
    for a in axes:
        count *= A.shape[a]
    if op == OP_SUM:
        if A.dtype.kind in "biu":
            A = A.astype(NP_INT64)                      # PyTorch sums integers and bools as int64
        out = nd(np.add.reduce(A, axis=axes, keepdims=keepdim))
    else:
        if A.dtype.kind != "f":
            raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                               f"floating point or complex dtype. Got: {x.dtype.name.capitalize()}"
                               .replace("Int64", "Long").replace("Int32", "Int"))
        with np.errstate(all="ignore"):                 # mean of no elements is nan, as PyTorch
            out = nd(np.add.reduce(A, axis=axes, keepdims=keepdim) / count)
    cdef TensorBase res = wrap(out)
    if not grad_enabled():
        return res
    begin_record(1)
    inp[0] = node_for_input(x)
    if inp[0] < 0:
        return res
    if dim is not None:
        op = OP_SUM_DIM if op == OP_SUM else OP_MEAN_DIM
    r = record_op(op, res, 1, inp)
    r.scalar = count
    keep(&r.aux, (A.shape, axes, keepdim))
    return res


def sum(TensorBase input, dim=None, keepdim=False):
    """Sum of all elements, or over `dim` (int or tuple; keepdim keeps them as size 1)."""
    return reduce_op(OP_SUM, input, dim, keepdim)


def mean(TensorBase input, dim=None, keepdim=False):
    """Mean of all elements, or over `dim` (floating point tensors only, as in PyTorch)."""
    return reduce_op(OP_MEAN, input, dim, keepdim)


def argmax(TensorBase input, dim=None, keepdim=False):
    """Index of the largest element (flattened, or along `dim`); int64, not differentiable."""
    A = input._array
    if dim is None:
        if A.size == 0:
            raise RuntimeError("argmax(): Expected reduction dim to be specified for input.numel() "
                               "== 0.")
        out = np.asarray(np.argmax(A), dtype=NP_INT64)
        if keepdim:
            out = out.reshape((1,) * A.ndim)
        return wrap(out)
    axis = normalize_dims(dim, A.ndim)
    ax = axis[0] if axis else 0
    if A.ndim == 0:
        return wrap(np.asarray(0, dtype=NP_INT64))
    return wrap(nd(np.argmax(A, axis=ax, keepdims=keepdim).astype(NP_INT64)))


def normalize_dim(dim, int ndim):
    """One dim (negative allowed) -> its axis, with PyTorch's IndexError when out of range."""
    return normalize_dims(int(dim), ndim)[0] if ndim > 0 else normalize_dims(int(dim), ndim)
