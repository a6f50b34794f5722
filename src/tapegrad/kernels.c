/* Elementwise kernels; see kernels.h.  Each op is one expression, instantiated for float and
 * double and for the three stride patterns (both contiguous, a broadcast, b broadcast) so that the
 * compiler sees unit-stride loops it can vectorise. */
#include "kernels.h"

#include <math.h>
#include <string.h>

#include "threadpool.h"
#include "vecmath_levels.h" /* vecmath.h, and its level functions for direct calls */

/* PyTorch's constants for gelu (sqrt(2/pi), the cubic coefficient) and the normal density. */
#define TG_SQRT1_2 0.70710678118654752440
#define TG_GELU_BETA 0.79788456080286535588
#define TG_GELU_KAPPA 0.044715
#define TG_INV_SQRT_2PI 0.39894228040143267794
#define TG_2_SQRTPI 1.12837916709551257390 /* 2 / sqrt(pi), libm's M_2_SQRTPI */

/* Vectorised transcendental functions (vecmath.h) for the expressions below that need one: the
 * expression's argument is staged in a chunk on the stack, the kernel runs over the chunk, then
 * the expression is finished per element.  vecmath's result for an element does not depend on
 * its neighbours, so chunking (and threads, below) never change a result. */
#define TG_CHUNK 256
/* The level's function itself (one inline load and compare): through the public function, a
 * one-element exp paid two calls and a second level check before any arithmetic. */
#define VM(NAME, SUF) TG_VM_PICK(tg_vm_level_fast(), NAME, SUF)
/* The same for the fused kernels that only the AVX2 and AVX-512 levels have their own versions of
 * (vecmath.h's gelu_f32, gelu_grad_f32): those directly, else the public function's portable
 * code. */
#if TG_VM_BUILD_AVX512
#define VM_OWN(NAME)                                                            \
    (tg_vm_level_fast() == TG_VM_AVX512 ? tg_vm_##NAME##_avx512 :               \
     tg_vm_level_fast() == TG_VM_AVX2 ? tg_vm_##NAME##_avx2 : tg_vm_##NAME)
#elif TG_VM_BUILD_AVX2
#define VM_OWN(NAME) (tg_vm_level_fast() == TG_VM_AVX2 ? tg_vm_##NAME##_avx2 : tg_vm_##NAME)
#else
#define VM_OWN(NAME) tg_vm_##NAME
#endif

/* Each op body below is compiled three times on x86 with GCC or Clang: for the baseline ISA, for
 * AVX2 and for AVX-512 (without fused multiply-adds, so that no a*b+c is contracted: all versions
 * round every operation alike and give the same bits).  The version of vecmath's level runs
 * (TAPEGRAD_SIMD=scalar forces the portable code).  -O3 vectorises the loops 4 doubles / 8 floats
 * wide for AVX2, 8 / 16 for AVX-512: the divisions and square roots of rsqrt and the fused
 * gradients take half the time of the 2-/4-wide baseline ones at AVX2, and half again at AVX-512.
 * Other compilers and CPUs build the portable version only. */
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__)) && \
    !defined(TG_VM_NO_AVX2)
#define TG_KERNELS_AVX2 1
/* AVX-512F has fused multiply-adds of its own, which GCC would contract a*b+c into: contraction
 * is switched off for that version (GCC: the optimize attribute; Clang: the pragma, for the file,
 * whose other versions have no FMA to contract into anyway). */
#if TG_VM_BUILD_AVX512
#if defined(__clang__)
#pragma clang fp contract(off)
#define TG_AVX512_VARIANT __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2")))
#else
#define TG_AVX512_VARIANT                                                                         \
    __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,prefer-vector-width=512"),     \
                   optimize("fp-contract=off")))
#endif
#define KERNEL_VARIANTS(NAME, PARAMS, BODY, ARGS)                               \
    static int NAME##_base PARAMS { BODY }                                      \
    __attribute__((target("avx2"))) static int NAME##_avx2 PARAMS { BODY }      \
    TG_AVX512_VARIANT static int NAME##_avx512 PARAMS { BODY }                  \
    static int NAME PARAMS                                                      \
    {                                                                           \
        if (tg_vm_level_fast() == TG_VM_AVX512) return NAME##_avx512 ARGS;      \
        if (tg_vm_level_fast() == TG_VM_AVX2) return NAME##_avx2 ARGS;          \
        return NAME##_base ARGS;                                                \
    }
#else
#define KERNEL_VARIANTS(NAME, PARAMS, BODY, ARGS)                               \
    static int NAME##_base PARAMS { BODY }                                      \
    __attribute__((target("avx2"))) static int NAME##_avx2 PARAMS { BODY }      \
    static int NAME PARAMS                                                      \
    {                                                                           \
        if (tg_vm_level_fast() >= TG_VM_AVX2) return NAME##_avx2 ARGS;          \
        return NAME##_base ARGS;                                                \
    }
#endif
#else
#define KERNEL_VARIANTS(NAME, PARAMS, BODY, ARGS) static int NAME PARAMS { BODY }
#endif

/* No second function (the one-function expressions of CHUNKED_BINARY). */
static void vm_none_f64(const double *x, double *y, size_t n) { (void)x; (void)y; (void)n; }
static void vm_none_f32(const float *x, float *y, size_t n) { (void)x; (void)y; (void)n; }

/* The shape of every case that calls vecmath: per chunk of at most TG_CHUNK elements, LOAD(T, i)
 * declares element i's operands (X, and Y or G), t1 = PRE1 and t2 = PRE2 are staged, FN1 and FN2
 * run over them, and out = EXPR of the operands, E1 = FN1(PRE1) and E2 = FN2(PRE2).  Cases with
 * one function pass vm_none as FN2 (its stores are dead, so the compiler drops them). */
#define CHUNKED(T, LOAD, PRE1, FN1, PRE2, FN2, EXPR)                            \
    for (ptrdiff_t i0 = 0; i0 < n; i0 += TG_CHUNK) {                            \
        const ptrdiff_t m = n - i0 < TG_CHUNK ? n - i0 : TG_CHUNK;              \
        T t1[TG_CHUNK], t2[TG_CHUNK];                                           \
        for (ptrdiff_t k = 0; k < m; k++) {                                     \
            LOAD(T, i0 + k)                                                     \
            t1[k] = (PRE1);                                                     \
            t2[k] = (PRE2);                                                     \
        }                                                                       \
        FN1(t1, t1, (size_t)m);                                                 \
        FN2(t2, t2, (size_t)m);                                                 \
        for (ptrdiff_t k = 0; k < m; k++) {                                     \
            LOAD(T, i0 + k)                                                     \
            const T E1 = t1[k], E2 = t2[k];                                     \
            (void)E2;                                                           \
            out[i0 + k] = (EXPR);                                               \
        }                                                                       \
    }                                                                           \
    return 0;
/* The operands of element I: the binary ops' X and Y (strided), the unary ops' X. */
#define LOAD_XY(T, I) const T X = a[(I) * sa], Y = b[(I) * sb]; (void)X; (void)Y;
#define LOAD_X(T, I) const T X = a[I];

/* Binary: one macro per element type.  X and Y name the operands in EXPR. */
#define BINARY_CASE(T, CODE, EXPR) case CODE: BINARY_LOOPS(T, EXPR)
#define BINARY_LOOPS(T, EXPR)                                                   \
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

#define CHUNKED_BINARY(T, CODE, PRE1, FN1, PRE2, FN2, EXPR)                     \
    case CODE: CHUNKED(T, LOAD_XY, PRE1, FN1, PRE2, FN2, EXPR)

/* x ** y with PyTorch's special cases for common exponents (pow_tensor_scalar_optimized):
 * they are exact products/roots, so the results match PyTorch's, not libm pow's. */
#define POW_IS_FAST(T, Y)                                                       \
    ((Y) == (T)2 || (Y) == (T)3 || (Y) == (T)1 || (Y) == (T)0.5 || (Y) == (T)-0.5 \
     || (Y) == (T)-1 || (Y) == (T)-2)
/* A contiguous base to a general number exponent: vecmath's pow (POW_CASE, and tg_binary_f64 /
 * tg_binary_f32 directly below the thread threshold: through the level's variant of binary_f64 a
 * one-element pow paid the variant dispatch and the jump into its switch, ~110 instructions). */
#define POW_GENERAL(op, sa, sb, T, b)                                           \
    ((op) == TG_POW && (sa) == 1 && (sb) == 0 && !POW_IS_FAST(T, (b)[0]))
#define POW_FAST(T, POW, X, Y)                                                  \
    ((Y) == (T)2 ? (X) * (X) :                                                  \
     (Y) == (T)3 ? (X) * (X) * (X) :                                            \
     (Y) == (T)1 ? (X) :                                                        \
     (Y) == (T)0.5 ? SQRT_OF(T, X) :                                            \
     (Y) == (T)-0.5 ? (T)1 / SQRT_OF(T, X) :                                    \
     (Y) == (T)-1 ? (T)1 / (X) :                                                \
     (Y) == (T)-2 ? (T)1 / ((X) * (X)) : POW(X, Y))
#define SQRT_OF(T, X) (sizeof(T) == sizeof(float) ? (T)sqrtf((float)(X)) : (T)sqrt((double)(X)))
/* A contiguous base to any other number exponent: vecmath's vector pow (C99 pow's values within
 * its ulp bound; vecmath.h), what PyTorch's vectorised pow is to its scalar one.  A tensor
 * exponent stays with the C library's pow, as numpy's and PyTorch's elementwise pow. */
/* A contiguous base to a number exponent of POW_FAST's gets a loop of its own expression: in the
 * one loop over POW_FAST's chain of tests GCC vectorised x ** 2 only, and x ** 3 and x ** 1 (the
 * gradient of x ** 2) ran scalar, 16-28x slower (2,000 float32: 1.2 and 2.1 us against 75 ns,
 * most of a replayed polynomial fit's step).  The same operations per element, so the same bits. */
#define POW_BY(T, E, EXPR)                                                      \
        if (Y0 == (T)(E)) {                                                     \
            for (ptrdiff_t i = 0; i < n; i++) { const T X = a[i]; out[i] = (EXPR); } \
            return 0;                                                           \
        }
#define POW_CASE(T, SUF, POW)                                                   \
    case TG_POW:                                                                \
        if (POW_GENERAL(TG_POW, sa, sb, T, b)) {                                \
            tg_vm_pow_##SUF(a, b[0], out, (size_t)n);                           \
            return 0;                                                           \
        }                                                                       \
        if (sa == 1 && sb == 0) {                                               \
            const T Y0 = b[0];                                                  \
            POW_BY(T, 2, X * X)                                                 \
            POW_BY(T, 3, X * X * X)                                             \
            POW_BY(T, 1, X)                                                     \
            POW_BY(T, 0.5, SQRT_OF(T, X))                                       \
            POW_BY(T, -0.5, (T)1 / SQRT_OF(T, X))                               \
            POW_BY(T, -1, (T)1 / X)                                             \
            POW_BY(T, -2, (T)1 / (X * X))                                       \
        }                                                                       \
        BINARY_LOOPS(T, POW_FAST(T, POW, X, Y))

/* gelu: float32 has its own vecmath kernel (erf's argument and result kept in registers). */
#define GELU_CASE_f64                                                           \
    CHUNKED_UNARY(double, f64, TG_GELU, X * TG_SQRT1_2, VM(erf, f64), 0.5 * X * (1.0 + E1))
#define GELU_CASE_f32 VM_CASE(TG_GELU, VM_OWN(gelu_f32))
/* float32 gelu gradient: both functions in registers (vecmath.h); contiguous operands only. */
#define GELU_GRAD_CASE_f64                                                      \
    CHUNKED_BINARY(double, TG_GELU_GRAD, Y * TG_SQRT1_2, VM(erf, f64), -0.5 * Y * Y, \
                   VM(exp, f64), X * (0.5 * (1.0 + E1) + Y * TG_INV_SQRT_2PI * E2))
#define GELU_GRAD_CASE_f32                                                      \
    case TG_GELU_GRAD:                                                          \
        if (sa == 1 && sb == 1) {                                               \
            VM_OWN(gelu_grad_f32)(a, b, out, (size_t)n);                        \
            return 0;                                                           \
        }                                                                       \
        CHUNKED(float, LOAD_XY, Y * (float)TG_SQRT1_2, VM(erf, f32), -0.5f * Y * Y, \
                VM(exp, f32), X * (0.5f * (1.0f + E1) + Y * (float)TG_INV_SQRT_2PI * E2))

/* silu's gradient: vecmath's one-pass kernel for contiguous operands (what a VJP gets). */
#define SILU_GRAD_CASE(T, SUF)                                                  \
    case TG_SILU_GRAD:                                                          \
        if (sa == 1 && sb == 1) {                                               \
            VM(silu_grad, SUF)(a, b, (T)0, (T)0, out, (size_t)n);               \
            return 0;                                                           \
        }                                                                       \
        CHUNKED(T, LOAD_XY, -Y, VM(exp, SUF), (T)0, vm_none_##SUF,              \
                silu_grad_##T(X, Y, (T)1 / ((T)1 + E1)))

/* tanh's gradient g (1 - y^2) with 1 - y^2 rounded once, as PyTorch's tanh_backward computes it
 * (its vectorised kernel is a fused negative multiply-add, and its results are what scripts
 * compare a hand-written backward against).  A contiguous pair runs the hardware FMA loop when
 * the CPU has one; otherwise the correctly rounded libm fma gives the same bits. */
#define TANH_GRAD_HW_LOOP(FMA)                                                  \
    for (ptrdiff_t i = 0; i < n; i++) out[i] = a[i] * FMA(-b[i], b[i], 1);
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
__attribute__((target("avx2,fma"))) static void tanh_grad_hw_f32(ptrdiff_t n, const float *a,
                                                                 const float *b, float *out)
{ TANH_GRAD_HW_LOOP(__builtin_fmaf) }
__attribute__((target("avx2,fma"))) static void tanh_grad_hw_f64(ptrdiff_t n, const double *a,
                                                                 const double *b, double *out)
{ TANH_GRAD_HW_LOOP(__builtin_fma) }
#define TANH_GRAD_HW(SUF, n, a, b, out)                                         \
    (__builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2")            \
     ? (tanh_grad_hw_##SUF(n, a, b, out), 1) : 0)
#else
#define TANH_GRAD_HW(SUF, n, a, b, out) 0
#endif
#define TG_FMA_f64 fma
#define TG_FMA_f32 fmaf
#define TANH_GRAD_CASE(T, SUF)                                                  \
    case TG_TANH_GRAD:                                                          \
        if (sa == 1 && sb == 1 && TANH_GRAD_HW(SUF, n, a, b, out)) return 0;    \
        BINARY_LOOPS(T, X * TG_FMA_##SUF(-Y, Y, (T)1))

/* max/min propagate NaN, as PyTorch's maximum/minimum do.  The fused gradients:
 *   gelu       g (Phi(x) + x phi(x))                           (PyTorch's cdf + x * pdf)
 *   gelu_tanh  g (s + 2 x s (1 - s) beta (1 + 3 kappa x^2)),   s = sigmoid(2u): d/dx [x s],
 *              0.5 x (1 + tanh u) = x s without 1 + tanh u's cancellation
 *   silu       g s (1 + x (1 - s)),                            s = sigmoid(x)
 * sigmoid's gradient is (g (1 - s)) s, PyTorch's sigmoid_backward order. */
#define BINARY_BODY(T, SUF, POW, ISNAN)                                         \
    switch (op) {                                                               \
        BINARY_CASE(T, TG_ADD, X + Y)                                           \
        BINARY_CASE(T, TG_SUB, X - Y)                                           \
        BINARY_CASE(T, TG_MUL, X * Y)                                           \
        BINARY_CASE(T, TG_DIV, X / Y)                                           \
        POW_CASE(T, SUF, POW)                                                   \
        BINARY_CASE(T, TG_MAX, (!ISNAN(X) && (ISNAN(Y) || Y > X)) ? Y : X)       \
        BINARY_CASE(T, TG_MIN, (!ISNAN(X) && (ISNAN(Y) || Y < X)) ? Y : X)       \
        TANH_GRAD_CASE(T, SUF)                                                  \
        BINARY_CASE(T, TG_RELU_GRAD, Y <= (T)0 ? (T)0 : X)                      \
        BINARY_CASE(T, TG_SIGMOID_GRAD, (X * ((T)1 - Y)) * Y)                   \
        GELU_GRAD_CASE_##SUF                                                    \
        CHUNKED_BINARY(T, TG_GELU_TANH_GRAD,                                    \
                       (T)(-2 * TG_GELU_BETA) * (Y + (T)TG_GELU_KAPPA * (Y * Y) * Y), \
                       VM(exp, SUF), (T)0, vm_none_##SUF,                       \
                       gelu_tanh_grad_##T(X, Y, (T)1 / ((T)1 + E1)))            \
        SILU_GRAD_CASE(T, SUF)                                                  \
        CHUNKED_BINARY(T, TG_SIN_GRAD, Y, VM(cos, SUF), (T)0, vm_none_##SUF, X * E1) \
        CHUNKED_BINARY(T, TG_COS_GRAD, Y, VM(sin, SUF), (T)0, vm_none_##SUF, X * -E1) \
        CHUNKED_BINARY(T, TG_ERF_GRAD, -(Y * Y), VM(exp, SUF), (T)0, vm_none_##SUF, \
                       (X * (T)TG_2_SQRTPI) * E1)                               \
        BINARY_CASE(T, TG_SQRT_GRAD, X / (Y * (T)2))                            \
        BINARY_CASE(T, TG_RSQRT_GRAD, (X * (T)-0.5) * ((Y * Y) * Y))            \
        BINARY_CASE(T, TG_EXPM1_GRAD, X * (Y + (T)1))                           \
        BINARY_CASE(T, TG_LOG1P_GRAD, X / (Y + (T)1))                           \
        BINARY_CASE(T, TG_MUL_ACC, out[i] + X * Y)                              \
        default: return -1;                                                     \
    }

/* The fused gradients' final steps from s (above), one per element type. */
#define FUSED_HELPERS(T)                                                        \
    static inline T gelu_tanh_grad_##T(T g, T x, T s)                           \
    {                                                                           \
        return g * (s + (T)2 * x * s * ((T)1 - s) * (T)TG_GELU_BETA              \
                        * ((T)1 + (T)(3 * TG_GELU_KAPPA) * (x * x)));            \
    }                                                                           \
    static inline T silu_grad_##T(T g, T x, T s)                                \
    {                                                                           \
        return g * s * ((T)1 + x * ((T)1 - s));                                 \
    }

FUSED_HELPERS(double)
FUSED_HELPERS(float)

KERNEL_VARIANTS(binary_f64, (int op, ptrdiff_t n, const double *a, ptrdiff_t sa,
                const double *b, ptrdiff_t sb, double *out),
                BINARY_BODY(double, f64, pow, isnan), (op, n, a, sa, b, sb, out))

KERNEL_VARIANTS(binary_f32, (int op, ptrdiff_t n, const float *a, ptrdiff_t sa,
                const float *b, ptrdiff_t sb, float *out),
                BINARY_BODY(float, f32, powf, isnan), (op, n, a, sa, b, sb, out))

#define UNARY_CASE(T, CODE, EXPR)                                               \
    case CODE:                                                                  \
        for (ptrdiff_t i = 0; i < n; i++) { T X = a[i]; out[i] = (EXPR); }      \
        return 0;

#define VM_CASE(CODE, FN)                                                       \
    case CODE:                                                                  \
        FN(a, out, (size_t)n);                                                  \
        return 0;

/* E1 = FN(PRE) staged in a chunk, then EXPR (X the input, E1 the kernel's result). */
#define CHUNKED_UNARY(T, SUF, CODE, PRE, FN, EXPR)                              \
    case CODE: CHUNKED(T, LOAD_X, PRE, FN, (T)0, vm_none_##SUF, EXPR)

/* The unary ops that are one vecmath function over the whole array (no expression around it). */
#define UNARY_VM_CASES(SUF)                                                     \
        VM_CASE(TG_EXP, VM(exp, SUF))                                           \
        VM_CASE(TG_LOG, VM(log, SUF))                                           \
        VM_CASE(TG_TANH, VM(tanh, SUF))                                         \
        VM_CASE(TG_SIGMOID, VM(sigmoid, SUF))                                   \
        VM_CASE(TG_SIN, VM(sin, SUF))                                           \
        VM_CASE(TG_COS, VM(cos, SUF))                                           \
        VM_CASE(TG_LOG1P, VM(log1p, SUF))                                       \
        VM_CASE(TG_EXPM1, VM(expm1, SUF))                                       \
        VM_CASE(TG_ERF, VM(erf, SUF))                                           \
        VM_CASE(TG_SILU, VM(silu, SUF))

/* sign is PyTorch's (0 < x) - (x < 0): 0 for NaN and for -0 (branch-free, so it vectorises).
 * gelu_tanh is 0.5 x (1 + tanh u) written as x sigmoid(2u) = x / (1 + e^(-2u)). */
#define UNARY_BODY(T, SUF, SQRT, FABS)                                          \
    switch (op) {                                                               \
        UNARY_VM_CASES(SUF)                                                     \
        UNARY_CASE(T, TG_NEG, -X)                                               \
        UNARY_CASE(T, TG_RELU, X < (T)0 ? (T)0 : X)                             \
        UNARY_CASE(T, TG_SQRT, SQRT(X))                                         \
        UNARY_CASE(T, TG_ABS, FABS(X))                                          \
        UNARY_CASE(T, TG_RSQRT, (T)1 / SQRT(X))                                 \
        UNARY_CASE(T, TG_SQUARE, X * X)                                         \
        UNARY_CASE(T, TG_RECIPROCAL, (T)1 / X)                                  \
        UNARY_CASE(T, TG_SIGN, (T)(X > (T)0) - (T)(X < (T)0))                   \
        GELU_CASE_##SUF                                                         \
        CHUNKED_UNARY(T, SUF, TG_GELU_TANH,                                          \
                      (T)(-2 * TG_GELU_BETA) * (X + (T)TG_GELU_KAPPA * X * X * X), \
                      VM(exp, SUF), X / ((T)1 + E1))                            \
        default: return -1;                                                     \
    }

/* UNARY_VM_CASES alone, which tg_unary_f64 / tg_unary_f32 try first: the vecmath function is
 * chosen by its own level, so the level's variant of unary_f64 (its dispatch, and the prologue of
 * a function whose other cases stage chunks on the stack) only cost a one-element sin ~40
 * instructions on the way to the same call. */
#define UNARY_VM(T, SUF)                                                        \
    static int unary_vm_##SUF(int op, ptrdiff_t n, const T *a, T *out)         \
    {                                                                           \
        switch (op) {                                                           \
            UNARY_VM_CASES(SUF)                                                 \
            default: return -1;                                                 \
        }                                                                       \
    }
UNARY_VM(double, f64)
UNARY_VM(float, f32)

KERNEL_VARIANTS(unary_f64, (int op, ptrdiff_t n, const double *a, double *out),
                UNARY_BODY(double, f64, sqrt, fabs), (op, n, a, out))

KERNEL_VARIANTS(unary_f32, (int op, ptrdiff_t n, const float *a, float *out),
                UNARY_BODY(float, f32, sqrtf, fabsf), (op, n, a, out))

/* Parameterised ops.  X is the input x (forward) or the saved input (gradients), G the upstream
 * gradient, P0 and P1 the parameters; expressions mirror PyTorch's CPU kernels. */
/* elu, softplus and their gradients: vecmath's one-pass kernels (vecmath.h gives the formulas). */
#define VM_PARAM_CASE(CODE, CALL)                                               \
    case CODE:                                                                  \
        CALL;                                                                   \
        return 0;
#define PARAM_CASE(T, CODE, EXPR)                                               \
    case CODE:                                                                  \
        for (ptrdiff_t i = 0; i < n; i++) { T X = a[i]; out[i] = (EXPR); }      \
        return 0;
#define PARAM_GRAD_CASE(T, CODE, EXPR)                                          \
    case CODE:                                                                  \
        for (ptrdiff_t i = 0; i < n; i++) { T G = a[i], X = b[i]; out[i] = (EXPR); } \
        return 0;

/* c ? a : b as a bit mask over both arms (they are arguments, so both are evaluated anyway).  A
 * plain ?: is not enough: GCC's default -ftrapping-math forbids it to speculate a floating-point
 * operation of an arm, so `x > 0 ? x : x * p` may stay a branch per element, which mispredicts on
 * mixed signs (elu at 1e6 randn: ~10 ms against ~1.5 ms on one-signed input).  The masks keep
 * the loops branch-free and let -O3 vectorise them. */
#define PICK_FUNCTION(T, U)                                                     \
    static inline T pick_##T(int c, T a, T b)                                   \
    {                                                                           \
        U ua, ub, m = (U)0 - (U)(c != 0);                                       \
        memcpy(&ua, &a, sizeof ua);                                             \
        memcpy(&ub, &b, sizeof ub);                                             \
        ua = (ua & m) | (ub & ~m);                                              \
        memcpy(&a, &ua, sizeof a);                                              \
        return a;                                                               \
    }
PICK_FUNCTION(double, uint64_t)
PICK_FUNCTION(float, uint32_t)

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

#define PARAM_BODY(T, SUF)                                                      \
    switch (op) {                                                               \
        PARAM_CASE(T, TG_LEAKY_RELU, pick_##T(X > (T)0, X, X * P0))             \
        PARAM_GRAD_CASE(T, TG_LEAKY_RELU_GRAD, pick_##T(X > (T)0, G, G * P0))   \
        VM_PARAM_CASE(TG_ELU, VM(elu, SUF)(a, P0, P1, out, (size_t)n))          \
        VM_PARAM_CASE(TG_ELU_GRAD, VM(elu_grad, SUF)(a, b, P0, P1, out, (size_t)n)) \
        VM_PARAM_CASE(TG_SOFTPLUS, VM(softplus, SUF)(a, P0, P1, out, (size_t)n)) \
        VM_PARAM_CASE(TG_SOFTPLUS_GRAD,                                         \
                      VM(softplus_grad, SUF)(a, b, P0, P1, out, (size_t)n))     \
        PARAM_CASE(T, TG_CLAMP, clamp_##T(X, P0, P1))                           \
        PARAM_GRAD_CASE(T, TG_CLAMP_GRAD, (P0 <= X && X <= P1) ? G : (T)0)      \
        default: return -1;                                                     \
    }

KERNEL_VARIANTS(param_f64, (int op, ptrdiff_t n, const double *a, const double *b,
                double P0, double P1, double *out),
                PARAM_BODY(double, f64), (op, n, a, b, P0, P1, out))

KERNEL_VARIANTS(param_f32, (int op, ptrdiff_t n, const float *a, const float *b,
                float P0, float P1, float *out),
                PARAM_BODY(float, f32), (op, n, a, b, P0, P1, out))

/* ---- the public entry points: big arrays split over the thread pool -------------------------
 * Every op above computes element i from the operands' element i alone, so any split gives the
 * same result.  Below the thresholds a split costs more than it saves (waking a worker is a few
 * microseconds); memory-bound arithmetic needs more elements to pay for it than the functions
 * that evaluate a polynomial per element.  Parts start at multiples of TG_PART_ALIGN elements
 * (whole cache lines of both dtypes when the arrays are aligned). */
#define TG_PAR_MIN_ARITH 131072
#define TG_PAR_MIN_MATH 16384
#define TG_PART_ALIGN 64

static int unary_is_arith(int op)
{
    return op == TG_NEG || op == TG_RELU || op == TG_ABS || op == TG_SQUARE || op == TG_SIGN
           || op == TG_SQRT || op == TG_RSQRT || op == TG_RECIPROCAL;
}

static int binary_is_arith(int op)
{
    return op != TG_POW && op != TG_GELU_GRAD && op != TG_GELU_TANH_GRAD && op != TG_SILU_GRAD
           && op != TG_SIN_GRAD && op != TG_COS_GRAD && op != TG_ERF_GRAD;
}

static int param_is_arith(int op)
{
    return op == TG_LEAKY_RELU || op == TG_LEAKY_RELU_GRAD || op == TG_CLAMP
           || op == TG_CLAMP_GRAD;
}

typedef struct {
    int op;
    const void *a, *b;
    ptrdiff_t sa, sb;
    double p0, p1;
    void *out;
} tg_job;

#define JOB_RANGE(NAME, T, CALL)                                                \
    static void NAME(void *ctx, ptrdiff_t begin, ptrdiff_t end)                 \
    {                                                                           \
        const tg_job *j = (const tg_job *)ctx;                                  \
        const T *a = (const T *)j->a + begin * j->sa;                           \
        const T *b = j->b ? (const T *)j->b + begin * j->sb : NULL;             \
        T *out = (T *)j->out + begin;                                           \
        (void)b;                                                                \
        CALL;                                                                   \
    }
JOB_RANGE(unary_range_f64, double, unary_f64(j->op, end - begin, a, out))
JOB_RANGE(unary_range_f32, float, unary_f32(j->op, end - begin, a, out))
JOB_RANGE(binary_range_f64, double, binary_f64(j->op, end - begin, a, j->sa, b, j->sb, out))
JOB_RANGE(binary_range_f32, float, binary_f32(j->op, end - begin, a, j->sa, b, j->sb, out))
JOB_RANGE(param_range_f64, double, param_f64(j->op, end - begin, a, b, j->p0, j->p1, out))
JOB_RANGE(param_range_f32, float,
          param_f32(j->op, end - begin, a, b, (float)j->p0, (float)j->p1, out))

/* Split only valid ops (an unknown one returns -1 from the serial call, as documented). */
#define TG_MIN_PARALLEL(IS_ARITH, op) ((IS_ARITH)(op) ? TG_PAR_MIN_ARITH : TG_PAR_MIN_MATH)

/* The four arithmetic ops on a few elements (fewer than one AVX2 vector of floats), in plain
 * scalar code before the level dispatch: the vectorised variants' loop setup (overlap checks,
 * vector body, epilogue) and the jump into their large switch cost more than the arithmetic,
 * which is what a one-element tensor op does.  BINARY_LOOPS, so the same operations and bits. */
#define TG_TINY 8
#define TINY_ARITH(op) ((op) == TG_ADD || (op) == TG_SUB || (op) == TG_MUL || (op) == TG_DIV)
#define BINARY_TINY(T, SUF)                                                     \
    static int binary_tiny_##SUF(int op, ptrdiff_t n, const T *a, ptrdiff_t sa, \
                                 const T *b, ptrdiff_t sb, T *out)              \
    {                                                                           \
        switch (op) {                                                           \
            BINARY_CASE(T, TG_ADD, X + Y)                                       \
            BINARY_CASE(T, TG_SUB, X - Y)                                       \
            BINARY_CASE(T, TG_MUL, X * Y)                                       \
            BINARY_CASE(T, TG_DIV, X / Y)                                       \
            default: return -1;                                                 \
        }                                                                       \
    }
BINARY_TINY(double, f64)
BINARY_TINY(float, f32)

int tg_binary_f64(int op, ptrdiff_t n, const double *a, ptrdiff_t sa, const double *b,
                  ptrdiff_t sb, double *out)
{
    if (n < TG_TINY && TINY_ARITH(op)) return binary_tiny_f64(op, n, a, sa, b, sb, out);
    if (POW_GENERAL(op, sa, sb, double, b) && n < TG_PAR_MIN_MATH) {
        tg_vm_pow_f64(a, b[0], out, (size_t)n);
        return 0;
    }
    if (op < 0 || op >= TG_N_BINARY || n < TG_PAR_MIN_MATH)
        return binary_f64(op, n, a, sa, b, sb, out);
    tg_job j = { op, a, b, sa, sb, 0, 0, out };
    tg_parallel_for(n, TG_MIN_PARALLEL(binary_is_arith, op), TG_PART_ALIGN, binary_range_f64, &j);
    return 0;
}

int tg_binary_f32(int op, ptrdiff_t n, const float *a, ptrdiff_t sa, const float *b,
                  ptrdiff_t sb, float *out)
{
    if (n < TG_TINY && TINY_ARITH(op)) return binary_tiny_f32(op, n, a, sa, b, sb, out);
    if (POW_GENERAL(op, sa, sb, float, b) && n < TG_PAR_MIN_MATH) {
        tg_vm_pow_f32(a, b[0], out, (size_t)n);
        return 0;
    }
    if (op < 0 || op >= TG_N_BINARY || n < TG_PAR_MIN_MATH)
        return binary_f32(op, n, a, sa, b, sb, out);
    tg_job j = { op, a, b, sa, sb, 0, 0, out };
    tg_parallel_for(n, TG_MIN_PARALLEL(binary_is_arith, op), TG_PART_ALIGN, binary_range_f32, &j);
    return 0;
}

int tg_unary_f64(int op, ptrdiff_t n, const double *a, double *out)
{
    if (n < TG_PAR_MIN_MATH && unary_vm_f64(op, n, a, out) == 0) return 0;
    if (op < 0 || op >= TG_N_UNARY || n < TG_PAR_MIN_MATH) return unary_f64(op, n, a, out);
    tg_job j = { op, a, NULL, 1, 0, 0, 0, out };
    tg_parallel_for(n, TG_MIN_PARALLEL(unary_is_arith, op), TG_PART_ALIGN, unary_range_f64, &j);
    return 0;
}

int tg_unary_f32(int op, ptrdiff_t n, const float *a, float *out)
{
    if (n < TG_PAR_MIN_MATH && unary_vm_f32(op, n, a, out) == 0) return 0;
    if (op < 0 || op >= TG_N_UNARY || n < TG_PAR_MIN_MATH) return unary_f32(op, n, a, out);
    tg_job j = { op, a, NULL, 1, 0, 0, 0, out };
    tg_parallel_for(n, TG_MIN_PARALLEL(unary_is_arith, op), TG_PART_ALIGN, unary_range_f32, &j);
    return 0;
}

void tg_sincos_f64(ptrdiff_t n, const double *x, double *s, double *c)
{
    VM(sincos, f64)(x, s, c, (size_t)n);
}

void tg_sincos_f32(ptrdiff_t n, const float *x, float *s, float *c)
{
    VM(sincos, f32)(x, s, c, (size_t)n);
}

int tg_param_f64(int op, ptrdiff_t n, const double *a, const double *b, double p0, double p1,
                 double *out)
{
    if (op < 0 || op >= TG_N_PARAM || n < TG_PAR_MIN_MATH)
        return param_f64(op, n, a, b, p0, p1, out);
    tg_job j = { op, a, b, 1, 1, p0, p1, out };
    tg_parallel_for(n, TG_MIN_PARALLEL(param_is_arith, op), TG_PART_ALIGN, param_range_f64, &j);
    return 0;
}

int tg_param_f32(int op, ptrdiff_t n, const float *a, const float *b, float p0, float p1,
                 float *out)
{
    if (op < 0 || op >= TG_N_PARAM || n < TG_PAR_MIN_MATH)
        return param_f32(op, n, a, b, p0, p1, out);
    tg_job j = { op, a, b, 1, 1, p0, p1, out };
    tg_parallel_for(n, TG_MIN_PARALLEL(param_is_arith, op), TG_PART_ALIGN, param_range_f32, &j);
    return 0;
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

/* acc[i] += a[i] * b[i], the product rounded, then the sum (a scatter of interpolate's tap
 * gradients, _tap_sum.py).  Compiled for the baseline target, which has no fused multiply-add
 * the compiler could contract the two into. */
void tg_madd_unfused_f32(ptrdiff_t n, const float *a, const float *b, float *acc)
{
    for (ptrdiff_t i = 0; i < n; i++) {
        const float p = a[i] * b[i];
        acc[i] = acc[i] + p;
    }
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
        T res = -0.0;   /* the additive identity that keeps a sum of -0s at -0 (see below) */  \
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

/* The pairwise sums start from -0, the identity that changes no value: only a sum of zeros that
 * are all -0 stays -0 there, and adding numpy's identity +0 here turns that into +0. */
float tg_sum_f32(ptrdiff_t n, const float *a) { float zero = 0; return zero + pairwise_f32(a, n); }
double tg_sum_f64(ptrdiff_t n, const double *a) { double zero = 0; return zero + pairwise_f64(a, n); }

/* Row-wise softmax / log_softmax of a C-contiguous rows x cols matrix, the numpy formula of the
 * general path: m = max(x) (a NaN anywhere makes the row NaN), s = sum(exp(x - m)) in np.add.reduce's order, then
 * exp(x - m) / s or (x - m) - log(s).  The shifted row is staged in `out` and exponentiated there
 * by the vectorised exp of tapegrad.exp (vecmath: within 1 ulp, and PyTorch's exp's bits in ~98%
 * of float32 inputs where numpy's float32 exp has them in ~61%), so any size runs here: one pass
 * for the max, one for the exponentials, the sum, one for the result (numpy's formula took five
 * passes and three temporaries, ~3x PyTorch's time on a 64 x 1000 batch). */
/* The row's largest value, in eight independent lanes the compiler keeps in vector registers.
 * A NaN is not looked for: it makes the row's sum of exponentials NaN, and so every output of
 * the row, as the NaN-propagating max of the numpy formula does. */
#define ROW_MAX(T)                                                                            \
static inline T ROW_MAX_##T(const T *x, ptrdiff_t n)                                         \
{                                                                                             \
    T lane[8];                                                                                \
    ptrdiff_t i = 0;                                                                          \
    int k;                                                                                    \
    for (k = 0; k < 8; k++) lane[k] = x[0];                                                   \
    for (; i + 8 <= n; i += 8)                                                                \
        for (k = 0; k < 8; k++) lane[k] = x[i + k] > lane[k] ? x[i + k] : lane[k];            \
    for (; i < n; i++) lane[0] = x[i] > lane[0] ? x[i] : lane[0];                             \
    for (k = 1; k < 8; k++) lane[0] = lane[k] > lane[0] ? lane[k] : lane[0];                  \
    return lane[0];                                                                           \
}
ROW_MAX(float)
ROW_MAX(double)

/* Rows are taken in blocks of about SOFTMAX_BLOCK elements (at most SOFTMAX_BLOCK_ROWS rows),
 * so one call of the vectorised exp covers a block of short rows and the block stays in cache
 * between the passes. */
#define SOFTMAX_BLOCK 4096
#define SOFTMAX_BLOCK_ROWS 256
#define SOFTMAX_ROWS(T, NAME, SUM, VEXP, LOG)                                                  \
void NAME(int log_, ptrdiff_t rows, ptrdiff_t cols, const T *x, T *out)                       \
{                                                                                             \
    T m[SOFTMAX_BLOCK_ROWS];                                                                  \
    ptrdiff_t block = SOFTMAX_BLOCK / cols;                                                   \
    if (block < 1) block = 1;                                                                 \
    if (block > SOFTMAX_BLOCK_ROWS) block = SOFTMAX_BLOCK_ROWS;                               \
    for (ptrdiff_t r0 = 0; r0 < rows; r0 += block) {                                          \
        const ptrdiff_t nr = rows - r0 < block ? rows - r0 : block;                           \
        const T *xb = x + r0 * cols;                                                          \
        T *ob = out + r0 * cols;                                                              \
        for (ptrdiff_t r = 0; r < nr; r++) {                                                  \
            m[r] = ROW_MAX_##T(xb + r * cols, cols);                                          \
            for (ptrdiff_t j = 0; j < cols; j++) ob[r * cols + j] = xb[r * cols + j] - m[r];  \
        }                                                                                     \
        VEXP(ob, ob, (size_t)(nr * cols));                                                    \
        for (ptrdiff_t r = 0; r < nr; r++) {                                                  \
            const T *xr = xb + r * cols;                                                      \
            T *orow = ob + r * cols;                                                          \
            T s = SUM(cols, orow);                                                            \
            if (log_) {                                                                       \
                T ls = LOG(s);                                                                \
                for (ptrdiff_t j = 0; j < cols; j++) orow[j] = (xr[j] - m[r]) - ls;           \
            } else {                                                                          \
                for (ptrdiff_t j = 0; j < cols; j++) orow[j] = orow[j] / s;                   \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
}
SOFTMAX_ROWS(float, tg_softmax_rows_f32, tg_sum_f32, tg_vm_exp_f32, logf)
SOFTMAX_ROWS(double, tg_softmax_rows_f64, tg_sum_f64, tg_vm_exp_f64, log)

/* Their VJPs, row by row (g the output's adjoint, y the saved output), PyTorch's formulas:
 *   softmax      out = y (g - sum(g y))        (g y staged in `out`)
 *   log_softmax  out = g - exp(y) sum(g)
 * The row sums have no +0 identity added (pairwise_*, which starts from -0), as PyTorch's kernel
 * sums a row from its elements: a row whose adjoints are all -0 (a masked row of -(y * mask))
 * then has the sum -0 and the gradient -0 - (-0) = +0, where a +0 sum would leave -0 (a visible
 * "-0." where PyTorch prints "0."). */
#define SOFTMAX_GRAD_ROWS(T, NAME, SUM, VEXP)                                                  \
void NAME(int log_, ptrdiff_t rows, ptrdiff_t cols, const T *g, const T *y, T *out)           \
{                                                                                             \
    if (log_) VEXP(y, out, (size_t)(rows * cols));       /* exp(y), the forward's exp */   \
    for (ptrdiff_t r = 0; r < rows; r++, g += cols, y += cols, out += cols) {                 \
        if (log_) {                                                                           \
            T s = SUM(g, cols);                                                               \
            for (ptrdiff_t j = 0; j < cols; j++) out[j] = g[j] - out[j] * s;                  \
        } else {                                                                              \
            for (ptrdiff_t j = 0; j < cols; j++) out[j] = g[j] * y[j];                        \
            T s = SUM(out, cols);                                                             \
            for (ptrdiff_t j = 0; j < cols; j++) out[j] = y[j] * (g[j] - s);                  \
        }                                                                                     \
    }                                                                                         \
}
SOFTMAX_GRAD_ROWS(float, tg_softmax_grad_rows_f32, pairwise_f32, tg_vm_exp_f32)
SOFTMAX_GRAD_ROWS(double, tg_softmax_grad_rows_f64, pairwise_f64, tg_vm_exp_f64)

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
TRANSPOSE(uint64_t, tg_transpose_8)

#if defined(__SSE2__)
#include <emmintrin.h>
/* 4-byte elements in 4 x 4 blocks transposed in registers (SSE2, the x86-64 baseline): the plain
 * tile loop above copies one element per load and store, ~1 ns an element here (15 us of the MLP
 * benchmark's 64 x 256 layer output, a twentieth of its step); the blocks copy four per load and
 * store.  A copy: the same bits whichever loop moves them. */
void tg_transpose_4(ptrdiff_t rows, ptrdiff_t cols, const uint32_t *src, uint32_t *dst)
{
    for (ptrdiff_t i0 = 0; i0 < rows; i0 += TRANSPOSE_TILE) {
        const ptrdiff_t i1 = i0 + TRANSPOSE_TILE < rows ? i0 + TRANSPOSE_TILE : rows;
        const ptrdiff_t i4 = i0 + ((i1 - i0) & ~(ptrdiff_t)3);
        for (ptrdiff_t j0 = 0; j0 < cols; j0 += TRANSPOSE_TILE) {
            const ptrdiff_t j1 = j0 + TRANSPOSE_TILE < cols ? j0 + TRANSPOSE_TILE : cols;
            const ptrdiff_t j4 = j0 + ((j1 - j0) & ~(ptrdiff_t)3);
            for (ptrdiff_t i = i0; i < i4; i += 4) {
                for (ptrdiff_t j = j0; j < j4; j += 4) {
                    const uint32_t *s = src + i * cols + j;
                    __m128i r0 = _mm_loadu_si128((const __m128i *)s);
                    __m128i r1 = _mm_loadu_si128((const __m128i *)(s + cols));
                    __m128i r2 = _mm_loadu_si128((const __m128i *)(s + 2 * cols));
                    __m128i r3 = _mm_loadu_si128((const __m128i *)(s + 3 * cols));
                    __m128i t0 = _mm_unpacklo_epi32(r0, r1), t1 = _mm_unpackhi_epi32(r0, r1);
                    __m128i t2 = _mm_unpacklo_epi32(r2, r3), t3 = _mm_unpackhi_epi32(r2, r3);
                    uint32_t *d = dst + j * rows + i;
                    _mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi64(t0, t2));
                    _mm_storeu_si128((__m128i *)(d + rows), _mm_unpackhi_epi64(t0, t2));
                    _mm_storeu_si128((__m128i *)(d + 2 * rows), _mm_unpacklo_epi64(t1, t3));
                    _mm_storeu_si128((__m128i *)(d + 3 * rows), _mm_unpackhi_epi64(t1, t3));
                }
                for (ptrdiff_t j = j4; j < j1; j++)         /* the tile's last columns */
                    for (ptrdiff_t q = i; q < i + 4; q++)
                        dst[j * rows + q] = src[q * cols + j];
            }
            for (ptrdiff_t j = j0; j < j1; j++)             /* the tile's last rows */
                for (ptrdiff_t i = i4; i < i1; i++)
                    dst[j * rows + i] = src[i * cols + j];
        }
    }
}
#else
TRANSPOSE(uint32_t, tg_transpose_4)
#endif
