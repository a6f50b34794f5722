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
static inline __m256 vf_load_part(const float *p, size_t m)
{
    return _mm256_maskload_ps(p, _mm256_loadu_si256((const __m256i *)(tail_mask32 + 8 - m)));
}
static inline vd vd_add(vd a, vd b) { return _mm256_add_pd(a, b); }
static inline vd vd_sub(vd a, vd b) { return _mm256_sub_pd(a, b); }
static inline vd vd_mul(vd a, vd b) { return _mm256_mul_pd(a, b); }
static inline vd vd_div(vd a, vd b) { return _mm256_div_pd(a, b); }
static inline vd vd_fma(vd a, vd b, vd c) { return _mm256_fmadd_pd(a, b, c); }
static inline vd vd_fnma(vd a, vd b, vd c) { return _mm256_fnmadd_pd(a, b, c); }
static inline vd vd_fnma_exact(vd a, vd b, vd c) { return _mm256_fnmadd_pd(a, b, c); }
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

#include "vecmath_impl.h"

/* ---- native float32 kernels ------------------------------------------------------------------
 * exp, log and log1p evaluate in float on 8 lanes (twice the lanes of the double evaluation the
 * other float32 kernels use).  They stay within 1 ulp by the same means as the float64 kernels,
 * scaled down: Cody-Waite reduction with FMA, the result's leading term kept exact and the
 * polynomial only in a correction of weight <= 0.17 (exp) or 0.03 (log), one final rounding;
 * tests/test_vecmath.py and tools/ulp_check.py hold them to the bound. */
typedef __m256 vf;
typedef __m256i vfi;

static const float exp_p_f32n[] = VM_EXP_P_F32N;
static const float log_q_f32n[] = VM_LOG_Q_F32N;
#define VF_MAGIC 0x1.8p23f /* float's round-to-integer constant (see VM_MAGIC) */

static inline vf vf_set(float c) { return _mm256_set1_ps(c); }
static inline vf vf_bits(vfi v) { return _mm256_castsi256_ps(v); }
static inline vfi vf_as_int(vf v) { return _mm256_castps_si256(v); }
static inline vf vf_select(vf m, vf a, vf b) { return _mm256_blendv_ps(b, a, m); }
static inline vf vf_lt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
static inline vf vf_eq(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }

static inline vf vf_poly(vf x, const float *c, int n)
{
    vf acc = vf_set(c[0]);
    for (int i = 1; i < n; i++) acc = _mm256_fmadd_ps(acc, x, vf_set(c[i]));
    return acc;
}

/* c[0] x^5 + ... + c[5] by Estrin's scheme (x2 = x^2): three multiply-adds deep instead of five,
 * so that more independent vectors fit in the out-of-order window. */
static inline vf vf_estrin6(vf x, vf x2, const float *c)
{
    vf q0 = _mm256_fmadd_ps(vf_set(c[4]), x, vf_set(c[5]));
    vf q1 = _mm256_fmadd_ps(vf_set(c[2]), x, vf_set(c[3]));
    vf q2 = _mm256_fmadd_ps(vf_set(c[0]), x, vf_set(c[1]));
    return _mm256_fmadd_ps(_mm256_fmadd_ps(q2, x2, q1), x2, q0);
}

/* 2^k for integral k in [-126, 127] held as a float (k + VF_MAGIC has k in its low bits). */
static inline vf vf_pow2i(vf k)
{
    vfi b = vf_as_int(_mm256_add_ps(k, vf_set(VF_MAGIC)));
    return vf_bits(_mm256_slli_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(127)), 23));
}

/* e^xc = 2^n (s1 + w) with xc in [-110, 89], the pair s1 + w unrounded; t = n + VF_MAGIC. */
static inline void exp_f32n_parts(vf xc, vf *t, vf *n, vf *s1, vf *w)
{
    *t = _mm256_fmadd_ps(xc, vf_set(0x1.715476p+0f), vf_set(VF_MAGIC));
    *n = _mm256_sub_ps(*t, vf_set(VF_MAGIC));
    /* x = n ln2 + rh + rl: rh = x - n LN2_HI_F is exact (a multiple of x's or LN2_HI_F's last
     * bit, below 1/2: it fits 24 bits; the FMA rounds nothing), rl = -n LN2_LO_F < 2^-21. */
    vf rh = _mm256_fnmadd_ps(*n, vf_set(VM_LN2_HI_F), xc);
    vf rl = _mm256_mul_ps(*n, vf_set(-VM_LN2_LO_F));
    /* e^r = 1 + rh + tail, tail = u + rl e^rh, u = rh^2 P(rh); 1 + rh's rounding error is kept
     * (Fast2Sum), so the sum is rounded once: ~0.55 ulp instead of ~0.95. */
    vf r2 = _mm256_mul_ps(rh, rh);
    vf u = _mm256_mul_ps(r2, vf_estrin6(rh, r2, exp_p_f32n));
    vf tail = _mm256_add_ps(u, _mm256_fmadd_ps(rl, _mm256_add_ps(rh, u), rl));
    *s1 = _mm256_add_ps(vf_set(1.0f), rh);
    vf err1 = _mm256_add_ps(_mm256_sub_ps(vf_set(1.0f), *s1), rh);
    *w = _mm256_add_ps(tail, err1);
}

/* e * 2^n; lanes whose result is subnormal or overflows are scaled in two exact steps so that
 * they round once.  (t = n + VF_MAGIC has n in its low bits.) */
static inline vf scale_f32n(vf e, vf t, vf n)
{
    vf out = _mm256_or_ps(vf_lt(n, vf_set(-125.0f)), _mm256_cmp_ps(n, vf_set(127.0f), _CMP_GT_OQ));
    if (_mm256_movemask_ps(out)) {
        vf n1 = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(n, vf_set(0.5f)), vf_set(VF_MAGIC)),
                              vf_set(VF_MAGIC));
        return _mm256_mul_ps(_mm256_mul_ps(e, vf_pow2i(n1)), vf_pow2i(_mm256_sub_ps(n, n1)));
    }
    return _mm256_mul_ps(e, vf_bits(_mm256_slli_epi32(
                                _mm256_add_epi32(vf_as_int(t), _mm256_set1_epi32(127)), 23)));
}

static inline vf exp_f32n(vf x)
{
    /* Outside [-110, 89] the result is 0 or inf anyway; NaN passes (x is the second operand). */
    vf xc = _mm256_min_ps(vf_set(89.0f), _mm256_max_ps(vf_set(-110.0f), x));
    vf t, n, s1, w;
    exp_f32n_parts(xc, &t, &n, &s1, &w);
    return scale_f32n(_mm256_add_ps(s1, w), t, n);
}

/* sigmoid x = num / (1 + t), t = e^-|x| = th + tl (float-float), num = 1 or t by the sign of x.
 * One division, then one correction step on num / (d + dl) with d = 1 + th's rounding error dl
 * (the step needs 1/d only to 2^-12: the reciprocal estimate): one final rounding. */
static inline vf sigmoid_f32n(vf x)
{
    vf xc = _mm256_max_ps(vf_set(-110.0f), _mm256_or_ps(x, vf_set(-0.0f)));  /* -|x| */
    vf t, n, s1, w;
    exp_f32n_parts(xc, &t, &n, &s1, &w);
    vf e = _mm256_add_ps(s1, w);
    vf el = _mm256_add_ps(_mm256_sub_ps(s1, e), w);
    /* 2^n from t's bits, valid for n >= -126; below, th is scaled in two steps and the result is
     * th itself (tl, meaningless there, is dropped). */
    vf pow2n = vf_bits(_mm256_slli_epi32(_mm256_add_epi32(vf_as_int(t), _mm256_set1_epi32(127)), 23));
    vf th = _mm256_mul_ps(e, pow2n);
    vf tl = _mm256_mul_ps(el, pow2n);
    vf tiny = vf_lt(n, vf_set(-125.0f));
    if (_mm256_movemask_ps(tiny)) {
        th = scale_f32n(e, t, n);
        tl = _mm256_andnot_ps(tiny, tl);
    }
    vf neg = vf_lt(x, _mm256_setzero_ps());
    vf one = vf_set(1.0f);
    vf num = vf_select(neg, th, one);
    vf numl = _mm256_and_ps(neg, tl);
    vf d = _mm256_add_ps(one, th);
    vf dl = _mm256_add_ps(_mm256_add_ps(_mm256_sub_ps(one, d), th), tl);
    vf y = _mm256_div_ps(num, d);
    vf r = _mm256_rcp_ps(d);  /* 1/d to 2^-12 suffices for the correction step */
    vf res = _mm256_fnmadd_ps(y, dl, _mm256_add_ps(_mm256_fnmadd_ps(y, d, num), numl));
    /* 0 where e^-x overflows float, as PyTorch's (see VM_SIGMOID_ZERO_F32) */
    vf zero = vf_lt(x, vf_set(-VM_SIGMOID_ZERO_F32));
    return _mm256_andnot_ps(zero, _mm256_fmadd_ps(res, r, y));  /* NaN flows through */
}

/* log of u > 0 plus a small correction `corr` (log1p's c / u), as in log_positive. */
#define VF_SQRT_HALF_BITS 0x3f3504f3
static inline vf log_f32n_positive(vf u, vf corr)
{
    vf sub = vf_lt(u, vf_set(0x1p-126f));
    u = vf_select(sub, _mm256_mul_ps(u, vf_set(0x1p23f)), u);
    vfi b = _mm256_add_epi32(vf_as_int(u), _mm256_set1_epi32(0x3f800000 - VF_SQRT_HALF_BITS));
    vf k = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(b, 23), _mm256_set1_epi32(127)));
    k = _mm256_sub_ps(k, _mm256_and_ps(sub, vf_set(23.0f)));
    vf m = vf_bits(_mm256_add_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x007fffff)),
                                    _mm256_set1_epi32(VF_SQRT_HALF_BITS)));
    vf f = _mm256_sub_ps(m, vf_set(1.0f));
    vf s = _mm256_div_ps(f, _mm256_add_ps(vf_set(2.0f), f));
    vf z = _mm256_mul_ps(s, s);
    vf hfsq = _mm256_mul_ps(vf_set(0.5f), _mm256_mul_ps(f, f));
    vf r = _mm256_mul_ps(z, vf_poly(z, log_q_f32n, VM_NCOEF(log_q_f32n)));
    vf t = _mm256_fmadd_ps(s, _mm256_add_ps(hfsq, r), _mm256_fmadd_ps(k, vf_set(VM_LN2_LO16_F), corr));
    /* k ln2 + f as hi + lo exactly (k * LN2_HI16_F is exact and at least |f| unless k = 0), so
     * that only the final sum rounds: near u = sqrt(1/2) the two halves nearly cancel. */
    vf a = _mm256_mul_ps(k, vf_set(VM_LN2_HI16_F));
    vf hi = _mm256_add_ps(a, f);
    vf lo = _mm256_add_ps(_mm256_sub_ps(a, hi), f);
    return _mm256_add_ps(hi, _mm256_sub_ps(lo, _mm256_sub_ps(hfsq, t)));
}

static inline vf log_f32n_specials(vf u, vf y)
{
    y = vf_select(vf_eq(u, vf_set(INFINITY)), u, y);
    y = vf_select(vf_eq(u, vf_set(0.0f)), vf_set(-INFINITY), y);
    y = vf_select(vf_lt(u, vf_set(0.0f)), vf_set(NAN), y);
    return vf_select(_mm256_cmp_ps(u, u, _CMP_UNORD_Q), u, y);
}

static inline vf log_f32n(vf x)
{
    return log_f32n_specials(x, log_f32n_positive(x, _mm256_setzero_ps()));
}

static inline vf log1p_f32n(vf x)
{
    /* u + c = 1 + x exactly (Fast2Sum on the larger and the smaller of 1 and x; x >= -1
     * wherever the result is a number).  |c / u| <= 2^-24 and the result
     * is c itself for |x| < 2^-24, so c / u must be correctly rounded (a division); its rounding
     * then costs at most 1/4 ulp of the result. */
    vf one = vf_set(1.0f);
    vf u = _mm256_add_ps(one, x);
    vf c = _mm256_add_ps(_mm256_sub_ps(_mm256_max_ps(one, x), u), _mm256_min_ps(one, x));
    vf y = log_f32n_positive(u, _mm256_div_ps(c, u));
    y = log_f32n_specials(u, y);                             /* x = -1, x < -1, inf, NaN */
    return vf_select(vf_eq(x, _mm256_setzero_ps()), x, y);   /* log1p(-0) = -0 */
}

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

/* gelu (vecmath.h): 0.5 x (1 + erf(z)), z = x / sqrt 2, with an erf of its own.  The table
 * lookup of erf_f32n (eight loads and ten shuffles per vector) was most of gelu's time; here each
 * lane takes its interval's coefficients out of a register (vpermps, one instruction per
 * coefficient): |z| in 8 intervals around k/2 (k = round(2|z|), at most 7; |z| clamped to 4,
 * where float erf is 1), erf|z| = c0h + (c0l + t (c1 + ... + t c7)) at t = |z| - k/2
 * (tools/vecmath_tables.py; approximation error below 2^-29).  Rounded twice (the polynomial
 * part, then the sum), erf here is within 0.75 ulp (erf_f32n: 0.5); 1 + erf(z) and 0.5 x are
 * then joined by one multiply-add, h + h e with h = 0.5 x, one rounding fewer than PyTorch's
 * (0.5 x) (1 + e).  x's sign bit is put back at the end: h + h e is +0 where the product
 * gives -0 (-0 + +0), and gelu has x's sign.  NaN passes through h; |z| = inf is clamped
 * (e = +-1: gelu(inf) = inf, gelu(-inf) = NaN, as PyTorch's formula gives). */
static const float gelu_erf_c0h[8] = VM_GELU_ERF_C0H, gelu_erf_c0l[8] = VM_GELU_ERF_C0L,
                   gelu_erf_c1[8] = VM_GELU_ERF_C1, gelu_erf_c2[8] = VM_GELU_ERF_C2,
                   gelu_erf_c3[8] = VM_GELU_ERF_C3, gelu_erf_c4[8] = VM_GELU_ERF_C4,
                   gelu_erf_c5[8] = VM_GELU_ERF_C5, gelu_erf_c6[8] = VM_GELU_ERF_C6,
                   gelu_erf_c7[8] = VM_GELU_ERF_C7;

/* Lane i gets column[k_i] (vpermps reads the low three bits of each lane of k). */
static inline vf vf_pick8(const float *column, vfi k)
{
    return _mm256_permutevar8x32_ps(_mm256_loadu_ps(column), k);
}

static inline vf gelu_f32n(vf x)
{
    vf z = _mm256_mul_ps(x, vf_set(TG_VM_SQRT1_2F));
    vf sign = _mm256_and_ps(z, vf_set(-0.0f));
    vf a = _mm256_min_ps(_mm256_andnot_ps(vf_set(-0.0f), z), vf_set(4.0f));   /* NaN: 4 */
    /* 2|z| rounded to an integer k <= 7, which the magic constant leaves in the low bits */
    vf km = _mm256_min_ps(_mm256_fmadd_ps(a, vf_set(2.0f), vf_set(VF_MAGIC)),
                          vf_set(VF_MAGIC + 7.0f));
    vfi k = vf_as_int(km);
    vf t = _mm256_fnmadd_ps(_mm256_sub_ps(km, vf_set(VF_MAGIC)), vf_set(0.5f), a);  /* exact */
    vf r = vf_pick8(gelu_erf_c7, k);
    r = _mm256_fmadd_ps(r, t, vf_pick8(gelu_erf_c6, k));
    r = _mm256_fmadd_ps(r, t, vf_pick8(gelu_erf_c5, k));
    r = _mm256_fmadd_ps(r, t, vf_pick8(gelu_erf_c4, k));
    r = _mm256_fmadd_ps(r, t, vf_pick8(gelu_erf_c3, k));
    r = _mm256_fmadd_ps(r, t, vf_pick8(gelu_erf_c2, k));
    r = _mm256_fmadd_ps(r, t, vf_pick8(gelu_erf_c1, k));
    vf e = _mm256_add_ps(vf_pick8(gelu_erf_c0h, k), _mm256_fmadd_ps(r, t, vf_pick8(gelu_erf_c0l, k)));
    e = _mm256_or_ps(e, sign);
    vf h = _mm256_mul_ps(vf_set(0.5f), x);
    return _mm256_or_ps(_mm256_fmadd_ps(h, e, h), sign);
}

/* silu (vecmath.h): x / (1 + e^-x) in float. */
static inline vf silu_f32n(vf x)
{
    vf e = exp_f32n(_mm256_sub_ps(_mm256_setzero_ps(), x));
    return _mm256_div_ps(x, _mm256_add_ps(vf_set(1.0f), e));
}

/* gelu's gradient (vecmath.h) with both functions in registers. */
static inline vf gelu_grad_f32n(vf g, vf x)
{
    vf e1 = erf_f32n(_mm256_mul_ps(x, vf_set(TG_VM_SQRT1_2F)));
    vf e2 = exp_f32n(_mm256_mul_ps(_mm256_mul_ps(vf_set(-0.5f), x), x));
    vf cdf = _mm256_mul_ps(vf_set(0.5f), _mm256_add_ps(vf_set(1.0f), e1));
    vf pdf = _mm256_mul_ps(_mm256_mul_ps(x, vf_set(TG_VM_INV_SQRT_2PIF)), e2);
    return _mm256_mul_ps(g, _mm256_add_ps(cdf, pdf));
}

void tg_vm_gelu_grad_f32_avx2(const float *g, const float *x, float *out, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        vf a = gelu_grad_f32n(_mm256_loadu_ps(g + i), _mm256_loadu_ps(x + i));
        vf b = gelu_grad_f32n(_mm256_loadu_ps(g + i + 8), _mm256_loadu_ps(x + i + 8));
        _mm256_storeu_ps(out + i, a);
        _mm256_storeu_ps(out + i + 8, b);
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, gelu_grad_f32n(_mm256_loadu_ps(g + i), _mm256_loadu_ps(x + i)));
    if (i < n) {
        float buf[8];
        _mm256_storeu_ps(buf, gelu_grad_f32n(vf_load_part(g + i, n - i), vf_load_part(x + i, n - i)));
        for (size_t k = 0; k < n - i; k++) out[i + k] = buf[k];
    }
}

/* 8 floats at a time (four vectors per iteration), the tail padded with zeros into one more
 * vector (a masked load, as vecmath_impl.h's loops). */
#define VF_LOOP(name, core)                                                                    \
    void tg_vm_##name##_f32_avx2(const float *x, float *y, size_t n)                          \
    {                                                                                          \
        size_t i = 0;                                                                          \
        for (; i + 32 <= n; i += 32) {                                                         \
            vf a = core(_mm256_loadu_ps(x + i)), b = core(_mm256_loadu_ps(x + i + 8));         \
            vf c = core(_mm256_loadu_ps(x + i + 16)), d = core(_mm256_loadu_ps(x + i + 24));   \
            _mm256_storeu_ps(y + i, a);                                                        \
            _mm256_storeu_ps(y + i + 8, b);                                                    \
            _mm256_storeu_ps(y + i + 16, c);                                                   \
            _mm256_storeu_ps(y + i + 24, d);                                                   \
        }                                                                                      \
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, core(_mm256_loadu_ps(x + i)));     \
        if (i < n) {                                                                           \
            float buf[8];                                                                      \
            _mm256_storeu_ps(buf, core(vf_load_part(x + i, n - i)));                           \
            for (size_t k = 0; k < n - i; k++) y[i + k] = buf[k];                              \
        }                                                                                      \
    }
VF_LOOP(exp, exp_f32n)
VF_LOOP(log, log_f32n)
VF_LOOP(log1p, log1p_f32n)
VF_LOOP(sigmoid, sigmoid_f32n)
VF_LOOP(erf, erf_f32n)
VF_LOOP(gelu, gelu_f32n)
VF_LOOP(silu, silu_f32n)

/* The other float32 kernels evaluate in double (vecmath_impl.h). */
#define VM_EXPORT_F32(name)                                                      \
    void tg_vm_##name##_f32_avx2(const float *x, float *y, size_t n)             \
    {                                                                            \
        name##_f32_via_f64(x, y, n);                                             \
    }
VM_EXPORT_F32(expm1)
VM_EXPORT_F32(sin)
VM_EXPORT_F32(cos)
VM_EXPORT_F32(tanh)

#if defined(__clang__)
#pragma clang attribute pop
#endif

#else
/* ISO C forbids an empty translation unit. */
typedef int tg_vm_avx2_not_built;
#endif
