/* The AVX-512 level of vecmath: the algorithms of vecmath_impl.h on 8 double lanes (float32
 * kernels convert 8 floats at a time) and those of vecmath_f32n.h on 16 float lanes.  Every
 * operation of the abstractions is the same IEEE operation as the AVX2 level's (fused where that
 * one fuses), so a kernel written once gives the AVX2 level's bits here, twice as many lanes at a
 * time.  Compiled for the target by pragmas, as
 * vecmath_avx2.c; vecmath.c calls into this file only after checking the CPU and the OS. */
#include "vecmath_levels.h"

#if TG_VM_BUILD_AVX512

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma")
#endif

#define VM_W 8
#define VM_LEVEL_NAME avx512

typedef __m512d vd;
typedef __m512i vi;
typedef __mmask8 vm;

static inline vd vd_set(double c) { return _mm512_set1_pd(c); }
static inline vd vd_load(const double *p) { return _mm512_loadu_pd(p); }
static inline void vd_store(double *p, vd v) { _mm512_storeu_pd(p, v); }
static inline vd vd_load_f32(const float *p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }
static inline void vd_store_f32(float *p, vd v) { _mm256_storeu_ps(p, _mm512_cvtpd_ps(v)); }
static inline vd vd_round_f32(vd v) { return _mm512_cvtps_pd(_mm512_cvtpd_ps(v)); }
/* The first m < 8 elements; masked-off lanes load as 0 and are not read from memory. */
static inline vd vd_load_part(const double *p, size_t m)
{
    return _mm512_maskz_loadu_pd((__mmask8)((1u << m) - 1), p);
}
static inline vd vd_load_f32_part(const float *p, size_t m)
{
    return _mm512_cvtps_pd(_mm256_maskz_loadu_ps((__mmask8)((1u << m) - 1), p));
}
/* As vd_load_part and vd_load_f32_part with the other lanes 1 (pow: log 1 = 0 and e^0 = 1). */
static inline vd vd_load_part_one(const double *p, size_t m)
{
    return _mm512_mask_loadu_pd(_mm512_set1_pd(1.0), (__mmask8)((1u << m) - 1), p);
}
static inline vd vd_load_f32_part_one(const float *p, size_t m)
{
    return _mm512_cvtps_pd(_mm256_mask_loadu_ps(_mm256_set1_ps(1.0f), (__mmask8)((1u << m) - 1), p));
}
/* The first m < 8 lanes of v to p (nothing beyond p[m - 1] is written). */
static inline void vd_store_part(double *p, vd v, size_t m)
{
    _mm512_mask_storeu_pd(p, (__mmask8)((1u << m) - 1), v);
}
static inline void vd_store_f32_part(float *p, vd v, size_t m)
{
    _mm256_mask_storeu_ps(p, (__mmask8)((1u << m) - 1), _mm512_cvtpd_ps(v));
}
static inline vd vd_add(vd a, vd b) { return _mm512_add_pd(a, b); }
static inline vd vd_sub(vd a, vd b) { return _mm512_sub_pd(a, b); }
static inline vd vd_mul(vd a, vd b) { return _mm512_mul_pd(a, b); }
static inline vd vd_div(vd a, vd b) { return _mm512_div_pd(a, b); }
static inline vd vd_fma(vd a, vd b, vd c) { return _mm512_fmadd_pd(a, b, c); }
static inline vd vd_fnma(vd a, vd b, vd c) { return _mm512_fnmadd_pd(a, b, c); }
static inline vd vd_fnma_exact(vd a, vd b, vd c) { return _mm512_fnmadd_pd(a, b, c); }
static inline vd vd_fma_exact(vd a, vd b, vd c) { return _mm512_fmadd_pd(a, b, c); }
/* vminpd/vmaxpd return the second operand when either is NaN, as at the AVX2 level. */
static inline vd vd_min(vd a, vd b) { return _mm512_min_pd(a, b); }
static inline vd vd_max(vd a, vd b) { return _mm512_max_pd(a, b); }
static inline vd vd_abs(vd a) { return _mm512_andnot_pd(_mm512_set1_pd(-0.0), a); }
static inline vi vd_as_vi(vd a) { return _mm512_castpd_si512(a); }
static inline vd vi_as_vd(vi a) { return _mm512_castsi512_pd(a); }
static inline vd vd_and(vd a, vd b) { return _mm512_and_pd(a, b); }
static inline vd vd_or(vd a, vd b) { return _mm512_or_pd(a, b); }
static inline vd vd_xor(vd a, vd b) { return _mm512_xor_pd(a, b); }
static inline vm vd_lt(vd a, vd b) { return _mm512_cmp_pd_mask(a, b, _CMP_LT_OQ); }
static inline vm vd_gt(vd a, vd b) { return _mm512_cmp_pd_mask(a, b, _CMP_GT_OQ); }
static inline vm vd_eq(vd a, vd b) { return _mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ); }
static inline vm vd_isnan(vd a) { return _mm512_cmp_pd_mask(a, a, _CMP_UNORD_Q); }
static inline vm vm_or(vm a, vm b) { return (vm)(a | b); }
static inline vm vm_and(vm a, vm b) { return (vm)(a & b); }
static inline vm vm_andnot(vm a, vm b) { return (vm)(~a & b); }
static inline int vm_any(vm m) { return m != 0; }
static inline vd vd_select(vm m, vd a, vd b) { return _mm512_mask_blend_pd(m, b, a); }
static inline vi vi_set(uint64_t c) { return _mm512_set1_epi64((long long)c); }
static inline vi vi_add(vi a, vi b) { return _mm512_add_epi64(a, b); }
static inline vi vi_and(vi a, vi b) { return _mm512_and_si512(a, b); }
static inline vi vi_or(vi a, vi b) { return _mm512_or_si512(a, b); }
static inline vi vi_shl(vi a, int k) { return _mm512_slli_epi64(a, (unsigned)k); }
static inline vi vi_shr(vi a, int k) { return _mm512_srli_epi64(a, (unsigned)k); }
static inline vm vi_eq(vi a, vi b) { return _mm512_cmpeq_epi64_mask(a, b); }
/* The lanes of i as integers, moved out register to register: through a 64-byte store to the
 * stack, the loads that read them back waited for the store (no forwarding from it). */
static inline void vm_indices(vi i, int64_t idx[8])
{
    __m256i lo = _mm512_castsi512_si256(i), hi = _mm512_extracti64x4_epi64(i, 1);
    __m128i q0 = _mm256_castsi256_si128(lo), q1 = _mm256_extracti128_si256(lo, 1);
    __m128i q2 = _mm256_castsi256_si128(hi), q3 = _mm256_extracti128_si256(hi, 1);
    idx[0] = _mm_cvtsi128_si64(q0);
    idx[1] = _mm_extract_epi64(q0, 1);
    idx[2] = _mm_cvtsi128_si64(q1);
    idx[3] = _mm_extract_epi64(q1, 1);
    idx[4] = _mm_cvtsi128_si64(q2);
    idx[5] = _mm_extract_epi64(q2, 1);
    idx[6] = _mm_cvtsi128_si64(q3);
    idx[7] = _mm_extract_epi64(q3, 1);
}
/* Row i (four doubles) of each lane, transposed: eight 32-byte loads, paired into four registers
 * (rows j and j + 4), unpacked within 128-bit blocks and gathered across blocks by four
 * two-source permutes (cheaper than four 8-lane gathers). */
static inline void vd_lookup4(const double *t, vi i, vd *a, vd *b, vd *c, vd *d)
{
    int64_t idx[8];
    vm_indices(i, idx);
    vd r04 = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(t + 4 * idx[0])),
                                _mm256_loadu_pd(t + 4 * idx[4]), 1);
    vd r15 = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(t + 4 * idx[1])),
                                _mm256_loadu_pd(t + 4 * idx[5]), 1);
    vd r26 = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(t + 4 * idx[2])),
                                _mm256_loadu_pd(t + 4 * idx[6]), 1);
    vd r37 = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(t + 4 * idx[3])),
                                _mm256_loadu_pd(t + 4 * idx[7]), 1);
    /* lo01 = [r0a r1a r0c r1c | r4a r5a r4c r5c], hi01 the b and d columns; 23 / 67 alike */
    vd lo01 = _mm512_unpacklo_pd(r04, r15), hi01 = _mm512_unpackhi_pd(r04, r15);
    vd lo23 = _mm512_unpacklo_pd(r26, r37), hi23 = _mm512_unpackhi_pd(r26, r37);
    const __m512i first = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
    const __m512i second = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    *a = _mm512_permutex2var_pd(lo01, first, lo23);
    *b = _mm512_permutex2var_pd(hi01, first, hi23);
    *c = _mm512_permutex2var_pd(lo01, second, lo23);
    *d = _mm512_permutex2var_pd(hi01, second, hi23);
}
/* Row i (two doubles) of each lane: on CPUs whose gathers are fast (tg_vm_fast_gather), two
 * 8-lane gathers; else even and odd lanes' rows as pairs in two registers (16-byte loads,
 * inserted), then unpacked within 128-bit blocks.  The same values either way. */
static inline void vd_lookup2(const double *t, vi i, vd *a, vd *b)
{
    if (tg_vm_fast_gather) {
        vi i2 = _mm512_slli_epi64(i, 1);
        *a = _mm512_i64gather_pd(i2, t, 8);
        *b = _mm512_i64gather_pd(i2, t + 1, 8);
        return;
    }
    int64_t idx[8];
    vm_indices(i, idx);
#define VM_PAIR(j, k) _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(t + 2 * idx[j])), \
                                           _mm_loadu_pd(t + 2 * idx[k]), 1)
    vd even = _mm512_insertf64x4(_mm512_castpd256_pd512(VM_PAIR(0, 2)), VM_PAIR(4, 6), 1);
    vd odd = _mm512_insertf64x4(_mm512_castpd256_pd512(VM_PAIR(1, 3)), VM_PAIR(5, 7), 1);
#undef VM_PAIR
    *a = _mm512_unpacklo_pd(even, odd);
    *b = _mm512_unpackhi_pd(even, odd);
}
/* Entry i < 16 of two 16-entry columns: each column is two registers, one two-source permute
 * per column (no index leaves the vector unit; the loads are loop-invariant). */
static inline void vd_lookup16(const double *ta, const double *tb, vi i, vd *a, vd *b)
{
    *a = _mm512_permutex2var_pd(_mm512_loadu_pd(ta), i, _mm512_loadu_pd(ta + 8));
    *b = _mm512_permutex2var_pd(_mm512_loadu_pd(tb), i, _mm512_loadu_pd(tb + 8));
}

#define VM_UPPER_CLEAN() _mm256_zeroupper()   /* see VM_TAIL_COPY */
#include "vecmath_impl.h"

/* ---- native float32 kernels (vecmath_f32n.h) on 16 float lanes ------------------------------ */
typedef __m512 vf;
typedef __m512i vfi;
typedef __mmask16 vfm;
#define VF_W 16

static inline vf vf_set(float c) { return _mm512_set1_ps(c); }
static inline vf vf_loadu(const float *p) { return _mm512_loadu_ps(p); }
static inline void vf_storeu(float *p, vf v) { _mm512_storeu_ps(p, v); }
static inline vf vf_load_part(const float *p, size_t m)
{
    return _mm512_maskz_loadu_ps((__mmask16)((1u << m) - 1), p);
}
static inline vf vf_add(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf vf_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
static inline vf vf_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf vf_div(vf a, vf b) { return _mm512_div_ps(a, b); }
static inline vf vf_fma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
static inline vf vf_fnma(vf a, vf b, vf c) { return _mm512_fnmadd_ps(a, b, c); }
static inline vf vf_min(vf a, vf b) { return _mm512_min_ps(a, b); }
static inline vf vf_max(vf a, vf b) { return _mm512_max_ps(a, b); }
static inline vf vf_or(vf a, vf b) { return _mm512_or_ps(a, b); }
static inline vf vf_and(vf a, vf b) { return _mm512_and_ps(a, b); }
static inline vf vf_abs(vf a) { return _mm512_andnot_ps(_mm512_set1_ps(-0.0f), a); }
static inline vf vf_rcp(vf a) { return _mm512_rcp14_ps(a); }
static inline vf vf_bits(vfi v) { return _mm512_castsi512_ps(v); }
static inline vfi vf_as_int(vf v) { return _mm512_castps_si512(v); }
static inline vfm vf_lt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
static inline vfm vf_gt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
static inline vfm vf_eq(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
static inline vfm vf_isnan(vf a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
static inline vfm vfm_or(vfm a, vfm b) { return (vfm)(a | b); }
static inline int vfm_any(vfm m) { return m != 0; }
static inline vf vf_select(vfm m, vf a, vf b) { return _mm512_mask_blend_ps(m, b, a); }
static inline vf vf_keep(vfm m, vf v) { return _mm512_maskz_mov_ps(m, v); }
static inline vf vf_clear(vfm m, vf v) { return _mm512_maskz_mov_ps((vfm)~m, v); }
static inline vfi vfi_set(int32_t c) { return _mm512_set1_epi32(c); }
static inline vfi vfi_add(vfi a, vfi b) { return _mm512_add_epi32(a, b); }
static inline vfi vfi_sub(vfi a, vfi b) { return _mm512_sub_epi32(a, b); }
static inline vfi vfi_and(vfi a, vfi b) { return _mm512_and_si512(a, b); }
static inline vfi vfi_shl(vfi a, int k) { return _mm512_slli_epi32(a, (unsigned)k); }
static inline vfi vfi_shr(vfi a, int k) { return _mm512_srli_epi32(a, (unsigned)k); }
static inline vf vfi_to_vf(vfi a) { return _mm512_cvtepi32_ps(a); }
/* vpermps reads the low four bits of each lane of k (k <= 7: the column's 8 floats, loaded into
 * the low half) */
static inline vf vf_pick8(const float *column, vfi k)
{
    return _mm512_permutexvar_ps(k, _mm512_castps256_ps512(_mm256_loadu_ps(column)));
}

#include "vecmath_f32n.h"

/* erf: the AVX2 level's 8-lane kernel (its table lookup has no 16-lane form here; the same
 * bits). */
void tg_vm_erf_f32_avx512(const float *x, float *y, size_t n)
{
    tg_vm_erf_f32_avx2(x, y, n);
}

#if defined(__clang__)
#pragma clang attribute pop
#endif

#else
/* ISO C forbids an empty translation unit. */
typedef int tg_vm_avx512_not_built;
#endif
