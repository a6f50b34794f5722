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
static inline vd vd_round_f32(vd v) { return _mm256_cvtps_pd(_mm256_cvtpd_ps(v)); }
/* Lane masks for the first m elements of a tail: 8 - m .. 15 - m (32-bit lanes), 4 - m .. 7 - m
 * (64-bit lanes).  Masked-off lanes load as 0 and are not read from memory. */
static const int32_t tail_mask32[16] = { -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0 };
static const int64_t tail_mask64[8] = { -1, -1, -1, -1, 0, 0, 0, 0 };
static inline vd vd_load_part(const double *p, size_t m)
{
    return _mm256_maskload_pd(p, _mm256_loadu_si256((const __m256i *)(tail_mask64 + 4 - m)));
}
static inline vd vd_load_f32_part(const float *p, size_t m)
{
    return _mm256_cvtps_pd(_mm_maskload_ps(p, _mm_loadu_si128((const __m128i *)(tail_mask32 + 8 - m))));
}
/* As vd_load_part and vd_load_f32_part with the other lanes 1 (pow: log 1 = 0 and e^0 = 1). */
static inline vd vd_load_part_one(const double *p, size_t m)
{
    __m256i mask = _mm256_loadu_si256((const __m256i *)(tail_mask64 + 4 - m));
    return _mm256_blendv_pd(_mm256_set1_pd(1.0), _mm256_maskload_pd(p, mask),
                            _mm256_castsi256_pd(mask));
}
static inline vd vd_load_f32_part_one(const float *p, size_t m)
{
    __m128i mask = _mm_loadu_si128((const __m128i *)(tail_mask32 + 8 - m));
    return _mm256_cvtps_pd(_mm_blendv_ps(_mm_set1_ps(1.0f), _mm_maskload_ps(p, mask),
                                         _mm_castsi128_ps(mask)));
}
/* The first m < 4 lanes of v to p (nothing beyond p[m - 1] is written). */
static inline void vd_store_part(double *p, vd v, size_t m)
{
    _mm256_maskstore_pd(p, _mm256_loadu_si256((const __m256i *)(tail_mask64 + 4 - m)), v);
}
static inline void vd_store_f32_part(float *p, vd v, size_t m)
{
    _mm_maskstore_ps(p, _mm_loadu_si128((const __m128i *)(tail_mask32 + 8 - m)), _mm256_cvtpd_ps(v));
}
static inline vd vd_add(vd a, vd b) { return _mm256_add_pd(a, b); }
static inline vd vd_sub(vd a, vd b) { return _mm256_sub_pd(a, b); }
static inline vd vd_mul(vd a, vd b) { return _mm256_mul_pd(a, b); }
static inline vd vd_div(vd a, vd b) { return _mm256_div_pd(a, b); }
static inline vd vd_fma(vd a, vd b, vd c) { return _mm256_fmadd_pd(a, b, c); }
static inline vd vd_fnma(vd a, vd b, vd c) { return _mm256_fnmadd_pd(a, b, c); }
static inline vd vd_fnma_exact(vd a, vd b, vd c) { return _mm256_fnmadd_pd(a, b, c); }
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
static inline vm vm_and(vm a, vm b) { return _mm256_and_pd(a, b); }
static inline vm vm_andnot(vm a, vm b) { return _mm256_andnot_pd(a, b); }
static inline int vm_any(vm m) { return _mm256_movemask_pd(m) != 0; }
static inline vd vd_select(vm m, vd a, vd b) { return _mm256_blendv_pd(b, a, m); }
static inline vi vi_set(uint64_t c) { return _mm256_set1_epi64x((long long)c); }
static inline vi vi_add(vi a, vi b) { return _mm256_add_epi64(a, b); }
static inline vi vi_and(vi a, vi b) { return _mm256_and_si256(a, b); }
static inline vi vi_or(vi a, vi b) { return _mm256_or_si256(a, b); }
static inline vi vi_shl(vi a, int k) { return _mm256_slli_epi64(a, k); }
static inline vi vi_shr(vi a, int k) { return _mm256_srli_epi64(a, k); }
static inline vm vi_eq(vi a, vi b) { return _mm256_castsi256_pd(_mm256_cmpeq_epi64(a, b)); }
/* Row i (four doubles) of each lane, transposed: one 32-byte load per lane and eight shuffles
 * instead of four gathers. */
static inline void vd_lookup4(const double *t, vi i, vd *a, vd *b, vd *c, vd *d)
{
    int64_t idx[4];
    _mm256_storeu_si256((__m256i *)idx, i);
    vd r0 = _mm256_loadu_pd(t + 4 * idx[0]), r1 = _mm256_loadu_pd(t + 4 * idx[1]);
    vd r2 = _mm256_loadu_pd(t + 4 * idx[2]), r3 = _mm256_loadu_pd(t + 4 * idx[3]);
    vd lo01 = _mm256_unpacklo_pd(r0, r1), hi01 = _mm256_unpackhi_pd(r0, r1);
    vd lo23 = _mm256_unpacklo_pd(r2, r3), hi23 = _mm256_unpackhi_pd(r2, r3);
    *a = _mm256_permute2f128_pd(lo01, lo23, 0x20);
    *b = _mm256_permute2f128_pd(hi01, hi23, 0x20);
    *c = _mm256_permute2f128_pd(lo01, lo23, 0x31);
    *d = _mm256_permute2f128_pd(hi01, hi23, 0x31);
}
/* Row i (two doubles) of each lane: rows 0 and 2, 1 and 3 loaded as pairs, then unpacked. */
static inline void vd_lookup2(const double *t, vi i, vd *a, vd *b)
{
    int64_t idx[4];
    _mm256_storeu_si256((__m256i *)idx, i);
    vd r02 = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(t + 2 * idx[0])),
                                  _mm_loadu_pd(t + 2 * idx[2]), 1);
    vd r13 = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(t + 2 * idx[1])),
                                  _mm_loadu_pd(t + 2 * idx[3]), 1);
    *a = _mm256_unpacklo_pd(r02, r13);
    *b = _mm256_unpackhi_pd(r02, r13);
}
/* Entry i < 16 of two 16-entry columns: four rows per column, too many registers for permutes;
 * the indices go out through memory and each entry is one scalar load. */
static inline void vd_lookup16(const double *ta, const double *tb, vi i, vd *a, vd *b)
{
    int64_t idx[4];
    _mm256_storeu_si256((__m256i *)idx, i);
    *a = _mm256_set_pd(ta[idx[3]], ta[idx[2]], ta[idx[1]], ta[idx[0]]);
    *b = _mm256_set_pd(tb[idx[3]], tb[idx[2]], tb[idx[1]], tb[idx[0]]);
}

#define VM_UPPER_CLEAN() _mm256_zeroupper()   /* see VM_TAIL_COPY */
#include "vecmath_impl.h"

/* ---- native float32 kernels (vecmath_f32n.h) on 8 float lanes ------------------------------- */
typedef __m256 vf;
typedef __m256i vfi;
typedef __m256 vfm;
#define VF_W 8

static inline vf vf_set(float c) { return _mm256_set1_ps(c); }
static inline vf vf_loadu(const float *p) { return _mm256_loadu_ps(p); }
static inline void vf_storeu(float *p, vf v) { _mm256_storeu_ps(p, v); }
static inline vf vf_add(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf vf_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf vf_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf vf_div(vf a, vf b) { return _mm256_div_ps(a, b); }
static inline vf vf_fma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
static inline vf vf_fnma(vf a, vf b, vf c) { return _mm256_fnmadd_ps(a, b, c); }
static inline vf vf_min(vf a, vf b) { return _mm256_min_ps(a, b); }
static inline vf vf_max(vf a, vf b) { return _mm256_max_ps(a, b); }
static inline vf vf_or(vf a, vf b) { return _mm256_or_ps(a, b); }
static inline vf vf_and(vf a, vf b) { return _mm256_and_ps(a, b); }
static inline vf vf_abs(vf a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
static inline vf vf_rcp(vf a) { return _mm256_rcp_ps(a); }
static inline vf vf_bits(vfi v) { return _mm256_castsi256_ps(v); }
static inline vfi vf_as_int(vf v) { return _mm256_castps_si256(v); }
static inline vfm vf_lt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
static inline vfm vf_gt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
static inline vfm vf_eq(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
static inline vfm vf_isnan(vf a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
static inline vfm vfm_or(vfm a, vfm b) { return _mm256_or_ps(a, b); }
static inline int vfm_any(vfm m) { return _mm256_movemask_ps(m) != 0; }
static inline vf vf_select(vfm m, vf a, vf b) { return _mm256_blendv_ps(b, a, m); }
static inline vf vf_keep(vfm m, vf v) { return _mm256_and_ps(m, v); }
static inline vf vf_clear(vfm m, vf v) { return _mm256_andnot_ps(m, v); }
static inline vfi vfi_set(int32_t c) { return _mm256_set1_epi32(c); }
static inline vfi vfi_add(vfi a, vfi b) { return _mm256_add_epi32(a, b); }
static inline vfi vfi_sub(vfi a, vfi b) { return _mm256_sub_epi32(a, b); }
static inline vfi vfi_and(vfi a, vfi b) { return _mm256_and_si256(a, b); }
static inline vfi vfi_shl(vfi a, int k) { return _mm256_slli_epi32(a, k); }
static inline vfi vfi_shr(vfi a, int k) { return _mm256_srli_epi32(a, k); }
static inline vf vfi_to_vf(vfi a) { return _mm256_cvtepi32_ps(a); }
/* vpermps reads the low three bits of each lane of k */
static inline vf vf_pick8(const float *column, vfi k)
{
    return _mm256_permutevar8x32_ps(_mm256_loadu_ps(column), k);
}
static inline vf vf_load_part(const float *p, size_t m)
{
    return _mm256_maskload_ps(p, _mm256_loadu_si256((const __m256i *)(tail_mask32 + 8 - m)));
}

#include "vecmath_f32n.h"

/* erf on 8 float lanes, the table method of float64's erf_f64_core (vecmath_impl.h) scaled to
 * float: |x| = r + d, r = i/64 (|d| <= 1/128, |x| clamped to 4, where erf rounds to 1), erf(r)
 * and S = 2/sqrt(pi) e^(-r^2) as float pairs (tools/vecmath_tables.py), erf(r + d) =
 * erf(r) + S d (1 + Q) with Q = c1 d/2 + c2 d^2/3 + c3 d^3/4 (Hermite recurrence; remainder below
 * 2^-31 relative), S d kept exactly (FMA) and added by Fast2Sum: rounded once, ~0.5 ulp.  No
 * exponential, no branch. */
static const float erf_table_f32[] = VM_ERF_TABLE_F32;

/* Row i (4 floats) of each of the 8 lanes, transposed: eight 16-byte loads and ten shuffles. */
static inline void vf_lookup4(const float *t, vfi i, vf *c0, vf *c1, vf *c2, vf *c3)
{
    int32_t idx[8];
    _mm256_storeu_si256((__m256i *)idx, i);
    vf a04 = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(t + 4 * idx[0])),
                                  _mm_loadu_ps(t + 4 * idx[4]), 1);
    vf a15 = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(t + 4 * idx[1])),
                                  _mm_loadu_ps(t + 4 * idx[5]), 1);
    vf a26 = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(t + 4 * idx[2])),
                                  _mm_loadu_ps(t + 4 * idx[6]), 1);
    vf a37 = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(t + 4 * idx[3])),
                                  _mm_loadu_ps(t + 4 * idx[7]), 1);
    vf lo01 = _mm256_unpacklo_ps(a04, a15), lo23 = _mm256_unpacklo_ps(a26, a37);
    vf hi01 = _mm256_unpackhi_ps(a04, a15), hi23 = _mm256_unpackhi_ps(a26, a37);
    *c0 = _mm256_shuffle_ps(lo01, lo23, _MM_SHUFFLE(1, 0, 1, 0));
    *c1 = _mm256_shuffle_ps(lo01, lo23, _MM_SHUFFLE(3, 2, 3, 2));
    *c2 = _mm256_shuffle_ps(hi01, hi23, _MM_SHUFFLE(1, 0, 1, 0));
    *c3 = _mm256_shuffle_ps(hi01, hi23, _MM_SHUFFLE(3, 2, 3, 2));
}

static inline vf erf_f32n(vf x)
{
    vf sign = _mm256_and_ps(x, vf_set(-0.0f));
    vf a = _mm256_min_ps(_mm256_andnot_ps(vf_set(-0.0f), x), vf_set(VM_ERF_END_F32));  /* NaN: END */
    vf t = _mm256_fmadd_ps(a, vf_set(VM_ERF_STEPS_F32), vf_set(VF_MAGIC));
    vfi i = _mm256_and_si256(vf_as_int(t), _mm256_set1_epi32(0x3ff));
    vf r = _mm256_mul_ps(_mm256_sub_ps(t, vf_set(VF_MAGIC)), vf_set(1.0f / VM_ERF_STEPS_F32));
    vf d = _mm256_sub_ps(a, r);                                      /* exact */
    vf eh, el, sh, sl;
    vf_lookup4(erf_table_f32, i, &eh, &el, &sh, &sl);
    vf c1 = _mm256_mul_ps(r, vf_set(-2.0f));
    vf c2 = _mm256_fmadd_ps(_mm256_add_ps(r, r), r, vf_set(-1.0f));
    vf c3 = _mm256_mul_ps(_mm256_fmadd_ps(r, c2, c1), vf_set(-2.0f / 3.0f));
    vf q = _mm256_mul_ps(c3, vf_set(0.25f));
    q = _mm256_fmadd_ps(q, d, _mm256_mul_ps(c2, vf_set(1.0f / 3.0f)));
    q = _mm256_mul_ps(_mm256_fmadd_ps(q, d, _mm256_mul_ps(c1, vf_set(0.5f))), d);
    vf p = _mm256_mul_ps(sh, d);
    vf pl = _mm256_fmadd_ps(sl, d, _mm256_fmsub_ps(sh, d, p));
    vf s = _mm256_add_ps(eh, p);
    vf e = _mm256_add_ps(_mm256_sub_ps(eh, s), p);
    vf y = _mm256_add_ps(s, _mm256_add_ps(e, _mm256_add_ps(el, _mm256_fmadd_ps(p, q, pl))));
    y = _mm256_or_ps(y, sign);
    return vf_select(_mm256_cmp_ps(x, x, _CMP_UNORD_Q), x, y);
}

VF_LOOP(erf, erf_f32n)


#if defined(__clang__)
#pragma clang attribute pop
#endif

#else
/* ISO C forbids an empty translation unit. */
typedef int tg_vm_avx2_not_built;
#endif
