# ---------------------------------------------------------------------------------------------
# Indexing (reading), select, narrow, gather, index_select, masked_fill, masked_select.
#
# x[key] follows PyTorch, which applies the basic part of the key first (ints select, slices,
# None, ...) and then the advanced part (integer tensors/lists and boolean masks) to what is left.
# NumPy differs when ints and arrays mix (x[0, :, [0, 1]] has shape (3, 2) in PyTorch, (2, 3) in
# NumPy), so the key is split in two numpy keys, applied one after the other:
#   key1  basic: ints, slices, None, ...; a bool scalar becomes None; arrays become `:`   (a view)
#   key2  advanced, on the result of key1: integer arrays (masks as their nonzero() arrays, a bool
#         scalar as [0] or []), `:` elsewhere                                            (a copy)
# The VJP scatters the gradient back: np.add.at for key2 (repeated indices accumulate), a plain
# assignment into zeros for key1.
# aux = (shape, dtype, key1 or None, shape after key1, key2 or None).
# ---------------------------------------------------------------------------------------------

from libc.stdint cimport int64_t


cdef enum:
    K_INT = 0
    K_SLICE = 1
    K_NONE = 2
    K_ELLIPSIS = 3
    K_BOOL = 4          # a bool scalar (Python bool, 0-d bool tensor)
    K_ARRAY = 5         # an integer array (tensor, list, ndarray)
    K_MASK = 6          # a bool array with ndim >= 1


cdef str NON_TUPLE_WARNING = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in "
    "pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as "
    "tensor index, x[torch.tensor(seq)], which will result either in an error or a different "
    "result")
cdef str NON_TUPLE_ORIGIN = "torch/csrc/autograd/python_variable_indexing.cpp:349"

cdef str BAD_INDEX_DTYPE = "tensors used as indices must be long, int, byte or bool tensors"


cdef object byte_mask_as_bool(object arr):
    """A uint8 index array as the bool mask PyTorch reads it as (x[mask] and x[mask] = v alike),
    with its deprecation warning."""
    torch_warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype "
               "torch.bool instead.", "aten/src/ATen/native/IndexingUtils.h:37")
    return arr.astype(NP_BOOL)


cdef object classify_array(object arr, list kinds):
    """An index array (from a tensor or ndarray): append its kind, return its numpy form."""
    k = arr.dtype.kind
    if arr.dtype == np.uint8:
        arr = byte_mask_as_bool(arr)
        k = "b"
    if k == "b":
        if arr.ndim == 0:
            kinds.append(K_BOOL)
            return bool(arr)
        kinds.append(K_MASK)
        return arr
    if k in "iu" and arr.ndim == 0:
        # any integer dtype: PyTorch reads a 0-d integer tensor as the integer (a select);
        # only index arrays must be int32 / int64
        kinds.append(K_INT)
        return int(arr)
    if k not in "iu" or arr.dtype.itemsize < 4:
        raise IndexError(BAD_INDEX_DTYPE)
    kinds.append(K_ARRAY)
    return arr.astype(np.intp, copy=False)


cdef object int64_index(object item):
    """An int index as PyTorch unpacks it: a C long long (its ValueError beyond that range,
    where numpy's would be an IndexError)."""
    value = int(item)
    if not -0x8000000000000000 <= value <= 0x7fffffffffffffff:
        raise ValueError("Overflow when unpacking long long")
    return value


cdef object classify_item(object item, list kinds):
    """One entry of an index key: append its kind to `kinds`, return its normalised value."""
    if isinstance(item, TensorBase):
        return classify_array((<TensorBase>item)._array, kinds)
    if isinstance(item, bool):                      # (PyTorch refuses a numpy bool scalar)
        kinds.append(K_BOOL)
        return bool(item)
    if isinstance(item, (int, np.integer)):
        kinds.append(K_INT)
        return int64_index(item)
    if isinstance(item, slice):
        step = item.step
        if step is not None:
            step = operator.index(step)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            if step < 0:
                raise ValueError("step must be greater than zero")
        kinds.append(K_SLICE)
        return slice(None if item.start is None else operator.index(item.start),
                     None if item.stop is None else operator.index(item.stop), step)
    if item is None:
        kinds.append(K_NONE)
        return None
    if item is Ellipsis:
        kinds.append(K_ELLIPSIS)
        return Ellipsis
    if isinstance(item, np.ndarray):
        return classify_array(item, kinds)
    if isinstance(item, (list, tuple, range)):     # x[range(n), target]: a sequence of ints
        try:
            arr = np.asarray(item)
        except (ValueError, TypeError, RuntimeError):
            raise IndexError(BAD_INDEX_DTYPE) from None
        if arr.dtype.kind in "US":
            raise bad_index_item_error(arr.flat[0])
        if arr.size == 0 and arr.dtype.kind not in "biu":
            arr = arr.astype(NP_INT64)
        if arr.dtype.kind not in "biu":
            raise IndexError(BAD_INDEX_DTYPE)
        if arr.dtype.kind in "iu":
            arr = arr.astype(NP_INT64, copy=False)
        return classify_array(arr, kinds)
    real = real_torch_tensor(item)      # a real PyTorch tensor: its values, as a tensor's
    if real is not NotImplemented:
        return classify_array((<TensorBase>real)._array, kinds)
    raise bad_index_item_error(item)


cdef object foreign_index_hook(tuple items):
    """The indexing rule of a key item's type that indexes plain tensors itself (vmap's
    BatchedTensor: x[batched_index] is a batched gather), or None.  Asked only once a key failed
    to classify (or is a sequence of another kind), so ordinary keys pay nothing."""
    for it in items:
        hook = getattr(type(it), "_index_plain", None)
        if hook is not None:
            return hook
    return None


cdef object bad_index_item_error(object item):
    """PyTorch's refusal of an index entry of no index kind (x[key] and x[key] = v alike): a
    string is a sequence to it, read as index data - new()'s TypeError -; a float, a dict, an
    object are IndexErrors naming the type.  (A key with more items than the tensor has dims is
    refused before any item is read: see specified_dims.)"""
    if isinstance(item, (str, bytes, np.str_, np.bytes_)):
        name = "str" if isinstance(item, str) else "bytes"
        return TypeError(f"new(): invalid data type '{name}'")
    return IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                      f"Variables are valid indices (got {type_name(item)})")


cdef bint sequence_as_tuple(object key):
    """PyTorch's (NumPy's old) heuristic: a list holding tensors, sequences, slices, ... or None is
    a tuple of indices (deprecated, with a warning); otherwise it is one integer/bool index.
    A str key is such a sequence too, and its characters are strings, so sequences: a key of 1
    to 31 characters is a tuple of one-character items (batch['image'] on a 4-d tensor is too
    many indices, an IndexError; on a 5-d one new()'s TypeError for the first character)."""
    if len(key) >= 32:
        return False
    for e in key:
        if (isinstance(e, (TensorBase, list, tuple, range, slice, np.ndarray, str, bytes))
                or e is None or e is Ellipsis):
            if any(isinstance(item, (str, bytes)) for item in key):
                # a key holding text is refused below; PyTorch's warning waits in its C++
                # buffer and the refusal wins, even where a filter makes the warning an error
                try:
                    torch_warn(NON_TUPLE_WARNING, NON_TUPLE_ORIGIN)
                except Warning:
                    pass
            else:
                torch_warn(NON_TUPLE_WARNING, NON_TUPLE_ORIGIN)
            return True
    return False


cdef Py_ssize_t specified_dims(tuple items):
    """How many dims PyTorch counts a key's items as naming before it reads any of them
    (count_specified_dimensions): a bool or byte tensor its ndim, None, `...` and a Python bool
    none, anything else one - an item of no index kind too, so that a key with too many items
    is "too many indices" even when one of them is a string or a float."""
    cdef Py_ssize_t count = 0
    for item in items:
        arr = (<TensorBase>item)._array if isinstance(item, TensorBase) else item
        if isinstance(arr, np.ndarray):
            count += arr.ndim if arr.dtype.kind == "b" or arr.dtype == np.uint8 else 1
        elif not (item is None or item is Ellipsis or isinstance(item, bool)):
            count += 1
    return count


cdef object too_many_indices(Py_ssize_t ndim):
    return IndexError(f"too many indices for tensor of dimension {ndim}")


cdef bint is_other_sequence(object key):
    """A key that is a sequence object of another kind (a Subset from random_split of an index
    tensor, x[train_idx]): PyTorch reads it through the sequence protocol, as it would a list."""
    if isinstance(key, (TensorBase, tuple, list, range, np.ndarray, str, bytes, dict, slice,
                        int, np.integer, bool)) or key is None or key is Ellipsis:
        return False
    cls = type(key)
    # (a real PyTorch tensor is a sequence too, but one index item: classify_item reads it)
    return (hasattr(cls, "__getitem__") and hasattr(cls, "__len__")
            and real_torch_tensor(key) is NotImplemented)


cdef inline bint trivial_slice(object s, Py_ssize_t length):
    """Whether slice s (start/stop/step as given) selects a whole dim (PyTorch then skips it)."""
    return ((s.start is None or s.start == 0) and (s.stop is None or s.stop >= length)
            and (s.step is None or s.step == 1))


cdef Py_ssize_t key_dims(list kinds, list vals) except -1:
    """How many dims of the indexed tensor a classified key names (`...` excluded)."""
    cdef Py_ssize_t consumed = 0, i
    for i in range(len(kinds)):
        k = kinds[i]
        if k == K_INT or k == K_SLICE or k == K_ARRAY:
            consumed += 1
        elif k == K_MASK:
            consumed += vals[i].ndim
    return consumed


cdef tuple index_aux(Record* r):
    """An indexing record's aux with its index arrays filled in (they are kept as a saved value,
    released with the record's other saved values, as in PyTorch; Tensor.unfold's are built from
    its windows when a caller needs them)."""
    cdef tuple aux = <tuple>r.aux
    if r.saved[0] != NULL and type(<object>r.saved[0]) is tuple:     # (its key, as index_op saves it)
        return aux[:4] + (resolve_index_key(r, <object>r.saved[0]),)
    if type(aux[4]) is UnfoldWindows:
        return aux[:4] + ((<UnfoldWindows>aux[4]).key(),)
    return aux


cdef class UnfoldWindows:
    """Tensor.unfold(dimension, size, step)'s windows over an input of shape `shape`, kept by its
    record instead of an index array per input dim (two arrays of the output's size, built at
    every call: most of a forward call's time, and the backward's np.add.at over them was 10x
    PyTorch's).  The gradient adds g's window slices back in place, in np.add.at's order."""
    cdef readonly Py_ssize_t dimension, size, step, windows
    cdef readonly tuple shape

    def __init__(self, tuple shape, Py_ssize_t dimension, Py_ssize_t size, Py_ssize_t step):
        self.shape, self.dimension, self.size, self.step = shape, dimension, size, step
        self.windows = (shape[dimension] - size) // step + 1

    def key(self):
        """The input index of every output element: one int64 array per input dim, each of the
        output's shape (the general as_strided record's key; the create_graph gradient reads
        it)."""
        cdef Py_ssize_t d = self.dimension
        out_shape = self.shape[:d] + (self.windows,) + self.shape[d + 1:] + (self.size,)
        index = list(np.indices(out_shape, sparse=True))
        position = index.pop()                  # (the new last dim: the place in the window)
        index[d] = index[d] * self.step + position
        # (C order: the C scatter takes C-contiguous keys; astype's 'K' follows the broadcast)
        return tuple(np.broadcast_to(i, out_shape).astype(np.int64, order="C") for i in index)

    cdef object scatter(self, object dt, object g):
        """The gradient of the windows: g (the output's shape) added back into zeros of the
        input's shape.  Each input element receives its windows' values in window order (the
        C order np.add.at adds in, and PyTorch's unfold_backward), from zeros: one strided
        slice-add per place in the window, or per window when there are fewer windows."""
        cdef Py_ssize_t d = self.dimension, p, w, last = self.step * (self.windows - 1)
        z = np.zeros(self.shape, dtype=dt)
        pre = (slice(None),) * d
        if self.size <= self.windows:
            # place p of window w is input element w * step + p: for each element, the later
            # places come from the earlier windows, so p runs down
            for p in range(self.size - 1, -1, -1):
                z[pre + (slice(p, p + last + 1, self.step),)] += g[..., p]
        else:
            for w in range(self.windows):
                z[pre + (slice(w * self.step, w * self.step + self.size),)] += np.moveaxis(
                    g[pre + (w,)], -1, d)
        return z


cdef bint scatter_add_c(object Z, object key, object G) except -1:
    """np.add.at(Z, key, G) in C for the common keys: one integer array, or a tuple of integer
    arrays of one shape S (m elements), indexing Z's leading dims, with G of shape S + Z's other
    dims in Z's dtype (a multi-dim S, e.g. Tensor.unfold's windows, is read flat in C order,
    the order np.add.at adds in).  Each addition happens in numpy's order and dtype (the result is
    identical; np.add.at is 3-4x slower).  False, with Z untouched, for anything else (then
    np.add.at, which also raises numpy's errors)."""
    cdef int tz = -1
    if not kernel_array(Z, &tz) or not cnp.PyArray_Check(G):
        return False
    cdef tuple keys = <tuple>key if isinstance(key, tuple) else (key,)
    cdef cnp.ndarray z = <cnp.ndarray>Z, g = <cnp.ndarray>G, k
    cdef Py_ssize_t nk = len(keys), nd_ = cnp.PyArray_NDIM(z), m = 1, j, i, inner = 1, v
    cdef int kd = -1                                  # the keys' rank (their common shape S)
    if nk == 0 or nk > nd_ or cnp.PyArray_TYPE(g) != tz:
        return False
    for j in range(nk):
        if not cnp.PyArray_Check(keys[j]):
            return False
        k = <cnp.ndarray>keys[j]
        if (cnp.PyArray_TYPE(k) != cnp.NPY_INT64 or cnp.PyArray_NDIM(k) < 1
                or not cnp.PyArray_IS_C_CONTIGUOUS(k)):
            return False
        if kd < 0:
            kd = cnp.PyArray_NDIM(k)
            if cnp.PyArray_NDIM(g) != kd + nd_ - nk:
                return False
            for i in range(kd):
                if cnp.PyArray_DIMS(k)[i] != cnp.PyArray_DIMS(g)[i]:
                    return False
                m *= cnp.PyArray_DIMS(k)[i]
        elif cnp.PyArray_NDIM(k) != kd:
            return False
        else:
            for i in range(kd):
                if cnp.PyArray_DIMS(k)[i] != cnp.PyArray_DIMS(g)[i]:
                    return False
    for j in range(nk, nd_):
        if cnp.PyArray_DIMS(g)[kd + j - nk] != cnp.PyArray_DIMS(z)[j]:
            return False
        inner *= cnp.PyArray_DIMS(z)[j]
    if not cnp.PyArray_IS_C_CONTIGUOUS(g):
        g = <cnp.ndarray>np.ascontiguousarray(g)
    # the rows' offsets first: an out-of-range index leaves Z untouched (numpy then raises)
    cdef cnp.ndarray offsets = <cnp.ndarray>np.empty(m, dtype=np.int64)
    cdef int64_t* off = <int64_t*>cnp.PyArray_DATA(offsets)
    cdef Py_ssize_t row_stride = inner, d
    for i in range(m):
        off[i] = 0
    for j in range(nk - 1, -1, -1):
        k = <cnp.ndarray>keys[j]
        d = cnp.PyArray_DIMS(z)[j]
        for i in range(m):
            v = (<const int64_t*>cnp.PyArray_DATA(k))[i]
            if v < 0:
                v += d
            if v < 0 or v >= d:
                return False
            off[i] += v * row_stride
        row_stride *= d
    if tz == cnp.NPY_FLOAT64:
        scatter_rows(off, m, inner, <const double*>cnp.PyArray_DATA(g),
                     <double*>cnp.PyArray_DATA(z))
    else:
        scatter_rows(off, m, inner, <const float*>cnp.PyArray_DATA(g),
                     <float*>cnp.PyArray_DATA(z))
    return True


def _add_at(object Z, object key, object G):
    """np.add.at(Z, key, G) (the accumulate of scatter_add, index_add, index_put): in C
    (scatter_add_c, every addition in numpy's order and dtype) when key is a tuple of integer
    arrays, one per dim of Z, broadcasting to G's shape (scatter_add's key), through their flat
    positions (np.ravel_multi_index); numpy's np.add.at (and its errors: negative or
    out-of-range positions) for anything else.  (np.add.at took ~1 ms for a 64 x 1000 float32
    scatter_add, 15x PyTorch.)"""
    cdef int tz = -1
    if (isinstance(key, tuple) and cnp.PyArray_Check(Z) and cnp.PyArray_Check(G)
            and len(<tuple>key) == (<cnp.ndarray>Z).ndim and kernel_array(Z, &tz)
            and (<cnp.ndarray>G).dtype == Z.dtype
            and all([cnp.PyArray_Check(k) and (<cnp.ndarray>k).dtype.kind == "i" for k in key])
            and np.broadcast_shapes(G.shape, *[k.shape for k in key]) == G.shape):
        try:
            flat = np.ravel_multi_index(key, Z.shape)
        except ValueError:              # a negative or out-of-range position: numpy's own path
            flat = None
        if flat is not None:
            flat = np.ascontiguousarray(np.broadcast_to(flat, G.shape), dtype=np.int64)
            if scatter_add_c(Z.reshape(-1), flat.reshape(-1), np.ascontiguousarray(G).reshape(-1)):
                return
    if add_slices_at(Z, key, G):
        return
    with IeeeResults():         # (inf + -inf is nan, silently, as in the C path and PyTorch)
        np.add.at(Z, key, G)


# -- accumulating writes along one dim (index_add, index_put(accumulate=True), scatter_add) --------
# Each adds in numpy's np.add.at order (G's, or src's, C order) and dtype, so results equal the
# numpy path's bit for bit; integers add with wrap-around, as numpy's.  Indices are range-checked
# before the first write: an out-of-range one leaves Z untouched and the callers take numpy's
# path, which raises numpy's error (the facade has already raised PyTorch's).

ctypedef fused accum_t:
    float
    double
    int64_t

# How an accumulating loop combines a value into its target: numpy's ufunc of that name applied
# as ufunc.at applies it (add for scatter_add and index_add; each of scatter_reduce's).
cdef enum AccumOp:
    ACC_ADD = 0
    ACC_MUL = 1
    ACC_MAX = 2
    ACC_MIN = 3
    ACC_COUNT = 4       # (the target + 1, the value unused: how many values land there)

_ACCUM_OPS = {"sum": ACC_ADD, "prod": ACC_MUL, "amax": ACC_MAX, "amin": ACC_MIN,
             "count": ACC_COUNT}


cdef inline void accumulate_one(accum_t* z, accum_t g, int op) noexcept nogil:
    """z = ufunc(z, g) as numpy's ufunc.at computes it: integers wrap around (signed overflow is
    undefined in C, so through unsigned).  Maximum and minimum follow PyTorch's scatter_reduce
    rather than numpy: the value replaces the target only when it is NaN or strictly beyond it,
    so a tie of -0 and +0 keeps the target (numpy's maximum took the value: max(-0, +0) printed
    0. where PyTorch prints -0.).  (Which of two NaNs a sum keeps, numpy leaves to its loops.)"""
    if op == ACC_ADD:
        if accum_t is int64_t:
            z[0] = <int64_t>(<uint64_t>z[0] + <uint64_t>g)
        else:
            z[0] = z[0] + g
    elif op == ACC_MUL:
        if accum_t is int64_t:
            z[0] = <int64_t>(<uint64_t>z[0] * <uint64_t>g)
        else:
            z[0] = z[0] * g
    elif op == ACC_MAX:
        if g != g or z[0] < g:
            z[0] = g
    elif op == ACC_MIN:
        if g != g or g < z[0]:
            z[0] = g
    else:
        z[0] = z[0] + 1


cdef int accum_type(object arr) noexcept:
    """arr's type number when it is an aligned, writeable, C-contiguous float32, float64 or
    int64 ndarray (the accumulate kernels' operands), else -1."""
    if not cnp.PyArray_Check(arr):
        return -1
    cdef cnp.ndarray a = <cnp.ndarray>arr
    cdef int t = cnp.PyArray_TYPE(a)
    if ((t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64 and t != cnp.NPY_INT64)
            or not cnp.PyArray_IS_C_CONTIGUOUS(a) or not cnp.PyArray_ISALIGNED(a)
            or not cnp.PyArray_ISWRITEABLE(a)):
        return -1
    return t


cdef object wrapped_positions(object index, Py_ssize_t size):
    """index (an integer array) as a C-contiguous int64 array with negative entries wrapped, or
    None when one is out of range."""
    idx = np.ascontiguousarray(index, dtype=np.int64)
    if idx.size and (idx.min() < -size or idx.max() >= size):
        return None
    if idx.size and idx.min() < 0:
        idx = np.where(idx < 0, idx + size, idx)
    return idx


cdef void add_slices_kernel(accum_t* z, const accum_t* g, const int64_t* idx, Py_ssize_t outer,
                            Py_ssize_t n, Py_ssize_t m, Py_ssize_t inner) noexcept nogil:
    """z[o, idx[p], t] += g[o, p, t], in g's order (z: (outer, n, inner), g: (outer, m, inner))."""
    cdef Py_ssize_t o, p, t
    cdef accum_t* zr
    cdef const accum_t* gr
    for o in range(outer):
        for p in range(m):
            zr = z + (o * n + idx[p]) * inner
            gr = g + (o * m + p) * inner
            for t in range(inner):
                accumulate_one(&zr[t], gr[t], ACC_ADD)


cdef bint add_slices_at(object Z, object key, object G) except -1:
    """np.add.at(Z, key, G) in C (add_slices_kernel) for the key of index_add and of index_put
    with one index array: whole slices up to one dim, then a 1-D integer array naming positions
    along it, with G of Z's shape but that dim's size the array's length (index_add's source;
    index_put's values broadcast to it).  False, Z untouched, for anything else.  (np.add.at
    took 16 ms for 1000 rows of 512 float32, 24x PyTorch's index_add.)"""
    cdef int t = accum_type(Z)
    if t < 0 or not isinstance(key, tuple) or not cnp.PyArray_Check(G):
        return False
    cdef tuple k = <tuple>key
    cdef Py_ssize_t nk = len(k), nd_ = cnp.PyArray_NDIM(<cnp.ndarray>Z), j
    if nk == 0 or nk > nd_:
        return False
    for j in range(nk - 1):
        s = k[j]
        if not (isinstance(s, slice) and s.start is None and s.stop is None and s.step is None):
            return False
    last = k[nk - 1]
    if not (cnp.PyArray_Check(last) and (<cnp.ndarray>last).ndim == 1
            and (<cnp.ndarray>last).dtype.kind in "iu" and (<cnp.ndarray>last).dtype.itemsize <= 8
            and (<cnp.ndarray>last).dtype != np.uint64):
        return False
    cdef Py_ssize_t dim = nk - 1, m = (<cnp.ndarray>last).shape[0]
    shape = Z.shape
    if G.dtype != Z.dtype or G.shape != shape[:dim] + (m,) + shape[dim + 1:]:
        return False
    idx = wrapped_positions(last, shape[dim])
    if idx is None:
        return False
    g = np.ascontiguousarray(G)
    cdef Py_ssize_t outer = 1, inner = 1, n = shape[dim]
    for j in range(dim):
        outer *= shape[j]
    for j in range(dim + 1, nd_):
        inner *= shape[j]
    cdef void* zp = cnp.PyArray_DATA(<cnp.ndarray>Z)
    cdef const void* gp = cnp.PyArray_DATA(<cnp.ndarray>g)
    cdef const int64_t* ip = <const int64_t*>cnp.PyArray_DATA(<cnp.ndarray>idx)
    with nogil:
        if t == cnp.NPY_FLOAT32:
            add_slices_kernel(<float*>zp, <const float*>gp, ip, outer, n, m, inner)
        elif t == cnp.NPY_FLOAT64:
            add_slices_kernel(<double*>zp, <const double*>gp, ip, outer, n, m, inner)
        else:
            add_slices_kernel(<int64_t*>zp, <const int64_t*>gp, ip, outer, n, m, inner)
    return True


cdef void scatter_along_kernel(accum_t* z, const accum_t* s, const int64_t* idx,
                               const Py_ssize_t* shape, const Py_ssize_t* zstride, int nd,
                               int dim, int op) noexcept nogil:
    """For each position p of the C-contiguous index/src of `shape` (nd dims), in C order:
    z[p with p[dim] replaced by idx[p]] = op(that, s[p]), z's strides in elements (s unread,
    and may be NULL, for ACC_COUNT)."""
    cdef Py_ssize_t count[64]
    cdef Py_ssize_t rows = 1, r, t, base, p = 0, last = shape[nd - 1], step = zstride[nd - 1]
    cdef Py_ssize_t dstride = zstride[dim]
    cdef int d
    cdef accum_t one = 1
    for d in range(nd - 1):
        rows *= shape[d]
        count[d] = 0
    for r in range(rows):
        base = 0
        for d in range(nd - 1):
            if d != dim:
                base += count[d] * zstride[d]
        if dim == nd - 1:
            for t in range(last):
                accumulate_one(&z[base + idx[p + t] * dstride], one if s == NULL else s[p + t],
                               op)
        else:
            for t in range(last):
                accumulate_one(&z[base + t * step + idx[p + t] * dstride],
                               one if s == NULL else s[p + t], op)
        p += last
        d = nd - 2
        while d >= 0:
            count[d] += 1
            if count[d] < shape[d]:
                break
            count[d] = 0
            d -= 1


def _scatter_along(object Z, Py_ssize_t dim, object index, object src, str reduce):
    """ufunc.at(Z, scatter's key, src) in C (scatter_along_kernel), the ufunc named by reduce
    ("sum", "prod", "amax", "amin"; "count": 1 added per value, src None): Z[..., index[p], ...]
    = ufunc(that, src[p]) along dim for every position p of index (src of index's shape, Z's
    dtype and rank; index no larger than Z off dim), in index's C order, as numpy applies it
    (amax / amin: PyTorch's rule for ties of -0 and +0, accumulate_one).
    False, Z untouched, when the operands do not fit the kernel or an index is out of range
    (numpy's path then).  (np.add.at took ~50 ms for 1e6 elements, 6x PyTorch's scatter_add.)"""
    cdef int t = accum_type(Z), op = _ACCUM_OPS[reduce]
    if t < 0 or not cnp.PyArray_Check(index) or not (op == ACC_COUNT or cnp.PyArray_Check(src)):
        return False
    cdef int nd_ = cnp.PyArray_NDIM(<cnp.ndarray>Z), d
    if (nd_ == 0 or nd_ > 64 or dim < 0 or dim >= nd_ or index.ndim != nd_
            or index.dtype.kind not in "iu" or index.dtype == np.uint64):
        return False
    if op != ACC_COUNT and (src.dtype != Z.dtype or src.shape != index.shape):
        return False
    cdef Py_ssize_t shape[64]
    cdef Py_ssize_t zstride[64]
    cdef Py_ssize_t item = (<cnp.ndarray>Z).itemsize
    for d in range(nd_):
        shape[d] = index.shape[d]
        zstride[d] = cnp.PyArray_STRIDES(<cnp.ndarray>Z)[d] // item
        if d != dim and shape[d] > cnp.PyArray_DIMS(<cnp.ndarray>Z)[d]:
            return False
    if index.size == 0:
        return True
    idx = wrapped_positions(index, cnp.PyArray_DIMS(<cnp.ndarray>Z)[dim])
    if idx is None:
        return False
    s = None if op == ACC_COUNT else np.ascontiguousarray(src)
    cdef void* zp = cnp.PyArray_DATA(<cnp.ndarray>Z)
    cdef const void* sp = NULL if s is None else cnp.PyArray_DATA(<cnp.ndarray>s)
    cdef const int64_t* ip = <const int64_t*>cnp.PyArray_DATA(<cnp.ndarray>idx)
    with nogil:
        if t == cnp.NPY_FLOAT32:
            scatter_along_kernel(<float*>zp, <const float*>sp, ip, shape, zstride, nd_, dim, op)
        elif t == cnp.NPY_FLOAT64:
            scatter_along_kernel(<double*>zp, <const double*>sp, ip, shape, zstride, nd_, dim, op)
        else:
            scatter_along_kernel(<int64_t*>zp, <const int64_t*>sp, ip, shape, zstride, nd_, dim,
                                 op)
    return True


cdef void scatter_rows(const int64_t* off, Py_ssize_t m, Py_ssize_t inner, const real_t* g,
                       real_t* z) noexcept nogil:
    """z[off[i] + t] += g[i, t], rows in order (repeated offsets accumulate as np.add.at)."""
    cdef Py_ssize_t i, t
    for i in range(m):
        for t in range(inner):
            z[off[i] + t] += g[i * inner + t]


cdef object mask_shape_error(object mask_shape, Py_ssize_t i, object B_shape, Py_ssize_t d):
    """PyTorch's refusal of a boolean mask whose dim i does not match dim d of the tensor it
    indexes (B: the tensor after the key's integers, slices and Nones)."""
    return IndexError(f"The shape of the mask {list(mask_shape)} at index {i} does not match the "
                      f"shape of the indexed tensor {list(B_shape)} at index {d}")


cpdef object index_shapes_error(tuple key):
    """PyTorch's IndexError for the index arrays of numpy key `key` that do not broadcast
    together, each named by its shape; a boolean mask stands for its nonzero() arrays, one of
    its count per dim, as PyTorch turns it into them before broadcasting.  (numpy's own words,
    "indexing arrays ... (2,) (3,)", would leak otherwise.)"""
    cdef list shapes = []
    for k in key:
        if isinstance(k, np.ndarray):
            if k.dtype.kind == "b":
                shapes.extend([[int(np.count_nonzero(k))]] * k.ndim)
            else:
                shapes.append(list(k.shape))
    return IndexError("shape mismatch: indexing tensors could not be broadcast together with "
                      "shapes " + ", ".join([str(sh) for sh in shapes]))


cdef object mask_mismatch(object A, tuple key):
    """The IndexError PyTorch raises for x[key] = v (key: setitem_key's numpy key into A) when a
    boolean mask does not fit the dims it covers, or covers more dims than A has; None when the
    masks fit.  numpy's own refusal would leak its words ("boolean index did not match indexed
    array along axis 0 ..."), so the write checks here first, as x[key] does in index_op."""
    cdef Py_ssize_t consumed = 0, d = 0, i
    cdef list basic = [], masks = []
    for k in key:
        if isinstance(k, np.ndarray):
            consumed += k.ndim if k.dtype.kind == "b" else 1
        elif not (k is None or k is Ellipsis or isinstance(k, bool)):
            consumed += 1
    if consumed > A.ndim:
        return too_many_indices(A.ndim)
    for k in key:
        if k is Ellipsis:
            basic.extend([slice(None)] * (A.ndim - consumed))
            d += A.ndim - consumed
        elif k is None or isinstance(k, (bool, slice)):      # (a bool: a new dim of 1 or 0)
            basic.append(k)
            d += 1
        elif isinstance(k, np.ndarray):
            if k.dtype.kind == "b":
                masks.append((k, d))
                basic.extend([slice(None)] * k.ndim)
                d += k.ndim
            else:
                basic.append(slice(None))
                d += 1
        else:
            basic.append(k)                         # (an integer: its dim goes)
    if not masks:
        return None
    try:
        B_shape = A[tuple(basic)].shape
    except IndexError:
        return None                                 # (an integer out of range: its own error)
    for m, d in masks:
        for i in range(m.ndim):
            if m.shape[i] != B_shape[d + i]:
                return mask_shape_error(m.shape, i, B_shape, d + i)
    return None


cdef object empty_index_result(object B, tuple key):
    """B[key] when it holds no element although an index is out of range: PyTorch checks each
    index as its kernel reads it, so it raises only when an element is read (x[[5]] of shape
    (2, 0) is an empty (1, 0)).  None when the result has elements (the error stands), and when
    a non-empty index reads a dim of size 0, which PyTorch refuses even for an empty result."""
    for n, k in zip(B.shape, key):
        if n == 0 and isinstance(k, np.ndarray) and k.dtype.kind in "iu" and k.size:
            return None
    stand_in = np.empty(tuple(max(n, 1) if isinstance(k, np.ndarray) and k.dtype.kind in "iu"
                              else n for n, k in zip(B.shape, key)) + B.shape[len(key):],
                        dtype=B.dtype)
    safe = tuple(np.zeros_like(k) if isinstance(k, np.ndarray) and k.dtype.kind in "iu" else k
                 for k in key)
    out = stand_in[safe]
    return out if out.size == 0 else None


cdef object advanced_index(object B, object key):
    """B[key] for an advanced (numpy) key; an index out of range that reads no element gives
    the empty result, as in PyTorch (empty_index_result).  Forward indexing and the recorded
    VJP of its scatter (create_graph) both read through here, so the second derivative runs
    where the first did (fuzz seeds 51045029, 53008935, 53010123)."""
    try:
        return B[key]
    except IndexError as e:
        if str(e).startswith("shape mismatch"):
            raise
        out = empty_index_result(B, key if isinstance(key, tuple) else (key,))
        if out is None:
            raise
        return out


cdef object scatter_index(tuple aux, object g):
    """The transpose of x[key]: g scattered into zeros of x's shape (repeated indices add)."""
    shape, dt, key1, bshape, key2 = aux
    if key2 is not None and g.size == 0:
        return np.zeros(shape, dtype=dt)         # (its indices may be out of range: see above)
    if isinstance(key1, str):
        return scatter_real_numbers(shape, dt, bshape, key2, g)
    if key2 is None:
        z = np.zeros(shape, dtype=dt)
        z[key1] = g
        return z
    zb = np.zeros(bshape, dtype=dt)
    if not scatter_add_c(zb, key2, g):
        np.add.at(zb, key2, g)                      # repeated indices accumulate
    if key1 is None:
        return zb
    z = np.zeros(shape, dtype=dt)
    z[key1] = zb
    return z


cdef object scatter_real_numbers(tuple shape, object dt, tuple bshape, tuple key, object g):
    """The transpose of a view reading its base's storage as another dtype (views.pxi,
    REINTERPRETED): g's real numbers scattered into zeros of the base's real numbers (of shape
    bshape) at `key`, read as the base's dtype."""
    real_dt = np.zeros(0, dtype=dt).real.dtype
    zb = np.zeros(bshape, dtype=real_dt)
    np.add.at(zb, key, _real_parts(g))             # repeated elements accumulate
    if np.dtype(dt).kind != "c":
        return zb
    z = np.empty(shape, dtype=dt)
    z.real = zb[..., 0]
    z.imag = zb[..., 1]
    return z


cdef object vjp_index(Record* r, object g):
    return scatter_index(index_aux(r), g)


cdef object vjp_unfold(Record* r, object g):
    cdef tuple aux = <tuple>r.aux
    if type(aux[4]) is UnfoldWindows:
        return (<UnfoldWindows>aux[4]).scatter(aux[1], g)
    return vjp_index(r, g)                      # (a 0-d input: its one-element key)


OP_SELECT = register_op("SelectBackward0", vjp_index)
OP_SLICE = register_op("SliceBackward0", vjp_index)
OP_INDEX = register_op("IndexBackward0", vjp_index)
OP_ALIAS = register_op("AliasBackward0", vjp_index)
OP_INDEX_UNSQUEEZE = register_op("UnsqueezeBackward0", vjp_index)
# a view rebased onto its base's new history (the core's views.pxi, refresh_view): an index of
# the base, registered by the core, which has no index VJP of its own
OP_VJP[OP_AS_STRIDED] = vjp_index
# Tensor.unfold's windows: an as_strided view under PyTorch's node name
OP_UNFOLD = register_op("UnfoldBackward0", vjp_unfold)


import re

cdef object NUMPY_OUT_OF_BOUNDS = re.compile(
    r"index (-?\d+) is out of bounds for axis (\d+) with size (\d+)$")


cdef str numpy_index_message(str msg, object key=None, Py_ssize_t ndim=0):
    """numpy's IndexError message from A[key] (ndim: A's) in PyTorch's words: 'dimension' for
    'axis'.  An index array out of range is named as PyTorch's advanced indexing names it: by
    its place among the key's index arrays (a mask counting one per dim it covers), not by the
    dim it indexes, so x[:, [7]] of a (2, 3) x is 'dimension 0' and x[:, [0], [9]] 'dimension
    1'.  (Numbers and slices are PyTorch's views before the index kernel sees the arrays.)"""
    m = NUMPY_OUT_OF_BOUNDS.match(msg) if key is not None else None
    if m is None:
        return msg.replace("axis", "dimension")
    cdef Py_ssize_t axis = int(m.group(2)), d = 0, place = 0, width, named = 0
    items = key if isinstance(key, tuple) else (key,)
    for item in items:
        if isinstance(item, np.ndarray) and item.dtype.kind == "b":
            named += item.ndim
        elif item is not None and item is not Ellipsis:
            named += 1
    for item in items:
        if item is Ellipsis:
            width = ndim - named
        elif item is None:
            width = 0
        elif isinstance(item, np.ndarray) and item.dtype.kind == "b":
            width = item.ndim
        else:
            width = 1
        if isinstance(item, np.ndarray) and item.ndim > 0:
            if d == axis and item.dtype.kind != "b":
                return (f"index {m.group(1)} is out of bounds for dimension {place} with size "
                        f"{m.group(3)}")
            place += width
        d += width
    return msg.replace("axis", "dimension")


cdef int index_layout_order(list operands, tuple shape, Py_ssize_t d0, Py_ssize_t d1):
    """TensorIterator's comparison of dims d0, d1: 1 when d0 goes outside d1, -1 when inside,
    0 when no operand decides."""
    for st in operands:
        s0, s1 = st[d0], st[d1]
        if s0 == 0 or s1 == 0:
            continue                    # (broadcast in this operand: the next one decides)
        if s0 < s1:
            return -1
        if s0 > s1:
            return 1
        if shape[d0] > shape[d1]:
            return 1
    return 0


cdef object torch_index_layout(object B, tuple key, object out):
    """out (the numpy result of B[key], key holding index arrays) laid out as PyTorch lays out
    its index result.  PyTorch computes it with a TensorIterator over B restrided (the indexed
    dims replaced by the index shape, stride 0) and the index tensors broadcast to it; the output
    follows the order TensorIterator sorts the dims into: for each pair, the first operand with
    both strides nonzero decides (a tie goes to the smaller size), else they keep their order.
    A contiguous B gives a contiguous result; a permuted one keeps its order
    (x.permute(0, 2, 1)[[1]] has strides (6, 1, 3); fuzz seed 50000606)."""
    cdef Py_ssize_t n = out.ndim, nb = B.ndim, i, j, d0, d1, c
    if n < 2 or out.size == 0:
        return out if out.flags.c_contiguous else np.ascontiguousarray(out)
    if out.flags.c_contiguous and B.flags.c_contiguous:
        return out                      # (the common case: PyTorch's result is contiguous too)
    k = list(key)
    for i in range(len(k)):
        if k[i] is Ellipsis:
            k[i:i + 1] = [slice(None)] * (nb - len(k) + 1)
            break
    k += [slice(None)] * (nb - len(k))
    adv = [i for i in range(nb) if cnp.PyArray_Check(k[i])]
    ishape = k[adv[0]].shape if len(adv) == 1 else np.broadcast_shapes(*[k[i].shape for i in adv])
    ni = len(ishape)
    others = [i for i in range(nb) if i not in adv]
    isz = B.itemsize
    if adv == list(range(adv[0], adv[len(adv) - 1] + 1)):   # adjacent: index dims in place
        pos = adv[0]
        src = ([B.strides[i] // isz for i in others if i < pos] + [0] * ni +
               [B.strides[i] // isz for i in others if i > pos])
    else:                                           # apart: the index dims first
        pos = 0
        src = [0] * ni + [B.strides[i] // isz for i in others]
    if len(src) != n:
        return out if out.flags.c_contiguous else np.ascontiguousarray(out)
    shape = out.shape
    operands = [src]
    for i in adv:
        a = k[i]
        st = [0] * n
        off = pos + ni - a.ndim
        step = 1
        for j in range(a.ndim - 1, -1, -1):         # a contiguous index tensor, broadcast
            if a.shape[j] != 1 or shape[off + j] == 1:
                st[off + j] = step
            step *= max(a.shape[j], 1)
        operands.append(st)

    perm = list(range(n - 1, -1, -1))               # innermost first
    for i in range(1, n):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = index_layout_order(operands, shape, perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    if perm == list(range(n - 1, -1, -1)):
        return out if out.flags.c_contiguous else np.ascontiguousarray(out)
    outer = perm[::-1]
    res = np.empty([shape[d] for d in outer], dtype=out.dtype).transpose(np.argsort(outer))
    res[...] = out
    return res


cdef object with_new_axes(object A, list new_axes):
    """A viewed with a size-1 dim at each of `new_axes` (positions in the result, increasing),
    each of the stride unsqueeze gives (numpy's x[None] gives stride 0, which showed in
    Tensor.stride()).  x[None, ::2] unsqueezes before it slices, as PyTorch's indexing does,
    so the new dims are made on A before the rest of the key applies."""
    for axis in new_axes:
        A = unsqueezed(A, axis)
    return A


cdef object index_op(TensorBase x, object key):
    A = x._array
    shape = A.shape
    cdef Py_ssize_t ndim = A.ndim, i, k, n
    cdef TensorBase res
    cdef Record* r
    # fast paths: x[i] and x[a:b] (a step of 1) on a tensor with dims
    if ndim > 0 and (type(key) is int or (type(key) is slice and key.step is None)):
        key1 = (int64_index(key) if type(key) is int else key, Ellipsis)
        try:
            out = A[key1]
        except IndexError as e:
            raise IndexError(numpy_index_message(str(e))) from None
        res = wrap_result(out, x)
        r = record_from(OP_SELECT if type(key) is int else OP_SLICE, res, (x,))
        if r != NULL:
            keep(&r.aux, (shape, A.dtype, key1, None, None))
        return res
    cdef bint single = not isinstance(key, tuple)
    if is_other_sequence(key):
        hook = foreign_index_hook((key,))
        if hook is not None:
            return hook(x, key)
        key = list(key)
    if isinstance(key, (list, str)) and sequence_as_tuple(key):
        key = tuple(key)
        single = False
    items = (key,) if not isinstance(key, tuple) else key
    cdef list kinds = []
    try:
        vals = [classify_item(it, kinds) for it in items]
    except (TypeError, IndexError, ValueError):
        hook = foreign_index_hook(items)
        if hook is not None:
            return hook(x, key)
        if specified_dims(items) > ndim:    # PyTorch counts the key's dims before reading items
            raise too_many_indices(ndim) from None
        raise
    n = len(vals)

    # dims the key consumes; PyTorch's errors for too many
    cdef Py_ssize_t consumed = key_dims(kinds, vals), n_ellipsis = kinds.count(K_ELLIPSIS)
    cdef Py_ssize_t ins_at = -1, ins_n = 0        # (the `:`s a first of two `...` became)
    if n_ellipsis > 1:
        # PyTorch moves its dim pointer past ndim - (dims the key names) dims at every `...`, so
        # the first one covers that many dims and a later one runs off the end; only `...` and
        # `:` may follow it (no-ops).  Rewrite the first `...` as that many `:`.
        first = kinds.index(K_ELLIPSIS)
        second = kinds.index(K_ELLIPSIS, first + 1)
        for i in range(second, n):
            if kinds[i] != K_ELLIPSIS and not (kinds[i] == K_SLICE and vals[i] == slice(None)):
                raise IndexError("an index can only have a single ellipsis ('...')")
        if consumed <= ndim:
            ins_at, ins_n = first, ndim - consumed
            kinds = kinds[:first] + [K_SLICE] * (ndim - consumed) + kinds[first + 1:second]
            vals = vals[:first] + [slice(None)] * (ndim - consumed) + vals[first + 1:second]
            n = len(kinds)
            n_ellipsis = 0
            consumed = key_dims(kinds, vals)
    if consumed > ndim:
        if ndim == 0 and single and kinds[0] == K_INT and not isinstance(key, TensorBase):
            # (a 0-d integer tensor as the key gets the general message, as PyTorch's)
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        if ndim == 0 and single and kinds[0] == K_SLICE:
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    cdef Py_ssize_t ell = ndim - consumed

    # the two numpy keys, and the name PyTorch gives the last view op of the basic part
    key1 = []
    key2 = []
    cdef bint advanced = False, basic = False
    cdef int op = OP_ALIAS
    cdef Py_ssize_t adim = 0, bdim = 0
    masks = []                                      # (mask, dim in A, dim after key1)
    # where each None's new dim goes among A's dims (the dims of A.reshape with them inserted)
    new_axes = []
    for i in range(n):
        k = kinds[i]
        v = vals[i]
        if k == K_INT:
            if not -shape[adim] <= v < shape[adim]:
                # PyTorch names the item's place in the key, not the dim it indexes: they
                # differ after a `...`, None or True (x[..., 7] of a (2, 3, 4) x: dimension 1)
                raise IndexError(f"index {v} is out of bounds for dimension "
                                 f"{i - ins_n + 1 if 0 <= ins_at < i else i} with size "
                                 f"{shape[adim]}")
            key1.append(v)
            op = OP_SELECT
            basic = True
            adim += 1
        elif k == K_SLICE:
            key1.append(v)
            key2.append(slice(None))
            if single or not trivial_slice(v, shape[adim]):
                op = OP_SLICE
                basic = True
            adim += 1
            bdim += 1
        elif k == K_NONE:
            key1.append(None)
            key2.append(slice(None))
            new_axes.append(adim + len(new_axes))
            op = OP_INDEX_UNSQUEEZE
            basic = True
            bdim += 1
        elif k == K_ELLIPSIS:
            key1.append(Ellipsis)
            key2.append(Ellipsis)
            adim += ell
            bdim += ell
        elif k == K_BOOL:
            key1.append(None)
            key2.append(np.zeros(1 if v else 0, dtype=np.intp))
            advanced = basic = True
            bdim += 1
        elif k == K_ARRAY:
            key1.append(slice(None))
            key2.append(v)
            advanced = True
            adim += 1
            bdim += 1
        else:                                       # K_MASK
            key1.extend([slice(None)] * v.ndim)
            masks.append((v, adim, bdim))
            key2.extend(v.nonzero())
            advanced = True
            adim += v.ndim
            bdim += v.ndim
    if n_ellipsis == 0:
        key1.append(Ellipsis)                       # numpy then gives 0-d views, not scalars
    tkey1 = tuple(key1)
    try:
        if new_axes and not advanced:
            B = with_new_axes(A, new_axes)[tuple([slice(None) if item is None else item
                                                  for item in key1])]
        else:
            B = A[tkey1] if basic else A
    except IndexError as e:
        raise IndexError(numpy_index_message(str(e))) from None
    if not advanced:
        out = B if basic else A.view()              # a new view object, as PyTorch's alias
        aux = (shape, A.dtype, tkey1, None, None)
    else:
        op = OP_INDEX
        for m, ad, bd in masks:
            for i in range(m.ndim):
                if m.shape[i] != B.shape[bd + i]:
                    raise mask_shape_error(m.shape, i, B.shape, bd + i)
        tkey2 = tuple(key2)
        try:
            out = advanced_index(B, tkey2)
        except IndexError as e:
            msg = str(e)
            if msg.startswith("shape mismatch"):
                raise index_shapes_error(tkey2) from None
            if msg.endswith(" with size 0"):        # (PyTorch's message: no index, no dim)
                msg = "index is out of bounds for dimension with size 0"
            raise IndexError(numpy_index_message(msg, tkey2, B.ndim)) from None
        # numpy lays out a gather after a slice (x[:, [0, 0]]) in its own order; code may
        # .view() the result, so it takes PyTorch's layout (fuzz seeds 36024506, 36030249,
        # 50000606)
        out = torch_index_layout(B, tkey2, out)
        aux = (shape, A.dtype, tkey1 if basic else None, B.shape, None)
    res = wrap_result(nd(out), x)
    r = record_from(op, res, (x,))
    if r != NULL:
        keep(&r.aux, aux)
        if advanced:
            # Saved (not aux): freed by backward, so a second backward raises, as PyTorch's
            # IndexBackward0 does.  The index and mask tensors are saved themselves in slots 1
            # and 2, version-checked (record.pxi, save_index); a numpy array of the caller's is
            # copied (PyTorch makes a tensor of it).
            callers = [id(it) for it in items if isinstance(it, np.ndarray)]
            if callers:
                tkey2 = tuple([np.array(part, copy=True) if id(part) in callers else part
                               for part in tkey2])
            keep(&r.saved[0], saved_index_key(
                r, tkey2, [it for it in items if isinstance(it, TensorBase)
                           and (<TensorBase>it)._array.ndim > 0], 1))
    return res


def select(TensorBase input, dim=DIM_NOT_GIVEN, index=None, *, axis=None):
    """input[..., index, ...] at dim `dim` (also `axis`): a view without that dim."""
    if axis is not None or dim is DIM_NOT_GIVEN:
        dim = axis_alias("select", dim, axis, DIM_NOT_GIVEN)
    if index is None:
        raise TypeError('select() missing 1 required positional arguments: "index"')
    A = input._array
    if A.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    cdef Py_ssize_t d = wrap_dim(dim, A.ndim, "select", "dim", 1)
    i = int_arg(index, "select", "index", 2, True)
    size = A.shape[d]
    if i < -size or i >= size:
        raise IndexError(f"select(): index {i} out of range for tensor of size {list(A.shape)} at "
                         f"dimension {d}")
    key = (slice(None),) * d + (i, Ellipsis)
    return shape_result(OP_SELECT, input, A[key], (A.shape, A.dtype, key, None, None))


def narrow(TensorBase input, dim=DIM_NOT_GIVEN, start=None, length=None, *, axis=None):
    """input[..., start:start+length, ...] at dim `dim` (also `axis`): a view."""
    if axis is not None or dim is DIM_NOT_GIVEN:
        dim = axis_alias("narrow", dim, axis, DIM_NOT_GIVEN)
    if start is None or length is None:
        raise TypeError("narrow() missing required positional arguments: \"start\", \"length\"")
    A = input._array
    if A.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    cdef Py_ssize_t d = wrap_dim(dim, A.ndim, "narrow", "dim", 1)
    if isinstance(start, TensorBase) and ((<TensorBase>start)._array.ndim != 0
                                          or (<TensorBase>start)._array.dtype.kind not in "iu"):
        # PyTorch's Tensor-start overload: a float, bool or non-scalar start is refused
        raise RuntimeError("start must be an 0-dim integral Tensor.")
    s = int_arg(start, "narrow", "start", 2, True)
    n = int_arg(length, "narrow", "length", 3, True)
    size = A.shape[d]
    if s < -size or s > size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but "
                         f"got {s})")
    if s < 0:
        s += size
    if n < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if s + n > size:
        raise RuntimeError(f"start ({s}) + length ({n}) exceeds dimension size ({size}).")
    key = (slice(None),) * d + (slice(s, s + n), Ellipsis)
    return shape_result(OP_SLICE, input, A[key], (A.shape, A.dtype, key, None, None))


# -- gather, index_select ------------------------------------------------------------------------

cdef Py_ssize_t index_select_axis(object key):
    """The dim d of index_select's key (`:`, ..., `:` (d of them), index, `...`), or -1."""
    if type(key) is not tuple or len(<tuple>key) < 2:
        return -1
    cdef Py_ssize_t d = len(<tuple>key) - 2
    if (<tuple>key)[d + 1] is not Ellipsis:       # (no negative indices: wraparound is off)
        return -1
    if not cnp.PyArray_Check((<tuple>key)[d]):
        return -1
    for part in (<tuple>key)[:d]:
        if type(part) is not slice or part != slice(None):
            return -1
    return d


cdef void scatter_along_axis(const int64_t* idx, Py_ssize_t outer, Py_ssize_t m,
                             Py_ssize_t size, Py_ssize_t inner, const real_t* g,
                             real_t* z) noexcept nogil:
    """z[p, idx[i], q] += g[p, i, q] (z: outer x size x inner, g: outer x m x inner, both
    C-contiguous), i in order for each (p, q): np.add.at's additions, read in g's order."""
    cdef Py_ssize_t p, i, q
    cdef real_t* zrow
    cdef const real_t* grow
    for p in range(outer):
        for i in range(m):
            zrow = z + (p * size + idx[i]) * inner
            grow = g + (p * m + i) * inner
            for q in range(inner):
                zrow[q] += grow[q]


cdef object index_select_grad(object Z, Py_ssize_t d, object I, object G):
    """index_select's gradient along dim d in C: Z (zeros, C-contiguous float32/64) += G's rows
    at I (int64, in range, as index_select checked).  np.add.at with the key's slices took
    1.3 s along the last dim of a 2x16x64x64x64 gradient (a trilinear upsampling's last pass),
    ~10x this.  False, Z untouched, for other dtypes or layouts."""
    cdef int tz = -1
    if not kernel_array(Z, &tz) or not cnp.PyArray_Check(G) or not cnp.PyArray_Check(I):
        return False
    cdef cnp.ndarray z = <cnp.ndarray>Z, g = <cnp.ndarray>G, k = <cnp.ndarray>I
    if (cnp.PyArray_TYPE(g) != tz or cnp.PyArray_TYPE(k) != cnp.NPY_INT64
            or cnp.PyArray_NDIM(k) != 1 or not cnp.PyArray_IS_C_CONTIGUOUS(k)
            or cnp.PyArray_NDIM(g) != cnp.PyArray_NDIM(z)):
        return False
    if not cnp.PyArray_IS_C_CONTIGUOUS(g):
        g = <cnp.ndarray>np.ascontiguousarray(g)
    cdef Py_ssize_t outer = 1, inner = 1, j
    for j in range(d):
        outer *= cnp.PyArray_DIMS(z)[j]
    for j in range(d + 1, cnp.PyArray_NDIM(z)):
        inner *= cnp.PyArray_DIMS(z)[j]
    cdef Py_ssize_t m = cnp.PyArray_DIMS(k)[0], size = cnp.PyArray_DIMS(z)[d]
    cdef const int64_t* idx = <const int64_t*>cnp.PyArray_DATA(k)
    if tz == cnp.NPY_FLOAT64:
        with nogil:
            scatter_along_axis(idx, outer, m, size, inner, <const double*>cnp.PyArray_DATA(g),
                               <double*>cnp.PyArray_DATA(z))
    else:
        with nogil:
            scatter_along_axis(idx, outer, m, size, inner, <const float*>cnp.PyArray_DATA(g),
                               <float*>cnp.PyArray_DATA(z))
    return True


cdef object vjp_take(Record* r, object g):
    """gather / index_select: add g at the gathered positions of zeros (np.add.at accumulates)."""
    shape, shape1, dt, idx, gshape = <tuple>r.aux
    idx = resolve_index_key(r, idx)
    z = np.zeros(shape1, dtype=dt)
    g = g.reshape(gshape)
    cdef Py_ssize_t d = index_select_axis(idx)
    if d >= 0 and index_select_grad(z, d, idx[d], g):
        return z.reshape(shape)
    if not scatter_add_c(z, idx, g):
        np.add.at(z, idx, g)
    return z.reshape(shape)


OP_GATHER = register_op("GatherBackward0", vjp_take)
OP_INDEX_SELECT = register_op("IndexSelectBackward0", vjp_take)


cdef object index_tensor_arg(object index, str fname, int pos):
    if not isinstance(index, TensorBase):
        raise TypeError(f"{fname}(): argument 'index' (position {pos}) must be Tensor, not "
                        f"{type_name(index)}")
    return (<TensorBase>index)._array


cdef object values_at_positions(object A, object idx, int axis):
    """np.take_along_axis(A, idx, axis) for int64 positions idx shaped as A but along axis (the
    argmax's, a sort's): one C loop of element copies, where numpy builds its index grids in
    Python (~5 us of a small max(dim)'s 11).  A position out of range is an IndexError."""
    if not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>A) or cnp.PyArray_TYPE(<cnp.ndarray>idx) != cnp.NPY_INT64:
        # (numpy counts a negative position from the end: gather of an expanded input with
        # index -1 gave the last value, where PyTorch raises; fuzz 62720522)
        if idx.size and idx.min() < 0:
            raise IndexError(f"position {idx.min()} out of range for a dim of size "
                             f"{A.shape[axis]}")
        return np.take_along_axis(A, idx, axis=axis)
    idx = np.ascontiguousarray(idx)     # (a sliced sort order: topk's)
    cdef Py_ssize_t outer = 1, inner = 1, d, o, j, i, at
    cdef int64_t k
    cdef Py_ssize_t K = cnp.PyArray_DIMS(<cnp.ndarray>A)[axis]
    cdef Py_ssize_t m = cnp.PyArray_DIMS(<cnp.ndarray>idx)[axis]
    cdef Py_ssize_t item = cnp.PyArray_ITEMSIZE(<cnp.ndarray>A)
    for d in range(axis):
        outer *= cnp.PyArray_DIMS(<cnp.ndarray>A)[d]
    for d in range(axis + 1, cnp.PyArray_NDIM(<cnp.ndarray>A)):
        inner *= cnp.PyArray_DIMS(<cnp.ndarray>A)[d]
    out = np.empty(idx.shape, dtype=A.dtype)
    cdef const char* src = <const char*>cnp.PyArray_DATA(<cnp.ndarray>A)
    cdef char* dst = <char*>cnp.PyArray_DATA(<cnp.ndarray>out)
    cdef const int64_t* pos = <const int64_t*>cnp.PyArray_DATA(<cnp.ndarray>idx)
    for o in range(outer):
        for j in range(m):
            for i in range(inner):
                at = (o * m + j) * inner + i
                k = pos[at]
                if k < 0 or k >= K:
                    raise IndexError(f"position {k} out of range for a dim of size {K}")
                memcpy(dst + at * item, src + ((o * K + k) * inner + i) * item, item)
    return out


def _values_at_positions(A, idx, int axis):
    """values_at_positions for the Python-level ops (the values of sort, topk, kthvalue, median)."""
    return values_at_positions(A, idx, axis)


def gather(TensorBase input, dim=DIM_NOT_GIVEN, index=None, *, sparse_grad=False, axis=None):
    """out[i][j][k] = input[index[i][j][k]][j][k] (for dim 0; likewise for the other dims; the
    dim may come as `axis`)."""
    if dim is DIM_NOT_GIVEN and axis is None:
        # (PyTorch's parser names every required argument from the first one missing on,
        # index even when given by keyword, with its own plural)
        raise TypeError('gather() missing 2 required positional argument: "dim", "index"')
    if axis is not None or dim is DIM_NOT_GIVEN:
        dim = axis_alias("gather", dim, axis, DIM_NOT_GIVEN)
    if index is None:
        raise TypeError('gather() missing 1 required positional arguments: "index"')
    # (a view whose base a write through another view made require grad: its own flag is
    # refreshed here, before the no-record fast path below reads it, fuzz 66500171)
    fresh(input)
    A = input._array
    I = index_tensor_arg(index, "gather", 3)
    cdef Py_ssize_t d = wrap_dim(dim, A.ndim, "gather", "dim", 2), k
    cdef Record* r
    cdef TensorBase res
    if I.size == 0:
        # PyTorch checks neither the dtype nor the shape of an empty index: the result is a new
        # empty tensor of the index's shape (not a view of input: an in-place write into it is
        # no write into a leaf's view, fuzz 62675549), still recorded, so that input's gradient
        # is zeros and, as GatherBackward0 saves self, a write into input before backward raises
        res = wrap(np.empty(I.shape, dtype=A.dtype))
        r = record_from(OP_GATHER, res, (input,))
        if r != NULL:
            no_positions = np.empty(0, dtype=np.intp)
            keep(&r.aux, (A.shape, A.shape if A.ndim > 0 else (1,), A.dtype,
                          (no_positions,) * (A.ndim if A.ndim > 0 else 1), (0,)))
            guard_version(r, input)
        return res
    if I.dtype != NP_INT64 and I.dtype != np.int32:
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    if (A.ndim if A.ndim > 0 else 1) != (I.ndim if I.ndim > 0 else 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    A1 = A.reshape(1) if A.ndim == 0 else A
    I1 = I.reshape(1) if I.ndim == 0 else I
    cdef Py_ssize_t ndim = A1.ndim
    for k in range(ndim):
        if k != d and I1.shape[k] > A1.shape[k]:
            raise RuntimeError(f"Size does not match at dimension {k} expected index "
                               f"{list(I.shape)} to be no larger than self {list(A.shape)} apart "
                               f"from dimension {d}")
    size = A1.shape[d]
    if not (grad_enabled() and input._requires_grad) and I1.dtype == NP_INT64 and all(
            [I1.shape[k] == A1.shape[k] for k in range(ndim) if k != d]):
        # nothing to record, and index shaped as input along the other dims (the common
        # gather(1, y.unsqueeze(1))): one C loop of element copies
        try:
            return wrap(contiguous_result(nd(values_at_positions(A1, I1, d).reshape(I.shape))))
        except IndexError:
            pass                        # (an index out of range: PyTorch's message below)
    if I1.size:
        bad = I1[(I1 < 0) | (I1 >= size)]
        if bad.size:
            raise RuntimeError(f"index {int(bad[0])} is out of bounds for dimension {d} with size "
                               f"{size}")
    idx = []
    for k in range(ndim):
        if k == d:
            idx.append(I1.astype(np.intp, copy=False))     # (int64: the index itself, saved)
        else:
            sh = [1] * ndim
            sh[k] = I1.shape[k]
            idx.append(np.arange(I1.shape[k], dtype=np.intp).reshape(sh))
    idx = tuple(idx)
    # row-major as PyTorch's (at::empty(index.sizes())), not in the index's layout
    out = contiguous_result(nd(A1[idx].reshape(I.shape)))
    res = wrap(out)
    r = record_from(OP_GATHER, res, (input,))
    if r != NULL:
        keep(&r.aux, (A.shape, A1.shape, A.dtype, saved_index_key(r, idx, (index,)), I1.shape))
        guard_version(r, input)         # PyTorch's GatherBackward saves self
    return res


cdef extern from "index_kernels.h" nogil:
    void tg_reverse_rows(const char* x, ptrdiff_t x_row, char* y, ptrdiff_t y_row,
                         ptrdiff_t rows, ptrdiff_t n, ptrdiff_t item)


cdef enum:
    MAX_RUNS = 8        # take_by_runs: slice copies up to this many, else one take


cdef object take_by_runs(object A, object I, Py_ssize_t d):
    """A.take(I, axis=d) as slice copies when I (1-d, intp, C-contiguous, every entry in range)
    is at most MAX_RUNS runs of positions stepping by +1, -1 or 0: the index of flip (one run
    down), roll (two up), the reflect / replicate / circular pads (a few of each).  numpy's take
    gathers element by element along an inner dim (flip of a 64 x 1000 float32 along dim 1 took
    2x the reversed slice copy, roll 3-4x its two block copies; a run backwards along the last
    dim is copied by index_kernels.c); the copies give the same array bit for bit, in take's C
    order.  None for any other index (then take: a random index stops the scan at its ninth
    run)."""
    cdef cnp.ndarray idx = <cnp.ndarray>I
    # The scan reads I's buffer as packed intp: a strided index (a column of a triples tensor,
    # `hrt[:, 0]`) read that way gave other rows' positions, a silent wrong gather.
    if not cnp.PyArray_IS_C_CONTIGUOUS(idx) or cnp.PyArray_TYPE(idx) != cnp.NPY_INTP:
        return None
    cdef Py_ssize_t m = cnp.PyArray_DIMS(idx)[0], i = 0, j, nruns = 0, step
    cdef const cnp.npy_intp* p = <const cnp.npy_intp*>cnp.PyArray_DATA(idx)
    cdef Py_ssize_t starts[MAX_RUNS]
    cdef Py_ssize_t lengths[MAX_RUNS]
    cdef Py_ssize_t steps[MAX_RUNS]
    if m == 0:
        return None
    while i < m:
        if nruns == MAX_RUNS:
            return None
        step = p[i + 1] - p[i] if i + 1 < m else 1
        if step < -1 or step > 1:
            step = 1
            j = i + 1
        else:
            j = i + 1
            while j < m and p[j] - p[j - 1] == step:
                j += 1
        starts[nruns] = i
        lengths[nruns] = j - i
        steps[nruns] = step
        nruns += 1
        i = j
    shape = list(A.shape)
    shape[d] = m
    cdef cnp.ndarray out = <cnp.ndarray>np.empty(shape, dtype=A.dtype)
    lead = (slice(None),) * d
    cdef Py_ssize_t k, first, last, item = out.itemsize, size = A.shape[d]
    # a run backwards along the last dim of a C-contiguous A: index_kernels.c reverses the rows
    cdef bint rows_kernel = (d == A.ndim - 1 and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>A)
                             and cnp.PyArray_ISALIGNED(<cnp.ndarray>A))
    for k in range(nruns):
        first = p[starts[k]]
        last = p[starts[k] + lengths[k] - 1]
        if steps[k] < 0 and rows_kernel:
            tg_reverse_rows(<const char*>cnp.PyArray_DATA(<cnp.ndarray>A) + last * item,
                            size * item, <char*>cnp.PyArray_DATA(out) + starts[k] * item,
                            m * item, cnp.PyArray_SIZE(out) // m, lengths[k], item)
            continue
        if steps[k] == 0:       # one position repeated: its slice, broadcast
            src = slice(first, first + 1)
        elif steps[k] > 0:
            src = slice(first, last + 1)
        else:
            src = slice(first, last - 1 if last > 0 else None, -1)
        out[lead + (slice(starts[k], starts[k] + lengths[k]),)] = A[lead + (src,)]
    return out


def index_select(TensorBase input, dim=DIM_NOT_GIVEN, index=None, *, axis=None):
    """The entries of `input` at positions `index` (a 1-d integer tensor) along `dim` (also
    `axis`)."""
    if axis is not None or dim is DIM_NOT_GIVEN:
        dim = axis_alias("index_select", dim, axis, DIM_NOT_GIVEN)
    if index is None:
        raise TypeError('index_select() missing 1 required positional arguments: "index"')
    A = input._array
    I = index_tensor_arg(index, "index_select", 3)
    cdef Py_ssize_t d = wrap_dim(dim, A.ndim, "index_select", "dim", 2)
    if I.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if I.dtype != NP_INT64 and I.dtype != np.int32:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if A.ndim == 0 and I.size != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                           f"{I.size} value(s)")
    A1 = A.reshape(1) if A.ndim == 0 else A
    # (int64: the index itself, which the record saves; no copy)
    I1 = (I if I.ndim == 1 else I.reshape(-1)).astype(np.intp, copy=False)
    size = A1.shape[d]
    if I1.size and (I1.min() < 0 or I1.max() >= size):
        # PyTorch's kernels: RuntimeError along an empty dim, and along dim 1 or in an empty
        # tensor of 2 or more dims; otherwise IndexError
        if size == 0 and A1.ndim > 1:
            raise RuntimeError("index_select(): self indexing axis dim should be positive")
        if A1.ndim > 1 and (d == 1 or A1.size == 0):
            bad = I1[np.logical_or(I1 < 0, I1 >= size)][0]
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={size}")
        raise IndexError("index out of range in self")
    out = take_by_runs(A1, I1, d)
    if out is None:
        out = A1.take(I1, axis=d)
    if A.ndim == 0:
        out = out.reshape(())
    key = (slice(None),) * d + (I1, Ellipsis)
    cdef TensorBase res = wrap(out)
    cdef Record* r = record_from(OP_INDEX_SELECT, res, (input,))
    if r != NULL:
        keep(&r.aux, (A.shape, A1.shape, A.dtype, saved_index_key(r, key, (index,)),
                      A1.shape[:d] + I1.shape + A1.shape[d + 1:]))
    return res


# -- masked_fill, masked_select ------------------------------------------------------------------


cdef object vjp_masked_fill(Record* r, object g):
    M = <object>r.saved[0]                          # the mask, broadcast to the output's shape
    shape, vdt = <tuple>r.aux
    gi = gv = None
    if needs_grad(r, 0):
        gi = g.copy()
        gi[M] = 0
        gi = sum_to(gi, shape)
    if r.n_in == 1:
        return gi
    if needs_grad(r, 1):
        gv = np.add.reduce(g[M], keepdims=True).reshape(()).astype(vdt)
    return (gi, gv)


OP_MASKED_FILL = register_op("MaskedFillBackward0", vjp_masked_fill)     # scalar value
OP_MASKED_FILL_T = register_op("MaskedFillBackward1", vjp_masked_fill)   # tensor value


def masked_fill(TensorBase input, mask, value):
    """`input` with `value` (a number or 0-d tensor) where the bool `mask` (broadcast) is True."""
    return masked_fill_into(input, mask, value, False)


def _masked_fill_in_place(TensorBase input, mask, value):
    """masked_fill as masked_fill_ computes it (tapegrad/_extra_ops.py: out of place on a copy
    of self, then written into self): an integer or bool self filled with a value that requires
    grad keeps the record, as PyTorch's in-place form does (it rebases self's history, where
    the out-of-place form sets a new one, and refuses)."""
    return masked_fill_into(input, mask, value, True)


cdef object masked_fill_into(TensorBase input, mask, value, bint in_place):
    A = input._array
    if not isinstance(mask, TensorBase):
        raise TypeError(f"masked_fill(): argument 'mask' (position 1) must be Tensor, not "
                        f"{type_name(mask)}")
    M = (<TensorBase>mask)._array
    if M.dtype != NP_BOOL:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{C_TYPE_NAMES.get(dtype_of_array(M).name, str(M.dtype))}")
    cdef bint tensor_value = isinstance(value, TensorBase)
    if tensor_value:
        V = (<TensorBase>value)._array
        if V.ndim != 0:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {V.ndim} dimension(s).")
        scalar_to_dtype(V.item(), A.dtype)      # (PyTorch reads it as a number: its check)
        fill = V
    elif isinstance(value, (bool, int, float, complex, np.bool_, np.number)):
        fill = np.asarray(scalar_to_dtype(value, A.dtype), dtype=A.dtype)
    else:
        raise TypeError("masked_fill() received an invalid combination of arguments - got "
                        f"(Tensor, {type_name(value)})")
    out_shape = broadcast_shapes_torch(M.shape, A.shape)
    if fill.dtype != A.dtype:
        with IeeeResults():
            fill = fill.astype(A.dtype)
    out = np.asarray(np.where(M, fill, A), order="C")   # (contiguous, as PyTorch's clone)
    if (tensor_value and not in_place and (<TensorBase>value)._requires_grad
            and grad_enabled() and A.dtype.kind not in "fc"):
        # PyTorch records the fill, then refuses to give the integer or bool result a history
        # (its set_history: only floating and complex outputs can carry one)
        raise RuntimeError(f"Autograd not support dtype: {scalar_type_name(A.dtype)}")
    cdef TensorBase res = wrap(nd(out))
    cdef Record* r = record_from(OP_MASKED_FILL_T if tensor_value else OP_MASKED_FILL, res,
                                 (input, value) if tensor_value else (input,))
    if r != NULL:
        save_value(r, 0, M if M.shape == out_shape else np.broadcast_to(M, out_shape), mask)
        keep(&r.aux, (A.shape, V.dtype if tensor_value else None))
    return res


cdef object vjp_masked_select(Record* r, object g):
    M = <object>r.saved[0]
    shape, dt = <tuple>r.aux
    z = np.zeros(M.shape, dtype=dt)
    z[M] = g
    return sum_to(z, shape)


OP_MASKED_SELECT = register_op("MaskedSelectBackward0", vjp_masked_select)


def masked_select(TensorBase input, mask):
    """The entries of `input` where the bool `mask` is True (both broadcast), as a 1-d tensor."""
    A = input._array
    if not isinstance(mask, TensorBase):
        raise TypeError(f"masked_select(): argument 'mask' (position 1) must be Tensor, not "
                        f"{type_name(mask)}")
    M = (<TensorBase>mask)._array
    if M.dtype != NP_BOOL:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    out_shape = broadcast_shapes_torch(M.shape, A.shape)
    Mb = M if M.shape == out_shape else np.broadcast_to(M, out_shape)
    Ab = A if A.shape == out_shape else np.broadcast_to(A, out_shape)
    out = Ab[Mb]
    cdef TensorBase res = wrap(out)
    cdef Record* r = record_from(OP_MASKED_SELECT, res, (input,))
    if r != NULL:
        save_value(r, 0, Mb, mask)
        keep(&r.aux, (A.shape, A.dtype))
        guard_version(r, input)         # PyTorch's MaskedSelectBackward0 saves self: a write raises
    return res


# Dict literals, not keyword calls: ops_unary.pxi's registration says why (load-code size).
TENSOR_METHODS.update({
    "select": select, "narrow": narrow, "gather": gather, "index_select": index_select,
    "masked_fill": masked_fill, "masked_select": masked_select})
TORCH_FUNCTIONS.update({
    "select": select, "narrow": narrow, "gather": gather, "index_select": index_select,
    "masked_fill": masked_fill, "masked_select": masked_select})


INDEX_OP = index_op                 # TensorBase.__getitem__ (the core's slot, ops_registry.pxi)


def _as_strided_view(TensorBase x, object out, object key, bint unfold=False):
    """The tensor for `out`, a numpy view of x's storage made of x's elements at `key` (one
    int64 index array per dim of x, each of out's shape; of a 0-d x: one array indexing x seen
    as shape (1,)): a view of x (writes through either reach the other) recorded as PyTorch's
    AsStridedBackward0, whose gradient scatters into x's shape, elements the view repeats
    (overlapping strides) accumulating.  tapegrad.as_strided (tapegrad/_strided.py) checks the
    geometry and builds `out` and `key`; with `unfold`, the record is named as Tensor.unfold's
    (UnfoldBackward0), the same gradient, and `key` may be its UnfoldWindows."""
    A = x._array
    cdef TensorBase res = wrap_result(out, x)
    cdef Record* r = record_from(OP_UNFOLD if unfold else OP_AS_STRIDED, res, (x,))
    if r != NULL:
        if A.ndim == 0:
            keep(&r.aux, ((), A.dtype, (None,), (1,), key))
        else:
            keep(&r.aux, (A.shape, A.dtype, None, A.shape, key))
    return res


def _segment_ids(object counts, Py_ssize_t size):
    """segment_reduce's segment of each position: row r of the (rows, size) int64 result holds
    j for counts[r, j] consecutive positions, j = 0, 1, ..., cut at size, and n_seg (one slot
    past the last segment) for positions left over.  counts: (rows, n_seg) integers, none
    negative (checked by the caller).  (np.repeat and np.pad per row took 40 ms for 1e6.)"""
    c = np.ascontiguousarray(counts, dtype=np.int64)
    cdef Py_ssize_t rows = c.shape[0], n_seg = c.shape[1], r, j, p, e, k
    cdef cnp.ndarray out = <cnp.ndarray>np.empty((rows, size), dtype=np.int64)
    cdef const int64_t* cp = <const int64_t*>cnp.PyArray_DATA(<cnp.ndarray>c)
    cdef int64_t* op = <int64_t*>cnp.PyArray_DATA(out)
    with nogil:
        for r in range(rows):
            p = 0
            for j in range(n_seg):
                e = p + cp[r * n_seg + j]
                if e > size:
                    e = size
                for k in range(p, e):
                    op[r * size + k] = j
                p = e
            for k in range(p, size):
                op[r * size + k] = n_seg
    return out
