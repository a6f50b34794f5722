# ---------------------------------------------------------------------------------------------
# Neural-network functional ops (tapegrad.nn.functional): softmax, log_softmax, losses, dropout,
# embedding, layer_norm, one_hot, pad; and the records of in-place overwrites (zero_, fill_,
# normal_, uniform_) and of torch.normal, whose Python front ends live in tapegrad/creation.py.
#
# Each op works on numpy arrays directly and appends ONE record with a compiled VJP, named as
# PyTorch names the grad_fn of its output (cross_entropy is two records, as in PyTorch:
# log_softmax, then the loss).  Helpers of this family are prefixed nn_ (one module namespace is
# shared by every op family).  No negative indexing on typed tuples/lists: the core is compiled
# with wraparound off.
# ---------------------------------------------------------------------------------------------

from libc.stdint cimport int64_t


cdef str NN_LEAF_INPLACE = ("a leaf Variable that requires grad is being used in an in-place "
                            "operation.")


cdef str nn_scalar_name(object np_dt):
    """PyTorch's scalar type name of a numpy dtype (Float, Long, ComplexFloat ...)."""
    return scalar_type_name(np.dtype(np_dt))


cdef str nn_size(tuple shape):
    return f"torch.Size({list(shape)})"


cdef int nn_reduction(object reduction) except -1:
    if reduction == "none":
        return NN_RED_NONE
    if reduction == "mean":
        return NN_RED_MEAN
    if reduction == "sum":
        return NN_RED_SUM
    raise ValueError(f"{reduction} is not a valid value for reduction")


cdef object nn_legacy_reduction(object size_average, object reduce, object reduction):
    """PyTorch's handling of the deprecated size_average / reduce arguments."""
    if size_average is None and reduce is None:
        return reduction
    sa = True if size_average is None else size_average
    rd = True if reduce is None else reduce
    ret = "mean" if (sa and rd) else ("sum" if rd else "none")
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' "
                  "instead.", UserWarning, stacklevel=2)
    return ret


cdef object nn_promote(object da, object db):
    """PyTorch's promotion of two dimensioned tensors' dtypes (numpy dtypes)."""
    cdef int ca = np_category(da.num), cb = np_category(db.num)
    if ca == cb:
        return np.promote_types(da, db)
    return da if ca > cb else db


cdef object nn_reduce(object L, int red):
    """Reduce per-element losses L: none (as is), mean (nan when empty) or sum; in L's dtype
    (float16 accumulated in float32, as PyTorch's sum and mean)."""
    if red == NN_RED_NONE:
        return L
    with IeeeResults():
        # PyTorch's order (its losses reduce with .sum() / .mean()) for contiguous float32/64
        s = cascade_reduce(L, tuple(range(L.ndim)), False, L.size if red == NN_RED_MEAN else -1)
        if s is not None:
            return s
        s = np.add.reduce(L, axis=None, dtype=NP_FLOAT32 if L.dtype == np.float16 else None)
        if red == NN_RED_MEAN:
            s = np.true_divide(s, s.dtype.type(L.size))
        return np.asarray(s, dtype=L.dtype)             # (float16 may overflow: inf)


cdef object nn_grad_scale(object g, int red, object count):
    """The adjoint of each per-element loss: g itself (none, sum) or g / count (mean); float16
    divided in float32 (PyTorch's opmath: count may be beyond float16's range)."""
    if red == NN_RED_MEAN:
        if g.dtype == np.float16:
            with IeeeResults():
                return np.true_divide(g.astype(NP_FLOAT32), np.float32(count)).astype(np.float16)
        return np.true_divide(g, count)
    return g


cdef int nn_no_weight_grad(object w, str fname, str arg) except -1:
    if isinstance(w, TensorBase) and fresh(<TensorBase>w) == 0 and (<TensorBase>w)._requires_grad \
            and grad_enabled():
        raise RuntimeError(f"The function '{fname}' is not differentiable with respect to argument "
                           f"'{arg}'. This input cannot have requires_grad True.")
    return 0


cdef int nn_check_tensor(object x, str fname, str arg, int pos) except -1:
    if not isinstance(x, TensorBase):
        raise TypeError(f"{fname}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type_name(x)}")
    return 0


# -- in-place results ------------------------------------------------------------------------
# An op that overwrites a tensor `t` records itself with `t` as its output: t's node moves to the
# new record, which holds the old one as an input.  The old record no longer has an output
# tensor (its `out` is cleared and the reference the tensor held is dropped).

cdef Record* nn_record_inplace(int op, TensorBase t, tuple inputs, Py_ssize_t* old) except? NULL:
    begin_record(len(inputs) + 1)           # indices stay put until the record is appended
    old[0] = t._node
    cdef Record* r = record_from(op, t, inputs)
    if r != NULL:
        history_rewritten(t)
    return r


cdef int nn_finish_inplace(TensorBase t, Py_ssize_t old) except -1:
    """After nn_record_inplace returned a record (and its saved values were kept)."""
    if old < 0 or old == t._node:
        return 0
    if TAPE.recs[old].flags & RF_RETAIN_GRAD:
        TAPE.recs[t._node].flags |= RF_RETAIN_GRAD
    if TAPE.recs[old].out == <PyObject*>t:
        TAPE.recs[old].out = NULL
    TAPE.decref(old)
    return 0


# -- softmax / log_softmax -----------------------------------------------------------------------

cdef bint softmax_rows_layout(object X, int* t, ptrdiff_t* rows, ptrdiff_t* cols) noexcept:
    """True when the C softmax rows take X: a C-contiguous float32/float64 array of at least one
    dim with 1 to TG_SUM_MAX_N columns (its type number, rows and columns in *t, *rows, *cols)."""
    if not kernel_array(X, t) or cnp.PyArray_NDIM(<cnp.ndarray>X) == 0:
        return False
    cdef cnp.ndarray x = <cnp.ndarray>X
    cols[0] = cnp.PyArray_DIMS(x)[cnp.PyArray_NDIM(x) - 1]
    if cols[0] < 1 or cols[0] > TG_SUM_MAX_N:
        return False
    rows[0] = cnp.PyArray_SIZE(x) // cols[0]
    return True


cdef object nn_softmax_rows_c(object X, bint log):
    """(log_)softmax over the last axis in C (kernels.c), or None unless the rows take X
    (softmax_rows_layout; then the numpy formula, nn_softmax_numpy)."""
    cdef int t = -1
    cdef ptrdiff_t rows, cols
    if not softmax_rows_layout(X, &t, &rows, &cols):
        return None
    cdef cnp.ndarray x = <cnp.ndarray>X
    cdef cnp.ndarray out = <cnp.ndarray>cnp.PyArray_SimpleNew(cnp.PyArray_NDIM(x),
                                                              cnp.PyArray_DIMS(x), t)
    if t == cnp.NPY_FLOAT64:
        tg_softmax_rows_f64(log, rows, cols, <const double*>cnp.PyArray_DATA(x),
                            <double*>cnp.PyArray_DATA(out))
    else:
        tg_softmax_rows_f32(log, rows, cols, <const float*>cnp.PyArray_DATA(x),
                            <float*>cnp.PyArray_DATA(out))
    return out


cdef object nn_softmax_grad_rows_c(object G, object Y, bint log):
    """The VJP of (log_)softmax over the last axis in C, or None (see nn_softmax_rows_c)."""
    cdef int tg_ = -1, ty = -1
    cdef ptrdiff_t rows, cols
    if not softmax_rows_layout(Y, &ty, &rows, &cols) or not kernel_array(G, &tg_) or tg_ != ty:
        return None
    cdef cnp.ndarray g = <cnp.ndarray>G, y = <cnp.ndarray>Y
    if not same_shape(g, y):
        return None
    cdef cnp.ndarray out = <cnp.ndarray>cnp.PyArray_SimpleNew(cnp.PyArray_NDIM(y),
                                                              cnp.PyArray_DIMS(y), ty)
    if ty == cnp.NPY_FLOAT64:
        tg_softmax_grad_rows_f64(log, rows, cols, <const double*>cnp.PyArray_DATA(g),
                                 <const double*>cnp.PyArray_DATA(y), <double*>cnp.PyArray_DATA(out))
    else:
        tg_softmax_grad_rows_f32(log, rows, cols, <const float*>cnp.PyArray_DATA(g),
                                 <const float*>cnp.PyArray_DATA(y), <float*>cnp.PyArray_DATA(out))
    return out


cdef object NN_FLOAT16 = np.dtype(np.float16)


cdef object nn_softmax_grad_value(object g, object y, object axis, bint log):
    """The VJP of (log_)softmax along `axis`: g the adjoint (y's dtype), y the saved output.  The
    graph VJP (create_graph) takes its values from here too, so both agree to the bit."""
    out = nn_softmax_grad_rows_c(g, y, log) if axis == y.ndim - 1 else None
    if out is not None:
        return out
    if y.dtype == NN_FLOAT16 and g.dtype == NN_FLOAT16:
        # half is computed in float and rounded once, as PyTorch's (a float16 sum of thousands
        # of adjoints loses their digits)
        return nn_softmax_grad_value(g.astype(NP_FLOAT32), y.astype(NP_FLOAT32), axis,
                                     log).astype(NN_FLOAT16)
    # PyTorch's formulas.  Its kernel sums a last-dim row from the row's elements (as the C
    # kernel here, tg_softmax_grad_rows_*), any other dim into a +0 accumulator: an all -0 adjoint
    # gives +0 there and -0 here, so the identity is -0 for the last dim, numpy's +0 otherwise.
    zero = -0.0 if axis == y.ndim - 1 else 0.0
    if log:
        return g - np.exp(y) * np.add.reduce(g, axis=axis, keepdims=True, initial=zero)
    return y * (g - np.add.reduce(g * y, axis=axis, keepdims=True, initial=zero))


cdef object nn_softmax_grad(Record* r, object g, bint log):
    y = <object>r.saved[0]
    axis, in_dt = <tuple>r.aux
    if g.dtype != y.dtype:
        g = g.astype(y.dtype)
    out = nd(nn_softmax_grad_value(g, y, axis, log))        # (an array also for 0-d input)
    return out if in_dt is None else out.astype(in_dt)


cdef object vjp_softmax(Record* r, object g):
    return nn_softmax_grad(r, g, False)


cdef object vjp_log_softmax(Record* r, object g):
    return nn_softmax_grad(r, g, True)


OP_SOFTMAX = register_op("SoftmaxBackward0", vjp_softmax)
OP_LOG_SOFTMAX = register_op("LogSoftmaxBackward0", vjp_log_softmax)


cdef object nn_softmax_numpy(object C, object axis, bint log):
    """(log_)softmax of a floating array along `axis` (any layout): the max is subtracted first."""
    with IeeeResults():
        if C.size == 0:
            return np.array(C, copy=True)
        m = np.maximum.reduce(C, axis=axis, keepdims=True)
        shifted = C - m                                             # stable: exp(<= 0)
        if log:
            return shifted - np.log(np.add.reduce(np.exp(shifted), axis=axis, keepdims=True))
        e = np.exp(shifted)
        return e / np.add.reduce(e, axis=axis, keepdims=True)


cdef object nn_softmax_value(object A, object axis, bint log):
    """(log_)softmax of a floating array along `axis` (() for a 0-d one), in A's dtype: the
    forward of the eager op and of its replay step."""
    C = A.astype(NP_FLOAT32) if A.dtype.itemsize < 4 else A       # half: computed in float
    cdef int ndim = A.ndim
    if log and A.dtype == NN_FLOAT16 and ndim > 0 and axis == ndim - 1 and A.size:
        # PyTorch's float16 last-dim kernel keeps each row's sum of exponentials, and its log,
        # in float16 (measured: log_softmax([-20, 0.33, 7])[2] is -2**-10 there, not -0.001267)
        with IeeeResults():
            shifted = C - np.maximum.reduce(C, axis=axis, keepdims=True)
            total = np.add.reduce(np.exp(shifted), axis=axis, keepdims=True)
            log_total = np.log(total.astype(NN_FLOAT16).astype(NP_FLOAT32))
            y = shifted - log_total.astype(NN_FLOAT16).astype(NP_FLOAT32)
        return contiguous_result(nd(y.astype(A.dtype)))
    y = nn_softmax_rows_c(C, log) if ndim > 0 and axis == ndim - 1 else None
    if y is None:
        y = nn_softmax_numpy(C, axis, log)
    return contiguous_result(nd(y.astype(A.dtype, copy=False)))    # PyTorch's layout


cdef object replay_softmax(Record* r, tuple ins, object attrs):
    """(log_)softmax's replay step (replay_fn): attrs = (axis, log), the record as
    nn_softmax_forward fills it (a float input without a dtype argument)."""
    axis, log = attrs
    out = nn_softmax_value(ins[0], axis, log)
    r.op = OP_LOG_SOFTMAX if log else OP_SOFTMAX
    keep(&r.saved[0], out)
    keep(&r.aux, (axis, None))
    return out


cdef object capture_softmax(TensorBase input, object dim, bint log):
    """(log_)softmax of a float tensor without a dtype argument under a capture: run eagerly,
    noted as its replay step (replay_softmax)."""
    CAPTURE.depth += 1
    try:
        res = nn_softmax_forward(input, dim, None, log)
    finally:
        CAPTURE.depth -= 1
    cdef int ndim = input._array.ndim
    axis = normalize_dims(int(dim), ndim)[0] if ndim > 0 else ()
    capture_op(OP_LOG_SOFTMAX if log else OP_SOFTMAX, (input,), 1, (axis, log), <TensorBase>res)
    return res


cdef object nn_softmax_forward(TensorBase input, object dim, object dt, bint log):
    A = input._array
    cdef int ndim = A.ndim
    d = int_param(dim)                  # (a 0-d integer tensor is a dim, as in PyTorch)
    if d is None:
        raise TypeError(f"{'log_softmax' if log else 'softmax'}(): argument 'dim' (position 2) "
                        f"must be int, not {type_name(dim)}")
    axes = normalize_dims(d, ndim)
    axis = axes[0] if ndim > 0 else ()
    if dt is not None:
        target = to_np_dtype(dt, 'log_softmax' if log else 'softmax')
        if A.dtype.kind == "c" and target.kind != "c":
            # A complex input cast to a real dtype: the cast is recorded first (PyTorch's
            # ToCopyBackward0, safe for complex values) so the gradient reaches the complex input
            # as its real part; recording softmax on the complex input itself was refused.
            return nn_softmax_forward(input.to(dt), dim, None, log)
        A = A.astype(target, copy=False)
    if A.dtype.kind != "f" and A.size == 0:
        # PyTorch returns an empty input before its kernels check the dtype: an empty result
        # of the input's dtype (integers and bool included), nothing to record
        return wrap(np.empty_like(A))
    if A.dtype.kind != "f":
        last = ndim == 0 or axis == ndim - 1
        kernel = (("log_softmax" if log else "softmax") +
                  ("_lastdim_kernel_impl" if last else "_kernel_impl"))
        raise NotImplementedError(f'"{kernel}" not implemented for \'{nn_scalar_name(A.dtype)}\'')
    out = nn_softmax_value(A, axis, log)
    cdef TensorBase res = wrap(out)
    cdef Record* r = record_from(OP_LOG_SOFTMAX if log else OP_SOFTMAX, res, (input,))
    if r != NULL:
        keep_saved(r, 0, out, res)
        keep(&r.aux, (axis, input._array.dtype if input._array.dtype != out.dtype else None))
    return res


cdef int nn_implicit_dim(str name, int ndim, object stacklevel) except -1:
    # PyTorch's _stacklevel (3) counts its two Python frames (the dim helper, F.softmax); the
    # compiled F.softmax has none, so the user's line is 2 levels nearer.
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", UserWarning,
                  stacklevel=max(1, int(stacklevel) - 2))
    return 0 if ndim == 0 or ndim == 1 or ndim == 3 else 1


# torch.softmax's and Tensor.softmax's dim when the call gives none (required: an error).  None
# given is another error, the parser's for its `int dim` (F.softmax's dim=None, the implicit dim,
# is F.softmax's own: it never reaches these entries so).
cdef object NO_SOFTMAX_DIM = dim_not_given()


cdef object nn_softmax_dim(str fname, object dim, object axis):
    """softmax's dim, also given as numpy's `axis` (torch.softmax and Tensor.softmax accept it;
    F.softmax does not); it is required."""
    if dim is None:
        raise TypeError(f"{fname}(): argument 'dim' must be int, not NoneType")
    dim = dim_alias(fname, None if dim is NO_SOFTMAX_DIM else dim, axis)
    if dim is None:
        raise TypeError(f'{fname}() missing 1 required positional arguments: "dim"')
    return dim


def softmax(TensorBase input, dim=NO_SOFTMAX_DIM, dtype=None, *, axis=None):
    """softmax(input, dim, dtype=None): exp(x) / sum(exp(x)) along `dim` (also `axis`; the max is
    subtracted first)."""
    if dim is None or dim is NO_SOFTMAX_DIM or axis is not None:
        dim = nn_softmax_dim("softmax", dim, axis)
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        if dtype is None and input._array.dtype.kind == "f":
            return capture_softmax(input, dim, False)
        return capture_call(softmax, (input, dim, dtype), None)
    return softmax_eager(input, dim, dtype)


cdef object softmax_eager(TensorBase input, dim, dtype=None):
    return nn_softmax_forward(input, dim, dtype, False)


def log_softmax(TensorBase input, dim=NO_SOFTMAX_DIM, dtype=None, *, axis=None):
    """log_softmax(input, dim, dtype=None): x - logsumexp(x) along `dim` (also `axis`), computed
    stably."""
    if dim is None or dim is NO_SOFTMAX_DIM or axis is not None:
        dim = nn_softmax_dim("log_softmax", dim, axis)
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        if dtype is None and input._array.dtype.kind == "f":
            return capture_softmax(input, dim, True)
        return capture_call(log_softmax, (input, dim, dtype), None)
    return log_softmax_eager(input, dim, dtype)


cdef object log_softmax_eager(TensorBase input, dim, dtype=None):
    return nn_softmax_forward(input, dim, dtype, True)


cdef object real_tensor_read(object input):
    """input read as a tapegrad tensor when it is a real torch tensor (a library imported the
    real torch: tapegrad/_real_torch.py), else input itself.  These entries call the input's
    own methods, as PyTorch's Python functions do, which for a real tensor ran the real op and
    returned a real tensor."""
    from tapegrad._real_torch import real_tensor_or_item
    return real_tensor_or_item(input)


cdef object nn_softmax_by_method(object input, str method, dim, _stacklevel, dtype):
    # PyTorch's F.softmax/F.log_softmax read `input.dim()` (no dim given) and call
    # `input.softmax(dim)` / `input.log_softmax(dim)`: a non-tensor (an int, a list, an ndarray)
    # fails with AttributeError naming that method, and an object that has the methods works.
    if dim is None:
        dim = nn_implicit_dim(method, input.dim(), _stacklevel)
    if dtype is None:
        return getattr(input, method)(dim)
    return getattr(input, method)(dim, dtype=dtype)


def functional_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """F.softmax(input, dim=None, _stacklevel=3, dtype=None).  Without `dim`, PyTorch's legacy
    choice (0 for 0-, 1- and 3-d inputs, else 1) with its deprecation warning."""
    if not isinstance(input, TensorBase):
        input = real_tensor_read(input)
        if not isinstance(input, TensorBase):
            return nn_softmax_by_method(input, "softmax", dim, _stacklevel, dtype)
    if dim is None:
        dim = nn_implicit_dim("softmax", (<TensorBase>input)._array.ndim, _stacklevel)
    return softmax(input, dim, dtype)


def functional_log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """F.log_softmax(input, dim=None, _stacklevel=3, dtype=None) (see functional_softmax)."""
    if not isinstance(input, TensorBase):
        input = real_tensor_read(input)
        if not isinstance(input, TensorBase):
            return nn_softmax_by_method(input, "log_softmax", dim, _stacklevel, dtype)
    if dim is None:
        dim = nn_implicit_dim("log_softmax", (<TensorBase>input)._array.ndim, _stacklevel)
    return log_softmax(input, dim, dtype)


# -- nll_loss ------------------------------------------------------------------------------------
# Inputs are viewed as X3 (N, C, K) with targets (N, K): K = 1 for (C,) and (N, C) inputs, the
# product of the spatial dims otherwise.  Saved: the clamped targets tc, the masked target weights
# wv (0 where ignored) and the valid mask; aux: (X3 shape, input shape, reduction, total weight).

cdef object nn_index_grids(Py_ssize_t N, Py_ssize_t K):
    return (np.arange(N).reshape(N, 1), np.arange(K).reshape(1, K))


cdef int save_nll_target(Record* r, object tc, object target) except -1:
    """Slot 0 of an nll record: the class of each sample as its VJP reads them (tc, an array of
    nll's own, 0 where ignored), shaped as the target tensor and saved under the target's
    version, as PyTorch's node saves the target: a write into the target before backward
    raises its error (the gradient, read from tc, stayed right, but PyTorch raises).  The VJPs
    take it back to (N, K)."""
    if isinstance(target, TensorBase):
        r.flags |= RF_SAVED_NO_HISTORY     # (<< 0: slot 0; names no node, record.pxi)
        return keep_saved(r, 0, tc.reshape((<TensorBase>target)._array.shape),
                          <TensorBase>target)
    keep(&r.saved[0], tc)
    return 0


cdef object nn_nll_grad(tuple aux, object tc, object wv, object valid, object g, object dt):
    """(N, C, K) gradient of the nll part: -w[t] * g at the targets, 0 elsewhere."""
    shape3, red, total = aux[0], aux[2], aux[3]
    N, K = shape3[0], shape3[2]
    tc = tc.reshape(N, K)                   # (saved in the target's shape: save_nll_target)
    if red == NN_RED_NONE:
        gs = g.reshape(N, K)
    elif red == NN_RED_MEAN:
        gs = np.true_divide(g, total)
    else:
        gs = g
    vals = np.multiply(np.negative(wv), gs, dtype=dt)      # fresh (N, K)
    vals[np.logical_not(valid)] = 0                         # exact zeros where ignored
    gx = np.zeros(shape3, dtype=dt)
    if shape3[1]:                           # (no class: nothing to scatter, see nn_nll_prepare)
        grids = nn_index_grids(N, K)
        gx[grids[0], tc, grids[1]] = vals
    return gx, gs


cdef object nn_nll_grad_rows_c(tuple aux, object tc, object wv, object valid, object g):
    """The (N, C) gradient of a reduced nll_loss of (N, C) float32/float64 input, in C, or None:
    -wv[n] * g / total (mean) or -wv[n] * g (sum) at each valid target, 0 elsewhere; the same
    operations, in the same dtype, as nn_nll_grad."""
    cdef int t = -1, tgd = -1
    in_shape = <tuple>aux[1]
    cdef int red = aux[2]
    if (red == NN_RED_NONE or len(in_shape) != 2 or not kernel_array(wv, &t)
            or not kernel_array(g, &tgd) or tgd != t or cnp.PyArray_SIZE(<cnp.ndarray>g) != 1):
        return None
    cdef Py_ssize_t N = in_shape[0], C = in_shape[1]
    cdef cnp.ndarray gx = <cnp.ndarray>np.zeros(in_shape, dtype=wv.dtype)
    cdef const int64_t* tp = <const int64_t*>cnp.PyArray_DATA(<cnp.ndarray>tc)
    cdef const char* vp = <const char*>cnp.PyArray_DATA(<cnp.ndarray>valid)
    cdef double gd
    cdef float gf
    if t == cnp.NPY_FLOAT64:
        gd = (<const double*>cnp.PyArray_DATA(<cnp.ndarray>g))[0]
        if red == NN_RED_MEAN:
            gd = gd / <double>(aux[3])
        nll_grad_rows(tp, vp, <const double*>cnp.PyArray_DATA(<cnp.ndarray>wv), gd, N, C,
                      <double*>cnp.PyArray_DATA(gx))
    else:
        gf = (<const float*>cnp.PyArray_DATA(<cnp.ndarray>g))[0]
        if red == NN_RED_MEAN:
            gf = gf / <float>(aux[3])
        nll_grad_rows(tp, vp, <const float*>cnp.PyArray_DATA(<cnp.ndarray>wv), gf, N, C,
                      <float*>cnp.PyArray_DATA(gx))
    return gx


cdef void nll_grad_rows(const int64_t* target, const char* valid, const real_t* w, real_t g,
                        Py_ssize_t N, Py_ssize_t C, real_t* gx) noexcept nogil:
    """-w[n] * g at each valid row's target in the zeroed (N, C) gradient gx."""
    cdef Py_ssize_t n
    for n in range(N):
        if valid[n]:
            gx[n * C + target[n]] = -w[n] * g


cdef object vjp_nll(Record* r, object g):
    aux = <tuple>r.aux
    wv = <object>r.saved[1]
    gx = nn_nll_grad_rows_c(aux, <object>r.saved[0], wv, <object>r.saved[2], g)
    if gx is not None:
        return gx
    gx, gs = nn_nll_grad(aux, <object>r.saved[0], wv, <object>r.saved[2], g, wv.dtype)
    return gx.reshape(aux[1])


OP_NLL = register_op("NllLossBackward0", vjp_nll)
OP_NLL2D = register_op("NllLoss2DBackward0", vjp_nll)
OP_NLL_VIEW = register_op("ViewBackward0", vjp_nll)    # N-d, reduction='none'


cdef object nn_int_argument(object value, str fn, str name, int position):
    """An argument PyTorch's parser takes as an int only (ignore_index, padding_idx,
    num_classes): a float, a bool or a string is its TypeError, where int() would have turned
    1.5 into 1 (or "3" into 3) and computed with it."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be int, not "
                        f"{type_name(value)}")
    return value.__index__()


cdef object nn_nll_rows_c(object X, object T, object ignore_index):
    """nn_nll_prepare's pieces for (N, C) C-contiguous float32/float64 input, 1-D contiguous
    int64 targets and no class weights, in one C loop; None for any other layout."""
    cdef int t = -1
    if not kernel_array(X, &t) or not cnp.PyArray_Check(T):
        return None
    cdef cnp.ndarray x = <cnp.ndarray>X, tt = <cnp.ndarray>T
    if (cnp.PyArray_TYPE(tt) != cnp.NPY_INT64 or cnp.PyArray_NDIM(tt) != 1
            or not cnp.PyArray_IS_C_CONTIGUOUS(tt)):
        return None
    cdef cnp.npy_intp dims[2]
    cdef Py_ssize_t N = cnp.PyArray_DIMS(x)[0], C = cnp.PyArray_DIMS(x)[1], count = 0, bad
    cdef int64_t ignore = ignore_index
    dims[0] = N
    dims[1] = 1
    cdef cnp.ndarray tc = <cnp.ndarray>cnp.PyArray_SimpleNew(2, dims, cnp.NPY_INT64)
    cdef cnp.ndarray valid = <cnp.ndarray>cnp.PyArray_SimpleNew(2, dims, cnp.NPY_BOOL)
    cdef cnp.ndarray wv = <cnp.ndarray>cnp.PyArray_SimpleNew(2, dims, t)
    cdef cnp.ndarray losses = <cnp.ndarray>cnp.PyArray_SimpleNew(2, dims, t)
    cdef const int64_t* tp = <const int64_t*>cnp.PyArray_DATA(tt)
    cdef int64_t* tcp = <int64_t*>cnp.PyArray_DATA(tc)
    cdef char* vp = <char*>cnp.PyArray_DATA(valid)
    if t == cnp.NPY_FLOAT64:
        bad = nll_rows(<const double*>cnp.PyArray_DATA(x), tp, N, C, ignore, tcp, vp,
                       <double*>cnp.PyArray_DATA(wv), <double*>cnp.PyArray_DATA(losses), &count)
    else:
        bad = nll_rows(<const float*>cnp.PyArray_DATA(x), tp, N, C, ignore, tcp, vp,
                       <float*>cnp.PyArray_DATA(wv), <float*>cnp.PyArray_DATA(losses), &count)
    if bad >= 0:
        raise IndexError(f"Target {tp[bad]} is out of bounds.")
    total = np.asarray(count, dtype=x.dtype)        # the summed weights: the valid count
    return (N, C, 1), tc, valid, wv, losses, total, (N,), C, None


cdef Py_ssize_t nll_rows(const real_t* x, const int64_t* target, Py_ssize_t N, Py_ssize_t C,
                         int64_t ignore, int64_t* tc, char* valid, real_t* w, real_t* losses,
                         Py_ssize_t* count) noexcept nogil:
    """The rows of nn_nll_rows_c: each row's target (0 where ignored), validity, weight (1 or 0)
    and loss -x[n, target]; *count = the valid rows.  Returns the first row whose target is out
    of bounds, or -1."""
    cdef Py_ssize_t n
    cdef int64_t k
    for n in range(N):
        k = target[n]
        if k == ignore:
            tc[n] = 0
            valid[n] = 0
            w[n] = 0
            losses[n] = 0
            continue
        if k < 0 or k >= C:
            return n
        tc[n] = k
        valid[n] = 1
        w[n] = 1
        losses[n] = -x[n * C + k]
        count[0] += 1
    return -1


cdef tuple nn_nll_prepare(TensorBase input, object target, object weight, object ignore_index):
    """Validate as PyTorch's nll_loss_nd; returns the pieces of the loss (see the section note)."""
    A = input._array
    Tt = (<TensorBase>target)._array
    cdef int ndim = A.ndim
    if ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {ndim})")
    tb = Tt.shape[0] if Tt.ndim > 0 else 0
    if ndim != 1 and A.shape[0] != tb:
        raise ValueError(f"Expected input batch_size ({A.shape[0]}) to match target batch_size "
                         f"({tb}).")
    if ndim <= 2:
        if Tt.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if ndim == 1 and Tt.ndim == 1 and Tt.shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: "
                             f"{Tt.shape[0]}")
    elif ndim == 4:
        if Tt.ndim != 3:
            raise RuntimeError("only batches of spatial targets supported (3D tensors) but got "
                               f"targets of dimension: {Tt.ndim}")
        if (Tt.shape[0] != A.shape[0] or Tt.shape[1] != A.shape[2]
                or Tt.shape[2] != A.shape[3]):
            raise RuntimeError(f"size mismatch (got input: {list(A.shape)} , target: "
                               f"{list(Tt.shape)}")
    else:
        expected = (A.shape[0],) + tuple(A.shape)[2:]
        if tuple(Tt.shape) != expected:
            raise RuntimeError(f"Expected target size {list(expected)}, got {list(Tt.shape)}")
        if A.shape[1] == 0 and Tt.size:
            # PyTorch views input as [N, C, 1, -1] (with no elements the -1 resolves to 0) and
            # target as [N, 1, -1], then compares them as a 4-d loss does
            raise RuntimeError(f"size mismatch (got input: [{A.shape[0]}, 0, 0, 0] , target: "
                               f"[{A.shape[0]}, 1, {Tt.size // A.shape[0]}]")
    C = A.shape[0] if ndim == 1 else A.shape[1]
    fname = "nll_loss_forward" if ndim <= 2 else "nll_loss2d_forward"
    nn_no_weight_grad(weight, fname, "weight")              # PyTorch's autograd layer checks first
    w = None
    if weight is not None:
        nn_check_tensor(weight, "nll_loss", "weight", 3)
        w = (<TensorBase>weight)._array
        if w.ndim != 1 or w.size != C:
            raise RuntimeError(f"weight tensor should be defined either for all {C} classes or no "
                               f"classes but got weight tensor of shape: {list(w.shape)}")
    if Tt.dtype != NP_INT64 and Tt.dtype != np.uint8:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{nn_scalar_name(Tt.dtype)}")
    if A.dtype.kind != "f":
        frame = "nll_loss_out_frame" if ndim <= 2 else "nll_loss2d_forward_out_frame"
        raise NotImplementedError(f'"{frame}" not implemented for \'{nn_scalar_name(A.dtype)}\'')
    if w is not None and w.dtype != A.dtype:
        raise RuntimeError(f"expected scalar type {nn_scalar_name(A.dtype)} but found "
                           f"{nn_scalar_name(w.dtype)}")
    if ndim == 2 and w is None:
        fast = nn_nll_rows_c(A, Tt, ignore_index)
        if fast is not None:
            return fast
    N = 1 if ndim == 1 else A.shape[0]
    K = 1
    for s in tuple(A.shape)[2:]:
        K *= s
    X3 = A.reshape(N, C, K)
    T2 = Tt.astype(NP_INT64).reshape(N, K)
    valid = T2 != ignore_index
    bad = valid & ((T2 < 0) | (T2 >= C))
    if bad.any():
        raise IndexError(f"Target {T2[bad].flat[0]} is out of bounds.")
    tc = np.where(valid, T2, 0)
    grids = nn_index_grids(N, K)
    if C == 0:
        # no class: every target is ignored (any other raised above), nothing is picked
        picked = np.zeros((N, K), dtype=A.dtype)
    else:
        picked = X3[grids[0], tc, grids[1]]
    if w is None or C == 0:
        wv = valid.astype(A.dtype)
    else:
        wv = np.where(valid, w[tc], 0).astype(A.dtype, copy=False)
    with IeeeResults():
        losses = np.where(valid, np.negative(picked) * wv, 0).astype(A.dtype, copy=False)
        # the class weights summed as the losses are (nn_nll_value); without weights, the count
        total = nll_sum(wv, valid) if ndim <= 2 and w is not None else None
        if total is None:
            total = np.asarray(np.add.reduce(wv, axis=None), dtype=A.dtype)
    out_shape = () if ndim == 1 else (A.shape[0],) + tuple(A.shape)[2:]
    return X3.shape, tc, valid, wv, losses, total, out_shape, C, w


cdef enum:
    # The order nn_nll_value sums per-sample losses in, as PyTorch does for each caller:
    NLL_ORDER = 0       # nll_loss of a 1-D/2-D input: its own cascade, ignored targets skipped
    SUM_ORDER = 1       # a plain .sum() (cross_entropy's smoothing term): the cascade sum
    NUMPY_ORDER = 2     # nll_loss of an N-d input: PyTorch's nll_loss2d order is not reproduced


cdef object nn_nll_value(object losses, object total, object out_shape, int red, int order,
                         object valid):
    """The loss from per-sample `losses` (0 where a target is ignored; `valid` marks the others)
    by reduction `red`, summed in `order` and divided by `total` (the summed class weights) for
    a mean, in the loss dtype."""
    if red == NN_RED_NONE:
        return losses.reshape(out_shape)
    s = None
    if order == NLL_ORDER:
        s = nll_sum(losses, valid)
    elif order == SUM_ORDER:
        s = cascade_reduce(losses, tuple(range(losses.ndim)), False)
    with IeeeResults():
        if s is None:
            s = np.add.reduce(losses, axis=None)
        if red == NN_RED_MEAN:
            s = np.true_divide(s, total)
    return np.asarray(s, dtype=losses.dtype)


cdef object replay_nll(Record* r, tuple ins, object attrs):
    """nll_loss's replay step (replay_fn) for the (N, C) input, int64 targets and no class
    weights that nn_nll_rows_c takes (what capture_cross_entropy notes): ins = (input, target),
    attrs = (ignore_index, reduction); the record as nn_nll_loss fills it."""
    ignore_index, red = attrs
    X = ins[0]
    fast = nn_nll_rows_c(X, ins[1], ignore_index)
    if fast is None:
        raise RuntimeError("tapegrad.compile: nll_loss's replay step met operands its capture "
                           f"did not (input {X.dtype} {X.shape}, target {ins[1].dtype} "
                           f"{ins[1].shape})")
    shape3, tc, valid, wv, losses, total, out_shape, C, w = fast
    out = nn_nll_value(losses, total, out_shape, red, NLL_ORDER, valid)
    r.op = OP_NLL
    keep(&r.saved[0], tc)
    keep(&r.saved[1], wv)
    keep(&r.saved[2], valid)
    keep(&r.aux, (shape3, X.shape, red, total))
    return out


register_replay(OP_NLL, replay_nll)
register_replay(OP_LOG_SOFTMAX, replay_softmax)
register_replay(OP_SOFTMAX, replay_softmax)


cdef object nn_nll_loss(TensorBase input, object target, object weight, object ignore_index,
                        int red):
    shape3, tc, valid, wv, losses, total, out_shape, C, w = nn_nll_prepare(
        input, target, weight, ignore_index)
    cdef int ndim = input._array.ndim
    out = nn_nll_value(losses, total, out_shape, red, NLL_ORDER if ndim <= 2 else NUMPY_ORDER,
                       valid)
    cdef TensorBase res = wrap(out)
    cdef int op = OP_NLL if ndim <= 2 else (OP_NLL_VIEW if red == NN_RED_NONE and ndim != 4
                                            else OP_NLL2D)
    cdef Record* r = record_from(op, res, (input,))
    if r != NULL:
        save_nll_target(r, tc, target)
        keep(&r.saved[1], wv)
        keep(&r.saved[2], valid)
        keep(&r.aux, (shape3, input._array.shape, red, total))
    return res


def nll_loss(TensorBase input, target, weight=None, size_average=None, ignore_index=-100,
             reduce=None, reduction="mean"):
    """Negative log likelihood of class-index targets: -weight[t] * input[n, t, ...].

    input (C,), (N, C) or (N, C, d1, ...); target (), (N,) or (N, d1, ...) of int64 (or uint8).
    Targets equal to ignore_index contribute nothing; 'mean' divides by the summed weights of the
    other targets."""
    nn_check_tensor(target, "nll_loss_nd", "target", 2)
    reduction = nn_legacy_reduction(size_average, reduce, reduction)
    cdef int red = nn_reduction(reduction)
    ignore_index = nn_int_argument(ignore_index, "nll_loss_nd", "ignore_index", 5)
    if (CAPTURE is not None and capturing() and CAPTURE.depth == 0 and weight is None
            and nll_rows_replayable(input._array, (<TensorBase>target)._array)):
        CAPTURE.depth += 1          # compile: noted as its replay step (replay_nll)
        try:
            res = nn_nll_loss(input, target, None, ignore_index, red)
        finally:
            CAPTURE.depth -= 1
        capture_op(OP_NLL, (input, target), 1, (ignore_index, red), <TensorBase>res)
        return res
    return nn_nll_loss(input, target, weight, ignore_index, red)


cdef bint nll_rows_replayable(object X, object T) except -1:
    """Whether nll_loss's replay step takes these operands: what nn_nll_rows_c computes, a
    C-contiguous (N, C) float32/float64 input and 1-D contiguous int64 targets."""
    return (cnp.PyArray_NDIM(<cnp.ndarray>X) == 2 and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>X)
            and (cnp.PyArray_TYPE(<cnp.ndarray>X) == cnp.NPY_FLOAT32
                 or cnp.PyArray_TYPE(<cnp.ndarray>X) == cnp.NPY_FLOAT64)
            and nll_target_replayable(T))


cdef bint nll_target_replayable(object T) except -1:
    """Whether nn_nll_rows_c takes class indices T: 1-D contiguous int64."""
    return (cnp.PyArray_TYPE(<cnp.ndarray>T) == cnp.NPY_INT64
            and cnp.PyArray_NDIM(<cnp.ndarray>T) == 1
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>T))


# -- cross_entropy ---------------------------------------------------------------------------------
# Class-index targets: log_softmax, then nll_loss (two records, as PyTorch); with label smoothing
# the second record (PyTorch's AddBackward0) combines (1 - ls) * nll and ls / C * the smoothing
# term.  Class-probability targets: log_softmax, then one record for -sum(target * logp * w).

cdef object vjp_ce_smooth(Record* r, object g):
    aux = <tuple>r.aux
    shape3, in_shape, red, total, ls, C, wvec = aux
    valid = <object>r.saved[2]
    wv = <object>r.saved[1]
    dt = wv.dtype
    gx, gs = nn_nll_grad(aux, <object>r.saved[0], wv, valid, g, dt)
    N, K = shape3[0], shape3[2]
    base = np.zeros((N, K), dtype=dt)
    base[...] = gs
    base[np.logical_not(valid)] = 0
    base = base.reshape(N, 1, K)
    coef = dt.type(smoothing_share(ls, C))
    if wvec is None:
        sm = np.negative(base * coef)
    else:
        sm = np.negative(base * (wvec.reshape(1, C, 1) * coef))
    out = gx * dt.type(1 - ls) + sm
    return out.reshape(in_shape)


cdef object vjp_ce_probs(Record* r, object g):
    logp = <object>r.saved[0]
    tgt = <object>r.saved[1]
    wb = <object>r.saved[2] if r.saved[2] != NULL else None
    red, count, ls, gshape, dt_p, dt_t, other_axes, wshape, dt_w = <tuple>r.aux
    if red == NN_RED_NONE:
        gs = g.reshape(gshape)
    elif red == NN_RED_MEAN:
        gs = np.true_divide(g, count)
    else:
        gs = g
    gsw = gs * wb if wb is not None else gs
    gp = gt = gw = None
    if needs_grad(r, 0):
        gp = fit_grad(nd(np.negative(tgt * gsw)), None, dt_p)
    if needs_grad(r, 1):
        gt = np.negative(logp * gsw)
        if ls > 0:
            gt = gt * (1 - ls)
        gt = fit_grad(nd(gt), None, dt_t)
    if r.n_in > 2 and needs_grad(r, 2):
        gw = np.add.reduce(np.negative(logp * tgt * gs), axis=other_axes).reshape(wshape)
        gw = fit_grad(nd(gw), None, dt_w)
        return (gp, gt, gw)
    if r.n_in > 2:
        return (gp, gt, None)
    return (gp, gt)


OP_CE_SMOOTH = register_op("AddBackward0", vjp_ce_smooth)
OP_CE_PROBS_MEAN = register_op("DivBackward1", vjp_ce_probs)
OP_CE_PROBS = register_op("NegBackward0", vjp_ce_probs)


cdef object nn_ce_smooth(TensorBase logp, object target, object weight, object ignore_index,
                         int red, double ls):
    shape3, tc, valid, wv, losses, total, out_shape, C, w = nn_nll_prepare(
        logp, target, weight, ignore_index)
    A = logp._array
    dt = A.dtype
    N, K = shape3[0], shape3[2]
    X3 = A.reshape(shape3)
    with IeeeResults():
        per_class = X3 if w is None else X3 * w.reshape(1, C, 1)
        smooth = cascade_reduce(per_class, (1,), False)     # PyTorch's sum over the classes
        if smooth is None:
            smooth = np.add.reduce(per_class, axis=1)
        smooth = np.negative(smooth)
        smooth = np.where(valid, smooth, 0).astype(dt, copy=False)
        nll = nn_nll_value(losses, total, out_shape, red,
                           NLL_ORDER if A.ndim <= 2 else NUMPY_ORDER, valid)
        if w is not None and red == NN_RED_MEAN:
            # PyTorch divides the smoothing term by its own sum of the valid targets' weights
            total = cascade_reduce(np.ascontiguousarray(wv[valid]), (0,), False)
            if total is None:       # float16 (no cascade): summed in float32, as PyTorch's sum
                total = np.asarray(np.add.reduce(
                    wv[valid], dtype=NP_FLOAT32 if dt == np.float16 else None), dtype=dt)
        sm = nn_nll_value(smooth, total, out_shape, red, SUM_ORDER, valid)
        if dt == np.float16:
            # PyTorch's (1 - ls) * nll + smooth * share: three float16 ops, each computed in
            # float32 with the Python factors as float32 (float16's 0.9 is 0.8999) and rounded
            out = nd(((np.asarray(nll, NP_FLOAT32) * NP_FLOAT32.type(1 - ls)).astype(dt)
                      .astype(NP_FLOAT32) +
                      (np.asarray(sm, NP_FLOAT32) * NP_FLOAT32.type(smoothing_share(ls, C)))
                      .astype(dt).astype(NP_FLOAT32)).astype(dt))
        else:
            out = nd(np.asarray(nll * dt.type(1 - ls) + sm * dt.type(smoothing_share(ls, C)),
                                dtype=dt))
    cdef TensorBase res = wrap(out)
    cdef Record* r = record_from(OP_CE_SMOOTH, res, (logp,))
    if r != NULL:
        save_nll_target(r, tc, target)
        keep(&r.saved[1], wv)
        keep(&r.saved[2], valid)
        # w (C class weights, read by the VJP) copied: a later in-place write to `weight`
        # must not change this gradient
        keep(&r.aux, (shape3, A.shape, red, total, ls, C, None if w is None else np.array(w)))
    return res


cdef object nn_ce_probs(TensorBase logp, TensorBase target, object weight, int red, double ls,
                        int class_axis):
    P = logp._array
    T = target._array
    C = P.shape[class_axis]
    w = None
    if weight is not None:
        nn_check_tensor(weight, "cross_entropy", "weight", 3)
        w = (<TensorBase>weight)._array
        if w.ndim != 1 or w.size != C:
            raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {C} "
                               f"classes or no classes but got weight tensor of shape: "
                               f"{list(w.shape)}")
    dt = nn_promote(P.dtype, T.dtype)
    if w is not None:
        dt = nn_promote(dt, w.dtype)
    Pc = P.astype(dt, copy=False)
    with IeeeResults():
        tgt = T.astype(dt, copy=False)
        if ls > 0:
            tgt = tgt * dt.type(1 - ls) + dt.type(smoothing_share(ls, C))
        wb = None
        if w is not None:
            bshape = [1] * P.ndim
            bshape[class_axis] = C
            wb = w.astype(dt, copy=False).reshape(bshape)
        prod = Pc * tgt if wb is None else Pc * tgt * wb
        count = dt.type(P.size // C if C > 0 else 0)
        if red == NN_RED_NONE:
            out = np.negative(np.add.reduce(prod, axis=class_axis))
        elif red == NN_RED_SUM or P.size == 0:
            out = np.negative(np.add.reduce(prod, axis=None))
            if P.size == 0 and red == NN_RED_MEAN:
                out = dt.type(np.nan)
        else:
            out = np.true_divide(np.negative(np.add.reduce(prod, axis=None)), count)
    out = nd(np.asarray(out, dtype=dt))
    cdef TensorBase res = wrap(out)
    gshape = list(P.shape)
    if P.ndim > 0:
        gshape[class_axis] = 1
    other_axes = tuple(a for a in range(P.ndim) if a != class_axis)
    aux = (red, count, ls, tuple(gshape), P.dtype if P.dtype != dt else None,
           T.dtype if T.dtype != dt else None, other_axes, w.shape if w is not None else None,
           w.dtype if w is not None and w.dtype != dt else None)
    cdef int op = OP_CE_PROBS_MEAN if red == NN_RED_MEAN and P.size > 0 else OP_CE_PROBS
    inputs = (logp, target) if weight is None else (logp, target, weight)
    cdef Record* r = record_from(op, res, inputs)
    if r != NULL:
        save_value(r, 0, Pc, logp)
        save_value(r, 1, tgt, target)
        if wb is not None:
            save_value(r, 2, wb, weight)
        keep(&r.aux, aux)
    return res


def cross_entropy(TensorBase input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy of unnormalised logits `input` ((C,), (N, C) or (N, C, d1, ...)) against
    class indices (int64 target without the class dim) or class probabilities (float target of
    input's shape); optional class `weight`, `ignore_index` (index targets only) and
    `label_smoothing` in [0, 1]."""
    label_smoothing = number_arg(label_smoothing, "cross_entropy_loss", "label_smoothing", 6,
                                 "float")
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: its steps
        if (weight is None and not label_smoothing and isinstance(target, TensorBase)
                and input._array.ndim == 2
                and (cnp.PyArray_TYPE(input._array) == cnp.NPY_FLOAT32
                     or cnp.PyArray_TYPE(input._array) == cnp.NPY_FLOAT64)
                and nll_target_replayable((<TensorBase>target)._array)):
            return capture_cross_entropy(input, <TensorBase>target, size_average, ignore_index,
                                         reduce, reduction)
        return capture_call(cross_entropy, (input, target, weight, size_average,
                                                   ignore_index, reduce, reduction,
                                                   label_smoothing), None)
    return cross_entropy_eager(input, target, weight, size_average, ignore_index, reduce,
                               reduction, label_smoothing)


cdef object capture_cross_entropy(TensorBase input, TensorBase target, size_average,
                                  ignore_index, reduce, reduction):
    """cross_entropy of (N, C) logits and int64 class indices under a capture: its two records'
    ops (log_softmax, then nll_loss) run eagerly and are noted as their replay steps, or as one
    step (replay_cross_entropy) when the C rows take them and the loss is reduced."""
    nn_check_tensor(target, "cross_entropy_loss", "target", 2)
    cdef int red = nn_reduction(nn_legacy_reduction(size_average, reduce, reduction))
    ignore_index = nn_int_argument(ignore_index, "cross_entropy_loss", "ignore_index", 5)
    CAPTURE.depth += 1
    try:
        logp = nn_softmax_forward(input, 1, None, True)
    finally:
        CAPTURE.depth -= 1
    cdef bint one_step = (red != NN_RED_NONE and ce_rows_layout(input._array, target._array)
                          and -2 ** 63 <= ignore_index < 2 ** 63)
    if not one_step:
        capture_op(OP_LOG_SOFTMAX, (input,), 1, (1, True), <TensorBase>logp)
    CAPTURE.depth += 1
    try:
        loss = nn_nll_loss(logp, target, None, ignore_index, red)
    finally:
        CAPTURE.depth -= 1
    if one_step:
        # logp is cross_entropy's own (no other step can read it): the step accounts for it
        CAPTURE.claimed.add(<Py_ssize_t><PyObject*>logp)
        capture_op(OP_CROSS_ENTROPY, (input, target), 1, (ignore_index, red), <TensorBase>loss)
    else:
        capture_op(OP_NLL, (logp, target), 1, (ignore_index, red), <TensorBase>loss)
    return loss


# -- cross_entropy as one replay step ------------------------------------------------------------
# Replayed as its two eager records, cross_entropy costs two steps' worth of fixed work (two
# records, the log-probabilities handed from one to the other as a slot and an adjoint) and the
# numpy calls around nll_loss's few values; on a training step whose large products have just
# evicted the caches, each such call costs microseconds (an MLP step: ~20 us for a 64 x 10 loss).
# The one step computes what the two compute, with the same kernels in the same order: the
# log_softmax rows (tg_softmax_rows), nll_rows' picks, their sum in nll_loss's order
# (tg_nll_sum) divided by the count in the dtype; its VJP is nll_loss's then log_softmax's, the
# records' own functions.  So values and gradients are eager's bit for bit.

cdef bint ce_rows_layout(object X, object T) noexcept:
    """Whether the one step takes cross_entropy's operands: (N, C) logits the C softmax rows
    take, N int64 class indices (C-contiguous)."""
    cdef int t = -1
    cdef ptrdiff_t rows, cols
    if (not softmax_rows_layout(X, &t, &rows, &cols) or cnp.PyArray_NDIM(<cnp.ndarray>X) != 2
            or not cnp.PyArray_Check(T)):
        return False
    cdef cnp.ndarray tt = <cnp.ndarray>T
    return (cnp.PyArray_TYPE(tt) == cnp.NPY_INT64 and cnp.PyArray_NDIM(tt) == 1
            and cnp.PyArray_IS_C_CONTIGUOUS(tt) and cnp.PyArray_DIMS(tt)[0] == rows)


cdef real_t ce_loss(const real_t* logp, const int64_t* target, Py_ssize_t N, Py_ssize_t C,
                    int64_t ignore, int red, int64_t* tc, char* valid, real_t* w,
                    real_t* losses, Py_ssize_t* count, Py_ssize_t* bad) noexcept nogil:
    """nll_loss of the log-probabilities: nll_rows (*count: the valid rows; *bad: the first row
    whose target is out of bounds, or -1), the losses summed as nll_sum sums them, over the
    count in the dtype for a mean."""
    count[0] = 0
    bad[0] = nll_rows(logp, target, N, C, ignore, tc, valid, w, losses, count)
    cdef real_t s
    if real_t is double:
        s = tg_nll_sum_f64(N, losses, valid)
    else:
        s = tg_nll_sum_f32(N, losses, valid)
    if red == NN_RED_MEAN:
        s = s / <real_t>count[0]
    return s


cdef object replay_cross_entropy(Record* r, tuple ins, object attrs):
    """cross_entropy's one replay step (replay_fn): ins = (logits, target), attrs =
    (ignore_index, reduction); the record holds what the two eager records hold (the targets,
    weights and validity, nll_loss's aux; logp)."""
    ignore_index, red_ = attrs
    X, T = ins
    if not ce_rows_layout(X, T):
        raise RuntimeError("tapegrad.compile: cross_entropy's replay step met operands its "
                           f"capture did not (input {X.dtype} {X.shape}, target {T.dtype} "
                           f"{T.shape})")
    cdef cnp.ndarray x = <cnp.ndarray>X
    cdef int t = cnp.PyArray_TYPE(x), red = red_
    cdef Py_ssize_t N = cnp.PyArray_DIMS(x)[0], C = cnp.PyArray_DIMS(x)[1], count, bad
    cdef int64_t ignore = ignore_index
    cdef cnp.npy_intp dims[2]
    dims[0] = N
    dims[1] = 1
    cdef cnp.ndarray logp = <cnp.ndarray>cnp.PyArray_SimpleNew(2, cnp.PyArray_DIMS(x), t)
    cdef cnp.ndarray tc = <cnp.ndarray>cnp.PyArray_SimpleNew(2, dims, cnp.NPY_INT64)
    cdef cnp.ndarray valid = <cnp.ndarray>cnp.PyArray_SimpleNew(2, dims, cnp.NPY_BOOL)
    cdef cnp.ndarray wv = <cnp.ndarray>cnp.PyArray_SimpleNew(2, dims, t)
    cdef cnp.ndarray losses = <cnp.ndarray>cnp.PyArray_SimpleNew(2, dims, t)
    cdef cnp.ndarray out = <cnp.ndarray>cnp.PyArray_SimpleNew(0, NULL, t)
    cdef const int64_t* tp = <const int64_t*>cnp.PyArray_DATA(<cnp.ndarray>T)
    if t == cnp.NPY_FLOAT64:
        tg_softmax_rows_f64(1, N, C, <const double*>cnp.PyArray_DATA(x),
                            <double*>cnp.PyArray_DATA(logp))
        (<double*>cnp.PyArray_DATA(out))[0] = ce_loss(
            <const double*>cnp.PyArray_DATA(logp), tp, N, C, ignore, red,
            <int64_t*>cnp.PyArray_DATA(tc), <char*>cnp.PyArray_DATA(valid),
            <double*>cnp.PyArray_DATA(wv), <double*>cnp.PyArray_DATA(losses), &count, &bad)
    else:
        tg_softmax_rows_f32(1, N, C, <const float*>cnp.PyArray_DATA(x),
                            <float*>cnp.PyArray_DATA(logp))
        (<float*>cnp.PyArray_DATA(out))[0] = ce_loss(
            <const float*>cnp.PyArray_DATA(logp), tp, N, C, ignore, red,
            <int64_t*>cnp.PyArray_DATA(tc), <char*>cnp.PyArray_DATA(valid),
            <float*>cnp.PyArray_DATA(wv), <float*>cnp.PyArray_DATA(losses), &count, &bad)
    if bad >= 0:
        raise IndexError(f"Target {tp[bad]} is out of bounds.")
    r.op = OP_CROSS_ENTROPY
    keep(&r.saved[0], tc)
    keep(&r.saved[1], wv)
    keep(&r.saved[2], valid)
    # nll_loss's aux (its total: the count as a 0-d array of the dtype), then log_softmax's
    # saved output (a record saves three values at most)
    keep(&r.aux, ((N, C, 1), X.shape, red, np.asarray(count, dtype=X.dtype), logp))
    return out


cdef object vjp_cross_entropy(Record* r, object g):
    """nll_loss's VJP (vjp_nll), then log_softmax's on the saved log-probabilities."""
    g = vjp_nll(r, g)
    y = (<tuple>r.aux)[4]
    if g.dtype != y.dtype:
        g = g.astype(y.dtype)
    return nd(nn_softmax_grad_value(g, y, 1, True))


# (a replay step's record only, never on the tape: a create_graph backward re-runs the call)
OP_CROSS_ENTROPY = register_op("CrossEntropyReplayStep", vjp_cross_entropy)
register_replay(OP_CROSS_ENTROPY, replay_cross_entropy)


cdef object cross_entropy_eager(TensorBase input, target, weight=None, size_average=None,
                                ignore_index=-100, reduce=None, reduction="mean",
                                label_smoothing=0.0):
    nn_check_tensor(target, "cross_entropy_loss", "target", 2)
    reduction = nn_legacy_reduction(size_average, reduce, reduction)
    cdef int red = nn_reduction(reduction)
    A = input._array
    T = (<TensorBase>target)._array
    cdef int class_axis = 0 if A.ndim == 1 else 1
    ls = float(label_smoothing)
    ignore_index = nn_int_argument(ignore_index, "cross_entropy_loss", "ignore_index", 5)
    if A.shape == T.shape:
        if T.dtype.kind != "f":
            raise RuntimeError("Expected floating point type for target with class probabilities, "
                               f"got {nn_scalar_name(T.dtype)}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if A.ndim == 0:
            raise IndexError("Dimension specified as 1 but tensor has no dimensions")
        if ls > 1.0:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {ls}")
        logp = nn_softmax_forward(input, class_axis, None, True)
        return nn_ce_probs(logp, <TensorBase>target, weight, red, ls if ls > 0 else 0.0,
                           class_axis)
    if ls > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {ls}")
    logp = nn_softmax_forward(input, class_axis, None, True)
    if ls > 0:
        return nn_ce_smooth(logp, target, weight, ignore_index, red, ls)
    return nn_nll_loss(logp, target, weight, ignore_index, red)


# -- pointwise regression losses: mse, l1, smooth_l1, huber ------------------------------------------
# One record: saved d = input - target (broadcast shape, computation dtype), the weight (if any)
# and, when the weight needs a gradient, the unweighted per-element loss f.
# aux = (kind, reduction, divisor, parameter, shapes and dtypes of input/target/weight, output).


cdef object nn_pointwise_deriv(int kind, object d, double param):
    """d f / d d for each loss kind (PyTorch's values at the kinks)."""
    if kind == NN_MSE:
        return d * 2
    if kind == NN_L1:
        return sign_numpy(d)                            # PyTorch's sign: 0 at NaN
    if kind == NN_SMOOTH_L1:
        return np.minimum(np.maximum(d / param, -1), 1)
    return np.minimum(np.maximum(d, -param), param)


cdef object nn_half_pointwise_deriv(int kind, object d, double param, int red, object div):
    """The scaled derivative of float16 mse / huber losses as PyTorch's backward kernels compute
    it, rounding each step in float16: (2 / count) * d, or d, +-delta scaled by 1 / count."""
    norm = np.float16((2.0 if kind == NN_MSE else 1.0) / (float(div) if red == NN_RED_MEAN
                                                          else 1.0))
    if kind == NN_MSE:
        return norm * d
    return np.where(d <= -param, -(norm * np.float16(param)),
                    np.where(d >= param, norm * np.float16(param), norm * d)).astype(np.float16)


cdef int refuse_mixed_huber_backward(tuple aux, bint input_grad, bint target_grad) except -1:
    """PyTorch's huber_loss forward takes a target of another dtype (the loss has the input's),
    but its backward kernel (huber_loss_backward, weighted or not) meets input and target in
    one TensorIterator, which refuses them: the input's gradient is computed first (the
    target's with the operands swapped, so the message swaps them too)."""
    if aux[0] != NN_HUBER or aux[5] == aux[7] or not (input_grad or target_grad):
        return 0
    found, expected = (aux[7], aux[5]) if input_grad else (aux[5], aux[7])
    raise RuntimeError(f"Found dtype {nn_scalar_name(found)} but expected "
                       f"{nn_scalar_name(expected)}")


cdef object vjp_pointwise(Record* r, object g):
    d = <object>r.saved[0]
    w = <object>r.saved[1] if r.saved[1] != NULL else None
    aux = <tuple>r.aux
    kind, red, div, param = aux[0], aux[1], aux[2], aux[3]
    refuse_mixed_huber_backward(aux, needs_grad(r, 0), needs_grad(r, 1))
    half = g.dtype == np.float16 and w is None and kind != NN_L1
    if half and kind == NN_SMOOTH_L1:
        # PyTorch's float16 smooth_l1 backward computes in float32 from the float32 difference
        # (saved d is) and rounds once
        gs = np.true_divide(g.astype(NP_FLOAT32), np.float32(div)) if red == NN_RED_MEAN \
            else g.astype(NP_FLOAT32)
    elif half:
        # ... while its mse and huber backward kernels round every step in float16, the scale
        # (2 / count, 1 / count) too: 2 * d of 60000 is inf, (2 / 6) * d is not
        gs = g
    else:
        gs = nn_grad_scale(g, red, div)
    gi = gt = gw = None
    if needs_grad(r, 0) or needs_grad(r, 1):
        with IeeeResults():
            if half and kind != NN_SMOOTH_L1:
                gd = nn_half_pointwise_deriv(kind, d, param, red, div) * gs
            else:
                gd = nn_pointwise_deriv(kind, d, param) * gs
        if w is not None:
            gd = gd * w
        if needs_grad(r, 0):
            gi = fit_grad(nd(gd), aux[4], aux[5])
        if needs_grad(r, 1):
            gt = fit_grad(nd(np.negative(gd)), aux[6], aux[7])
    if r.n_in > 2 and needs_grad(r, 2):
        f = <object>r.saved[2]
        gw = fit_grad(nd(f * gs), aux[8], None)
        if red == NN_RED_MEAN and kind != NN_HUBER:     # sum(w f) / sum(w): also -out / sum(w)
            gw = gw - aux[10] * gs
        gw = fit_grad(nd(gw), None, aux[9])
    if r.n_in > 2:
        return (gi, gt, gw)
    return (gi, gt)


OP_MSE_LOSS = register_op("MseLossBackward0", vjp_pointwise)
OP_SMOOTH_L1_LOSS = register_op("SmoothL1LossBackward0", vjp_pointwise)
OP_HUBER_LOSS = register_op("HuberLossBackward0", vjp_pointwise)
OP_PW_ABS = register_op("AbsBackward0", vjp_pointwise)         # l1, none
OP_PW_MEAN = register_op("MeanBackward0", vjp_pointwise)       # l1 mean, weighted huber mean
OP_PW_SUM = register_op("SumBackward0", vjp_pointwise)         # l1 sum, weighted sum
OP_PW_MUL = register_op("MulBackward0", vjp_pointwise)         # weighted, none
OP_PW_DIV = register_op("DivBackward0", vjp_pointwise)         # weighted mse/l1 mean


cdef object nn_pointwise_loss(int kind, TensorBase input, object target, object reduction,
                              double param, object weight):
    if not isinstance(target, TensorBase):
        real = real_torch_tensor(target)    # a real PyTorch target (a dataset's): its values
        if real is NotImplemented:
            raise AttributeError(f"'{type(target).__name__}' object has no attribute 'size'")
        target = real
    A = input._array
    B = (<TensorBase>target)._array
    if A.shape != B.shape:
        warnings.warn(f"Using a target size ({nn_size(B.shape)}) that is different to the input "
                      f"size ({nn_size(A.shape)}). This will likely lead to incorrect results due "
                      "to broadcasting. Please ensure they have the same size.", UserWarning,
                      stacklevel=user_stacklevel())     # the caller's line, past the wrappers
    cdef int red
    if kind == NN_L1 and (A.dtype == NP_BOOL or B.dtype == NP_BOOL):
        sub(input, target)      # PyTorch's l1_loss starts with input - target: a bool fails there
    if weight is None:
        red = nn_reduction(reduction)
    if kind == NN_L1 and weight is None and (is_complex_operand(input)
                                             or is_complex_operand(target)):
        return complex_call("l1_loss", (input, target, reduction))
    shape = broadcast_shapes_torch(A.shape, B.shape) if A.shape != B.shape else A.shape
    w = None
    if weight is not None:
        nn_check_tensor(weight, "loss", "weight", 6)
        w = (<TensorBase>weight)._array
        if w.shape != A.shape:
            raise ValueError("Weights and input must have the same size.")
    if kind == NN_HUBER:
        dt = A.dtype
        if dt.kind != "f":
            raise RuntimeError(f"result type Float can't be cast to the desired output type "
                               f"{nn_scalar_name(dt)}")
    else:
        dt = nn_promote(A.dtype, B.dtype)
        if dt.kind != "f":
            if kind == NN_MSE:
                raise NotImplementedError(f'"mse_cpu" not implemented for \'{nn_scalar_name(dt)}\'')
            if kind == NN_SMOOTH_L1:
                raise NotImplementedError(
                    f'"smooth_l1_cpu" not implemented for \'{nn_scalar_name(dt)}\'')
            if reduction == "mean":
                raise RuntimeError("mean(): could not infer output dtype. Input dtype must be "
                                   "either a floating point or complex dtype. Got: "
                                   f"{nn_scalar_name(dt)}")
    if weight is not None:
        if reduction == "none":
            red = NN_RED_NONE
        elif reduction == "sum":
            red = NN_RED_SUM
        elif reduction == "mean":
            red = NN_RED_MEAN
        else:
            raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', "
                             "'mean', 'sum'.")
    # float16 as PyTorch's kernels compute it (measured): mse and l1 round every step in
    # float16; smooth_l1 squares the float16 difference in float32 and rounds once (300 * 300
    # is no inf), its backward reads the float32 difference; huber computes all in float32
    cdef bint wide = dt == np.float16 and (kind == NN_SMOOTH_L1 or kind == NN_HUBER)
    ct = NP_FLOAT32 if wide else dt
    with IeeeResults():
        d = nd(np.subtract(A.astype(ct, copy=False), B.astype(ct, copy=False)))
        if kind == NN_MSE:
            f = d * d
        elif kind == NN_L1:
            f = np.abs(d)
        elif kind == NN_SMOOTH_L1:
            dr = d.astype(dt).astype(ct) if wide else d
            ad = np.abs(dr)
            f = np.where(ad < param, dr * dr * ct.type(0.5) / ct.type(param),
                         ad - ct.type(0.5 * param))
        else:
            ad = np.abs(d)
            f = np.where(ad < param, d * d * ct.type(0.5),
                         ct.type(param) * (ad - ct.type(0.5 * param)))
            if wide:
                d = nd(d.astype(dt))                    # (its backward: the float16 difference)
        f = nd(np.asarray(f, dtype=dt))
        div = dt.type(f.size) if dt != np.float16 else np.float32(f.size)   # (inf in float16)
        if w is None:
            out = nn_reduce(f, red)
            if red == NN_RED_NONE:              # (the elementwise loss: its operands' layout)
                out = operand_layout(out, input, target)
        else:
            wc = w.astype(dt, copy=False)
            fw = nd(f * wc)
            if red == NN_RED_MEAN and kind != NN_HUBER:
                div = np.asarray(np.add.reduce(wc, axis=None), dtype=dt)
                out = np.asarray(np.true_divide(np.add.reduce(fw, axis=None), div), dtype=dt)
            else:
                out = nn_reduce(fw, red)
    out = nd(out)
    cdef TensorBase res = wrap(out)
    cdef int op
    if w is not None:
        op = (OP_PW_MUL if red == NN_RED_NONE else OP_PW_SUM if red == NN_RED_SUM
              else OP_PW_MEAN if kind == NN_HUBER else OP_PW_DIV)
    elif kind == NN_MSE:
        op = OP_MSE_LOSS
    elif kind == NN_SMOOTH_L1:
        op = OP_SMOOTH_L1_LOSS
    elif kind == NN_HUBER:
        op = OP_HUBER_LOSS
    else:
        op = OP_PW_ABS if red == NN_RED_NONE else (OP_PW_MEAN if red == NN_RED_MEAN else OP_PW_SUM)
    if dt.kind != "f":
        return res
    inputs = (input, target) if weight is None else (input, target, weight)
    cdef Record* r = record_from(op, res, inputs)
    if r != NULL:
        check_saveable(input)                   # PyTorch saves both: no inference tensor
        if isinstance(target, TensorBase):
            check_saveable(<TensorBase>target)
        keep(&r.saved[0], d)
        if w is None and kind != NN_L1:
            # PyTorch's MseLoss/SmoothL1Loss/HuberLossBackward save self and target (l1_loss is
            # a composite there that saves only the difference): writing either raises
            guard_version(r, input)
            if isinstance(target, TensorBase):
                guard_version(r, <TensorBase>target)
        if w is not None:
            save_value(r, 1, wc, weight)
            if needs_grad(r, 2):
                keep(&r.saved[2], f)
        keep(&r.aux, (kind, red, div, param, A.shape, A.dtype, B.shape, B.dtype,
                      w.shape if w is not None else None, w.dtype if w is not None else None,
                      # the weighted mean's VJP reads the loss value: a copy, not the output's
                      # storage (an in-place write to the output must not change the gradient)
                      out if red != NN_RED_MEAN or w is None else np.array(out)))
    return res


def mse_loss(TensorBase input, target, size_average=None, reduce=None, reduction="mean",
             weight=None):
    """Mean squared error (input - target)^2, broadcasting with PyTorch's warning."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(mse_loss, (input, target, size_average, reduce, reduction,
                                       weight), None)
    return mse_loss_eager(input, target, size_average, reduce, reduction, weight)


cdef object mse_loss_eager(TensorBase input, target, size_average=None, reduce=None,
                           reduction="mean", weight=None):
    reduction = nn_legacy_reduction(size_average, reduce, reduction)
    return nn_pointwise_loss(NN_MSE, input, target, reduction, 0.0, weight)


def l1_loss(TensorBase input, target, size_average=None, reduce=None, reduction="mean",
            weight=None):
    """Mean absolute error |input - target| (gradient sign(d), 0 at d == 0)."""
    reduction = nn_legacy_reduction(size_average, reduce, reduction)
    return nn_pointwise_loss(NN_L1, input, target, reduction, 0.0, weight)


def smooth_l1_loss(TensorBase input, target, size_average=None, reduce=None, reduction="mean",
                   beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta == 0: l1_loss)."""
    reduction = nn_legacy_reduction(size_average, reduce, reduction)
    beta = float(number_arg(beta, "smooth_l1_loss", "beta", 4, "float"))
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:
        return nn_pointwise_loss(NN_L1, input, target, reduction, 0.0, None)
    return nn_pointwise_loss(NN_SMOOTH_L1, input, target, reduction, beta, None)


def huber_loss(TensorBase input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    delta = float(number_arg(delta, "huber_loss", "delta", 4, "float"))
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    return nn_pointwise_loss(NN_HUBER, input, target, reduction, delta, weight)


# -- binary cross entropy -------------------------------------------------------------------------

BCE_EPSILON = <float>1e-12


cdef object vjp_bce(Record* r, object g):
    x = <object>r.saved[0]
    t = <object>r.saved[1]
    w = <object>r.saved[2] if r.saved[2] != NULL else None
    red, count = <tuple>r.aux
    gs = nn_grad_scale(g, red, count)
    if w is not None:
        gs = w * gs
    gx = gt = None
    if needs_grad(r, 0):
        # PyTorch: (x - t) / max((1 - x) x, EPSILON), its EPSILON being the float 1e-12 (so
        # 9.99999996e-13 in float64 too)
        gx = nd((x - t) / np.maximum((1 - x) * x, x.dtype.type(BCE_EPSILON)) * gs)
    if needs_grad(r, 1):
        gt = nd((np.log1p(np.negative(x)) - np.log(x)) * gs)      # -logit(x), unclamped
    return (gx, gt)


cdef object vjp_bce_logits(Record* r, object g):
    x = <object>r.saved[0]
    t = <object>r.saved[1]
    w, pw, red, count, xs, xd, ts, td = <tuple>r.aux
    gs = nn_grad_scale(g, red, count)
    if w is not None:
        gs = w * gs
    gx = gt = None
    l1p = np.log1p(np.exp(np.negative(np.abs(x))))
    ls = np.minimum(x, 0) - l1p                                 # log sigmoid(x), stable
    if needs_grad(r, 0):
        sig = np.exp(ls)
        if pw is None:
            gx = (sig - t) * gs
        else:
            pt = pw * t
            gx = ((pt + 1 - t) * sig - pt) * gs
        gx = fit_grad(nd(gx), xs, xd)
    if needs_grad(r, 1):
        if pw is None:
            gt = np.negative(x) * gs
        else:
            gt = ((np.minimum(np.negative(x), 0) - l1p) - ls * pw) * gs   # log sigmoid(-x)
        gt = fit_grad(nd(gt), ts, td)
    return (gx, gt)


OP_BCE = register_op("BinaryCrossEntropyBackward0", vjp_bce)
OP_BCE_LOGITS = register_op("BinaryCrossEntropyWithLogitsBackward0", vjp_bce_logits)


def binary_cross_entropy(TensorBase input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-w (t log(x) + (1 - t) log(1 - x)) for probabilities x in [0, 1]; logs clamped at -100."""
    nn_check_tensor(target, "binary_cross_entropy", "target", 2)
    reduction = nn_legacy_reduction(size_average, reduce, reduction)
    cdef int red = nn_reduction(reduction)
    A = input._array
    T = (<TensorBase>target)._array
    if A.shape != T.shape:
        raise ValueError(f"Using a target size ({nn_size(T.shape)}) that is different to the "
                         f"input size ({nn_size(A.shape)}) is deprecated. Please ensure they have "
                         "the same size.")
    cdef Py_ssize_t i
    wc = None
    if weight is not None:
        nn_check_tensor(weight, "binary_cross_entropy", "weight", 3)
        W = (<TensorBase>weight)._array
        ts, ws = tuple(T.shape), tuple(W.shape)
        for i in range(1, min(len(ts), len(ws)) + 1):
            if ws[len(ws) - i] != ts[len(ts) - i] and ws[len(ws) - i] != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length "
                                   f"{ws[len(ws) - i]} at -{i}! Mismatching argument at index 1 "
                                   f"had {nn_size(ws)}; but expected shape should be broadcastable "
                                   f"to {list(ts)}")
        if len(ws) > len(ts):
            raise RuntimeError(f"output with shape {list(ts)} doesn't match the broadcast shape "
                               f"{list(broadcast_shapes_torch(ts, ws))}")
    if T.dtype != A.dtype:
        raise RuntimeError(f"Found dtype {nn_scalar_name(T.dtype)} but expected "
                           f"{nn_scalar_name(A.dtype)}")
    if A.dtype.kind != "f":
        raise NotImplementedError(f'"binary_cross_entropy" not implemented for '
                                  f"'{nn_scalar_name(A.dtype)}'")
    nn_no_weight_grad(weight, "binary_cross_entropy", "weight")
    with IeeeResults():
        # PyTorch checks each element's input, then its target: the first element out of [0, 1]
        # (or NaN) names which of the two the error is about
        in_range = (A >= 0) & (A <= 1)
        target_in_range = (T >= 0) & (T <= 1)
        both = in_range & target_in_range
        if not bool(np.logical_and.reduce(both, axis=None)):
            first = int(np.argmin(both.reshape(-1)))
            if not bool(in_range.reshape(-1)[first]):
                raise RuntimeError("all elements of input should be between 0 and 1")
            raise RuntimeError("all elements of target should be between 0 and 1")
        dt = A.dtype
        lo = dt.type(-100)
        L = np.negative(T * np.maximum(np.log(A), lo) + (1 - T) * np.maximum(np.log1p(np.negative(A)), lo))
        if weight is not None:
            wc = np.empty(A.shape, dtype=dt)
            wc[...] = (<TensorBase>weight)._array
            L = L * wc
        L = nd(np.asarray(L, dtype=dt))
        out = nd(nn_reduce(L, red))
        if red == NN_RED_NONE:                  # (the elementwise loss: its operands' layout)
            out = operand_layout(out, input, target)
    cdef TensorBase res = wrap(out)
    cdef Record* r = record_from(OP_BCE, res, (input, target))
    if r != NULL:
        save_value(r, 0, A, input)
        save_value(r, 1, T, target)
        if wc is not None:
            keep(&r.saved[2], wc)
        keep(&r.aux, (red, dt.type(A.size)))
    return res


def binary_cross_entropy_with_logits(TensorBase input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """Binary cross entropy of logits: (1 - t) x - (1 + (pos_weight - 1) t) log(sigmoid(x)),
    times weight; computed stably for large |x|."""
    nn_check_tensor(target, "binary_cross_entropy_with_logits", "target", 2)
    reduction = nn_legacy_reduction(size_average, reduce, reduction)
    A = input._array
    T = (<TensorBase>target)._array
    cdef int red = nn_reduction(reduction)
    if A.shape != T.shape:
        raise ValueError(f"Target size ({nn_size(T.shape)}) must be the same as input size "
                         f"({nn_size(A.shape)})")
    if A.dtype.kind != "f":
        raise NotImplementedError(f'"log_sigmoid_cpu" not implemented for '
                                  f"'{nn_scalar_name(A.dtype)}'")
    dt = nn_promote(A.dtype, T.dtype)
    if T.dtype == NP_BOOL:
        sub(target, True)       # PyTorch's formula first takes (1 - target) in target's dtype
    if T.dtype.kind != "f":
        raise RuntimeError(f"result type {nn_scalar_name(dt)} can't be cast to the desired output "
                           f"type {nn_scalar_name(T.dtype)}")
    nn_no_weight_grad(weight, "binary_cross_entropy_with_logits", "weight")
    nn_no_weight_grad(pos_weight, "binary_cross_entropy_with_logits", "pos_weight")
    X = A.astype(dt, copy=False)
    Tc = T.astype(dt, copy=False)
    shape = A.shape
    pw = w = None
    if pos_weight is not None:
        nn_check_tensor(pos_weight, "binary_cross_entropy_with_logits", "pos_weight", 7)
        P = (<TensorBase>pos_weight)._array
        bs = broadcast_shapes_torch(P.shape, T.shape)
        if bs != shape:
            raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape "
                               f"{list(bs)}")
        pw = P.astype(dt)               # a copy: the VJP reads it from aux, unversioned
    if weight is not None:
        nn_check_tensor(weight, "binary_cross_entropy_with_logits", "weight", 3)
        Wt = (<TensorBase>weight)._array
        bs = broadcast_shapes_torch(shape, Wt.shape)
        if bs != shape:
            raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape "
                               f"{list(bs)}")
        w = Wt.astype(dt, copy=False)
    with IeeeResults():
        ls = np.minimum(X, 0) - np.log1p(np.exp(np.negative(np.abs(X))))
        if pw is not None:
            ls = ls * ((pw - 1) * Tc + 1)
        L = (1 - Tc) * X - ls
        if w is not None:
            L = L * w
        L = nd(np.asarray(L, dtype=dt))
        # ATen builds the loss in place on (1 - target): it has the target's dtype, whatever the
        # input's (float64 logits with a float32 target give a float32 loss)
        out = nd(nn_reduce(L, red).astype(T.dtype, copy=False))
    cdef TensorBase res = wrap(out)
    cdef Record* r = record_from(OP_BCE_LOGITS, res, (input, target))
    if r != NULL:
        save_value(r, 0, X, input)
        save_value(r, 1, Tc, target)
        if w is not None:               # read by the VJP from aux: version-checked here
            save_value(r, 2, w, weight)
        keep(&r.aux, (w, pw, red, dt.type(L.size), A.shape, A.dtype if A.dtype != dt else None,
                      T.shape, T.dtype if T.dtype != dt else None))
    return res


# -- dropout ----------------------------------------------------------------------------------------

cdef object NN_GENERATOR_SOURCE = None


def _set_generator_source(fn):
    """Called by tapegrad.creation: `fn()` returns the global numpy Generator (manual_seed)."""
    global NN_GENERATOR_SOURCE
    NN_GENERATOR_SOURCE = fn


cdef object nn_generator():
    if NN_GENERATOR_SOURCE is None:
        from tapegrad.creation import default_generator     # sets the source on import
        return default_generator()
    return NN_GENERATOR_SOURCE()


cdef object vjp_dropout(Record* r, object g):
    return ew(TG_MUL, g, <object>r.saved[0])


OP_DROPOUT = register_op("MulBackward0", vjp_dropout)
register_edges(OP_DROPOUT, lambda fn: (0, None))   # PyTorch's input * mask: the mask's edge None


def dropout(TensorBase input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p (mask drawn from the global generator), scale the
    rest by 1 / (1 - p).  p == 0, training=False or an empty input return `input` itself."""
    p = float(number_arg(p, "dropout", "p", 2, "float"))
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p != p:      # NaN passes PyTorch's Python check; its kernel's (even in eval) raises
        raise RuntimeError("dropout probability has to be between 0 and 1, but got nan")
    # F.dropout passes training on as aten dropout's 3rd argument `train` (inplace is Python's)
    check_bool("dropout_" if inplace else "dropout", "train", training, 3)
    A = input._array
    if p == 0.0 or not training or A.size == 0:
        return input
    if A.dtype.kind != "f":
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{nn_scalar_name(A.dtype)}")
    fresh(input)
    if inplace and input._requires_grad and grad_enabled() and is_leaf_c(input):
        raise RuntimeError(NN_LEAF_INPLACE)
    dt = A.dtype
    # the mask in the input's layout (PyTorch's empty_like: a permuted or channels_last input,
    # sliced or not, keeps its dim order), so the product and the result follow it
    noise = np.empty_like(A)
    if p == 1.0:
        noise[...] = 0
    else:
        noise[...] = nn_generator().random(A.shape) < (1.0 - p)
        noise /= dt.type(1.0 - p)
    cdef Py_ssize_t old
    cdef Record* r
    cdef TensorBase res
    if inplace:
        if input._base is not None and grad_enabled() and (
                input._requires_grad or (<TensorBase>input._base)._requires_grad):
            # a view in a graph: PyTorch's dropout_ is input.mul_(noise), whose write into a
            # view is recorded on its base (CopySlices); the generic in-place multiply does that
            return input.mul_(wrap(noise))
        check_inplace(input, grad_enabled() and input._requires_grad)
        if not A.flags.writeable:
            A = overwritable(A, True)
        with IeeeResults():
            np.multiply(A, noise, out=A)
        bump_version(input)
        r = nn_record_inplace(OP_DROPOUT, input, (input,), &old)
        if r != NULL:
            keep(&r.saved[0], noise)
            nn_finish_inplace(input, old)
        return input
    with IeeeResults():
        out = nd(A * noise)
    res = wrap(out)
    r = record_from(OP_DROPOUT, res, (input,))
    if r != NULL:
        keep(&r.saved[0], noise)
    return res


def torch_dropout(TensorBase input, p, train):
    """torch.dropout(input, p, train)."""
    return dropout(input, p, train, False)


# -- embedding ----------------------------------------------------------------------------------

cdef inline object embedding_rows(object I):
    """The saved indices of an embedding (any shape, int64 or int32) as the flat int64 rows."""
    return I.reshape(-1).astype(NP_INT64, copy=False)


cdef object vjp_embedding(Record* r, object g):
    idx = embedding_rows(<object>r.saved[0])
    scale = <object>r.saved[1] if r.saved[1] != NULL else None
    wshape, dt, padding_idx = <tuple>r.aux
    D = wshape[1]
    g2 = g.reshape(idx.shape[0], D)
    if scale is not None:
        g2 = g2 * scale
    gw = np.zeros(wshape, dtype=dt)
    if not scatter_add_c(gw, idx, g2):
        np.add.at(gw, idx, g2)                      # repeated indices accumulate
    if padding_idx >= 0:
        gw[padding_idx] = 0
    return gw


OP_EMBEDDING = register_op("EmbeddingBackward0", vjp_embedding)

# How PyTorch's argument checks name a dtype (dtypes.pxi)
from tapegrad._core import BACKEND_TYPE_NAMES as NN_TENSOR_TYPE


# embedding(sparse=True) where the weight's gradient is recorded: a Python function over the
# dense ops (tapegrad/_sparse_embedding.py installs it), as the sparse COO tensor is Python's.
cdef object SPARSE_EMBEDDING = None


def _set_sparse_embedding(fn):
    """Called once by tapegrad/_sparse_embedding.py: fn(weight, flat int64 indices, index
    shape, padding_idx (-1 for none), scale_grad_by_freq) -> the embedding's output."""
    global SPARSE_EMBEDDING
    SPARSE_EMBEDDING = fn


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` (num_embeddings, dim) picked by int64/int32 indices of any shape.
    The gradient accumulates repeated indices; the padding_idx row gets none.  max_norm renorms
    the referenced rows of `weight` in place (no grad), as PyTorch.  With sparse=True the
    weight's .grad is a sparse COO tensor of the looked-up rows (tapegrad/_sparse_embedding.py)."""
    nn_check_tensor(input, "embedding", "indices", 2)
    nn_check_tensor(weight, "embedding", "weight", 1)
    W = (<TensorBase>weight)._array
    I = (<TensorBase>input)._array
    if padding_idx is not None:
        padding_idx = nn_int_argument(padding_idx, "embedding", "padding_idx", 3)
        if padding_idx > 0:
            if not padding_idx < W.shape[0]:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if not padding_idx >= -W.shape[0]:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = W.shape[0] + padding_idx
    else:
        padding_idx = -1
    # (F.embedding passes them on as aten embedding's 4th and 5th arguments)
    check_bool("embedding", "scale_grad_by_freq", scale_grad_by_freq, 4)
    check_bool("embedding", "sparse", sparse, 5)
    if W.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    if I.dtype != NP_INT64 and I.dtype != np.int32:
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following "
                           "scalar types: Long, Int; but got "
                           f"{NN_TENSOR_TYPE.get(I.dtype.name, I.dtype.name)} instead (while "
                           "checking arguments for embedding)")
    idx = I.reshape(-1).astype(NP_INT64, copy=False)     # (int64: no copy; the record saves I)
    n = W.shape[0]
    if idx.size and n == 0:
        # (PyTorch's embedding is an index_select of the rows, whose check of an empty dim
        # comes before its range check)
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    if idx.size and (int(np.minimum.reduce(idx)) < 0 or int(np.maximum.reduce(idx)) >= n):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        nn_embedding_renorm(<TensorBase>weight, idx, float(max_norm), float(norm_type))
        W = (<TensorBase>weight)._array
    if sparse and grad_enabled() and (<TensorBase>weight)._requires_grad \
            and is_leaf_c(<TensorBase>weight):
        # weight.grad is to be a sparse COO tensor: tapegrad/_sparse_embedding.py records it
        # (imported on the first such call; importing it installs SPARSE_EMBEDDING).  A weight
        # computed from others (W = P * 2) takes the dense path: the sweep moves only dense
        # adjoints on to P (PyTorch sends the sparse gradient through the ops that allow it)
        if SPARSE_EMBEDDING is None:
            import tapegrad._sparse_embedding
        # (a copy: the lookup keeps its indices for backward, unguarded)
        return SPARSE_EMBEDDING(weight, np.array(idx, copy=True), I.shape, padding_idx,
                                bool(scale_grad_by_freq))
    out = nd(W[idx].reshape(I.shape + (W.shape[1],)))
    cdef TensorBase res = wrap(out)
    cdef Record* r = record_from(OP_EMBEDDING, res, (weight,))
    if r != NULL:
        # the indices tensor itself, as PyTorch's EmbeddingBackward0 saves it: writing it
        # before backward raises (record.pxi, save_index); the VJP flattens it (embedding_rows)
        save_index(r, 0, <TensorBase>input)
        if scale_grad_by_freq:
            counts = np.bincount(idx, minlength=n)
            keep(&r.saved[1], (1.0 / counts[idx]).astype(W.dtype).reshape(idx.shape[0], 1))
        keep(&r.aux, (W.shape, W.dtype, padding_idx))
    return res


cdef int nn_embedding_renorm(TensorBase weight, object idx, double max_norm,
                             double norm_type) except -1:
    W = weight._array
    rows = np.unique(idx)
    if rows.size == 0:
        bump_version(weight)
        return 0
    sub = W[rows].astype(np.float64)
    with IeeeResults():
        if norm_type == 2.0:
            norms = np.sqrt(np.add.reduce(sub * sub, axis=1))
        else:
            # the vector norm of any order, inf (largest |w|) and 0 (count of non-zeros)
            # included: the power-sum formula gives 1 for inf and inf for 0
            norms = np.linalg.norm(sub, ord=norm_type, axis=1)
        scale = np.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    new_rows = (sub * scale.reshape(-1, 1)).astype(W.dtype)
    if not W.flags.writeable:
        W = np.array(W, copy=True)
        weight._array = W
    W[rows] = new_rows
    # an in-place write, as PyTorch's embedding_renorm_ (which bumps even when no row was over
    # max_norm): a record that saved the weight before the lookup refuses its backward, where
    # it used the renormed rows, a silent wrong gradient
    bump_version(weight)
    return 0


def torch_embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """torch.embedding(weight, indices, padding_idx=-1, ...) (argument order as PyTorch)."""
    return embedding(indices, weight, None if padding_idx is None or padding_idx < 0 else
                     padding_idx, None, 2.0, scale_grad_by_freq, sparse)


# -- layer_norm ------------------------------------------------------------------------------------

cdef object vjp_layer_norm(Record* r, object g):
    """The rows in C (nk_layer_norm_backward), or the numpy formula for rows too long for them."""
    xhat = <object>r.saved[0]
    rstd = <object>r.saved[1]
    w = <object>r.saved[2] if r.saved[2] != NULL else None
    in_shape, norm_shape, M, N, dt, wdt = (<tuple>r.aux)[:6]      # aux[6]: eps (graph VJP)
    g2 = g.reshape(M, N)
    if g2.dtype != xhat.dtype:
        g2 = g2.astype(xhat.dtype)
    if nk_layer_norm_rows(xhat):
        gi, gw, gb = nk_layer_norm_backward(g2, xhat, rstd, w, needs_grad(r, 0),
                                            r.n_in > 1 and needs_grad(r, 1),
                                            r.n_in > 2 and needs_grad(r, 2))
    else:
        gi, gw, gb = layer_norm_grads_numpy(g2, xhat, rstd, w, N, needs_grad(r, 0),
                                            r.n_in > 1 and needs_grad(r, 1),
                                            r.n_in > 2 and needs_grad(r, 2))
    if gi is not None:
        gi = gi.reshape(in_shape)
        if gi.dtype != dt:
            gi = gi.astype(dt)
    if gw is not None:
        gw = gw.reshape(norm_shape)
        if gw.dtype != wdt:
            gw = gw.astype(wdt)
    if gb is not None:
        gb = gb.reshape(norm_shape)
        if gb.dtype != wdt:
            gb = gb.astype(wdt)
    if r.n_in == 1:
        return gi
    if r.n_in == 2:
        return (gi, gw)
    return (gi, gw, gb)


cdef tuple layer_norm_grads_numpy(object g2, object xhat, object rstd, object w, Py_ssize_t N,
                                  bint need_x, bint need_w, bint need_b):
    """nk_layer_norm_backward's values by the numpy formula (rows longer than TG_SUM_MAX_N)."""
    gi = gw = gb = None
    with IeeeResults():
        if need_x:
            gx = g2 * w if w is not None else g2
            a = np.true_divide(np.add.reduce(gx, axis=1, keepdims=True), N)
            b = np.true_divide(np.add.reduce(gx * xhat, axis=1, keepdims=True), N)
            gi = rstd * (gx - a - xhat * b)
        if need_w:
            gw = np.add.reduce(g2 * xhat, axis=0)
        if need_b:
            gb = np.add.reduce(g2, axis=0)
    return gi, gw, gb


OP_LAYER_NORM = register_op("NativeLayerNormBackward0", vjp_layer_norm)


def layer_norm(TensorBase input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the trailing `normalized_shape` dims
    (biased variance), as one record with a compiled VJP for input, weight and bias."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        if not layer_norm_replayable(input, weight, bias):
            return capture_call(layer_norm, (input, normalized_shape, weight, bias, eps), None)
        CAPTURE.depth += 1          # (its inner work is the replay step's)
        try:
            res = layer_norm_eager(input, normalized_shape, weight, bias, eps)
        finally:
            CAPTURE.depth -= 1
        inputs = layer_norm_inputs(input, weight, bias)
        capture_op(OP_LAYER_NORM, inputs, len(inputs),
                   (tuple([int(s) for s in normalized_shape]), float(eps)), <TensorBase>res)
        return res
    return layer_norm_eager(input, normalized_shape, weight, bias, eps)


cdef inline tuple layer_norm_inputs(input, weight, bias):
    """The record's inputs: the input, then the weight and bias when given (None for a missing
    weight before a bias)."""
    if weight is None and bias is None:
        return (input,)
    return (input, weight) if bias is None else (input, weight, bias)


cdef bint layer_norm_replayable(TensorBase input, weight, bias) except -1:
    """Whether layer_norm's replay step (replay_layer_norm) takes these operands: a float32 or
    float64 input and parameters of its dtype (half precision and mixed parameters, whose
    statistics and gradients take other dtypes, re-run the eager op at each replay)."""
    dt = input._array.dtype
    if dt != NK_F32 and dt != NK_F64:
        return False
    for p in (weight, bias):
        if p is not None and not (isinstance(p, TensorBase) and (<TensorBase>p)._array.dtype == dt):
            return False
    return True


cdef object layer_norm_eager(TensorBase input, normalized_shape, weight=None, bias=None,
                             eps=1e-5):
    if isinstance(normalized_shape, (int, np.integer)) or not isinstance(normalized_shape,
                                                                        (tuple, list)):
        raise TypeError("layer_norm(): argument 'normalized_shape' (position 2) must be tuple of "
                        f"ints, not {type_name(normalized_shape)}")
    norm_shape = tuple(int(s) for s in normalized_shape)
    A = input._array
    cdef Py_ssize_t k = len(norm_shape), ndim = A.ndim, i
    if k == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing "
                           "at least one element, but got normalized_shape = []")
    w = b = None
    if weight is not None:
        nn_check_tensor(weight, "layer_norm", "weight", 3)
        w = (<TensorBase>weight)._array
        if w.shape != norm_shape:
            raise RuntimeError("Expected weight to be of same shape as normalized_shape, but got "
                               f"weight of shape {list(w.shape)} and normalized_shape = "
                               f"{list(norm_shape)}")
    if bias is not None:
        nn_check_tensor(bias, "layer_norm", "bias", 4)
        b = (<TensorBase>bias)._array
        if b.shape != norm_shape:
            raise RuntimeError("Expected bias to be of same shape as normalized_shape, but got "
                               f"bias of shape {list(b.shape)} and normalized_shape = "
                               f"{list(norm_shape)}")
    if k > ndim or tuple(A.shape)[ndim - k:] != norm_shape:
        raise RuntimeError(f"Given normalized_shape={list(norm_shape)}, expected input with shape "
                           f"[*, {str(list(norm_shape))[1:]}, but got input of size"
                           f"{list(A.shape)}")
    if A.dtype.kind != "f":
        raise NotImplementedError(f'"LayerNormKernelImpl" not implemented for '
                                  f"'{nn_scalar_name(A.dtype)}'")
    param_dtype = A.dtype
    if (w is not None and w.dtype != A.dtype) or (b is not None and b.dtype != A.dtype):
        # PyTorch's rule, shared with the other normalisations: no promotion, and the one mixed
        # form (float16 input, float32 parameters) keeps float32 parameters and gradients
        from tapegrad.nn._norm_dtypes import check_parameter_dtypes
        check_parameter_dtypes(input, weight, bias)
        param_dtype = NP_FLOAT32
    out, xhat, rstd, wc, M, N = layer_norm_values(A, w, b, norm_shape, eps, param_dtype)
    cdef TensorBase res = wrap(out)
    cdef Record* r = record_from(OP_LAYER_NORM, res, layer_norm_inputs(input, weight, bias))
    if r != NULL:
        # PyTorch saves the input itself: a write into it before backward raises (fuzz seed
        # 54101800: a write through x.detach() went unnoticed, and the create_graph second
        # derivative, which reads the live input, was silently wrong)
        keep_saved(r, 0, xhat, input)
        keep(&r.saved[1], rstd)
        if wc is not None:
            save_value(r, 2, wc, weight)
        keep(&r.aux, (A.shape, norm_shape, M, N, A.dtype, param_dtype, float(eps)))
    return res


cdef tuple layer_norm_values(object A, object w, object b, tuple norm_shape, object eps,
                             object param_dtype):
    """layer_norm's forward on checked arrays (w, b: None or of norm_shape), for the eager op
    and its replay step alike: (result, xhat, rstd, the weight as the VJP reads it, M, N)."""
    cdef Py_ssize_t N = 1, M = 1, i, s
    for s in norm_shape:
        N *= s
    for i in range(A.ndim - len(norm_shape)):
        M *= A.shape[i]
    cdt = NP_FLOAT32 if A.dtype.itemsize < 4 else A.dtype       # half: computed in float
    # half precision is computed in float32
    X = np.ascontiguousarray(A.reshape(M, N).astype(cdt, copy=False))
    wc = None if w is None else w.reshape(N).astype(cdt, copy=False)
    bc = None if b is None else b.reshape(N).astype(cdt, copy=False)
    if nk_layer_norm_rows(X):
        y, xhat, rstd = nk_layer_norm_forward(X, wc, bc, float(eps))
    else:
        y, xhat, rstd = layer_norm_numpy(X, wc, bc, N, cdt, eps)
    out = nd(np.asarray(y, dtype=A.dtype).reshape(A.shape))
    if A.dtype == np.float16 and param_dtype == np.float16:
        xhat, rstd = layer_norm_half_statistics(X, rstd, N)
    return out, xhat, rstd, wc, M, N


cdef object replay_layer_norm(Record* r, tuple ins, object attrs):
    """layer_norm's replay step (replay_fn): ins = (input, weight or None, bias) as its record's
    inputs, attrs = (normalized_shape, eps); the record as layer_norm_eager fills it (float32 or
    float64 operands of one dtype: layer_norm_replayable)."""
    norm_shape, eps = attrs
    A = ins[0]
    w = ins[1] if len(ins) > 1 else None
    b = ins[2] if len(ins) > 2 else None
    out, xhat, rstd, wc, M, N = layer_norm_values(A, w, b, norm_shape, eps, A.dtype)
    r.op = OP_LAYER_NORM
    keep(&r.saved[0], xhat)
    keep(&r.saved[1], rstd)
    if wc is not None:
        keep(&r.saved[2], wc)
    keep(&r.aux, (A.shape, norm_shape, M, N, A.dtype, A.dtype, float(eps)))
    return out


register_replay(OP_LAYER_NORM, replay_layer_norm)


cdef tuple layer_norm_half_statistics(object X, object rstd, Py_ssize_t N):
    """The normalised rows and rstd layer_norm's backward reads for a float16 input (X its rows
    in float32): PyTorch keeps the mean and rstd in the input's dtype, float16, and its backward
    reads those rounded statistics (its gradients differ from the float32 statistics' by many
    ulps on rows of large mean)."""
    with IeeeResults():
        mean = np.true_divide(np.add.reduce(X, axis=1, keepdims=True), np.float32(N))
        mean = mean.astype(np.float16).astype(NP_FLOAT32)
        rstd = rstd.astype(np.float16).astype(NP_FLOAT32)
        xhat = np.ascontiguousarray((X - mean) * rstd.reshape(-1, 1))
    return xhat, rstd


cdef tuple layer_norm_numpy(object X, object wc, object bc, Py_ssize_t N, object cdt, object eps):
    """nk_layer_norm_forward's values by the numpy formula (rows longer than TG_SUM_MAX_N)."""
    with IeeeResults():
        mean = np.true_divide(np.add.reduce(X, axis=1, keepdims=True), N)
        # corrected by the residuals' mean: a constant row's mean is exact (see the C kernel)
        mean = mean + np.true_divide(np.add.reduce(X - mean, axis=1, keepdims=True), N)
        xc = X - mean
        var = np.true_divide(np.add.reduce(xc * xc, axis=1, keepdims=True), N)
        rstd = 1 / np.sqrt(var + cdt.type(eps))
        xhat = xc * rstd
        y = xhat
        if wc is not None:
            y = y * wc
        if bc is not None:
            y = y + bc
    return y, xhat, rstd


def torch_layer_norm(TensorBase input, normalized_shape, weight=None, bias=None, eps=1e-5,
                     cudnn_enable=True):
    """torch.layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, ...)."""
    return layer_norm(input, normalized_shape, weight, bias, eps)


# -- batch_norm ------------------------------------------------------------------------------------
# Input viewed as (N, C, S) (S the product of the dims after 1), normalised per channel.  Training:
# with the batch's mean and biased variance, the gradient through both (as layer_norm's, over axes
# (0, 2)); evaluation: with the running statistics, constants.  Saved: xhat (N, C, S) and rstd
# (1, C, 1) in the computation dtype, the weight (C,); aux: (input shape, dtype, weight dtype, eps,
# training).  The running statistics are updated by the Python front end (nn/_batch_norm.py).

cdef object vjp_batch_norm(Record* r, object g):
    xhat = <object>r.saved[0]
    rstd = <object>r.saved[1]
    w = <object>r.saved[2] if r.saved[2] != NULL else None
    in_shape, dt, wdt, eps, training = <tuple>r.aux
    g3 = g.reshape(xhat.shape)
    if g3.dtype != xhat.dtype:
        g3 = g3.astype(xhat.dtype)
    gi = gw = gb = None
    if needs_grad(r, 0):
        gx = g3 * w.reshape(1, -1, 1) if w is not None else g3
        if training:
            count = xhat.shape[0] * xhat.shape[2]
            a = np.true_divide(np.add.reduce(gx, axis=(0, 2), keepdims=True), count)
            b = np.true_divide(np.add.reduce(gx * xhat, axis=(0, 2), keepdims=True), count)
            gi = rstd * (gx - a - xhat * b)
        else:
            gi = gx * rstd
        gi = gi.reshape(in_shape)
        if gi.dtype != dt:
            gi = gi.astype(dt)
    if r.n_in > 1 and needs_grad(r, 1):
        gw = np.add.reduce(g3 * xhat, axis=(0, 2))
        if gw.dtype != wdt:
            gw = gw.astype(wdt)
    if r.n_in > 2 and needs_grad(r, 2):
        gb = np.add.reduce(g3, axis=(0, 2))
        if gb.dtype != wdt:
            gb = gb.astype(wdt)
    if r.n_in == 1:
        return gi
    if r.n_in == 2:
        return (gi, gw)
    return (gi, gw, gb)


OP_BATCH_NORM = register_op("NativeBatchNormBackward0", vjp_batch_norm)


from libc.math cimport fma, fmaf, sqrt, sqrtf

ctypedef fused bn_real:
    float
    double


cdef void batch_norm_kernel(const bn_real* x, bn_real* y, Py_ssize_t N, Py_ssize_t C,
                            Py_ssize_t S, bn_real* mean, bn_real* var, bn_real* rstd,
                            const bn_real* w, const bn_real* b, bint training,
                            double eps) noexcept nogil:
    """batch_norm over X (N, C, S), C-contiguous, channel by channel, in one compiled pass per
    statistic (the numpy version made ~15 array passes and as many calls).

    Training: the channel's mean and biased variance accumulated in double (PyTorch's CPU
    accumulation type; two passes, the variance around the mean) and rounded once into mean and
    var; rstd = 1 / sqrt(var + eps) in double, rounded.  Evaluation: mean and var are the running
    statistics (read), rstd = 1 / sqrt(var + eps) in the data's precision.  Then y as PyTorch's
    CPU kernel forms it: alpha = rstd * w, beta = b - mean * alpha, y = x * alpha + beta, each a
    fused multiply-add (not (x - mean) * rstd * w + b: an infinite weight there gives +-inf where
    PyTorch's inf - inf gives NaN, fuzz 60712509, 60720749).  w and b may be NULL."""
    cdef Py_ssize_t n, c, k, at
    cdef Py_ssize_t count = N * S
    cdef double total, m, d
    cdef bn_real mc, rc, alpha, beta
    for c in range(C):
        if training:
            total = 0.0
            for n in range(N):
                at = (n * C + c) * S
                for k in range(S):
                    total += <double>x[at + k]
            m = total / <double>count
            total = 0.0
            for n in range(N):
                at = (n * C + c) * S
                for k in range(S):
                    d = <double>x[at + k] - m
                    total += d * d
            mean[c] = <bn_real>m
            var[c] = <bn_real>(total / <double>count)
            rstd[c] = <bn_real>(1.0 / sqrt(total / <double>count + eps))
        elif bn_real is float:
            rstd[c] = <float>1.0 / sqrtf(var[c] + <float>eps)
        else:
            rstd[c] = 1.0 / sqrt(var[c] + eps)
        mc = mean[c]
        rc = rstd[c]
        alpha = rc * w[c] if w != NULL else rc
        if bn_real is float:
            beta = fmaf(-mc, alpha, b[c] if b != NULL else <float>0.0)
        else:
            beta = fma(-mc, alpha, b[c] if b != NULL else 0.0)
        for n in range(N):
            at = (n * C + c) * S
            for k in range(S):
                if bn_real is float:
                    y[at + k] = fmaf(x[at + k], alpha, beta)
                else:
                    y[at + k] = fma(x[at + k], alpha, beta)


cdef void batch_norm_normalised(const bn_real* x, bn_real* xhat, Py_ssize_t N, Py_ssize_t C,
                                Py_ssize_t S, const bn_real* mean,
                                const bn_real* rstd) noexcept nogil:
    """xhat = (x - mean) * rstd per channel, the normalised input batch_norm's backward reads."""
    cdef Py_ssize_t n, c, k, at
    for n in range(N):
        for c in range(C):
            at = (n * C + c) * S
            for k in range(S):
                xhat[at + k] = (x[at + k] - mean[c]) * rstd[c]


cdef object batch_norm_half_output(object X, object mean, object rstd, object w, object b,
                                   Py_ssize_t C):
    """y = x * alpha + beta (float32, X (N, C, S)) from float16-rounded statistics, as PyTorch's
    kernel: alpha = rstd * w, beta = b - mean * alpha (two roundings), then one fused
    multiply-add (in float64, exact for a float16 x, rounded to float32)."""
    with IeeeResults():
        alpha = rstd if w is None else rstd * w
        beta = np.negative(mean * alpha) if b is None else b - mean * alpha
        return (X.astype(np.float64) * alpha.astype(np.float64).reshape(1, C, 1)
                + beta.astype(np.float64).reshape(1, C, 1)).astype(NP_FLOAT32)


def _native_batch_norm(TensorBase input, weight, bias, running_mean, running_var, bint training,
                       double eps):
    """The normalisation of F.batch_norm as one record (the front end, nn/_batch_norm.py, checks
    the arguments and updates the running statistics): returns (output, batch mean, biased batch
    variance) in training, (output, None, None) otherwise; the statistics as (C,) ndarrays of the
    computation dtype."""
    A = input._array
    if A.dtype.kind != "f":
        raise NotImplementedError(f'"batch_norm" not implemented for \'{nn_scalar_name(A.dtype)}\'')
    cdef Py_ssize_t N = A.shape[0], C = A.shape[1], S = 1, i
    for i in range(2, A.ndim):
        S *= A.shape[i]
    cdt = NP_FLOAT32 if A.dtype.itemsize < 4 else A.dtype       # half: computed in float
    X = np.ascontiguousarray(A.reshape(N, C, S), dtype=cdt)
    wc = bc = None
    if weight is not None:
        wc = np.ascontiguousarray((<TensorBase>weight)._array.reshape(C), dtype=cdt)
    if bias is not None:
        bc = np.ascontiguousarray((<TensorBase>bias)._array.reshape(C), dtype=cdt)
    if training:
        mean = np.empty(C, dtype=cdt)
        var = np.empty(C, dtype=cdt)
    else:       # (read only: these may be the running buffers themselves)
        mean = np.ascontiguousarray((<TensorBase>running_mean)._array.reshape(C), dtype=cdt)
        var = np.ascontiguousarray((<TensorBase>running_var)._array.reshape(C), dtype=cdt)
    rstd = np.empty(C, dtype=cdt)
    y = np.empty((N, C, S), dtype=cdt)
    cdef void* px = nk_ptr(X)
    cdef void* py = nk_ptr(y)
    cdef void* pmean = nk_ptr(mean)
    cdef void* pvar = nk_ptr(var)
    cdef void* prstd = nk_ptr(rstd)
    cdef void* pw = nk_ptr(wc) if wc is not None else NULL
    cdef void* pb = nk_ptr(bc) if bc is not None else NULL
    cdef void* pxhat
    cdef bint in_float = cdt == NP_FLOAT32
    with nogil:
        if in_float:
            batch_norm_kernel(<float*>px, <float*>py, N, C, S, <float*>pmean, <float*>pvar,
                              <float*>prstd, <float*>pw, <float*>pb, training, eps)
        else:
            batch_norm_kernel(<double*>px, <double*>py, N, C, S, <double*>pmean,
                              <double*>pvar, <double*>prstd, <double*>pw, <double*>pb,
                              training, eps)
    # (the parameters, running statistics included, are all float16 or all float32 for a
    # float16 input: nn/_norm_dtypes.py; float32 ones are PyTorch's mixed form)
    mixed = any(p is not None and (<TensorBase>p)._array.dtype == NP_FLOAT32
                for p in (weight, bias, running_mean, running_var))
    if training and A.dtype == np.float16 and not mixed:
        # PyTorch keeps a float16 input's batch mean and invstd in float16 (its saved statistics
        # take the input's dtype) and forms the output, and its backward, from those rounded
        # statistics (measured: exact; the float32 ones were many ulps off near cancellation).
        # Its mixed form (float32 parameters, as a BatchNorm under float16 autocast has) keeps
        # them in float32 and is computed as float32 throughout (fuzz seed 67402255, silent:
        # rounded here, the output was ulps off and the bias before it got a gradient of
        # rounding noise where PyTorch's is 0)
        used_mean = mean.astype(np.float16).astype(cdt)
        rstd = rstd.astype(np.float16).astype(cdt)
        y = batch_norm_half_output(X, used_mean, rstd, wc, bc, C)
        pmean = nk_ptr(used_mean)
        prstd = nk_ptr(rstd)
    out = nd(y.reshape(A.shape) if y.dtype == A.dtype else y.astype(A.dtype).reshape(A.shape))
    cdef TensorBase res = wrap(out)
    inputs = (input,) if weight is None and bias is None else (
        (input, weight) if bias is None else (input, weight, bias))
    cdef Record* r = record_from(OP_BATCH_NORM, res, inputs)
    if r != NULL:
        # (the normalised input, for backward: made only when the op records)
        xhat = np.empty((N, C, S), dtype=cdt)
        pxhat = nk_ptr(xhat)
        with nogil:
            if in_float:
                batch_norm_normalised(<float*>px, <float*>pxhat, N, C, S, <float*>pmean,
                                      <float*>prstd)
            else:
                batch_norm_normalised(<double*>px, <double*>pxhat, N, C, S, <double*>pmean,
                                      <double*>prstd)
        keep_saved(r, 0, xhat, input)       # (under the input's version: see layer_norm)
        keep(&r.saved[1], rstd.reshape(1, C, 1))
        if wc is not None:
            save_value(r, 2, wc, weight)
        wdt = (<TensorBase>weight)._array.dtype if weight is not None else A.dtype
        keep(&r.aux, (A.shape, A.dtype, wdt, float(eps), bool(training)))
    if training:
        return res, mean, var
    return res, None, None


cdef void blend_kernel(bn_real* buf, const bn_real* stat, Py_ssize_t n, bn_real keep,
                       bn_real take) noexcept nogil:
    cdef Py_ssize_t c
    for c in range(n):
        buf[c] = buf[c] * keep + stat[c] * take


def _blend_running_statistic(buf, stat, double momentum):
    """buf = buf * (1 - momentum) + stat * momentum in place, batch_norm's running-statistics
    update, for a C-contiguous float32 or float64 buffer: each product and the sum rounded in
    the buffer's dtype, as numpy's `buf * (1 - momentum) + stat * momentum` rounds them (the
    factors rounded to that dtype first).  Returns False, leaving buf alone, for another dtype
    or layout (float16 buffers blend in float32: the caller's numpy path)."""
    if not (buf.flags.c_contiguous and buf.flags.writeable) or buf.dtype.kind != "f" \
            or buf.dtype.itemsize < 4:
        return False
    values = np.ascontiguousarray(stat, dtype=buf.dtype)
    cdef void* pbuf = nk_ptr(buf)
    cdef void* pstat = nk_ptr(values)
    cdef Py_ssize_t n = buf.size
    cdef double keep = 1.0 - momentum
    if buf.dtype == NP_FLOAT32:
        with nogil:
            blend_kernel(<float*>pbuf, <float*>pstat, n, <float>keep, <float>momentum)
    else:
        with nogil:
            blend_kernel(<double*>pbuf, <double*>pstat, n, keep, momentum)
    return True


# -- one_hot ------------------------------------------------------------------------------------

def one_hot(TensorBase input, num_classes=-1):
    """int64 one-hot encoding of an int64 index tensor (new last dim of num_classes); no grad.
    The argument is `input`, as PyTorch's parser names it (its docstring says `tensor`)."""
    I = input._array
    if I.dtype != NP_INT64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    num_classes = nn_int_argument(num_classes, "one_hot", "num_classes", 2)
    if I.size == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return wrap(np.zeros(I.shape + (max(num_classes, 0),), dtype=NP_INT64))
    lo = int(np.minimum.reduce(I, axis=None))
    hi = int(np.maximum.reduce(I, axis=None))
    if lo < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = hi + 1
    elif hi >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = (I.reshape(I.shape + (1,)) == np.arange(num_classes)).astype(NP_INT64)
    return wrap(out)


# -- pad ----------------------------------------------------------------------------------------------

cdef object vjp_pad(Record* r, object g):
    in_shape, dt, src, dst = <tuple>r.aux
    gi = np.zeros(in_shape, dtype=dt)
    gi[src] = g[dst]
    return gi


OP_CONSTANT_PAD = register_op("ConstantPadNdBackward0", vjp_pad)


def pad(TensorBase input, pad, mode="constant", value=None):
    """Constant padding: `pad` = (left, right) pairs from the last dim backwards; negative
    amounts crop.  Only mode='constant' is supported."""
    cdef Py_ssize_t n, ndim, j, d
    A = input._array
    amounts = []
    for j, p in enumerate(pad):
        if isinstance(p, TensorBase):
            p = int(p)
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found "
                            f"element of type {type_name(p)} at pos {j}")
        amounts.append(int(p))
    if mode != "constant":
        if mode in ("reflect", "replicate", "circular"):
            raise NotImplementedError(f"pad(mode='{mode}') is not supported by tapegrad; only "
                                      "mode='constant'")
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    n = len(amounts)
    ndim = A.ndim
    if n % 2 != 0:
        raise RuntimeError("Padding length must be divisible by 2")
    if n // 2 > ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {n} and input of dimension {ndim}")
    if isinstance(value, TensorBase) and (<TensorBase>value)._array.ndim == 0:
        value = (<TensorBase>value).item()          # (a 0-d tensor is read as its number)
    if value is None:
        value = 0
    out_shape = list(A.shape)
    src = [slice(None)] * ndim
    dst = [slice(None)] * ndim
    for j in range(n // 2):
        d = ndim - 1 - j
        left, right = amounts[2 * j], amounts[2 * j + 1]
        size = A.shape[d]
        lo = -left if left < 0 else 0
        hi = size + right if right < 0 else size
        length = hi - lo
        if length < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        new = size + left + right
        out_shape[d] = new
        src[d] = slice(lo, hi)
        start = left if left > 0 else 0
        dst[d] = slice(start, start + length)
    src_t = tuple(src)
    dst_t = tuple(dst)
    dt = A.dtype
    # F.pad reads `value` as a double (F.pad refuses a complex one before this), and
    # torch.constant_pad_nd as a Scalar (a complex one fills a complex tensor); both fill as
    # fill_ does: checked against the dtype's range (its RuntimeError), truncated toward zero
    # for an integer tensor
    if not isinstance(value, (int, float, complex, np.number)):
        raise TypeError(f"pad(): argument 'value' (position 4) must be float, not "
                        f"{type_name(value)}")
    fill = scalar_to_dtype(value if isinstance(value, (complex, np.complexfloating))
                           else float(value), dt)
    out = np.full(out_shape, fill, dtype=dt)
    out[dst_t] = A[src_t]
    out = nd(out)
    cdef TensorBase res = wrap(out)
    cdef Record* r = record_from(OP_CONSTANT_PAD, res, (input,))
    if r != NULL:
        keep(&r.aux, (A.shape, dt, src_t, dst_t))
    return res


# -- in-place overwrites and random ops (front ends in tapegrad/creation.py) ---------------------
# The overwritten value does not depend on the old one: its gradient is zero (PyTorch's
# ZeroBackward0 / FillBackward2 / NormalBackward0 / UniformBackward0, and each sampler's own:
# BernoulliBackward1/2 for bernoulli_ with a tensor / a number, ExponentialBackward0, ...);
# fill_ with a tensor value (FillBackward3) passes the summed gradient to the value.  A sample
# drawn from tensor parameters has zero gradients to them too (torch.normal(mean, std):
# NormalBackward1/2/3, torch.bernoulli: BernoulliBackward0, torch.poisson: PoissonBackward0).
# aux: per input (shape, dtype, summed).

cdef object vjp_overwrite(Record* r, object g):
    cdef tuple specs = <tuple>r.aux
    cdef int j
    grads = []
    for j in range(r.n_in):
        if not needs_grad(r, j):
            grads.append(None)
            continue
        shape, dt, summed = <tuple>specs[j]
        if summed:
            grads.append(np.asarray(np.add.reduce(g, axis=None), dtype=dt).reshape(shape))
        else:
            grads.append(np.zeros(shape, dtype=dt))
    if r.n_in == 1:
        return grads[0]
    return tuple(grads)


NN_OVERWRITE_OPS = {
    name: register_op(name, vjp_overwrite)
    for name in ("ZeroBackward0", "FillBackward2", "FillBackward3", "NormalBackward0",
                 "UniformBackward0", "NormalBackward1", "NormalBackward2", "NormalBackward3",
                 "BernoulliBackward0", "BernoulliBackward1", "BernoulliBackward2",
                 "PoissonBackward0", "ExponentialBackward0", "GeometricBackward0",
                 "LogNormalBackward0", "CauchyBackward0", "RandomBackward0", "RandomBackward1",
                 "RandomBackward2")}


cdef tuple nn_overwrite_specs(tuple inputs, tuple summed):
    return tuple(((<TensorBase>x)._array.shape, (<TensorBase>x)._array.dtype, s)
                 if isinstance(x, TensorBase) else None for x, s in zip(inputs, summed))


cdef object overwritable(object A, bint per_element):
    """Read-only array A (numpy marks every broadcast view so) as a writable alias for an
    overwrite.  As PyTorch: one value (zero_, fill_ with a number) is written even where several
    elements share a memory location (an expand()); values per element (a sampler's, a tensor
    fill_'s) are refused there.  A itself stays read-only."""
    if overlaps_itself(A) and per_element:
        raise RuntimeError(overlapping_write_message())
    W = A.view()
    try:
        W.flags.writeable = True        # a view of writable memory: numpy allows it
    except ValueError:
        raise RuntimeError("cannot write into a read-only tensor (its memory is a read-only "
                           "numpy array); clone() it first") from None
    return W


def _overwrite_(TensorBase t, values, str name, value=None):
    """t[...] = values in place (zero_, fill_, normal_, uniform_), for creation.py.

    A leaf that requires grad may only be overwritten under no_grad (PyTorch's error otherwise).
    A non-leaf gets a fresh array (values saved for other records' VJPs stay intact) and, in grad
    mode, a record named `name` whose gradient is zero (or, for a tensor `value`, its sum)."""
    cdef bint grad_on = grad_enabled()
    cdef Py_ssize_t old
    cdef Record* r
    fresh_operands(t, value)
    if grad_on and t._requires_grad and is_leaf_c(t) and t._base is None:
        raise RuntimeError(NN_LEAF_INPLACE)     # (a no_grad view: setitem_op names its rule)
    A = t._array
    value_grad = (isinstance(value, TensorBase) and (<TensorBase>value)._requires_grad
                  and grad_on)
    cdef bint recording = grad_on and (t._requires_grad or value_grad)
    if recording and t._base is not None:
        # a recorded overwrite of a view goes to its base as view[...] = values does (CopySlices
        # on the base, the view an AsStridedBackward0 of it), as PyTorch's; one number is
        # written into an expand()ed view too (its backward raises: OP_OVERLAPPING_SLICES)
        setitem_op(t, Ellipsis, value if isinstance(value, TensorBase) else
                   (wrap(values) if isinstance(values, np.ndarray) else values), False, False,
                   not isinstance(values, np.ndarray))
        return t
    check_inplace(t, recording)
    if not A.flags.writeable:
        A = overwritable(A, isinstance(values, np.ndarray))
    A[...] = values                 # into the storage: views see it; the version bump makes
    bump_version(t)                 # records that saved the old value refuse to use it
    if recording:
        inputs = (t,) if value is None or not isinstance(value, TensorBase) else (t, value)
        r = nn_record_inplace(<int>NN_OVERWRITE_OPS[name], t, inputs, &old)
        if r != NULL:
            keep(&r.aux, nn_overwrite_specs(inputs, (False, True)))
            nn_finish_inplace(t, old)
    return t


def _random_result(out, str name, tuple inputs):
    """A tensor holding `out`, recorded as `name` with zero gradients to the tensors among
    `inputs` (torch.normal with tensor mean/std)."""
    cdef TensorBase res = wrap(nd(out))
    cdef Record* r = record_from(<int>NN_OVERWRITE_OPS[name], res, inputs)
    if r != NULL:
        keep(&r.aux, nn_overwrite_specs(inputs, (False,) * len(inputs)))
    return res


# Dict literals, not keyword calls: ops_unary.pxi's registration says why (load-code size).
TENSOR_METHODS.update({"softmax": softmax, "log_softmax": log_softmax})
TORCH_FUNCTIONS.update({
    "softmax": softmax, "log_softmax": log_softmax, "dropout": torch_dropout,
    "embedding": torch_embedding, "layer_norm": torch_layer_norm})
NN_FUNCTIONS.update({
    "softmax": functional_softmax, "log_softmax": functional_log_softmax, "nll_loss": nll_loss,
    "cross_entropy": cross_entropy, "mse_loss": mse_loss, "l1_loss": l1_loss,
    "smooth_l1_loss": smooth_l1_loss, "huber_loss": huber_loss,
    "binary_cross_entropy": binary_cross_entropy,
    "binary_cross_entropy_with_logits": binary_cross_entropy_with_logits, "dropout": dropout,
    "embedding": embedding, "layer_norm": layer_norm, "one_hot": one_hot, "pad": pad})
