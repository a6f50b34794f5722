/* Window and recurrent kernels; the header (nn_kernels.h) documents each one.
 *
 * One body per kernel, written once over a type T and instantiated for float and double by the
 * DEFINE_* macros at the end (as kernels.c does), so the two precisions cannot drift apart. */
#include <math.h>
#include <string.h>

#include "nn_kernels.h"

/* The first index >= `start` on the grid start + k*step that is >= 0 (windows starting in the
 * top/left padding skip the taps that fall on it). */
static inline ptrdiff_t first_on_grid(ptrdiff_t start, ptrdiff_t step)
{
    if (start >= 0)
        return start;
    return start + ((-start + step - 1) / step) * step;
}

/* -- im2col / col2im ------------------------------------------------------------------------- */

#define DEFINE_IM2COL(T, SFX)                                                                     \
void tg_im2col_##SFX(const T* x, T* cols, const tg_window* g, ptrdiff_t row_stride,              \
                     ptrdiff_t n_stride, T fill)                                                  \
{                                                                                                 \
    const ptrdiff_t L = g->Ho * g->Wo;                                                            \
    for (ptrdiff_t c = 0; c < g->C; c++)                                                          \
        for (ptrdiff_t i = 0; i < g->kh; i++)                                                     \
            for (ptrdiff_t j = 0; j < g->kw; j++) {                                               \
                T* row = cols + ((c * g->kh + i) * g->kw + j) * row_stride;                       \
                /* the output columns wo whose input column lies inside [0, W) */                 \
                const ptrdiff_t off = j * g->dw - g->pl;                                          \
                ptrdiff_t wlo = off >= 0 ? 0 : (-off + g->sw - 1) / g->sw;                        \
                ptrdiff_t whi = g->W - off <= 0 ? 0 : (g->W - off + g->sw - 1) / g->sw;           \
                if (whi > g->Wo) whi = g->Wo;                                                     \
                if (wlo > whi) wlo = whi;                                                         \
                for (ptrdiff_t n = 0; n < g->N; n++) {                                            \
                    const T* plane = x + (n * g->C + c) * g->H * g->W;                            \
                    T* out = row + n * n_stride;                                                  \
                    for (ptrdiff_t ho = 0; ho < g->Ho; ho++) {                                    \
                        const ptrdiff_t h = ho * g->sh - g->pt + i * g->dh;                       \
                        T* o = out + ho * g->Wo;                                                  \
                        if (h < 0 || h >= g->H) {                                                 \
                            for (ptrdiff_t wo = 0; wo < g->Wo; wo++) o[wo] = fill;                \
                            continue;                                                             \
                        }                                                                         \
                        const T* src = plane + h * g->W + off;                                    \
                        for (ptrdiff_t wo = 0; wo < wlo; wo++) o[wo] = fill;                      \
                        if (g->sw == 1)                                                           \
                            memcpy(o + wlo, src + wlo, (size_t)(whi - wlo) * sizeof(T));          \
                        else                                                                      \
                            for (ptrdiff_t wo = wlo; wo < whi; wo++) o[wo] = src[wo * g->sw];     \
                        for (ptrdiff_t wo = whi; wo < g->Wo; wo++) o[wo] = fill;                  \
                    }                                                                             \
                }                                                                                 \
            }                                                                                     \
    (void)L;                                                                                      \
}

#define DEFINE_COL2IM(T, SFX)                                                                     \
void tg_col2im_##SFX(const T* cols, T* x, const tg_window* g, ptrdiff_t row_stride,              \
                     ptrdiff_t n_stride)                                                          \
{                                                                                                 \
    memset(x, 0, (size_t)(g->N * g->C * g->H * g->W) * sizeof(T));                              \
    for (ptrdiff_t c = 0; c < g->C; c++)                                                          \
        for (ptrdiff_t i = 0; i < g->kh; i++)                                                     \
            for (ptrdiff_t j = 0; j < g->kw; j++) {                                               \
                const T* row = cols + ((c * g->kh + i) * g->kw + j) * row_stride;                 \
                const ptrdiff_t off = j * g->dw - g->pl;                                          \
                ptrdiff_t wlo = off >= 0 ? 0 : (-off + g->sw - 1) / g->sw;                        \
                ptrdiff_t whi = g->W - off <= 0 ? 0 : (g->W - off + g->sw - 1) / g->sw;           \
                if (whi > g->Wo) whi = g->Wo;                                                     \
                if (wlo > whi) wlo = whi;                                                         \
                for (ptrdiff_t n = 0; n < g->N; n++) {                                            \
                    T* plane = x + (n * g->C + c) * g->H * g->W;                                  \
                    const T* in = row + n * n_stride;                                             \
                    for (ptrdiff_t ho = 0; ho < g->Ho; ho++) {                                    \
                        const ptrdiff_t h = ho * g->sh - g->pt + i * g->dh;                       \
                        if (h < 0 || h >= g->H)                                                   \
                            continue;                                                             \
                        const T* s = in + ho * g->Wo;                                             \
                        T* dst = plane + h * g->W + off;                                          \
                        if (g->sw == 1)                                                           \
                            for (ptrdiff_t wo = wlo; wo < whi; wo++) dst[wo] += s[wo];            \
                        else                                                                      \
                            for (ptrdiff_t wo = wlo; wo < whi; wo++) dst[wo * g->sw] += s[wo];    \
                    }                                                                             \
                }                                                                                 \
            }                                                                                     \
}

/* -- max pooling ------------------------------------------------------------------------------ */

#define DEFINE_MAX_POOL(T, SFX)                                                                   \
void tg_max_pool2d_##SFX(const T* x, T* y, int64_t* idx, const tg_window* g)                      \
{                                                                                                 \
    const ptrdiff_t planes = g->N * g->C;                                                         \
    for (ptrdiff_t p = 0; p < planes; p++) {                                                      \
        const T* plane = x + p * g->H * g->W;                                                     \
        for (ptrdiff_t ho = 0; ho < g->Ho; ho++) {                                                \
            const ptrdiff_t h0 = first_on_grid(ho * g->sh - g->pt, g->dh);                        \
            ptrdiff_t h1 = ho * g->sh - g->pt + (g->kh - 1) * g->dh + 1;                          \
            if (h1 > g->H) h1 = g->H;                                                             \
            for (ptrdiff_t wo = 0; wo < g->Wo; wo++) {                                            \
                const ptrdiff_t w0 = first_on_grid(wo * g->sw - g->pl, g->dw);                    \
                ptrdiff_t w1 = wo * g->sw - g->pl + (g->kw - 1) * g->dw + 1;                      \
                if (w1 > g->W) w1 = g->W;                                                         \
                T best = -INFINITY;                                                               \
                int64_t at = (int64_t)(h0 * g->W + w0);                                           \
                for (ptrdiff_t h = h0; h < h1; h += g->dh)                                        \
                    for (ptrdiff_t w = w0; w < w1; w += g->dw) {                                  \
                        const T v = plane[h * g->W + w];                                          \
                        if (v > best || isnan(v)) {                                               \
                            best = v;                                                             \
                            at = (int64_t)(h * g->W + w);                                         \
                        }                                                                         \
                    }                                                                             \
                y[(p * g->Ho + ho) * g->Wo + wo] = best;                                          \
                idx[(p * g->Ho + ho) * g->Wo + wo] = at;                                          \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
void tg_max_pool2d_grad_##SFX(const T* gy, const int64_t* idx, T* gx, const tg_window* g)         \
{                                                                                                 \
    const ptrdiff_t planes = g->N * g->C, HW = g->H * g->W, L = g->Ho * g->Wo;                    \
    memset(gx, 0, (size_t)(planes * HW) * sizeof(T));                                            \
    for (ptrdiff_t p = 0; p < planes; p++)                                                        \
        for (ptrdiff_t k = 0; k < L; k++) {                                                       \
            const int64_t at = idx[p * L + k];                                                    \
            if (at >= 0 && at < HW)                                                               \
                gx[p * HW + at] += gy[p * L + k];                                                 \
        }                                                                                         \
}

/* -- recurrent cells -------------------------------------------------------------------------- */

#define DEFINE_RNN(T, SFX, EXP, TANH)                                                             \
static inline T sigmoid_##SFX(T v) { return (T)1 / ((T)1 + EXP(-v)); }                           \
                                                                                                  \
void tg_lstm_fwd_##SFX(ptrdiff_t B, ptrdiff_t H, const T* gi, const T* hh, const T* c0, T* acts,  \
                       T* c, T* tc, T* h)                                                         \
{                                                                                                 \
    for (ptrdiff_t b = 0; b < B; b++) {                                                           \
        const T* x = gi + b * 4 * H;                                                              \
        const T* r = hh + b * 4 * H;                                                              \
        T* a = acts + b * 4 * H;                                                                  \
        for (ptrdiff_t k = 0; k < H; k++) {                                                       \
            const T ig = sigmoid_##SFX(x[k] + r[k]);                                              \
            const T fg = sigmoid_##SFX(x[H + k] + r[H + k]);                                      \
            const T gg = TANH(x[2 * H + k] + r[2 * H + k]);                                       \
            const T og = sigmoid_##SFX(x[3 * H + k] + r[3 * H + k]);                              \
            const T cv = fg * c0[b * H + k] + ig * gg;                                            \
            const T t = TANH(cv);                                                                 \
            a[k] = ig; a[H + k] = fg; a[2 * H + k] = gg; a[3 * H + k] = og;                       \
            c[b * H + k] = cv;                                                                    \
            tc[b * H + k] = t;                                                                    \
            h[b * H + k] = og * t;                                                                \
        }                                                                                         \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
void tg_lstm_bwd_##SFX(ptrdiff_t B, ptrdiff_t H, const T* acts, const T* c0, const T* tc,        \
                       const T* dh, T* dc, T* dgates)                                             \
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
void tg_gru_fwd_##SFX(ptrdiff_t B, ptrdiff_t H, const T* gi, const T* hh, const T* h0, T* acts,   \
                      T* h)                                                                       \
{                                                                                                 \
    for (ptrdiff_t b = 0; b < B; b++) {                                                           \
        const T* x = gi + b * 3 * H;                                                              \
        const T* r = hh + b * 3 * H;                                                              \
        T* a = acts + b * 3 * H;                                                                  \
        for (ptrdiff_t k = 0; k < H; k++) {                                                       \
            const T rg = sigmoid_##SFX(x[k] + r[k]);                                              \
            const T zg = sigmoid_##SFX(x[H + k] + r[H + k]);                                      \
            const T ng = TANH(x[2 * H + k] + rg * r[2 * H + k]);                                  \
            a[k] = rg; a[H + k] = zg; a[2 * H + k] = ng;                                          \
            h[b * H + k] = ng + zg * (h0[b * H + k] - ng);                                        \
        }                                                                                         \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
void tg_gru_bwd_##SFX(ptrdiff_t B, ptrdiff_t H, const T* acts, const T* hh, const T* h0,         \
                      const T* dh, T* dgi, T* dhh, T* dh0)                                        \
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
void tg_rnn_fwd_##SFX(ptrdiff_t B, ptrdiff_t H, int relu, const T* gi, const T* hh, T* h)        \
{                                                                                                 \
    const ptrdiff_t n = B * H;                                                                    \
    if (relu)                                                                                     \
        for (ptrdiff_t k = 0; k < n; k++) {                                                       \
            const T v = gi[k] + hh[k];                                                            \
            h[k] = (v > 0 || isnan(v)) ? v : (T)0;                                                \
        }                                                                                         \
    else                                                                                          \
        for (ptrdiff_t k = 0; k < n; k++)                                                         \
            h[k] = TANH(gi[k] + hh[k]);                                                           \
}                                                                                                 \
                                                                                                  \
void tg_rnn_bwd_##SFX(ptrdiff_t B, ptrdiff_t H, int relu, const T* h, const T* dh, T* dpre)      \
{                                                                                                 \
    const ptrdiff_t n = B * H;                                                                    \
    if (relu)                                                                                     \
        for (ptrdiff_t k = 0; k < n; k++)                                                         \
            dpre[k] = h[k] <= 0 ? (T)0 : dh[k];                                                   \
    else                                                                                          \
        for (ptrdiff_t k = 0; k < n; k++)                                                         \
            dpre[k] = dh[k] * ((T)1 - h[k] * h[k]);                                               \
}

DEFINE_IM2COL(float, f32)
DEFINE_IM2COL(double, f64)
DEFINE_COL2IM(float, f32)
DEFINE_COL2IM(double, f64)
DEFINE_MAX_POOL(float, f32)
DEFINE_MAX_POOL(double, f64)
DEFINE_RNN(float, f32, expf, tanhf)
DEFINE_RNN(double, f64, exp, tanh)
