/* grid_sample's kernels: see grid_kernels.h.  One template (GRID_KERNELS) instantiated for
 * float and double; each step follows the line of PyTorch's kernel whose rounding it
 * reproduces.
 *
 * Each kernel is compiled twice on x86 with GCC or Clang: for the baseline ISA and for AVX2 with
 * FMA, where floor, trunc, rint and the explicit fma() calls PyTorch's rounding needs are single
 * instructions (in the baseline version each is a libm call, most of a point's time).  No a * b + c
 * is contracted in either version (the whole file compiles with contraction off): the fused
 * steps are the explicit fma() calls only, so both versions give the same bits. */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "grid_kernels.h"

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define GRID_FMA_VARIANT 1
#define GRID_INLINE static inline __attribute__((always_inline))
static int grid_has_fma(void) {
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return known;
}
#else
#define GRID_FMA_VARIANT 0
#define GRID_INLINE static inline
#endif

#define GRID_MAX_LANES 64

/* A coordinate's integer part as PyTorch's int conversion leaves it usable: positions far
 * outside (and NaN, which its conversion sends to the most negative integer) saturate well
 * outside every plane, so that the masks below drop them and no index overflows. */
GRID_INLINE int64_t grid_position(double v) {
    if (!(v > -4.0e18)) return INT64_MIN / 4;   /* NaN and far below */
    if (v > 4.0e18) return INT64_MAX / 4;
    return (int64_t)v;
}

#define GRID_KERNELS(T, SUF, FMA, FLOOR, TRUNC, RINT, FABS)                                        \
                                                                                                  \
/* The padding mode's treatment of one axis of size `size`: scaling factor, clip limit and       \
 * reflection span, as PyTorch's ComputeLocationBase holds them (in T). */                        \
typedef struct {                                                                                  \
    T scale, max_val, twice_span, low;                                                            \
    int empty, padding, align_corners, fused;                                                     \
} grid_axis_##SUF;                                                                                \
                                                                                                  \
static grid_axis_##SUF grid_axis_make_##SUF(ptrdiff_t size, const tg_grid2d* g) {               \
    grid_axis_##SUF a;                                                                            \
    a.max_val = (T)(size - 1);                                                                    \
    a.scale = g->align_corners ? (T)(size - 1) / (T)2 : (T)size / (T)2;                           \
    a.twice_span = g->align_corners ? (T)(size - 1) * (T)2 : (T)size * (T)2;                      \
    a.low = g->align_corners ? (T)0 : (T)-0.5;                                                    \
    a.empty = g->align_corners ? size <= 1 : size <= 0;                                           \
    a.padding = g->padding;                                                                       \
    a.align_corners = g->align_corners;                                                           \
    a.fused = g->fused;                                                                           \
    return a;                                                                                     \
}                                                                                                 \
                                                                                                  \
/* (in + 1) * scale [- 0.5]: the subtraction fused into the product where the build fuses. */    \
GRID_INLINE T grid_unnormalize_##SUF(const grid_axis_##SUF* a, T in) {                          \
    T one = in + (T)1;                                                                            \
    if (a->align_corners) return one * a->scale;                                                  \
    return a->fused ? FMA(one, a->scale, (T)-0.5) : one * a->scale - (T)0.5;                      \
}                                                                                                 \
                                                                                                  \
/* clip_coordinates: clamp to [0, max_val], NaN (and -0) to +0 (its operand order). */            \
GRID_INLINE T grid_clip_##SUF(const grid_axis_##SUF* a, T v) {                                  \
    T r = v > (T)0 ? v : (T)0;                                                                    \
    return r < a->max_val ? r : a->max_val;                                                       \
}                                                                                                 \
                                                                                                  \
/* |in - low| less whole double spans (truncated quotient; a fused multiply-add where fused). */ \
GRID_INLINE T grid_extra_##SUF(const grid_axis_##SUF* a, T m) {                                 \
    T abs_in = FABS(m);                                                                           \
    T flips = TRUNC(abs_in / a->twice_span);                                                      \
    return a->fused ? FMA(-flips, a->twice_span, abs_in) : abs_in - flips * a->twice_span;        \
}                                                                                                 \
                                                                                                  \
/* The source coordinate of a grid value (ComputeLocation::apply). */                             \
GRID_INLINE T grid_locate_##SUF(const grid_axis_##SUF* a, T in) {                               \
    T u = grid_unnormalize_##SUF(a, in);                                                          \
    if (a->padding == 0) return u;                                                                \
    if (a->padding == 2) {                                                                        \
        if (a->empty) {                                                                           \
            u = (T)0;                                                                             \
        } else {                                                                                  \
            T extra = grid_extra_##SUF(a, a->align_corners ? u : u - a->low);                     \
            T other = a->twice_span - extra;                                                      \
            /* minimum(): NaN propagates (and is clipped to 0 next) */                            \
            u = (extra != extra || other != other) ? (T)NAN : (extra < other ? extra : other);    \
            if (!a->align_corners) u = u + a->low;                                                \
        }                                                                                         \
    }                                                                                             \
    return grid_clip_##SUF(a, u);                                                                 \
}                                                                                                 \
                                                                                                  \
/* The source coordinate and d coordinate / d grid value (ComputeLocation::apply_get_grad):      \
 * the clip's gradient is 0 on and beyond the borders. */                                         \
GRID_INLINE T grid_locate_grad_##SUF(const grid_axis_##SUF* a, T in, T* mult) {                 \
    T u = grid_unnormalize_##SUF(a, in);                                                          \
    T grad = a->scale;                                                                            \
    if (a->padding == 0) { *mult = grad; return u; }                                              \
    if (a->padding == 2) {                                                                        \
        if (a->empty) {                                                                           \
            u = (T)0; grad = (T)0;                                                                \
        } else {                                                                                  \
            T m = a->align_corners ? u : u - a->low;                                              \
            int negative = m < (T)0;                                                              \
            T extra = grid_extra_##SUF(a, m);                                                     \
            T reflected = a->twice_span - extra;                                                  \
            int flip = extra > reflected;                                                         \
            u = flip ? reflected : extra;                                                         \
            if (!a->align_corners) u = u + a->low;                                                \
            grad = (flip ^ negative) ? -grad : grad;                                              \
        }                                                                                         \
    }                                                                                             \
    if (u != u) { *mult = grad; return u; }     /* NaN passes the clip (maximum propagates) */    \
    T lo = u > (T)0 ? u : (T)0;                                                                   \
    T res = lo < a->max_val ? lo : a->max_val;                                                    \
    *mult = (lo != (T)0 && res != a->max_val) ? grad : (T)0;                                      \
    return res;                                                                                   \
}                                                                                                 \
                                                                                                  \
/* One chunk's bilinear taps: corner k of point i at plane offset off[k][i] (when ok[k][i]),      \
 * weight wt[k][i] (nw, ne, sw, se); the distances n, s, w, e for the grid's gradient. */         \
typedef struct {                                                                                  \
    T wt[4][GRID_MAX_LANES], n[GRID_MAX_LANES], s[GRID_MAX_LANES], w[GRID_MAX_LANES],            \
        e[GRID_MAX_LANES], gx_mult[GRID_MAX_LANES], gy_mult[GRID_MAX_LANES];                     \
    ptrdiff_t off[4][GRID_MAX_LANES];                                                             \
    unsigned char ok[4][GRID_MAX_LANES];                                                          \
} grid_chunk_##SUF;                                                                               \
                                                                                                  \
GRID_INLINE void grid_bilinear_taps_##SUF(const T* grid, ptrdiff_t len, const grid_axis_##SUF* ax,    \
                                     const grid_axis_##SUF* ay, const tg_grid2d* g,               \
                                     int with_grad, grid_chunk_##SUF* k) {                        \
    for (ptrdiff_t i = 0; i < len; i++) {                                                         \
        T x, y;                                                                                   \
        if (with_grad) {                                                                          \
            x = grid_locate_grad_##SUF(ax, grid[2 * i], &k->gx_mult[i]);                          \
            y = grid_locate_grad_##SUF(ay, grid[2 * i + 1], &k->gy_mult[i]);                      \
        } else {                                                                                  \
            x = grid_locate_##SUF(ax, grid[2 * i]);                                               \
            y = grid_locate_##SUF(ay, grid[2 * i + 1]);                                           \
        }                                                                                         \
        T x_w = FLOOR(x), y_n = FLOOR(y);                                                         \
        T w = x - x_w, e = (T)1 - w, n = y - y_n, s = (T)1 - n;                                   \
        k->wt[0][i] = s * e; k->wt[1][i] = s * w; k->wt[2][i] = n * e; k->wt[3][i] = n * w;       \
        k->n[i] = n; k->s[i] = s; k->w[i] = w; k->e[i] = e;                                       \
        int64_t ix = grid_position((double)x_w), iy = grid_position((double)y_n);                 \
        int w_in = ix >= 0 && ix < g->W, e_in = ix + 1 >= 0 && ix + 1 < g->W;                     \
        int n_in = iy >= 0 && iy < g->H, s_in = iy + 1 >= 0 && iy + 1 < g->H;                     \
        k->ok[0][i] = n_in && w_in; k->ok[1][i] = n_in && e_in;                                   \
        k->ok[2][i] = s_in && w_in; k->ok[3][i] = s_in && e_in;                                   \
        /* a masked corner reads element 0 (the loops read unconditionally, then select) */      \
        ptrdiff_t base = (ptrdiff_t)(iy * g->W + ix);                                             \
        k->off[0][i] = k->ok[0][i] ? base : 0;                                                    \
        k->off[1][i] = k->ok[1][i] ? base + 1 : 0;                                                \
        k->off[2][i] = k->ok[2][i] ? base + g->W : 0;                                             \
        k->off[3][i] = k->ok[3][i] ? base + g->W + 1 : 0;                                         \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
/* Nearest: the one tap of each point (round half to even), -1 when outside. */                  \
GRID_INLINE void grid_nearest_taps_##SUF(const T* grid, ptrdiff_t len, const grid_axis_##SUF* ax,     \
                                    const grid_axis_##SUF* ay, const tg_grid2d* g,                \
                                    ptrdiff_t* off) {                                             \
    for (ptrdiff_t i = 0; i < len; i++) {                                                         \
        int64_t ix = grid_position((double)RINT(grid_locate_##SUF(ax, grid[2 * i])));             \
        int64_t iy = grid_position((double)RINT(grid_locate_##SUF(ay, grid[2 * i + 1])));         \
        off[i] = ix >= 0 && ix < g->W && iy >= 0 && iy < g->H ? (ptrdiff_t)(iy * g->W + ix) : -1; \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
GRID_INLINE void grid_forward_##SUF(const T* input, const T* grid, T* out, const tg_grid2d* g) {         \
    grid_axis_##SUF ax = grid_axis_make_##SUF(g->W, g), ay = grid_axis_make_##SUF(g->H, g);      \
    /* (each output is computed alone: the chunks need not be PyTorch's, only long) */          \
    ptrdiff_t plane = g->H * g->W, lanes = GRID_MAX_LANES, row = g->P;                            \
    grid_chunk_##SUF k;                                                                           \
    ptrdiff_t near[GRID_MAX_LANES];                                                               \
    for (ptrdiff_t b = 0; b < g->N; b++) {                                                        \
        const T* inp_b = input + b * g->C * plane;                                                \
        T* out_b = out + b * g->C * g->P;                                                         \
        for (ptrdiff_t r = 0; r < g->P; r += row) {                                               \
            ptrdiff_t row_end = r + row < g->P ? r + row : g->P;                                  \
            for (ptrdiff_t p = r; p < row_end; p += lanes) {                                      \
                ptrdiff_t len = row_end - p < lanes ? row_end - p : lanes;                        \
                const T* gp = grid + (b * g->P + p) * 2;                                          \
                if (g->mode == 1) {                                                               \
                    grid_nearest_taps_##SUF(gp, len, &ax, &ay, g, near);                          \
                    for (ptrdiff_t c = 0; c < g->C; c++) {                                        \
                        const T* src = inp_b + c * plane;                                         \
                        T* dst = out_b + c * g->P + p;                                            \
                        for (ptrdiff_t i = 0; i < len; i++)                                       \
                            dst[i] = near[i] >= 0 ? src[near[i]] : (T)0;                          \
                    }                                                                             \
                    continue;                                                                     \
                }                                                                                 \
                grid_bilinear_taps_##SUF(gp, len, &ax, &ay, g, 0, &k);                            \
                for (ptrdiff_t c = 0; c < g->C; c++) {                                            \
                    const T* src = inp_b + c * plane;                                             \
                    T* dst = out_b + c * g->P + p;                                                \
                    for (ptrdiff_t i = 0; i < len; i++) {                                         \
                        T v0 = src[k.off[0][i]]; v0 = k.ok[0][i] ? v0 : (T)0;        \
                        T v1 = src[k.off[1][i]]; v1 = k.ok[1][i] ? v1 : (T)0;        \
                        T v2 = src[k.off[2][i]]; v2 = k.ok[2][i] ? v2 : (T)0;        \
                        T v3 = src[k.off[3][i]]; v3 = k.ok[3][i] ? v3 : (T)0;        \
                        T acc;                                                                    \
                        if (g->fused) {                                                           \
                            acc = v0 * k.wt[0][i];                                                \
                            acc = FMA(v1, k.wt[1][i], acc);                                       \
                            acc = FMA(v2, k.wt[2][i], acc);                                       \
                            acc = FMA(v3, k.wt[3][i], acc);                                       \
                        } else {                                                                  \
                            T p01 = v0 * k.wt[0][i] + v1 * k.wt[1][i];                            \
                            T p012 = p01 + v2 * k.wt[2][i];                                       \
                            acc = p012 + v3 * k.wt[3][i];                                         \
                        }                                                                         \
                        dst[i] = acc;                                                             \
                    }                                                                             \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
GRID_INLINE void grid_backward_##SUF(const T* grad_out, const T* input, const T* grid,          \
                                      T* grad_input, T* grad_grid, const tg_grid2d* g) {          \
    grid_axis_##SUF ax = grid_axis_make_##SUF(g->W, g), ay = grid_axis_make_##SUF(g->H, g);      \
    ptrdiff_t plane = g->H * g->W, lanes = g->lanes, row = g->row > 0 ? g->row : 1;              \
    grid_chunk_##SUF k;                                                                           \
    ptrdiff_t near[GRID_MAX_LANES];                                                               \
    T gx[GRID_MAX_LANES], gy[GRID_MAX_LANES];                                                     \
    for (ptrdiff_t b = 0; b < g->N; b++) {                                                        \
        const T* inp_b = input + b * g->C * plane;                                                \
        const T* go_b = grad_out + b * g->C * g->P;                                               \
        T* gi_b = grad_input ? grad_input + b * g->C * plane : NULL;                              \
        for (ptrdiff_t r = 0; r < g->P; r += row) {                                               \
            ptrdiff_t row_end = r + row < g->P ? r + row : g->P;                                  \
            for (ptrdiff_t p = r; p < row_end; p += lanes) {                                      \
                ptrdiff_t len = row_end - p < lanes ? row_end - p : lanes;                        \
                const T* gp = grid + (b * g->P + p) * 2;                                          \
                T* gg = grad_grid + (b * g->P + p) * 2;                                           \
                if (g->mode == 1) {                 /* the grid's gradient is zero */            \
                    memset(gg, 0, sizeof(T) * 2 * (size_t)len);                                   \
                    if (!gi_b) continue;                                                          \
                    grid_nearest_taps_##SUF(gp, len, &ax, &ay, g, near);                          \
                    for (ptrdiff_t c = 0; c < g->C; c++) {                                        \
                        const T* go = go_b + c * g->P + p;                                        \
                        T* gi = gi_b + c * plane;                                                 \
                        for (ptrdiff_t i = 0; i < len; i++)                                       \
                            if (near[i] >= 0) gi[near[i]] += go[i];                               \
                    }                                                                             \
                    continue;                                                                     \
                }                                                                                 \
                grid_bilinear_taps_##SUF(gp, len, &ax, &ay, g, 1, &k);                            \
                for (ptrdiff_t i = 0; i < len; i++) gx[i] = gy[i] = (T)0;                         \
                for (ptrdiff_t c = 0; c < g->C; c++) {                                            \
                    const T* go = go_b + c * g->P + p;                                            \
                    const T* src = inp_b + c * plane;                                             \
                    if (gi_b) {                     /* corner by corner, points in order */       \
                        T* gi = gi_b + c * plane;                                                 \
                        for (int q = 0; q < 4; q++)                                               \
                            for (ptrdiff_t i = 0; i < len; i++)                                   \
                                if (k.ok[q][i]) gi[k.off[q][i]] += k.wt[q][i] * go[i];            \
                    }                                                                             \
                    for (ptrdiff_t i = 0; i < len; i++) {                                         \
                        T nw = src[k.off[0][i]]; nw = k.ok[0][i] ? nw : (T)0;        \
                        T ne = src[k.off[1][i]]; ne = k.ok[1][i] ? ne : (T)0;        \
                        T sw = src[k.off[2][i]]; sw = k.ok[2][i] ? sw : (T)0;        \
                        T se = src[k.off[3][i]]; se = k.ok[3][i] ? se : (T)0;        \
                        if (g->fused) {                                                           \
                            T tx = FMA(se - sw, k.n[i], (ne - nw) * k.s[i]);                      \
                            T ty = FMA(se - ne, k.w[i], (sw - nw) * k.e[i]);                      \
                            gx[i] = FMA(tx, go[i], gx[i]);                                        \
                            gy[i] = FMA(ty, go[i], gy[i]);                                        \
                        } else {                                                                  \
                            T tx = (ne - nw) * k.s[i] + (se - sw) * k.n[i];                       \
                            T ty = (sw - nw) * k.e[i] + (se - ne) * k.w[i];                       \
                            gx[i] = gx[i] + tx * go[i];                                           \
                            gy[i] = gy[i] + ty * go[i];                                           \
                        }                                                                         \
                    }                                                                             \
                }                                                                                 \
                for (ptrdiff_t i = 0; i < len; i++) {                                             \
                    gg[2 * i] = gx[i] * k.gx_mult[i];                                             \
                    gg[2 * i + 1] = gy[i] * k.gy_mult[i];                                         \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
}

GRID_KERNELS(float, f32, fmaf, floorf, truncf, nearbyintf, fabsf)
GRID_KERNELS(double, f64, fma, floor, trunc, nearbyint, fabs)

/* The entry points: the AVX2 + FMA build of the same body where the CPU has it. */
#if GRID_FMA_VARIANT
#define GRID_ENTRY(SUF, T)                                                                        \
static void grid_forward_base_##SUF(const T* i, const T* gr, T* o, const tg_grid2d* g) {          \
    grid_forward_##SUF(i, gr, o, g);                                                              \
}                                                                                                 \
__attribute__((target("avx2,fma"))) static void grid_forward_fma_##SUF(                           \
        const T* i, const T* gr, T* o, const tg_grid2d* g) {                                      \
    grid_forward_##SUF(i, gr, o, g);                                                              \
}                                                                                                 \
static void grid_backward_base_##SUF(const T* go, const T* i, const T* gr, T* gi, T* gg,         \
                                     const tg_grid2d* g) {                                        \
    grid_backward_##SUF(go, i, gr, gi, gg, g);                                                    \
}                                                                                                 \
__attribute__((target("avx2,fma"))) static void grid_backward_fma_##SUF(                          \
        const T* go, const T* i, const T* gr, T* gi, T* gg, const tg_grid2d* g) {                 \
    grid_backward_##SUF(go, i, gr, gi, gg, g);                                                    \
}                                                                                                 \
void tg_grid_sample_2d_##SUF(const T* i, const T* gr, T* o, const tg_grid2d* g) {                 \
    if (grid_has_fma()) grid_forward_fma_##SUF(i, gr, o, g);                                      \
    else grid_forward_base_##SUF(i, gr, o, g);                                                    \
}                                                                                                 \
void tg_grid_sample_2d_backward_##SUF(const T* go, const T* i, const T* gr, T* gi, T* gg,        \
                                      const tg_grid2d* g) {                                       \
    if (grid_has_fma()) grid_backward_fma_##SUF(go, i, gr, gi, gg, g);                            \
    else grid_backward_base_##SUF(go, i, gr, gi, gg, g);                                          \
}
#else
#define GRID_ENTRY(SUF, T)                                                                        \
void tg_grid_sample_2d_##SUF(const T* i, const T* gr, T* o, const tg_grid2d* g) {                 \
    grid_forward_##SUF(i, gr, o, g);                                                              \
}                                                                                                 \
void tg_grid_sample_2d_backward_##SUF(const T* go, const T* i, const T* gr, T* gi, T* gg,        \
                                      const tg_grid2d* g) {                                       \
    grid_backward_##SUF(go, i, gr, gi, gg, g);                                                    \
}
#endif

GRID_ENTRY(f32, float)
GRID_ENTRY(f64, double)

/* -- 5-d inputs: PyTorch's scalar kernel ------------------------------------------------------ */

/* The parity of (int)floor(q) as x86 converts it: a quotient outside int's range (or NaN)
 * becomes INT_MIN, which is even. */
static inline int grid_odd_flips(double q) {
    if (!(q >= -2147483648.0 && q < 2147483648.0)) return 0;
    return (int)q % 2 != 0;
}

#define GRID3D_KERNELS(T, SUF, FLOOR, RINT, FABS, FMOD)                                            \
                                                                                                  \
/* grid_sampler_compute_source_index(_set_grad): mult NULL for the forward's rules. */            \
GRID_INLINE T grid3_locate_##SUF(T coord, ptrdiff_t size, const tg_grid3d* g, T* mult) {          \
    T grad;                                                                                       \
    if (g->align_corners) {                                                                       \
        grad = (T)(size - 1) / (T)2;                                                              \
        coord = ((coord + (T)1) / (T)2) * (T)(size - 1);                                          \
    } else {                                                                                      \
        grad = (T)size / (T)2;                                                                    \
        coord = ((coord + (T)1) * (T)size - (T)1) / (T)2;                                         \
    }                                                                                             \
    if (g->padding == 2) {                                                                        \
        int64_t twice_low = g->align_corners ? 0 : -1;                                            \
        int64_t twice_high = g->align_corners ? 2 * (size - 1) : 2 * size - 1;                    \
        if (twice_low == twice_high) {                                                            \
            coord = (T)0; grad = (T)0;                                                            \
        } else {                                                                                  \
            T low = (T)twice_low / (T)2, span = (T)(twice_high - twice_low) / (T)2;               \
            T refl = (T)1;                                                                        \
            if (mult) {                                                                           \
                coord = coord - low;                                                              \
                if (coord < (T)0) { refl = (T)-1; coord = -coord; }                               \
            } else {                                                                              \
                coord = FABS(coord - low);                                                        \
            }                                                                                     \
            T extra = FMOD(coord, span);                                                          \
            if (!grid_odd_flips((double)FLOOR(coord / span))) {                                   \
                coord = extra + low;                                                              \
            } else {                                                                              \
                coord = span - extra + low; refl = -refl;                                         \
            }                                                                                     \
            grad = grad * refl;                                                                   \
        }                                                                                         \
    }                                                                                             \
    if (g->padding != 0) {                                                                        \
        T max_val = (T)(size - 1);                                                                \
        if (mult) {             /* clip_coordinates_set_grad: a NaN passes */                     \
            if (coord <= (T)0) { coord = (T)0; grad = grad * (T)0; }                              \
            else if (coord >= max_val) { coord = max_val; grad = grad * (T)0; }                   \
        } else {                /* std::min(max, std::max(c, 0)): a NaN goes to max */            \
            T lo = coord < (T)0 ? (T)0 : coord;                                                   \
            coord = lo < max_val ? lo : max_val;                                                  \
        }                                                                                         \
    }                                                                                             \
    if (mult) *mult = grad;                                                                       \
    return coord;                                                                                 \
}                                                                                                 \
                                                                                                  \
/* The 8 corners of a point: offsets, whether inside, weights, and the integer corner            \
 * coordinates as T (PyTorch's weights subtract the T coordinate from the int64 corner). */       \
typedef struct {                                                                                  \
    T w[8];                                                                                       \
    ptrdiff_t off[8];                                                                             \
    int ok[8];                                                                                    \
    T x0, y0, z0, x1, y1, z1;                                                                     \
} grid3_corners_##SUF;                                                                            \
                                                                                                  \
GRID_INLINE void grid3_corners_make_##SUF(T ix, T iy, T iz, const tg_grid3d* g,                  \
                                          grid3_corners_##SUF* k) {                               \
    int64_t x = grid_position((double)FLOOR(ix)), y = grid_position((double)FLOOR(iy));           \
    int64_t z = grid_position((double)FLOOR(iz));                                                 \
    k->x0 = (T)x; k->y0 = (T)y; k->z0 = (T)z;                                                     \
    k->x1 = (T)(x + 1); k->y1 = (T)(y + 1); k->z1 = (T)(z + 1);                                   \
    T x0 = k->x0, y0 = k->y0, z0 = k->z0, x1 = k->x1, y1 = k->y1, z1 = k->z1;                     \
    k->w[0] = (x1 - ix) * (y1 - iy) * (z1 - iz);                                                  \
    k->w[1] = (ix - x0) * (y1 - iy) * (z1 - iz);                                                  \
    k->w[2] = (x1 - ix) * (iy - y0) * (z1 - iz);                                                  \
    k->w[3] = (ix - x0) * (iy - y0) * (z1 - iz);                                                  \
    k->w[4] = (x1 - ix) * (y1 - iy) * (iz - z0);                                                  \
    k->w[5] = (ix - x0) * (y1 - iy) * (iz - z0);                                                  \
    k->w[6] = (x1 - ix) * (iy - y0) * (iz - z0);                                                  \
    k->w[7] = (ix - x0) * (iy - y0) * (iz - z0);                                                  \
    for (int q = 0; q < 8; q++) {                                                                 \
        int64_t cx = x + (q & 1), cy = y + ((q >> 1) & 1), cz = z + ((q >> 2) & 1);               \
        k->ok[q] = cx >= 0 && cx < g->W && cy >= 0 && cy < g->H && cz >= 0 && cz < g->D;          \
        k->off[q] = k->ok[q] ? (ptrdiff_t)((cz * g->H + cy) * g->W + cx) : 0;                     \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
GRID_INLINE ptrdiff_t grid3_nearest_##SUF(T ix, T iy, T iz, const tg_grid3d* g) {                \
    int64_t x = grid_position((double)RINT(ix)), y = grid_position((double)RINT(iy));             \
    int64_t z = grid_position((double)RINT(iz));                                                  \
    if (x >= 0 && x < g->W && y >= 0 && y < g->H && z >= 0 && z < g->D)                          \
        return (ptrdiff_t)((z * g->H + y) * g->W + x);                                            \
    return -1;                                                                                    \
}                                                                                                 \
                                                                                                  \
GRID_INLINE void grid3_forward_##SUF(const T* input, const T* grid, T* out, const tg_grid3d* g) { \
    ptrdiff_t vol = g->D * g->H * g->W;                                                           \
    grid3_corners_##SUF k;                                                                        \
    for (ptrdiff_t b = 0; b < g->N; b++) {                                                        \
        const T* inp_b = input + b * g->C * vol;                                                  \
        T* out_b = out + b * g->C * g->P;                                                         \
        for (ptrdiff_t p = 0; p < g->P; p++) {                                                    \
            const T* gp = grid + (b * g->P + p) * 3;                                              \
            T ix = grid3_locate_##SUF(gp[0], g->W, g, NULL);                                      \
            T iy = grid3_locate_##SUF(gp[1], g->H, g, NULL);                                      \
            T iz = grid3_locate_##SUF(gp[2], g->D, g, NULL);                                      \
            if (g->mode == 1) {                                                                   \
                ptrdiff_t at = grid3_nearest_##SUF(ix, iy, iz, g);                                \
                for (ptrdiff_t c = 0; c < g->C; c++)                                              \
                    out_b[c * g->P + p] = at >= 0 ? inp_b[c * vol + at] : (T)0;                   \
                continue;                                                                         \
            }                                                                                     \
            grid3_corners_make_##SUF(ix, iy, iz, g, &k);                                          \
            for (ptrdiff_t c = 0; c < g->C; c++) {                                                \
                const T* src = inp_b + c * vol;                                                   \
                T acc = (T)0;                                                                     \
                for (int q = 0; q < 8; q++)                                                       \
                    if (k.ok[q]) acc += src[k.off[q]] * k.w[q];                                   \
                out_b[c * g->P + p] = acc;                                                        \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
GRID_INLINE void grid3_backward_##SUF(const T* grad_out, const T* input, const T* grid,          \
                                      T* grad_input, T* grad_grid, const tg_grid3d* g) {          \
    ptrdiff_t vol = g->D * g->H * g->W;                                                           \
    grid3_corners_##SUF k;                                                                        \
    for (ptrdiff_t b = 0; b < g->N; b++) {                                                        \
        const T* inp_b = input + b * g->C * vol;                                                  \
        const T* go_b = grad_out + b * g->C * g->P;                                               \
        T* gi_b = grad_input ? grad_input + b * g->C * vol : NULL;                                \
        for (ptrdiff_t p = 0; p < g->P; p++) {                                                    \
            const T* gp = grid + (b * g->P + p) * 3;                                              \
            T* gg = grad_grid + (b * g->P + p) * 3;                                               \
            T mx, my, mz;                                                                         \
            T ix = grid3_locate_##SUF(gp[0], g->W, g, &mx);                                       \
            T iy = grid3_locate_##SUF(gp[1], g->H, g, &my);                                       \
            T iz = grid3_locate_##SUF(gp[2], g->D, g, &mz);                                       \
            if (g->mode == 1) {                                                                   \
                gg[0] = gg[1] = gg[2] = (T)0;                                                     \
                if (!gi_b) continue;                                                              \
                ptrdiff_t at = grid3_nearest_##SUF(ix, iy, iz, g);                                \
                if (at >= 0)                                                                      \
                    for (ptrdiff_t c = 0; c < g->C; c++)                                          \
                        gi_b[c * vol + at] += go_b[c * g->P + p];                                 \
                continue;                                                                         \
            }                                                                                     \
            grid3_corners_make_##SUF(ix, iy, iz, g, &k);                                          \
            T x0 = k.x0, y0 = k.y0, z0 = k.z0, x1 = k.x1, y1 = k.y1, z1 = k.z1;                   \
            /* each corner's factors of d weight / d x, y, z (sign: + for the far side) */       \
            const T dx[8][2] = {{y1 - iy, z1 - iz}, {y1 - iy, z1 - iz}, {iy - y0, z1 - iz},       \
                                {iy - y0, z1 - iz}, {y1 - iy, iz - z0}, {y1 - iy, iz - z0},       \
                                {iy - y0, iz - z0}, {iy - y0, iz - z0}};                          \
            const T dy[8][2] = {{x1 - ix, z1 - iz}, {ix - x0, z1 - iz}, {x1 - ix, z1 - iz},       \
                                {ix - x0, z1 - iz}, {x1 - ix, iz - z0}, {ix - x0, iz - z0},       \
                                {x1 - ix, iz - z0}, {ix - x0, iz - z0}};                          \
            const T dz[8][2] = {{x1 - ix, y1 - iy}, {ix - x0, y1 - iy}, {x1 - ix, iy - y0},       \
                                {ix - x0, iy - y0}, {x1 - ix, y1 - iy}, {ix - x0, y1 - iy},       \
                                {x1 - ix, iy - y0}, {ix - x0, iy - y0}};                          \
            T gx = (T)0, gy = (T)0, gz = (T)0;                                                    \
            for (ptrdiff_t c = 0; c < g->C; c++) {                                                \
                T go = go_b[c * g->P + p];                                                        \
                const T* src = inp_b + c * vol;                                                   \
                if (gi_b) {                                                                       \
                    T* gi = gi_b + c * vol;                                                       \
                    for (int q = 0; q < 8; q++)                                                   \
                        if (k.ok[q]) gi[k.off[q]] += k.w[q] * go;                                 \
                }                                                                                 \
                for (int q = 0; q < 8; q++) {                                                     \
                    if (!k.ok[q]) continue;                                                       \
                    T v = src[k.off[q]];                                                          \
                    T tx = v * dx[q][0] * dx[q][1] * go;                                          \
                    T ty = v * dy[q][0] * dy[q][1] * go;                                          \
                    T tz = v * dz[q][0] * dz[q][1] * go;                                          \
                    gx = (q & 1) ? gx + tx : gx - tx;                                             \
                    gy = (q & 2) ? gy + ty : gy - ty;                                             \
                    gz = (q & 4) ? gz + tz : gz - tz;                                             \
                }                                                                                 \
            }                                                                                     \
            gg[0] = mx * gx; gg[1] = my * gy; gg[2] = mz * gz;                                    \
        }                                                                                         \
    }                                                                                             \
}

GRID3D_KERNELS(float, f32, floorf, nearbyintf, fabsf, fmodf)
GRID3D_KERNELS(double, f64, floor, nearbyint, fabs, fmod)

#if GRID_FMA_VARIANT
#define GRID3D_ENTRY(SUF, T)                                                                      \
static void grid3_forward_base_##SUF(const T* i, const T* gr, T* o, const tg_grid3d* g) {         \
    grid3_forward_##SUF(i, gr, o, g);                                                             \
}                                                                                                 \
__attribute__((target("avx2,fma"))) static void grid3_forward_fma_##SUF(                          \
        const T* i, const T* gr, T* o, const tg_grid3d* g) {                                      \
    grid3_forward_##SUF(i, gr, o, g);                                                             \
}                                                                                                 \
static void grid3_backward_base_##SUF(const T* go, const T* i, const T* gr, T* gi, T* gg,        \
                                      const tg_grid3d* g) {                                       \
    grid3_backward_##SUF(go, i, gr, gi, gg, g);                                                   \
}                                                                                                 \
__attribute__((target("avx2,fma"))) static void grid3_backward_fma_##SUF(                         \
        const T* go, const T* i, const T* gr, T* gi, T* gg, const tg_grid3d* g) {                 \
    grid3_backward_##SUF(go, i, gr, gi, gg, g);                                                   \
}                                                                                                 \
void tg_grid_sample_3d_##SUF(const T* i, const T* gr, T* o, const tg_grid3d* g) {                 \
    if (grid_has_fma()) grid3_forward_fma_##SUF(i, gr, o, g);                                     \
    else grid3_forward_base_##SUF(i, gr, o, g);                                                   \
}                                                                                                 \
void tg_grid_sample_3d_backward_##SUF(const T* go, const T* i, const T* gr, T* gi, T* gg,        \
                                      const tg_grid3d* g) {                                       \
    if (grid_has_fma()) grid3_backward_fma_##SUF(go, i, gr, gi, gg, g);                           \
    else grid3_backward_base_##SUF(go, i, gr, gi, gg, g);                                         \
}
#else
#define GRID3D_ENTRY(SUF, T)                                                                      \
void tg_grid_sample_3d_##SUF(const T* i, const T* gr, T* o, const tg_grid3d* g) {                 \
    grid3_forward_##SUF(i, gr, o, g);                                                             \
}                                                                                                 \
void tg_grid_sample_3d_backward_##SUF(const T* go, const T* i, const T* gr, T* gi, T* gg,        \
                                      const tg_grid3d* g) {                                       \
    grid3_backward_##SUF(go, i, gr, gi, gg, g);                                                   \
}
#endif

GRID3D_ENTRY(f32, float)
GRID3D_ENTRY(f64, double)
