/* tapegrad's elementwise C kernels: contiguous float32/float64 loops for the forward ops and the
 * sweep's VJPs.  At small sizes numpy's per-call overhead dominates; these loops have none, and at
 * large sizes -O3 vectorises the arithmetic ones.
 *
 * Operands are flat arrays of n elements read with an element stride of 1 (contiguous) or 0 (one
 * value broadcast to all n).  Kernels never fail and never touch Python objects: they are called
 * only after the Cython layer has checked dtypes, sizes and contiguity. */
#ifndef TAPEGRAD_KERNELS_H
#define TAPEGRAD_KERNELS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    TG_ADD, TG_SUB, TG_MUL, TG_DIV, TG_POW, TG_MAX, TG_MIN,
    /* fused VJPs (a = upstream gradient, b = saved output y) */
    TG_TANH_GRAD,     /* a * (1 - b*b) */
    TG_RELU_GRAD,     /* b <= 0 ? 0 : a  (NaN passes the gradient, as PyTorch) */
    TG_SIGMOID_GRAD,  /* a * b * (1 - b) */
    TG_N_BINARY
} tg_binary_op;

typedef enum {
    TG_NEG, TG_EXP, TG_LOG, TG_TANH, TG_RELU, TG_SIGMOID, TG_SQRT, TG_ABS, TG_SIN, TG_COS,
    TG_LOG1P, TG_EXPM1, TG_RSQRT, TG_SQUARE, TG_RECIPROCAL, TG_SIGN,
    TG_N_UNARY
} tg_unary_op;

/* out[i] = a[i*sa] (op) b[i*sb] for i < n; sa, sb in {0, 1}.  Returns 0, or -1 for an unknown op. */
int tg_binary_f64(int op, ptrdiff_t n, const double *a, ptrdiff_t sa, const double *b,
                  ptrdiff_t sb, double *out);
int tg_binary_f32(int op, ptrdiff_t n, const float *a, ptrdiff_t sa, const float *b,
                  ptrdiff_t sb, float *out);

/* out[i] = op(a[i]) for contiguous a.  Returns 0, or -1 for an unknown op. */
int tg_unary_f64(int op, ptrdiff_t n, const double *a, double *out);
int tg_unary_f32(int op, ptrdiff_t n, const float *a, float *out);

#endif
