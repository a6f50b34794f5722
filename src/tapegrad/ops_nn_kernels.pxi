# ---------------------------------------------------------------------------------------------
# Drivers of the window and recurrent kernels (nn_kernels.c) for tapegrad/nn's convolution,
# pooling and recurrent layers.  The autograd of those layers lives in Python (custom Functions
# in tapegrad/nn/_conv_ops.py, _pool_ops.py and modules/rnn.py: one record per call, with
# create_graph through their differentiable fallbacks); these functions are the numeric work of
# one call on ndarrays: checks of what the C code relies on (dtype, contiguity, sizes), the
# kernel calls, and for the recurrent layers the loop over time with one BLAS matmul per step.
#
# A window geometry crosses from Python as a 14-tuple (N, C, H, W, Ho, Wo, kh, kw, sh, sw, pt,
# pl, dh, dw); nn_kernels.h describes the layouts.
# ---------------------------------------------------------------------------------------------

from libc.stdint cimport uint8_t

cdef extern from "nn_kernels.h" nogil:
    ctypedef struct tg_window:
        ptrdiff_t N, C, H, W, Ho, Wo, kh, kw, sh, sw, pt, pl, dh, dw
    void tg_im2col_f32(const float* x, float* cols, const tg_window* g, ptrdiff_t row_stride,
                       ptrdiff_t n_stride, float fill)
    void tg_im2col_f64(const double* x, double* cols, const tg_window* g, ptrdiff_t row_stride,
                       ptrdiff_t n_stride, double fill)
    void tg_col2im_f32(const float* cols, float* x, const tg_window* g, ptrdiff_t row_stride,
                       ptrdiff_t n_stride)
    void tg_col2im_f64(const double* cols, double* x, const tg_window* g, ptrdiff_t row_stride,
                       ptrdiff_t n_stride)
    enum: TG_CONV_FORWARD, TG_CONV_GRAD_INPUT, TG_CONV_GRAD_WEIGHT
    ptrdiff_t tg_conv2d_work_size_f32(const tg_window* g, ptrdiff_t O, ptrdiff_t G, int which)
    ptrdiff_t tg_conv2d_work_size_f64(const tg_window* g, ptrdiff_t O, ptrdiff_t G, int which)
    void tg_conv2d_f32(const float* x, const float* w, const float* bias, float* y,
                       const tg_window* g, ptrdiff_t O, ptrdiff_t G, float* work)
    void tg_conv2d_f64(const double* x, const double* w, const double* bias, double* y,
                       const tg_window* g, ptrdiff_t O, ptrdiff_t G, double* work)
    void tg_conv2d_grad_input_f32(const float* gy, const float* w, float* gx, const tg_window* g,
                                  ptrdiff_t O, ptrdiff_t G, float* work)
    void tg_conv2d_grad_input_f64(const double* gy, const double* w, double* gx,
                                  const tg_window* g, ptrdiff_t O, ptrdiff_t G, double* work)
    void tg_conv2d_grad_weight_f32(const float* x, const float* gy, float* gw, const tg_window* g,
                                   ptrdiff_t O, ptrdiff_t G, float* work)
    void tg_conv2d_grad_weight_f64(const double* x, const double* gy, double* gw,
                                   const tg_window* g, ptrdiff_t O, ptrdiff_t G, double* work)
    void tg_max_pool2d_f32(const float* x, float* y, int64_t* idx, const tg_window* g)
    void tg_max_pool2d_f64(const double* x, double* y, int64_t* idx, const tg_window* g)
    void tg_relu_max_pool2d_f32(const float* x, float* y, int64_t* idx, const tg_window* g,
                                float* plane)
    void tg_relu_max_pool2d_f64(const double* x, double* y, int64_t* idx, const tg_window* g,
                                double* plane)
    void tg_max_pool2d_grad_f32(const float* gy, const int64_t* idx, float* gx, const tg_window* g,
                                const float* xmask)
    void tg_max_pool2d_grad_f64(const double* gy, const int64_t* idx, double* gx,
                                const tg_window* g, const double* xmask)
    void tg_max_pool2d_grad_kept_f32(const float* gy, const int64_t* idx, float* gx,
                                     const tg_window* g, const uint8_t* keep)
    void tg_max_pool2d_grad_kept_f64(const double* gy, const int64_t* idx, double* gx,
                                     const tg_window* g, const uint8_t* keep)
    ptrdiff_t tg_conv2d_relu_pool_work_size_f32(const tg_window* g, ptrdiff_t O, ptrdiff_t G)
    ptrdiff_t tg_conv2d_relu_pool_work_size_f64(const tg_window* g, ptrdiff_t O, ptrdiff_t G)
    void tg_conv2d_relu_pool_f32(const float* x, const float* w, const float* bias, float* y,
                                 int64_t* idx, uint8_t* keep, const tg_window* g, ptrdiff_t O,
                                 ptrdiff_t G, float* work)
    void tg_conv2d_relu_pool_f64(const double* x, const double* w, const double* bias,
                                 double* y, int64_t* idx, uint8_t* keep, const tg_window* g,
                                 ptrdiff_t O, ptrdiff_t G, double* work)
    void tg_lstm_fwd_f32(ptrdiff_t B, ptrdiff_t H, const float* gi, const float* hh,
                         const float* c0, float* acts, float* c, float* tc, float* h)
    void tg_lstm_fwd_f64(ptrdiff_t B, ptrdiff_t H, const double* gi, const double* hh,
                         const double* c0, double* acts, double* c, double* tc, double* h)
    void tg_lstm_bwd_f32(ptrdiff_t B, ptrdiff_t H, const float* acts, const float* c0,
                         const float* tc, const float* dh, float* dc, float* dgates)
    void tg_lstm_bwd_f64(ptrdiff_t B, ptrdiff_t H, const double* acts, const double* c0,
                         const double* tc, const double* dh, double* dc, double* dgates)
    void tg_gru_fwd_f32(ptrdiff_t B, ptrdiff_t H, const float* gi, const float* hh,
                        const float* h0, float* acts, float* h)
    void tg_gru_fwd_f64(ptrdiff_t B, ptrdiff_t H, const double* gi, const double* hh,
                        const double* h0, double* acts, double* h)
    void tg_gru_bwd_f32(ptrdiff_t B, ptrdiff_t H, const float* acts, const float* hh,
                        const float* h0, const float* dh, float* dgi, float* dhh, float* dh0)
    void tg_gru_bwd_f64(ptrdiff_t B, ptrdiff_t H, const double* acts, const double* hh,
                        const double* h0, const double* dh, double* dgi, double* dhh,
                        double* dh0)
    void tg_rnn_fwd_f32(ptrdiff_t B, ptrdiff_t H, int relu, const float* gi, const float* hh,
                        float* h)
    void tg_rnn_fwd_f64(ptrdiff_t B, ptrdiff_t H, int relu, const double* gi, const double* hh,
                        double* h)
    void tg_rnn_bwd_f32(ptrdiff_t B, ptrdiff_t H, int relu, const float* h, const float* dh,
                        float* dpre)
    void tg_rnn_bwd_f64(ptrdiff_t B, ptrdiff_t H, int relu, const double* h, const double* dh,
                        double* dpre)


cdef inline void* nk_ptr(object a) noexcept:
    return cnp.PyArray_DATA(<cnp.ndarray>a)


cdef bint nk_is_f32(object a) except -1:
    """True for float32, False for float64; anything else (or a non-contiguous array) is a bug
    of the caller, raised rather than read wrongly."""
    if not isinstance(a, cnp.ndarray) or not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>a):
        raise ValueError("tapegrad: nn kernel operand must be a C-contiguous ndarray")
    cdef int t = cnp.PyArray_TYPE(<cnp.ndarray>a)
    if t == cnp.NPY_FLOAT32:
        return True
    if t == cnp.NPY_FLOAT64:
        return False
    raise TypeError(f"tapegrad: nn kernel operand must be float32 or float64, not {a.dtype}")


cdef int nk_same(object a, bint f32, Py_ssize_t size) except -1:
    if nk_is_f32(a) != f32 or cnp.PyArray_SIZE(<cnp.ndarray>a) != size:
        raise ValueError(f"tapegrad: nn kernel operand of dtype {a.dtype} and size {a.size}, "
                         f"expected {'float32' if f32 else 'float64'} and size {size}")
    return 0


cdef int nk_window(tuple geom, tg_window* g) except -1:
    (g.N, g.C, g.H, g.W, g.Ho, g.Wo, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.dh, g.dw) = geom
    if min(geom) < 0 or g.sh <= 0 or g.sw <= 0 or g.dh <= 0 or g.dw <= 0 or g.kh <= 0 \
            or g.kw <= 0:
        raise ValueError(f"tapegrad: bad window geometry {geom}")
    return 0


# -- the kernels' workspace ------------------------------------------------------------------
# A training loop runs each layer on the same shapes every step, and a step's large buffers
# (convolution outputs and scratch, pooling maxima, attention probabilities, recurrent gates,
# states, outputs and their gradients: 1.4 MB for the gates of a 128-wide LSTM over 35 steps of
# 20) were fresh allocations: glibc hands freed blocks this large back to the kernel between
# steps, and the next step paid a page fault per 4 KiB touched (~2,600 a step for the LSTM bench,
# a third of its time; ~700 for the encoder).  nk_buffer returns a pooled array that nothing but
# the pool refers to, or a new one that joins the pool.  Every holder of an ndarray or of a view
# of it (a tensor, a saved value of a live graph, a user's numpy view) owns a reference to it, so
# a buffer still in use is never handed out again: two forwards before one backward,
# retain_graph and outputs kept by the caller each get their own buffers.  Lookups run under the
# GIL with no Python code between the check and the hand-out, so two threads cannot take the
# same buffer.

cdef dict nk_pool = {}                      # (shape, dtype) -> list of arrays
cdef object NK_F32 = np.dtype(np.float32), NK_F64 = np.dtype(np.float64)
cdef object NK_I64 = np.dtype(np.int64)
cdef Py_ssize_t nk_pool_bytes = 0           # bytes held by the pool
cdef Py_ssize_t NK_POOL_LIMIT = 64 << 20    # at most this many bytes are pooled

cdef extern from *:
    """
    static inline Py_ssize_t nk_refcount(PyObject* o) { return Py_REFCNT(o); }
    """
    Py_ssize_t nk_refcount(PyObject* o) noexcept
    PyObject* PyList_GET_ITEM(object lst, Py_ssize_t i)


cdef int nk_pool_trim() except -1:
    """Drop every pooled array that nothing else refers to."""
    global nk_pool_bytes
    cdef list bucket, keep
    cdef Py_ssize_t i
    for key in list(nk_pool):
        bucket = nk_pool[key]
        keep = []
        for i in range(len(bucket)):
            if nk_refcount(PyList_GET_ITEM(bucket, i)) == 1:
                nk_pool_bytes -= (<cnp.ndarray>bucket[i]).nbytes
            else:
                keep.append(bucket[i])
        if keep:
            nk_pool[key] = keep
        else:
            del nk_pool[key]
    return 0


cdef object nk_buffer(tuple shape, object dt):
    """An uninitialised C-contiguous array of `shape` and dtype `dt`, from the pool when one is
    free (the pool's reference its only one)."""
    global nk_pool_bytes
    key = (shape, dt)
    cdef list bucket = nk_pool.get(key)
    cdef Py_ssize_t i
    if bucket is not None:
        for i in range(len(bucket)):
            if nk_refcount(PyList_GET_ITEM(bucket, i)) == 1:
                return bucket[i]
    arr = np.empty(shape, dtype=dt)
    cdef Py_ssize_t nbytes = arr.nbytes
    if nk_pool_bytes + nbytes > NK_POOL_LIMIT:
        nk_pool_trim()
    if nk_pool_bytes + nbytes <= NK_POOL_LIMIT:
        if bucket is None:
            bucket = nk_pool[key] = []
        bucket.append(arr)
        nk_pool_bytes += nbytes
    return arr


def _nn_workspace_bytes():
    """(bytes pooled, bytes of pooled arrays in use): for tests and the footprint bench."""
    cdef Py_ssize_t used = 0, i
    for bucket in nk_pool.values():
        for i in range(len(bucket)):
            if nk_refcount(PyList_GET_ITEM(bucket, i)) > 1:
                used += (<cnp.ndarray>bucket[i]).nbytes
    return nk_pool_bytes, used


def _im2col(x, tuple geom, bint by_sample, double fill=0.0):
    """Columns of the windows of x (N, C, H, W): (C*kh*kw, N*L) when not by_sample, (N, C*kh*kw, L)
    when by_sample (L = Ho*Wo); `fill` where a window lies on padding."""
    cdef tg_window g
    nk_window(geom, &g)
    cdef bint f32 = nk_is_f32(x)
    nk_same(x, f32, g.N * g.C * g.H * g.W)
    cdef Py_ssize_t K = g.C * g.kh * g.kw, L = g.Ho * g.Wo
    if by_sample:
        cols = np.empty((g.N, K, L), dtype=x.dtype)
        row_stride, n_stride = L, K * L
    else:
        cols = np.empty((K, g.N * L), dtype=x.dtype)
        row_stride, n_stride = g.N * L, L
    cdef ptrdiff_t rs = row_stride, ns = n_stride
    if f32:
        tg_im2col_f32(<float*>nk_ptr(x), <float*>nk_ptr(cols), &g, rs, ns, <float>fill)
    else:
        tg_im2col_f64(<double*>nk_ptr(x), <double*>nk_ptr(cols), &g, rs, ns, fill)
    return cols


def _col2im(cols, tuple geom, bint by_sample):
    """The adjoint of _im2col: a new (N, C, H, W) array, each position the sum of the column
    entries read from it."""
    cdef tg_window g
    nk_window(geom, &g)
    cdef bint f32 = nk_is_f32(cols)
    cdef Py_ssize_t K = g.C * g.kh * g.kw, L = g.Ho * g.Wo
    nk_same(cols, f32, K * g.N * L)
    cdef ptrdiff_t rs = L if by_sample else g.N * L, ns = K * L if by_sample else L
    x = np.empty((g.N, g.C, g.H, g.W), dtype=cols.dtype)
    if f32:
        tg_col2im_f32(<float*>nk_ptr(cols), <float*>nk_ptr(x), &g, rs, ns)
    else:
        tg_col2im_f64(<double*>nk_ptr(cols), <double*>nk_ptr(x), &g, rs, ns)
    return x


cdef object nk_conv_work(const tg_window* g, ptrdiff_t O, ptrdiff_t G, int which, bint f32):
    """A scratch buffer for one fused-convolution call (nn_kernels.h)."""
    if f32:
        return nk_buffer((tg_conv2d_work_size_f32(g, O, G, which),), NK_F32)
    return nk_buffer((tg_conv2d_work_size_f64(g, O, G, which),), NK_F64)


cdef int nk_conv_shapes(tuple geom, tg_window* g, ptrdiff_t O, ptrdiff_t G) except -1:
    nk_window(geom, g)
    if G <= 0 or O <= 0 or g.C % G or O % G or g.N <= 0 or g.Ho <= 0 or g.Wo <= 0:
        raise ValueError(f"tapegrad: bad fused convolution shapes {geom}, O={O}, groups={G}")
    return 0


def _conv2d_fused(x, w, bias, tuple geom, Py_ssize_t groups):
    """y (N, O, Ho, Wo) = conv(x, w) (+ bias) by the fused kernel: x (N, C, H, W) and w
    (O, C/groups, kh, kw) C-contiguous, one float dtype; bias (O,) or None."""
    cdef tg_window g
    cdef ptrdiff_t O = w.shape[0], G = groups
    nk_conv_shapes(geom, &g, O, G)
    cdef bint f32 = nk_is_f32(x)
    nk_same(x, f32, g.N * g.C * g.H * g.W)
    nk_same(w, f32, O * (g.C // G) * g.kh * g.kw)
    if bias is not None:
        nk_same(bias, f32, O)
    cdef void* pb = NULL if bias is None else nk_ptr(bias)
    y = nk_buffer((g.N, O, g.Ho, g.Wo), x.dtype)
    work = nk_conv_work(&g, O, G, TG_CONV_FORWARD, f32)
    if f32:
        tg_conv2d_f32(<float*>nk_ptr(x), <float*>nk_ptr(w), <float*>pb, <float*>nk_ptr(y), &g,
                      O, G, <float*>nk_ptr(work))
    else:
        tg_conv2d_f64(<double*>nk_ptr(x), <double*>nk_ptr(w), <double*>pb, <double*>nk_ptr(y),
                      &g, O, G, <double*>nk_ptr(work))
    return y


def _conv2d_relu_max_pool2d_fused(x, w, bias, tuple geom, Py_ssize_t groups):
    """(maxima (N, O, Ho/2, Wo/2), their flat positions in each (Ho, Wo) plane, int64, relu's
    gradient test at each (uint8)) of the 2x2 / stride 2 max pooling of relu(conv(x, w) (+ bias)):
    bit for bit _conv2d_fused followed by _max_pool2d_arrays(..., relu=True), without the
    full-size convolution output (nn_kernels.h, tg_conv2d_relu_pool).  geom: the convolution's,
    with Ho, Wo >= 2."""
    cdef tg_window g
    cdef ptrdiff_t O = w.shape[0], G = groups
    nk_conv_shapes(geom, &g, O, G)
    if g.Ho < 2 or g.Wo < 2:
        raise ValueError(f"tapegrad: no 2x2 pooling window in a {g.Ho}x{g.Wo} convolution output")
    cdef bint f32 = nk_is_f32(x)
    nk_same(x, f32, g.N * g.C * g.H * g.W)
    nk_same(w, f32, O * (g.C // G) * g.kh * g.kw)
    if bias is not None:
        nk_same(bias, f32, O)
    cdef void* pb = NULL if bias is None else nk_ptr(bias)
    shape = (g.N, O, g.Ho // 2, g.Wo // 2)
    y = nk_buffer(shape, x.dtype)
    idx = nk_buffer(shape, NK_I64)
    keep = np.empty(shape, dtype=np.uint8)      # (kept by the backward: not a pooled buffer)
    cdef uint8_t* pk = <uint8_t*>nk_ptr(keep)
    if f32:
        work = nk_buffer((tg_conv2d_relu_pool_work_size_f32(&g, O, G),), NK_F32)
        tg_conv2d_relu_pool_f32(<float*>nk_ptr(x), <float*>nk_ptr(w), <float*>pb,
                                <float*>nk_ptr(y), <int64_t*>nk_ptr(idx), pk, &g, O, G,
                                <float*>nk_ptr(work))
    else:
        work = nk_buffer((tg_conv2d_relu_pool_work_size_f64(&g, O, G),), NK_F64)
        tg_conv2d_relu_pool_f64(<double*>nk_ptr(x), <double*>nk_ptr(w), <double*>pb,
                                <double*>nk_ptr(y), <int64_t*>nk_ptr(idx), pk, &g, O, G,
                                <double*>nk_ptr(work))
    return y, idx, keep


def _conv2d_grad_input_fused(gy, w, tuple geom, Py_ssize_t groups):
    """gx (N, C, H, W): the adjoint of conv in x applied to gy (N, O, Ho, Wo), by the fused
    kernel (geom's N, C, H, W are gx's)."""
    cdef tg_window g
    cdef ptrdiff_t O = w.shape[0], G = groups
    nk_conv_shapes(geom, &g, O, G)
    cdef bint f32 = nk_is_f32(gy)
    nk_same(gy, f32, g.N * O * g.Ho * g.Wo)
    nk_same(w, f32, O * (g.C // G) * g.kh * g.kw)
    gx = nk_buffer((g.N, g.C, g.H, g.W), gy.dtype)
    work = nk_conv_work(&g, O, G, TG_CONV_GRAD_INPUT, f32)
    if f32:
        tg_conv2d_grad_input_f32(<float*>nk_ptr(gy), <float*>nk_ptr(w), <float*>nk_ptr(gx), &g,
                                 O, G, <float*>nk_ptr(work))
    else:
        tg_conv2d_grad_input_f64(<double*>nk_ptr(gy), <double*>nk_ptr(w), <double*>nk_ptr(gx),
                                 &g, O, G, <double*>nk_ptr(work))
    return gx


def _conv2d_grad_weight_fused(x, gy, tuple geom, Py_ssize_t O, Py_ssize_t groups):
    """gw (O, C/groups, kh, kw): the adjoint of conv in w applied to gy (N, O, Ho, Wo), summed
    over the batch, by the fused kernel."""
    cdef tg_window g
    cdef ptrdiff_t G = groups
    nk_conv_shapes(geom, &g, O, G)
    cdef bint f32 = nk_is_f32(x)
    nk_same(x, f32, g.N * g.C * g.H * g.W)
    nk_same(gy, f32, g.N * O * g.Ho * g.Wo)
    gw = nk_buffer((O, g.C // G, g.kh, g.kw), x.dtype)
    work = nk_conv_work(&g, O, G, TG_CONV_GRAD_WEIGHT, f32)
    if f32:
        tg_conv2d_grad_weight_f32(<float*>nk_ptr(x), <float*>nk_ptr(gy), <float*>nk_ptr(gw), &g,
                                  O, G, <float*>nk_ptr(work))
    else:
        tg_conv2d_grad_weight_f64(<double*>nk_ptr(x), <double*>nk_ptr(gy), <double*>nk_ptr(gw),
                                  &g, O, G, <double*>nk_ptr(work))
    return gw


def _max_pool2d_arrays(x, tuple geom, bint relu=False):
    """(maxima (N, C, Ho, Wo), their flat positions h*W + w in each plane, int64) of x's windows,
    by PyTorch's rules (nn_kernels.h); of relu(x)'s windows when `relu` (bit for bit the pooling
    of the relu kernel's output, which is never made: a replay's fused relu + max-pool step)."""
    cdef tg_window g
    nk_window(geom, &g)
    cdef bint f32 = nk_is_f32(x)
    nk_same(x, f32, g.N * g.C * g.H * g.W)
    y = nk_buffer((g.N, g.C, g.Ho, g.Wo), x.dtype)
    idx = nk_buffer((g.N, g.C, g.Ho, g.Wo), NK_I64)
    if relu:
        plane = nk_buffer((g.H * g.W,), x.dtype)
        if f32:
            tg_relu_max_pool2d_f32(<float*>nk_ptr(x), <float*>nk_ptr(y), <int64_t*>nk_ptr(idx),
                                   &g, <float*>nk_ptr(plane))
        else:
            tg_relu_max_pool2d_f64(<double*>nk_ptr(x), <double*>nk_ptr(y),
                                   <int64_t*>nk_ptr(idx), &g, <double*>nk_ptr(plane))
    elif f32:
        tg_max_pool2d_f32(<float*>nk_ptr(x), <float*>nk_ptr(y), <int64_t*>nk_ptr(idx), &g)
    else:
        tg_max_pool2d_f64(<double*>nk_ptr(x), <double*>nk_ptr(y), <int64_t*>nk_ptr(idx), &g)
    return y, idx


def _max_pool2d_grad_array(gy, idx, tuple geom, xmask=None, keep=None):
    """The input gradient (N, C, H, W) of max pooling: gy added at idx (out-of-plane indices
    dropped); with `xmask` (the x of _max_pool2d_arrays(x, geom, relu=True)) the gradient in x of
    relu followed by the pooling: nothing goes where x <= 0; with `keep` (uint8 of gy's size,
    _conv2d_relu_max_pool2d_fused's) the same with relu's test already made per window."""
    cdef tg_window g
    nk_window(geom, &g)
    cdef bint f32 = nk_is_f32(gy)
    nk_same(gy, f32, g.N * g.C * g.Ho * g.Wo)
    if (not isinstance(idx, cnp.ndarray) or idx.dtype != np.int64 or idx.size != gy.size
            or not idx.flags.c_contiguous):
        raise ValueError("tapegrad: max-pool indices must be C-contiguous int64 of gy's size")
    cdef void* pm = NULL
    if xmask is not None:
        nk_same(xmask, f32, g.N * g.C * g.H * g.W)
        pm = nk_ptr(xmask)
    gx = nk_buffer((g.N, g.C, g.H, g.W), gy.dtype)
    if keep is not None:
        if (not isinstance(keep, cnp.ndarray) or keep.dtype != np.uint8 or keep.size != gy.size
                or not keep.flags.c_contiguous or xmask is not None):
            raise ValueError("tapegrad: max-pool keep mask must be C-contiguous uint8 of gy's "
                             "size (and no xmask)")
        if f32:
            tg_max_pool2d_grad_kept_f32(<float*>nk_ptr(gy), <int64_t*>nk_ptr(idx),
                                        <float*>nk_ptr(gx), &g, <uint8_t*>nk_ptr(keep))
        else:
            tg_max_pool2d_grad_kept_f64(<double*>nk_ptr(gy), <int64_t*>nk_ptr(idx),
                                        <double*>nk_ptr(gx), &g, <uint8_t*>nk_ptr(keep))
        return gx
    if f32:
        tg_max_pool2d_grad_f32(<float*>nk_ptr(gy), <int64_t*>nk_ptr(idx), <float*>nk_ptr(gx),
                               &g, <const float*>pm)
    else:
        tg_max_pool2d_grad_f64(<double*>nk_ptr(gy), <int64_t*>nk_ptr(idx),
                               <double*>nk_ptr(gx), &g, <const double*>pm)
    return gx


# -- recurrent layers: the whole sequence of one layer and direction --------------------------
# mode: 0 LSTM, 1 GRU, 2 RNN tanh, 3 RNN relu.  gi (T, B, G*H) is the input projection of every
# step (for LSTM with both biases folded in; for RNN and GRU with b_ih only, b_hh added by each
# step's hidden product, as PyTorch's cells add it: the layer's steps are its cells' bit for
# bit).  The forward keeps what the backward needs in a tuple `saved`.

cdef enum:
    NK_LSTM = 0
    NK_GRU = 1
    NK_RNN_TANH = 2
    NK_RNN_RELU = 3


cdef int nk_gates(int mode) noexcept:
    return 4 if mode == NK_LSTM else (3 if mode == NK_GRU else 1)


cdef extern from "nn_kernels.h" nogil:
    ptrdiff_t tg_gemm_packed_size_f32(ptrdiff_t K, ptrdiff_t N)
    ptrdiff_t tg_gemm_packed_size_f64(ptrdiff_t K, ptrdiff_t N)
    void tg_gemm_pack_f32(ptrdiff_t K, ptrdiff_t N, const float* b, ptrdiff_t rs, ptrdiff_t cs,
                          float* packed)
    void tg_gemm_pack_f64(ptrdiff_t K, ptrdiff_t N, const double* b, ptrdiff_t rs, ptrdiff_t cs,
                          double* packed)
    void tg_gemm_packed_f32(ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const float* a, ptrdiff_t lda,
                            const float* packed, const float* bias, const float* add,
                            ptrdiff_t ldadd, float* c, ptrdiff_t ldc)
    void tg_gemm_packed_f64(ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const double* a,
                            ptrdiff_t lda, const double* packed, const double* bias,
                            const double* add, ptrdiff_t ldadd, double* c, ptrdiff_t ldc)
    int tg_gemm_packed_at_f32(ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const float* a,
                              ptrdiff_t lda, const float* packed, float* c, ptrdiff_t ldc)
    int tg_gemm_packed_at_f64(ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const double* a,
                              ptrdiff_t lda, const double* packed, double* c, ptrdiff_t ldc)


cdef object nk_pack(object b, ptrdiff_t K, ptrdiff_t N, ptrdiff_t rs, ptrdiff_t cs, bint f32):
    """B (K x N, element (k, n) at b[k*rs + n*cs]) packed for nk_gemm: a 1-d workspace array."""
    if f32:
        packed = nk_buffer((tg_gemm_packed_size_f32(K, N),), NK_F32)
        tg_gemm_pack_f32(K, N, <float*>nk_ptr(b), rs, cs, <float*>nk_ptr(packed))
    else:
        packed = nk_buffer((tg_gemm_packed_size_f64(K, N),), NK_F64)
        tg_gemm_pack_f64(K, N, <double*>nk_ptr(b), rs, cs, <double*>nk_ptr(packed))
    return packed


cdef object nk_gemm_at(object a, Py_ssize_t K, Py_ssize_t M, object b, Py_ssize_t N, bint f32):
    """a^T @ b for C-contiguous a (K x M) and b (K x N): a new (M x N) array of its own, not a
    workspace one: it is a weight gradient, which becomes a .grad, and the sweep adopts an array
    nobody else holds where it copies a pooled one (an LSTM step copied all its weights'
    gradients).  The sum over K (every step and batch row) runs in the packed AVX-512 kernel where
    there is one, else in BLAS."""
    dt = NK_F32 if f32 else NK_F64
    out = np.empty((M, N), dtype=dt)
    cdef Py_ssize_t isz = dt.itemsize
    cdef int done = 0
    if M and N and K:
        packed = nk_pack(b, K, N, N, 1, f32)
        if f32:
            done = tg_gemm_packed_at_f32(M, N, K, <float*>nk_ptr(a), M, <float*>nk_ptr(packed),
                                         <float*>nk_ptr(out), N)
        else:
            done = tg_gemm_packed_at_f64(M, N, K, <double*>nk_ptr(a), M,
                                         <double*>nk_ptr(packed), <double*>nk_ptr(out), N)
    if not done:
        np.matmul(a.reshape(K, M).T, b.reshape(K, N), out=out)
    return out


cdef inline void nk_gemm(bint f32, ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, char* a, object packed,
                         char* bias, char* add, char* c) noexcept:
    """c (M x N) = a (M x K) @ packed B (+ bias (N,)) (+ add (M x N)); all rows contiguous."""
    if f32:
        tg_gemm_packed_f32(M, N, K, <float*>a, K, <float*>nk_ptr(packed), <float*>bias,
                           <float*>add, N, <float*>c, N)
    else:
        tg_gemm_packed_f64(M, N, K, <double*>a, K, <double*>nk_ptr(packed), <double*>bias,
                           <double*>add, N, <double*>c, N)


cdef inline char* nk_at(object a, Py_ssize_t offset, Py_ssize_t itemsize) noexcept:
    """The address of element `offset` of the C-contiguous array a."""
    return <char*>cnp.PyArray_DATA(<cnp.ndarray>a) + offset * itemsize


def _rnn_input_projection(x, w_ih, bias):
    """gi = x @ W_ih^T (+ bias) for every step at once: x (T, B, I), w_ih (G*H, I), bias (G*H,)
    or None; gi (T, B, G*H) is a workspace buffer (the sequence forward reads it and lets it go).
    W_ih is packed once and all T*B rows run through the packed GEMM."""
    cdef Py_ssize_t T = x.shape[0], B = x.shape[1], I = x.shape[2], N = w_ih.shape[0]
    cdef bint f32 = nk_is_f32(x)
    nk_same(w_ih, f32, N * I)
    if bias is not None:
        nk_same(bias, f32, N)
    dt = x.dtype
    gi = nk_buffer((T, B, N), dt)
    packed = nk_pack(w_ih, I, N, 1, I, f32)         # B = W_ih^T: (k, n) is w_ih[n, k]
    cdef Py_ssize_t isz = dt.itemsize
    if T * B and N:
        nk_gemm(f32, T * B, N, I, nk_at(x, 0, isz), packed,
                NULL if bias is None else nk_at(bias, 0, isz), NULL, nk_at(gi, 0, isz))
    return gi


def _rnn_input_grads(dgi, x, w_ih, bint need_x, bint need_w, bint need_b):
    """The gradients of _rnn_input_projection from dgi (T, B, G*H): (dx (T, B, I), dW_ih, dbias),
    each None when not needed."""
    cdef Py_ssize_t T = x.shape[0], B = x.shape[1], I = x.shape[2], N = w_ih.shape[0]
    cdef bint f32 = nk_is_f32(dgi)
    nk_same(x, f32, T * B * I)
    nk_same(w_ih, f32, N * I)
    dt = dgi.dtype
    cdef Py_ssize_t isz = dt.itemsize
    dx = dw = db = None
    rows = dgi.reshape(T * B, N)
    if need_x:
        dx = nk_buffer((T, B, I), dt)
        if T * B and I:
            if N:
                nk_gemm(f32, T * B, I, N, nk_at(dgi, 0, isz), nk_pack(w_ih, N, I, I, 1, f32),
                        NULL, NULL, nk_at(dx, 0, isz))
            else:
                dx.fill(0)
    if need_w:
        dw = nk_gemm_at(dgi, T * B, N, x, I, f32)
    if need_b:
        db = np.add.reduce(rows, axis=0)
    return dx, dw, db


def _rnn_sequence_forward(int mode, gi, h0, c0, w_hh, b_hh, bint reverse):
    """Run one recurrent layer in one direction over all T steps of gi.  Returns (out (T, B, H),
    h_T, c_T or None, saved).  The hidden weights are packed once (nk_pack) for the T small
    products h_{t-1} W_hh^T."""
    cdef Py_ssize_t T = gi.shape[0], B = gi.shape[1], G = nk_gates(mode)
    cdef Py_ssize_t H = h0.shape[1], s, t, tp
    cdef bint f32 = nk_is_f32(gi)
    nk_same(gi, f32, T * B * G * H)
    nk_same(h0, f32, B * H)
    nk_same(w_hh, f32, G * H * H)
    if mode == NK_LSTM:
        nk_same(c0, f32, B * H)
    if b_hh is not None:
        nk_same(b_hh, f32, G * H)
    dt = gi.dtype
    # states: h0 and every step's h in the order of time, h_t at row t + off (h0 at row 0, or at
    # row T when reverse): the steps read h_{t-1} from it, and the backward reads it as its own
    # copy of the outputs and, without another copy, as every step's previous state (one
    # contiguous block for dW_hh's product)
    cdef Py_ssize_t off = 0 if reverse else 1
    states = nk_buffer((T + 1, B, H), dt)
    states[T if reverse else 0] = h0
    packed = nk_pack(w_hh, H, G * H, 1, H, f32)      # B = W_hh^T: (k, n) is w_hh[n, k]
    acts = cs = tcs = hhs = None
    if mode == NK_LSTM:
        acts = nk_buffer((T, B, G * H), dt)
        cs = nk_buffer((T, B, H), dt)
        tcs = nk_buffer((T, B, H), dt)
    elif mode == NK_GRU:
        acts = nk_buffer((T, B, G * H), dt)
        hhs = nk_buffer((T, B, G * H), dt)
    hh_buf = np.empty((B, G * H), dtype=dt)
    cdef int relu = mode == NK_RNN_RELU
    cdef Py_ssize_t step = B * G * H, hstep = B * H, isz = dt.itemsize
    cdef char* bias = NULL if b_hh is None else nk_at(b_hh, 0, isz)
    cdef char* p_gi
    cdef char* hh
    cdef char* h_prev
    cdef char* c_prev
    cdef char* p_act
    cdef char* p_h
    for s in range(T):
        t = T - 1 - s if reverse else s
        tp = t + 1 if reverse else t - 1            # the step whose state this one starts from
        first = s == 0
        h_prev = nk_at(states, (tp + off) * hstep, isz)
        hh = nk_at(hhs, t * step, isz) if mode == NK_GRU else nk_at(hh_buf, 0, isz)
        nk_gemm(f32, B, G * H, H, h_prev, packed, bias, NULL, hh)
        p_gi = nk_at(gi, t * step, isz)
        p_h = nk_at(states, (t + off) * hstep, isz)
        if mode == NK_LSTM:
            c_prev = nk_at(c0, 0, isz) if first else nk_at(cs, tp * hstep, isz)
            p_act = nk_at(acts, t * step, isz)
            if f32:
                tg_lstm_fwd_f32(B, H, <float*>p_gi, <float*>hh, <float*>c_prev, <float*>p_act,
                                <float*>nk_at(cs, t * hstep, isz),
                                <float*>nk_at(tcs, t * hstep, isz), <float*>p_h)
            else:
                tg_lstm_fwd_f64(B, H, <double*>p_gi, <double*>hh, <double*>c_prev,
                                <double*>p_act, <double*>nk_at(cs, t * hstep, isz),
                                <double*>nk_at(tcs, t * hstep, isz), <double*>p_h)
        elif mode == NK_GRU:
            p_act = nk_at(acts, t * step, isz)
            if f32:
                tg_gru_fwd_f32(B, H, <float*>p_gi, <float*>hh, <float*>h_prev, <float*>p_act,
                               <float*>p_h)
            else:
                tg_gru_fwd_f64(B, H, <double*>p_gi, <double*>hh, <double*>h_prev,
                               <double*>p_act, <double*>p_h)
        else:
            if f32:
                tg_rnn_fwd_f32(B, H, relu, <float*>p_gi, <float*>hh, <float*>p_h)
            else:
                tg_rnn_fwd_f64(B, H, relu, <double*>p_gi, <double*>hh, <double*>p_h)
    # the output is a copy of the steps' states: the caller may write into it in place, and the
    # backward reads its own (PyTorch's layer saves its own too)
    out = nk_buffer((T, B, H), dt)
    np.copyto(out, states[off:off + T])
    if T == 0:
        h_last = h0.copy()
        c_last = c0.copy() if mode == NK_LSTM else None
    else:
        t = 0 if reverse else T - 1
        h_last = out[t].copy()
        c_last = cs[t].copy() if mode == NK_LSTM else None
    return out, h_last, c_last, (acts, cs, tcs, hhs, states)


def _rnn_sequence_backward(int mode, tuple saved, c0, w_hh, bint has_b_hh, dout,
                           dh_last, dc_last, bint reverse):
    """The gradients of _rnn_sequence_forward: (dgi (T, B, G*H), dh0, dc0 or None, dw_hh,
    db_hh or None).  dout (T, B, H), dh_last, dc_last: upstream gradients (None for zero).
    W_hh is packed once for the T products dgates_t W_hh; dW_hh is one product over all steps.
    The steps' states come from the forward's own (T + 1)-row buffer (saved[4]): h_t at row
    t + off, h0 at the other end."""
    acts, cs, tcs, hhs, states = saved[:5]
    cdef Py_ssize_t T = states.shape[0] - 1, B = states.shape[1], H = states.shape[2]
    cdef Py_ssize_t G = nk_gates(mode), off = 0 if reverse else 1
    cdef Py_ssize_t s, t, tp
    cdef bint f32 = nk_is_f32(states)
    dt = states.dtype
    nk_same(w_hh, f32, G * H * H)
    if dout is not None:
        nk_same(dout, f32, T * B * H)
    # dh: the gradient reaching the state h_t of the step being processed (from later steps and,
    # added in, from the output at t); after the loop, the gradient of h0.
    dh = np.zeros((B, H), dtype=dt) if dh_last is None else np.array(dh_last, dtype=dt)
    nk_same(dh, f32, B * H)
    dc = None
    if mode == NK_LSTM:
        dc = np.zeros((B, H), dtype=dt) if dc_last is None else np.array(dc_last, dtype=dt)
        nk_same(dc, f32, B * H)
    if T > 0 and dout is not None:
        np.add(dh, dout[T - 1 if not reverse else 0], out=dh)
    dgi = nk_buffer((T, B, G * H), dt)
    dhh = nk_buffer((T, B, G * H), dt) if mode == NK_GRU else dgi
    direct = np.empty((B, H), dtype=dt)
    packed = nk_pack(w_hh, G * H, H, H, 1, f32)      # B = W_hh, (G*H, H) row-major
    cdef int relu = mode == NK_RNN_RELU
    cdef Py_ssize_t step = B * G * H, hstep = B * H, isz = dt.itemsize
    cdef char* p_dh = nk_at(dh, 0, isz)
    cdef char* p_dc = NULL if dc is None else nk_at(dc, 0, isz)
    cdef char* p_direct = nk_at(direct, 0, isz)
    cdef char* p_dgi
    cdef char* p_dhh
    cdef char* p_add
    cdef char* prev
    cdef bint has_prev
    for s in range(T):
        t = s if reverse else T - 1 - s
        tp = t + 1 if reverse else t - 1            # the step whose state this one started from
        has_prev = 0 <= tp < T
        p_dgi = nk_at(dgi, t * step, isz)
        p_dhh = nk_at(dhh, t * step, isz)
        # the output gradient of the previous step joins the recurrent one in the same gemm
        p_add = nk_at(dout, tp * hstep, isz) if (has_prev and dout is not None) else NULL
        if mode == NK_LSTM:
            prev = nk_at(cs, tp * hstep, isz) if has_prev else nk_at(c0, 0, isz)
            if f32:
                tg_lstm_bwd_f32(B, H, <float*>nk_at(acts, t * step, isz), <float*>prev,
                                <float*>nk_at(tcs, t * hstep, isz), <float*>p_dh,
                                <float*>p_dc, <float*>p_dgi)
            else:
                tg_lstm_bwd_f64(B, H, <double*>nk_at(acts, t * step, isz), <double*>prev,
                                <double*>nk_at(tcs, t * hstep, isz), <double*>p_dh,
                                <double*>p_dc, <double*>p_dgi)
            nk_gemm(f32, B, H, G * H, p_dgi, packed, NULL, p_add, p_dh)
        elif mode == NK_GRU:
            prev = nk_at(states, (tp + off) * hstep, isz)     # (h0 where no step precedes)
            if f32:
                tg_gru_bwd_f32(B, H, <float*>nk_at(acts, t * step, isz),
                               <float*>nk_at(hhs, t * step, isz), <float*>prev, <float*>p_dh,
                               <float*>p_dgi, <float*>p_dhh, <float*>p_direct)
            else:
                tg_gru_bwd_f64(B, H, <double*>nk_at(acts, t * step, isz),
                               <double*>nk_at(hhs, t * step, isz), <double*>prev, <double*>p_dh,
                               <double*>p_dgi, <double*>p_dhh, <double*>p_direct)
            nk_gemm(f32, B, H, G * H, p_dhh, packed, NULL, p_direct, p_dh)
            if p_add != NULL:
                np.add(dh, dout[tp], out=dh)
        else:
            if f32:
                tg_rnn_bwd_f32(B, H, relu, <float*>nk_at(states, (t + off) * hstep, isz), <float*>p_dh,
                               <float*>p_dgi)
            else:
                tg_rnn_bwd_f64(B, H, relu, <double*>nk_at(states, (t + off) * hstep, isz),
                               <double*>p_dh, <double*>p_dgi)
            nk_gemm(f32, B, H, G * H, p_dgi, packed, NULL, p_add, p_dh)
    # The hidden weights' gradient over all steps at once: sum_t dhh_t^T h_prev_t, each step's
    # previous state read in place (rows [0, T) of the states, or [1, T] when reverse)
    prev_h = states[1 - off:T + 1 - off]
    dw = nk_gemm_at(dhh, T * B, G * H, prev_h, H, f32)
    db = np.add.reduce(dhh.reshape(T * B, G * H), axis=0) if has_b_hh else None
    return dgi, dh, dc, dw, db


# -- attention ------------------------------------------------------------------------------------
# The numeric work of one fused scaled-dot-product attention (tapegrad/nn/_attention.py, a custom
# Function): two batched GEMMs around attention's softmax forward, four around its VJP.  Operands
# may be strided views (the heads of a packed projection): np.matmul hands BLAS any layout with a
# unit stride, and writes into `out` views, so splitting and merging heads costs no copies.

cdef extern from "nn_kernels.h" nogil:
    void tg_attn_softmax_f32(ptrdiff_t rows, ptrdiff_t cols, float scale, float* s)
    void tg_attn_softmax_f64(ptrdiff_t rows, ptrdiff_t cols, double scale, double* s)
    void tg_attn_softmax_grad_f32(ptrdiff_t rows, ptrdiff_t cols, float scale, const float* p,
                                  float* dp)
    void tg_attn_softmax_grad_f64(ptrdiff_t rows, ptrdiff_t cols, double scale, const double* p,
                                  double* dp)


cdef object nk_scores(a, b):
    """A workspace array for a @ b^T (the scores, probabilities or their gradient, (..., L, S))
    when a and b are float32/float64 arrays of one dtype and the same leading dims, else None
    (np.matmul allocates, broadcasting).  Reused by a later call once the attention record that
    saves it is gone, like the recurrent layers' buffers: a step stops paying page faults."""
    dt = a.dtype
    if (dt is not b.dtype and dt != b.dtype) or (dt != NK_F32 and dt != NK_F64) or \
            a.ndim < 2 or a.shape[:-2] != b.shape[:-2]:
        return None
    return nk_buffer(a.shape[:-1] + (b.shape[b.ndim - 2],), dt)


def _attention_forward(q, k, v, mask, double scale, out=None):
    """softmax(scale * q @ k^T + mask) @ v over the last two dims of float32/float64 arrays
    q (..., L, E), k (..., S, E), v (..., S, Ev) of one dtype and the same leading dims; mask None
    or an array broadcastable to (..., L, S).  Returns (the output (..., L, Ev), written into `out`
    when given, and the probabilities p (..., L, S), C-contiguous, which the backward takes)."""
    cdef bint f32
    cdef Py_ssize_t rows, cols
    with IeeeResults():
        # (without a workspace buffer numpy's matmul may lay a product of strided operands out
        # in another order: the softmax kernel below runs over C-contiguous rows)
        s = np.ascontiguousarray(np.matmul(q, k.swapaxes(-1, -2), out=nk_scores(q, k)))
        f32 = nk_is_f32(s)
        cols = s.shape[s.ndim - 1]
        rows = s.size // cols if cols else 0
        if mask is not None:
            np.multiply(s, scale, out=s)
            np.add(s, mask, out=s)
            scale = 1.0
        if rows:
            if f32:
                tg_attn_softmax_f32(rows, cols, <float>scale, <float*>nk_ptr(s))
            else:
                tg_attn_softmax_f64(rows, cols, scale, <double*>nk_ptr(s))
        if out is None:
            out = np.matmul(s, v)
        else:
            np.matmul(s, v, out=out)
    return out, s


def _attention_backward(g, q, k, v, p, double scale, dq=None, dk=None, dv=None,
                        bint need_q=True, bint need_k=True, bint need_v=True):
    """The gradients (dq, dk, dv) of _attention_forward from the output's gradient g and the
    probabilities p it returned (each written into the given array when there is one, None when
    not needed)."""
    cdef bint f32
    cdef Py_ssize_t rows, cols
    with IeeeResults():
        if need_v:
            if dv is None:
                dv = np.matmul(p.swapaxes(-1, -2), g)
            else:
                np.matmul(p.swapaxes(-1, -2), g, out=dv)
        else:
            dv = None
        if not (need_q or need_k):
            return None, None, dv
        dp = np.ascontiguousarray(np.matmul(g, v.swapaxes(-1, -2), out=nk_scores(g, v)))
        f32 = nk_is_f32(dp)
        nk_same(p, f32, dp.size)
        cols = dp.shape[dp.ndim - 1]
        rows = dp.size // cols if cols else 0
        if rows:
            if f32:
                tg_attn_softmax_grad_f32(rows, cols, <float>scale, <float*>nk_ptr(p),
                                         <float*>nk_ptr(dp))
            else:
                tg_attn_softmax_grad_f64(rows, cols, scale, <double*>nk_ptr(p),
                                         <double*>nk_ptr(dp))
        if need_q:
            if dq is None:
                dq = np.matmul(dp, k)
            else:
                np.matmul(dp, k, out=dq)
        else:
            dq = None
        if need_k:
            if dk is None:
                dk = np.matmul(dp.swapaxes(-1, -2), q)
            else:
                np.matmul(dp.swapaxes(-1, -2), q, out=dk)
        else:
            dk = None
    return dq, dk, dv


# -- layer normalisation --------------------------------------------------------------------------
# layer_norm's rows in C for float32/float64 rows of at most TG_SUM_MAX_N elements (ops_nn.pxi
# calls these): the numpy formula's values without its temporaries (nn_kernels.h).

cdef extern from "nn_kernels.h" nogil:
    void tg_layer_norm_fwd_f32(ptrdiff_t M, ptrdiff_t N, float eps, const float* x,
                               const float* w, const float* b, float* y, float* xhat, float* rstd,
                               float* work)
    void tg_layer_norm_fwd_f64(ptrdiff_t M, ptrdiff_t N, double eps, const double* x,
                               const double* w, const double* b, double* y, double* xhat,
                               double* rstd, double* work)
    void tg_layer_norm_bwd_f32(ptrdiff_t M, ptrdiff_t N, const float* g, const float* xhat,
                               const float* rstd, const float* w, float* gx, float* acc_w,
                               float* acc_b, float* work)
    void tg_layer_norm_bwd_f64(ptrdiff_t M, ptrdiff_t N, const double* g, const double* xhat,
                               const double* rstd, const double* w, double* gx, double* acc_w,
                               double* acc_b, double* work)


cdef inline void* nk_opt_ptr(object a) noexcept:
    return NULL if a is None else cnp.PyArray_DATA(<cnp.ndarray>a)


cdef bint nk_layer_norm_rows(object X) noexcept:
    """Whether the C rows take layer_norm's (M, N) matrix X."""
    cdef int t
    return (isinstance(X, cnp.ndarray) and cnp.PyArray_NDIM(<cnp.ndarray>X) == 2
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>X)
            and cnp.PyArray_DIMS(<cnp.ndarray>X)[1] <= TG_SUM_MAX_N
            and ((t := cnp.PyArray_TYPE(<cnp.ndarray>X)) == cnp.NPY_FLOAT32
                 or t == cnp.NPY_FLOAT64))


cdef tuple nk_layer_norm_forward(object X, object w, object b, double eps):
    """(y, xhat, rstd (M, 1)) of layer_norm over the rows of X (M, N) (nk_layer_norm_rows);
    w, b: None or (N,) arrays of X's dtype."""
    cdef bint f32 = nk_is_f32(X)
    cdef Py_ssize_t M = X.shape[0], N = X.shape[1]
    if w is not None:
        w = np.ascontiguousarray(w)
        nk_same(w, f32, N)
    if b is not None:
        b = np.ascontiguousarray(b)
        nk_same(b, f32, N)
    y = np.empty((M, N), dtype=X.dtype)
    xhat = np.empty((M, N), dtype=X.dtype)
    rstd = np.empty((M, 1), dtype=X.dtype)
    work = np.empty(max(N, 1), dtype=X.dtype)
    if f32:
        tg_layer_norm_fwd_f32(M, N, <float>eps, <float*>nk_ptr(X), <float*>nk_opt_ptr(w),
                              <float*>nk_opt_ptr(b), <float*>nk_ptr(y), <float*>nk_ptr(xhat),
                              <float*>nk_ptr(rstd), <float*>nk_ptr(work))
    else:
        tg_layer_norm_fwd_f64(M, N, eps, <double*>nk_ptr(X), <double*>nk_opt_ptr(w),
                              <double*>nk_opt_ptr(b), <double*>nk_ptr(y), <double*>nk_ptr(xhat),
                              <double*>nk_ptr(rstd), <double*>nk_ptr(work))
    return y, xhat, rstd


cdef tuple nk_layer_norm_backward(object g2, object xhat, object rstd, object w, bint need_x,
                                  bint need_w, bint need_b):
    """(gx (M, N) or None, gw (N,) or None, gb (N,) or None) of nk_layer_norm_forward from the
    output's gradient g2 (M, N) of xhat's dtype."""
    cdef bint f32 = nk_is_f32(xhat)
    cdef Py_ssize_t M = xhat.shape[0], N = xhat.shape[1]
    g2 = np.ascontiguousarray(g2)
    nk_same(g2, f32, M * N)
    nk_same(rstd, f32, M)
    if w is not None:
        w = np.ascontiguousarray(w)
        nk_same(w, f32, N)
    dt = xhat.dtype
    gx = np.empty((M, N), dtype=dt) if need_x else None
    acc_w = np.zeros(N, dtype=dt) if need_w else None
    acc_b = np.zeros(N, dtype=dt) if need_b else None
    work = np.empty(max(2 * N, 1), dtype=dt)
    if f32:
        tg_layer_norm_bwd_f32(M, N, <float*>nk_ptr(g2), <float*>nk_ptr(xhat),
                              <float*>nk_ptr(rstd), <float*>nk_opt_ptr(w),
                              <float*>nk_opt_ptr(gx), <float*>nk_opt_ptr(acc_w),
                              <float*>nk_opt_ptr(acc_b), <float*>nk_ptr(work))
    else:
        tg_layer_norm_bwd_f64(M, N, <double*>nk_ptr(g2), <double*>nk_ptr(xhat),
                              <double*>nk_ptr(rstd), <double*>nk_opt_ptr(w),
                              <double*>nk_opt_ptr(gx), <double*>nk_opt_ptr(acc_w),
                              <double*>nk_opt_ptr(acc_b), <double*>nk_ptr(work))
    return gx, acc_w, acc_b


# -- grid_sample (grid_kernels.c) -------------------------------------------------------------
# The numeric work of F.grid_sample on a 4-d input, bilinear or nearest: tapegrad/nn/
# _grid_sample.py holds its autograd node (a KernelFunction) and the composition it falls back to
# for create_graph.  A sampling crosses from Python as a tuple (mode, padding, align_corners,
# fused, lanes, row): grid_kernels.h describes them.

cdef extern from "grid_kernels.h" nogil:
    ctypedef struct tg_grid2d:
        ptrdiff_t N, C, H, W, P, row, lanes
        int mode, padding, align_corners, fused
    void tg_grid_sample_2d_f32(const float* input, const float* grid, float* out,
                               const tg_grid2d* g)
    void tg_grid_sample_2d_f64(const double* input, const double* grid, double* out,
                               const tg_grid2d* g)
    void tg_grid_sample_2d_backward_f32(const float* grad_out, const float* input,
                                        const float* grid, float* grad_input, float* grad_grid,
                                        const tg_grid2d* g)
    void tg_grid_sample_2d_backward_f64(const double* grad_out, const double* input,
                                        const double* grid, double* grad_input,
                                        double* grad_grid, const tg_grid2d* g)


cdef bint nk_grid2d(object input, object grid, tuple how, tg_grid2d* g) except -1:
    """Fill g from input (N, C, H, W) and grid (N, Ho, Wo, 2), both C-contiguous and of one
    float dtype; True for float32."""
    cdef bint f32 = nk_is_f32(input)
    if input.ndim != 4 or grid.ndim != 4 or grid.shape[3] != 2 or grid.shape[0] != input.shape[0]:
        raise ValueError(f"tapegrad: grid kernel shapes {input.shape} and {grid.shape}")
    g.N, g.C, g.H, g.W = input.shape
    g.P = grid.shape[1] * grid.shape[2]
    nk_same(grid, f32, g.N * g.P * 2)
    g.mode, g.padding, g.align_corners, g.fused, g.lanes, g.row = how
    if not (0 <= g.mode <= 1 and 0 <= g.padding <= 2 and 0 < g.lanes <= 64):
        raise ValueError(f"tapegrad: bad grid sampling {how}")
    return f32


def _grid_sample_2d(input, grid, tuple how):
    """grid_sample's output (N, C, Ho, Wo) of input (N, C, H, W) at grid (N, Ho, Wo, 2)."""
    cdef tg_grid2d g
    cdef bint f32 = nk_grid2d(input, grid, how, &g)
    out = np.empty((g.N, g.C, grid.shape[1], grid.shape[2]), dtype=input.dtype)
    if f32:
        tg_grid_sample_2d_f32(<float*>nk_ptr(input), <float*>nk_ptr(grid),
                              <float*>nk_ptr(out), &g)
    else:
        tg_grid_sample_2d_f64(<double*>nk_ptr(input), <double*>nk_ptr(grid),
                              <double*>nk_ptr(out), &g)
    return out


def _grid_sample_2d_backward(grad_out, input, grid, tuple how, bint need_input):
    """(the input's gradient or None when not need_input, the grid's gradient) of
    _grid_sample_2d from the output's gradient grad_out (C-contiguous, the output's shape)."""
    cdef tg_grid2d g
    cdef bint f32 = nk_grid2d(input, grid, how, &g)
    nk_same(grad_out, f32, g.N * g.C * g.P)
    grad_grid = np.empty(grid.shape, dtype=grid.dtype)
    grad_input = np.zeros(input.shape, dtype=input.dtype) if need_input else None
    cdef void* gi = nk_ptr(grad_input) if need_input else NULL
    if f32:
        tg_grid_sample_2d_backward_f32(<float*>nk_ptr(grad_out), <float*>nk_ptr(input),
                                       <float*>nk_ptr(grid), <float*>gi,
                                       <float*>nk_ptr(grad_grid), &g)
    else:
        tg_grid_sample_2d_backward_f64(<double*>nk_ptr(grad_out), <double*>nk_ptr(input),
                                       <double*>nk_ptr(grid), <double*>gi,
                                       <double*>nk_ptr(grad_grid), &g)
    return grad_input, grad_grid


cdef extern from "grid_kernels.h" nogil:
    ctypedef struct tg_grid3d:
        ptrdiff_t N, C, D, H, W, P
        int mode, padding, align_corners
    void tg_grid_sample_3d_f32(const float* input, const float* grid, float* out,
                               const tg_grid3d* g)
    void tg_grid_sample_3d_f64(const double* input, const double* grid, double* out,
                               const tg_grid3d* g)
    void tg_grid_sample_3d_backward_f32(const float* grad_out, const float* input,
                                        const float* grid, float* grad_input, float* grad_grid,
                                        const tg_grid3d* g)
    void tg_grid_sample_3d_backward_f64(const double* grad_out, const double* input,
                                        const double* grid, double* grad_input,
                                        double* grad_grid, const tg_grid3d* g)


cdef bint nk_grid3d(object input, object grid, tuple how, tg_grid3d* g) except -1:
    """Fill g from input (N, C, D, H, W) and grid (N, Do, Ho, Wo, 3), both C-contiguous and of
    one float dtype, and how = (mode, padding, align_corners); True for float32."""
    cdef bint f32 = nk_is_f32(input)
    if input.ndim != 5 or grid.ndim != 5 or grid.shape[4] != 3 or grid.shape[0] != input.shape[0]:
        raise ValueError(f"tapegrad: grid kernel shapes {input.shape} and {grid.shape}")
    g.N, g.C, g.D, g.H, g.W = input.shape
    g.P = grid.shape[1] * grid.shape[2] * grid.shape[3]
    nk_same(grid, f32, g.N * g.P * 3)
    g.mode, g.padding, g.align_corners = how
    if not (0 <= g.mode <= 1 and 0 <= g.padding <= 2):
        raise ValueError(f"tapegrad: bad grid sampling {how}")
    return f32


def _grid_sample_3d(input, grid, tuple how):
    """grid_sample's output (N, C, Do, Ho, Wo) of input (N, C, D, H, W) at grid
    (N, Do, Ho, Wo, 3)."""
    cdef tg_grid3d g
    cdef bint f32 = nk_grid3d(input, grid, how, &g)
    out = np.empty((g.N, g.C) + tuple(grid.shape[1:4]), dtype=input.dtype)
    if f32:
        tg_grid_sample_3d_f32(<float*>nk_ptr(input), <float*>nk_ptr(grid),
                              <float*>nk_ptr(out), &g)
    else:
        tg_grid_sample_3d_f64(<double*>nk_ptr(input), <double*>nk_ptr(grid),
                              <double*>nk_ptr(out), &g)
    return out


def _grid_sample_3d_backward(grad_out, input, grid, tuple how, bint need_input):
    """(the input's gradient or None when not need_input, the grid's gradient) of
    _grid_sample_3d from the output's gradient grad_out (C-contiguous, the output's shape)."""
    cdef tg_grid3d g
    cdef bint f32 = nk_grid3d(input, grid, how, &g)
    nk_same(grad_out, f32, g.N * g.C * g.P)
    grad_grid = np.empty(grid.shape, dtype=grid.dtype)
    grad_input = np.zeros(input.shape, dtype=input.dtype) if need_input else None
    cdef void* gi = nk_ptr(grad_input) if need_input else NULL
    if f32:
        tg_grid_sample_3d_backward_f32(<float*>nk_ptr(grad_out), <float*>nk_ptr(input),
                                       <float*>nk_ptr(grid), <float*>gi,
                                       <float*>nk_ptr(grad_grid), &g)
    else:
        tg_grid_sample_3d_backward_f64(<double*>nk_ptr(grad_out), <double*>nk_ptr(input),
                                       <double*>nk_ptr(grid), <double*>gi,
                                       <double*>nk_ptr(grad_grid), &g)
    return grad_input, grad_grid
