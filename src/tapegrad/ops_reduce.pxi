# ---------------------------------------------------------------------------------------------
# Reductions: sum, mean, prod, max/min (value, or (values, indices) along a dim), amax/amin,
# var/std, logsumexp, norm; and the non-differentiable argmax, argmin, count_nonzero.
#
# aux = (input shape, axes, keepdim, ...): the VJP re-inserts the reduced dims (as size 1, a view)
# and broadcasts the gradient back with ufuncs; results are fresh arrays of the input's shape.
# Reductions that select elements (amax, max without dim) split the gradient evenly among ties;
# max/min along a dim send it to the index they returned, as PyTorch does.
#
# Python's builtins max/min/sum are shadowed in this module by `sum` (and must not be by max/min:
# other .pxi files call the builtins), so the functions are defined as max_/min_ and registered
# under PyTorch's names.
# ---------------------------------------------------------------------------------------------

import sys as _sys
import types as _types
import operator as _operator
import warnings as _warnings

from libc.math cimport INFINITY


cdef str invalid_args(str name, object arg):
    return (f"{name}() received an invalid combination of arguments - got "
            f"({type_name(arg)}), but expected one of:\n"
            " * (Tensor input, int dim, bool keepdim)")


cdef tuple reduction_axes(object dim, int ndim, str name, bint range_first=True,
                          bint one_element_tensor=True):
    """Axes for a reduction taking an int, a sequence of ints or None; None and an empty sequence
    reduce every dim (PyTorch's convention for sum/mean/amax/...); `range_first`: see
    normalize_dims (as `one_element_tensor`: False for count_nonzero)."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer, tuple, list, TensorBase)):
        raise TypeError(invalid_args(name, dim))
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        return tuple(range(ndim))
    return normalize_dims(dim, ndim, range_first, one_element_tensor)


cdef int single_axis(object dim, int ndim, str name) except -2:
    """One `int` dim (negative allowed; int_param: a 0-d integer tensor too) -> axis (0 for a 0-d
    tensor); TypeError for anything else."""
    d = int_param(dim)
    if d is None:
        raise TypeError(invalid_args(name, dim))
    dim = d
    cdef tuple axes = normalize_dims(dim, ndim)
    return axes[0] if ndim > 0 else 0


cdef tuple keep_shape(tuple shape, tuple axes):
    """`shape` with the reduced axes set to 1 (the keepdim shape)."""
    full = list(shape)
    for a in axes:
        full[a] = 1
    return tuple(full)


cdef double reduced_count(tuple shape, tuple axes):
    cdef double count = 1
    for a in axes:
        count *= shape[a]
    return count


cdef object unreduce(object g, tuple aux):
    """The adjoint of a reduction as a view with the reduced dims re-inserted (size 1)."""
    shape, axes, keepdim = aux[0], aux[1], aux[2]
    if not keepdim and axes:
        return g.reshape(keep_shape(<tuple>shape, <tuple>axes))
    return g


cdef object expand_reduced(object g, tuple aux):
    """Broadcast the gradient of a reduction back to the input's shape."""
    shape = aux[0]
    g = unreduce(g, aux)
    # Materialised with C-level numpy calls (np.broadcast_to is a Python function, and the sweep
    # makes no Python-level call per node); the result is fresh, so it can become a .grad as is.
    out = np.empty(shape, dtype=g.dtype)
    out[...] = g
    return out


cdef inline bint is_float(object A):
    return cnp.PyTypeNum_ISFLOAT(cnp.PyArray_TYPE(<cnp.ndarray>A))


cdef object NP_FLOAT16 = np.dtype(np.float16)
cdef object NP_FLOAT64 = np.dtype(np.float64)


cdef inline object moment_dtype(object dt):
    """The dtype PyTorch's CPU var / std accumulate `dt` in (its Welford accumulators): float64
    for float32 (so squares of values beyond 1.8e19 do not overflow), float32 for float16."""
    if dt == NP_FLOAT32:
        return NP_FLOAT64
    return NP_FLOAT32 if dt == NP_FLOAT16 else dt


cdef object half_sum(object A, object axes, bint keepdims):
    """np.add.reduce of A over axes, accumulated as PyTorch's CPU sums accumulate: float16 in
    float32 (the result is rounded to float16 once by the caller, so the mean of 70,000 float16
    ones is 1, not inf / inf), any other dtype in itself.  The result is in that dtype."""
    if is_half(A):
        return np.add.reduce(A, axis=axes, keepdims=keepdims, dtype=NP_FLOAT32)
    return np.add.reduce(A, axis=axes, keepdims=keepdims)


cdef object half_mean(object A, object axes, bint keepdims, double count):
    """The mean of A over axes (`count` elements each) in A's dtype, float16 summed and divided in
    float32 and rounded once (half_sum).  The count is rounded to the sum's dtype, as numpy's
    division by a Python number does."""
    s = half_sum(A, axes, keepdims)
    if is_half(A):
        return nd((s / np.float32(count)).astype(NP_FLOAT16))
    return nd(s / count)


# -- sum and mean ---------------------------------------------------------------------------------
# aux = (shape, axes, keepdim, input dtype or None when the output has the input's dtype)

cdef inline object grad_to_dtype(object gx, tuple aux):
    if len(aux) > 3 and aux[3] is not None and gx.dtype != aux[3]:
        return gx.astype(aux[3])
    return gx

cdef object vjp_sum(Record* r, object g):
    return grad_to_dtype(expand_reduced(g, <tuple>r.aux), <tuple>r.aux)

cdef object vjp_mean(Record* r, object g):
    if is_half(g):                      # divided in float32, as PyTorch (the count may be inf)
        with IeeeResults():
            g = (g.astype(NP_FLOAT32) / r.scalar).astype(NP_FLOAT16)
    else:
        g = g / r.scalar
    return grad_to_dtype(expand_reduced(nd(g), <tuple>r.aux), <tuple>r.aux)


OP_SUM = register_op("SumBackward0", vjp_sum)
OP_SUM_DIM = register_op("SumBackward1", vjp_sum)
OP_MEAN = register_op("MeanBackward0", vjp_mean)
OP_MEAN_DIM = register_op("MeanBackward1", vjp_mean)


cdef object reduce_op(int op, TensorBase x, object dim, bint keepdim, object dtype=None):
    cdef Py_ssize_t inp[1]
    cdef Record* r
    A = x._array
    in_dt = A.dtype
    cdef int ndim = cnp.PyArray_NDIM(A)
    if op == OP_MEAN and dtype is None and in_dt.kind != "f" and in_dt.kind != "c":
        # (before the dims' check, as PyTorch's: an integer mean over an out-of-range dim is
        # this error, fuzz 67303271)
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {scalar_type_name(in_dt)}")
    cdef tuple axes = reduction_axes(dim, ndim, "sum" if op == OP_SUM else "mean")
    cdef double count = reduced_count(A.shape, axes)
    if dtype is not None:
        dt = to_np_dtype(dtype, "sum" if op == OP_SUM else "mean")
        if op == OP_MEAN and dt.kind != "f" and dt.kind != "c":
            raise RuntimeError("mean(): could not infer output dtype. Optional dtype must be "
                               "either a floating point or complex dtype. Got: "
                               f"{scalar_type_name(dt)}")
        if dt != in_dt:
            fresh(x)
            if x._requires_grad and grad_enabled() and dt.kind != "f" and dt.kind != "c":
                raise RuntimeError(f"Autograd not support dtype: {scalar_type_name(dt)}")
            A = A.astype(dt)
    if op == OP_SUM:
        if A.dtype.kind in "biu":
            if dtype is None:
                A = A.astype(NP_INT64)                  # PyTorch sums integers and bools as int64
            # in A's dtype: numpy would widen int8..int32 to int64 and sum bools as ints, where
            # PyTorch keeps a requested dtype (sum(dtype=torch.int32) is int32, dtype=bool is any)
            out = nd(np.add.reduce(A, axis=axes, keepdims=keepdim, dtype=A.dtype))
        else:
            with IeeeResults():                         # inf - inf, overflow: IEEE, as PyTorch
                out = cascade_reduce(A, axes, keepdim)  # float32/64 in PyTorch's order
                if out is None:
                    out = half_sum(A, axes, keepdim)
                    out = nd(out.astype(NP_FLOAT16) if is_half(A) else out)
    else:
        with IeeeResults():                             # mean of no elements is nan, as PyTorch
            out = cascade_reduce(A, axes, keepdim, count)   # PyTorch's mean: its sum / count
            if out is None:
                out = half_mean(A, axes, keepdim, count)
    out = contiguous_result(out)                        # PyTorch's layout, not the input's
    cdef TensorBase res = wrap(out)
    if CAPTURE is not None and capturing():
        capture_reduce(op, x, A, axes, keepdim, count, res)
    if not grad_enabled():
        return res
    begin_record(1)
    inp[0] = node_for_input(x)
    if inp[0] < 0 or inference_only(inp, 1):
        return res
    if dim is not None:
        op = OP_SUM_DIM if op == OP_SUM else OP_MEAN_DIM
    r = record_op(op, res, 1, inp)
    r.scalar = count
    if out.dtype != in_dt:
        keep(&r.aux, (x._array.shape, axes, keepdim, in_dt))
    else:
        keep(&r.aux, (x._array.shape, axes, keepdim))
    return res


class _KeepdimNotGiven:
    """The default of max's and min's keepdim, told apart from keepdim=False: a keepdim given
    makes a tensor second argument the dim (max_min).  It shows as the False it stands for."""
    def __repr__(self):
        return "False"


cdef object KEEPDIM_NOT_GIVEN = _KeepdimNotGiven()


cdef object DIM_NOT_GIVEN = dim_not_given()     # (ops_shape's: select's, gather's ...)


cdef object given_dim(str fname, object dim, bint alone=True):
    """The dim of max/min/prod (or their numpy alias axis): None when the call gave none.  Their
    PyTorch signatures take `int dim`, whose parser refuses None (x.max(dim=None) is a TypeError,
    not the reduction of every element).  Each has several signatures: a None given `alone` fits
    several by count, and the parser's words are "invalid combination" (the entry puts the
    call's arguments in its "got"); given with a keepdim or dtype, only the dim signature fits,
    whose own words name the argument (the entry adds the call's position)."""
    if dim is DIM_NOT_GIVEN:
        return None
    if dim is None:
        if alone:
            raise TypeError(invalid_args(fname, None))
        raise TypeError(f"{fname}(): argument 'dim' must be int, not NoneType")
    return dim


cdef object all_dims_or(str fname, object dim, object keepdim, object keepdims, object dtype,
                        object axis):
    """sum's and mean's dim: None (every dim) when neither it nor axis was given, where a
    keepdim given is refused as PyTorch's parser refuses it (its every-dims signature has no
    keepdim: x.sum(keepdim=True) is a TypeError there, x.sum(None, True) is not)."""
    if dim is DIM_NOT_GIVEN:
        if axis is None and (keepdim is not KEEPDIM_NOT_GIVEN or keepdims is not None):
            if dtype is not None:
                raise TypeError(f'{fname}() missing 1 required positional arguments: "dim"')
            given = "keepdims" if keepdims is not None else "keepdim"
            # (the public entry words "got" as the call gave its arguments, a method's too)
            raise TypeError(f"{fname}() received an invalid combination of arguments - got "
                            f"(Tensor, {given}=bool), but expected one of:\n"
                            " * (Tensor input, *, torch.dtype dtype = None)\n"
                            " * (Tensor input, tuple of ints dim, bool keepdim = False, *, "
                            "torch.dtype dtype = None)\n")
        dim = None
    return dim_alias(fname, dim, axis)


def sum(TensorBase input, dim=DIM_NOT_GIVEN, keepdim=KEEPDIM_NOT_GIVEN, *, dtype=None,
        axis=None, keepdims=None):
    """Sum of all elements, or over `dim` (int or tuple; keepdim keeps them as size 1).  Integer
    and bool tensors sum to int64; `dtype` casts the input first."""
    dim = all_dims_or("sum", dim, keepdim, keepdims, dtype, axis)
    return reduce_op(OP_SUM, input, dim, keepdim_alias(
        "sum", False if keepdim is KEEPDIM_NOT_GIVEN else keepdim, keepdims), dtype)


def mean(TensorBase input, dim=DIM_NOT_GIVEN, keepdim=KEEPDIM_NOT_GIVEN, *, dtype=None,
         axis=None, keepdims=None):
    """Mean of all elements, or over `dim` (floating point tensors only, as in PyTorch)."""
    dim = all_dims_or("mean", dim, keepdim, keepdims, dtype, axis)
    return reduce_op(OP_MEAN, input, dim, keepdim_alias(
        "mean", False if keepdim is KEEPDIM_NOT_GIVEN else keepdim, keepdims), dtype)


# -- prod -----------------------------------------------------------------------------------------
# saved = (input, output with the reduced dims kept); aux = (shape, axes, keepdim, axis or -1)

cdef object exclusive_cumprod(object A, int axis, bint reverse):
    """Product of the elements strictly before (after, when reverse) each one along `axis`.
    float16 multiplies in float32 and rounds each product once, as PyTorch's cumprod
    (numpy's float16 accumulate rounded every partial product: prod's gradient with zeros)."""
    if A.dtype == NP_FLOAT16:
        return exclusive_cumprod(A.astype(NP_FLOAT32), axis, reverse).astype(NP_FLOAT16)
    cdef int ndim = A.ndim
    cdef Py_ssize_t n = A.shape[axis]
    out = np.empty(A.shape, dtype=A.dtype)
    first = [slice(None)] * ndim
    rest = [slice(None)] * ndim
    src = [slice(None)] * ndim
    if not reverse:
        first[axis] = slice(0, 1)
        rest[axis] = slice(1, None)
        src[axis] = slice(0, n - 1)
        out[tuple(first)] = 1
        if n > 1:
            out[tuple(rest)] = np.multiply.accumulate(A[tuple(src)], axis=axis)
    else:
        first[axis] = slice(n - 1, n)
        rest[axis] = slice(0, n - 1)
        src[axis] = slice(n - 1, 0, -1)               # A[n-1], ..., A[1]
        out[tuple(first)] = 1
        if n > 1:
            acc = np.multiply.accumulate(A[tuple(src)], axis=axis)   # products from the end
            rev = [slice(None)] * ndim
            rev[axis] = slice(None, None, -1)
            out[tuple(rest)] = acc[tuple(rev)]
    return out


cdef object vjp_prod(Record* r, object g):
    A = <object>r.saved[0]
    outk = <object>r.saved[1]
    cdef tuple aux = <tuple>r.aux
    shape = aux[0]
    cdef int axis = aux[3]
    gk = unreduce(g, aux)
    if A.ndim == 0:
        # the product of no other element: the adjoint itself (PyTorch's; prod / x would be
        # NaN for a NaN or infinite x)
        gx = nd(np.array(gk, copy=True))
    elif not np.logical_or.reduce(np.equal(A, 0), axis=None):
        # no zero: d prod / d x_i = prod / x_i, times the adjoint (PyTorch's formula and order:
        # grad * (result / input))
        gx = np.multiply(gk, np.divide(outk, A))
    elif axis < 0 and np.add.reduce(np.equal(A, 0), axis=None, dtype=NP_INT64) > 1:
        # every product of the others holds a zero: PyTorch returns zeros, whatever the adjoint
        # (a NaN/inf adjoint gives 0 there, not NaN)
        gx = np.zeros(A.shape, dtype=gk.dtype)
    elif axis < 0:
        # With zeros: the product of all the other elements, from exclusive cumulative products.
        flat = A.reshape(-1)
        others = np.multiply(exclusive_cumprod(flat, 0, False), exclusive_cumprod(flat, 0, True))
        gx = np.multiply(gk, others.reshape(shape))
    else:
        others = np.multiply(exclusive_cumprod(A, axis, False), exclusive_cumprod(A, axis, True))
        gx = np.multiply(gk, others)
    gx = nd(gx)
    return gx if gx.dtype == aux[4] else gx.astype(aux[4])


OP_PROD = register_op("ProdBackward0", vjp_prod)
OP_PROD_DIM = register_op("ProdBackward1", vjp_prod)


def prod(TensorBase input, dim=DIM_NOT_GIVEN, keepdim=False, *, dtype=None, axis=DIM_NOT_GIVEN,
         keepdims=None):
    """Product of all elements, or along one `dim`.  Integer and bool tensors multiply as int64.
    The gradient is right with zeros in the input (the product of the other elements)."""
    cdef Record* r
    cdef bint alone = keepdim is False and keepdims is None and dtype is None
    dim = dim_alias("prod", given_dim("prod", dim, alone), given_dim("prod", axis, alone))
    keepdim = keepdim_alias("prod", keepdim, keepdims)
    A = input._array
    if dtype_kind(<cnp.ndarray>A) == c'c' and dtype is None:
        return complex_call("prod", (input, dim, bool(keepdim)))
    cdef int ndim = A.ndim
    cdef int ax = -1
    if dim is None:
        if keepdim:
            raise TypeError("prod() received an invalid combination of arguments - got "
                            "(keepdim=bool, ), but expected one of:\n * (Tensor input, int dim, "
                            "bool keepdim, *, torch.dtype dtype)")
        axes = tuple(range(ndim))
    else:
        ax = single_axis(dim, ndim, "prod")
        axes = (ax,) if ndim > 0 else ()
    if dtype is not None and (dtype_kind(<cnp.ndarray>A) == c'c' or
                              to_np_dtype(dtype, "prod").kind == "c"):
        # PyTorch casts first (a complex input cast to a real dtype drops its imaginary part):
        # the compiled VJP below is real-valued, so the complex product goes to _complex.py
        return complex_call("prod_dtype", (input, dim, bool(keepdim), dtype))
    if dtype is not None:
        A = A.astype(to_np_dtype(dtype, "prod"))
    elif A.dtype.kind in "biu":
        A = A.astype(NP_INT64)
    if A.dtype == NP_FLOAT16 and ndim > 0:
        # PyTorch rounds every partial product of a half type, in its loop's order (numpy's
        # float16 reduce keeps a float32 accumulator and rounds once: an ulp or more away)
        from tapegrad._half_product import half_product, float16_rounded
        kept = tuple([1 if (dim is None or i == ax) else A.shape[i] for i in range(ndim)])
        outk = contiguous_result(nd(half_product(A, None if dim is None else ax,
                                                 float16_rounded).astype(NP_FLOAT16)
                                    .reshape(kept)))
    else:
        with IeeeResults():     # (in A's dtype: numpy's own reduce widens int32 and bool to int64)
            outk = contiguous_result(nd(np.multiply.reduce(A, axis=axes, keepdims=True,
                                                           dtype=A.dtype)))
    out = outk if (keepdim and dim is not None) else outk.reshape(
        tuple([A.shape[i] for i in range(ndim) if i not in axes]))
    cdef TensorBase res = wrap(out)
    r = record_from(OP_PROD if dim is None else OP_PROD_DIM, res, (input,))
    if r != NULL:
        save_value(r, 0, A, input)
        keep_saved(r, 1, outk, res)
        keep(&r.aux, (A.shape, axes, bool(keepdim) and dim is not None,
                      ax if (dim is not None and ndim > 0) else -1, input._array.dtype))
    return res


# -- max / min / amax / amin ----------------------------------------------------------------------

cdef object evenly_rows_c(object A, object outk, object gk, tuple axes, bint nan_ties):
    """vjp_evenly for a C-contiguous float32/float64 input reduced over trailing dims (rows x
    cols), in one C pass per row: the same count, quotient and mask product as the numpy
    formula below (bit for bit, NaN and inf adjoints included), or None for other layouts."""
    cdef int ta = -1, to = -1, tg_ = -1
    if not (kernel_array(A, &ta) and kernel_array(outk, &to) and kernel_array(gk, &tg_)
            and ta == to and ta == tg_):
        return None
    cdef cnp.ndarray a = <cnp.ndarray>A
    cdef Py_ssize_t nd_ = cnp.PyArray_NDIM(a), na = len(axes), j, rows = 1, cols = 1
    if na == 0:
        return None
    for j in range(na):
        if <Py_ssize_t>axes[j] != nd_ - na + j:
            return None                         # not the trailing dims
    for j in range(nd_):
        if j < nd_ - na:
            rows *= cnp.PyArray_DIMS(a)[j]
        else:
            cols *= cnp.PyArray_DIMS(a)[j]
    if (cols == 0 or cols > (1 << 24) or cnp.PyArray_SIZE(<cnp.ndarray>outk) != rows
            or cnp.PyArray_SIZE(<cnp.ndarray>gk) != rows):
        return None
    cdef cnp.ndarray out = <cnp.ndarray>cnp.PyArray_SimpleNew(nd_, cnp.PyArray_DIMS(a), ta)
    if ta == cnp.NPY_FLOAT64:
        evenly_rows(<const double*>cnp.PyArray_DATA(a),
                    <const double*>cnp.PyArray_DATA(<cnp.ndarray>outk),
                    <const double*>cnp.PyArray_DATA(<cnp.ndarray>gk), rows, cols, nan_ties,
                    <double*>cnp.PyArray_DATA(out))
    else:
        evenly_rows(<const float*>cnp.PyArray_DATA(a),
                    <const float*>cnp.PyArray_DATA(<cnp.ndarray>outk),
                    <const float*>cnp.PyArray_DATA(<cnp.ndarray>gk), rows, cols, nan_ties,
                    <float*>cnp.PyArray_DATA(out))
    return out


cdef inline bint is_tie(real_t x, real_t m, bint nan_ties) noexcept nogil:
    """x takes a share of the extremum m's gradient: it equals m, or both are NaN where NaNs tie
    (max/min of all elements)."""
    return x == m or (nan_ties and x != x and m != m)


cdef void evenly_rows(const real_t* a, const real_t* m, const real_t* g, Py_ssize_t rows,
                      Py_ssize_t cols, bint nan_ties, real_t* out) noexcept nogil:
    """vjp_evenly row by row: in row i, g[i] / (number of ties with m[i]) at each tie, 0
    elsewhere (max/min of all elements, nan_ties: selected, so a NaN adjoint stays at the ties;
    amax/amin: multiplied by the mask, NaN everywhere then, as PyTorch's)."""
    cdef Py_ssize_t i, c, n
    cdef real_t q
    for i in range(rows):
        n = 0
        for c in range(cols):
            n += is_tie(a[i * cols + c], m[i], nan_ties)
        q = g[i] / <real_t>n
        for c in range(cols):
            if nan_ties:
                out[i * cols + c] = q if is_tie(a[i * cols + c], m[i], nan_ties) else 0
            else:
                out[i * cols + c] = <real_t>is_tie(a[i * cols + c], m[i], nan_ties) * q


cdef object extremum_of_saved_input(object A, tuple axes, bint largest, bint absolute):
    """The max (min) of the saved input over `axes`, kept dims: what the forward computed, taken
    again in the backward instead of read from the saved result.  Why: a bfloat16 composite
    (pairwise_distance, matrix_norm: tapegrad/_bfloat16.py) rounds its result in place after its
    last record saved it, so the saved result can equal no element (fuzz seed 65604069: zero or
    NaN gradients).  NaN propagates, as the forward's."""
    if absolute:
        A = np.abs(A)
    if largest:
        return np.maximum.reduce(A, axis=axes, keepdims=True)
    return np.minimum.reduce(A, axis=axes, keepdims=True)


cdef object vjp_evenly(Record* r, object g):
    """amax/amin, and max/min of all elements: the gradient split evenly among the extremal
    elements (for max/min also among NaNs when the result is NaN, as PyTorch)."""
    A = <object>r.saved[0]
    cdef tuple aux = <tuple>r.aux
    outk = extremum_of_saved_input(A, <tuple>aux[1], r.op == OP_MAX_ALL or r.op == OP_AMAX, False)
    gk = unreduce(g, aux)
    fast = evenly_rows_c(A, outk, gk, <tuple>aux[1], r.op == OP_MAX_ALL or r.op == OP_MIN_ALL)
    if fast is not None:
        return fast
    mask = np.equal(A, outk)
    if r.op == OP_MAX_ALL or r.op == OP_MIN_ALL:
        mask = np.logical_or(mask, np.logical_and(np.isnan(A), np.isnan(outk)))
    count = np.add.reduce(mask, axis=aux[1], keepdims=True, dtype=A.dtype)
    if r.op == OP_MAX_ALL or r.op == OP_MIN_ALL:
        # PyTorch fills the ties (masked_fill): a NaN/inf adjoint reaches them only
        return nd(np.where(mask, np.divide(gk, count), np.zeros((), dtype=A.dtype)))
    return nd(np.multiply(mask, np.divide(gk, count)))


cdef object kept_indices(object idx, int axis, bint keepdim):
    """max/min(dim)'s saved indices (the returned ones) with the reduced dim kept."""
    return idx if keepdim else np.expand_dims(idx, axis)


cdef object vjp_select_dim(Record* r, object g):
    """max/min along a dim: the gradient goes to the index the forward returned."""
    cdef tuple aux = <tuple>r.aux
    shape, axis, keepdim, dt = aux[0], aux[1], aux[2], aux[3]
    cdef Py_ssize_t nd_ = len(shape), i
    if nd_ == 0:
        return nd(g.astype(dt, copy=True))
    idxk = kept_indices(<object>r.saved[0], axis, keepdim)
    gk = g if keepdim else g.reshape(idxk.shape)
    ar_shape = [1] * nd_
    ar_shape[axis] = shape[axis]
    mask = np.equal(np.arange(shape[axis]).reshape(ar_shape), idxk)
    out = np.zeros(shape, dtype=dt)
    np.add(out, gk, out=out, where=mask)
    return out


OP_MAX_ALL = register_op("MaxBackward1", vjp_evenly)
OP_MIN_ALL = register_op("MinBackward1", vjp_evenly)
OP_MAX_DIM = register_op("MaxBackward0", vjp_select_dim)
OP_MIN_DIM = register_op("MinBackward0", vjp_select_dim)
OP_AMAX = register_op("AmaxBackward0", vjp_evenly)
OP_AMIN = register_op("AminBackward0", vjp_evenly)


# torch.return_types: structseq-like named tuples (values, indices) that print as PyTorch's.

class _ReturnType(tuple):
    """A tuple with named fields, printed as PyTorch prints torch.return_types.*."""
    __slots__ = ()
    # The field names, where PyTorch's struct sequences keep them (for `case` patterns too):
    # no namedtuple `_fields`, which code that tells named tuples apart would see (pickling,
    # collation and optimizer state treat these as plain sequences in PyTorch)
    __match_args__ = ()
    n_fields = 2
    n_sequence_fields = 2
    n_unnamed_fields = 0

    def __new__(cls, sequence):
        sequence = tuple(sequence)
        if len(sequence) != len(cls.__match_args__):
            raise TypeError(f"torch.return_types.{cls.__name__}() takes a "
                            f"{len(cls.__match_args__)}-"
                            f"sequence ({len(sequence)}-sequence given)")
        return tuple.__new__(cls, sequence)

    def __repr__(self):
        body = ",\n".join([f"{n}={v!r}" for n, v in zip(self.__match_args__, self)])
        return f"torch.return_types.{type(self).__name__}(\n{body})"

    __str__ = __repr__

    def __reduce__(self):
        return (type(self), (tuple(self),))


return_types = _types.ModuleType("tapegrad.return_types",
                                 "Named tuples returned by ops (like torch.return_types).")


# The one result type whose op takes no out= in PyTorch (so it has no "<name>_out" twin).
_NO_OUT_VARIANT = frozenset(("histogramdd",))


def _make_return_type(str name, tuple fields):
    """A torch.return_types-like class `name` with `fields`, added to tapegrad.return_types,
    with its twin "<name>_out" beside it: PyTorch returns the twin, same fields under its own
    name, from a call with out= (torch.sort(x, out=(v, i)) is a torch.return_types.sort_out),
    and the out= path (write_out) finds it there by that name."""
    if name not in _NO_OUT_VARIANT:
        _new_return_type(name + "_out", fields)
    return _new_return_type(name, fields)


def _new_return_type(str name, tuple fields):
    ns = {"__slots__": (), "__match_args__": fields, "__module__": "tapegrad.return_types",
          "__qualname__": name, "n_fields": len(fields), "n_sequence_fields": len(fields)}
    for i, f in enumerate(fields):
        ns[f] = property(_operator.itemgetter(i), doc=f"Alias for field number {i}")
    cls = type(name, (_ReturnType,), ns)
    setattr(return_types, name, cls)
    return cls


return_types.max = _make_return_type("max", ("values", "indices"))
return_types.min = _make_return_type("min", ("values", "indices"))
_sys.modules.setdefault("tapegrad.return_types", return_types)


cdef object extreme_dims(int op, TensorBase x, object dim, bint keepdim, str name):
    """amax/amin over `dim` (int, tuple or all) and max/min of all elements."""
    cdef Record* r
    A = x._array
    if dtype_kind(<cnp.ndarray>A) == c'c' and cnp.PyArray_SIZE(A) > 0:
        # complex numbers have no order (PyTorch checks an empty input's dims first, below)
        return complex_call("refuse", (name + "_all" if dim is None and (
            op == OP_MAX_ALL or op == OP_MIN_ALL) else name, x))
    cdef int ndim = A.ndim
    cdef tuple axes
    if dim is None:
        axes = tuple(range(ndim))
    elif isinstance(dim, bool):
        raise TypeError(f"{name}(): argument 'dim' (position 1) must be tuple of ints, not bool")
    else:
        if cnp.PyArray_SIZE(A) == 0 and ndim > 0:
            # PyTorch checks each dim (named as written) for no elements before repeated dims
            for d in ((dim,) if isinstance(dim, (int, np.integer)) else dim):
                if (isinstance(d, (int, np.integer)) and -ndim <= d < ndim
                        and A.shape[d] == 0):
                    raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero "
                                     "size.")
        axes = reduction_axes(dim, ndim, name)
    shape = A.shape
    if cnp.PyArray_SIZE(A) == 0:
        if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        for a in axes:
            if shape[a] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {a} to have non-zero size.")
    ufunc = np.maximum if op == OP_MAX_ALL or op == OP_AMAX else np.minimum
    outk = contiguous_result(nd(ufunc.reduce(A, axis=axes, keepdims=True)))
    out = outk if keepdim else outk.reshape(tuple([shape[i] for i in range(ndim) if i not in axes]))
    cdef TensorBase res = wrap(out)
    r = record_from(op, res, (x,))
    if r != NULL:
        save_value(r, 0, A, x)
        keep_saved(r, 1, outk, res)
        keep(&r.aux, (shape, axes, keepdim))
    return res


cdef object extreme_along(int op, TensorBase x, int axis, bint keepdim, str name):
    """max/min along one dim: (values, indices); the values' gradient goes to the indices."""
    cdef Record* r
    A = x._array
    if dtype_kind(<cnp.ndarray>A) == c'c' and not (A.ndim > 0 and A.shape[axis] == 0):
        # (PyTorch checks for an empty reduced dim first, below)
        return complex_call("refuse", (name + "_dim", x))
    cdef int ndim = A.ndim
    shape = A.shape
    if ndim == 0:
        values = A.copy()
        idx = np.zeros((), dtype=NP_INT64)
        idxk = idx
    else:
        if shape[axis] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {axis} to have non-zero size.")
        if op == OP_MAX_DIM:
            idxk = A.argmax(axis=axis, keepdims=True)
        else:
            idxk = A.argmin(axis=axis, keepdims=True)
        idxk = nd(idxk.astype(NP_INT64, copy=False))
        values = nd(values_at_positions(A, idxk, axis))       # NaN wins, as in PyTorch
        if not keepdim:
            red = tuple([shape[i] for i in range(ndim) if i != axis])
            values = values.reshape(red)
            idx = idxk.reshape(red)
        else:
            idx = idxk
    cdef TensorBase res = wrap(values)
    cdef TensorBase indices = wrap(idx)
    r = record_from(op, res, (x,))
    if r != NULL:
        # the returned indices themselves, as PyTorch saves them: writing them raises at
        # backward, naming no node (record.pxi, save_index)
        save_index(r, 0, indices)
        keep(&r.aux, (shape, axis, keepdim, A.dtype))
    cls = return_types.max if op == OP_MAX_DIM else return_types.min
    return cls((res, indices))




cdef object max_min(bint is_max, TensorBase input, tuple args, object dim, object keepdim,
                    object other, object axis, object keepdims):
    """max/min bound to one of PyTorch's three overloads: (input), (input, Tensor other) and
    (input, int dim, bool keepdim=False).  Which one is told by how the call spelt its arguments,
    not by the type of the second alone: a lone positional tensor is `other`, but a tensor given
    as dim=, or followed by a keepdim, is the dim (a 0-d integer tensor; any other tensor is
    PyTorch's TypeError), so torch.max(x, dim=torch.tensor(1)) returns (values, indices) along
    dim 1, never the elementwise maximum of x and 1."""
    cdef str name = "max" if is_max else "min"
    cdef bint alone = (len(args) + (dim is not DIM_NOT_GIVEN) + (axis is not DIM_NOT_GIVEN)
                       + (keepdim is not KEEPDIM_NOT_GIVEN) + (keepdims is not None)
                       + (other is not None)) == 1
    if args and args[0] is None:
        given_dim(name, None, alone)
    dim, axis = given_dim(name, dim, alone), given_dim(name, axis, alone)
    if len(args) > 2:
        raise TypeError(f"{name}() takes from 2 to 3 positional arguments but {len(args) + 1} "
                        "were given")
    if len(args) == 2 and keepdim is not KEEPDIM_NOT_GIVEN:
        raise TypeError(f"{name}() got multiple values for argument 'keepdim'")
    if args and dim is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got dim both "
                        "by position and by keyword")
    keepdim_given = (len(args) == 2 or keepdim is not KEEPDIM_NOT_GIVEN
                     or keepdims is not None)
    keepdim = args[1] if len(args) == 2 else (False if keepdim is KEEPDIM_NOT_GIVEN else keepdim)
    dim = args[0] if args else dim_alias(name, dim, axis)
    if args and isinstance(dim, TensorBase) and not keepdim_given and other is None:
        dim, other = None, dim                          # max(input, other)
    dim = other_or_dim(name, dim, keepdim_given, other)
    keepdim = keepdim_alias(name, keepdim, keepdims)
    if other is not None:
        elementwise = TORCH_FUNCTIONS.get("maximum" if is_max else "minimum")
        if elementwise is None:
            raise NotImplementedError(f"{name}(input, other) needs tapegrad.maximum/minimum")
        return elementwise(input, other)
    if dim is None:
        if keepdim:
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            "(keepdim=bool, ), but expected one of:\n * (Tensor input, int dim, "
                            "bool keepdim)")
        return extreme_dims(OP_MAX_ALL if is_max else OP_MIN_ALL, input, None, False, name)
    return extreme_along(OP_MAX_DIM if is_max else OP_MIN_DIM, input,
                         single_axis(dim, input._array.ndim, name), keepdim, name)


cdef object other_or_dim(str name, object dim, bint keepdim_given, object other):
    """max/min's `other` (given by keyword, `torch.max(input=x, other=y)`, as Dive-into-DL's relu
    writes it, or alone by position): the elementwise overload, which takes neither dim nor
    keepdim."""
    if other is None:
        return dim
    if dim is not None or keepdim_given:
        got = ", ".join(["Tensor"] + (["int"] if dim is not None else [])
                        + (["keepdim=bool"] if keepdim_given else []) + ["other=Tensor"])
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), "
                        "but expected one of:\n * (Tensor input, *, Tensor out = None)\n"
                        " * (Tensor input, Tensor other, *, Tensor out = None)\n"
                        " * (Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None)")
    if not isinstance(other, TensorBase):
        raise TypeError(f"{name}(): argument 'other' must be Tensor, not {type_name(other)}")
    return other




def max_(TensorBase input, *args, dim=DIM_NOT_GIVEN, keepdim=KEEPDIM_NOT_GIVEN, other=None,
         axis=DIM_NOT_GIVEN, keepdims=None):
    """max(input): the largest element (gradient split evenly among ties);
    max(input, dim, keepdim=False): tapegrad.return_types.max(values, indices) along `dim`
    (gradient to the returned index); max(input, other): elementwise maximum.  `args`: the
    positional (dim, keepdim) or (other,), bound as PyTorch binds them (max_min)."""
    return max_min(True, input, args, dim, keepdim, other, axis, keepdims)


def min_(TensorBase input, *args, dim=DIM_NOT_GIVEN, keepdim=KEEPDIM_NOT_GIVEN, other=None,
         axis=DIM_NOT_GIVEN, keepdims=None):
    """min(input), min(input, dim, keepdim=False) -> (values, indices), min(input, other)."""
    return max_min(False, input, args, dim, keepdim, other, axis, keepdims)


# (amax's and amin's default dim, told by identity: `dim == ()` is an array for a numpy
# integer dim, whose truth value raises)
_NO_DIMS = ()


def amax(TensorBase input, dim=_NO_DIMS, keepdim=False, *, axis=None, keepdims=None):
    """Largest value over `dim` (int or tuple; all dims by default); ties split the gradient."""
    return extreme_dims(OP_AMAX, input, dim_alias("amax", None if dim is _NO_DIMS else dim, axis),
                        keepdim_alias("amax", keepdim, keepdims), "amax")


def amin(TensorBase input, dim=_NO_DIMS, keepdim=False, *, axis=None, keepdims=None):
    """Smallest value over `dim` (int or tuple; all dims by default); ties split the gradient."""
    return extreme_dims(OP_AMIN, input, dim_alias("amin", None if dim is _NO_DIMS else dim, axis),
                        keepdim_alias("amin", keepdim, keepdims), "amin")


# -- argmax / argmin / count_nonzero (not differentiable) ----------------------------------------

cdef object arg_extreme(bint is_max, TensorBase input, object dim, bint keepdim):
    cdef str name = "argmax" if is_max else "argmin"
    A = input._array
    if dtype_kind(<cnp.ndarray>A) == c'c':
        return complex_call("refuse", (name, input))
    if A.dtype.kind == "b":
        raise RuntimeError(f"{name}(): does not support bool input")
    if dim is None:
        if A.size == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() "
                             "== 0.")
        out = np.asarray(np.argmax(A) if is_max else np.argmin(A), dtype=NP_INT64)
        if keepdim:
            out = out.reshape((1,) * A.ndim)
        return wrap(out)
    if int_param(dim) is None:                                           # (one signature)
        raise TypeError(f"{name}(): argument 'dim' (position 2) must be int, not {type_name(dim)}")
    cdef int ax = single_axis(dim, A.ndim, name)
    if A.ndim == 0:
        return wrap(np.asarray(0, dtype=NP_INT64))
    if A.shape[ax] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {ax} to have non-zero size.")
    out = np.argmax(A, axis=ax, keepdims=keepdim) if is_max else np.argmin(A, axis=ax,
                                                                          keepdims=keepdim)
    return wrap(nd(out.astype(NP_INT64)))


def argmax(TensorBase input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """Index of the largest element (flattened, or along `dim`); int64, not differentiable."""
    return arg_extreme(True, input, dim_alias("argmax", dim, axis),
                       keepdim_alias("argmax", keepdim, keepdims))


def argmin(TensorBase input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """Index of the smallest element (flattened, or along `dim`); int64, not differentiable."""
    return arg_extreme(False, input, dim_alias("argmin", dim, axis),
                       keepdim_alias("argmin", keepdim, keepdims))


def count_nonzero(TensorBase input, dim=None, *, axis=None):
    """Number of non-zero elements (over all dims, or over `dim`: int or tuple); int64."""
    A = input._array
    axes = reduction_axes(dim_alias("count_nonzero", dim, axis), A.ndim, "count_nonzero", True,
                          False)                # (`int[] dim` and `int? dim`)
    return wrap(contiguous_result(nd(np.add.reduce(np.not_equal(A, 0), axis=axes,
                                                   dtype=NP_INT64))))


def count_nonzero_method(TensorBase input, *dims, dim=None, axis=None):
    """Tensor.count_nonzero: count_nonzero() whose dims may also come as varargs
    (x.count_nonzero(0, 1)), as PyTorch's method takes them (its function does not)."""
    if len(dims) > 1:
        if dim is not None or axis is not None:
            raise TypeError(f"count_nonzero() received an invalid combination of arguments - got "
                            f"({', '.join(type_name(d) for d in dims)}, ...), but expected one of:"
                            "\n * (int dim = None)\n * (tuple of ints dim)\n")
        return count_nonzero(input, dims)
    if dims:
        if dim is not None:
            raise TypeError("count_nonzero() got multiple values for argument 'dim'")
        dim = dims[0]
    return count_nonzero(input, dim, axis=axis)


count_nonzero_method.__name__ = count_nonzero_method.__qualname__ = "count_nonzero"


# -- var / std ------------------------------------------------------------------------------------
# saved = (input - mean under the input's version, the result (std only)); aux = (shape, axes, keepdim,
# the all-elements backward: dim was None or the input is 0-d);
# scalar = dof.  With no degrees of freedom over all elements, saved[0] is instead PyTorch's factor
# of that case (equal_mean_factor), not the centered input.

cdef object vjp_var(Record* r, object g):
    centered = <object>r.saved[0]
    cdef tuple aux = <tuple>r.aux
    gk = unreduce(g, aux)
    cdef double dof = r.scalar
    cdef double two_over = 2.0 / dof               # inf when dof == 0 (C division), as PyTorch
    if r.op == OP_STD:
        stdk = <object>r.saved[1]
        # d std = d var / (2 std), defined as 0 where std == 0 (PyTorch's masked_fill)
        gk = np.divide(gk, np.multiply(stdk, 2), out=np.zeros(stdk.shape, dtype=centered.dtype),
                       where=np.not_equal(stdk, 0))
    # (over all elements without degrees of freedom, `centered` is equal_mean_factor's NaN-or-1)
    return nd(np.multiply(centered, np.multiply(gk, two_over)))


cdef object equal_mean_factor(object A, object mean):
    """PyTorch's var_backward over all elements with no degrees of freedom is
    grad * where(input == mean, NaN, inf): this is the factor of inf, NaN where an element equals
    the mean and 1 elsewhere.  It needs the input itself, not input - mean: a NaN element (or a
    NaN mean) gets inf, an infinite element equal to an infinite mean NaN, though both differences
    are NaN."""
    return nd(np.where(np.equal(A, mean), np.nan, 1).astype(A.dtype, copy=False))


OP_VAR = register_op("VarBackward0", vjp_var)
OP_STD = register_op("StdBackward0", vjp_var)


# PyTorch's signatures of var, std, var_mean and std_mean, which its parser lists when a call fits
# none: unbiased is a bool, so var(x, 0, 0) is one of them (not correction=0).
MOMENT_SIGNATURES = (" * (Tensor input, tuple of ints dim, bool unbiased = True, bool keepdim = "
                     "False)\n * (Tensor input, tuple of ints dim = None, *, Number correction = "
                     "None, bool keepdim = False)\n * (Tensor input, bool unbiased = True)\n")


# at::parallel_reduce's grain, and the chunks it makes of a big reduction (one per thread of
# PyTorch's default count, fixed for the process as the cascade sums' chunks are)
cdef Py_ssize_t MOMENT_GRAIN = 32768
cdef int MOMENT_BLOCKS = _core_module._default_kernel_threads()


cdef object moments_of_all(object A, double dof, bint is_std, double n):
    """var (std) of all of A (C-contiguous float32/float64) as PyTorch's std_var_all_cpu
    computes a reduction to one element, bit for bit: the mean as mean() computes it, then each
    squared deviation in double added one at a time within each of parallel_reduce's chunks,
    the chunk sums added in order, divided by the clamped degrees of freedom.  (The moments
    numpy's pairwise sums give differed in the last bits of a float64 std.)"""
    mean = float(cascade_reduce(A, tuple(range(A.ndim)), False, n))
    flat = A.reshape(-1)
    cdef Py_ssize_t size = flat.shape[0]
    cdef Py_ssize_t tasks = 1 if size <= MOMENT_GRAIN else \
        min(MOMENT_BLOCKS, (size + MOMENT_GRAIN - 1) // MOMENT_GRAIN)
    cdef Py_ssize_t chunk = (size + tasks - 1) // tasks, t
    total = np.float64(0.0)
    for t in range(tasks):
        part = flat[t * chunk:(t + 1) * chunk]
        if part.shape[0]:
            dx = np.subtract(part.astype(NP_FLOAT64), mean)
            total = total + np.cumsum(np.multiply(dx, dx))[part.shape[0] - 1]    # (in order)
    out = np.divide(total, dof)
    if is_std:
        out = np.sqrt(out)
    return np.asarray(out).astype(A.dtype)


cdef object var_std(bint is_std, TensorBase input, object dim, object unbiased, object keepdim,
                    object correction):
    cdef Record* r
    cdef str name = "std" if is_std else "var"
    if isinstance(dim, bool):                           # var(input, unbiased)
        if unbiased is not None:
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            "(bool, unbiased=bool)")
        unbiased, dim = dim, None
    elif unbiased is not None:
        check_bool(name, "unbiased", unbiased, 0, MOMENT_SIGNATURES)
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        "(unbiased=bool, correction=int), but expected one of:\n"
                        " * (Tensor input, tuple of ints dim, bool unbiased, bool keepdim)\n"
                        " * (Tensor input, tuple of ints dim, *, Number correction, bool keepdim)")
    cdef double c = 1.0
    if correction is not None:
        c = float(correction)
    elif unbiased is not None:
        c = 1.0 if unbiased else 0.0
    A = input._array
    if A.dtype.kind == "c":                             # var of the real and imaginary parts
        return complex_call("var_std", (is_std, input, dim, c, bool(keepdim)))
    if A.dtype.kind != "f":
        raise RuntimeError("std and var only support floating point and complex dtypes")
    cdef int ndim = A.ndim
    cdef tuple axes = reduction_axes(dim, ndim, name, False)
    cdef bint kd = bool(keepdim)
    cdef double n = reduced_count(A.shape, axes)
    cdef double dof = n - c
    # PyTorch's backward divides by the unclamped n - c when dims are given (a finite gradient
    # for a negative one) and by the clamped 0 over all elements (see vjp_var); a 0-d input
    # takes the all-elements formula whatever its dim (var_backward tests self.dim() == 0)
    cdef bint over_all = dim is None or ndim == 0
    cdef double backward_dof = max(dof, 0.0) if over_all else dof
    if dof <= 0:
        dof = 0
        torch_warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less "
                   "than the reduction factor (input numel divided by output numel).",
                   "aten/src/ATen/native/ReduceOps.cpp:1861")
    acc = moment_dtype(A.dtype)
    with IeeeResults():
        # the moments in PyTorch's accumulation dtype, rounded to A's dtype once (after the
        # square root for std)
        Aw = A.astype(acc, copy=False)
        # the mean corrected by its residuals' mean: a constant row's variance is then exactly
        # 0, as PyTorch's Welford moments give (sum / n can be an ulp off)
        m = np.divide(np.add.reduce(Aw, axis=axes, keepdims=True), n)
        m = np.add(m, np.divide(np.add.reduce(np.subtract(Aw, m), axis=axes, keepdims=True), n))
        cw = np.subtract(Aw, m)
        outk = np.divide(np.add.reduce(np.multiply(cw, cw), axis=axes, keepdims=True), dof)
        if is_std:
            outk = np.sqrt(outk)
        outk = contiguous_result(nd(outk.astype(A.dtype, copy=False)))
        if (outk.size == 1 and A.size and (A.dtype == NP_FLOAT32 or A.dtype == NP_FLOAT64)
                and A.flags.c_contiguous):
            outk = contiguous_result(nd(moments_of_all(A, dof, is_std, n).reshape(outk.shape)))
        # the backward's input - mean(input), in A's dtype with the mean as mean() computes it
        mean_as_mean = half_mean(A, axes, True, n)
        if over_all and backward_dof == 0:
            centered = equal_mean_factor(A, mean_as_mean)
        else:
            centered = nd(np.subtract(A, mean_as_mean))
    out = outk if kd else outk.reshape(tuple([A.shape[i] for i in range(ndim) if i not in axes]))
    cdef TensorBase res = wrap(out)
    r = record_from(OP_STD if is_std else OP_VAR, res, (input,))
    if r != NULL:
        # PyTorch saves the input itself: a write into it before backward raises (fuzz seed
        # 53013707), so the centered copy carries the input's version
        keep_saved(r, 0, centered, input)
        if is_std:
            keep_saved(r, 1, outk, res)
        keep(&r.aux, (A.shape, axes, kd, over_all))
        r.scalar = backward_dof
    return res


def var(TensorBase input, dim=None, unbiased=None, keepdim=False, *, correction=None,
        axis=None, keepdims=None):
    """Variance over all elements or `dim`, with Bessel's correction by default (`correction=1`;
    `unbiased=False` or `correction=0` for the population variance)."""
    check_bool("var", "keepdim", keepdim, 0, MOMENT_SIGNATURES)
    return var_std(False, input, dim_alias("var", dim, axis), unbiased,
                   keepdim_alias("var", keepdim, keepdims), correction)


def std(TensorBase input, dim=None, unbiased=None, keepdim=False, *, correction=None,
        axis=None, keepdims=None):
    """Standard deviation (square root of var(); same arguments).  Its gradient is 0 where the
    result is 0, as in PyTorch."""
    check_bool("std", "keepdim", keepdim, 0, MOMENT_SIGNATURES)
    return var_std(True, input, dim_alias("std", dim, axis), unbiased,
                   keepdim_alias("std", keepdim, keepdims), correction)


# -- logsumexp ------------------------------------------------------------------------------------
# saved = (input, result with the reduced dims kept); aux = (shape, axes, keepdim)

cdef object vjp_logsumexp(Record* r, object g):
    A = <object>r.saved[0]
    outk = <object>r.saved[1]
    gk = unreduce(g, <tuple>r.aux)
    return nd(np.multiply(gk, np.exp(np.subtract(A, outk))))


OP_LOGSUMEXP = register_op("LogsumexpBackward0", vjp_logsumexp)


# logsumexp's dim has no default in PyTorch: a call without it and a call with dim=None are two
# different TypeErrors ("missing 1 required positional arguments" and "must be tuple of ints")


def logsumexp(TensorBase input, dim=DIM_NOT_GIVEN, keepdim=False, *, axis=None, keepdims=None):
    """log(sum(exp(input))) over `dim` (int or tuple), computed stably (shifted by the max)."""
    cdef Record* r
    if dim is DIM_NOT_GIVEN:
        dim, axis = axis_alias("logsumexp", dim, axis, DIM_NOT_GIVEN), None
    dim = dim_alias("logsumexp", dim, axis)
    keepdim = keepdim_alias("logsumexp", keepdim, keepdims)
    if dim is None:
        raise TypeError("logsumexp(): argument 'dim' (position 1) must be tuple of ints, not "
                        "NoneType")
    A = input._array
    if dtype_kind(<cnp.ndarray>A) == c'c':
        return complex_call("logsumexp", (input, reduction_axes(dim, A.ndim, "logsumexp"),
                                          bool(keepdim)))
    if A.dtype.kind != "f":
        A = A.astype(DEFAULT_FLOAT)
    cdef int ndim = A.ndim
    cdef tuple axes = reduction_axes(dim, ndim, "logsumexp")
    cdef bint kd = bool(keepdim)
    # PyTorch's logsumexp is a composition of ops (ATen's logsumexp_out_impl: amax with its
    # infinities replaced by 0, x - max, exp, sum, log, + max), so a float16 input has each
    # step rounded to float16 and only the sum accumulated in float32: 70,000 exp(0) sum to
    # inf and the result is inf.  (Computed in float32 and rounded once, a fifth of random
    # float16 results were an ulp off, and that case was 11.16.)
    with IeeeResults():
        m = nd(np.maximum.reduce(A, axis=axes, keepdims=True, initial=-np.inf))
        m[np.isinf(m)] = 0                              # all -inf (or an inf): no shift
        if A.dtype == NP_FLOAT16:
            total = np.add.reduce(np.exp(np.subtract(A, m)), axis=axes, keepdims=True,
                                  dtype=NP_FLOAT32).astype(NP_FLOAT16)
        else:
            total = np.add.reduce(np.exp(np.subtract(A, m)), axis=axes, keepdims=True)
        outk = contiguous_result(nd(np.add(np.log(total), m)))
    out = outk if kd else outk.reshape(tuple([A.shape[i] for i in range(ndim) if i not in axes]))
    cdef TensorBase res = wrap(out)
    r = record_from(OP_LOGSUMEXP, res, (input,))
    if r != NULL:
        save_value(r, 0, A, input)
        keep_saved(r, 1, outk, res)
        keep(&r.aux, (A.shape, axes, kd))
    return res


# -- norm -----------------------------------------------------------------------------------------
# saved = (input, result with the reduced dims kept); aux = (shape, axes, keepdim); scalar = p

cdef object vjp_norm(Record* r, object g):
    A = <object>r.saved[0]
    outk = <object>r.saved[1]
    cdef tuple aux = <tuple>r.aux
    cdef double p = r.scalar
    gk = unreduce(g, aux)
    if p == 0:
        return None                                     # PyTorch: no gradient for the 0-"norm"
    if p == 1:
        return nd(np.multiply(sign_numpy(A), gk))          # PyTorch's sign: 0 at NaN
    bshape = outk.shape                                 # gk has the same (keepdim) shape
    if p == 2:
        # grad * (x / norm), 0 where norm == 0: PyTorch's order (grad / norm first overflowed
        # float16 for a norm below 1e-4: -inf where PyTorch's gradient is -11984)
        unit = np.divide(A, outk, out=np.zeros(A.shape, dtype=A.dtype),
                         where=np.not_equal(outk, 0))          # (broadcast by the ufunc)
        return nd(np.multiply(gk, unit))
    if p == INFINITY or p == -INFINITY:
        mask = np.equal(np.abs(A), extremum_of_saved_input(A, <tuple>aux[1], p > 0, True))
        # a NaN norm matches no element: a zero gradient, as PyTorch's (not 0 * (g / 0))
        count = np.maximum(np.add.reduce(mask, axis=aux[1], keepdims=True, dtype=A.dtype), 1)
        return nd(np.multiply(np.multiply(sign_numpy(A), mask), np.divide(gk, count)))
    # sign(x) |x|^(p-1) * g / norm^(p-1), 0 where x == 0 or norm == 0
    scale = np.divide(gk, np.power(outk, p - 1), out=np.zeros(bshape, dtype=A.dtype),
                      where=np.not_equal(outk, 0))
    nz = np.not_equal(A, 0)
    scaled = np.multiply(np.sign(A), np.power(np.abs(A), p - 1), out=np.zeros(A.shape, A.dtype),
                         where=nz)
    return nd(np.multiply(scaled, scale))


OP_NORM = register_op("LinalgVectorNormBackward0", vjp_norm)


def _norm_dtype(object input_dtype, object dtype, str fn="linalg.vector_norm"):
    """The numpy dtype a norm of an input of numpy dtype `input_dtype` computes in for its
    `dtype=` argument, by PyTorch's checks (torch.norm's, linalg.vector_norm's and, with `fn`,
    linalg.matrix_norm's): a float or complex dtype, complex exactly for a complex input, that
    the input's converts to without narrowing.  The norm itself has the real counterpart."""
    wanted = to_np_dtype(dtype, "norm")
    input_dtype = np.dtype(input_dtype)
    if wanted.kind not in "fc":
        raise RuntimeError(f"{fn}: dtype should be floating point or complex, "
                           f"but got {scalar_type_name(wanted)}")
    if input_dtype.kind == "c" and wanted.kind != "c":
        raise RuntimeError(f"{fn}: dtype should be complex for complex inputs, but got "
                           f"{scalar_type_name(wanted)}")
    if input_dtype.kind != "c" and wanted.kind == "c":
        raise RuntimeError(f"{fn}: dtype should be real for real inputs, but got "
                           f"{scalar_type_name(wanted)}")
    if np.promote_types(input_dtype, wanted) != wanted:
        raise RuntimeError(
            f"{fn}: the dtype of the input ({scalar_type_name(input_dtype)}) should "
            f"be convertible without narrowing to the specified dtype "
            f"({scalar_type_name(wanted)})")
    return wanted


def norm(TensorBase input, p="fro", dim=None, keepdim=False, dtype=None):
    """Vector p-norm over all elements or `dim` (int or tuple): p = 2 ('fro', the default), 1,
    inf, -inf, 0 (count of non-zeros) or any other number.  Gradient 0 at the zero vector."""
    cdef Record* r
    cdef double pv
    check_bool("linalg_vector_norm", "keepdim", keepdim)    # PyTorch's norm parses as vector_norm
    A = input._array
    if A.dtype.kind == "c":                             # the norm of the moduli
        if dtype is not None:
            _norm_dtype(A.dtype, dtype)
            input = input.to(dtype)
        return complex_call("norm", (input, p, dim, keepdim))
    if A.dtype.kind != "f":
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {scalar_type_name(A.dtype)}")
    if dtype is not None:
        A = A.astype(_norm_dtype(A.dtype, dtype))
    cdef int ndim = A.ndim
    if isinstance(p, str):          # (PyTorch's matrix-norm checks come before the dims')
        if p not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
        # (PyTorch sizes any dim but an int here: a 0-d tensor's len() raises its TypeError)
        if dim is not None and not isinstance(dim, int) and len(dim) > 2:
            raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got "
                               + " ".join([str(d) for d in dim]))
    cdef tuple axes = reduction_axes(dim, ndim, "norm", False)
    if isinstance(p, str):
        if p == "nuc":
            # the nuclear norm is linalg.matrix_norm's (singular values, with their gradient);
            # without dim, over every dim, which only a matrix has two of (as PyTorch)
            # (an int dim is torch.norm's one-element list: matrix_norm's "must be a 2-tuple")
            from tapegrad.linalg import matrix_norm
            # (one int dim is PyTorch's one-element list, which matrix_norm refuses by its size)
            return matrix_norm(input, "nuc", tuple(range(ndim)) if dim is None else
                               (dim,) if isinstance(dim, int) else dim, keepdim, dtype=dtype)
        pv = 2.0
    elif p is None:
        pv = 2.0
    else:
        pv = float(p)
    if (pv < 0 or pv == INFINITY) and cnp.PyArray_SIZE(A) == 0:
        # no identity for min/max-like norms: PyTorch refuses empty reductions
        ptxt = ("inf" if pv > 0 else "-inf") if pv == INFINITY or pv == -INFINITY else (
            str(int(pv)) if pv == int(pv) else str(pv))
        if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
            raise RuntimeError(f"linalg.vector_norm cannot compute the {ptxt} norm on an empty "
                               "tensor because the operation does not have an identity")
        for a in axes:
            if A.shape[a] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {ptxt} norm on the "
                                   f"dimension {a}because this dimension is empty and the "
                                   "operation does not have an identity")
    # float16 is accumulated (powers, sums and the root) in float32, as PyTorch's
    Aw = A.astype(NP_FLOAT32) if A.dtype == NP_FLOAT16 else A
    with IeeeResults():
        if pv == 2:
            outk = np.sqrt(np.add.reduce(np.multiply(Aw, Aw), axis=axes, keepdims=True))
        elif pv == 1:
            outk = np.add.reduce(np.abs(Aw), axis=axes, keepdims=True)
        elif pv == INFINITY or pv == -INFINITY:
            ufunc = np.maximum if pv > 0 else np.minimum
            outk = ufunc.reduce(np.abs(A), axis=axes, keepdims=True)
        elif pv == 0:
            outk = np.add.reduce(np.not_equal(A, 0), axis=axes, keepdims=True, dtype=Aw.dtype)
        else:
            outk = np.power(np.add.reduce(np.power(np.abs(Aw), pv), axis=axes, keepdims=True),
                            1.0 / pv)
        outk = contiguous_result(nd(outk.astype(A.dtype, copy=False)))  # (float16: may be inf)
    cdef bint kd = bool(keepdim)
    out = outk if kd else outk.reshape(tuple([A.shape[i] for i in range(ndim) if i not in axes]))
    cdef TensorBase res = wrap(out)
    r = record_from(OP_NORM, res, (input,))
    if r != NULL:
        save_value(r, 0, A, input)
        keep_saved(r, 1, outk, res)
        keep(&r.aux, (A.shape, axes, kd))
        r.scalar = pv
    return res


def normalize_dim(dim, int ndim, str fname=None):
    """One dim (negative allowed) -> its axis, with PyTorch's IndexError when out of range and
    its TypeError for what is not an `int` (int_param: a float was truncated, a bool and a
    numeric string taken: x.size(1.5) was x.size(1)), under the name of `fname` where given."""
    d = int_param(dim)
    if d is None:
        raise TypeError(f"{fname + '(): ' if fname else ''}argument 'dim' must be int, not "
                        f"{type_name(dim)}")
    dim = d
    return normalize_dims(dim, ndim)[0] if ndim > 0 else normalize_dims(dim, ndim)


max_.__name__ = max_.__qualname__ = "max"
min_.__name__ = min_.__qualname__ = "min"

_REDUCE_OPS = dict(sum=sum, mean=mean, prod=prod, max=max_, min=min_, amax=amax, amin=amin,
                   argmax=argmax, argmin=argmin, count_nonzero=count_nonzero, var=var, std=std,
                   logsumexp=logsumexp, norm=norm)
TENSOR_METHODS.update(_REDUCE_OPS)
TENSOR_METHODS.update(count_nonzero=count_nonzero_method)
TORCH_FUNCTIONS.update(_REDUCE_OPS)
TORCH_FUNCTIONS.update(return_types=return_types)


# -- running sums and products (cumsum, cumprod) ---------------------------------------------------

cdef extern from "scan_kernels.h" nogil:
    void tg_cumsum_f32(const float* x, float* y, double* acc, ptrdiff_t outer, ptrdiff_t n,
                       ptrdiff_t inner)
    void tg_cumsum_f64(const double* x, double* y, double* acc, ptrdiff_t outer, ptrdiff_t n,
                       ptrdiff_t inner)
    void tg_cumprod_f32(const float* x, float* y, double* acc, ptrdiff_t outer, ptrdiff_t n,
                        ptrdiff_t inner)
    void tg_cumprod_f64(const double* x, double* y, double* acc, ptrdiff_t outer, ptrdiff_t n,
                        ptrdiff_t inner)


def _running(object arr, Py_ssize_t axis, bint product):
    """The running sum (product) of arr along axis in C: float32 accumulated in double and
    rounded to float32, float64 in double; + 0 on each sum (cumsum's: scan_kernels.h).  The
    same values as numpy's cumsum / cumprod at that precision (each a left-to-right
    combination), in a C-contiguous result; numpy's accumulate walks every row through its
    generic strided loop (a 64 x 1000 float32 cumsum along dim 1 took 4x PyTorch's time).
    None unless arr is a C-contiguous float32 or float64 array with elements and dims (numpy's
    path then)."""
    if not cnp.PyArray_Check(arr):
        return None
    cdef cnp.ndarray a = <cnp.ndarray>arr
    cdef int t = cnp.PyArray_TYPE(a)
    cdef int nd_ = cnp.PyArray_NDIM(a), j
    if ((t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64) or nd_ == 0 or cnp.PyArray_SIZE(a) == 0
            or not cnp.PyArray_IS_C_CONTIGUOUS(a) or axis < 0 or axis >= nd_):
        return None
    cdef Py_ssize_t outer = 1, inner = 1, n = cnp.PyArray_DIMS(a)[axis]
    for j in range(axis):
        outer *= cnp.PyArray_DIMS(a)[j]
    for j in range(axis + 1, nd_):
        inner *= cnp.PyArray_DIMS(a)[j]
    cdef cnp.ndarray out = <cnp.ndarray>np.empty(arr.shape, dtype=arr.dtype)
    cdef double* acc = NULL
    if inner > 1:
        acc = <double*>malloc(inner * sizeof(double))
        if acc == NULL:
            raise MemoryError()
    cdef void* X = cnp.PyArray_DATA(a)
    cdef void* Y = cnp.PyArray_DATA(out)
    if t == cnp.NPY_FLOAT32 and product:
        tg_cumprod_f32(<const float*>X, <float*>Y, acc, outer, n, inner)
    elif t == cnp.NPY_FLOAT32:
        tg_cumsum_f32(<const float*>X, <float*>Y, acc, outer, n, inner)
    elif product:
        tg_cumprod_f64(<const double*>X, <double*>Y, acc, outer, n, inner)
    else:
        tg_cumsum_f64(<const double*>X, <double*>Y, acc, outer, n, inner)
    free(acc)
    return out


# -- order questions (kthvalue's positions, searchsorted's insertion points) -----------------------

cdef extern from "order_kernels.h" nogil:
    void tg_kth_positions_f32(const float* x, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner,
                              ptrdiff_t k, int64_t* out, float* vs, int64_t* ixs)
    void tg_kth_positions_f64(const double* x, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner,
                              ptrdiff_t k, int64_t* out, double* vs, int64_t* ixs)
    void tg_kth_positions_i64(const int64_t* x, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner,
                              ptrdiff_t k, int64_t* out, int64_t* vs, int64_t* ixs)
    void tg_bisect_f32(const float* b, ptrdiff_t b_row_stride, ptrdiff_t n_b, const float* v,
                       ptrdiff_t rows, ptrdiff_t m, int right, int64_t* out)
    void tg_bisect_f64(const double* b, ptrdiff_t b_row_stride, ptrdiff_t n_b, const double* v,
                       ptrdiff_t rows, ptrdiff_t m, int right, int64_t* out)
    void tg_bisect_i64(const int64_t* b, ptrdiff_t b_row_stride, ptrdiff_t n_b, const int64_t* v,
                       ptrdiff_t rows, ptrdiff_t m, int right, int64_t* out)


cdef object order_kernel_array(object arr):
    """arr as a C-contiguous float32, float64 or int64 array with the same order among its
    values (float16 widened to float32, narrower integers to int64: exact), or None for a dtype
    the kernels do not take (uint64, bool, complex, bfloat16: the callers' numpy path then)."""
    if not cnp.PyArray_Check(arr):
        return None
    cdef int t = cnp.PyArray_TYPE(<cnp.ndarray>arr)
    if t == cnp.NPY_FLOAT32 or t == cnp.NPY_FLOAT64 or t == cnp.NPY_INT64:
        return np.ascontiguousarray(arr)
    if t == cnp.NPY_FLOAT16:
        return np.ascontiguousarray(arr, dtype=np.float32)
    if t in (cnp.NPY_INT8, cnp.NPY_INT16, cnp.NPY_INT32, cnp.NPY_UINT8, cnp.NPY_UINT16,
             cnp.NPY_UINT32):
        return np.ascontiguousarray(arr, dtype=np.int64)
    return None


def _kth_positions_c(object arr, Py_ssize_t k, Py_ssize_t axis):
    """The position along `axis` (kept, size 1) of each row's rank-k element (k from 0), as
    PyTorch's CPU kthvalue picks it: its quickselect run on every row (order_kernels.c), so that
    among equal values the one PyTorch names is named (a row replayed in Python took ~10 ms per
    1000 elements).  None for a dtype the kernel does not take, an empty array or a 0-d one."""
    a = order_kernel_array(arr)
    if a is None or cnp.PyArray_NDIM(<cnp.ndarray>a) == 0 or cnp.PyArray_SIZE(<cnp.ndarray>a) == 0:
        return None
    cdef cnp.ndarray x = <cnp.ndarray>a
    cdef int t = cnp.PyArray_TYPE(x), j, nd_ = cnp.PyArray_NDIM(x)
    if axis < 0 or axis >= nd_:
        return None
    cdef Py_ssize_t outer = 1, inner = 1, n = cnp.PyArray_DIMS(x)[axis]
    if k < 0 or k >= n:
        return None
    for j in range(axis):
        outer *= cnp.PyArray_DIMS(x)[j]
    for j in range(axis + 1, nd_):
        inner *= cnp.PyArray_DIMS(x)[j]
    shape = list((<object>x).shape)
    shape[axis] = 1
    cdef cnp.ndarray out = <cnp.ndarray>np.empty(shape, dtype=np.int64)
    cdef cnp.ndarray values = <cnp.ndarray>np.empty(n, dtype=(<object>x).dtype)
    cdef cnp.ndarray positions = <cnp.ndarray>np.empty(n, dtype=np.int64)
    cdef void* X = cnp.PyArray_DATA(x)
    cdef void* V = cnp.PyArray_DATA(values)
    cdef int64_t* P = <int64_t*>cnp.PyArray_DATA(positions)
    cdef int64_t* O = <int64_t*>cnp.PyArray_DATA(out)
    with nogil:
        if t == cnp.NPY_FLOAT32:
            tg_kth_positions_f32(<const float*>X, outer, n, inner, k, O, <float*>V, P)
        elif t == cnp.NPY_FLOAT64:
            tg_kth_positions_f64(<const double*>X, outer, n, inner, k, O, <double*>V, P)
        else:
            tg_kth_positions_i64(<const int64_t*>X, outer, n, inner, k, O, <int64_t*>V, P)
    return out


def _bisect_c(object rows_b, object rows_v, bint right):
    """PyTorch's binary search of each value of row i of rows_v (2-d) in row i of rows_b (2-d,
    or one row for every row of rows_v) in C (order_kernels.c), as an int64 array of rows_v's
    shape; None when the two differ in dtype or the kernel does not take it (numpy's loop then).
    The probes are PyTorch's, so boundaries holding NaN or out of order give its positions."""
    if not (cnp.PyArray_Check(rows_b) and cnp.PyArray_Check(rows_v)) or rows_b.dtype != rows_v.dtype:
        return None
    b = order_kernel_array(rows_b)
    v = order_kernel_array(rows_v)
    if b is None or v is None or b.ndim != 2 or v.ndim != 2:
        return None
    cdef cnp.ndarray B = <cnp.ndarray>b, Vv = <cnp.ndarray>v
    cdef Py_ssize_t rows = cnp.PyArray_DIMS(Vv)[0], m = cnp.PyArray_DIMS(Vv)[1]
    cdef Py_ssize_t n_b = cnp.PyArray_DIMS(B)[1], stride
    if cnp.PyArray_DIMS(B)[0] == rows:
        stride = n_b
    elif cnp.PyArray_DIMS(B)[0] == 1:
        stride = 0
    else:
        return None
    cdef cnp.ndarray out = <cnp.ndarray>np.empty((rows, m), dtype=np.int64)
    cdef int t = cnp.PyArray_TYPE(B)
    cdef void* BP = cnp.PyArray_DATA(B)
    cdef void* VP = cnp.PyArray_DATA(Vv)
    cdef int64_t* O = <int64_t*>cnp.PyArray_DATA(out)
    with nogil:
        if t == cnp.NPY_FLOAT32:
            tg_bisect_f32(<const float*>BP, stride, n_b, <const float*>VP, rows, m, right, O)
        elif t == cnp.NPY_FLOAT64:
            tg_bisect_f64(<const double*>BP, stride, n_b, <const double*>VP, rows, m, right, O)
        else:
            tg_bisect_i64(<const int64_t*>BP, stride, n_b, <const int64_t*>VP, rows, m, right, O)
    return out


cdef extern from "order_kernels.h" nogil:
    void tg_stl_order_f64(const double* rows, ptrdiff_t n, const int64_t* redo, ptrdiff_t n_redo,
                          int algo, ptrdiff_t k, int sort_head, int cmp, ptrdiff_t width,
                          int64_t* out, void* pairs)
    void tg_stl_order_i64(const int64_t* rows, ptrdiff_t n, const int64_t* redo,
                          ptrdiff_t n_redo, int algo, ptrdiff_t k, int sort_head, int cmp,
                          ptrdiff_t width, int64_t* out, void* pairs)
    void tg_histogram_bins_f32(const float* samples, ptrdiff_t n, ptrdiff_t dims,
                               const float* edges, const ptrdiff_t* n_bins, int64_t* out)
    void tg_histogram_bins_f64(const double* samples, ptrdiff_t n, ptrdiff_t dims,
                               const double* edges, const ptrdiff_t* n_bins, int64_t* out)


def _stl_order_c(object rows, object redo, int algo, Py_ssize_t k, bint sort_head, int cmp,
                 Py_ssize_t width):
    """The positions libstdc++'s std::sort (algo 0), std::partial_sort of the first k (1) or
    std::nth_element at k - 1 then, with sort_head, std::sort of the k - 1 before it (2) leave
    in the first `width` places of each row of `rows` (2-d) listed in `redo`, comparing by cmp
    (0: larger first, NaN above all; 1: smaller first, NaN last; 2: plain `<`), as an int64 array
    (len(redo), width): PyTorch's choice among ties in sort, topk and mode (order_kernels.c; the
    steps in Python, tapegrad/_stl_order.py, took ~1 us per element and level).  None for a
    dtype the kernels do not take (uint64, complex: the Python steps then).  Values are compared
    in float64 (floating dtypes) or int64 (the others), which keeps every order exact."""
    if not cnp.PyArray_Check(rows) or (<cnp.ndarray>rows).ndim != 2:
        return None
    kind = rows.dtype.kind
    if kind == "f":
        values = np.ascontiguousarray(rows, dtype=np.float64)
    elif kind in "biu" and rows.dtype != np.uint64:
        values = np.ascontiguousarray(rows, dtype=np.int64)
    else:
        return None
    cdef cnp.ndarray V = <cnp.ndarray>values
    cdef cnp.ndarray R = <cnp.ndarray>np.ascontiguousarray(redo, dtype=np.int64)
    cdef Py_ssize_t n = cnp.PyArray_DIMS(V)[1], n_redo = cnp.PyArray_SIZE(R)
    if width < 0 or width > n or (algo != 0 and not 0 < k <= n):
        return None
    cdef cnp.ndarray out = <cnp.ndarray>np.empty((n_redo, width), dtype=np.int64)
    cdef cnp.ndarray pairs = <cnp.ndarray>np.empty(2 * max(n, 1), dtype=np.int64)  # 16 B a pair
    cdef void* VP = cnp.PyArray_DATA(V)
    cdef const int64_t* RP = <const int64_t*>cnp.PyArray_DATA(R)
    cdef int64_t* O = <int64_t*>cnp.PyArray_DATA(out)
    cdef void* P = cnp.PyArray_DATA(pairs)
    cdef bint floating = kind == "f"
    with nogil:
        if floating:
            tg_stl_order_f64(<const double*>VP, n, RP, n_redo, algo, k, sort_head, cmp, width,
                             O, P)
        else:
            tg_stl_order_i64(<const int64_t*>VP, n, RP, n_redo, algo, k, sort_head, cmp, width,
                             O, P)
    return out


def _histogram_bins_c(object samples, list edges_per_dim):
    """The flat histogram bin of each row of samples (n, D) over each dimension's edges (1-d
    arrays of samples' dtype, non-decreasing), -1 outside, as an int64 array (order_kernels.c);
    None when the kernel does not take the dtype (float32, float64)."""
    s = order_kernel_array(samples)
    if s is None or s.ndim != 2 or s.dtype.kind != "f" or len(edges_per_dim) != s.shape[1]:
        return None
    edges = np.ascontiguousarray(np.concatenate(edges_per_dim), dtype=s.dtype)
    counts = np.array([e.size - 1 for e in edges_per_dim], dtype=np.intp)
    if counts.size and counts.min() < 1:
        return None
    cdef cnp.ndarray S = <cnp.ndarray>s, E = <cnp.ndarray>edges, K = <cnp.ndarray>counts
    cdef Py_ssize_t n = cnp.PyArray_DIMS(S)[0], dims = cnp.PyArray_DIMS(S)[1]
    cdef cnp.ndarray out = <cnp.ndarray>np.empty(n, dtype=np.int64)
    cdef int t = cnp.PyArray_TYPE(S)
    cdef int64_t* O = <int64_t*>cnp.PyArray_DATA(out)
    cdef const ptrdiff_t* NB = <const ptrdiff_t*>cnp.PyArray_DATA(K)
    if t == cnp.NPY_FLOAT32:
        tg_histogram_bins_f32(<const float*>cnp.PyArray_DATA(S), n, dims,
                              <const float*>cnp.PyArray_DATA(E), NB, O)
    elif t == cnp.NPY_FLOAT64:
        tg_histogram_bins_f64(<const double*>cnp.PyArray_DATA(S), n, dims,
                              <const double*>cnp.PyArray_DATA(E), NB, O)
    else:
        return None
    return out


cdef extern from "order_kernels.h" nogil:
    void tg_running_extreme_f32(const float* x, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner,
                                int maximum, int64_t* out)
    void tg_running_extreme_f64(const double* x, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner,
                                int maximum, int64_t* out)
    void tg_running_extreme_i64(const int64_t* x, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner,
                                int maximum, int64_t* out)


def _running_extreme_c(object arr, Py_ssize_t axis, bint maximum):
    """cummax's (cummin's) positions along axis in one C scan (order_kernels.c), as an int64
    array of arr's shape; None for a dtype the kernel does not take, a 0-d or empty array.
    (numpy's five passes took 8x PyTorch's time for a (256, 512) float32 cummax.)"""
    a = order_kernel_array(arr)
    if a is None or cnp.PyArray_NDIM(<cnp.ndarray>a) == 0 or cnp.PyArray_SIZE(<cnp.ndarray>a) == 0:
        return None
    cdef cnp.ndarray x = <cnp.ndarray>a
    cdef int t = cnp.PyArray_TYPE(x), j, nd_ = cnp.PyArray_NDIM(x)
    if axis < 0 or axis >= nd_:
        return None
    cdef Py_ssize_t outer = 1, inner = 1, n = cnp.PyArray_DIMS(x)[axis]
    for j in range(axis):
        outer *= cnp.PyArray_DIMS(x)[j]
    for j in range(axis + 1, nd_):
        inner *= cnp.PyArray_DIMS(x)[j]
    cdef cnp.ndarray out = <cnp.ndarray>np.empty((<object>x).shape, dtype=np.int64)
    cdef void* X = cnp.PyArray_DATA(x)
    cdef int64_t* O = <int64_t*>cnp.PyArray_DATA(out)
    with nogil:
        if t == cnp.NPY_FLOAT32:
            tg_running_extreme_f32(<const float*>X, outer, n, inner, maximum, O)
        elif t == cnp.NPY_FLOAT64:
            tg_running_extreme_f64(<const double*>X, outer, n, inner, maximum, O)
        else:
            tg_running_extreme_i64(<const int64_t*>X, outer, n, inner, maximum, O)
    return out
