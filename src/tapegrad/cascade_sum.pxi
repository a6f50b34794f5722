# ---------------------------------------------------------------------------------------------
# Sums in PyTorch's order (cascade_sum.h says which order and why).  sum and mean, a broadcast
# operand's gradient (sum_to) and their tapegrad.compile replays all reduce float32/float64
# through here, so they print PyTorch's floats, and a replay stays bit-identical to eager.
# ---------------------------------------------------------------------------------------------

# A big full sum splits into this many chunks, as PyTorch splits it over its default thread
# count; fixed for the process, so results never depend on tapegrad.set_num_threads.
cdef int REDUCTION_BLOCKS = _default_kernel_threads()


cdef double cascade_sum_f64(ptrdiff_t n, const double* a) noexcept nogil:
    return tg_cascade_sum_f64(n, a, REDUCTION_BLOCKS)


cdef float cascade_sum_f32(ptrdiff_t n, const float* a) noexcept nogil:
    return tg_cascade_sum_f32(n, a, REDUCTION_BLOCKS)


cdef object cascade_reduce(object A, tuple axes, bint keepdim, double divisor=-1):
    """A (a C-contiguous float32/float64 array) summed over `axes` (normalised) in PyTorch's
    order, then divided by `divisor` in A's dtype when it is >= 0 (a mean: PyTorch's is its sum
    divided by the count); None for other layouts and dtypes (their order is not known here).

    As PyTorch's iterator, it sets size-1 dims aside and merges adjacent dims that are both
    reduced or both kept into groups.  One reduced group splits A into (outer, reduced, inner):
    inner == 1 is a sum of rows, otherwise each outer slice is a sum of columns; two or more
    (`x.mean((0, 2, 3))` of a batch of images) go to tg_cascade_groups."""
    cdef int t = -1
    if not kernel_array(A, &t):
        return strided_sum(A, axes, keepdim, divisor)
    cdef cnp.ndarray a = <cnp.ndarray>A
    cdef int ndim = cnp.PyArray_NDIM(a), i, n_groups = 0, n_reduced_groups = 0
    cdef Py_ssize_t d, outer = 1, reduced = 1, inner = 1, o
    cdef bint is_reduced
    cdef int out_ndim = 0
    cdef cnp.npy_intp out_dims[64]          # NPY_MAXDIMS (numpy 2)
    cdef ptrdiff_t group_sizes[64]
    cdef char group_reduced[64]
    for i in range(ndim):
        d = cnp.PyArray_DIMS(a)[i]
        is_reduced = i in axes
        if keepdim or not is_reduced:
            out_dims[out_ndim] = 1 if is_reduced else d
            out_ndim += 1
        if d == 1:
            continue
        if n_groups > 0 and group_reduced[n_groups - 1] == is_reduced:
            group_sizes[n_groups - 1] *= d
        else:
            group_sizes[n_groups] = d
            group_reduced[n_groups] = is_reduced
            n_groups += 1
            n_reduced_groups += is_reduced
        if is_reduced:
            reduced *= d
        elif n_reduced_groups == 0:
            outer *= d
        else:
            inner *= d
    # made through the C API: this runs in every broadcast operand's VJP
    cdef cnp.ndarray out = <cnp.ndarray>cnp.PyArray_EMPTY(out_ndim, out_dims, t, 0)
    cdef char* src = <char*>cnp.PyArray_DATA(a)
    cdef char* dst = <char*>cnp.PyArray_DATA(out)
    cdef Py_ssize_t item = 8 if t == cnp.NPY_FLOAT64 else 4, k, n_out = cnp.PyArray_SIZE(out)
    cdef float fdiv = <float>divisor
    with nogil:
        if n_reduced_groups > 1:
            if t == cnp.NPY_FLOAT64:
                tg_cascade_groups_f64(n_groups, group_sizes, group_reduced, <const double*>src,
                                      <double*>dst)
            else:
                tg_cascade_groups_f32(n_groups, group_sizes, group_reduced, <const float*>src,
                                      <float*>dst)
        elif inner == 1 and outer == 1:
            if t == cnp.NPY_FLOAT64:
                (<double*>dst)[0] = cascade_sum_f64(reduced, <const double*>src)
            else:
                (<float*>dst)[0] = cascade_sum_f32(reduced, <const float*>src)
        elif inner == 1:
            if t == cnp.NPY_FLOAT64:
                tg_cascade_rows_f64(outer, reduced, <const double*>src, <double*>dst)
            else:
                tg_cascade_rows_f32(outer, reduced, <const float*>src, <float*>dst)
        else:
            for o in range(outer):
                if t == cnp.NPY_FLOAT64:
                    tg_cascade_cols_f64(reduced, inner, <const double*>src, <double*>dst)
                else:
                    tg_cascade_cols_f32(reduced, inner, <const float*>src, <float*>dst)
                src += reduced * inner * item
                dst += inner * item
        if divisor >= 0:
            dst = <char*>cnp.PyArray_DATA(out)
            for k in range(n_out):
                if t == cnp.NPY_FLOAT64:
                    (<double*>dst)[k] = (<double*>dst)[k] / divisor
                else:
                    (<float*>dst)[k] = (<float*>dst)[k] / fdiv
    return out


cdef object strided_sum(object A, tuple axes, bint keepdim, double divisor):
    """cascade_reduce of a strided 1-d view (one dim of more than one element, a positive
    stride: `x[:, 0].sum()`), reduced over that dim, as PyTorch sums one (the scalar cascade);
    None for any other layout."""
    if not cnp.PyArray_Check(A):
        return None
    cdef cnp.ndarray a = <cnp.ndarray>A
    cdef int t = cnp.PyArray_TYPE(a), ndim = cnp.PyArray_NDIM(a), i, out_ndim = 0
    if (t != cnp.NPY_FLOAT64 and t != cnp.NPY_FLOAT32) or not cnp.PyArray_ISALIGNED(a) \
            or not cnp.PyArray_ISNOTSWAPPED(a):
        return None
    cdef Py_ssize_t item = cnp.PyArray_ITEMSIZE(a), n = 1, stride = 0, d
    cdef cnp.npy_intp out_dims[64]
    for i in range(ndim):
        d = cnp.PyArray_DIMS(a)[i]
        if d != 1:
            if stride != 0 or i not in axes or cnp.PyArray_STRIDES(a)[i] <= 0 \
                    or cnp.PyArray_STRIDES(a)[i] % item != 0:
                return None
            n = d
            stride = cnp.PyArray_STRIDES(a)[i] // item
        if keepdim or i not in axes:
            out_dims[out_ndim] = 1
            out_ndim += 1
    if stride == 0:
        return None
    cdef cnp.ndarray out = <cnp.ndarray>cnp.PyArray_EMPTY(out_ndim, out_dims, t, 0)
    if t == cnp.NPY_FLOAT64:
        (<double*>cnp.PyArray_DATA(out))[0] = tg_cascade_strided_sum_f64(
            n, stride, <const double*>cnp.PyArray_DATA(a), REDUCTION_BLOCKS)
        if divisor >= 0:
            (<double*>cnp.PyArray_DATA(out))[0] /= divisor
    else:
        (<float*>cnp.PyArray_DATA(out))[0] = tg_cascade_strided_sum_f32(
            n, stride, <const float*>cnp.PyArray_DATA(a), REDUCTION_BLOCKS)
        if divisor >= 0:
            (<float*>cnp.PyArray_DATA(out))[0] /= <float>divisor
    return out


cdef object nll_sum(object values, object valid):
    """values (one per sample; C-contiguous float32/float64/float16) summed in nll_loss's order
    (tg_nll_sum), as a 0-d array of their dtype, leaving out the samples where `valid` (a
    C-contiguous bool array of values' size, or None for all) is False; None for other arrays."""
    cdef int t = -1
    cdef bint half = False
    if cnp.PyArray_Check(values) and cnp.PyArray_TYPE(<cnp.ndarray>values) == cnp.NPY_FLOAT16 \
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>values):
        # (PyTorch's levels are float16 too: every addition rounded to float16, tg_nll_sum_f16)
        values, half = (<cnp.ndarray>values).astype(np.float32), True
    if not kernel_array(values, &t):
        return None
    cdef Py_ssize_t n = cnp.PyArray_SIZE(<cnp.ndarray>values)
    cdef const char* keep_ = NULL
    if valid is not None:
        if (not cnp.PyArray_Check(valid) or cnp.PyArray_TYPE(<cnp.ndarray>valid) != cnp.NPY_BOOL
                or not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>valid)
                or cnp.PyArray_SIZE(<cnp.ndarray>valid) != n):
            return None
        keep_ = <const char*>cnp.PyArray_DATA(<cnp.ndarray>valid)
    cdef cnp.ndarray out = <cnp.ndarray>cnp.PyArray_EMPTY(0, NULL, t, 0)
    if half:
        (<float*>cnp.PyArray_DATA(out))[0] = tg_nll_sum_f16(
            n, <const float*>cnp.PyArray_DATA(<cnp.ndarray>values), keep_)
        return out.astype(np.float16)               # (exact: the sum is a float16 value)
    if t == cnp.NPY_FLOAT64:
        (<double*>cnp.PyArray_DATA(out))[0] = tg_nll_sum_f64(
            n, <const double*>cnp.PyArray_DATA(<cnp.ndarray>values), keep_)
    else:
        (<float*>cnp.PyArray_DATA(out))[0] = tg_nll_sum_f32(
            n, <const float*>cnp.PyArray_DATA(<cnp.ndarray>values), keep_)
    return out
