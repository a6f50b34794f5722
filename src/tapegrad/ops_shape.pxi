# ---------------------------------------------------------------------------------------------
# Shape ops: reshape, view, flatten, unflatten, transpose, t, T, mT, permute, movedim, squeeze,
# unsqueeze, expand, repeat, tile, cat, stack, split, chunk, unbind, contiguous, clone.
#
# Views share memory with their input (numpy views), as PyTorch's do; reshape copies only when no
# view can express the new shape (UnsafeViewBackward0, as PyTorch names it).  VJPs:
#   reshape family (view, squeeze, unsqueeze, flatten)  g.reshape(input shape)        aux: shape
#   permute family (transpose, t, T, mT, movedim)       g.transpose(inverse perm)     aux: perm
#   expand                                              sum over the expanded dims    aux: shape
#   repeat / tile                                       sum over the repetitions      aux
#   cat / stack                                         slices of g, cast back        aux
#   split / chunk / unbind (one record per output)      zeros with g at the slice     aux
# ---------------------------------------------------------------------------------------------

import operator


cdef str VIEW_ERROR = (
    "view size is not compatible with input tensor's size and stride (at least one dimension "
    "spans across two contiguous subspaces). Use .reshape(...) instead.")


# -- argument helpers ----------------------------------------------------------------------------

def check_ndim(Py_ssize_t ndim):
    """Refuses a shape of more than 64 dims with PyTorch's RuntimeError (it refuses them in its
    reductions and TensorIterator; tapegrad's storage, a numpy array, cannot hold them at all, so
    tapegrad refuses where the shape is asked for instead of leaking numpy's ValueError)."""
    if ndim > 64:
        raise RuntimeError(f"only tensors with up to 64 dims are supported (a shape of {ndim} "
                           "dims was asked for)")


cdef tuple int_list_arg(tuple args, str fname, str argname):
    """Sizes or dims given as varargs (x.f(2, 3)) or as one sequence (x.f((2, 3)), x.f([2, 3])).
    PyTorch's parser names a bad first element by its type, a later one as the element it failed
    to unpack (counted from 1), and a single argument that is no sequence by its own type."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    elif len(args) == 1 and isinstance(args[0], (str, bytes, float)):
        raise TypeError(f"{fname}(): argument '{argname}' (position 1) must be tuple of ints, not "
                        f"{type_name(args[0])}")
    out = []
    for i, v in enumerate(args):
        d = symint_param(v)                 # (each element read as an `int[]`'s, dims.pxi)
        if d is not None:
            out.append(d)
            continue
        if i:
            raise TypeError(f"{fname}(): argument '{argname}' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got "
                            f"{type_name(v)}\"")
        raise TypeError(f"{fname}(): argument '{argname}' (position 1) must be tuple of ints, but "
                        f"found element of type {type_name(v)} at pos {i}")
    return tuple(out)


cdef Py_ssize_t wrap_dim(object dim, Py_ssize_t ndim, str fname="dim", str argname="dim",
                         int pos=1) except -1:
    """PyTorch's maybe_wrap_dim: a dim in [-ndim, ndim-1] (a 0-d tensor counts as 1-d) -> axis."""
    cdef Py_ssize_t n = ndim if ndim > 0 else 1
    d = int_arg(dim, fname, argname, pos)
    if d < -n or d >= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {d})")
    return d + n if d < 0 else d


cdef tuple infer_size(tuple shape, Py_ssize_t numel):
    """PyTorch's infer_size: resolve one -1 in `shape` for a tensor of `numel` elements."""
    cdef Py_ssize_t newsize = 1, infer = -1, i
    check_ndim(len(shape))
    for i in range(len(shape)):
        s = shape[i]
        if s == -1:
            if infer >= 0:
                raise RuntimeError("only one dimension can be inferred")
            infer = i
        elif s >= 0:
            newsize *= s
        else:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {list(shape)}")
    if numel == newsize or (infer >= 0 and newsize > 0 and numel % newsize == 0):
        if infer >= 0:
            if newsize == 0:
                raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} "
                                   "because the unspecified dimension size -1 can be any value and "
                                   "is ambiguous")
            out = list(shape)
            out[infer] = numel // newsize
            return tuple(out)
        return shape
    raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")


cdef object try_view(object A, tuple shape):
    """A view of A with `shape`, or None when its strides cannot express it without a copy."""
    try:
        return A.reshape(shape, copy=False)         # numpy >= 2.1
    except ValueError:
        return None
    except TypeError:                               # older numpy: no copy= keyword
        pass
    v = A.view()
    try:
        v.shape = shape
    except AttributeError:
        return None
    return v


# -- numpy's axis= for a dim argument (PyTorch's argument parser accepts it for every `dim`) -------

cdef object DIM_NOT_GIVEN = object()    # the default of a required dim that may come as axis=


cdef object dim_not_given():
    """DIM_NOT_GIVEN, for the op families in other modules (one sentinel for every op)."""
    return DIM_NOT_GIVEN


cdef object axis_alias(str fname, object dim, object axis, object default):
    """The dim argument, given as `dim` or as numpy's `axis` (not both: PyTorch's TypeError).
    `default`: the dim when neither was given (DIM_NOT_GIVEN: a required one, which raises).
    Called only when axis was given or a required dim is missing: the usual call never pays."""
    if axis is not None:
        if dim is not DIM_NOT_GIVEN and dim is not None and dim != default:
            raise TypeError(f"{fname}() got an unexpected keyword argument 'axis'")
        return axis
    if dim is DIM_NOT_GIVEN:
        raise TypeError(f'{fname}() missing 1 required positional arguments: "dim"')
    return dim


cdef inline TensorBase shape_result(int op, TensorBase x, object out, object aux,
                                   double dim=0):
    """Wrap `out` and record the one-input shape op `op` with `aux` for its VJP (and the dim
    argument of squeeze / unsqueeze in the record's scalar, which grad_fn._saved_dim reads)."""
    cdef TensorBase res = wrap_result(out, x)
    cdef Record* r = record_from(op, res, (x,))
    if r != NULL:
        r.scalar = dim
        if aux is not None:
            keep(&r.aux, aux)
    return res


# -- reshape family ------------------------------------------------------------------------------

cdef object vjp_reshape(Record* r, object g):
    return g.reshape(<tuple>r.aux)


OP_VIEW = register_op("ViewBackward0", vjp_reshape)
OP_RESHAPE_ALIAS = register_op("ReshapeAliasBackward0", vjp_reshape)
OP_UNSAFE_VIEW = register_op("UnsafeViewBackward0", vjp_reshape)
OP_SQUEEZE = register_op("SqueezeBackward0", vjp_reshape)      # squeeze()
OP_SQUEEZE_DIM = register_op("SqueezeBackward1", vjp_reshape)  # squeeze(dim)
OP_SQUEEZE_DIMS = register_op("SqueezeBackward2", vjp_reshape) # squeeze((d0, d1))
OP_UNSQUEEZE = register_op("UnsqueezeBackward0", vjp_reshape)
# the in-place forms (squeeze_, unsqueeze_) record the same view under PyTorch's names for them
OP_SQUEEZE_INPLACE = register_op("SqueezeBackward3", vjp_reshape)
OP_SQUEEZE_DIM_INPLACE = register_op("SqueezeBackward4", vjp_reshape)
OP_SQUEEZE_DIMS_INPLACE = register_op("SqueezeBackward5", vjp_reshape)
OP_UNSQUEEZE_INPLACE = register_op("UnsqueezeBackward1", vjp_reshape)


cdef TensorBase reshape_to(TensorBase x, tuple shape):
    """reshape with a resolved shape: a view when the strides allow it, else a copy."""
    A = x._array
    out = try_view(A, shape)
    if out is not None:
        op = OP_VIEW if A.flags.c_contiguous else OP_RESHAPE_ALIAS
    else:
        out = A.reshape(shape)                      # copies (C order)
        op = OP_UNSAFE_VIEW
    return shape_result(op, x, out, A.shape)


cdef TensorBase view_result(TensorBase x, object out):
    """x viewed as numpy array `out`, another shape on x's storage that x's own op made
    (linear's N-d result over its 2-D product), recorded as view() records it.  The caller
    knows `out` views x: no storage test."""
    cdef TensorBase res = make_view(out, x)
    cdef Py_ssize_t inp
    if x._node >= 0 and grad_enabled():     # (x, the op's own product, was just recorded)
        begin_record(1)
        inp = x._node
        keep(&record_op(OP_VIEW, res, 1, &inp).aux, x._array.shape)
    return res


cdef TensorBase view_to(TensorBase x, tuple shape):
    A = x._array
    out = try_view(A, shape)
    if out is None:
        raise RuntimeError(VIEW_ERROR)
    return shape_result(OP_VIEW, x, out, A.shape)


def reshape(TensorBase input, *shape_args, shape=None):
    """A tensor with the same elements in `shape` (one dim may be -1): a view when possible."""
    if shape is not None:
        if shape_args:
            raise TypeError("reshape() got multiple values for argument 'shape'")
        shape_args = (shape,)
    if not shape_args:
        raise TypeError('reshape() missing 1 required positional arguments: "shape"')
    cdef tuple sh = int_list_arg(shape_args, "reshape", "shape")
    return reshape_to(input, infer_size(sh, input._array.size))


cdef object DTYPE_CLASS = dtype        # (view's keyword `dtype` hides the class inside it)


def view(TensorBase input, *size_args, size=None, dtype=None):
    """A view with shape `size` sharing memory with `input` (RuntimeError when the strides do not
    allow one: use reshape).  view(dtype) reinterprets the bytes (not differentiable); PyTorch
    takes that overload by keyword too (x.view(dtype=torch.int32)), alone."""
    if dtype is not None:
        if size_args or size is not None or not isinstance(dtype, DTYPE_CLASS):
            from tapegrad.tensor import invalid_arguments
            kwargs = {} if size is None else {"size": size}
            kwargs["dtype"] = dtype
            raise invalid_arguments("view", size_args, kwargs,
                                    "\n * (torch.dtype dtype)\n * (tuple of ints size)\n")
        return view_dtype(input, dtype)
    if size is not None:
        if size_args:
            raise TypeError("view() got multiple values for argument 'size'")
        size_args = (size,)
    if len(size_args) == 1 and isinstance(size_args[0], DTYPE_CLASS):
        return view_dtype(input, size_args[0])
    if not size_args:
        raise TypeError('view() missing 1 required positional arguments: "size"')
    cdef tuple sh = int_list_arg(size_args, "view", "size")
    return view_to(input, infer_size(sh, input._array.size))


cdef Py_ssize_t element_offset(object A):
    """Tensor.storage_offset() of an array: how many of its elements its first one lies past
    the start of the memory its outermost numpy base owns."""
    root = A
    while isinstance(root.base, np.ndarray):
        root = root.base
    return (A.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // A.itemsize


cdef TensorBase view_dtype(TensorBase x, dtype dt):
    """The bytes of x reinterpreted as dtype `dt` (PyTorch: not differentiable, no grad_fn)."""
    A = x._array
    cdef Py_ssize_t a = A.dtype.itemsize, b = dt.itemsize
    if a != b:
        what = (f"to view {SCALAR_TYPE_NAMES[x.dtype.name]} as {SCALAR_TYPE_NAMES[dt.name]} "
                "(different element sizes)")
        if A.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        last = A.shape[A.ndim - 1]
        if b > a and last % (b // a) != 0:
            raise RuntimeError(f"self.size(-1) must be divisible by {b // a} {what}, but got "
                               f"{last}")
        if b > a and A.size:
            # PyTorch's further checks when elements grow: the first byte and every step
            # must land on a whole new element (numpy would read across element boundaries)
            offset = element_offset(A)
            if offset % (b // a):
                raise RuntimeError(f"self.storage_offset() must be divisible by {b // a} {what}, "
                                   f"but got {offset}")
        # (an empty array's numpy strides are 0, not the row-major ones PyTorch shows)
        if A.size and last != 1 and A.strides[A.ndim - 1] != a:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got "
                               f"{A.strides[A.ndim - 1] // a}")
        if b > a and A.size:
            for i in range(A.ndim - 1):
                if A.shape[i] != 1 and (A.strides[i] // a) % (b // a):
                    raise RuntimeError(f"self.stride({i}) must be divisible by {b // a} {what}, "
                                       f"but got {A.strides[i] // a}")
        if last == 1 and A.strides[A.ndim - 1] != a or not A.size:
            A = A.reshape(A.shape[:A.ndim - 1] + (last,))  # numpy wants the last axis contiguous
    return wrap_result(A.view(dt.np_dtype), x)


def view_as(TensorBase input, TensorBase other):
    """input.view(other.shape)."""
    return view_to(input, infer_size(other._array.shape, input._array.size))


def reshape_as(TensorBase input, TensorBase other):
    """input.reshape(other.shape)."""
    return reshape_to(input, infer_size(other._array.shape, input._array.size))


def flatten(TensorBase input, start_dim=0, end_dim=-1):
    """Merge dims start_dim..end_dim into one (input itself when there is nothing to merge)."""
    A = input._array
    cdef Py_ssize_t ndim = A.ndim
    cdef Py_ssize_t s = wrap_dim(start_dim, ndim, "flatten", "start_dim", 1)
    cdef Py_ssize_t e = wrap_dim(end_dim, ndim, "flatten", "end_dim", 2)
    if ndim == 0:
        return reshape_to(input, (1,))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shape = A.shape
    n = 1
    for i in range(s, e + 1):
        n *= shape[i]
    return reshape_to(input, shape[:s] + (n,) + shape[e + 1:])


def unflatten(TensorBase input, dim, sizes):
    """Split dim `dim` into `sizes` (one may be -1): a view."""
    A = input._array
    cdef Py_ssize_t d = wrap_dim(dim, A.ndim, "unflatten", "dim", 1)
    cdef tuple sz = int_list_arg((sizes,), "unflatten", "sizes")
    if len(sz) == 0:
        raise RuntimeError("unflatten: sizes must be non-empty")
    size = A.shape[d] if A.ndim > 0 else 1
    try:
        resolved = infer_size(sz, size)
    except RuntimeError:
        resolved = None
    if resolved is None or (-1 not in sz and resolved != sz):
        raise RuntimeError(f"unflatten: Provided sizes {list(sz)} don't multiply up to the size of "
                           f"dim {d} ({size}) in the input tensor")
    return view_to(input, A.shape[:d] + resolved + A.shape[d + 1:])


def squeeze(TensorBase input, *dims, dim=None, axis=None):
    """Remove size-1 dims: all of them, or those among `dim` (int or tuple; also `axis`) that have
    size 1."""
    if axis is not None:
        if dims:
            raise TypeError("squeeze() received an invalid combination of arguments - got both "
                            "dims and axis=")
        dim = axis_alias("squeeze", dim, axis, None)
    A = input._array
    shape = A.shape
    cdef Py_ssize_t ndim = A.ndim
    if dim is not None:
        if dims:
            raise TypeError("squeeze() got multiple values for argument 'dim'")
        dims = (dim,)
    if not dims:
        op = OP_SQUEEZE
        axes = tuple(i for i in range(ndim) if shape[i] == 1)
    else:
        if len(dims) == 1 and not isinstance(dims[0], (tuple, list)):
            op = OP_SQUEEZE_DIM
            # (its `int[]` overload also reads a one-element integer or bool tensor as the dim)
            d = symint_param(dims[0]) if isinstance(dims[0], TensorBase) else None
            ds = (wrap_dim(dims[0] if d is None else d, ndim, "squeeze", "dim", 1),)
        else:
            op = OP_SQUEEZE_DIMS
            ds = tuple(wrap_dim(d, ndim, "squeeze", "dim", 1)
                       for d in int_list_arg(dims, "squeeze", "dim"))
            for i in range(len(ds)):
                if ds[i] in ds[:i]:
                    raise RuntimeError(f"dim {ds[i]} appears multiple times in the list of dims")
        axes = tuple(d for d in ds if ndim > 0 and shape[d] == 1)
    out = A.squeeze(axis=axes) if axes else A.view()
    return shape_result(op, input, out, shape, ds[0] if op == OP_SQUEEZE_DIM else 0)


def unsqueeze(TensorBase input, dim=DIM_NOT_GIVEN, *, axis=None):
    """A view with a new size-1 dim inserted at `dim` (in [-ndim-1, ndim]; also `axis`)."""
    if axis is not None or dim is DIM_NOT_GIVEN:
        dim = axis_alias("unsqueeze", dim, axis, DIM_NOT_GIVEN)
    A = input._array
    cdef Py_ssize_t d = wrap_dim(dim, A.ndim + 1, "unsqueeze", "dim", 1)
    check_ndim(A.ndim + 1)
    return shape_result(OP_UNSQUEEZE, input, unsqueezed(A, d), A.shape, d)


cdef extern from "numpy/arrayobject.h":
    # (numpy's .pxd leaves it commented out; its descr argument is stolen)
    object array_from_descr "PyArray_NewFromDescr" (void* subtype, void* descr, int nd,
                                                    cnp.npy_intp* dims, cnp.npy_intp* strides,
                                                    void* data, int flags, void* obj)


cdef object unsqueezed(object A, Py_ssize_t d):
    """A view of array A with a size-1 dim at d, of PyTorch's stride: the size times the stride
    of the dim it precedes, or 1 element at the end (numpy gives a new axis stride 0, so
    stride() differed from PyTorch's)."""
    cdef cnp.ndarray a = <cnp.ndarray>A
    cdef int nd_ = cnp.PyArray_NDIM(a), k
    cdef cnp.npy_intp dims[64]
    cdef cnp.npy_intp steps[64]
    if nd_ >= 63:
        return A[(slice(None),) * d + (None, Ellipsis)]
    for k in range(nd_ + 1):
        if k < d:
            dims[k] = cnp.PyArray_DIM(a, k)
            steps[k] = cnp.PyArray_STRIDE(a, k)
        elif k == d:
            dims[k] = 1
            steps[k] = (cnp.PyArray_DIM(a, d) * cnp.PyArray_STRIDE(a, d) if d < nd_
                        else cnp.PyArray_ITEMSIZE(a))
        else:
            dims[k] = cnp.PyArray_DIM(a, k - 1)
            steps[k] = cnp.PyArray_STRIDE(a, k - 1)
    cdef object descr = a.dtype
    Py_INCREF(descr)                    # (stolen by PyArray_NewFromDescr)
    out = array_from_descr(<void*>np.ndarray, <void*>descr, nd_ + 1, dims, steps,
                           cnp.PyArray_DATA(a), cnp.PyArray_FLAGS(a) & cnp.NPY_ARRAY_WRITEABLE,
                           NULL)
    cnp.set_array_base(<cnp.ndarray>out, A)
    return out


# -- permute family ------------------------------------------------------------------------------

cdef object vjp_permute(Record* r, object g):
    return g.transpose(<tuple>r.aux)               # aux: the inverse permutation


OP_TRANSPOSE = register_op("TransposeBackward0", vjp_permute)
OP_T = register_op("TBackward0", vjp_permute)
OP_PERMUTE = register_op("PermuteBackward0", vjp_permute)
OP_TRANSPOSE_INPLACE = register_op("TransposeBackward1", vjp_permute)     # transpose_
OP_T_INPLACE = register_op("TBackward1", vjp_permute)                     # t_


cdef int inplace_view_op(int op) noexcept:
    """The op an in-place view op (transpose_, t_, squeeze_, unsqueeze_) records: its view op's
    record under PyTorch's name for the in-place form (TransposeBackward1 for transpose_)."""
    if op == OP_TRANSPOSE:
        return OP_TRANSPOSE_INPLACE
    if op == OP_T:
        return OP_T_INPLACE
    if op == OP_SQUEEZE:
        return OP_SQUEEZE_INPLACE
    if op == OP_SQUEEZE_DIM:
        return OP_SQUEEZE_DIM_INPLACE
    if op == OP_SQUEEZE_DIMS:
        return OP_SQUEEZE_DIMS_INPLACE
    if op == OP_UNSQUEEZE:
        return OP_UNSQUEEZE_INPLACE
    return op


cdef TensorBase permuted(int op, TensorBase x, list perm):
    A = x._array
    cdef Py_ssize_t n = len(perm), i
    inv = [0] * n
    for i in range(n):
        inv[<Py_ssize_t>perm[i]] = i
    return shape_result(op, x, A.transpose(perm), tuple(inv))


def transpose(TensorBase input, dim0, dim1):
    """A view with dims dim0 and dim1 swapped."""
    cdef Py_ssize_t ndim = input._array.ndim
    cdef Py_ssize_t a = wrap_dim(dim0, ndim, "transpose", "dim0", 1)
    cdef Py_ssize_t b = wrap_dim(dim1, ndim, "transpose", "dim1", 2)
    perm = list(range(ndim))
    if ndim > 0:
        perm[a], perm[b] = perm[b], perm[a]
    return permuted(OP_TRANSPOSE, input, perm)


def t(TensorBase input):
    """Transpose of a tensor of at most 2 dims (0-d and 1-d tensors are returned as they are)."""
    cdef Py_ssize_t ndim = input._array.ndim
    if ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {ndim}D")
    return permuted(OP_T, input, [1, 0] if ndim == 2 else list(range(ndim)))


def _T(TensorBase input):
    """All dims reversed (PyTorch deprecates it for tensors that are not 2-D)."""
    cdef Py_ssize_t ndim = input._array.ndim
    if ndim == 0:
        warn_once("Tensor.T is deprecated on 0-D tensors. This function is the identity in "
                  "these cases.", "aten/src/ATen/native/TensorShape.cpp:4321")
    elif ndim != 2:
        warn_once("The use of `x.T` on tensors of dimension other than 2 to reverse their "
                  "shape is deprecated and it will throw an error in a future release. "
                  "Consider `x.mT` to transpose batches of matrices or "
                  "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions "
                  "of a tensor.", "aten/src/ATen/native/TensorShape.cpp:4314")
    return permuted(OP_PERMUTE, input, list(range(ndim - 1, -1, -1)))


def _mT(TensorBase input):
    """The last two dims swapped (a batch of matrices transposed)."""
    cdef Py_ssize_t ndim = input._array.ndim
    if ndim == 0:
        # (PyTorch deprecates it there and returns the tensor itself, as for Tensor.H)
        warn_once("Tensor.mT is deprecated on 0-D tensors. This function is the identity in "
                  "these cases.", "aten/src/ATen/native/TensorShape.cpp:4373")
        return input
    if ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {ndim}-D tensor.")
    perm = list(range(ndim))
    perm[ndim - 2], perm[ndim - 1] = perm[ndim - 1], perm[ndim - 2]
    return permuted(OP_TRANSPOSE, input, perm)


def permute(TensorBase input, *dims_args, dims=None):
    """A view with the dims reordered: output dim i is input dim dims[i]."""
    if dims is not None:
        if dims_args:
            raise TypeError("permute() got multiple values for argument 'dims'")
        dims_args = (dims,)
    if not dims_args:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    cdef tuple ds = int_list_arg(dims_args, "permute", "dims")
    cdef Py_ssize_t ndim = input._array.ndim
    if len(ds) != ndim:
        raise RuntimeError("permute(sparse_coo): number of dimensions in the tensor input does not "
                           "match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {ndim} is not equal to len(dims) = {len(ds)}")
    perm = [wrap_dim(d, ndim, "permute", "dims", 1) for d in ds]
    if len(set(perm)) != len(perm):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return permuted(OP_PERMUTE, input, perm)


def movedim(TensorBase input, source, destination):
    """Move dims `source` (int or sequence) to positions `destination`; the others keep their
    order."""
    cdef Py_ssize_t ndim = input._array.ndim
    for position, (name, given) in enumerate((("source", source), ("destination", destination))):
        # (PyTorch's int takes a 0-d tensor, its tuple of ints here no tensor at all)
        if isinstance(given, TensorBase) and (<TensorBase>given)._array.ndim != 0:
            raise TypeError(f"movedim(): argument '{name}' (position {position + 2}) must be "
                            "tuple of ints, not Tensor")
    src = int_list_arg((source,), "movedim", "source")
    dst = int_list_arg((destination,), "movedim", "destination")
    if len(src) != len(dst):
        raise RuntimeError("movedim: Invalid source or destination dims: source "
                           f"({list(src)} dims) should contain the same number of dims as "
                           f"destination ({list(dst)} dims)")
    s = [wrap_dim(d, ndim, "movedim", "source", 1) for d in src]
    e = [wrap_dim(d, ndim, "movedim", "destination", 2) for d in dst]
    if len(set(s)) != len(s):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(e)) != len(e):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
    if ndim == 0:
        return permuted(OP_PERMUTE, input, [])
    perm = [-1] * ndim
    for a, b in zip(s, e):
        perm[b] = a
    rest = iter(d for d in range(ndim) if d not in s)
    for i in range(ndim):
        if perm[i] < 0:
            perm[i] = next(rest)
    return permuted(OP_PERMUTE, input, perm)


def swapaxes(TensorBase input, axis0, axis1):
    """transpose(axis0, axis1) (NumPy's name)."""
    return transpose(input, axis0, axis1)


def swapdims(TensorBase input, dim0, dim1):
    """transpose(dim0, dim1)."""
    return transpose(input, dim0, dim1)


# -- expand, repeat ------------------------------------------------------------------------------

cdef object vjp_expand(Record* r, object g):
    return sum_to(g, <tuple>r.aux)                 # sums the added and the stretched dims


OP_EXPAND = register_op("ExpandBackward0", vjp_expand)


def expand(TensorBase input, *sizes, size=None):
    """A read-only view with size-1 dims stretched (and new leading dims) to `sizes` (-1 keeps a
    dim); its gradient sums over the expanded dims."""
    if size is not None:
        if sizes:
            raise TypeError("expand() got multiple values for argument 'size'")
        sizes = (size,)
    A = input._array
    cdef tuple sz = int_list_arg(sizes, "expand", "size")
    cdef Py_ssize_t ndim = A.ndim, n = len(sz), lead = n - ndim, i
    shape = A.shape
    check_ndim(n)
    if n < ndim:
        raise RuntimeError(f"expand({x_type_name(input)}{{{list(shape)}}}, size={list(sz)}): the "
                           f"number of sizes provided ({n}) must be greater or equal to the number "
                           f"of dimensions in the tensor ({ndim})")
    target = list(sz)
    for i in range(n - 1, -1, -1):      # from the last dim, so errors name the dim PyTorch's do
        s = sz[i]
        if i < lead:
            if s == -1:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            if s < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                                   f"{list(sz)}")
            continue
        have = shape[i - lead]
        if s == -1:
            target[i] = have
        elif s != have:
            if have != 1 or s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing "
                                   f"size ({have}) at non-singleton dimension {i}.  Target sizes: "
                                   f"{list(sz)}.  Tensor sizes: {list(shape)}")
    return shape_result(OP_EXPAND, input, expanded_view(A, tuple(target)), shape)


cdef object expanded_view(object A, tuple sizes):
    """A read-only view of A stretched to `sizes`, of PyTorch's expand strides: a stretched dim
    0, a kept dim its own, a new leading dim the size times the stride of the dim after it (0
    after a 0-d A).  numpy's broadcast_to gives every size-1 dim stride 0, which
    Tensor.stride() showed (x.expand(1, 1, 5) is (5, 5, 1) in PyTorch)."""
    cdef cnp.ndarray a = <cnp.ndarray>A
    cdef int nd_ = cnp.PyArray_NDIM(a), n = len(sizes), lead = n - nd_, k
    cdef cnp.npy_intp dims[64]
    cdef cnp.npy_intp steps[64]
    if n >= 64:
        return np.broadcast_to(A, sizes)
    for k in range(nd_):
        dims[lead + k] = sizes[lead + k]
        steps[lead + k] = (cnp.PyArray_STRIDE(a, k) if cnp.PyArray_DIM(a, k) == sizes[lead + k]
                           else 0)
    cdef cnp.npy_intp next_size = dims[lead] if nd_ else 1
    cdef cnp.npy_intp next_step = steps[lead] if nd_ else 0
    for k in range(lead - 1, -1, -1):
        dims[k] = sizes[k]
        steps[k] = next_size * next_step if sizes[k] == 1 else 0
        next_size, next_step = dims[k], steps[k]
    cdef object descr = a.dtype
    Py_INCREF(descr)                    # (stolen by PyArray_NewFromDescr)
    out = array_from_descr(<void*>np.ndarray, <void*>descr, n, dims, steps,
                           cnp.PyArray_DATA(a), 0, NULL)
    cnp.set_array_base(<cnp.ndarray>out, A)
    return out


def expand_as(TensorBase input, TensorBase other):
    """input.expand(other.shape)."""
    return expand(input, other._array.shape)


cdef str x_type_name(TensorBase x):
    """PyTorch's legacy type name (torch.FloatTensor) used in some messages."""
    return {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor",
            "float16": "torch.HalfTensor", "int64": "torch.LongTensor", "int32": "torch.IntTensor",
            "int16": "torch.ShortTensor", "int8": "torch.CharTensor", "uint8": "torch.ByteTensor",
            "bool": "torch.BoolTensor"}.get(x.dtype.name, "torch.Tensor")


cdef object vjp_repeat(Record* r, object g):
    padded, reps, shape = <tuple>r.aux
    cdef Py_ssize_t n = len(padded), i
    inter = []
    for i in range(n):
        inter.append(reps[i])
        inter.append(padded[i])
    gr = g.reshape(tuple(inter))
    return nd(np.add.reduce(gr, axis=tuple(range(0, 2 * n, 2)))).reshape(shape)


OP_REPEAT = register_op("RepeatBackward0", vjp_repeat)


cdef TensorBase repeat_impl(TensorBase x, tuple reps):
    A = x._array
    cdef Py_ssize_t ndim = A.ndim, n = len(reps), i
    check_ndim(n)
    if n < ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor")
    padded = (1,) * (n - ndim) + A.shape
    out_shape = [padded[i] * reps[i] for i in range(n)]
    for i in range(n):
        if reps[i] < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {out_shape[i]}: "
                               f"{out_shape}")
    # row-major as PyTorch's (np.tile of all-1 repeats copies in the input's layout)
    out = contiguous_result(nd(np.tile(A.reshape(padded), reps))) if n > 0 else A.copy()
    if out.size == 0:
        out = np.empty(out.shape, dtype=A.dtype)    # (np.tile returns an empty input itself)
    return shape_result(OP_REPEAT, x, out, (padded, reps, A.shape))


def repeat(TensorBase input, *sizes, repeats=None):
    """A copy of `input` repeated sizes[i] times along dim i (new leading dims allowed)."""
    if repeats is not None:
        if sizes:
            raise TypeError("repeat() got multiple values for argument 'repeats'")
        sizes = (repeats,)
    if not sizes:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    return repeat_impl(input, int_list_arg(sizes, "repeat", "repeats"))


def tile(TensorBase input, *dims_args, dims=None):
    """repeat(), with `dims` padded with leading 1s when shorter than input's dims."""
    if dims is not None:
        if dims_args:
            raise TypeError("tile() got multiple values for argument 'dims'")
        dims_args = (dims,)
    elif not dims_args:
        # (no dims at all is no tiling by nothing: PyTorch's parser wants them)
        raise TypeError('tile() missing 1 required positional arguments: "dims"')
    cdef tuple ds = int_list_arg(dims_args, "tile", "dims")
    cdef Py_ssize_t ndim = input._array.ndim
    if len(ds) < ndim:
        ds = (1,) * (ndim - len(ds)) + ds
    return repeat_impl(input, ds)


# -- cat, stack ----------------------------------------------------------------------------------

cdef object promote_arrays_dtype(tuple arrays):
    """PyTorch's result type of several dimensioned tensors (see promote_pair)."""
    out = None
    for A in arrays:
        dt = A.dtype
        # (a tensor's dtype is a native-order builtin, one object per dtype: equal ones need no
        # promotion, and cat/stack of many same-dtype tensors skip a numpy call per tensor)
        if out is None or dt is not out:
            out = dt if out is None else promote_pair(out, dt)
    return out


cdef tuple tensor_list_arg(object tensors, str fname):
    if isinstance(tensors, TensorBase) or not isinstance(tensors, (tuple, list)):
        raise TypeError(f"{fname}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {type_name(tensors)}")
    tensors = tuple(tensors)
    for j in range(len(tensors)):
        if not isinstance(tensors[j], TensorBase):
            raise TypeError(f"expected Tensor as element {j} in argument 0, but got "
                            f"{type_name(tensors[j])}")
    return tensors


cdef object vjp_cat(Record* r, object g):
    d, offsets, sizes, dtypes = <tuple>r.aux
    cdef Py_ssize_t n = r.n_in, j
    pre = (slice(None),) * <Py_ssize_t>d
    grads = []
    for j in range(n):
        if not needs_grad(r, j):
            grads.append(None)
            continue
        o = offsets[j]
        if o < 0:                                   # a skipped empty 1-d tensor
            grads.append(np.zeros((0,), dtype=dtypes[j]))
            continue
        gj = g[pre + (slice(o, o + sizes[j]),)]
        if gj.dtype != dtypes[j]:
            gj = gj.astype(dtypes[j])
        grads.append(gj)
    if n == 1:
        return grads[0]
    return tuple(grads)


OP_CAT = register_op("CatBackward0", vjp_cat)


cdef bint meta_among(tuple ts) noexcept:
    """Whether a meta tensor is among ts (the meta device is in use): the core hands the call to
    tapegrad/_meta.py."""
    for t in ts:
        if is_meta_tensor(t):
            return True
    return False


cdef tuple dense_cat_plan(tuple arrays, object dim):
    """(d, offsets, sizes) when the arrays join along dim with nothing for cat's general path to
    report or skip (equal ranks >= 1, equal sizes off dim, no empty 1-d tensor); None otherwise,
    and the general path raises or skips as PyTorch does.  Reads the dims in C: a cat of many
    small tensors (a list of batches, of per-step outputs) paid a Python shape check per tensor."""
    cdef Py_ssize_t n = len(arrays), j, d, o = 0
    cdef cnp.ndarray A = <cnp.ndarray>arrays[0], B
    cdef int nd = cnp.PyArray_NDIM(A), k
    cdef cnp.npy_intp* ref = cnp.PyArray_DIMS(A)
    cdef cnp.npy_intp* dims
    if nd == 0:
        return None
    for j in range(n):
        B = <cnp.ndarray>arrays[j]
        if cnp.PyArray_NDIM(B) != nd or (nd == 1 and cnp.PyArray_DIMS(B)[0] == 0):
            return None
    d = wrap_dim(dim, nd, "cat", "dim", 2)
    offsets = [0] * n
    sizes = [0] * n
    for j in range(n):
        dims = cnp.PyArray_DIMS(<cnp.ndarray>arrays[j])
        for k in range(nd):
            if k != d and dims[k] != ref[k]:
                return None
        offsets[j] = o
        sizes[j] = dims[d]
        o += dims[d]
    return d, tuple(offsets), tuple(sizes)


def cat(tensors, dim=0, *, axis=None):
    """Concatenate tensors along `dim` (also `axis`), promoting dtypes as PyTorch does; 1-d empty
    tensors are skipped, PyTorch's legacy behaviour."""
    if axis is not None:
        dim = axis_alias("cat", dim, axis, 0)
    cdef tuple ts = tensor_list_arg(tensors, "cat")
    cdef Py_ssize_t n = len(ts), j, k
    if n == 0:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    if MetaTensorType is not None and meta_among(ts):  # (layers reach it by internal names)
        return meta_entry("call", (cat, "cat", (tensors, dim), None))
    arrays = tuple((<TensorBase>t)._array for t in ts)
    dt = promote_arrays_dtype(arrays)
    cdef TensorBase res
    cdef Record* r
    cdef Py_ssize_t d = 0
    if c_contiguous_of_dtype(arrays, dt):
        plan = dense_cat_plan(arrays, dim)
        if plan is not None:
            d, offsets, sizes = plan
            res = wrap(np.concatenate(arrays, axis=d))
            r = record_from(OP_CAT, res, ts)
            if r != NULL:
                keep(&r.aux, (d, offsets, sizes, (dt,) * n))
            return res
    for j in range(n):
        if arrays[j].ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {j}) cannot be concatenated")
    skipped = [a.ndim == 1 and a.shape[0] == 0 for a in arrays]
    ref = -1
    for j in range(n):
        if not skipped[j]:
            ref = j
            break
    offsets = [-1] * n
    sizes = [0] * n
    if ref < 0:                                     # only empty 1-d tensors
        d = 0                                       # (PyTorch checks no dim then: cat(.., 5))
        out = np.zeros((0,), dtype=dt)
    else:
        rshape = arrays[ref].shape
        d = wrap_dim(dim, len(rshape), "cat", "dim", 2)
        o = 0
        parts = []
        for j in range(n):
            if skipped[j]:
                continue
            s = arrays[j].shape
            if len(s) != len(rshape):
                raise RuntimeError(f"Tensors must have same number of dimensions: got "
                                   f"{len(rshape)} and {len(s)}")
            for k in range(len(s)):
                if k != d and s[k] != rshape[k]:
                    raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                       f"Expected size {rshape[k]} but got size {s[k]} for tensor "
                                       f"number {j} in the list.")
            offsets[j] = o
            sizes[j] = s[d]
            o += s[d]
            parts.append(arrays[j] if arrays[j].dtype is dt else arrays[j].astype(dt))
        out = joined_layout(np.concatenate(parts, axis=d), arrays)
    res = wrap(out)
    r = record_from(OP_CAT, res, ts)
    if r != NULL:
        keep(&r.aux, (d, tuple(offsets), tuple(sizes), tuple(a.dtype for a in arrays)))
    return res


def concatenate(tensors, dim=0, *, axis=None):
    """cat(tensors, dim) under NumPy's name; PyTorch's keyword is dim, with axis as its alias."""
    return cat(tensors, dim, axis=axis)


cdef object vjp_stack(Record* r, object g):
    d, dtypes = <tuple>r.aux
    cdef Py_ssize_t n = r.n_in, j
    pre = (slice(None),) * <Py_ssize_t>d
    grads = []
    for j in range(n):
        if not needs_grad(r, j):
            grads.append(None)
            continue
        gj = g[pre + (j, Ellipsis)]
        if gj.dtype != dtypes[j]:
            gj = gj.astype(dtypes[j])
        grads.append(gj)
    if n == 1:
        return grads[0]
    return tuple(grads)


OP_STACK = register_op("StackBackward0", vjp_stack)


cdef bint channels_last_dense(object a):
    """Whether a (4-d or 5-d) is laid out densely with its channels (dim 1) last."""
    if a.ndim not in (4, 5):
        return False
    return np.transpose(a, (0,) + tuple(range(2, a.ndim)) + (1,)).flags.c_contiguous


cdef object joined_layout(object out, tuple arrays):
    """cat's and stack's result in PyTorch's layout.  numpy's concatenate follows its inputs'
    strides (order 'K'): expanded or transposed inputs gave a column-major or otherwise strided
    result, whose flatten() was then a copy where PyTorch's is a view (a later in-place write
    through it missed the result: fuzz 59805016) and whose view() raised.  PyTorch's result is
    contiguous unless its inputs are all channels_last, whose layout it keeps (as numpy does)."""
    if out.flags.c_contiguous:
        return out
    for a in arrays:
        if not channels_last_dense(a):
            return np.ascontiguousarray(out)
    return out


cdef bint c_contiguous_of_dtype(tuple arrays, object dt):
    """Whether every array is C-contiguous with dtype dt (the dtype object itself)."""
    cdef cnp.ndarray A
    for a in arrays:
        A = <cnp.ndarray>a
        if not cnp.PyArray_IS_C_CONTIGUOUS(A) or <object>cnp.PyArray_DESCR(A) is not dt:
            return False
    return True


def stack(tensors, dim=0, *, axis=None):
    """Stack equally shaped tensors along a new dim `dim` (also `axis`)."""
    if axis is not None:
        dim = axis_alias("stack", dim, axis, 0)
    cdef tuple ts = tensor_list_arg(tensors, "stack")
    cdef Py_ssize_t n = len(ts), j
    if n == 0:
        raise RuntimeError("stack expects a non-empty TensorList")
    if MetaTensorType is not None and meta_among(ts):  # (layers reach it by internal names)
        return meta_entry("call", (stack, "stack", (tensors, dim), None))
    arrays = tuple((<TensorBase>t)._array for t in ts)
    s0 = arrays[0].shape
    cdef Py_ssize_t d = wrap_dim(dim, len(s0) + 1, "stack", "dim", 2)
    for j in range(1, n):
        if arrays[j].shape != s0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(s0)} at "
                               f"entry 0 and {list(arrays[j].shape)} at entry {j}")
    dt = promote_arrays_dtype(arrays)
    if d == 0 and len(s0) > 0 and c_contiguous_of_dtype(arrays, dt):
        # the common stack of a list of same-dtype dense tensors: one concatenate along the
        # first axis, then split that axis (a view); no per-tensor new-axis view
        out = np.concatenate(arrays).reshape((n,) + s0)
    else:
        # np.stack's own steps (a new axis d on each, then one concatenate) without its
        # Python-level dispatch and checks, which cost more than the copy for small tensors
        new_axis = (slice(None),) * d + (None,)
        out = joined_layout(np.concatenate([(a if a.dtype is dt else a.astype(dt))[new_axis]
                                            for a in arrays], axis=d), arrays)
    cdef TensorBase res = wrap(out)
    cdef Record* r = record_from(OP_STACK, res, ts)
    if r != NULL:
        keep(&r.aux, (d, tuple(a.dtype for a in arrays)))
    return res


# -- split, chunk, unbind: one record per output -------------------------------------------------

cdef object vjp_scatter_basic(Record* r, object g):
    """The VJP of a basic-indexing view: zeros of the input's shape with g where the view was."""
    shape, dt, key = (<tuple>r.aux)[:3]
    z = np.zeros(shape, dtype=dt)
    z[key] = g
    return z


OP_SPLIT = register_op("SplitBackward0", vjp_scatter_basic)
OP_SPLIT_SIZES = register_op("SplitWithSizesBackward0", vjp_scatter_basic)
OP_UNBIND = register_op("UnbindBackward0", vjp_scatter_basic)
# unsafe_split / unsafe_chunk (what PyTorch's LSTM and GRU cells split their gates with): the same
# pieces, under PyTorch's node names
OP_UNSAFE_SPLIT = register_op("UnsafeSplitBackward0", vjp_scatter_basic)
OP_UNSAFE_SPLIT_SIZES = register_op("UnsafeSplitWithSizesBackward0", vjp_scatter_basic)


cdef TensorBase basic_view(int op, TensorBase x, tuple key, object argument=None):
    """A view x[key] (key: basic indexing ending in Ellipsis) recorded with the scatter VJP;
    `argument`: split's split_size or sizes, kept for grad_fn._saved_split_size(s)."""
    A = x._array
    return shape_result(op, x, A[key], (A.shape, A.dtype, key, argument))


cdef tuple split_with_sizes(int op, TensorBase x, Py_ssize_t d, sizes, object argument):
    pre = (slice(None),) * d
    outs = []
    o = 0
    for s in sizes:
        outs.append(basic_view(op, x, pre + (slice(o, o + s), Ellipsis), argument))
        o += s
    outs = tuple(outs)
    mark_multi_output_views(outs)
    return outs


def split(TensorBase tensor, split_size_or_sections=None, dim=0, *, split_size=None):
    """Split along `dim` into pieces of split_size (the last may be smaller) or of the sizes in a
    list; a tuple of views."""
    if split_size is not None:
        split_size_or_sections = split_size
    if split_size_or_sections is None:
        # (torch.split is Python-level: Python's words; the method's are Tensor.split's,
        # tapegrad/_public_calls.py)
        raise TypeError("split() missing 1 required positional argument: "
                        "'split_size_or_sections'")
    return split_by(tensor, split_size_or_sections, dim, False)


def _unsafe_split(TensorBase tensor, split_size_or_sections, dim=0):
    """split's pieces recorded as PyTorch's unsafe_split / unsafe_split_with_sizes (the names
    their grad_fn shows); tapegrad/_more_tensor_ops.py checks the public arguments."""
    return split_by(tensor, split_size_or_sections, dim, True)


cdef tuple split_by(TensorBase tensor, split_size_or_sections, dim, bint unsafe):
    A = tensor._array
    cdef Py_ssize_t d = wrap_dim(dim, A.ndim, "split", "dim", 2)
    if A.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    size = A.shape[d]
    if isinstance(split_size_or_sections, (tuple, list)):
        sizes = int_list_arg((split_size_or_sections,), "split", "split_size")
        total = 0
        negative = False
        for s in sizes:
            total += s
            negative = negative or s < 0
        if negative:
            raise RuntimeError("split_with_sizes expects split_sizes have only non-negative "
                               f"entries, but got split_sizes={list(sizes)}")
        if total != size:
            # (PyTorch names the dim as given: -1 stays -1)
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} "
                               f"(input tensor's size at dimension {int(dim)}), but got "
                               f"split_sizes={list(sizes)}")
        return split_with_sizes(OP_UNSAFE_SPLIT_SIZES if unsafe else OP_SPLIT_SIZES, tensor, d,
                                sizes, tuple(sizes))
    ss = int_arg(split_size_or_sections, "split", "split_size", 1, True)
    if ss < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={ss}")
    if ss == 0 and size != 0:
        raise RuntimeError("split_size can only be 0 if dimension size is 0, but got dimension "
                           f"size of {size}")
    nsplit = (size + ss - 1) // ss if ss > 0 and size > 0 else 1
    sizes = [ss] * nsplit
    sizes[nsplit - 1] = ss - (ss * nsplit - size)
    return split_with_sizes(OP_UNSAFE_SPLIT if unsafe else OP_SPLIT, tensor, d, sizes, ss)


def chunk(TensorBase input, chunks, dim=0, *, axis=None):
    """Split into `chunks` pieces of ceil(size / chunks) along `dim` (also `axis`; possibly fewer
    pieces)."""
    if axis is not None:
        dim = axis_alias("chunk", dim, axis, 0)
    return chunk_by(input, chunks, dim, False)


def _unsafe_chunk(TensorBase input, chunks, dim=0):
    """chunk's pieces recorded as PyTorch's unsafe_chunk (UnsafeSplitBackward0)."""
    return chunk_by(input, chunks, dim, True)


cdef tuple chunk_by(TensorBase input, chunks, dim, bint unsafe):
    A = input._array
    if A.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    c = int_arg(chunks, "chunk", "chunks", 1)
    if c <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {c}")
    cdef Py_ssize_t d = wrap_dim(dim, A.ndim, "chunk", "dim", 2)
    size = A.shape[d]
    ss = (size + c - 1) // c
    if ss == 0 and size == 0:
        return split_with_sizes(OP_UNSAFE_SPLIT_SIZES if unsafe else OP_SPLIT_SIZES, input, d,
                                [0] * c, (0,) * c)
    return split_by(input, ss, d, unsafe)


def unbind(TensorBase input, dim=0, *, axis=None):
    """The slices along `dim` (also `axis`), as a tuple of views without that dim."""
    if axis is not None:
        dim = axis_alias("unbind", dim, axis, 0)
    A = input._array
    if A.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    cdef Py_ssize_t d = wrap_dim(dim, A.ndim, "unbind", "dim", 1)
    pre = (slice(None),) * d
    outs = tuple(basic_view(OP_UNBIND, input, pre + (j, Ellipsis)) for j in range(A.shape[d]))
    mark_multi_output_views(outs)
    return outs


# -- copies --------------------------------------------------------------------------------------

cdef object vjp_identity(Record* r, object g):
    return g


OP_CLONE = register_op("CloneBackward0", vjp_identity)


def clone(TensorBase input, *, memory_format=None):
    """A copy that gradients flow through: by default in the same layout (PyTorch's
    preserve_format); another ``memory_format`` (contiguous_format, channels_last) lays the copy
    out in that format (tapegrad/_memory_format.py)."""
    if memory_format is not None and MEMORY_FORMAT_LAYOUTS is not None and \
            memory_format is not MEMORY_FORMAT_LAYOUTS[3]:
        return MEMORY_FORMAT_LAYOUTS[4](input, memory_format)
    A = input._array
    S = torch_copy_source(A)
    return shape_result(OP_CLONE, input, A.copy(order="K") if S is A else S, None)


# tapegrad/_memory_format.py's (default format, contiguous, is_contiguous, preserve_format,
# clone) for the layouts other than each function's default: the default keeps to the compiled
# path, with no Python call.
MEMORY_FORMAT_LAYOUTS = None


def _set_memory_format_layouts(default_format, contiguous_in, is_contiguous_in,
                               preserve_format, clone_in):
    """Called once by tapegrad/_memory_format.py."""
    global MEMORY_FORMAT_LAYOUTS
    MEMORY_FORMAT_LAYOUTS = (default_format, contiguous_in, is_contiguous_in, preserve_format,
                             clone_in)


def contiguous(TensorBase input, memory_format=None):
    """`input` itself when C-contiguous, else a C-contiguous copy (CloneBackward0); another
    ``memory_format`` (channels_last, ...) lays it out in that format."""
    if memory_format is not None and MEMORY_FORMAT_LAYOUTS is not None and \
            memory_format is not MEMORY_FORMAT_LAYOUTS[0]:
        return MEMORY_FORMAT_LAYOUTS[1](input, memory_format)
    A = input._array
    if A.flags.c_contiguous:
        return input
    return shape_result(OP_CLONE, input, np.ascontiguousarray(A), None)


def is_contiguous(TensorBase input, memory_format=None):
    """Whether the elements are laid out in C order without gaps (or in ``memory_format``)."""
    if memory_format is not None and MEMORY_FORMAT_LAYOUTS is not None and \
            memory_format is not MEMORY_FORMAT_LAYOUTS[0]:
        return MEMORY_FORMAT_LAYOUTS[2](input, memory_format)
    return bool(input._array.flags.c_contiguous)


# -- the torch namespace's reshape, permute and tile ------------------------------------------------
# PyTorch's functions take the sizes or dims as one sequence: torch.reshape(x, 2, 3) and
# torch.reshape(x, 6) are its TypeErrors, where the methods take varargs (x.reshape(2, 3)).

cdef object one_int_list(object value, str fname, str argname):
    """value, the one sequence of ints a torch-namespace shape function takes."""
    if isinstance(value, (int, np.integer)):
        raise TypeError(f"{fname}(): argument '{argname}' (position 2) must be tuple of ints, not "
                        f"{type_name(value)}")
    return value


def reshape_function(TensorBase input, shape):
    """torch.reshape: a tensor with the same elements in `shape` (one dim may be -1), a view
    when possible."""
    return reshape(input, one_int_list(shape, "reshape", "shape"))


def permute_function(TensorBase input, dims):
    """torch.permute: a view with the dims reordered (output dim i is input dim dims[i])."""
    return permute(input, one_int_list(dims, "permute", "dims"))


def tile_function(TensorBase input, dims):
    """torch.tile: repeat(), with `dims` padded with leading 1s when shorter than input's dims."""
    return tile(input, one_int_list(dims, "tile", "dims"))


for _function, _name in ((reshape_function, "reshape"), (permute_function, "permute"),
                         (tile_function, "tile")):
    _function.__name__ = _function.__qualname__ = _name


# Dict literals, not keyword calls: ops_unary.pxi's registration says why (load-code size).
TENSOR_METHODS.update({
    "reshape": reshape, "view": view, "view_as": view_as, "reshape_as": reshape_as,
    "flatten": flatten, "unflatten": unflatten, "squeeze": squeeze, "unsqueeze": unsqueeze,
    "transpose": transpose, "t": t, "T": property(_T), "mT": property(_mT), "permute": permute,
    "movedim": movedim, "moveaxis": movedim, "swapaxes": swapaxes, "swapdims": swapdims,
    "expand": expand, "expand_as": expand_as, "repeat": repeat, "tile": tile, "split": split,
    "chunk": chunk, "unbind": unbind, "clone": clone, "contiguous": contiguous,
    "is_contiguous": is_contiguous})
TORCH_FUNCTIONS.update({
    "reshape": reshape_function, "flatten": flatten, "unflatten": unflatten, "squeeze": squeeze,
    "unsqueeze": unsqueeze, "transpose": transpose, "t": t, "permute": permute_function,
    "movedim": movedim, "moveaxis": movedim, "swapaxes": swapaxes, "swapdims": swapdims,
    "tile": tile_function, "cat": cat, "concat": cat, "concatenate": concatenate, "stack": stack,
    "split": split, "chunk": chunk, "unbind": unbind, "clone": clone})
