/* Elementwise kernels; see kernels.h.  Each op is one expression, instantiated for float and
 * double and for the three stride patterns (both contiguous, a broadcast, b broadcast) so that the
 * compiler sees unit-stride loops it can vectorise. */
#include "kernels.h"

#include <math.h>

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

/* max/min propagate NaN, as PyTorch's maximum/minimum do. */
#define BINARY_BODY(T, POW, ISNAN)                                              \
    switch (op) {                                                               \
        BINARY_CASE(T, TG_ADD, X + Y)                                           \
        BINARY_CASE(T, TG_SUB, X - Y)                                           \
        BINARY_CASE(T, TG_MUL, X * Y)                                           \
        BINARY_CASE(T, TG_DIV, X / Y)                                           \
        BINARY_CASE(T, TG_POW, (Y == (T)2 ? X * X : POW(X, Y)))                 \
        BINARY_CASE(T, TG_MAX, (ISNAN(X) || X > Y) ? X : Y)                     \
        BINARY_CASE(T, TG_MIN, (ISNAN(X) || X < Y) ? X : Y)                     \
        BINARY_CASE(T, TG_TANH_GRAD, X * ((T)1 - Y * Y))                        \
        BINARY_CASE(T, TG_RELU_GRAD, Y <= (T)0 ? (T)0 : X)                      \
        BINARY_CASE(T, TG_SIGMOID_GRAD, X * Y * ((T)1 - Y))                     \
        default: return -1;                                                     \
    }

int tg_binary_f64(int op, ptrdiff_t n, const double *a, ptrdiff_t sa, const double *b,
                  ptrdiff_t sb, double *out)
{
    BINARY_BODY(double, pow, isnan)
}

int tg_binary_f32(int op, ptrdiff_t n, const float *a, ptrdiff_t sa, const float *b,
                  ptrdiff_t sb, float *out)
{
    BINARY_BODY(float, powf, isnan)
}

#define UNARY_CASE(T, CODE, EXPR)                                               \
    case CODE:                                                                  \
        for (ptrdiff_t i = 0; i < n; i++) { T X = a[i]; out[i] = (EXPR); }      \
        return 0;

#define UNARY_BODY(T, EXP, LOG, TANH, SQRT, FABS, SIN, COS, LOG1P, EXPM1)       \
    switch (op) {                                                               \
        UNARY_CASE(T, TG_NEG, -X)                                               \
        UNARY_CASE(T, TG_EXP, EXP(X))                                           \
        UNARY_CASE(T, TG_LOG, LOG(X))                                           \
        UNARY_CASE(T, TG_TANH, TANH(X))                                         \
        UNARY_CASE(T, TG_RELU, X > (T)0 ? X : (X != X ? X : (T)0))              \
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
        UNARY_CASE(T, TG_SIGN, X > (T)0 ? (T)1 : (X < (T)0 ? (T)-1 : X * (T)0)) \
        default: return -1;                                                     \
    }

int tg_unary_f64(int op, ptrdiff_t n, const double *a, double *out)
{
    UNARY_BODY(double, exp, log, tanh, sqrt, fabs, sin, cos, log1p, expm1)
}

int tg_unary_f32(int op, ptrdiff_t n, const float *a, float *out)
{
    UNARY_BODY(float, expf, logf, tanhf, sqrtf, fabsf, sinf, cosf, log1pf, expm1f)
}
