/* The AVX2 + FMA level of vecmath: the algorithms of vecmath_impl.h on 4 double lanes (float32
 * kernels convert 4 floats at a time).  Compiled for that target by pragmas rather than build
 * flags, so the rest of the extension keeps the baseline ISA; vecmath.c calls into this file only
 * after checking the CPU. */
#include "vecmath_levels.h"

#if TG_VM_BUILD_AVX2

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC target("avx2,fma")
#endif

#define VM_W 4
#define VM_LEVEL_NAME avx2

typedef __m256d vd;
typedef __m256i vi;
typedef __m256d vm;

static inline vd vd_set(double c) { return _mm256_set1_pd(c); }
static inline vd vd_load(const double *p) { return _mm256_loadu_pd(p); }
static inline void vd_store(double *p, vd v) { _mm256_storeu_pd(p, v); }
static inline vd vd_load_f32(const float *p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
static inline void vd_store_f32(float *p, vd v) { _mm_storeu_ps(p, _mm256_cvtpd_ps(v)); }
static inline vd vd_add(vd a, vd b) { return _mm256_add_pd(a, b); }
static inline vd vd_sub(vd a, vd b) { return _mm256_sub_pd(a, b); }
static inline vd vd_mul(vd a, vd b) { return _mm256_mul_pd(a, b); }
static inline vd vd_div(vd a, vd b) { return _mm256_div_pd(a, b); }
static inline vd vd_fma(vd a, vd b, vd c) { return _mm256_fmadd_pd(a, b, c); }
static inline vd vd_fma_exact(vd a, vd b, vd c) { return _mm256_fmadd_pd(a, b, c); }
/* minpd/maxpd return the second operand when either is NaN, like the scalar a < b ? a : b. */
static inline vd vd_min(vd a, vd b) { return _mm256_min_pd(a, b); }
static inline vd vd_max(vd a, vd b) { return _mm256_max_pd(a, b); }
static inline vd vd_abs(vd a) { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), a); }
static inline vi vd_as_vi(vd a) { return _mm256_castpd_si256(a); }
static inline vd vi_as_vd(vi a) { return _mm256_castsi256_pd(a); }
static inline vd vd_and(vd a, vd b) { return _mm256_and_pd(a, b); }
static inline vd vd_or(vd a, vd b) { return _mm256_or_pd(a, b); }
static inline vd vd_xor(vd a, vd b) { return _mm256_xor_pd(a, b); }
static inline vm vd_lt(vd a, vd b) { return _mm256_cmp_pd(a, b, _CMP_LT_OQ); }
static inline vm vd_gt(vd a, vd b) { return _mm256_cmp_pd(a, b, _CMP_GT_OQ); }
static inline vm vd_eq(vd a, vd b) { return _mm256_cmp_pd(a, b, _CMP_EQ_OQ); }
static inline vm vd_isnan(vd a) { return _mm256_cmp_pd(a, a, _CMP_UNORD_Q); }
static inline vm vm_or(vm a, vm b) { return _mm256_or_pd(a, b); }
static inline int vm_any(vm m) { return _mm256_movemask_pd(m) != 0; }
static inline vd vd_select(vm m, vd a, vd b) { return _mm256_blendv_pd(b, a, m); }
static inline vi vi_set(uint64_t c) { return _mm256_set1_epi64x((long long)c); }
static inline vi vi_add(vi a, vi b) { return _mm256_add_epi64(a, b); }
static inline vi vi_and(vi a, vi b) { return _mm256_and_si256(a, b); }
static inline vi vi_or(vi a, vi b) { return _mm256_or_si256(a, b); }
static inline vi vi_shl(vi a, int k) { return _mm256_slli_epi64(a, k); }
static inline vi vi_shr(vi a, int k) { return _mm256_srli_epi64(a, k); }
static inline vm vi_eq(vi a, vi b) { return _mm256_castsi256_pd(_mm256_cmpeq_epi64(a, b)); }

#include "vecmath_impl.h"

#if defined(__clang__)
#pragma clang attribute pop
#endif

#else
/* ISO C forbids an empty translation unit. */
typedef int tg_vm_avx2_not_built;
#endif
