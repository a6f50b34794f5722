/* Internal interface between vecmath.c (dispatch) and the per-level translation units
 * vecmath_scalar.c / vecmath_avx2.c, which instantiate vecmath_impl.h. */
#ifndef TAPEGRAD_VECMATH_LEVELS_H
#define TAPEGRAD_VECMATH_LEVELS_H

#include "vecmath.h"

#if defined(__FAST_MATH__)
/* The kernels rely on IEEE semantics: NaN tests, signed zeros and compensated (error-free)
 * additions that -ffast-math would reassociate away. */
#error "vecmath must be compiled without -ffast-math"
#endif

#if defined(_MSC_VER) && !defined(__cplusplus) && !defined(inline)
#define inline __inline /* MSVC's C mode before C11 */
#endif

/* The AVX2 level is built on x86-64 with compilers whose intrinsics we use (GCC, Clang, MSVC);
 * define TG_VM_NO_AVX2 to build the portable level only. */
#if (defined(__x86_64__) || defined(_M_X64)) && !defined(TG_VM_NO_AVX2) && \
    (defined(__GNUC__) || defined(__clang__) || defined(_MSC_VER))
#define TG_VM_BUILD_AVX2 1
#else
#define TG_VM_BUILD_AVX2 0
#endif

/* The AVX-512 level (F, DQ, VL, BW) is built where the AVX2 one is, with GCC or Clang (whose
 * __builtin_cpu_supports also checks that the OS saves the ZMM registers); define
 * TG_VM_NO_AVX512 to leave it out. */
#if TG_VM_BUILD_AVX2 && (defined(__GNUC__) || defined(__clang__)) && !defined(TG_VM_NO_AVX512)
#define TG_VM_BUILD_AVX512 1
#else
#define TG_VM_BUILD_AVX512 0
#endif

/* pow's one-lane path (vecmath_pow_one.c): where the AVX2 level is built by GCC or Clang, whose
 * target pragmas compile C99's fma() to one instruction (MSVC would call its CRT's). */
#if TG_VM_BUILD_AVX2 && (defined(__GNUC__) || defined(__clang__))
#define TG_VM_BUILD_POW_ONE 1
#else
#define TG_VM_BUILD_POW_ONE 0
#endif

/* Out of line: rare paths, whose code would otherwise be laid out (and its registers allocated)
 * among the common path's. */
#if defined(__GNUC__) || defined(__clang__)
#define TG_VM_NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define TG_VM_NOINLINE __declspec(noinline)
#else
#define TG_VM_NOINLINE
#endif

/* The level in use, -1 until the first call resolves it (vecmath.c). */
extern int tg_vm_active_level;

/* Whether the CPU's AVX-512 gathers are fast (set with the level, vecmath.c): the AVX-512 level's
 * table lookups (exp, sigmoid, pow) then gather, ~25% faster on Sapphire Rapids than the loads
 * and shuffles that serve CPUs where a gather is microcoded or slowed by the GDS mitigation. */
extern int tg_vm_fast_gather;

/* tg_vm_level() for the kernels' per-call dispatch: one load once resolved, inline, where the
 * exported function (kept for callers through an FFI) cost a call per kernel call. */
static inline int tg_vm_level_fast(void)
{
    int level = tg_vm_active_level;
    return level >= 0 ? level : tg_vm_level();
}

/* The function of a kernel (a TG_VM_KERNELS name) at `level`: what the public functions call
 * (vecmath.c's dispatch says why not a table), and what kernels.c calls directly. */
#if TG_VM_BUILD_AVX512
#define TG_VM_PICK(level, name, suffix)                                           \
    ((level) == TG_VM_AVX512 ? tg_vm_##name##_##suffix##_avx512 :                 \
     (level) == TG_VM_AVX2 ? tg_vm_##name##_##suffix##_avx2 : tg_vm_##name##_##suffix##_scalar)
#elif TG_VM_BUILD_AVX2
#define TG_VM_PICK(level, name, suffix) \
    ((level) == TG_VM_AVX2 ? tg_vm_##name##_##suffix##_avx2 : tg_vm_##name##_##suffix##_scalar)
#else
#define TG_VM_PICK(level, name, suffix) tg_vm_##name##_##suffix##_scalar
#endif

#define TG_VM_DECLARE_LEVEL(name, level)                                          \
    void tg_vm_##name##_f64_##level(const double *x, double *y, size_t n);        \
    void tg_vm_##name##_f32_##level(const float *x, float *y, size_t n);
#define TG_VM_DECLARE_SCALAR(name) TG_VM_DECLARE_LEVEL(name, scalar)
#define TG_VM_DECLARE_AVX2(name) TG_VM_DECLARE_LEVEL(name, avx2)
#define TG_VM_DECLARE_AVX512(name) TG_VM_DECLARE_LEVEL(name, avx512)
TG_VM_KERNELS(TG_VM_DECLARE_SCALAR)
#if TG_VM_BUILD_AVX2
TG_VM_KERNELS(TG_VM_DECLARE_AVX2)
#endif
#if TG_VM_BUILD_AVX512
TG_VM_KERNELS(TG_VM_DECLARE_AVX512)
#endif

#define TG_VM_DECLARE_ACT_LEVEL(name, level)                                                      \
    void tg_vm_##name##_f64_##level(const double *x, double p0, double p1, double *y, size_t n); \
    void tg_vm_##name##_f32_##level(const float *x, float p0, float p1, float *y, size_t n);
#define TG_VM_DECLARE_ACT_GRAD_LEVEL(name, level)                                                 \
    void tg_vm_##name##_f64_##level(const double *g, const double *x, double p0, double p1,      \
                                    double *out, size_t n);                                       \
    void tg_vm_##name##_f32_##level(const float *g, const float *x, float p0, float p1,          \
                                    float *out, size_t n);
#define TG_VM_DECLARE_ACTS(level)                                                                 \
    TG_VM_DECLARE_ACT_LEVEL(elu, level) TG_VM_DECLARE_ACT_LEVEL(softplus, level)                 \
    TG_VM_DECLARE_ACT_GRAD_LEVEL(elu_grad, level) TG_VM_DECLARE_ACT_GRAD_LEVEL(softplus_grad, level) \
    TG_VM_DECLARE_ACT_GRAD_LEVEL(silu_grad, level)
TG_VM_DECLARE_ACTS(scalar)
#if TG_VM_BUILD_AVX2
TG_VM_DECLARE_ACTS(avx2)
#endif
#if TG_VM_BUILD_AVX512
TG_VM_DECLARE_ACTS(avx512)
void tg_vm_gelu_f32_avx512(const float *x, float *y, size_t n);
void tg_vm_gelu_grad_f32_avx512(const float *g, const float *x, float *out, size_t n);
#endif

void tg_vm_sincos_f64_scalar(const double *x, double *s, double *c, size_t n);
void tg_vm_sincos_f32_scalar(const float *x, float *s, float *c, size_t n);
void tg_vm_pow_f64_scalar(const double *x, double y, double *out, size_t n);
void tg_vm_pow_f32_scalar(const float *x, float y, float *out, size_t n);
#if TG_VM_BUILD_AVX2
void tg_vm_sincos_f64_avx2(const double *x, double *s, double *c, size_t n);
void tg_vm_sincos_f32_avx2(const float *x, float *s, float *c, size_t n);
void tg_vm_pow_f64_avx2(const double *x, double y, double *out, size_t n);
void tg_vm_pow_f32_avx2(const float *x, float y, float *out, size_t n);
void tg_vm_gelu_f32_avx2(const float *x, float *y, size_t n);
void tg_vm_gelu_grad_f32_avx2(const float *g, const float *x, float *out, size_t n);
#endif
#if TG_VM_BUILD_POW_ONE
void tg_vm_pow_f64_one(const double *x, double y, double *out, size_t n);
void tg_vm_pow_f32_one(const float *x, float y, float *out, size_t n);
#endif
#if TG_VM_BUILD_AVX512
void tg_vm_sincos_f64_avx512(const double *x, double *s, double *c, size_t n);
void tg_vm_sincos_f32_avx512(const float *x, float *s, float *c, size_t n);
void tg_vm_pow_f64_avx512(const double *x, double y, double *out, size_t n);
void tg_vm_pow_f32_avx512(const float *x, float y, float *out, size_t n);
#endif
#define TG_VM_SQRT1_2F 0.70710678118654752440f
#define TG_VM_INV_SQRT_2PIF 0.39894228040143267794f

/* |x| above this goes through the exact (Payne-Hanek) reduction instead of Cody-Waite's. */
#define TG_VM_TRIG_HUGE 0x1p24

/* Payne-Hanek: x = (n + r / (pi/2)) * pi/2 with n an integer in {-3..3} (only n mod 4 matters)
 * and r = rhi + rlo, |r| <= pi/4 (to ~2^-70 relative).  For finite |x| > TG_VM_TRIG_HUGE;
 * infinities give r = NaN.  Scalar and rare, so shared by all levels. */
void tg_vm_rem_pio2_huge(double x, double *n, double *rhi, double *rlo);

#endif
