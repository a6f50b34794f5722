/* Window and recurrent kernels; the header (nn_kernels.h) documents each one.
 *
 * One body per kernel, written once over a type T and instantiated for float and double by the
 * DEFINE_* macros at the end (as kernels.c does), so the two precisions cannot drift apart. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_kernels.h"
#include "vecmath.h"
#include "kernels.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#include <immintrin.h>
#endif

/* The first index >= `start` on the grid start + k*step that is >= 0 (windows starting in the
 * top/left padding skip the taps that fall on it). */
static inline ptrdiff_t first_on_grid(ptrdiff_t start, ptrdiff_t step)
{
    if (start >= 0)
        return start;
    return start + ((-start + step - 1) / step) * step;
}

/* -- im2col / col2im ------------------------------------------------------------------------- */

/* A short contiguous copy (one window row of im2col: often 5-30 elements) in constant-size
 * pieces, which compile to vector moves: a memcpy call per row cost more than the copy. */
static inline void copy_run(void* restrict dst, const void* restrict src, size_t bytes)
{
    char* o = dst;
    const char* s = src;
    for (; bytes >= 32; bytes -= 32, o += 32, s += 32) memcpy(o, s, 32);
    if (bytes >= 16) { memcpy(o, s, 16); o += 16; s += 16; bytes -= 16; }
    if (bytes >= 8) { memcpy(o, s, 8); o += 8; s += 8; bytes -= 8; }
    if (bytes >= 4) memcpy(o, s, 4);
}

/* The output rows [lo, hi) whose tap at offset `base` (= i*dh - pt) reads a real input row:
 * 0 <= ho*sh + base < H, clipped to [ho0, ho1).  Both ends are clipped: a tap that reaches the
 * input only below the block (a dilated tap over a short input) gives lo = hi = ho1, so the
 * callers' fill of the rows before lo stays inside the block (it ran past it into the next
 * sample's columns of the weight gradient, and from there into the next tap's row: fuzz seed
 * 60705316, a silent wrong conv weight gradient). */
static inline void rows_inside(ptrdiff_t base, ptrdiff_t sh, ptrdiff_t H, ptrdiff_t ho0,
                               ptrdiff_t ho1, ptrdiff_t* lo, ptrdiff_t* hi)
{
    ptrdiff_t a = base >= 0 ? 0 : (-base + sh - 1) / sh;
    ptrdiff_t b = H - base <= 0 ? 0 : (H - base + sh - 1) / sh;
    a = a < ho0 ? ho0 : a > ho1 ? ho1 : a;
    b = b > ho1 ? ho1 : b;
    *lo = a;
    *hi = b > a ? b : a;
}

/* im2col of one sample's channels [0, Cc) (x points at the first one) and output rows [ho0, ho1):
 * cols[(c*kh + i)*kw + j][(ho - ho0)*Wo + wo], rows row_stride apart.  The fused convolution
 * calls it per block of rows; the whole-batch im2col per sample.  Rows whose tap falls on the
 * top/bottom padding are filled whole; a tap whose window row lies inside the input's width (the
 * common case: no left/right padding, stride 1) is a tight loop of row copies. */
#define DEFINE_IM2COL_BLOCK(T, NAME)                                                              \
static void NAME(const T* x, T* cols, const tg_window* g, ptrdiff_t Cc, ptrdiff_t ho0,            \
                 ptrdiff_t ho1, ptrdiff_t row_stride, T fill)                                     \
{                                                                                                 \
    const ptrdiff_t Wo = g->Wo, W = g->W, sw = g->sw;                                             \
    for (ptrdiff_t c = 0; c < Cc; c++)                                                            \
        for (ptrdiff_t i = 0; i < g->kh; i++) {                                                   \
            ptrdiff_t lo, hi;                                                                     \
            rows_inside(i * g->dh - g->pt, g->sh, g->H, ho0, ho1, &lo, &hi);                      \
            for (ptrdiff_t j = 0; j < g->kw; j++) {                                               \
                T* row = cols + ((c * g->kh + i) * g->kw + j) * row_stride;                       \
                /* the output columns wo whose input column lies inside [0, W) */                 \
                const ptrdiff_t off = j * g->dw - g->pl;                                          \
                ptrdiff_t wlo = off >= 0 ? 0 : (-off + sw - 1) / sw;                              \
                ptrdiff_t whi = W - off <= 0 ? 0 : (W - off + sw - 1) / sw;                       \
                if (whi > Wo) whi = Wo;                                                           \
                if (wlo > whi) wlo = whi;                                                         \
                for (ptrdiff_t q = 0; q < (lo - ho0) * Wo; q++) row[q] = fill;                    \
                for (ptrdiff_t q = (hi - ho0) * Wo; q < (ho1 - ho0) * Wo; q++) row[q] = fill;     \
                const T* src = x + c * g->H * W + (lo * g->sh - g->pt + i * g->dh) * W + off;     \
                const ptrdiff_t src_step = g->sh * W;                                             \
                T* o = row + (lo - ho0) * Wo;                                                     \
                if (sw == 1 && wlo == 0 && whi == Wo) {                                           \
                    for (ptrdiff_t ho = lo; ho < hi; ho++, o += Wo, src += src_step)              \
                        copy_run(o, src, (size_t)Wo * sizeof(T));                                 \
                    continue;                                                                     \
                }                                                                                 \
                for (ptrdiff_t ho = lo; ho < hi; ho++, o += Wo, src += src_step) {                \
                    for (ptrdiff_t wo = 0; wo < wlo; wo++) o[wo] = fill;                          \
                    if (sw == 1)                                                                  \
                        copy_run(o + wlo, src + wlo, (size_t)(whi - wlo) * sizeof(T));            \
                    else                                                                          \
                        for (ptrdiff_t wo = wlo; wo < whi; wo++) o[wo] = src[wo * sw];            \
                    for (ptrdiff_t wo = whi; wo < Wo; wo++) o[wo] = fill;                         \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
}

/* The adjoint of im2col_block: x (one sample's channels [0, Cc)) += the column entries of output
 * rows [ho0, ho1); entries that fell on padding are dropped.  The same split of rows as there. */
#define DEFINE_COL2IM_BLOCK(T, NAME)                                                              \
static void NAME(const T* cols, T* x, const tg_window* g, ptrdiff_t Cc, ptrdiff_t ho0,            \
                 ptrdiff_t ho1, ptrdiff_t row_stride)                                             \
{                                                                                                 \
    const ptrdiff_t Wo = g->Wo, W = g->W, sw = g->sw;                                             \
    for (ptrdiff_t c = 0; c < Cc; c++)                                                            \
        for (ptrdiff_t i = 0; i < g->kh; i++) {                                                   \
            ptrdiff_t lo, hi;                                                                     \
            rows_inside(i * g->dh - g->pt, g->sh, g->H, ho0, ho1, &lo, &hi);                      \
            for (ptrdiff_t j = 0; j < g->kw; j++) {                                               \
                const T* s = cols + ((c * g->kh + i) * g->kw + j) * row_stride + (lo - ho0) * Wo; \
                const ptrdiff_t off = j * g->dw - g->pl;                                          \
                ptrdiff_t wlo = off >= 0 ? 0 : (-off + sw - 1) / sw;                              \
                ptrdiff_t whi = W - off <= 0 ? 0 : (W - off + sw - 1) / sw;                       \
                if (whi > Wo) whi = Wo;                                                           \
                if (wlo > whi) wlo = whi;                                                         \
                T* dst = x + c * g->H * W + (lo * g->sh - g->pt + i * g->dh) * W + off;           \
                const ptrdiff_t dst_step = g->sh * W;                                             \
                for (ptrdiff_t ho = lo; ho < hi; ho++, s += Wo, dst += dst_step) {                \
                    if (sw == 1)                                                                  \
                        for (ptrdiff_t wo = wlo; wo < whi; wo++) dst[wo] += s[wo];                \
                    else                                                                          \
                        for (ptrdiff_t wo = wlo; wo < whi; wo++) dst[wo * sw] += s[wo];           \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
}

#define DEFINE_IM2COL(T, SFX)                                                                     \
void tg_im2col_##SFX(const T* x, T* cols, const tg_window* g, ptrdiff_t row_stride,               \
                     ptrdiff_t n_stride, T fill)                                                  \
{                                                                                                 \
    for (ptrdiff_t n = 0; n < g->N; n++)                                                          \
        im2col_block_##SFX(x + n * g->C * g->H * g->W, cols + n * n_stride, g, g->C, 0, g->Ho,    \
                           row_stride, fill);                                                     \
}

#define DEFINE_COL2IM(T, SFX)                                                                     \
void tg_col2im_##SFX(const T* cols, T* x, const tg_window* g, ptrdiff_t row_stride,               \
                     ptrdiff_t n_stride)                                                          \
{                                                                                                 \
    memset(x, 0, (size_t)(g->N * g->C * g->H * g->W) * sizeof(T));                                \
    for (ptrdiff_t n = 0; n < g->N; n++)                                                          \
        col2im_block_##SFX(cols + n * n_stride, x + n * g->C * g->H * g->W, g, g->C, 0, g->Ho,    \
                           row_stride);                                                           \
}

/* -- max pooling ------------------------------------------------------------------------------ */

/* One tap of a window: PyTorch's rule (a larger value or a NaN replaces the running maximum). */
#define POOL_TAP(T, V, AT, best, at)                                                              \
    do {                                                                                          \
        const T v_ = (V);                                                                         \
        if (v_ > best || v_ != v_) {                                                              \
            best = v_;                                                                            \
            at = (AT);                                                                            \
        }                                                                                         \
    } while (0)

/* One output row of the 2x2 / stride 2 pooling from input rows r0 and r1: the taps r0[2w],
 * r0[2w+1], r1[2w], r1[2w+1] in that order (the first always taken: it replaces the initial -inf,
 * or is -inf at the window's first position, which is where an untaken -inf leaves the index),
 * io[w] = row0 + 2w + the tap's offset (0, 1, W, W+1).  With SSE2 (every x86-64) the taps are
 * compares and masked selects over 4 (float) or 2 (double) windows at a time: on real data each
 * comparison goes either way at random, and the mispredicted branches of the scalar form made it
 * ~5x slower.  The same rule in both forms, so the same values and indices. */
#define DEFINE_POOL2X2_TAIL(T, SFX)                                                               \
static inline void pool2x2_tail_##SFX(const T* r0, const T* r1, T* yo, int64_t* io,               \
                                      ptrdiff_t w, ptrdiff_t Wo, ptrdiff_t W, int64_t row0)       \
{                                                                                                 \
    for (; w < Wo; w++) {                                                                         \
        T best = r0[2 * w];                                                                       \
        int64_t at = 0;                                                                           \
        POOL_TAP(T, r0[2 * w + 1], 1, best, at);                                                  \
        POOL_TAP(T, r1[2 * w], W, best, at);                                                      \
        POOL_TAP(T, r1[2 * w + 1], W + 1, best, at);                                              \
        yo[w] = best;                                                                             \
        io[w] = row0 + 2 * w + at;                                                                \
    }                                                                                             \
}
DEFINE_POOL2X2_TAIL(float, f32)
DEFINE_POOL2X2_TAIL(double, f64)

#if defined(__SSE2__)
#include <emmintrin.h>

/* POOL_TAP over SSE2 lanes (P: ps for float, pd for double; `at` and `here` hold each lane's
 * index in its element width): a lane takes v where v > best or v is NaN. */
#define POOL_TAP_SSE(P, v, best, at, here)                                                        \
    do {                                                                                          \
        const __typeof__(best) take_ = _mm_or_##P(_mm_cmpgt_##P(v, best),                         \
                                                  _mm_cmpunord_##P(v, v));                        \
        best = _mm_or_##P(_mm_and_##P(take_, v), _mm_andnot_##P(take_, best));                    \
        const __m128i t_ = _mm_cast##P##_si128(take_);                                            \
        at = _mm_or_si128(_mm_and_si128(t_, here), _mm_andnot_si128(t_, at));                     \
    } while (0)

static void pool2x2_row_f32(const float* r0, const float* r1, float* yo, int64_t* io,
                            ptrdiff_t Wo, ptrdiff_t W, int64_t row0)
{
    const __m128i off1 = _mm_set1_epi32(1), offW = _mm_set1_epi32((int)W),
                  offW1 = _mm_set1_epi32((int)W + 1), zero = _mm_setzero_si128();
    ptrdiff_t w = 0;
    if (W + 1 <= 0x7fffffff)
        for (; w + 4 <= Wo; w += 4) {
            const __m128 a0 = _mm_loadu_ps(r0 + 2 * w), a1 = _mm_loadu_ps(r0 + 2 * w + 4);
            const __m128 b0 = _mm_loadu_ps(r1 + 2 * w), b1 = _mm_loadu_ps(r1 + 2 * w + 4);
            const __m128 taps[3] = {_mm_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1)),
                                    _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(2, 0, 2, 0)),
                                    _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(3, 1, 3, 1))};
            const __m128i offs[3] = {off1, offW, offW1};
            __m128 best = _mm_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0));
            __m128i at = zero;
            for (int q = 0; q < 3; q++)
                POOL_TAP_SSE(ps, taps[q], best, at, offs[q]);
            _mm_storeu_ps(yo + w, best);
            const __m128i lo = _mm_set_epi64x(row0 + 2 * w + 2, row0 + 2 * w);
            const __m128i hi = _mm_set_epi64x(row0 + 2 * w + 6, row0 + 2 * w + 4);
            _mm_storeu_si128((__m128i*)(io + w), _mm_add_epi64(lo, _mm_unpacklo_epi32(at, zero)));
            _mm_storeu_si128((__m128i*)(io + w + 2),
                             _mm_add_epi64(hi, _mm_unpackhi_epi32(at, zero)));
        }
    pool2x2_tail_f32(r0, r1, yo, io, w, Wo, W, row0);
}

static void pool2x2_row_f64(const double* r0, const double* r1, double* yo, int64_t* io,
                            ptrdiff_t Wo, ptrdiff_t W, int64_t row0)
{
    const __m128i offs[3] = {_mm_set1_epi64x(1), _mm_set1_epi64x(W), _mm_set1_epi64x(W + 1)};
    ptrdiff_t w = 0;
    for (; w + 2 <= Wo; w += 2) {
        const __m128d a0 = _mm_loadu_pd(r0 + 2 * w), a1 = _mm_loadu_pd(r0 + 2 * w + 2);
        const __m128d b0 = _mm_loadu_pd(r1 + 2 * w), b1 = _mm_loadu_pd(r1 + 2 * w + 2);
        const __m128d taps[3] = {_mm_unpackhi_pd(a0, a1), _mm_unpacklo_pd(b0, b1),
                                 _mm_unpackhi_pd(b0, b1)};
        __m128d best = _mm_unpacklo_pd(a0, a1);
        __m128i at = _mm_setzero_si128();
        for (int q = 0; q < 3; q++)
            POOL_TAP_SSE(pd, taps[q], best, at, offs[q]);
        _mm_storeu_pd(yo + w, best);
        const __m128i base = _mm_set_epi64x(row0 + 2 * w + 2, row0 + 2 * w);
        _mm_storeu_si128((__m128i*)(io + w), _mm_add_epi64(base, at));
    }
    pool2x2_tail_f64(r0, r1, yo, io, w, Wo, W, row0);
}
/* The general window, for the windows wo in [wlo, whi) of one output row that lie wholly inside
 * the plane's width (taps h in [h0, h1) step dh, w = wo*sw - pl + j*dw): 4 (float) or 2 (double)
 * windows at a time, each tap a compare and masked selects as in pool2x2_row, in the scalar
 * loop's order (-inf and the window's first position to start).  Returns where it stopped; the
 * caller's scalar loop does the rest.  Float indices are held in 32 bits: planes of 2^31
 * elements or more are left to the scalar loop. */
static ptrdiff_t pool_row_vec_f32(const float* plane, float* yrow, int64_t* irow,
                                  const tg_window* g, ptrdiff_t h0, ptrdiff_t h1, ptrdiff_t wlo,
                                  ptrdiff_t whi)
{
    const ptrdiff_t W = g->W, sw = g->sw;
    if (g->H * W > 0x7fffffff)
        return wlo;
    const __m128i lanes = _mm_set_epi32((int)(3 * sw), (int)(2 * sw), (int)sw, 0);
    const __m128i zero = _mm_setzero_si128();
    ptrdiff_t wo = wlo;
    for (; wo + 4 <= whi; wo += 4) {
        const ptrdiff_t w0 = wo * sw - g->pl;
        __m128 best = _mm_set1_ps(-INFINITY);
        __m128i at = _mm_add_epi32(_mm_set1_epi32((int)(h0 * W + w0)), lanes);
        for (ptrdiff_t h = h0; h < h1; h += g->dh)
            for (ptrdiff_t j = 0; j < g->kw; j++) {
                const ptrdiff_t pos = h * W + w0 + j * g->dw;
                const float* src = plane + pos;
                const __m128 v = sw == 1 ? _mm_loadu_ps(src)
                                         : _mm_set_ps(src[3 * sw], src[2 * sw], src[sw], src[0]);
                const __m128i here = _mm_add_epi32(_mm_set1_epi32((int)pos), lanes);
                POOL_TAP_SSE(ps, v, best, at, here);
            }
        _mm_storeu_ps(yrow + wo, best);
        _mm_storeu_si128((__m128i*)(irow + wo), _mm_unpacklo_epi32(at, zero));
        _mm_storeu_si128((__m128i*)(irow + wo + 2), _mm_unpackhi_epi32(at, zero));
    }
    return wo;
}

static ptrdiff_t pool_row_vec_f64(const double* plane, double* yrow, int64_t* irow,
                                  const tg_window* g, ptrdiff_t h0, ptrdiff_t h1, ptrdiff_t wlo,
                                  ptrdiff_t whi)
{
    const ptrdiff_t W = g->W, sw = g->sw;
    const __m128i lanes = _mm_set_epi64x(sw, 0);
    ptrdiff_t wo = wlo;
    for (; wo + 2 <= whi; wo += 2) {
        const ptrdiff_t w0 = wo * sw - g->pl;
        __m128d best = _mm_set1_pd(-INFINITY);
        __m128i at = _mm_add_epi64(_mm_set1_epi64x(h0 * W + w0), lanes);
        for (ptrdiff_t h = h0; h < h1; h += g->dh)
            for (ptrdiff_t j = 0; j < g->kw; j++) {
                const ptrdiff_t pos = h * W + w0 + j * g->dw;
                const double* src = plane + pos;
                const __m128d v = sw == 1 ? _mm_loadu_pd(src) : _mm_set_pd(src[sw], src[0]);
                const __m128i here = _mm_add_epi64(_mm_set1_epi64x(pos), lanes);
                POOL_TAP_SSE(pd, v, best, at, here);
            }
        _mm_storeu_pd(yrow + wo, best);
        _mm_storeu_si128((__m128i*)(irow + wo), at);
    }
    return wo;
}
#else
static void pool2x2_row_f32(const float* r0, const float* r1, float* yo, int64_t* io,
                            ptrdiff_t Wo, ptrdiff_t W, int64_t row0)
{
    pool2x2_tail_f32(r0, r1, yo, io, 0, Wo, W, row0);
}

static void pool2x2_row_f64(const double* r0, const double* r1, double* yo, int64_t* io,
                            ptrdiff_t Wo, ptrdiff_t W, int64_t row0)
{
    pool2x2_tail_f64(r0, r1, yo, io, 0, Wo, W, row0);
}
static ptrdiff_t pool_row_vec_f32(const float* plane, float* yrow, int64_t* irow,
                                  const tg_window* g, ptrdiff_t h0, ptrdiff_t h1, ptrdiff_t wlo,
                                  ptrdiff_t whi)
{
    (void)plane, (void)yrow, (void)irow, (void)g, (void)h0, (void)h1, (void)whi;
    return wlo;
}

static ptrdiff_t pool_row_vec_f64(const double* plane, double* yrow, int64_t* irow,
                                  const tg_window* g, ptrdiff_t h0, ptrdiff_t h1, ptrdiff_t wlo,
                                  ptrdiff_t whi)
{
    (void)plane, (void)yrow, (void)irow, (void)g, (void)h0, (void)h1, (void)whi;
    return wlo;
}
#endif

/* v when `pass`, else +0, without a branch: relu's test in the max-pool gradients below is a coin
 * toss per window for the branch predictor (taken as a branch it made the fused relu-pool
 * gradient ~2.5x slower than the plain one).  Adding the +0 of a window that does not pass
 * changes nothing: the sums start from a zero-filled buffer, so a cell never holds -0 (x + +0
 * differs from x only at x = -0), and NaN + 0 is the same NaN. */
static inline float or_zero_f32(float v, int pass)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    bits &= (uint32_t)0 - (uint32_t)(pass != 0);
    memcpy(&v, &bits, sizeof bits);
    return v;
}

static inline double or_zero_f64(double v, int pass)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    bits &= (uint64_t)0 - (uint64_t)(pass != 0);
    memcpy(&v, &bits, sizeof bits);
    return v;
}

#define DEFINE_MAX_POOL(T, SFX)                                                                   \
void tg_max_pool2d_##SFX(const T* x, T* y, int64_t* idx, const tg_window* g)                      \
{                                                                                                 \
    const ptrdiff_t planes = g->N * g->C;                                                         \
    if (g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->pt == 0 && g->pl == 0 &&       \
        g->dh == 1 && g->dw == 1 && 2 * g->Ho <= g->H && 2 * g->Wo <= g->W) {                     \
        /* the common 2x2 / stride 2 pooling inside the plane, a row at a time */               \
        for (ptrdiff_t p = 0; p < planes; p++)                                                    \
            for (ptrdiff_t ho = 0; ho < g->Ho; ho++) {                                            \
                const T* r0 = x + (p * g->H + 2 * ho) * g->W;                                     \
                pool2x2_row_##SFX(r0, r0 + g->W, y + (p * g->Ho + ho) * g->Wo,                    \
                                  idx + (p * g->Ho + ho) * g->Wo, g->Wo, g->W,                    \
                                  (int64_t)(2 * ho * g->W));                                      \
            }                                                                                     \
        return;                                                                                   \
    }                                                                                             \
    /* the windows [wlo, whi) of a row lie wholly inside the plane's width */                   \
    const ptrdiff_t span = (g->kw - 1) * g->dw;                                                   \
    ptrdiff_t wlo = (g->pl + g->sw - 1) / g->sw;                                                  \
    ptrdiff_t whi = g->W - 1 - span + g->pl >= 0 ? (g->W - 1 - span + g->pl) / g->sw + 1 : 0;     \
    if (whi > g->Wo) whi = g->Wo;                                                                 \
    if (wlo > whi) wlo = whi;                                                                     \
    for (ptrdiff_t p = 0; p < planes; p++) {                                                      \
        const T* plane = x + p * g->H * g->W;                                                     \
        for (ptrdiff_t ho = 0; ho < g->Ho; ho++) {                                                \
            const ptrdiff_t h0 = first_on_grid(ho * g->sh - g->pt, g->dh);                        \
            ptrdiff_t h1 = ho * g->sh - g->pt + (g->kh - 1) * g->dh + 1;                          \
            if (h1 > g->H) h1 = g->H;                                                             \
            const ptrdiff_t vend = pool_row_vec_##SFX(plane, y + (p * g->Ho + ho) * g->Wo,         \
                                                      idx + (p * g->Ho + ho) * g->Wo, g, h0, h1,  \
                                                      wlo, whi);                                  \
            for (ptrdiff_t wo = 0; wo < g->Wo; wo++) {                                            \
                if (wo == wlo && vend > wlo) {          /* done by the vector rows */             \
                    wo = vend - 1;                                                                \
                    continue;                                                                     \
                }                                                                                 \
                const ptrdiff_t w0 = first_on_grid(wo * g->sw - g->pl, g->dw);                    \
                ptrdiff_t w1 = wo * g->sw - g->pl + (g->kw - 1) * g->dw + 1;                      \
                if (w1 > g->W) w1 = g->W;                                                         \
                T best = -INFINITY;                                                               \
                int64_t at = (int64_t)(h0 * g->W + w0);                                           \
                for (ptrdiff_t h = h0; h < h1; h += g->dh)                                        \
                    for (ptrdiff_t w = w0; w < w1; w += g->dw)                                    \
                        POOL_TAP(T, plane[h * g->W + w], (int64_t)(h * g->W + w), best, at);      \
                y[(p * g->Ho + ho) * g->Wo + wo] = best;                                          \
                idx[(p * g->Ho + ho) * g->Wo + wo] = at;                                          \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
void tg_relu_max_pool2d_##SFX(const T* x, T* y, int64_t* idx, const tg_window* g, T* plane)     \
{                                                                                                 \
    const ptrdiff_t planes = g->N * g->C, HW = g->H * g->W, L = g->Ho * g->Wo;                    \
    tg_window one = *g;                                                                           \
    one.N = 1;                                                                                    \
    one.C = 1;                                                                                    \
    for (ptrdiff_t p = 0; p < planes; p++) {                                                      \
        const T* src = x + p * HW;                                                                \
        for (ptrdiff_t i = 0; i < HW; i++)          /* TG_RELU's formula (kernels.c) */          \
            plane[i] = src[i] < (T)0 ? (T)0 : src[i];                                             \
        tg_max_pool2d_##SFX(plane, y + p * L, idx + p * L, &one);                                 \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
void tg_max_pool2d_grad_##SFX(const T* gy, const int64_t* idx, T* gx, const tg_window* g,         \
                              const T* xmask)                                                     \
{                                                                                                 \
    const ptrdiff_t planes = g->N * g->C, HW = g->H * g->W, L = g->Ho * g->Wo;                    \
    memset(gx, 0, (size_t)(planes * HW) * sizeof(T));                                             \
    for (ptrdiff_t p = 0; p < planes; p++)                                                        \
        for (ptrdiff_t k = 0; k < L; k++) {                                                       \
            const int64_t at = idx[p * L + k];                                                    \
            /* (a NaN passes its gradient, as relu's does) */                                    \
            if (at >= 0 && at < HW)                                                               \
                gx[p * HW + at] += or_zero_##SFX(gy[p * L + k],                                   \
                                                 !(xmask && xmask[p * HW + at] <= (T)0));         \
        }                                                                                         \
}                                                                                                 \
                                                                                                  \
void tg_max_pool2d_grad_kept_##SFX(const T* gy, const int64_t* idx, T* gx, const tg_window* g,    \
                                   const uint8_t* keep)                                           \
{                                                                                                 \
    const ptrdiff_t planes = g->N * g->C, HW = g->H * g->W, L = g->Ho * g->Wo;                    \
    memset(gx, 0, (size_t)(planes * HW) * sizeof(T));                                             \
    /* the same contributions in the same order as with xmask: keep[k] is that test's answer */  \
    for (ptrdiff_t p = 0; p < planes; p++)                                                        \
        for (ptrdiff_t k = 0; k < L; k++) {                                                       \
            const int64_t at = idx[p * L + k];                                                    \
            if (at >= 0 && at < HW)                                                               \
                gx[p * HW + at] += or_zero_##SFX(gy[p * L + k], keep[p * L + k] != 0);            \
        }                                                                                         \
}

/* -- recurrent cells -------------------------------------------------------------------------- */

/* float32 exp, sigmoid and tanh written without calls or branches, so that the gate loops below
 * vectorise (libm's expf/tanhf calls would keep them scalar, and the gate math is then most of an
 * LSTM step).  exp: x = n ln2 + r with |r| <= ln2/2 (n rounded by the 1.5 * 2^23 trick), e^r by its
 * Taylor polynomial to r^7 (truncation < 1e-8 relative), 2^n put into the exponent bits, for
 * inputs in [-87, 88], where 2^n is a normal float; below that range the result is 0 (the true
 * value, at most 1.7e-38, is a denormal), above it inf, so that a gate saturates to exactly 0 or 1
 * as libm's would (this exp only serves the gates).  sigmoid = 1 / (1 + e^-x): no
 * cancellation, ~2 ulp.  tanh: 2 sigmoid(2x) - 1 loses bits to cancellation near 0, so |x| < 0.3
 * uses its Taylor series to x^11 (truncation < 1e-9 relative) instead; the worst case, just above
 * 0.3, is ~7 ulp (measured over [-10, 10] in steps of 1e-4).
 *
 * The helpers are instantiated once per instruction set (PREFIX): GCC inlines a function only into
 * one compiled for the same target.  Turning the clamps and the tanh select into vector blends
 * needs -fno-trapping-math; these loops never read the floating-point flags (numpy clears them
 * before each of its own calls). */
#define DEFINE_FAST_MATH_F32(PREFIX)                                                              \
static inline float PREFIX##_exp(float v)                                                         \
{                                                                                                 \
    float x = v < -87.0f ? -87.0f : v;                                                            \
    x = x > 88.0f ? 88.0f : x;                                                                    \
    const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;                       \
    const float r = (x - n * 0.693145751953125f) - n * 1.42860682030941723212e-6f;                \
    float p = 1.0f / 5040.0f;                                                                     \
    p = p * r + 1.0f / 720.0f;                                                                    \
    p = p * r + 1.0f / 120.0f;                                                                    \
    p = p * r + 1.0f / 24.0f;                                                                     \
    p = p * r + 1.0f / 6.0f;                                                                      \
    p = p * r + 0.5f;                                                                             \
    p = p * r + 1.0f;                                                                             \
    p = p * r + 1.0f;                                                                             \
    union { int32_t i; float f; } scale;                                                          \
    scale.i = ((int32_t)n + 127) << 23;                                                           \
    /* beyond the clamps: 0 and inf, as libm's (so sigmoid(-inf) is 0, and 0 * an infinite      \
     * hidden state is NaN as in PyTorch, not a ~1e-38 gate times inf; fuzz seed 60607158) */    \
    const float e = v > 88.0f ? INFINITY : p * scale.f;                                           \
    return v < -87.0f ? 0.0f : e;                                                                 \
}                                                                                                 \
                                                                                                  \
static inline float PREFIX##_sigmoid(float x) { return 1.0f / (1.0f + PREFIX##_exp(-x)); }        \
                                                                                                  \
static inline float PREFIX##_tanh(float x)                                                        \
{                                                                                                 \
    const float x2 = x * x;                                                                       \
    float p = -1382.0f / 155925.0f;                                                               \
    p = p * x2 + 62.0f / 2835.0f;                                                                 \
    p = p * x2 - 17.0f / 315.0f;                                                                  \
    p = p * x2 + 2.0f / 15.0f;                                                                    \
    p = p * x2 - 1.0f / 3.0f;                                                                     \
    const float small = x + x * x2 * p;                                                           \
    const float large = 2.0f / (1.0f + PREFIX##_exp(-2.0f * x)) - 1.0f;                           \
    return (x2 < 0.09f) ? small : large;                                                          \
}

static inline double f64_sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }
static inline double f64_tanh(double v) { return tanh(v); }

#define DEFINE_RNN(T, SFX)                                                                        \
static void SFX##_lstm_fwd(ptrdiff_t B, ptrdiff_t H, const T* restrict gi, const T* restrict hh,  \
                           const T* restrict c0, T* restrict acts, T* restrict c,                 \
                           T* restrict tc, T* restrict h)                                         \
{                                                                                                 \
    for (ptrdiff_t b = 0; b < B; b++) {                                                           \
        const T* x = gi + b * 4 * H;                                                              \
        const T* r = hh + b * 4 * H;                                                              \
        T* a = acts + b * 4 * H;                                                                  \
        for (ptrdiff_t k = 0; k < H; k++) {                                                       \
            const T ig = SFX##_sigmoid(x[k] + r[k]);                                              \
            const T fg = SFX##_sigmoid(x[H + k] + r[H + k]);                                      \
            const T gg = SFX##_tanh(x[2 * H + k] + r[2 * H + k]);                                 \
            const T og = SFX##_sigmoid(x[3 * H + k] + r[3 * H + k]);                              \
            const T cv = fg * c0[b * H + k] + ig * gg;                                            \
            const T t = SFX##_tanh(cv);                                                           \
            a[k] = ig; a[H + k] = fg; a[2 * H + k] = gg; a[3 * H + k] = og;                       \
            c[b * H + k] = cv;                                                                    \
            tc[b * H + k] = t;                                                                    \
            h[b * H + k] = og * t;                                                                \
        }                                                                                         \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
static void SFX##_lstm_bwd(ptrdiff_t B, ptrdiff_t H, const T* restrict acts,                      \
                           const T* restrict c0, const T* restrict tc, const T* restrict dh,      \
                           T* restrict dc, T* restrict dgates)                                    \
{                                                                                                 \
    for (ptrdiff_t b = 0; b < B; b++) {                                                           \
        const T* a = acts + b * 4 * H;                                                            \
        T* d = dgates + b * 4 * H;                                                                \
        for (ptrdiff_t k = 0; k < H; k++) {                                                       \
            const T ig = a[k], fg = a[H + k], gg = a[2 * H + k], og = a[3 * H + k];               \
            const T t = tc[b * H + k], g_h = dh[b * H + k];                                       \
            const T g_c = dc[b * H + k] + g_h * og * ((T)1 - t * t);                              \
            d[k] = g_c * gg * ig * ((T)1 - ig);                                                   \
            d[H + k] = g_c * c0[b * H + k] * fg * ((T)1 - fg);                                    \
            d[2 * H + k] = g_c * ig * ((T)1 - gg * gg);                                           \
            d[3 * H + k] = g_h * t * og * ((T)1 - og);                                            \
            dc[b * H + k] = g_c * fg;                                                             \
        }                                                                                         \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
static void SFX##_gru_bwd(ptrdiff_t B, ptrdiff_t H, const T* restrict acts,                       \
                          const T* restrict hh, const T* restrict h0, const T* restrict dh,       \
                          T* restrict dgi, T* restrict dhh, T* restrict dh0)                      \
{                                                                                                 \
    for (ptrdiff_t b = 0; b < B; b++) {                                                           \
        const T* a = acts + b * 3 * H;                                                            \
        const T* r = hh + b * 3 * H;                                                              \
        T* di = dgi + b * 3 * H;                                                                  \
        T* dr = dhh + b * 3 * H;                                                                  \
        for (ptrdiff_t k = 0; k < H; k++) {                                                       \
            const T rg = a[k], zg = a[H + k], ng = a[2 * H + k];                                  \
            const T g = dh[b * H + k];                                                            \
            const T dn = g * ((T)1 - zg) * ((T)1 - ng * ng);                                      \
            const T dz = g * (h0[b * H + k] - ng) * zg * ((T)1 - zg);                             \
            const T drr = dn * r[2 * H + k] * rg * ((T)1 - rg);                                   \
            di[k] = drr; di[H + k] = dz; di[2 * H + k] = dn;                                      \
            dr[k] = drr; dr[H + k] = dz; dr[2 * H + k] = dn * rg;                                 \
            dh0[b * H + k] = g * zg;                                                              \
        }                                                                                         \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
static void SFX##_rnn_bwd(ptrdiff_t B, ptrdiff_t H, int relu, const T* restrict h,                \
                          const T* restrict dh, T* restrict dpre)                                 \
{                                                                                                 \
    const ptrdiff_t n = B * H;                                                                    \
    if (relu)                                                                                     \
        for (ptrdiff_t k = 0; k < n; k++)                                                         \
            dpre[k] = h[k] <= 0 ? (T)0 : dh[k];                                                   \
    else                                                                                          \
        for (ptrdiff_t k = 0; k < n; k++)                                                         \
            dpre[k] = dh[k] * ((T)1 - h[k] * h[k]);                                               \
}

DEFINE_IM2COL_BLOCK(float, im2col_block_f32)
DEFINE_IM2COL_BLOCK(double, im2col_block_f64)
DEFINE_COL2IM_BLOCK(float, col2im_block_f32)
DEFINE_COL2IM_BLOCK(double, col2im_block_f64)
DEFINE_IM2COL(float, f32)
DEFINE_IM2COL(double, f64)
DEFINE_COL2IM(float, f32)
DEFINE_COL2IM(double, f64)
DEFINE_MAX_POOL(float, f32)
DEFINE_MAX_POOL(double, f64)

/* -- instantiation and dispatch ----------------------------------------------------------------- */

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define TG_HASWELL 1    /* AVX2 + FMA copies of the float32 recurrent kernels and of the GEMMs */
#endif

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#endif
DEFINE_FAST_MATH_F32(f32)
DEFINE_RNN(float, f32)
DEFINE_RNN(double, f64)
#ifdef TG_HASWELL
#pragma GCC target("arch=haswell")
DEFINE_FAST_MATH_F32(hsw)
DEFINE_RNN(float, hsw)
/* and 16 floats wide where the CPU has AVX-512: the same operations per element (the same FMA
 * contractions), so the same bits as the AVX2 copy */
#pragma GCC target("avx512f,avx512vl,avx512dq,avx512bw,prefer-vector-width=512")
DEFINE_FAST_MATH_F32(zmm)
DEFINE_RNN(float, zmm)
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

/* Whether this CPU runs the haswell copies (asked once; racing first calls both ask: harmless). */
static int use_haswell(void)
{
#ifdef TG_HASWELL
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return known;
#else
    return 0;
#endif
}

#ifdef TG_HASWELL
/* Whether the AVX-512 kernels run: vecmath's level is AVX-512 (the CPU has F, DQ, VL and BW, and
 * TAPEGRAD_SIMD does not force a lower level, which runs the kernels a CPU without it gets). */
static int use_avx512(void)
{
    static int known = -1;
    if (known < 0) known = use_haswell() && tg_vm_level() == TG_VM_AVX512;
    return known;
}

#define F32_CALL(NAME, ARGS)                                                                      \
    do {                                                                                          \
        if (use_avx512()) zmm_##NAME ARGS;                                                        \
        else if (use_haswell()) hsw_##NAME ARGS;                                                  \
        else f32_##NAME ARGS;                                                                     \
    } while (0)
#else
#define F32_CALL(NAME, ARGS) do { (void)use_haswell; f32_##NAME ARGS; } while (0)
#endif

void tg_lstm_fwd_f32(ptrdiff_t B, ptrdiff_t H, const float* gi, const float* hh, const float* c0,
                     float* acts, float* c, float* tc, float* h)
{
    F32_CALL(lstm_fwd, (B, H, gi, hh, c0, acts, c, tc, h));
}

void tg_lstm_fwd_f64(ptrdiff_t B, ptrdiff_t H, const double* gi, const double* hh,
                     const double* c0, double* acts, double* c, double* tc, double* h)
{
    f64_lstm_fwd(B, H, gi, hh, c0, acts, c, tc, h);
}

void tg_lstm_bwd_f32(ptrdiff_t B, ptrdiff_t H, const float* acts, const float* c0,
                     const float* tc, const float* dh, float* dc, float* dgates)
{
    F32_CALL(lstm_bwd, (B, H, acts, c0, tc, dh, dc, dgates));
}

void tg_lstm_bwd_f64(ptrdiff_t B, ptrdiff_t H, const double* acts, const double* c0,
                     const double* tc, const double* dh, double* dc, double* dgates)
{
    f64_lstm_bwd(B, H, acts, c0, tc, dh, dc, dgates);
}

void tg_gru_bwd_f32(ptrdiff_t B, ptrdiff_t H, const float* acts, const float* hh,
                    const float* h0, const float* dh, float* dgi, float* dhh, float* dh0)
{
    F32_CALL(gru_bwd, (B, H, acts, hh, h0, dh, dgi, dhh, dh0));
}

void tg_gru_bwd_f64(ptrdiff_t B, ptrdiff_t H, const double* acts, const double* hh,
                    const double* h0, const double* dh, double* dgi, double* dhh, double* dh0)
{
    f64_gru_bwd(B, H, acts, hh, h0, dh, dgi, dhh, dh0);
}

/* -- the Elman and GRU steps as PyTorch's cells compute them ----------------------------------
 * PyTorch's CPU RNN and GRU layers run their cells' own ops at each step (ATen's RNN.cpp: the
 * hidden projection linear(h, W_hh, b_hh) plus the step's input projection, then the cell's
 * elementwise ops), so a layer's output is an RNNCell/GRUCell loop's bit for bit.  These steps
 * round each of those ops as tapegrad's own ops (the cells') do: every sum and product rounded
 * on its own (compiled for the generic target, outside the haswell/AVX-512 regions above: no
 * contraction into fused multiply-adds), tanh and sigmoid by vecmath's kernels, which tapegrad's
 * tanh and sigmoid run.  gi: the step's input projection with b_ih; hh: the hidden one with
 * b_hh (the layer no longer folds b_hh into the input's bias: a different sum's rounding). */
#define DEFINE_CELL_STEPS(T, SFX)                                                                 \
void tg_rnn_fwd_##SFX(ptrdiff_t B, ptrdiff_t H, int relu, const T* gi, const T* hh, T* h)         \
{                                                                                                 \
    const ptrdiff_t n = B * H;                                                                    \
    for (ptrdiff_t k = 0; k < n; k++) h[k] = hh[k] + gi[k];                                       \
    if (relu)                                                                                     \
        for (ptrdiff_t k = 0; k < n; k++)                                                         \
            h[k] = (h[k] > 0 || isnan(h[k])) ? h[k] : (T)0;                                       \
    else                                                                                          \
        tg_vm_tanh_##SFX(h, h, (size_t)n);                                                        \
}                                                                                                 \
                                                                                                  \
/* r = sigmoid(h_r + i_r), z = sigmoid(h_z + i_z), n = tanh(i_n + h_n * r),                       \
 * h' = (h - n) * z + n: GRUCell's ops in its order; acts keeps (r, z, n) per row. */            \
void tg_gru_fwd_##SFX(ptrdiff_t B, ptrdiff_t H, const T* gi, const T* hh, const T* h0,           \
                      T* acts, T* h)                                                              \
{                                                                                                 \
    for (ptrdiff_t b = 0; b < B; b++) {                                                           \
        const T* x = gi + b * 3 * H;                                                              \
        const T* r = hh + b * 3 * H;                                                              \
        const T* hp = h0 + b * H;                                                                 \
        T* a = acts + b * 3 * H;                                                                  \
        T* out = h + b * H;                                                                       \
        for (ptrdiff_t k = 0; k < 2 * H; k++) a[k] = r[k] + x[k];                                 \
        tg_vm_sigmoid_##SFX(a, a, (size_t)(2 * H));                                               \
        for (ptrdiff_t k = 0; k < H; k++) {                                                       \
            const T p = r[2 * H + k] * a[k];                                                      \
            a[2 * H + k] = x[2 * H + k] + p;                                                      \
        }                                                                                         \
        tg_vm_tanh_##SFX(a + 2 * H, a + 2 * H, (size_t)H);                                        \
        for (ptrdiff_t k = 0; k < H; k++) {                                                       \
            const T ng = a[2 * H + k];                                                            \
            const T d = hp[k] - ng;                                                               \
            const T e = d * a[H + k];                                                             \
            out[k] = e + ng;                                                                      \
        }                                                                                         \
    }                                                                                             \
}

DEFINE_CELL_STEPS(float, f32)
DEFINE_CELL_STEPS(double, f64)

void tg_rnn_bwd_f32(ptrdiff_t B, ptrdiff_t H, int relu, const float* h, const float* dh,
                    float* dpre)
{
    F32_CALL(rnn_bwd, (B, H, relu, h, dh, dpre));
}

void tg_rnn_bwd_f64(ptrdiff_t B, ptrdiff_t H, int relu, const double* h, const double* dh,
                    double* dpre)
{
    f64_rnn_bwd(B, H, relu, h, dh, dpre);
}


/* -- GEMM with a pre-packed right operand (the recurrent layers' hidden-side matmul) ---------
 * B is copied once into panels of NR columns (each panel K x NR, row k's NR entries adjacent,
 * the last panel zero-padded), so that every time step's small product streams B from cache in
 * the order the micro-kernel reads it, instead of BLAS re-packing B at each of the T calls.
 * Each C element is one dot product accumulated in k order, so a row's result never depends on
 * how many rows the call has. */

#define GEMM_MR 6
#define GEMM_NR_f32 16
#define GEMM_NR_f64 8

#define DEFINE_GEMM_PACK(T, SFX)                                                                  \
ptrdiff_t tg_gemm_packed_size_##SFX(ptrdiff_t K, ptrdiff_t N)                                     \
{                                                                                                 \
    return ((N + GEMM_NR_##SFX - 1) / GEMM_NR_##SFX) * GEMM_NR_##SFX * K;                         \
}                                                                                                 \
                                                                                                  \
void tg_gemm_pack_##SFX(ptrdiff_t K, ptrdiff_t N, const T* b, ptrdiff_t rs, ptrdiff_t cs,         \
                        T* packed)                                                                \
{                                                                                                 \
    const ptrdiff_t NR = GEMM_NR_##SFX;                                                           \
    for (ptrdiff_t p = 0; p * NR < N; p++) {                                                      \
        T* panel = packed + p * K * NR;                                                           \
        const ptrdiff_t nb = N - p * NR < NR ? N - p * NR : NR;                                   \
        /* read B along its unit stride: a column at a time when B is a transpose */              \
        if (rs == 1 && cs != 1) {                                                                 \
            for (ptrdiff_t j = 0; j < NR; j++) {                                                  \
                if (j >= nb) {                                                                    \
                    for (ptrdiff_t k = 0; k < K; k++) panel[k * NR + j] = (T)0;                   \
                    continue;                                                                     \
                }                                                                                 \
                const T* col = b + (p * NR + j) * cs;                                             \
                for (ptrdiff_t k = 0; k < K; k++) panel[k * NR + j] = col[k];                     \
            }                                                                                     \
        } else {                                                                                  \
            for (ptrdiff_t k = 0; k < K; k++)                                                     \
                for (ptrdiff_t j = 0; j < NR; j++)                                                \
                    panel[k * NR + j] = j < nb ? b[k * rs + (p * NR + j) * cs] : (T)0;            \
        }                                                                                         \
    }                                                                                             \
}

/* Writes one finished tile: c rows (stride ldc, nb <= NR columns) = tile (+ bias) (+ add). */
#define DEFINE_GEMM_STORE(T, SFX, PREFIX)                                                         \
static inline void PREFIX##_gemm_store(ptrdiff_t mr, ptrdiff_t nb, const T* tile, const T* bias,  \
                                       const T* add, ptrdiff_t ldadd, T* c, ptrdiff_t ldc)        \
{                                                                                                 \
    for (ptrdiff_t r = 0; r < mr; r++) {                                                          \
        const T* trow = tile + r * GEMM_NR_##SFX;                                                 \
        const T* arow = add ? add + r * ldadd : NULL;                                             \
        T* crow = c + r * ldc;                                                                    \
        for (ptrdiff_t j = 0; j < nb; j++) {                                                      \
            T v = trow[j];                                                                        \
            if (bias) v += bias[j];                                                               \
            if (arow) v += arow[j];                                                               \
            crow[j] = v;                                                                          \
        }                                                                                         \
    }                                                                                             \
}

/* The portable micro-kernel: c (mr x nb) = a (mr rows, stride lda, K columns) @ one panel
 * (+ bias) (+ add). */
#define DEFINE_GEMM_TILE_C(T, SFX, PREFIX)                                                        \
static void PREFIX##_gemm_tile(ptrdiff_t mr, ptrdiff_t nb, ptrdiff_t K, const T* restrict a,      \
                               ptrdiff_t lda, const T* restrict bp, const T* bias, const T* add,  \
                               ptrdiff_t ldadd, T* c, ptrdiff_t ldc)                              \
{                                                                                                 \
    enum { NR = GEMM_NR_##SFX };                                                                  \
    T acc[GEMM_MR][NR];                                                                           \
    memset(acc, 0, sizeof acc);                                                                   \
    for (ptrdiff_t k = 0; k < K; k++) {                                                           \
        const T* brow = bp + k * NR;                                                              \
        for (ptrdiff_t r = 0; r < mr; r++) {                                                      \
            const T av = a[r * lda + k];                                                          \
            for (int j = 0; j < NR; j++) acc[r][j] += av * brow[j];                               \
        }                                                                                         \
    }                                                                                             \
    PREFIX##_gemm_store(mr, nb, &acc[0][0], bias, add, ldadd, c, ldc);                            \
}

/* The rows of the next block when `rem` rows remain: 6, or 4 where a 6 would leave fewer than 4
 * behind (20 rows as 6+6+4+4), so that blocks keep 8 to 12 independent accumulators busy. */
static inline ptrdiff_t gemm_rows(ptrdiff_t rem)
{
    return (rem >= GEMM_MR && rem != 8 && rem != 9) ? GEMM_MR : (rem >= 4 ? 4 : rem);
}

/* The driver: c (M x N, stride ldc) = a @ B (+ bias, an N-vector) (+ add, M x N, stride ldadd);
 * bias and add may be NULL.  a and add may not overlap c.  Panel by panel: each stays in L1 while
 * every row block uses it. */
#define DEFINE_GEMM_DRIVER(T, SFX, PREFIX)                                                        \
static void PREFIX##_gemm_packed(ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const T* a,               \
                                 ptrdiff_t lda, const T* packed, const T* bias, const T* add,     \
                                 ptrdiff_t ldadd, T* c, ptrdiff_t ldc)                            \
{                                                                                                 \
    enum { NR = GEMM_NR_##SFX };                                                                  \
    for (ptrdiff_t p = 0; p * NR < N; p++) {                                                      \
        const ptrdiff_t n0 = p * NR, nb = N - n0 < NR ? N - n0 : NR;                              \
        const T* panel = packed + p * K * NR;                                                     \
        for (ptrdiff_t i0 = 0; i0 < M;) {                                                         \
            const ptrdiff_t mr = gemm_rows(M - i0);                                               \
            PREFIX##_gemm_tile(mr, nb, K, a + i0 * lda, lda, panel, bias ? bias + n0 : NULL,      \
                               add ? add + i0 * ldadd + n0 : NULL, ldadd, c + i0 * ldc + n0,      \
                               ldc);                                                              \
            i0 += mr;                                                                             \
        }                                                                                         \
    }                                                                                             \
}

DEFINE_GEMM_PACK(float, f32)
DEFINE_GEMM_PACK(double, f64)
DEFINE_GEMM_STORE(float, f32, f32)
DEFINE_GEMM_STORE(double, f64, f64)
DEFINE_GEMM_TILE_C(float, f32, f32)
DEFINE_GEMM_TILE_C(double, f64, f64)
DEFINE_GEMM_DRIVER(float, f32, f32)
DEFINE_GEMM_DRIVER(double, f64, f64)

#ifdef TG_HASWELL
#pragma GCC push_options
#pragma GCC target("avx2,fma")
/* The AVX2 + FMA micro-kernels: up to 6 rows of two vectors each, the accumulators named
 * variables (arrays of vectors would be spilled to the stack at every k).  A block of fewer rows
 * points its missing rows at its first one and drops their results: rows are split so that such
 * padding stays rare (hsw_gemm_rows).  A full panel's tile is finished in registers (bias and add
 * loaded as vectors), a partial one through the scalar store. */
#define HSW_TILE(T, SFX, V, W, SET0, LOAD, STORE, BCAST, FMA, ADD)                                \
static void hsw_##SFX##_gemm_tile(ptrdiff_t mr, ptrdiff_t nb, ptrdiff_t K, const T* restrict a,   \
                                  ptrdiff_t lda, const T* restrict bp, const T* bias,             \
                                  const T* add, ptrdiff_t ldadd, T* c, ptrdiff_t ldc)             \
{                                                                                                 \
    const T* a0 = a;                                                                              \
    const T* a1 = mr > 1 ? a + lda : a;                                                           \
    const T* a2 = mr > 2 ? a + 2 * lda : a;                                                       \
    const T* a3 = mr > 3 ? a + 3 * lda : a;                                                       \
    const T* a4 = mr > 4 ? a + 4 * lda : a;                                                       \
    const T* a5 = mr > 5 ? a + 5 * lda : a;                                                       \
    V c00 = SET0(), c01 = SET0(), c10 = SET0(), c11 = SET0(), c20 = SET0(), c21 = SET0();         \
    V c30 = SET0(), c31 = SET0(), c40 = SET0(), c41 = SET0(), c50 = SET0(), c51 = SET0();         \
    if (mr > 4) {                                                                                 \
        for (ptrdiff_t k = 0; k < K; k++) {                                                       \
            const V b0 = LOAD(bp + k * 2 * W), b1 = LOAD(bp + k * 2 * W + W);                     \
            V x = BCAST(a0 + k); c00 = FMA(x, b0, c00); c01 = FMA(x, b1, c01);                    \
            x = BCAST(a1 + k); c10 = FMA(x, b0, c10); c11 = FMA(x, b1, c11);                      \
            x = BCAST(a2 + k); c20 = FMA(x, b0, c20); c21 = FMA(x, b1, c21);                      \
            x = BCAST(a3 + k); c30 = FMA(x, b0, c30); c31 = FMA(x, b1, c31);                      \
            x = BCAST(a4 + k); c40 = FMA(x, b0, c40); c41 = FMA(x, b1, c41);                      \
            x = BCAST(a5 + k); c50 = FMA(x, b0, c50); c51 = FMA(x, b1, c51);                      \
        }                                                                                         \
    } else {                                                                                      \
        for (ptrdiff_t k = 0; k < K; k++) {                                                       \
            const V b0 = LOAD(bp + k * 2 * W), b1 = LOAD(bp + k * 2 * W + W);                     \
            V x = BCAST(a0 + k); c00 = FMA(x, b0, c00); c01 = FMA(x, b1, c01);                    \
            x = BCAST(a1 + k); c10 = FMA(x, b0, c10); c11 = FMA(x, b1, c11);                      \
            x = BCAST(a2 + k); c20 = FMA(x, b0, c20); c21 = FMA(x, b1, c21);                      \
            x = BCAST(a3 + k); c30 = FMA(x, b0, c30); c31 = FMA(x, b1, c31);                      \
        }                                                                                         \
    }                                                                                             \
    T tile[GEMM_MR * 2 * W];                                                                      \
    STORE(tile, c00); STORE(tile + W, c01); STORE(tile + 2 * W, c10); STORE(tile + 3 * W, c11);   \
    STORE(tile + 4 * W, c20); STORE(tile + 5 * W, c21); STORE(tile + 6 * W, c30);                 \
    STORE(tile + 7 * W, c31); STORE(tile + 8 * W, c40); STORE(tile + 9 * W, c41);                 \
    STORE(tile + 10 * W, c50); STORE(tile + 11 * W, c51);                                         \
    if (nb < 2 * W) {                                                                             \
        hsw_##SFX##_gemm_store(mr, nb, tile, bias, add, ldadd, c, ldc);                           \
        return;                                                                                   \
    }                                                                                             \
    const V z = SET0();                                                                           \
    const V bias0 = bias ? LOAD(bias) : z, bias1 = bias ? LOAD(bias + W) : z;                     \
    for (ptrdiff_t r = 0; r < mr; r++) {                                                          \
        V v0 = ADD(LOAD(tile + 2 * W * r), bias0), v1 = ADD(LOAD(tile + 2 * W * r + W), bias1);   \
        if (add) {                                                                                \
            v0 = ADD(v0, LOAD(add + r * ldadd));                                                  \
            v1 = ADD(v1, LOAD(add + r * ldadd + W));                                              \
        }                                                                                         \
        STORE(c + r * ldc, v0);                                                                   \
        STORE(c + r * ldc + W, v1);                                                               \
    }                                                                                             \
}

DEFINE_GEMM_STORE(float, f32, hsw_f32)
DEFINE_GEMM_STORE(double, f64, hsw_f64)
HSW_TILE(float, f32, __m256, 8, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_storeu_ps,
         _mm256_broadcast_ss, _mm256_fmadd_ps, _mm256_add_ps)
HSW_TILE(double, f64, __m256d, 4, _mm256_setzero_pd, _mm256_loadu_pd, _mm256_storeu_pd,
         _mm256_broadcast_sd, _mm256_fmadd_pd, _mm256_add_pd)
DEFINE_GEMM_DRIVER(float, f32, hsw_f32)
DEFINE_GEMM_DRIVER(double, f64, hsw_f64)
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,fma")
/* The AVX-512 micro-kernels, for CPUs with 512-bit FMAs (Zen 5 and Intel server parts run two per
 * cycle: twice AVX2's width).  A panel's NR columns (16 floats, 8 doubles) are one vector, so the
 * packing is the AVX2 kernels' and a tile holds up to 12 rows: 12 independent accumulators cover
 * the FMA latency with both pipes busy.  A partial panel (nb < NR) loads and stores through a
 * mask, so every tile finishes in registers.  Each element is the same k-ordered chain of FMAs as
 * in the AVX2 kernel: both give the same bits. */
#define Z_ROWS 12
#define Z_FMA_ROW(FMA, BCAST, R) acc##R = FMA(BCAST(a##R[k * ks]), b, acc##R);
#define Z_FMA4(FMA, BCAST, R0, R1, R2, R3)                                                        \
    Z_FMA_ROW(FMA, BCAST, R0) Z_FMA_ROW(FMA, BCAST, R1)                                           \
    Z_FMA_ROW(FMA, BCAST, R2) Z_FMA_ROW(FMA, BCAST, R3)
#define Z_STORE_ROW(V, ADD, MLOAD, MSTORE, R)                                                     \
    if (R < mr) {                                                                                 \
        V v = acc##R;                                                                             \
        if (bias) v = ADD(v, MLOAD(m, bias));                                                     \
        if (add) v = ADD(v, MLOAD(m, add + R * ldadd));                                           \
        MSTORE(c + R * ldc, m, v);                                                                \
    }
#define Z_STORE4(V, ADD, MLOAD, MSTORE, R0, R1, R2, R3)                                           \
    Z_STORE_ROW(V, ADD, MLOAD, MSTORE, R0) Z_STORE_ROW(V, ADD, MLOAD, MSTORE, R1)                 \
    Z_STORE_ROW(V, ADD, MLOAD, MSTORE, R2) Z_STORE_ROW(V, ADD, MLOAD, MSTORE, R3)
/* a0..a11: the tile's rows of a (RS apart; rows past mr read row 0 again, so the k loop has no
 * branch, and their results are dropped); ks: a's step along k. */
#define Z_ROW_POINTERS(T, RS, KS)                                                                 \
    const T *a0 = a, *a1 = mr > 1 ? a + RS : a, *a2 = mr > 2 ? a + 2 * RS : a;                    \
    const T *a3 = mr > 3 ? a + 3 * RS : a, *a4 = mr > 4 ? a + 4 * RS : a;                         \
    const T *a5 = mr > 5 ? a + 5 * RS : a, *a6 = mr > 6 ? a + 6 * RS : a;                         \
    const T *a7 = mr > 7 ? a + 7 * RS : a, *a8 = mr > 8 ? a + 8 * RS : a;                         \
    const T *a9 = mr > 9 ? a + 9 * RS : a, *a10 = mr > 10 ? a + 10 * RS : a;                      \
    const T *a11 = mr > 11 ? a + 11 * RS : a;                                                     \
    const ptrdiff_t ks = KS;
/* A row's accumulator at the start of a tile: zero, or (cont: a later block of k, Z_KC) the partial
 * sums the previous block stored in c, so that each element is still one chain of FMAs in k order
 * (a float stored and loaded back is the same float): the bits do not depend on the blocking. */
#define Z_START(MLOAD, SET0, M, OFF, R) (cont && R < mr ? MLOAD(M, c + R * ldc + OFF) : SET0())
#define Z_START4(V, MLOAD, SET0, M, OFF, N, R0, R1, R2, R3)                                       \
    V N##R0 = Z_START(MLOAD, SET0, M, OFF, R0), N##R1 = Z_START(MLOAD, SET0, M, OFF, R1);         \
    V N##R2 = Z_START(MLOAD, SET0, M, OFF, R2), N##R3 = Z_START(MLOAD, SET0, M, OFF, R3);
/* NAME: the tile's name; RS, KS: a's steps between rows and along k (lda, 1 for a; 1, lda for
 * a transposed a, whose rows are the columns of a K x M matrix). */
#define Z_TILE(T, SFX, NAME, RS, KS, V, W, MASK_T, SET0, BCAST, LOAD, MLOAD, MSTORE, FMA, ADD)    \
static void z_##SFX##_##NAME(ptrdiff_t mr, ptrdiff_t nb, ptrdiff_t K, const T* restrict a,        \
                             ptrdiff_t lda, const T* restrict bp, const T* bias, const T* add,    \
                             ptrdiff_t ldadd, T* c, ptrdiff_t ldc, int cont)                      \
{                                                                                                 \
    Z_ROW_POINTERS(T, RS, KS)                                                                     \
    const MASK_T m = (MASK_T)((1u << nb) - 1u);                                                   \
    Z_START4(V, MLOAD, SET0, m, 0, acc, 0, 1, 2, 3)                                               \
    Z_START4(V, MLOAD, SET0, m, 0, acc, 4, 5, 6, 7)                                               \
    Z_START4(V, MLOAD, SET0, m, 0, acc, 8, 9, 10, 11)                                             \
    if (mr > 8) {                                                                                 \
        for (ptrdiff_t k = 0; k < K; k++) {                                                       \
            const V b = LOAD(bp + k * W);                                                         \
            Z_FMA4(FMA, BCAST, 0, 1, 2, 3) Z_FMA4(FMA, BCAST, 4, 5, 6, 7)                         \
            Z_FMA4(FMA, BCAST, 8, 9, 10, 11)                                                      \
        }                                                                                         \
    } else if (mr > 4) {                                                                          \
        for (ptrdiff_t k = 0; k < K; k++) {                                                       \
            const V b = LOAD(bp + k * W);                                                         \
            Z_FMA4(FMA, BCAST, 0, 1, 2, 3) Z_FMA4(FMA, BCAST, 4, 5, 6, 7)                         \
        }                                                                                         \
    } else {                                                                                      \
        for (ptrdiff_t k = 0; k < K; k++) {                                                       \
            const V b = LOAD(bp + k * W);                                                         \
            Z_FMA4(FMA, BCAST, 0, 1, 2, 3)                                                        \
        }                                                                                         \
    }                                                                                             \
    Z_STORE4(V, ADD, MLOAD, MSTORE, 0, 1, 2, 3) Z_STORE4(V, ADD, MLOAD, MSTORE, 4, 5, 6, 7)       \
    Z_STORE4(V, ADD, MLOAD, MSTORE, 8, 9, 10, 11)                                                 \
}

/* The same over two adjacent panels (32 floats, 16 doubles: 24 accumulators): each broadcast of
 * a feeds two FMAs, halving a's loads per FMA; the second panel may be partial (nb2 columns). */
#define Z2_FMA_ROW(V, FMA, BCAST, R)                                                              \
    { const V x = BCAST(a##R[k * ks]); p##R = FMA(x, b0, p##R); q##R = FMA(x, b1, q##R); }
#define Z2_FMA4(V, FMA, BCAST, R0, R1, R2, R3)                                                    \
    Z2_FMA_ROW(V, FMA, BCAST, R0) Z2_FMA_ROW(V, FMA, BCAST, R1)                                   \
    Z2_FMA_ROW(V, FMA, BCAST, R2) Z2_FMA_ROW(V, FMA, BCAST, R3)
#define Z2_STORE_ROW(V, ADD, MLOAD, MSTORE, W, R)                                                 \
    if (R < mr) {                                                                                 \
        V v = p##R, u = q##R;                                                                     \
        if (bias) { v = ADD(v, MLOAD(m1, bias)); u = ADD(u, MLOAD(m2, bias + W)); }               \
        if (add) {                                                                                \
            v = ADD(v, MLOAD(m1, add + R * ldadd));                                               \
            u = ADD(u, MLOAD(m2, add + R * ldadd + W));                                           \
        }                                                                                         \
        MSTORE(c + R * ldc, m1, v);                                                               \
        MSTORE(c + R * ldc + W, m2, u);                                                           \
    }
#define Z2_STORE4(V, ADD, MLOAD, MSTORE, W, R0, R1, R2, R3)                                       \
    Z2_STORE_ROW(V, ADD, MLOAD, MSTORE, W, R0) Z2_STORE_ROW(V, ADD, MLOAD, MSTORE, W, R1)         \
    Z2_STORE_ROW(V, ADD, MLOAD, MSTORE, W, R2) Z2_STORE_ROW(V, ADD, MLOAD, MSTORE, W, R3)
#define Z_TILE2(T, SFX, NAME, RS, KS, V, W, MASK_T, SET0, BCAST, LOAD, MLOAD, MSTORE, FMA, ADD)   \
static void z_##SFX##_##NAME(ptrdiff_t mr, ptrdiff_t nb2, ptrdiff_t K, const T* restrict a,       \
                             ptrdiff_t lda, const T* restrict bp, const T* bias, const T* add,    \
                             ptrdiff_t ldadd, T* c, ptrdiff_t ldc, int cont, ptrdiff_t ps)        \
{                                                                                                 \
    Z_ROW_POINTERS(T, RS, KS)                                                                     \
    const T* restrict bq = bp + ps;             /* the second panel (ps: a panel's size) */       \
    const MASK_T m1 = (MASK_T)((1u << W) - 1u), m2 = (MASK_T)((1u << nb2) - 1u);                  \
    Z_START4(V, MLOAD, SET0, m1, 0, p, 0, 1, 2, 3)                                                \
    Z_START4(V, MLOAD, SET0, m1, 0, p, 4, 5, 6, 7)                                                \
    Z_START4(V, MLOAD, SET0, m1, 0, p, 8, 9, 10, 11)                                              \
    Z_START4(V, MLOAD, SET0, m2, W, q, 0, 1, 2, 3)                                                \
    Z_START4(V, MLOAD, SET0, m2, W, q, 4, 5, 6, 7)                                                \
    Z_START4(V, MLOAD, SET0, m2, W, q, 8, 9, 10, 11)                                              \
    if (mr > 8) {                                                                                 \
        for (ptrdiff_t k = 0; k < K; k++) {                                                       \
            const V b0 = LOAD(bp + k * W), b1 = LOAD(bq + k * W);                                 \
            Z2_FMA4(V, FMA, BCAST, 0, 1, 2, 3) Z2_FMA4(V, FMA, BCAST, 4, 5, 6, 7)                 \
            Z2_FMA4(V, FMA, BCAST, 8, 9, 10, 11)                                                  \
        }                                                                                         \
    } else if (mr > 4) {                                                                          \
        for (ptrdiff_t k = 0; k < K; k++) {                                                       \
            const V b0 = LOAD(bp + k * W), b1 = LOAD(bq + k * W);                                 \
            Z2_FMA4(V, FMA, BCAST, 0, 1, 2, 3) Z2_FMA4(V, FMA, BCAST, 4, 5, 6, 7)                 \
        }                                                                                         \
    } else {                                                                                      \
        for (ptrdiff_t k = 0; k < K; k++) {                                                       \
            const V b0 = LOAD(bp + k * W), b1 = LOAD(bq + k * W);                                 \
            Z2_FMA4(V, FMA, BCAST, 0, 1, 2, 3)                                                    \
        }                                                                                         \
    }                                                                                             \
    Z2_STORE4(V, ADD, MLOAD, MSTORE, W, 0, 1, 2, 3) Z2_STORE4(V, ADD, MLOAD, MSTORE, W, 4, 5, 6, 7) \
    Z2_STORE4(V, ADD, MLOAD, MSTORE, W, 8, 9, 10, 11)                                             \
}

/* Rows of the next block when `rem` remain: 12 while there are more, then the rest.  The tiles run
 * 4, 8 or 12 rows (a block of 10 computes 2 rows it drops), so 20 rows go as 12 + 8, not 10 + 10
 * (20% more FMAs); with two panels a tile of 4 rows still keeps 8 accumulators busy. */
static inline ptrdiff_t z_gemm_rows(ptrdiff_t rem)
{
    return rem <= Z_ROWS ? rem : Z_ROWS;
}

/* Blocks of Z_KC rows of B (k), then panels two at a time (TILE2), a last odd one alone (TILE):
 * a block of a panel pair (Z_KC x 2 NR: 16 KiB) stays in L1 while every row block uses it.
 * Without the k blocks a long K (a weight gradient summing T*B = 700 rows) streamed each pair
 * (90 KiB) from L2 for every row block: 42 GMAC/s against 68 at K = 140.  A later block's tiles
 * continue the partial sums stored in c (Z_START); bias and add join at the last block. */
#define Z_KC 128
#define DEFINE_Z_GEMM_DRIVER(T, SFX, NAME, TILE, TILE2, RS, KS)                                   \
static void z_##SFX##_##NAME(ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const T* a, ptrdiff_t lda,    \
                             const T* packed, const T* bias, const T* add, ptrdiff_t ldadd, T* c, \
                             ptrdiff_t ldc)                                                       \
{                                                                                                 \
    enum { NR = GEMM_NR_##SFX };                                                                  \
    for (ptrdiff_t k0 = 0; k0 < K || k0 == 0; k0 += Z_KC) {                                       \
        /* (a last block of fewer than Z_KC / 4 rows joins the one before it) */                  \
        const ptrdiff_t kc = K - k0 < Z_KC + Z_KC / 4 ? K - k0 : Z_KC;                            \
        const int cont = k0 > 0, last = k0 + kc >= K;                                             \
        for (ptrdiff_t p = 0; p * NR < N;) {                                                      \
            const ptrdiff_t n0 = p * NR, nb = N - n0 < NR ? N - n0 : NR;                          \
            const ptrdiff_t nb2 = N - n0 - NR < NR ? N - n0 - NR : NR;  /* <= 0: no 2nd panel */  \
            const T* panel = packed + p * K * NR + k0 * NR;                                       \
            for (ptrdiff_t i0 = 0; i0 < M;) {                                                     \
                const ptrdiff_t mr = z_gemm_rows(M - i0);                                         \
                const T* bi = bias && last ? bias + n0 : NULL;                                    \
                const T* ad = add && last ? add + i0 * ldadd + n0 : NULL;                         \
                const T* ai = a + i0 * RS + k0 * (KS);                                            \
                if (nb2 > 0)                                                                      \
                    z_##SFX##_##TILE2(mr, nb2, kc, ai, lda, panel, bi, ad, ldadd,                 \
                                      c + i0 * ldc + n0, ldc, cont, K * NR);                      \
                else                                                                              \
                    z_##SFX##_##TILE(mr, nb, kc, ai, lda, panel, bi, ad, ldadd,                   \
                                     c + i0 * ldc + n0, ldc, cont);                               \
                i0 += mr;                                                                         \
            }                                                                                     \
            p += nb2 > 0 ? 2 : 1;                                                                 \
        }                                                                                         \
        if (last) break;                                                                          \
    }                                                                                             \
}

#define Z_F32 __m512, 16, __mmask16, _mm512_setzero_ps, _mm512_set1_ps, _mm512_loadu_ps,            \
    _mm512_maskz_loadu_ps, _mm512_mask_storeu_ps, _mm512_fmadd_ps, _mm512_add_ps
#define Z_F64 __m512d, 8, __mmask8, _mm512_setzero_pd, _mm512_set1_pd, _mm512_loadu_pd,             \
    _mm512_maskz_loadu_pd, _mm512_mask_storeu_pd, _mm512_fmadd_pd, _mm512_add_pd
#define Z_TILE_(...) Z_TILE(__VA_ARGS__)
#define Z_TILE2_(...) Z_TILE2(__VA_ARGS__)
Z_TILE_(float, f32, gemm_tile, lda, 1, Z_F32)
Z_TILE_(double, f64, gemm_tile, lda, 1, Z_F64)
Z_TILE_(float, f32, gemm_tile_at, 1, lda, Z_F32)
Z_TILE_(double, f64, gemm_tile_at, 1, lda, Z_F64)
Z_TILE2_(float, f32, gemm_tile2, lda, 1, Z_F32)
Z_TILE2_(double, f64, gemm_tile2, lda, 1, Z_F64)
Z_TILE2_(float, f32, gemm_tile2_at, 1, lda, Z_F32)
Z_TILE2_(double, f64, gemm_tile2_at, 1, lda, Z_F64)
DEFINE_Z_GEMM_DRIVER(float, f32, gemm_packed, gemm_tile, gemm_tile2, lda, 1)
DEFINE_Z_GEMM_DRIVER(double, f64, gemm_packed, gemm_tile, gemm_tile2, lda, 1)
DEFINE_Z_GEMM_DRIVER(float, f32, gemm_packed_at, gemm_tile_at, gemm_tile2_at, 1, lda)
DEFINE_Z_GEMM_DRIVER(double, f64, gemm_packed_at, gemm_tile_at, gemm_tile2_at, 1, lda)
#pragma GCC pop_options

#define GEMM_CALL(SFX, ARGS)                                                                      \
    do {                                                                                          \
        if (use_avx512()) z_##SFX##_gemm_packed ARGS;                                             \
        else if (use_haswell()) hsw_##SFX##_gemm_packed ARGS;                                     \
        else SFX##_gemm_packed ARGS;                                                              \
    } while (0)
#else
#define GEMM_CALL(SFX, ARGS) SFX##_gemm_packed ARGS
#endif

void tg_gemm_packed_f32(ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const float* a, ptrdiff_t lda,
                        const float* packed, const float* bias, const float* add,
                        ptrdiff_t ldadd, float* c, ptrdiff_t ldc)
{
    GEMM_CALL(f32, (M, N, K, a, lda, packed, bias, add, ldadd, c, ldc));
}

void tg_gemm_packed_f64(ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const double* a, ptrdiff_t lda,
                        const double* packed, const double* bias, const double* add,
                        ptrdiff_t ldadd, double* c, ptrdiff_t ldc)
{
    GEMM_CALL(f64, (M, N, K, a, lda, packed, bias, add, ldadd, c, ldc));
}

#ifdef TG_HASWELL
#define GEMM_AT_CALL(SFX, ARGS)                                                                   \
    do {                                                                                          \
        if (!use_avx512()) return 0;                                                              \
        z_##SFX##_gemm_packed_at ARGS;                                                            \
        return 1;                                                                                 \
    } while (0)
#else
#define GEMM_AT_CALL(SFX, ARGS) return 0
#endif

int tg_gemm_packed_at_f32(ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const float* a, ptrdiff_t lda,
                          const float* packed, float* c, ptrdiff_t ldc)
{
    GEMM_AT_CALL(f32, (M, N, K, a, lda, packed, NULL, NULL, 0, c, ldc));
}

int tg_gemm_packed_at_f64(ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const double* a, ptrdiff_t lda,
                          const double* packed, double* c, ptrdiff_t ldc)
{
    GEMM_AT_CALL(f64, (M, N, K, a, lda, packed, NULL, NULL, 0, c, ldc));
}

/* -- attention's softmax ------------------------------------------------------------------------
 * Three passes over the whole block: scale and subtract each row's maximum, one vectorised exp
 * over everything, then normalise each row (a dead row, all -inf, is zeroed). */

#define ATTN_SOFTMAX(T, SFX, EXP)                                                                 \
void tg_attn_softmax_##SFX(ptrdiff_t rows, ptrdiff_t cols, T scale, T* s)                         \
{                                                                                                 \
    ptrdiff_t r, j;                                                                               \
    for (r = 0; r < rows; r++) {                                                                  \
        T* row = s + r * cols;                                                                    \
        T m = -INFINITY;                                                                          \
        for (j = 0; j < cols; j++) {                                                              \
            row[j] *= scale;                                                                      \
            if (row[j] > m) m = row[j];                                                           \
        }                                                                                         \
        if (m == -INFINITY) m = 0;         /* dead row: exp(-inf) = 0, zeroed below */            \
        for (j = 0; j < cols; j++) row[j] -= m;                                                   \
    }                                                                                             \
    EXP(s, s, (size_t)(rows * cols));                                                             \
    for (r = 0; r < rows; r++) {                                                                  \
        T* row = s + r * cols;                                                                    \
        double sum = 0.0;                                                                         \
        for (j = 0; j < cols; j++) sum += row[j];                                                 \
        if (sum == 0.0) {                                                                         \
            for (j = 0; j < cols; j++) row[j] = 0;                                                \
        } else {                                                                                  \
            T inv = (T)(1.0 / sum);                                                               \
            for (j = 0; j < cols; j++) row[j] *= inv;                                             \
        }                                                                                         \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
void tg_attn_softmax_grad_##SFX(ptrdiff_t rows, ptrdiff_t cols, T scale, const T* p, T* dp)     \
{                                                                                                 \
    ptrdiff_t r, j;                                                                               \
    for (r = 0; r < rows; r++) {                                                                  \
        const T* pr = p + r * cols;                                                               \
        T* dr = dp + r * cols;                                                                    \
        double dot = 0.0;                                                                         \
        for (j = 0; j < cols; j++) dot += (double)dr[j] * pr[j];                                  \
        T d = (T)dot;                                                                             \
        for (j = 0; j < cols; j++) dr[j] = scale * (pr[j] * (dr[j] - d));                         \
    }                                                                                             \
}

ATTN_SOFTMAX(float, f32, tg_vm_exp_f32)
ATTN_SOFTMAX(double, f64, tg_vm_exp_f64)


/* -- layer normalisation ------------------------------------------------------------------------
 * The numpy formula's operations, each rounded to T, with its sums in np.add.reduce's order
 * (tg_sum_*, kernels.c): the values are the ones the formula gives, only without its temporaries.
 * Baseline x86-64 code (no FMA), so no multiply-add is contracted. */

#define LAYER_NORM(T, SFX, SQRT)                                                                  \
void tg_layer_norm_fwd_##SFX(ptrdiff_t M, ptrdiff_t N, T eps, const T* x, const T* w,            \
                             const T* b, T* y, T* xhat, T* rstd, T* work)                         \
{                                                                                                 \
    for (ptrdiff_t r = 0; r < M; r++) {                                                           \
        const T* xr = x + r * N;                                                                  \
        T* hr = xhat + r * N;                                                                     \
        T* yr = y + r * N;                                                                        \
        /* the mean corrected by its residuals' mean: a constant row's mean is then its value   \
         * exactly (sum / N can be an ulp off, which 1 / sqrt(eps) amplifies: PyTorch's Welford   \
         * moments give exactly 0 there) */                                                      \
        T mean = tg_sum_##SFX(N, xr) / (T)N;                                                      \
        for (ptrdiff_t j = 0; j < N; j++) work[j] = xr[j] - mean;                                 \
        mean = mean + tg_sum_##SFX(N, work) / (T)N;                                               \
        for (ptrdiff_t j = 0; j < N; j++) {                                                       \
            hr[j] = xr[j] - mean;                                                                 \
            work[j] = hr[j] * hr[j];                                                              \
        }                                                                                         \
        const T var = tg_sum_##SFX(N, work) / (T)N;                                               \
        const T rs = (T)1 / SQRT(var + eps);                                                      \
        rstd[r] = rs;                                                                             \
        for (ptrdiff_t j = 0; j < N; j++) hr[j] = hr[j] * rs;                                     \
        for (ptrdiff_t j = 0; j < N; j++) {                                                       \
            T v = hr[j];                                                                          \
            if (w) v = v * w[j];                                                                  \
            if (b) v = v + b[j];                                                                  \
            yr[j] = v;                                                                            \
        }                                                                                         \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
void tg_layer_norm_bwd_##SFX(ptrdiff_t M, ptrdiff_t N, const T* g, const T* xhat, const T* rstd,  \
                             const T* w, T* gx, T* acc_w, T* acc_b, T* work)                      \
{                                                                                                 \
    T* gw = work;                                                                                 \
    T* prod = work + N;                                                                           \
    for (ptrdiff_t r = 0; r < M; r++) {                                                           \
        const T* gr = g + r * N;                                                                  \
        const T* hr = xhat + r * N;                                                               \
        if (acc_w)                                                                                \
            for (ptrdiff_t j = 0; j < N; j++) {                                                   \
                const T v = gr[j] * hr[j];                                                        \
                acc_w[j] = r == 0 ? v : acc_w[j] + v;                                             \
            }                                                                                     \
        if (acc_b)                                                                                \
            for (ptrdiff_t j = 0; j < N; j++) acc_b[j] = r == 0 ? gr[j] : acc_b[j] + gr[j];       \
        if (!gx) continue;                                                                        \
        for (ptrdiff_t j = 0; j < N; j++) {                                                       \
            gw[j] = w ? gr[j] * w[j] : gr[j];                                                     \
            prod[j] = gw[j] * hr[j];                                                              \
        }                                                                                         \
        const T a = tg_sum_##SFX(N, gw) / (T)N;                                                   \
        const T c = tg_sum_##SFX(N, prod) / (T)N;                                                 \
        const T rs = rstd[r];                                                                     \
        T* out = gx + r * N;                                                                      \
        for (ptrdiff_t j = 0; j < N; j++) out[j] = rs * ((gw[j] - a) - hr[j] * c);                \
    }                                                                                             \
}

LAYER_NORM(float, f32, sqrtf)
LAYER_NORM(double, f64, sqrt)


/* -- fused convolution --------------------------------------------------------------------------
 * The three maps of a 2-d convolution (nn_kernels.h) without a whole-batch column matrix: the
 * output positions are cut into blocks whose columns (K = C/G*kh*kw rows) fit in L2
 * (CONV_BLOCK_BYTES); each block is im2col'ed into the work buffer and multiplied at once by a
 * register-tiled loop, and the results go straight to their NCHW places (no transpose pass, the
 * bias added in the same store).  The column buffer is reused block after block (no page faults
 * on a batch-sized temporary).  The micro-kernels are the packed GEMM's register tiling
 * (6 rows x 2 vectors) reading an unpacked block, and for the weight gradient a tile of
 * 3 x 4 dot products along the positions, kept as vector partial sums across blocks and
 * reduced once at the end. */

#define CONV_VL_f32 8                   /* lanes of an AVX2 vector */
#define CONV_VL_f64 4
#define CONV_NR_f32 16                  /* columns of a product tile: two vectors */
#define CONV_NR_f64 8
#define CONV_BLOCK_BYTES (128 * 1024)
#define CONV_GW_MIN_COLUMNS 512
#define DOT_MA 3                        /* the weight gradient's dot tile: 3 x 4 */
#define DOT_MB 4

/* The product tile is inlined into its two callers (the forward's blocks and the input
 * gradient), which are not inlined themselves: GCC left to itself makes the tile a call once a
 * third copy of a caller appears, ~10% slower. */
#if defined(__GNUC__)
#define CONV_NOINLINE __attribute__((noinline))
#define CONV_INLINE inline __attribute__((always_inline))
#else
#define CONV_NOINLINE
#define CONV_INLINE inline
#endif

static inline ptrdiff_t round_up(ptrdiff_t n, ptrdiff_t m)
{
    return (n + m - 1) / m * m;
}

/* How a call cuts its positions into blocks: `rows` output rows of one sample, or (multi, for
 * the weight gradient, whose block may span samples) `samples` whole samples per block. */
typedef struct {
    ptrdiff_t K, L;                     /* column rows of one group, positions per sample */
    ptrdiff_t rows, samples;
    ptrdiff_t ld;                       /* row stride of the block buffers, a multiple of `align` */
} conv_plan;

static conv_plan plan_conv(const tg_window* g, ptrdiff_t G, size_t elt, ptrdiff_t align, int multi)
{
    conv_plan p;
    p.K = g->C / G * g->kh * g->kw;
    p.L = g->Ho * g->Wo;
    ptrdiff_t budget = (ptrdiff_t)(CONV_BLOCK_BYTES / elt) / (p.K > 0 ? p.K : 1);
    /* the weight gradient reads and writes all its partial sums once per block: with many
     * column rows, blocks that overflow L2 cost less than that traffic */
    if (multi && budget < CONV_GW_MIN_COLUMNS) budget = CONV_GW_MIN_COLUMNS;
    p.rows = g->Wo > 0 ? budget / g->Wo : g->Ho;
    if (p.rows > g->Ho) p.rows = g->Ho;
    if (p.rows < 1) p.rows = 1;
    p.samples = 1;
    if (multi && p.rows == g->Ho && p.L > 0) {
        p.samples = budget / p.L;
        if (p.samples > g->N) p.samples = g->N;
        if (p.samples < 1) p.samples = 1;
    }
    p.ld = round_up(p.samples * p.rows * g->Wo, align);
    if (p.ld < align) p.ld = align;
    return p;
}

/* Where tg_conv2d_relu_pool's epilogue writes: the pooled values (T), their positions and relu's
 * gradient test per window. */
typedef struct {
    void* y;
    int64_t* idx;
    uint8_t* keep;
} conv_pool_out;

/* The forward's plan for tg_conv2d_relu_pool: blocks of an even number of output rows (at least
 * two), so that the pooling's pairs of rows never straddle two blocks. */
static conv_plan plan_conv_pooled(const tg_window* g, ptrdiff_t G, size_t elt, ptrdiff_t align)
{
    conv_plan p = plan_conv(g, G, elt, align, 0);
    if (p.rows < g->Ho) {
        p.rows = p.rows < 2 ? 2 : p.rows & ~(ptrdiff_t)1;
        p.ld = round_up(p.rows * g->Wo, align);
    }
    return p;
}

/* Zero columns [from, to) of `rows` rows `ld` apart (a block's padding up to the tile width). */
#define DEFINE_ZERO_TAIL(T, SFX)                                                                  \
static inline void zero_tail_##SFX(T* buf, ptrdiff_t rows, ptrdiff_t ld, ptrdiff_t from,          \
                                   ptrdiff_t to)                                                  \
{                                                                                                 \
    if (to > from)                                                                                \
        for (ptrdiff_t r = 0; r < rows; r++)                                                      \
            memset(buf + r * ld + from, 0, (size_t)(to - from) * sizeof(T));                      \
}

/* Work sizes (elements): forward: the column block; input gradient: the column block, a block of
 * the output gradient and the transposed weights; weight gradient: the column block, a block of
 * the output gradient and the vector partial sums (Og x K x VL). */
#define DEFINE_CONV_WORK(T, SFX)                                                                  \
ptrdiff_t tg_conv2d_work_size_##SFX(const tg_window* g, ptrdiff_t O, ptrdiff_t G, int which)      \
{                                                                                                 \
    const int multi = which == TG_CONV_GRAD_WEIGHT;                                               \
    const conv_plan p = plan_conv(g, G, sizeof(T), multi ? CONV_VL_##SFX : CONV_NR_##SFX, multi); \
    const ptrdiff_t Og = O / G;                                                                   \
    switch (which) {                                                                              \
    case TG_CONV_FORWARD: return p.K * p.ld;                                                      \
    case TG_CONV_GRAD_INPUT: return p.K * p.ld + Og * p.ld + O * p.K;                             \
    default: return p.K * p.ld + Og * p.ld + Og * p.K * CONV_VL_##SFX;                            \
    }                                                                                             \
}

/* The portable product tile: c (mr <= 6 rows, stride ldc; nb <= NR columns) = a (mr rows, stride
 * lda, K entries) @ b (K rows, stride ldb, NR readable columns) (+ bias[r] when bias). */
#define DEFINE_CONV_TILE_C(T, SFX, PREFIX)                                                        \
static CONV_INLINE void PREFIX##_conv_tile(ptrdiff_t mr, ptrdiff_t nb, ptrdiff_t K,          \
                                           const T* restrict a,                                    \
                               ptrdiff_t lda, const T* restrict b, ptrdiff_t ldb, const T* bias,  \
                               T* restrict c, ptrdiff_t ldc)                                      \
{                                                                                                 \
    enum { NR = CONV_NR_##SFX };                                                                  \
    T acc[GEMM_MR][NR];                                                                           \
    memset(acc, 0, sizeof acc);                                                                   \
    for (ptrdiff_t k = 0; k < K; k++) {                                                           \
        const T* brow = b + k * ldb;                                                              \
        for (ptrdiff_t r = 0; r < mr; r++) {                                                      \
            const T av = a[r * lda + k];                                                          \
            for (int j = 0; j < NR; j++) acc[r][j] += av * brow[j];                               \
        }                                                                                         \
    }                                                                                             \
    for (ptrdiff_t r = 0; r < mr; r++)                                                            \
        for (ptrdiff_t j = 0; j < nb; j++)                                                        \
            c[r * ldc + j] = bias ? acc[r][j] + bias[r] : acc[r][j];                              \
}

/* The portable dot tile: for i < ma, j < mb, the VL lane sums of a_i * b_j over `len` entries
 * (a multiple of VL; rows ld apart) are added to acc[(i*sa + j*sb)*VL + lane]. */
#define DEFINE_DOT_TILE_C(T, SFX, PREFIX)                                                         \
static void PREFIX##_dot_tile(ptrdiff_t ma, ptrdiff_t mb, ptrdiff_t len, const T* restrict a,     \
                              const T* restrict b, ptrdiff_t ld, T* restrict acc, ptrdiff_t sa,   \
                              ptrdiff_t sb)                                                       \
{                                                                                                 \
    enum { VL = CONV_VL_##SFX };                                                                  \
    for (ptrdiff_t i = 0; i < ma; i++)                                                            \
        for (ptrdiff_t j = 0; j < mb; j++) {                                                      \
            T s[VL];                                                                              \
            T* out = acc + (i * sa + j * sb) * VL;                                                \
            for (int q = 0; q < VL; q++) s[q] = out[q];                                           \
            const T* ai = a + i * ld;                                                             \
            const T* bj = b + j * ld;                                                             \
            for (ptrdiff_t l = 0; l < len; l += VL)                                               \
                for (int q = 0; q < VL; q++) s[q] += ai[l + q] * bj[l + q];                       \
            for (int q = 0; q < VL; q++) out[q] = s[q];                                           \
        }                                                                                         \
}

/* The drivers, over one tile pair (PREFIX: the portable or the AVX2 copy). */
#define DEFINE_CONV_DRIVERS(T, SFX, PREFIX)                                                       \
/* The forward, and with `pool` the forward followed by relu and the 2x2 / stride 2 pooling     \
 * (tg_conv2d_relu_pool): each block of output rows (then an even number of them) goes to a      \
 * block buffer (Og rows of p.ld) instead of y, and its pairs of rows are relu'd and pooled from  \
 * there while in cache (PREFIX##_pool2x2_row: tg_max_pool2d's fast path).  One driver, so the    \
 * product tile is inlined here and in the input gradient only (CONV_INLINE).  The tile sums do   \
 * not depend on the block cut, so the values are the plain forward's. */                        \
static CONV_NOINLINE void PREFIX##_conv2d_blocks(const T* x, const T* w, const T* bias, T* y,    \
                                   const tg_window* g, ptrdiff_t O, ptrdiff_t G, T* work,         \
                                   const conv_pool_out* pool)                                     \
{                                                                                                 \
    enum { NR = CONV_NR_##SFX };                                                                  \
    const conv_plan p = pool ? plan_conv_pooled(g, G, sizeof(T), NR)                              \
                             : plan_conv(g, G, sizeof(T), NR, 0);                                 \
    const ptrdiff_t Cg = g->C / G, Og = O / G, HW = g->H * g->W, Wo = g->Wo;                      \
    const ptrdiff_t Hp = g->Ho / 2, Wp = Wo / 2, Lp = Hp * Wp;                                    \
    T* blk = work + p.K * p.ld;                                                                   \
    /* a tile's columns past the block's end are computed, never stored: they only need to hold  \
     * numbers (zero at first, stale columns of an earlier block after) */                       \
    memset(work, 0, (size_t)(p.K * p.ld) * sizeof(T));                                            \
    for (ptrdiff_t n = 0; n < g->N; n++)                                                          \
        for (ptrdiff_t gi = 0; gi < G; gi++)                                                      \
            for (ptrdiff_t ho0 = 0; ho0 < g->Ho; ho0 += p.rows) {                                 \
                const ptrdiff_t ho1 = ho0 + p.rows < g->Ho ? ho0 + p.rows : g->Ho;                \
                const ptrdiff_t Lb = (ho1 - ho0) * Wo;                                            \
                /* pooled: the pooled rows whose two input rows lie in this block (ho0 is even) */ \
                const ptrdiff_t hp0 = ho0 / 2, hp1 = ho1 / 2 < Hp ? ho1 / 2 : Hp;                 \
                if (pool && hp1 <= hp0)         /* (a last odd row the pooling drops) */          \
                    continue;                                                                     \
                im2col_block_##PREFIX(x + (n * g->C + gi * Cg) * HW, work, g, Cg, ho0, ho1, p.ld,  \
                                   (T)0);                                                         \
                const T* wg = w + gi * Og * p.K;                                                  \
                T* dst = pool ? blk : y + (n * O + gi * Og) * p.L + ho0 * Wo;                     \
                const ptrdiff_t ldd = pool ? p.ld : p.L;                                          \
                for (ptrdiff_t j0 = 0; j0 < Lb; j0 += NR) {                                       \
                    const ptrdiff_t nb = Lb - j0 < NR ? Lb - j0 : NR;                             \
                    for (ptrdiff_t o0 = 0; o0 < Og;) {                                            \
                        const ptrdiff_t mr = gemm_rows(Og - o0);                                  \
                        PREFIX##_conv_tile(mr, nb, p.K, wg + o0 * p.K, p.K, work + j0, p.ld,      \
                                           bias ? bias + gi * Og + o0 : NULL,                     \
                                           dst + o0 * ldd + j0, ldd);                             \
                        o0 += mr;                                                                 \
                    }                                                                             \
                }                                                                                 \
                if (!pool)                                                                        \
                    continue;                                                                     \
                const ptrdiff_t used = (2 * hp1 - ho0) * Wo;                                      \
                for (ptrdiff_t o = 0; o < Og; o++) {                                              \
                    T* b = blk + o * p.ld;                                                        \
                    for (ptrdiff_t q = 0; q < used; q++)    /* TG_RELU's formula (kernels.c) */   \
                        b[q] = b[q] < (T)0 ? (T)0 : b[q];                                         \
                    const ptrdiff_t plane = n * O + gi * Og + o;                                  \
                    T* yp = (T*)pool->y + plane * Lp;                                             \
                    for (ptrdiff_t hp = hp0; hp < hp1; hp++) {                                    \
                        const T* r0 = b + (2 * hp - ho0) * Wo;                                    \
                        PREFIX##_pool2x2_row(r0, r0 + Wo, yp + hp * Wp,                           \
                                             pool->idx + plane * Lp + hp * Wp, Wp, Wo,            \
                                             (int64_t)(2 * hp * Wo));                             \
                    }                                                                             \
                }                                                                                 \
            }                                                                                     \
    if (!pool)                                                                                    \
        return;                                                                                   \
    /* relu's gradient at each chosen position: the pooled value is relu(conv) there, which is  \
     * > 0 or NaN exactly where the convolution's output is (TG_RELU_GRAD) */                     \
    const T* yp = (const T*)pool->y;                                                              \
    uint8_t* keep = pool->keep;                                                                   \
    const ptrdiff_t total = g->N * O * Lp;                                                        \
    for (ptrdiff_t k = 0; k < total; k++)                                                         \
        keep[k] = !(yp[k] <= (T)0);                                                               \
}                                                                                                 \
                                                                                                  \
static void PREFIX##_conv2d(const T* x, const T* w, const T* bias, T* y, const tg_window* g,      \
                            ptrdiff_t O, ptrdiff_t G, T* work)                                    \
{                                                                                                 \
    PREFIX##_conv2d_blocks(x, w, bias, y, g, O, G, work, NULL);                                   \
}                                                                                                 \
                                                                                                  \
static void PREFIX##_conv2d_relu_pool(const T* x, const T* w, const T* bias, T* y, int64_t* idx,  \
                                      uint8_t* keep, const tg_window* g, ptrdiff_t O,             \
                                      ptrdiff_t G, T* work)                                       \
{                                                                                                 \
    const conv_pool_out pool = {y, idx, keep};                                                    \
    PREFIX##_conv2d_blocks(x, w, bias, NULL, g, O, G, work, &pool);                               \
}                                                                                                 \
                                                                                                  \
static void PREFIX##_conv2d_grad_input(const T* gy, const T* w, T* gx, const tg_window* g,        \
                                       ptrdiff_t O, ptrdiff_t G, T* work)                         \
{                                                                                                 \
    enum { NR = CONV_NR_##SFX };                                                                  \
    const conv_plan p = plan_conv(g, G, sizeof(T), NR, 0);                                        \
    const ptrdiff_t Cg = g->C / G, Og = O / G, HW = g->H * g->W, K = p.K;                         \
    T* dcol = work;                                                                               \
    T* dyb = dcol + K * p.ld;                                                                     \
    T* wt = dyb + Og * p.ld;                                                                      \
    /* each group's weights transposed, (K, Og): the left operand of dcol = w^T @ dy */           \
    for (ptrdiff_t gi = 0; gi < G; gi++)                                                          \
        for (ptrdiff_t o = 0; o < Og; o++)                                                        \
            for (ptrdiff_t k = 0; k < K; k++)                                                     \
                wt[(gi * K + k) * Og + o] = w[(gi * Og + o) * K + k];                             \
    memset(gx, 0, (size_t)(g->N * g->C * HW) * sizeof(T));                                        \
    memset(dyb, 0, (size_t)(Og * p.ld) * sizeof(T));      /* as the forward's columns */          \
    for (ptrdiff_t n = 0; n < g->N; n++)                                                          \
        for (ptrdiff_t gi = 0; gi < G; gi++)                                                      \
            for (ptrdiff_t ho0 = 0; ho0 < g->Ho; ho0 += p.rows) {                                 \
                const ptrdiff_t ho1 = ho0 + p.rows < g->Ho ? ho0 + p.rows : g->Ho;                \
                const ptrdiff_t Lb = (ho1 - ho0) * g->Wo;                                         \
                for (ptrdiff_t o = 0; o < Og; o++)                                                \
                    memcpy(dyb + o * p.ld, gy + (n * O + gi * Og + o) * p.L + ho0 * g->Wo,        \
                           (size_t)Lb * sizeof(T));                                               \
                for (ptrdiff_t j0 = 0; j0 < Lb; j0 += NR) {                                       \
                    const ptrdiff_t nb = Lb - j0 < NR ? Lb - j0 : NR;                             \
                    for (ptrdiff_t k0 = 0; k0 < K;) {                                             \
                        const ptrdiff_t mr = gemm_rows(K - k0);                                   \
                        PREFIX##_conv_tile(mr, nb, Og, wt + (gi * K + k0) * Og, Og, dyb + j0,     \
                                           p.ld, NULL, dcol + k0 * p.ld + j0, p.ld);              \
                        k0 += mr;                                                                 \
                    }                                                                             \
                }                                                                                 \
                col2im_block_##PREFIX(dcol, gx + (n * g->C + gi * Cg) * HW, g, Cg, ho0, ho1,       \
                                      p.ld);                                                      \
            }                                                                                     \
}                                                                                                 \
                                                                                                  \
static void PREFIX##_conv2d_grad_weight(const T* x, const T* gy, T* gw, const tg_window* g,       \
                                        ptrdiff_t O, ptrdiff_t G, T* work)                        \
{                                                                                                 \
    enum { VL = CONV_VL_##SFX };                                                                  \
    const conv_plan p = plan_conv(g, G, sizeof(T), VL, 1);                                        \
    const ptrdiff_t Cg = g->C / G, Og = O / G, HW = g->H * g->W, K = p.K;                         \
    T* cols = work;                                                                               \
    T* dyb = cols + K * p.ld;                                                                     \
    T* acc = dyb + Og * p.ld;                                                                     \
    /* the dot tiles run 3 rows of one operand against 4 of the other: orient them so that the   \
     * fewest products are wasted on the edges */                                                 \
    const int dy_first = round_up(Og, DOT_MA) * round_up(K, DOT_MB)                               \
                         <= round_up(K, DOT_MA) * round_up(Og, DOT_MB);                           \
    for (ptrdiff_t gi = 0; gi < G; gi++) {                                                        \
        memset(acc, 0, (size_t)(Og * K * VL) * sizeof(T));                                        \
        for (ptrdiff_t n0 = 0; n0 < g->N; n0 += p.samples) {                                      \
            const ptrdiff_t ns = g->N - n0 < p.samples ? g->N - n0 : p.samples;                   \
            for (ptrdiff_t ho0 = 0; ho0 < g->Ho; ho0 += p.rows) {                                 \
                const ptrdiff_t ho1 = ho0 + p.rows < g->Ho ? ho0 + p.rows : g->Ho;                \
                const ptrdiff_t rl = (ho1 - ho0) * g->Wo, Lb = ns * rl, Lp = round_up(Lb, VL);    \
                for (ptrdiff_t s = 0; s < ns; s++) {                                              \
                    im2col_block_##PREFIX(x + ((n0 + s) * g->C + gi * Cg) * HW, cols + s * rl, g,  \
                                       Cg, ho0, ho1, p.ld, (T)0);                                 \
                    for (ptrdiff_t o = 0; o < Og; o++)                                            \
                        memcpy(dyb + o * p.ld + s * rl,                                           \
                               gy + ((n0 + s) * O + gi * Og + o) * p.L + ho0 * g->Wo,             \
                               (size_t)rl * sizeof(T));                                           \
                }                                                                                 \
                zero_tail_##SFX(cols, K, p.ld, Lb, Lp);                                           \
                zero_tail_##SFX(dyb, Og, p.ld, Lb, Lp);                                           \
                const T* A = dy_first ? dyb : cols;                                               \
                const T* B = dy_first ? cols : dyb;                                               \
                const ptrdiff_t MA = dy_first ? Og : K, MB = dy_first ? K : Og;                   \
                const ptrdiff_t sa = dy_first ? K : 1, sb = dy_first ? 1 : K;                     \
                for (ptrdiff_t i0 = 0; i0 < MA; i0 += DOT_MA)                                     \
                    for (ptrdiff_t j0 = 0; j0 < MB; j0 += DOT_MB)                                 \
                        PREFIX##_dot_tile(MA - i0 < DOT_MA ? MA - i0 : DOT_MA,                    \
                                          MB - j0 < DOT_MB ? MB - j0 : DOT_MB, Lp,                \
                                          A + i0 * p.ld, B + j0 * p.ld, p.ld,                     \
                                          acc + (i0 * sa + j0 * sb) * VL, sa, sb);                \
            }                                                                                     \
        }                                                                                         \
        for (ptrdiff_t e = 0; e < Og * K; e++) {                                                  \
            T s = 0;                                                                              \
            for (int q = 0; q < VL; q++) s += acc[e * VL + q];                                    \
            gw[gi * Og * K + e] = s;                                                              \
        }                                                                                         \
    }                                                                                             \
}


DEFINE_ZERO_TAIL(float, f32)
DEFINE_ZERO_TAIL(double, f64)
DEFINE_CONV_WORK(float, f32)
DEFINE_CONV_WORK(double, f64)
DEFINE_CONV_TILE_C(float, f32, f32)
DEFINE_CONV_TILE_C(double, f64, f64)
DEFINE_DOT_TILE_C(float, f32, f32)
DEFINE_DOT_TILE_C(double, f64, f64)
#define f32_pool2x2_row pool2x2_row_f32     /* the portable drivers' pooling row */
#define f64_pool2x2_row pool2x2_row_f64
DEFINE_CONV_DRIVERS(float, f32, f32)
DEFINE_CONV_DRIVERS(double, f64, f64)

#ifdef TG_HASWELL
#pragma GCC push_options
#pragma GCC target("avx2,fma")
/* The AVX2 + FMA tiles.  Product tile: as the packed GEMM's (rows missing from a block point at
 * its first row and their results are dropped), the bias broadcast into the store.  Dot tile:
 * 12 accumulators; each step loads the 3 `a` vectors and streams the 4 `b` ones, 16 registers. */
#define HSW_CONV_TILES(T, SFX, V, W, SET0, SET1, LOAD, STORE, BCAST, FMA, ADD)                    \
static CONV_INLINE void hsw_##SFX##_conv_tile(ptrdiff_t mr, ptrdiff_t nb, ptrdiff_t K,       \
                                              const T* restrict a,                                 \
                                  ptrdiff_t lda, const T* restrict b, ptrdiff_t ldb,              \
                                  const T* bias, T* restrict c, ptrdiff_t ldc)                    \
{                                                                                                 \
    const T* a0 = a;                                                                              \
    const T* a1 = mr > 1 ? a + lda : a;                                                           \
    const T* a2 = mr > 2 ? a + 2 * lda : a;                                                       \
    const T* a3 = mr > 3 ? a + 3 * lda : a;                                                       \
    const T* a4 = mr > 4 ? a + 4 * lda : a;                                                       \
    const T* a5 = mr > 5 ? a + 5 * lda : a;                                                       \
    V c00 = SET0(), c01 = SET0(), c10 = SET0(), c11 = SET0(), c20 = SET0(), c21 = SET0();         \
    V c30 = SET0(), c31 = SET0(), c40 = SET0(), c41 = SET0(), c50 = SET0(), c51 = SET0();         \
    if (mr > 4) {                                                                                 \
        for (ptrdiff_t k = 0; k < K; k++) {                                                       \
            const V b0 = LOAD(b + k * ldb), b1 = LOAD(b + k * ldb + W);                           \
            V x = BCAST(a0 + k); c00 = FMA(x, b0, c00); c01 = FMA(x, b1, c01);                    \
            x = BCAST(a1 + k); c10 = FMA(x, b0, c10); c11 = FMA(x, b1, c11);                      \
            x = BCAST(a2 + k); c20 = FMA(x, b0, c20); c21 = FMA(x, b1, c21);                      \
            x = BCAST(a3 + k); c30 = FMA(x, b0, c30); c31 = FMA(x, b1, c31);                      \
            x = BCAST(a4 + k); c40 = FMA(x, b0, c40); c41 = FMA(x, b1, c41);                      \
            x = BCAST(a5 + k); c50 = FMA(x, b0, c50); c51 = FMA(x, b1, c51);                      \
        }                                                                                         \
    } else if (mr > 1) {                                                                          \
        for (ptrdiff_t k = 0; k < K; k++) {                                                       \
            const V b0 = LOAD(b + k * ldb), b1 = LOAD(b + k * ldb + W);                           \
            V x = BCAST(a0 + k); c00 = FMA(x, b0, c00); c01 = FMA(x, b1, c01);                    \
            x = BCAST(a1 + k); c10 = FMA(x, b0, c10); c11 = FMA(x, b1, c11);                      \
            x = BCAST(a2 + k); c20 = FMA(x, b0, c20); c21 = FMA(x, b1, c21);                      \
            x = BCAST(a3 + k); c30 = FMA(x, b0, c30); c31 = FMA(x, b1, c31);                      \
        }                                                                                         \
    } else {                                                                                      \
        /* one row (depthwise convolutions): two chains per vector hide the FMA latency */        \
        V d00 = SET0(), d01 = SET0();                                                             \
        ptrdiff_t k = 0;                                                                          \
        for (; k + 1 < K; k += 2) {                                                               \
            V x = BCAST(a0 + k);                                                                  \
            c00 = FMA(x, LOAD(b + k * ldb), c00); c01 = FMA(x, LOAD(b + k * ldb + W), c01);       \
            x = BCAST(a0 + k + 1);                                                                \
            d00 = FMA(x, LOAD(b + (k + 1) * ldb), d00);                                           \
            d01 = FMA(x, LOAD(b + (k + 1) * ldb + W), d01);                                       \
        }                                                                                         \
        if (k < K) {                                                                              \
            V x = BCAST(a0 + k);                                                                  \
            c00 = FMA(x, LOAD(b + k * ldb), c00); c01 = FMA(x, LOAD(b + k * ldb + W), c01);       \
        }                                                                                         \
        c00 = ADD(c00, d00); c01 = ADD(c01, d01);                                                 \
    }                                                                                             \
    HSW_CONV_PUT(T, V, W, SET0, SET1, STORE, ADD, 0, c00, c01)                                    \
    HSW_CONV_PUT(T, V, W, SET0, SET1, STORE, ADD, 1, c10, c11)                                    \
    HSW_CONV_PUT(T, V, W, SET0, SET1, STORE, ADD, 2, c20, c21)                                    \
    HSW_CONV_PUT(T, V, W, SET0, SET1, STORE, ADD, 3, c30, c31)                                    \
    HSW_CONV_PUT(T, V, W, SET0, SET1, STORE, ADD, 4, c40, c41)                                    \
    HSW_CONV_PUT(T, V, W, SET0, SET1, STORE, ADD, 5, c50, c51)                                    \
}                                                                                                 \
                                                                                                  \
static void hsw_##SFX##_dot_tile(ptrdiff_t ma, ptrdiff_t mb, ptrdiff_t len, const T* restrict a,  \
                                 const T* restrict b, ptrdiff_t ld, T* restrict acc,              \
                                 ptrdiff_t sa, ptrdiff_t sb)                                      \
{                                                                                                 \
    const T* a0 = a;                                                                              \
    const T* a1 = ma > 1 ? a + ld : a;                                                            \
    const T* a2 = ma > 2 ? a + 2 * ld : a;                                                        \
    const T* b0 = b;                                                                              \
    const T* b1 = mb > 1 ? b + ld : b;                                                            \
    const T* b2 = mb > 2 ? b + 2 * ld : b;                                                        \
    const T* b3 = mb > 3 ? b + 3 * ld : b;                                                        \
    V s00 = SET0(), s01 = SET0(), s02 = SET0(), s03 = SET0();                                     \
    V s10 = SET0(), s11 = SET0(), s12 = SET0(), s13 = SET0();                                     \
    V s20 = SET0(), s21 = SET0(), s22 = SET0(), s23 = SET0();                                     \
    for (ptrdiff_t l = 0; l < len; l += W) {                                                      \
        const V x0 = LOAD(a0 + l), x1 = LOAD(a1 + l), x2 = LOAD(a2 + l);                          \
        V y = LOAD(b0 + l); s00 = FMA(x0, y, s00); s10 = FMA(x1, y, s10); s20 = FMA(x2, y, s20);  \
        y = LOAD(b1 + l); s01 = FMA(x0, y, s01); s11 = FMA(x1, y, s11); s21 = FMA(x2, y, s21);    \
        y = LOAD(b2 + l); s02 = FMA(x0, y, s02); s12 = FMA(x1, y, s12); s22 = FMA(x2, y, s22);    \
        y = LOAD(b3 + l); s03 = FMA(x0, y, s03); s13 = FMA(x1, y, s13); s23 = FMA(x2, y, s23);    \
    }                                                                                             \
    HSW_DOT_PUT(T, W, LOAD, STORE, ADD, 0, 0, s00) HSW_DOT_PUT(T, W, LOAD, STORE, ADD, 0, 1, s01) \
    HSW_DOT_PUT(T, W, LOAD, STORE, ADD, 0, 2, s02) HSW_DOT_PUT(T, W, LOAD, STORE, ADD, 0, 3, s03) \
    HSW_DOT_PUT(T, W, LOAD, STORE, ADD, 1, 0, s10) HSW_DOT_PUT(T, W, LOAD, STORE, ADD, 1, 1, s11) \
    HSW_DOT_PUT(T, W, LOAD, STORE, ADD, 1, 2, s12) HSW_DOT_PUT(T, W, LOAD, STORE, ADD, 1, 3, s13) \
    HSW_DOT_PUT(T, W, LOAD, STORE, ADD, 2, 0, s20) HSW_DOT_PUT(T, W, LOAD, STORE, ADD, 2, 1, s21) \
    HSW_DOT_PUT(T, W, LOAD, STORE, ADD, 2, 2, s22) HSW_DOT_PUT(T, W, LOAD, STORE, ADD, 2, 3, s23) \
}

/* Row r of a product tile to c (bias added), whole vectors when the tile is full. */
#define HSW_CONV_PUT(T, V, W, SET0, SET1, STORE, ADD, r, v0, v1)                                  \
    if (r < mr) {                                                                                 \
        T* cr = c + r * ldc;                                                                      \
        const V bb = bias ? SET1(bias[r]) : SET0();                                               \
        if (nb == 2 * W) {                                                                        \
            STORE(cr, ADD(v0, bb));                                                               \
            STORE(cr + W, ADD(v1, bb));                                                           \
        } else {                                                                                  \
            T t[2 * W];                                                                           \
            STORE(t, ADD(v0, bb));                                                                \
            STORE(t + W, ADD(v1, bb));                                                            \
            for (ptrdiff_t j = 0; j < nb; j++) cr[j] = t[j];                                      \
        }                                                                                         \
    }
/* Accumulator (i, j) of a dot tile added to its partial sums, when it is a real pair. */
#define HSW_DOT_PUT(T, W, LOAD, STORE, ADD, i, j, v)                                              \
    if (i < ma && j < mb) {                                                                       \
        T* out = acc + (i * sa + j * sb) * W;                                                     \
        STORE(out, ADD(LOAD(out), v));                                                            \
    }

HSW_CONV_TILES(float, f32, __m256, 8, _mm256_setzero_ps, _mm256_set1_ps, _mm256_loadu_ps,
               _mm256_storeu_ps, _mm256_broadcast_ss, _mm256_fmadd_ps, _mm256_add_ps)
HSW_CONV_TILES(double, f64, __m256d, 4, _mm256_setzero_pd, _mm256_set1_pd, _mm256_loadu_pd,
               _mm256_storeu_pd, _mm256_broadcast_sd, _mm256_fmadd_pd, _mm256_add_pd)
/* The 2x2 / stride 2 pooling row of pool2x2_row in AVX2, 8 (float) or 4 (double) windows at a
 * time and the last ones through masked loads and stores (no scalar tail: its branches go either
 * way at random on real data): the same taps in the same order, each a compare and two blends,
 * so the same values and indices.  Lanes past the row's end read zeros and are not stored. */
static inline __m256i hsw_lanes_below(ptrdiff_t n, int width)      /* width: 32 or 64 bits */
{
    const __m256i lane = width == 32 ? _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)
                                     : _mm256_setr_epi64x(0, 1, 2, 3);
    const __m256i bound = width == 32 ? _mm256_set1_epi32((int)(n < 8 ? n : 8))
                                      : _mm256_set1_epi64x(n < 4 ? n : 4);
    return width == 32 ? _mm256_cmpgt_epi32(bound, lane) : _mm256_cmpgt_epi64(bound, lane);
}

#define HSW_POOL_TAP(P, CAST, v, best, at, here)                                                  \
    do {                                                                                          \
        const __typeof__(best) take_ = _mm256_or_##P(_mm256_cmp_##P(v, best, _CMP_GT_OQ),         \
                                                     _mm256_cmp_##P(v, v, _CMP_UNORD_Q));         \
        best = _mm256_blendv_##P(best, v, take_);                                                 \
        at = CAST(_mm256_blendv_##P(CAST##_back(at), CAST##_back(here), take_));                  \
    } while (0)
#define hsw_as_int_ps _mm256_castps_si256
#define hsw_as_int_ps_back _mm256_castsi256_ps
#define hsw_as_int_pd _mm256_castpd_si256
#define hsw_as_int_pd_back _mm256_castsi256_pd

static void hsw_f32_pool2x2_row(const float* r0, const float* r1, float* yo, int64_t* io,
                                ptrdiff_t Wo, ptrdiff_t W, int64_t row0)
{
    if (W + 1 > 0x7fffffff) {           /* (offsets held in 32 bits) */
        pool2x2_row_f32(r0, r1, yo, io, Wo, W, row0);
        return;
    }
    const __m256i off1 = _mm256_set1_epi32(1), offW = _mm256_set1_epi32((int)W),
                  offW1 = _mm256_set1_epi32((int)W + 1);
    const __m256i two_lanes = _mm256_setr_epi64x(0, 2, 4, 6);
    for (ptrdiff_t w = 0; w < Wo; w += 8) {
        const ptrdiff_t rem = Wo - w;
        __m256 a0, a1, b0, b1;
        if (rem >= 8) {
            a0 = _mm256_loadu_ps(r0 + 2 * w); a1 = _mm256_loadu_ps(r0 + 2 * w + 8);
            b0 = _mm256_loadu_ps(r1 + 2 * w); b1 = _mm256_loadu_ps(r1 + 2 * w + 8);
        } else {                        /* the 2 * rem columns the windows read */
            const __m256i m0 = hsw_lanes_below(2 * rem, 32), m1 = hsw_lanes_below(2 * rem - 8, 32);
            a0 = _mm256_maskload_ps(r0 + 2 * w, m0); a1 = _mm256_maskload_ps(r0 + 2 * w + 8, m1);
            b0 = _mm256_maskload_ps(r1 + 2 * w, m0); b1 = _mm256_maskload_ps(r1 + 2 * w + 8, m1);
        }
        /* even / odd columns, windows in order (the shuffles leave them as 0 1 4 5 2 3 6 7) */
#define HSW_DEAL(x, y, sel) _mm256_castpd_ps(_mm256_permute4x64_pd(                               \
            _mm256_castps_pd(_mm256_shuffle_ps(x, y, sel)), _MM_SHUFFLE(3, 1, 2, 0)))
        __m256 best = HSW_DEAL(a0, a1, _MM_SHUFFLE(2, 0, 2, 0));
        const __m256 t1 = HSW_DEAL(a0, a1, _MM_SHUFFLE(3, 1, 3, 1));
        const __m256 t2 = HSW_DEAL(b0, b1, _MM_SHUFFLE(2, 0, 2, 0));
        const __m256 t3 = HSW_DEAL(b0, b1, _MM_SHUFFLE(3, 1, 3, 1));
#undef HSW_DEAL
        __m256i at = _mm256_setzero_si256();
        HSW_POOL_TAP(ps, hsw_as_int_ps, t1, best, at, off1);
        HSW_POOL_TAP(ps, hsw_as_int_ps, t2, best, at, offW);
        HSW_POOL_TAP(ps, hsw_as_int_ps, t3, best, at, offW1);
        const __m256i base = _mm256_add_epi64(_mm256_set1_epi64x(row0 + 2 * w), two_lanes);
        const __m256i lo = _mm256_add_epi64(base, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(at)));
        const __m256i hi = _mm256_add_epi64(_mm256_add_epi64(base, _mm256_set1_epi64x(8)),
                                            _mm256_cvtepi32_epi64(_mm256_extracti128_si256(at, 1)));
        if (rem >= 8) {
            _mm256_storeu_ps(yo + w, best);
            _mm256_storeu_si256((__m256i*)(io + w), lo);
            _mm256_storeu_si256((__m256i*)(io + w + 4), hi);
        } else {
            _mm256_maskstore_ps(yo + w, hsw_lanes_below(rem, 32), best);
            _mm256_maskstore_epi64((long long*)(io + w), hsw_lanes_below(rem, 64), lo);
            _mm256_maskstore_epi64((long long*)(io + w + 4), hsw_lanes_below(rem - 4, 64), hi);
        }
    }
}

static void hsw_f64_pool2x2_row(const double* r0, const double* r1, double* yo, int64_t* io,
                                ptrdiff_t Wo, ptrdiff_t W, int64_t row0)
{
    const __m256i off1 = _mm256_set1_epi64x(1), offW = _mm256_set1_epi64x(W),
                  offW1 = _mm256_set1_epi64x(W + 1);
    const __m256i two_lanes = _mm256_setr_epi64x(0, 2, 4, 6);
    for (ptrdiff_t w = 0; w < Wo; w += 4) {
        const ptrdiff_t rem = Wo - w;
        __m256d a0, a1, b0, b1;
        if (rem >= 4) {
            a0 = _mm256_loadu_pd(r0 + 2 * w); a1 = _mm256_loadu_pd(r0 + 2 * w + 4);
            b0 = _mm256_loadu_pd(r1 + 2 * w); b1 = _mm256_loadu_pd(r1 + 2 * w + 4);
        } else {
            const __m256i m0 = hsw_lanes_below(2 * rem, 64), m1 = hsw_lanes_below(2 * rem - 4, 64);
            a0 = _mm256_maskload_pd(r0 + 2 * w, m0); a1 = _mm256_maskload_pd(r0 + 2 * w + 4, m1);
            b0 = _mm256_maskload_pd(r1 + 2 * w, m0); b1 = _mm256_maskload_pd(r1 + 2 * w + 4, m1);
        }
        /* unpack leaves the windows as 0 2 1 3 */
#define HSW_DEAL(op, x, y) _mm256_permute4x64_pd(op(x, y), _MM_SHUFFLE(3, 1, 2, 0))
        __m256d best = HSW_DEAL(_mm256_unpacklo_pd, a0, a1);
        const __m256d t1 = HSW_DEAL(_mm256_unpackhi_pd, a0, a1);
        const __m256d t2 = HSW_DEAL(_mm256_unpacklo_pd, b0, b1);
        const __m256d t3 = HSW_DEAL(_mm256_unpackhi_pd, b0, b1);
#undef HSW_DEAL
        __m256i at = _mm256_setzero_si256();
        HSW_POOL_TAP(pd, hsw_as_int_pd, t1, best, at, off1);
        HSW_POOL_TAP(pd, hsw_as_int_pd, t2, best, at, offW);
        HSW_POOL_TAP(pd, hsw_as_int_pd, t3, best, at, offW1);
        const __m256i ix = _mm256_add_epi64(_mm256_add_epi64(_mm256_set1_epi64x(row0 + 2 * w),
                                                             two_lanes), at);
        if (rem >= 4) {
            _mm256_storeu_pd(yo + w, best);
            _mm256_storeu_si256((__m256i*)(io + w), ix);
        } else {
            _mm256_maskstore_pd(yo + w, hsw_lanes_below(rem, 64), best);
            _mm256_maskstore_epi64((long long*)(io + w), hsw_lanes_below(rem, 64), ix);
        }
    }
}

DEFINE_IM2COL_BLOCK(float, im2col_block_hsw_f32)
DEFINE_IM2COL_BLOCK(double, im2col_block_hsw_f64)
DEFINE_COL2IM_BLOCK(float, col2im_block_hsw_f32)
DEFINE_COL2IM_BLOCK(double, col2im_block_hsw_f64)
DEFINE_CONV_DRIVERS(float, f32, hsw_f32)
DEFINE_CONV_DRIVERS(double, f64, hsw_f64)
#pragma GCC pop_options
/* vecmath's level (AVX2 or above exactly when the CPU has AVX2 + FMA), so that TAPEGRAD_SIMD=scalar runs
 * (and the tests check) the portable tiles. */
#define CONV_CALL(PREFIX, NAME, ARGS)                                                             \
    do {                                                                                          \
        if (tg_vm_level() >= TG_VM_AVX2) hsw_##PREFIX##_##NAME ARGS;                              \
        else PREFIX##_##NAME ARGS;                                                                \
    } while (0)
#else
#define CONV_CALL(PREFIX, NAME, ARGS) PREFIX##_##NAME ARGS
#endif

#define DEFINE_CONV_ENTRIES(T, SFX)                                                               \
void tg_conv2d_##SFX(const T* x, const T* w, const T* bias, T* y, const tg_window* g,             \
                     ptrdiff_t O, ptrdiff_t G, T* work)                                           \
{                                                                                                 \
    CONV_CALL(SFX, conv2d, (x, w, bias, y, g, O, G, work));                                       \
}                                                                                                 \
                                                                                                  \
void tg_conv2d_grad_input_##SFX(const T* gy, const T* w, T* gx, const tg_window* g, ptrdiff_t O,  \
                                ptrdiff_t G, T* work)                                             \
{                                                                                                 \
    CONV_CALL(SFX, conv2d_grad_input, (gy, w, gx, g, O, G, work));                                \
}                                                                                                 \
                                                                                                  \
void tg_conv2d_grad_weight_##SFX(const T* x, const T* gy, T* gw, const tg_window* g, ptrdiff_t O, \
                                 ptrdiff_t G, T* work)                                            \
{                                                                                                 \
    CONV_CALL(SFX, conv2d_grad_weight, (x, gy, gw, g, O, G, work));                               \
}

DEFINE_CONV_ENTRIES(float, f32)
DEFINE_CONV_ENTRIES(double, f64)

#define DEFINE_CONV_POOL_ENTRIES(T, SFX)                                                          \
ptrdiff_t tg_conv2d_relu_pool_work_size_##SFX(const tg_window* g, ptrdiff_t O, ptrdiff_t G)       \
{                                                                                                 \
    const conv_plan p = plan_conv_pooled(g, G, sizeof(T), CONV_NR_##SFX);                         \
    return p.K * p.ld + O / G * p.ld;                                                             \
}                                                                                                 \
                                                                                                  \
void tg_conv2d_relu_pool_##SFX(const T* x, const T* w, const T* bias, T* y, int64_t* idx,         \
                               uint8_t* keep, const tg_window* g, ptrdiff_t O, ptrdiff_t G,       \
                               T* work)                                                           \
{                                                                                                 \
    CONV_CALL(SFX, conv2d_relu_pool, (x, w, bias, y, idx, keep, g, O, G, work));                  \
}

DEFINE_CONV_POOL_ENTRIES(float, f32)
DEFINE_CONV_POOL_ENTRIES(double, f64)
