# ---------------------------------------------------------------------------------------------
# The kernels that spread big arrays over the thread pool, for the extension modules above the
# core (_core.pxd declares them).  A module calling kernels.h directly links its own copy of them
# from the static library: its own copy of the vectorised math (~230 KB) and, worse, its own
# thread pool, which tapegrad.set_num_threads never sizes (it stays at one thread).  Called
# through the core, there is one of each in the package.
# ---------------------------------------------------------------------------------------------

cdef int pooled_binary_f64(int op, ptrdiff_t n, const double* a, ptrdiff_t sa, const double* b,
                           ptrdiff_t sb, double* out) noexcept nogil:
    return tg_binary_f64(op, n, a, sa, b, sb, out)


cdef int pooled_binary_f32(int op, ptrdiff_t n, const float* a, ptrdiff_t sa, const float* b,
                           ptrdiff_t sb, float* out) noexcept nogil:
    return tg_binary_f32(op, n, a, sa, b, sb, out)


cdef int pooled_unary_f64(int op, ptrdiff_t n, const double* a, double* out) noexcept nogil:
    return tg_unary_f64(op, n, a, out)


cdef int pooled_unary_f32(int op, ptrdiff_t n, const float* a, float* out) noexcept nogil:
    return tg_unary_f32(op, n, a, out)


cdef void pooled_sincos_f64(ptrdiff_t n, const double* x, double* s, double* c) noexcept nogil:
    tg_sincos_f64(n, x, s, c)        # (in the calling thread: replay's fused lanes split the work)


cdef void pooled_sincos_f32(ptrdiff_t n, const float* x, float* s, float* c) noexcept nogil:
    tg_sincos_f32(n, x, s, c)


cdef extern from "threadpool.h" nogil:
    void tg_parallel_for(ptrdiff_t n, ptrdiff_t min_parallel, ptrdiff_t align, tg_range_fn fn,
                         void* ctx) noexcept


cdef void pooled_parallel_for(ptrdiff_t n, ptrdiff_t min_parallel, ptrdiff_t align,
                              tg_range_fn fn, void* ctx) noexcept nogil:
    tg_parallel_for(n, min_parallel, align, fn, ctx)


cdef int pooled_threads() noexcept nogil:
    return tg_get_num_threads()
