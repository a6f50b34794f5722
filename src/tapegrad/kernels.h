/* tapegrad's elementwise C kernels: contiguous float32/float64 loops for the forward ops, the
 * sweep's VJPs and the replay, which all call these same functions (so a replay is bit-identical
 * to the eager run).  At small sizes numpy's per-call overhead dominates; these loops have none.
 * At large sizes -O3 vectorises the arithmetic ones, the transcendental functions (and the
 * activations and fused gradients built on them) evaluate with vecmath.h's vectorised kernels,
 * and tg_binary / tg_unary / tg_param split arrays above a size threshold over the thread pool of
 * threadpool.h.  Element i of a result depends on element i of the operands only: neither the
 * array's length nor the thread count changes it.
 *
 * Operands are flat arrays of n elements read with an element stride of 1 (contiguous) or 0 (one
 * value broadcast to all n).  Kernels never fail and never touch Python objects: they are called
 * only after the Cython layer has checked dtypes, sizes and contiguity, and may run without the
 * GIL. */
#ifndef TAPEGRAD_KERNELS_H
#define TAPEGRAD_KERNELS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    TG_ADD, TG_SUB, TG_MUL, TG_DIV, TG_POW, TG_MAX, TG_MIN,
    /* fused VJPs (a = upstream gradient, b = saved output y) */
    TG_TANH_GRAD,     /* a * (1 - b*b), 1 - b*b rounded once (fma) */
    TG_RELU_GRAD,     /* b <= 0 ? 0 : a (PyTorch's threshold_backward: NaN passes a) */
    TG_SIGMOID_GRAD,  /* (a * (1 - b)) * b */
    /* fused VJPs (a = upstream gradient, b = saved input x) */
    TG_GELU_GRAD,       /* a * (Phi(b) + b * phi(b)): exact gelu */
    TG_GELU_TANH_GRAD,  /* a * d/db [0.5 b (1 + tanh(k0 (b + k1 b^3)))] */
    TG_SILU_GRAD,       /* a * s (1 + b (1 - s)), s = sigmoid(b) */
    TG_SIN_GRAD,        /* a * cos(b) */
    TG_COS_GRAD,        /* a * -sin(b) */
    TG_ERF_GRAD,        /* (a * 2/sqrt(pi)) * exp(-(b*b)) */
    /* fused VJPs (a = upstream gradient, b = saved output y) */
    TG_SQRT_GRAD,       /* a / (2 b) */
    TG_RSQRT_GRAD,      /* (a * -0.5) * (b*b*b) */
    TG_EXPM1_GRAD,      /* a * (b + 1) */
    /* fused VJPs (a = upstream gradient, b = saved input x) */
    TG_LOG1P_GRAD,      /* a / (b + 1) */
    /* accumulation: out is read too */
    TG_MUL_ACC,         /* out + a * b (two roundings: the product, then the sum) */
    TG_N_BINARY
} tg_binary_op;

typedef enum {
    TG_NEG, TG_EXP, TG_LOG, TG_TANH, TG_RELU, TG_SIGMOID, TG_SQRT, TG_ABS, TG_SIN, TG_COS,
    TG_LOG1P, TG_EXPM1, TG_RSQRT, TG_SQUARE, TG_RECIPROCAL, TG_SIGN,
    TG_ERF,           /* erf(x) */
    TG_GELU,          /* 0.5 x (1 + erf(x / sqrt 2)) */
    TG_GELU_TANH,     /* 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), as x sigmoid(2u) */
    TG_SILU,          /* x / (1 + exp(-x)) */
    TG_N_UNARY
} tg_unary_op;

/* Ops with scalar parameters p0, p1 (forward: a = x, b unused; *_GRAD: a = upstream gradient,
 * b = saved input x). */
typedef enum {
    TG_LEAKY_RELU,       /* x > 0 ? x : x * p0                       (p0 = negative slope) */
    TG_LEAKY_RELU_GRAD,  /* x > 0 ? a : a * p0 */
    TG_ELU,              /* x <= 0 ? p0 * expm1(x) : x               (p0 = alpha) */
    TG_ELU_GRAD,         /* x <= 0 ? a * p0 * exp(x) : a */
    TG_SOFTPLUS,         /* x * p0 > p1 ? x : log1p(exp(x * p0)) / p0 (p0 = beta, p1 = threshold) */
    TG_SOFTPLUS_GRAD,    /* z = exp(x * p0); x * p0 > p1 ? a : a * z / (z + 1) */
    TG_CLAMP,            /* min(max(x, p0), p1), NaN propagating     (absent bounds: -inf, +inf) */
    TG_CLAMP_GRAD,       /* p0 <= x && x <= p1 ? a : 0 */
    TG_N_PARAM
} tg_param_op;

/* out[i] = a[i*sa] (op) b[i*sb] for i < n; sa, sb in {0, 1}.  Returns 0, or -1 for an unknown op. */
int tg_binary_f64(int op, ptrdiff_t n, const double *a, ptrdiff_t sa, const double *b,
                  ptrdiff_t sb, double *out);
int tg_binary_f32(int op, ptrdiff_t n, const float *a, ptrdiff_t sa, const float *b,
                  ptrdiff_t sb, float *out);

/* out[i] = op(a[i]) for contiguous a.  Returns 0, or -1 for an unknown op. */
int tg_unary_f64(int op, ptrdiff_t n, const double *a, double *out);
int tg_unary_f32(int op, ptrdiff_t n, const float *a, float *out);

/* s[i] = sin(x[i]), c[i] = cos(x[i]) in one pass, bit for bit the TG_SIN and TG_COS results (the
 * gradient of sin needs the cos of its input, and the reverse).  In the calling thread only. */
void tg_sincos_f64(ptrdiff_t n, const double *x, double *s, double *c);
void tg_sincos_f32(ptrdiff_t n, const float *x, float *s, float *c);

/* out[i] = op(a[i], b[i]; p0, p1) for contiguous a (and b for the *_GRAD ops; NULL otherwise).
 * Returns 0, or -1 for an unknown op. */
int tg_param_f64(int op, ptrdiff_t n, const double *a, const double *b, double p0, double p1,
                 double *out);
int tg_param_f32(int op, ptrdiff_t n, const float *a, const float *b, float p0, float p1,
                 float *out);

/* out[i] = a[i] * b[i*sb] + c[i] with one rounding (sb in {0, 1}); out may alias c. */
void tg_fma_f32(ptrdiff_t n, const float *a, const float *b, ptrdiff_t sb, const float *c,
                float *out);
void tg_fma_f64(ptrdiff_t n, const double *a, const double *b, ptrdiff_t sb, const double *c,
                double *out);

/* acc[i] += a[i] * b[i], rounded twice (product, then sum). */
void tg_madd_unfused_f32(ptrdiff_t n, const float *a, const float *b, float *acc);

/* Sum of n contiguous elements in np.add.reduce's order and rounding (n <= TG_SUM_MAX_N). */
#define TG_SUM_MAX_N 8192
float tg_sum_f32(ptrdiff_t n, const float *a);
double tg_sum_f64(ptrdiff_t n, const double *a);

/* Row-wise softmax (log_ = 0) or log_softmax (log_ = 1) of a C-contiguous rows x cols matrix
 * (1 <= cols <= TG_SUM_MAX_N), and the VJP of each from the adjoint g and the saved output y. */
void tg_softmax_rows_f32(int log_, ptrdiff_t rows, ptrdiff_t cols, const float *x, float *out);
void tg_softmax_rows_f64(int log_, ptrdiff_t rows, ptrdiff_t cols, const double *x, double *out);
void tg_softmax_grad_rows_f32(int log_, ptrdiff_t rows, ptrdiff_t cols, const float *g,
                              const float *y, float *out);
void tg_softmax_grad_rows_f64(int log_, ptrdiff_t rows, ptrdiff_t cols, const double *g,
                              const double *y, double *out);

/* dst = the transpose of src: src is a C-contiguous rows x cols matrix of 4-byte (or 8-byte)
 * elements, dst a C-contiguous cols x rows one.  Elements are copied as bits. */
void tg_transpose_4(ptrdiff_t rows, ptrdiff_t cols, const uint32_t *src, uint32_t *dst);
void tg_transpose_8(ptrdiff_t rows, ptrdiff_t cols, const uint64_t *src, uint64_t *dst);

#endif
