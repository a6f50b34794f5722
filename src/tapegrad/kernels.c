/* Elementwise kernels; see kernels.h.  Each op is one expression, instantiated for float and
 * double and for the three stride patterns (both contiguous, a broadcast, b broadcast) so that the
 * compiler sees unit-stride loops it can vectorise. */
#include "kernels.h"

#include <math.h>

/* PyTorch's constants for gelu (sqrt(2/pi), the cubic coefficient) and the normal density. */
#define TG_SQRT1_2 0.70710678118654752440
#define TG_GELU_BETA 0.79788456080286535588
#define TG_GELU_KAPPA 0.044715
#define TG_INV_SQRT_2PI 0.39894228040143267794

/* Binary: one macro per element type.  X and Y name the operands in EXPR. */
#define BINARY_CASE(T, CODE, EXPR)                                              \
    case CODE:                                                                  \
        if (sa == 1 && sb == 1) {                                               \
            for (ptrdiff_t i = 0; i < n; i++) { T X = a[i], Y = b[i]; out[i] = (EXPR); } \
        } else if (sa == 0) {                                                   \
            const T X = a[0];                                                   \
            for (ptrdiff_t i = 0; i < n; i++) { T Y = b[i * sb]; out[i] = (EXPR); } \
        } else {                                                                \
            const T Y = b[0];                                                   \
            for (ptrdiff_t i = 0; i < n; i++) { T X = a[i]; out[i] = (EXPR); }  \
        }                                                                       \
        return 0;

/* x ** y with PyTorch's special cases for common exponents (pow_tensor_scalar_optimized):
 * they are exact products/roots, so the results match PyTorch's, not libm pow's. */
#define POW_FAST(T, POW, X, Y)                                                  \
    ((Y) == (T)2 ? (X) * (X) :                                                  \
     (Y) == (T)3 ? (X) * (X) * (X) :                                            \
     (Y) == (T)1 ? (X) :                                                        \
     (Y) == (T)0.5 ? SQRT_OF(T, X) :                                            \
     (Y) == (T)-0.5 ? (T)1 / SQRT_OF(T, X) :                                    \
     (Y) == (T)-1 ? (T)1 / (X) :                                                \
     (Y) == (T)-2 ? (T)1 / ((X) * (X)) : POW(X, Y))
#define SQRT_OF(T, X) (sizeof(T) == sizeof(float) ? (T)sqrtf((float)(X)) : (T)sqrt((double)(X)))

/* max/min propagate NaN, as PyTorch's maximum/minimum do.  The exact gelu's gradient is PyTorch's
 * cdf + x * pdf; the tanh form's is written with sigmoid (see gelu_tanh_grad). */
#define BINARY_BODY(T, POW, ISNAN, EXP, ERF)                                    \
    switch (op) {                                                               \
        BINARY_CASE(T, TG_ADD, X + Y)                                           \
        BINARY_CASE(T, TG_SUB, X - Y)                                           \
        BINARY_CASE(T, TG_MUL, X * Y)                                           \
        BINARY_CASE(T, TG_DIV, X / Y)                                           \
        BINARY_CASE(T, TG_POW, POW_FAST(T, POW, X, Y))                          \
        BINARY_CASE(T, TG_MAX, (!ISNAN(X) && (ISNAN(Y) || Y > X)) ? Y : X)       \
        BINARY_CASE(T, TG_MIN, (!ISNAN(X) && (ISNAN(Y) || Y < X)) ? Y : X)       \
        BINARY_CASE(T, TG_TANH_GRAD, X * ((T)1 - Y * Y))                        \
        BINARY_CASE(T, TG_RELU_GRAD, Y <= (T)0 ? (T)0 : X)                      \
        BINARY_CASE(T, TG_SIGMOID_GRAD, X * Y * ((T)1 - Y))                     \
        BINARY_CASE(T, TG_GELU_GRAD,                                            \
                    X * ((T)0.5 * ((T)1 + ERF(Y * (T)TG_SQRT1_2))                 \
                         + Y * (T)TG_INV_SQRT_2PI * EXP((T)-0.5 * Y * Y)))        \
        BINARY_CASE(T, TG_GELU_TANH_GRAD, gelu_tanh_grad_##T(X, Y))             \
        BINARY_CASE(T, TG_SILU_GRAD, silu_grad_##T(X, Y))                       \
        default: return -1;                                                     \
    }

/* Helpers of the fused gradients, one per element type. */
#define FUSED_HELPERS(T, EXP)                                                   \
    static inline T gelu_tanh_grad_##T(T g, T x)                                \
    {                                                                           \
        /* 0.5 x (1 + tanh u) = x s with s = sigmoid(2u): no cancellation in 1 + tanh u */ \
        T x2 = x * x;                                                           \
        T s = (T)1 / ((T)1 + EXP((T)(-2 * TG_GELU_BETA) * (x + (T)TG_GELU_KAPPA * x2 * x))); \
        return g * (s + (T)2 * x * s * ((T)1 - s) * (T)TG_GELU_BETA              \
                        * ((T)1 + (T)(3 * TG_GELU_KAPPA) * x2));                 \
    }                                                                           \
    static inline T silu_grad_##T(T g, T x)                                     \
    {                                                                           \
        T s = (T)1 / ((T)1 + EXP(-x));                                          \
        return g * s * ((T)1 + x * ((T)1 - s));                                 \
    }

FUSED_HELPERS(double, exp)
FUSED_HELPERS(float, expf)

int tg_binary_f64(int op, ptrdiff_t n, const double *a, ptrdiff_t sa, const double *b,
                  ptrdiff_t sb, double *out)
{
    BINARY_BODY(double, pow, isnan, exp, erf)
}

int tg_binary_f32(int op, ptrdiff_t n, const float *a, ptrdiff_t sa, const float *b,
                  ptrdiff_t sb, float *out)
{
    BINARY_BODY(float, powf, isnan, expf, erff)
}

#define UNARY_CASE(T, CODE, EXPR)                                               \
    case CODE:                                                                  \
        for (ptrdiff_t i = 0; i < n; i++) { T X = a[i]; out[i] = (EXPR); }      \
        return 0;

/* sign is PyTorch's (0 < x) - (x < 0): 0 for NaN and for -0 (branch-free, so it vectorises). */
#define UNARY_BODY(T, EXP, LOG, TANH, SQRT, FABS, SIN, COS, LOG1P, EXPM1, ERF)  \
    switch (op) {                                                               \
        UNARY_CASE(T, TG_NEG, -X)                                               \
        UNARY_CASE(T, TG_EXP, EXP(X))                                           \
        UNARY_CASE(T, TG_LOG, LOG(X))                                           \
        UNARY_CASE(T, TG_TANH, TANH(X))                                         \
        UNARY_CASE(T, TG_RELU, X < (T)0 ? (T)0 : X)                              \
        UNARY_CASE(T, TG_SIGMOID, X >= (T)0 ? (T)1 / ((T)1 + EXP(-X))           \
                                            : EXP(X) / ((T)1 + EXP(X)))         \
        UNARY_CASE(T, TG_SQRT, SQRT(X))                                         \
        UNARY_CASE(T, TG_ABS, FABS(X))                                          \
        UNARY_CASE(T, TG_SIN, SIN(X))                                           \
        UNARY_CASE(T, TG_COS, COS(X))                                           \
        UNARY_CASE(T, TG_LOG1P, LOG1P(X))                                       \
        UNARY_CASE(T, TG_EXPM1, EXPM1(X))                                       \
        UNARY_CASE(T, TG_RSQRT, (T)1 / SQRT(X))                                 \
        UNARY_CASE(T, TG_SQUARE, X * X)                                         \
        UNARY_CASE(T, TG_RECIPROCAL, (T)1 / X)                                  \
        UNARY_CASE(T, TG_SIGN, (T)(X > (T)0) - (T)(X < (T)0))                   \
        UNARY_CASE(T, TG_ERF, ERF(X))                                           \
        UNARY_CASE(T, TG_GELU, (T)0.5 * X * ((T)1 + ERF(X * (T)TG_SQRT1_2)))    \
        UNARY_CASE(T, TG_GELU_TANH, X / ((T)1 + EXP((T)(-2 * TG_GELU_BETA)      \
                                    * (X + (T)TG_GELU_KAPPA * X * X * X))))      \
        UNARY_CASE(T, TG_SILU, X / ((T)1 + EXP(-X)))                            \
        default: return -1;                                                     \
    }

int tg_unary_f64(int op, ptrdiff_t n, const double *a, double *out)
{
    UNARY_BODY(double, exp, log, tanh, sqrt, fabs, sin, cos, log1p, expm1, erf)
}

int tg_unary_f32(int op, ptrdiff_t n, const float *a, float *out)
{
    UNARY_BODY(float, expf, logf, tanhf, sqrtf, fabsf, sinf, cosf, log1pf, expm1f, erff)
}

/* Parameterised ops.  X is the input x (forward) or the saved input (gradients), G the upstream
 * gradient, P0 and P1 the parameters; expressions mirror PyTorch's CPU kernels. */
#define PARAM_CASE(T, CODE, EXPR)                                               \
    case CODE:                                                                  \
        for (ptrdiff_t i = 0; i < n; i++) { T X = a[i]; out[i] = (EXPR); }      \
        return 0;
#define PARAM_GRAD_CASE(T, CODE, EXPR)                                          \
    case CODE:                                                                  \
        for (ptrdiff_t i = 0; i < n; i++) { T G = a[i], X = b[i]; out[i] = (EXPR); } \
        return 0;

/* min(max(x, lo), hi) as TG_MAX then TG_MIN: a NaN x or bound gives NaN; lo > hi gives hi.
   TG_MAX / TG_MIN / TG_RELU keep x where it ties (PyTorch: max(-0.0, 0.0) is -0.0). */
#define CLAMP_HELPER(T)                                                         \
    static inline T clamp_##T(T x, T lo, T hi)                                  \
    {                                                                           \
        T m = (!isnan(x) && (isnan(lo) || lo > x)) ? lo : x;                    \
        return (!isnan(m) && (isnan(hi) || hi < m)) ? hi : m;                   \
    }

CLAMP_HELPER(double)
CLAMP_HELPER(float)

#define PARAM_BODY(T, EXP, EXPM1, LOG1P)                                        \
    switch (op) {                                                               \
        PARAM_CASE(T, TG_LEAKY_RELU, X > (T)0 ? X : X * P0)                     \
        PARAM_GRAD_CASE(T, TG_LEAKY_RELU_GRAD, X > (T)0 ? G : G * P0)           \
        PARAM_CASE(T, TG_ELU, X <= (T)0 ? P0 * EXPM1(X) : X)                    \
        PARAM_GRAD_CASE(T, TG_ELU_GRAD, X > (T)0 ? G : G * P0 * EXP(X))  /* NaN: NaN */        \
        PARAM_CASE(T, TG_SOFTPLUS, X * P0 > P1 ? X : LOG1P(EXP(X * P0)) / P0)   \
        PARAM_GRAD_CASE(T, TG_SOFTPLUS_GRAD,                                    \
                        X * P0 > P1 ? G : G * EXP(X * P0) / (EXP(X * P0) + (T)1)) \
        PARAM_CASE(T, TG_CLAMP, clamp_##T(X, P0, P1))                           \
        PARAM_GRAD_CASE(T, TG_CLAMP_GRAD, (P0 <= X && X <= P1) ? G : (T)0)      \
        default: return -1;                                                     \
    }

int tg_param_f64(int op, ptrdiff_t n, const double *a, const double *b, double P0, double P1,
                 double *out)
{
    PARAM_BODY(double, exp, expm1, log1p)
}

int tg_param_f32(int op, ptrdiff_t n, const float *a, const float *b, float P0, float P1,
                 float *out)
{
    PARAM_BODY(float, expf, expm1f, log1pf)
}

/* Fused multiply-add out[i] = a[i] * b[i*sb] + c[i], rounded once (as PyTorch's vectorised CPU
 * kernels compute add(alpha=), lerp and addcmul).  The hardware FMA version is compiled for the
 * "fma" target and chosen at run time; elsewhere libm's fma (correctly rounded, slower). */
#define FMA_LOOP(FMA)                                                           \
    if (sb == 0) {                                                              \
        const T bb = b[0];                                                      \
        for (ptrdiff_t i = 0; i < n; i++) out[i] = FMA(a[i], bb, c[i]);         \
    } else {                                                                    \
        for (ptrdiff_t i = 0; i < n; i++) out[i] = FMA(a[i], b[i], c[i]);       \
    }

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define TG_HAVE_FMA_DISPATCH 1
#define T float
__attribute__((target("fma"))) static void fma_f32_hw(ptrdiff_t n, const T *a, const T *b,
                                                      ptrdiff_t sb, const T *c, T *out)
{ FMA_LOOP(__builtin_fmaf) }
#undef T
#define T double
__attribute__((target("fma"))) static void fma_f64_hw(ptrdiff_t n, const T *a, const T *b,
                                                      ptrdiff_t sb, const T *c, T *out)
{ FMA_LOOP(__builtin_fma) }
#undef T
#endif

void tg_fma_f32(ptrdiff_t n, const float *a, const float *b, ptrdiff_t sb, const float *c,
                float *out)
{
#ifdef TG_HAVE_FMA_DISPATCH
    if (__builtin_cpu_supports("fma")) { fma_f32_hw(n, a, b, sb, c, out); return; }
#endif
#define T float
    FMA_LOOP(fmaf)
#undef T
}

void tg_fma_f64(ptrdiff_t n, const double *a, const double *b, ptrdiff_t sb, const double *c,
                double *out)
{
#ifdef TG_HAVE_FMA_DISPATCH
    if (__builtin_cpu_supports("fma")) { fma_f64_hw(n, a, b, sb, c, out); return; }
#endif
#define T double
    FMA_LOOP(fma)
#undef T
}

/* Pairwise summation in numpy's order (its pairwise_sum: sequential below 8 elements, eight
 * running sums up to a block of 128, halves rounded to a multiple of 8 above), then added to the
 * identity 0, as np.add.reduce of a contiguous array does: the replay (replay.pxi) sums in C and
 * still equals the eager op's numpy sum bit for bit.  Callers keep n <= TG_SUM_MAX_N (numpy
 * reduces larger arrays in buffered chunks, a different order). */
#define PAIRWISE_SUM(T, NAME)                                                                  \
static T NAME(const T *a, ptrdiff_t n)                                                        \
{                                                                                             \
    ptrdiff_t i;                                                                              \
    if (n < 8) {                                                                              \
        T res = 0;                                                                            \
        for (i = 0; i < n; i++) res += a[i];                                                  \
        return res;                                                                           \
    }                                                                                         \
    if (n <= 128) {                                                                           \
        T r[8], res;                                                                          \
        int j;                                                                                \
        for (j = 0; j < 8; j++) r[j] = a[j];                                                  \
        for (i = 8; i < n - (n % 8); i += 8)                                                  \
            for (j = 0; j < 8; j++) r[j] += a[i + j];                                         \
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));             \
        for (; i < n; i++) res += a[i];                                                       \
        return res;                                                                           \
    }                                                                                         \
    ptrdiff_t n2 = n / 2;                                                                     \
    n2 -= n2 % 8;                                                                             \
    return NAME(a, n2) + NAME(a + n2, n - n2);                                                \
}
PAIRWISE_SUM(float, pairwise_f32)
PAIRWISE_SUM(double, pairwise_f64)

float tg_sum_f32(ptrdiff_t n, const float *a) { float zero = 0; return zero + pairwise_f32(a, n); }
double tg_sum_f64(ptrdiff_t n, const double *a) { double zero = 0; return zero + pairwise_f64(a, n); }

/* Row-wise softmax / log_softmax of a C-contiguous rows x cols matrix, the numpy formula of the
 * general path: m = max(x) (NaN propagating), s = sum(exp(x - m)) in np.add.reduce's order, then
 * exp(x - m) / s or (x - m) - log(s).  The exponentials are staged in `out`. */
#define SOFTMAX_ROWS(T, NAME, SUM, EXP, LOG)                                                   \
void NAME(int log_, ptrdiff_t rows, ptrdiff_t cols, const T *x, T *out)                       \
{                                                                                             \
    for (ptrdiff_t r = 0; r < rows; r++, x += cols, out += cols) {                            \
        T m = x[0];                                                                           \
        for (ptrdiff_t j = 1; j < cols; j++)                                                  \
            if (x[j] > m || x[j] != x[j]) m = (m != m) ? m : x[j];                            \
        for (ptrdiff_t j = 0; j < cols; j++) out[j] = EXP(x[j] - m);                          \
        T s = SUM(cols, out);                                                                 \
        if (log_) {                                                                           \
            T ls = LOG(s);                                                                    \
            for (ptrdiff_t j = 0; j < cols; j++) out[j] = (x[j] - m) - ls;                    \
        } else {                                                                              \
            for (ptrdiff_t j = 0; j < cols; j++) out[j] = out[j] / s;                         \
        }                                                                                     \
    }                                                                                         \
}
SOFTMAX_ROWS(float, tg_softmax_rows_f32, tg_sum_f32, expf, logf)
SOFTMAX_ROWS(double, tg_softmax_rows_f64, tg_sum_f64, exp, log)

/* Their VJPs, row by row (g the output's adjoint, y the saved output):
 *   softmax      out = g y - y sum(g y)        (g y staged in `out`)
 *   log_softmax  out = g - exp(y) sum(g) */
#define SOFTMAX_GRAD_ROWS(T, NAME, SUM, EXP)                                                   \
void NAME(int log_, ptrdiff_t rows, ptrdiff_t cols, const T *g, const T *y, T *out)           \
{                                                                                             \
    for (ptrdiff_t r = 0; r < rows; r++, g += cols, y += cols, out += cols) {                 \
        if (log_) {                                                                           \
            T s = SUM(cols, g);                                                               \
            for (ptrdiff_t j = 0; j < cols; j++) out[j] = g[j] - EXP(y[j]) * s;               \
        } else {                                                                              \
            for (ptrdiff_t j = 0; j < cols; j++) out[j] = g[j] * y[j];                        \
            T s = SUM(cols, out);                                                             \
            for (ptrdiff_t j = 0; j < cols; j++) out[j] = out[j] - y[j] * s;                  \
        }                                                                                     \
    }                                                                                         \
}
SOFTMAX_GRAD_ROWS(float, tg_softmax_grad_rows_f32, tg_sum_f32, expf)
SOFTMAX_GRAD_ROWS(double, tg_softmax_grad_rows_f64, tg_sum_f64, exp)

/* Row after row, each added across all columns: the inner loop is contiguous (vectorised) and
 * every column's additions happen in row order, which is numpy's order for this reduction. */
#define SUM_ROWS(T, NAME)                                                                      \
void NAME(ptrdiff_t rows, ptrdiff_t cols, const T *a, T *out)                                  \
{                                                                                              \
    for (ptrdiff_t j = 0; j < cols; j++) out[j] = 0;                                           \
    for (ptrdiff_t i = 0; i < rows; i++) {                                                     \
        const T *row = a + i * cols;                                                           \
        for (ptrdiff_t j = 0; j < cols; j++) out[j] += row[j];                                 \
    }                                                                                          \
}
SUM_ROWS(float, tg_sum_rows_f32)
SUM_ROWS(double, tg_sum_rows_f64)

/* Tiles of TILE x TILE elements: each tile's rows of src and of dst stay in L1 while it is copied,
 * where a plain double loop would touch a new cache line of dst for every element it writes.
 * (numpy's strided copy of a transposed 64 x 256 float32 matrix takes about 20 us; this, 3.) */
#define TRANSPOSE_TILE 32
#define TRANSPOSE(T, NAME)                                                                     \
void NAME(ptrdiff_t rows, ptrdiff_t cols, const T *src, T *dst)                                \
{                                                                                              \
    for (ptrdiff_t i0 = 0; i0 < rows; i0 += TRANSPOSE_TILE) {                                  \
        const ptrdiff_t i1 = i0 + TRANSPOSE_TILE < rows ? i0 + TRANSPOSE_TILE : rows;          \
        for (ptrdiff_t j0 = 0; j0 < cols; j0 += TRANSPOSE_TILE) {                              \
            const ptrdiff_t j1 = j0 + TRANSPOSE_TILE < cols ? j0 + TRANSPOSE_TILE : cols;      \
            for (ptrdiff_t j = j0; j < j1; j++)                                                \
                for (ptrdiff_t i = i0; i < i1; i++)                                            \
                    dst[j * rows + i] = src[i * cols + j];                                     \
        }                                                                                      \
    }                                                                                          \
}
TRANSPOSE(uint32_t, tg_transpose_4)
TRANSPOSE(uint64_t, tg_transpose_8)
