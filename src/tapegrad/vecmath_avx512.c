/* The AVX-512 level of vecmath: the algorithms of vecmath_impl.h on 8 double lanes (float32
 * kernels convert 8 floats at a time) and those of vecmath_f32n.h on 16 float lanes.  Every
 * operation of the abstractions is the same IEEE operation as the AVX2 level's (fused where that
 * one fuses), so a kernel written once gives the AVX2 level's bits here, twice as many lanes at a
 * time (sigmoid aside: faster algorithms of its own, below).  Compiled for the target by pragmas, as
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
/* Row i (two doubles) of each lane: even and odd lanes' rows as pairs in two registers (16-byte
 * loads, inserted), then unpacked within 128-bit blocks. */
static inline void vd_lookup2(const double *t, vi i, vd *a, vd *b)
{
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

/* vecmath_impl.h's float64 sigmoid loop is kept under another name: this level exports a faster
 * one (below), which calls its per-vector core, sigmoid_v64, for rare lanes only. */
#define tg_vm_sigmoid_f64_avx512 tg_vm_sigmoid_f64_avx512_generic
#define VM_UPPER_CLEAN() _mm256_zeroupper()   /* see VM_TAIL_COPY */
#include "vecmath_impl.h"
#undef tg_vm_sigmoid_f64_avx512

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

/* float32 sigmoid on 16 lanes, within 0.56 ulp (every float with |x| <= 87 checked against a
 * float64 reference: tools/sigmoid_f32_exhaustive.c) and about half the operations of
 * sigmoid_f32n (16-lane vectors cost twice a half-width one's issue slots on some CPUs that run
 * AVX-512, so the operation count is the time; the AVX2 level runs this scheme on an 8-entry
 * table, vecmath_avx2.c).  With a = -|x|:
 *
 *   e^a = 2^k E,  E = 2^(j/32) e^r in [1, 2),  a = (32 k + j) ln2/32 + r,  |r| <= ln2/64,
 *   sigmoid x = p / (p + E) for x >= 0 and E / (p + E) for x < 0,  p = 2^-k >= 1,
 *
 * so 2^k is never applied (the ratio does not need it).  2^(j/32) comes as a float pair hi + lo
 * out of a 32-entry table held in two registers (one permute each: no memory access), e^r - 1 as
 * r + r^2 (1/2 + r/6) (error ~2^-30.7), and E as the unnormalised pair hi + b, b = hi (e^r - 1) + lo
 * (|b| < 1.2% of hi, rounded at 2^-30).  The quotient: d = p + E rounded, dl its error (p >= E, so
 * p - d and (p - d) + hi are exact), y0 = num / d to 2^-14 by the reciprocal estimate, then one
 * correction step y0 + (num - y0 (d + dl)) / d with the numerator as the pair: its error is
 * ~2^-28, so the result is the float nearest to (num + numl) / (d + dl) up to that.
 * x < -87 (where e^a leaves the range the pair covers, the result is subnormal or, below
 * -88.72, PyTorch's 0) and NaN take sigmoid_f32n. */
static const float sigmoid_exp2_hi[32] = VM_EXP2_32_HI_F, sigmoid_exp2_lo[32] = VM_EXP2_32_LO_F;

static inline __m512 sigmoid_f32_x16(__m512 x, __m512 hi0, __m512 hi1, __m512 lo0, __m512 lo1)
{
    /* a = -min(|x|, 87): vrangeps, min of magnitudes (imm bits 1:0 = 10), sign set (bits 3:2 = 11) */
    __m512 a = _mm512_range_ps(x, _mm512_set1_ps(87.0f), 0x0E);
    __m512 t = _mm512_fmadd_ps(a, _mm512_set1_ps(VM_INV_LN2_32_F), _mm512_set1_ps(VF_MAGIC));
    __m512 n = _mm512_sub_ps(t, _mm512_set1_ps(VF_MAGIC));
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(VM_LN2_32_HI_F), a);  /* exact */
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(VM_LN2_32_LO_F), r);
    /* t's low 5 bits are j = n mod 32 (the permutes read only those) */
    __m512i tb = _mm512_castps_si512(t);
    __m512 th = _mm512_permutex2var_ps(hi0, tb, hi1);
    __m512 tl = _mm512_permutex2var_ps(lo0, tb, lo1);
    __m512 q = _mm512_fmadd_ps(r, _mm512_set1_ps(1.0f / 6.0f), _mm512_set1_ps(0.5f));
    __m512 em1 = _mm512_fmadd_ps(_mm512_mul_ps(r, r), q, r);
    __m512 b = _mm512_fmadd_ps(th, em1, tl);
    /* p = 2^-k, k = floor(n / 32): t's bits are those of VF_MAGIC plus n, so
     * (C - bits) >> 5 = 127 - k with C = bits(VF_MAGIC) + 127 * 32 + 31; then into the exponent. */
    __m512i pk = _mm512_srli_epi32(_mm512_sub_epi32(_mm512_set1_epi32(0x4B400000 + 127 * 32 + 31), tb), 5);
    __m512 p = _mm512_castsi512_ps(_mm512_slli_epi32(pk, 23));
    __m512 eh = _mm512_add_ps(th, b);
    __m512 d = _mm512_add_ps(p, eh);
    __m512 dl = _mm512_add_ps(_mm512_add_ps(_mm512_sub_ps(p, d), th), b);
    __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    __m512 rc = _mm512_rcp14_ps(d);
    __m512 y0 = _mm512_mul_ps(_mm512_mask_blend_ps(neg, p, eh), rc);
    __m512 num = _mm512_mask_blend_ps(neg, p, th), numl = _mm512_maskz_mov_ps(neg, b);
    __m512 res = _mm512_add_ps(_mm512_fnmadd_ps(y0, d, num), _mm512_fnmadd_ps(y0, dl, numl));
    __m512 y = _mm512_fmadd_ps(res, rc, y0);
    __mmask16 rare = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_NGE_UQ);  /* or NaN */
    if (rare) y = _mm512_mask_blend_ps(rare, y, sigmoid_f32n(x));
    return y;
}

/* float64 sigmoid: sigmoid_f32_x16's scheme on 8 double lanes, |x| <= 708 (beyond, and NaN:
 * sigmoid_v64, the AVX2 level's algorithm), with 2^(j/16) as a double pair out of a 16-entry
 * table (two registers each), e^r - 1 = r + r^2 P(r) to r^7 (|r| <= ln2/32, error ~2^-59.5), and
 * the quotient as the float64 kernels do it: y0 = num / d rounded (a division: one correction
 * step must leave ~2^-60), num = p or E rounded (E's rounding costs at most 1 ulp of the result,
 * inside the 2-ulp bound), corrected for d's rounding dl by the exact residual.  Within 2 ulp of
 * mpmath (tests/test_vecmath.py). */
static const double sigmoid_exp2_hi_f64[16] = VM_EXP2_16_HI, sigmoid_exp2_lo_f64[16] = VM_EXP2_16_LO;

static inline __m512d sigmoid_f64_x8(__m512d x, __m512d hi0, __m512d hi1, __m512d lo0, __m512d lo1)
{
    __m512d a = _mm512_range_pd(x, _mm512_set1_pd(708.0), 0x0E);   /* -min(|x|, 708) */
    __m512d t = _mm512_fmadd_pd(a, _mm512_set1_pd(VM_INV_LN2_16), _mm512_set1_pd(VM_MAGIC));
    __m512d n = _mm512_sub_pd(t, _mm512_set1_pd(VM_MAGIC));
    __m512d r = _mm512_fnmadd_pd(n, _mm512_set1_pd(VM_LN2_16_HI), a);  /* exact */
    r = _mm512_fnmadd_pd(n, _mm512_set1_pd(VM_LN2_16_LO), r);
    __m512i tb = _mm512_castpd_si512(t);                               /* low 4 bits: n mod 16 */
    __m512d th = _mm512_permutex2var_pd(hi0, tb, hi1);
    __m512d tl = _mm512_permutex2var_pd(lo0, tb, lo1);
    __m512d q = _mm512_set1_pd(1.0 / 5040);
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 720));
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 120));
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 24));
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 6));
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(0.5));
    __m512d em1 = _mm512_fmadd_pd(_mm512_mul_pd(r, r), q, r);
    __m512d b = _mm512_fmadd_pd(th, em1, tl);
    /* p = 2^-k, k = floor(n / 16), from t's bits (VM_MAGIC's plus n) */
    __m512i pk = _mm512_srli_epi64(
        _mm512_sub_epi64(_mm512_set1_epi64(0x4338000000000000LL + 1023 * 16 + 15), tb), 4);
    __m512d p = _mm512_castsi512_pd(_mm512_slli_epi64(pk, 52));
    __m512d eh = _mm512_add_pd(th, b);
    __m512d d = _mm512_add_pd(p, eh);
    __m512d dl = _mm512_add_pd(_mm512_add_pd(_mm512_sub_pd(p, d), th), b);
    __mmask8 neg = _mm512_cmp_pd_mask(x, _mm512_setzero_pd(), _CMP_LT_OQ);
    __m512d num = _mm512_mask_blend_pd(neg, p, eh);
    __m512d y0 = _mm512_div_pd(num, d);
    __m512d res = _mm512_fnmadd_pd(y0, dl, _mm512_fnmadd_pd(y0, d, num));
    __m512d y = _mm512_fmadd_pd(res, _mm512_rcp14_pd(d), y0);
    __mmask8 rare = _mm512_cmp_pd_mask(x, _mm512_set1_pd(-708.0), _CMP_NGE_UQ);  /* or NaN */
    if (rare) y = _mm512_mask_blend_pd(rare, y, sigmoid_v64(x));
    return y;
}

/* The loop of both sigmoids: the exp2 table in two register pairs, four vectors per iteration
 * (independent dependency chains), then single vectors, then the tail through a buffer. */
#define SIGMOID_LOOP(ELEM, VEC, W, LOAD_TABLE, LOAD, LOAD_PART, STORE, CORE, TABLE_HI, TABLE_LO)  \
    do {                                                                                       \
        const VEC hi0 = LOAD_TABLE(TABLE_HI), hi1 = LOAD_TABLE(TABLE_HI + (W));               \
        const VEC lo0 = LOAD_TABLE(TABLE_LO), lo1 = LOAD_TABLE(TABLE_LO + (W));               \
        size_t i = 0;                                                                          \
        for (; i + 4 * (W) <= n; i += 4 * (W)) {                                               \
            VEC a = CORE(LOAD(x + i), hi0, hi1, lo0, lo1);                                     \
            VEC b = CORE(LOAD(x + i + (W)), hi0, hi1, lo0, lo1);                               \
            VEC c = CORE(LOAD(x + i + 2 * (W)), hi0, hi1, lo0, lo1);                           \
            VEC d = CORE(LOAD(x + i + 3 * (W)), hi0, hi1, lo0, lo1);                           \
            STORE(y + i, a);                                                                   \
            STORE(y + i + (W), b);                                                             \
            STORE(y + i + 2 * (W), c);                                                         \
            STORE(y + i + 3 * (W), d);                                                         \
        }                                                                                      \
        for (; i + (W) <= n; i += (W)) STORE(y + i, CORE(LOAD(x + i), hi0, hi1, lo0, lo1));    \
        if (i < n) {                                                                           \
            ELEM buf[W];                                                                       \
            STORE(buf, CORE(LOAD_PART(x + i, n - i), hi0, hi1, lo0, lo1));                     \
            VM_TAIL_COPY(y + i, buf, n - i);                                                   \
        }                                                                                      \
    } while (0)

void tg_vm_sigmoid_f64_avx512(const double *x, double *y, size_t n)
{
    SIGMOID_LOOP(double, __m512d, VM_W, _mm512_loadu_pd, vd_load, vd_load_part, vd_store,
                 sigmoid_f64_x8, sigmoid_exp2_hi_f64, sigmoid_exp2_lo_f64);
}

void tg_vm_sigmoid_f32_avx512(const float *x, float *y, size_t n)
{
    SIGMOID_LOOP(float, __m512, VF_W, _mm512_loadu_ps, vf_loadu, vf_load_part, vf_storeu,
                 sigmoid_f32_x16, sigmoid_exp2_hi, sigmoid_exp2_lo);
}

#undef SIGMOID_LOOP

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
