/* The algorithms of tapegrad's vectorised math kernels, written once over a small vector
 * abstraction and instantiated per level: a translation unit defines the abstraction (VM_W lanes
 * of double `vd`, 64-bit integer lanes `vi`, lane masks `vm`, the operations below and
 * VM_LEVEL_NAME) and then includes this file.  See vecmath_scalar.c and vecmath_avx2.c.
 *
 * Every kernel computes in double.  float32 kernels convert to double, evaluate a polynomial of
 * lower degree (accurate to ~2^-36) and round once, which keeps them within 1 ulp; float64
 * kernels use polynomials accurate to ~2^-57 and argument reductions that carry the low-order
 * bits, to stay within 2 ulp.
 *
 * Abstraction: vd_set vd_load vd_store vd_load_f32 vd_store_f32 vd_round_f32 (to the nearest
 * float, as a double) vd_add vd_sub vd_mul vd_div
 * vd_fma(a,b,c)=a*b+c and vd_fnma(a,b,c)=c-a*b (fused or not), vd_fma_exact vd_fnma_exact (always
 * fused),
 * vd_min vd_max (NaN in the first operand gives the second), vd_abs vd_and vd_or vd_xor,
 * comparisons vd_lt vd_gt vd_eq vd_isnan returning vm, vm_and vm_andnot(a,b)=~a&b vm_or vm_any,
 * vd_select(m,a,b)=m?a:b,
 * vd_as_vi vi_as_vd vi_set vi_add vi_and vi_or vi_shl vi_shr (logical) vi_eq,
 * vd_lookup4(table, i, &a, &b, &c, &d): row i of a table of four-double rows, per lane, vd_lookup2
 * the same for two-double rows, vd_lookup16(ta, tb, i, &a, &b): entry i < 16 of two 16-entry
 * columns,
 * vd_load_part vd_load_f32_part(p, m): the first m < VM_W elements of p into the first lanes, the
 * other lanes 0, reading nothing beyond p[m - 1] (the tail of an array), vd_load_part_one
 * vd_load_f32_part_one the same with the other lanes 1, and vd_store_part
 * vd_store_f32_part(p, v, m): the first m < VM_W lanes of v to p, writing nothing beyond.
 *
 * VM_POW_ONLY (defined by the includer): pow alone, for pow's one-lane path (vecmath_pow_one.c). */
#include "vecmath_consts.h"
#include "vecmath_tables.h"

#define VM_CAT3(a, b, c) a##b##c
#define VM_XCAT3(a, b, c) VM_CAT3(a, b, c)

#ifndef VM_POW_ONLY
static const double exp_p_f64[] = VM_EXP_P_F64;
static const double exp_p_f32[] = VM_EXP_P_F32;
static const double log_q_f64[] = VM_LOG_Q_F64;
static const double log_q_f32[] = VM_LOG_Q_F32;
static const double sin_s_f64[] = VM_SIN_S_F64;
static const double sin_s_f32[] = VM_SIN_S_F32;
static const double cos_c_f64[] = VM_COS_C_F64;
static const double cos_c_f32[] = VM_COS_C_F32;
#endif
/* The last tail's results from its staging buffer to y, leaving the vector registers' upper
 * halves clean.  Where GCC keeps a kernel's core out of line (sincos_f32_pair and sincos_core take
 * a vector argument), the call returns with the upper halves in use; GCC takes every call to
 * return them clean, and the copy loop became a call of memcpy, so the kernel returned by a path
 * past its VZEROUPPER, and the caller's next SSE instruction stalled: sin and cos of 1-3 elements
 * cost ~130 ns more than of 4 (AMD EPYC here; bench/large_tensors.py's sizes 1-2 at 1.3-1.4x the
 * numpy build).  VM_UPPER_CLEAN is the level's VZEROUPPER (nothing at the portable level). */
#ifndef VM_UPPER_CLEAN
#define VM_UPPER_CLEAN() ((void)0)
#endif
#define VM_TAIL_COPY(dst, src, m)                                                              \
    do {                                                                                       \
        for (size_t k_ = 0; k_ < (m); k_++) (dst)[k_] = (src)[k_];                              \
        VM_UPPER_CLEAN();                                                                      \
    } while (0)

/* The large tables (24 KB, 4 KB, 2 KB and 512 B) are defined once, in vecmath.c: each level's translation
 * unit includes this file, and a static copy per level put them into the core once per level. */
extern const double tg_vm_erf_table[];
extern const double tg_vm_log_table[];
extern const double tg_vm_pow_exp_table[];
extern const double tg_vm_pow_log2_f32_table[];
static const double pow_log2_q_f32[] = VM_POW_LOG2_F32_Q;
static const double pow_exp2_e_f32[] = VM_POW_EXP2_F32_E;
#ifndef VM_POW_ONLY
static const double erf_a_f32[] = VM_ERF_A_F32;
static const double erf_b_f32[] = VM_ERF_B_F32;
#endif
#define VM_NCOEF(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define VM_P(arr) arr, VM_NCOEF(arr)

/* Adding 1.5 * 2^52 rounds a double of magnitude < 2^51 to an integer (in the current rounding
 * mode, nearest) and leaves that integer in the low bits of the sum's representation. */
#define VM_MAGIC 0x1.8p52

/* The bits of sqrt(1/2), where log's and pow's reductions split m's range. */
#define VM_SQRT_HALF_BITS UINT64_C(0x3fe6a09e667f3bcd)

static inline vd poly(vd x, const double *c, int n)
{
    vd acc = vd_set(c[0]);
    for (int i = 1; i < n; i++) acc = vd_fma(acc, x, vd_set(c[i]));
    return acc;
}

/* 2^k for integral k in [-1022, 1023] held as a double: k + MAGIC has k in its low bits, and
 * (bits + 1023) << 52 moves the biased exponent into place (MAGIC's own bits shift out). */
static inline vd pow2i(vd k)
{
    vi b = vd_as_vi(vd_add(k, vd_set(VM_MAGIC)));
    return vi_as_vd(vi_shl(vi_add(b, vi_set(1023)), 52));
}

static inline vd nan_passthrough(vd x, vd y) { return vd_select(vd_isnan(x), x, y); }

#ifndef VM_POW_ONLY
/* ---- exp, expm1 ----------------------------------------------------------------------------
 * x = n ln2 + rh + rl, |rh| <= ln2/2 (Cody-Waite: n * LN2_HI is exact for |n| < 2^11, so rh is
 * exact and rl = -n LN2_LO carries the rest; |rl| < 2^-34).  e^r - 1 = rh + tail with
 * tail = u + rl e^rh, u = rh^2 P(rh), e^rh = 1 + rh + u (first order in rl).  exp scales by 2^n in two steps so that
 * results in the subnormal range are rounded once and overflow gives inf without a special case. */
static inline vd exp_reduce(vd x, vd *n, vd *rl)
{
    vd t = vd_fma(x, vd_set(VM_INV_LN2), vd_set(VM_MAGIC));
    *n = vd_sub(t, vd_set(VM_MAGIC));
    *rl = vd_mul(*n, vd_set(-VM_LN2_LO));
    return vd_fma(*n, vd_set(-VM_LN2_HI), x);
}

static inline vd expm1_tail(vd rh, vd rl, const double *p, int np)
{
    vd u = vd_mul(vd_mul(rh, rh), poly(rh, p, np));
    return vd_add(u, vd_fma(rl, vd_add(rh, u), rl));
}

static inline vd scale_pow2(vd e, vd n)
{
    vd n1 = vd_sub(vd_add(vd_mul(n, vd_set(0.5)), vd_set(VM_MAGIC)), vd_set(VM_MAGIC));
    vd n2 = vd_sub(n, n1);
    return vd_mul(vd_mul(e, pow2i(n1)), pow2i(n2));
}

static inline vd expm1_core(vd x, const double *p, int np)
{
    vd xc = vd_min(vd_max(x, vd_set(-50.0)), vd_set(710.0));
    vd n, rl;
    vd rh = exp_reduce(xc, &n, &rl);
    vd tail = expm1_tail(rh, rl, p, np);
    /* 2^n e^r - 1 = ((2^n - 1) + 2^n rh) + 2^n tail.  2^n rh is exact, 2^n - 1 exact for n <= 53
     * and at least as large as 2^n rh when n != 0, so Fast2Sum keeps the first sum's rounding
     * error; below x = -50 the result rounds to -1.  Above 40, e^x - 1 rounds like e^x. */
    vd s = pow2i(vd_min(n, vd_set(60.0)));
    vd a = vd_sub(s, vd_set(1.0));
    vd b = vd_mul(s, rh);
    vd hi = vd_add(a, b);
    vd lo = vd_add(vd_sub(a, hi), b);
    vd small = vd_add(hi, vd_fma(s, tail, lo));
    vd big = scale_pow2(vd_add(vd_set(1.0), vd_add(rh, tail)), n);
    vd y = vd_select(vd_gt(x, vd_set(40.0)), big, small);
    /* |x| < 2^-54: expm1(x) rounds to x (and keeps the sign of zero). */
    y = vd_select(vd_lt(vd_abs(x), vd_set(0x1p-54)), x, y);
    return nan_passthrough(x, y);
}

/* ---- log, log1p ----------------------------------------------------------------------------
 * u = 2^k m, m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f / (2 + f):
 * log(1 + f) = 2 atanh(s) = f - (f^2/2 - s (f^2/2 + R)), R = s^2 Q(s^2), which keeps the
 * leading term f exact.  For positive finite u only; callers patch the special values. */
/* corr: a small term added to the result (log1p's c / u); 0 for log. */
static inline vd log_positive(vd u, vd corr, const double *q, int nq)
{
    /* Subnormals: scale into the normal range first. */
    vm sub = vd_lt(u, vd_set(0x1p-1022));
    u = vd_select(sub, vd_mul(u, vd_set(0x1p54)), u);
    vd kadj = vd_select(sub, vd_set(-54.0), vd_set(0.0));
    /* Shift the exponent boundary from 1 to sqrt(1/2) so that m lands in [sqrt(1/2), sqrt 2). */
    vi b = vi_add(vd_as_vi(u), vi_set(UINT64_C(0x3ff0000000000000) - VM_SQRT_HALF_BITS));
    vi m_bits = vi_add(vi_and(b, vi_set(UINT64_C(0x000fffffffffffff))), vi_set(VM_SQRT_HALF_BITS));
    /* The biased exponent (0..2047) OR-ed into 2^52's bits is 2^52 + k + 1023 as a double. */
    vd k = vd_sub(vi_as_vd(vi_or(vi_shr(b, 52), vi_set(UINT64_C(0x4330000000000000)))),
                  vd_set(0x1p52 + 1023.0));
    k = vd_add(k, kadj);
    vd f = vd_sub(vi_as_vd(m_bits), vd_set(1.0));
    vd s = vd_div(f, vd_add(vd_set(2.0), f));
    vd z = vd_mul(s, s);
    vd hfsq = vd_mul(vd_set(0.5), vd_mul(f, f));
    vd r = vd_mul(z, poly(z, q, nq));
    vd t = vd_fma(s, vd_add(hfsq, r), vd_fma(k, vd_set(VM_LN2_LO), corr));
    return vd_fma(k, vd_set(VM_LN2_HI), vd_sub(f, vd_sub(hfsq, t)));
}

static inline vd log1p_core(vd x, const double *q, int nq)
{
    /* u = 1 + x exactly as u + c (TwoSum). */
    vd one = vd_set(1.0);
    vd u = vd_add(one, x);
    vd bb = vd_sub(u, one);
    vd c = vd_add(vd_sub(one, vd_sub(u, bb)), vd_sub(x, bb));
    /* log(u + c) = log u + c / u to first order (|c| <= ulp(u) / 2). */
    vd y = log_positive(u, vd_div(c, u), q, nq);
    y = vd_select(vd_eq(x, vd_set(INFINITY)), x, y);
    y = vd_select(vd_eq(x, vd_set(-1.0)), vd_set(-INFINITY), y);
    y = vd_select(vd_lt(x, vd_set(-1.0)), vd_set(NAN), y);
    y = vd_select(vd_lt(vd_abs(x), vd_set(0x1p-54)), x, y);
    return nan_passthrough(x, y);
}

/* ---- sin, cos ------------------------------------------------------------------------------
 * x = n pi/2 + r, |r| <= pi/4, r carried as rh + rl.  |x| <= 2^24: Cody-Waite with pi/2 in four
 * parts (the first three of 28 bits, so n * part is exact), tracking the rounding errors of the
 * subtractions; larger |x|: Payne-Hanek (tg_vm_rem_pio2_huge), lane by lane. */
typedef struct { vd n, rh, rl; } trig_parts;

/* n, rh, rl with the lanes where |x| > TG_VM_TRIG_HUGE reduced again, exactly (Payne-Hanek), lane
 * by lane.  Out of line and by value: while the lanes went through arrays in the kernel's loop,
 * the compiler kept every value of the common path in memory (sin and cos 10%, sincos 13% slower
 * than with this rare path out of line; same bits). */
static TG_VM_NOINLINE trig_parts trig_reduce_huge(vd x, vd n, vd rh, vd rl)
{
    double xs[VM_W], ns[VM_W], hs[VM_W], ls[VM_W];
    trig_parts p;
    vd_store(xs, x);
    vd_store(ns, n);
    vd_store(hs, rh);
    vd_store(ls, rl);
    for (int j = 0; j < VM_W; j++)
        if (fabs(xs[j]) > TG_VM_TRIG_HUGE) tg_vm_rem_pio2_huge(xs[j], &ns[j], &hs[j], &ls[j]);
    p.n = vd_load(ns);
    p.rh = vd_load(hs);
    p.rl = vd_load(ls);
    return p;
}

static inline vd trig_reduce(vd x, vd *rh, vd *rl)
{
    vd t = vd_fma(x, vd_set(VM_TWO_OVER_PI), vd_set(VM_MAGIC));
    vd n = vd_sub(t, vd_set(VM_MAGIC));
    vd r1 = vd_fma(n, vd_set(-VM_PIO2_1), x);              /* exact */
    vd w2 = vd_mul(n, vd_set(VM_PIO2_2));                  /* exact */
    vd r2 = vd_sub(r1, w2);
    vd lo = vd_sub(vd_sub(r1, r2), w2);                    /* r2's rounding error */
    vd w3 = vd_mul(n, vd_set(VM_PIO2_3));                  /* exact */
    vd h = vd_sub(r2, w3);
    lo = vd_add(lo, vd_sub(vd_sub(r2, h), w3));
    lo = vd_fma(n, vd_set(-VM_PIO2_4), lo);
    /* Renormalise so that |rl| <= ulp(rh) / 2. */
    *rh = vd_add(h, lo);
    *rl = vd_sub(lo, vd_sub(*rh, h));

    if (vm_any(vd_gt(vd_abs(x), vd_set(TG_VM_TRIG_HUGE)))) {
        trig_parts p = trig_reduce_huge(x, n, *rh, *rl);
        n = p.n;
        *rh = p.rh;
        *rl = p.rl;
    }
    return n;
}

/* sin(rh + rl) ~ sin rh + rl cos rh, with cos rh ~ 1 - z/2 (rl is below ulp(rh)). */
static inline vd sin_reduced(vd rh, vd rl, vd z, const double *s, int ns)
{
    vd tail = vd_fma(vd_mul(rh, z), poly(z, s, ns), vd_mul(rl, vd_fma(z, vd_set(-0.5), vd_set(1.0))));
    return vd_add(rh, tail);
}

/* cos(rh + rl) ~ cos rh - rl rh; 1 - z/2 is split as w + ((1 - w) - z/2) to keep its rounding
 * error. */
static inline vd cos_reduced(vd rh, vd rl, vd z, const double *c, int nc)
{
    vd hz = vd_mul(z, vd_set(0.5));
    vd w = vd_sub(vd_set(1.0), hz);
    vd err = vd_sub(vd_sub(vd_set(1.0), w), hz);
    vd tail = vd_fma(vd_mul(z, z), poly(z, c, nc), vd_fma(vd_set(-1.0), vd_mul(rh, rl), err));
    return vd_add(w, tail);
}

/* sin (which = 0) or cos (1) of x from sin and cos of its reduced argument, sr and cr, in quadrant
 * n (cos x = sin(x + pi/2): the quadrant shifts by one). */
static inline vd trig_quadrant(vd n, vd sr, vd cr, int which)
{
    vi q = vi_add(vd_as_vi(vd_add(n, vd_set(VM_MAGIC))), vi_set((uint64_t)which));
    vm odd = vi_eq(vi_and(q, vi_set(1)), vi_set(1));
    vd sign = vi_as_vd(vi_shl(vi_and(q, vi_set(2)), 62));
    return vd_xor(vd_select(odd, cr, sr), sign);
}

/* Both sin x and cos x: one reduction, both finished from it (each kernel alone computes sr and
 * cr as well), so *ys and *yc are the sin and cos kernels' results bit for bit. */
static inline void sincos_pair(vd x, vd *ys, vd *yc, const double *s, int ns, const double *c,
                               int nc)
{
    vd rh, rl;
    vd n = trig_reduce(x, &rh, &rl);
    vd z = vd_mul(rh, rh);
    vd sr = sin_reduced(rh, rl, z, s, ns);
    vd cr = cos_reduced(rh, rl, z, c, nc);
    vd y = vd_select(vd_eq(x, vd_set(0.0)), x, trig_quadrant(n, sr, cr, 0));  /* sin(-0) = -0 */
    /* inf gives NaN through the reduction; NaN keeps its payload. */
    *ys = nan_passthrough(x, y);
    *yc = nan_passthrough(x, trig_quadrant(n, sr, cr, 1));
}

/* sin x (which = 0) or cos x (1) alone: each lane needs only one of sin_reduced and cos_reduced
 * (the one its quadrant selects), so a single Horner chain runs with each lane's coefficients,
 * blended per lane; cos's shorter polynomial is led by zeros (fma(0, z, c0) is c0 exactly, z >= 0),
 * and the products that feed the chain and its tail are those of sin_reduced / cos_reduced.  Every
 * lane sees the operations of the function it selects, in their order: the bits of sincos_pair's
 * result (ns >= nc, as for both dtypes' polynomials), for ~3/4 of the multiplies and seven blends:
 * per float64 in cache, sin 0.80 -> 0.75 ns and cos 0.76 -> 0.74 (AVX-512), sin 1.68 -> 1.54
 * (AVX2). */
static inline vd sincos_core(vd x, int which, const double *s, int ns, const double *c, int nc)
{
    vd rh, rl;
    vd n = trig_reduce(x, &rh, &rl);
    vd z = vd_mul(rh, rh);
    vi q = vi_add(vd_as_vi(vd_add(n, vd_set(VM_MAGIC))), vi_set((uint64_t)which));
    vm odd = vi_eq(vi_and(q, vi_set(1)), vi_set(1));          /* lanes finished by cos_reduced */
    vd acc = vd_select(odd, vd_set(ns > nc ? 0.0 : c[0]), vd_set(s[0]));
    for (int i = 1; i < ns; i++) {
        int ci = i - (ns - nc);
        acc = vd_fma(acc, z, vd_select(odd, vd_set(ci >= 0 ? c[ci] : 0.0), vd_set(s[i])));
    }
    /* sin_reduced: rh + (rh z P + rl (1 - z/2)); cos_reduced: w + (z^2 P + (err - rh rl)) */
    vd hz = vd_mul(z, vd_set(0.5));
    vd w = vd_sub(vd_set(1.0), hz);
    vd err = vd_sub(vd_sub(vd_set(1.0), w), hz);
    vd lead = vd_select(odd, w, rh);
    vd scale = vd_select(odd, vd_mul(z, z), vd_mul(rh, z));
    vd low = vd_select(odd, vd_fma(vd_set(-1.0), vd_mul(rh, rl), err),
                       vd_mul(rl, vd_fma(z, vd_set(-0.5), vd_set(1.0))));
    vd r = vd_add(lead, vd_fma(scale, acc, low));
    vd y = vd_xor(r, vi_as_vd(vi_shl(vi_and(q, vi_set(2)), 62)));
    if (which == 0) y = vd_select(vd_eq(x, vd_set(0.0)), x, y);            /* sin(-0) = -0 */
    return nan_passthrough(x, y);
}

/* float's e^x overflows above this (ln of the largest finite float, rounded down): where PyTorch's
 * float32 1 / (1 + e^-x) is 0. */
#define VM_SIGMOID_ZERO_F32 0x1.62e42ep+6

/* ---- tanh (float32; float64: tanh_f64_core, with exp below) ----------------------------------
 * tanh|x| = e / (e + 2), e = expm1(2|x|) (no cancellation near 0); tanh 20 rounds to 1 already.
 * In double, the float32 result needs neither the denominator's rounding error nor a Newton step.
 * sigmoid: with exp, below. */

/* expm1_core for tanh's argument 2 min(|x|, 20), which is in [0, 40] and never NaN (min gives 20
 * for a NaN |x|): expm1_core's operations for such x, without those that change nothing there
 * (the clamps to [-50, 710], min(n, 60), the NaN pass-through) or whose result it discards (the
 * two-step scaling for x > 40), or that give what they select (below).  The same bits. */
static inline vd expm1_tanh_arg(vd x, const double *p, int np)
{
    vd n, rl;
    vd rh = exp_reduce(x, &n, &rl);
    vd tail = expm1_tail(rh, rl, p, np);
    vd s = pow2i(n);
    vd a = vd_sub(s, vd_set(1.0));
    vd b = vd_mul(s, rh);
    vd hi = vd_add(a, b);
    vd lo = vd_add(vd_sub(a, hi), b);
    /* (expm1_core's select of x below 2^-54 is left out: there n = 0, s = 1, rh = x, rl = -0 and
     * tail = u < x 2^-55 (0 for a subnormal x), so y = x + u rounds to x already) */
    return vd_add(hi, vd_fma(s, tail, lo));
}

static inline vd tanh_f32_core(vd x)
{
    vd a = vd_min(vd_abs(x), vd_set(20.0));
    vd e = expm1_tanh_arg(vd_add(a, a), VM_P(exp_p_f32));
    vd t = vd_div(e, vd_add(e, vd_set(2.0)));
    vd sign = vd_and(x, vd_set(-0.0));
    return nan_passthrough(x, vd_or(t, sign));
}

/* ---- float32 kernels -------------------------------------------------------------------------
 * A float32 result needs ~2^-30 relative accuracy before its final rounding, and every float (even
 * subnormal) is a normal double whose exp/log stay far inside double's range.  So these drop what
 * the float64 kernels need for the last bits or the range ends: low-order parts of reductions,
 * two-step scaling, subnormal rescaling, most special-case selects (NaN and infinities flow
 * through the arithmetic: vd_max / vd_min return their second operand, x, when it is NaN). */
static inline vd exp_f32_core(vd x)
{
    vd xc = vd_min(vd_set(200.0), vd_max(vd_set(-200.0), x));   /* float exp saturates well before */
    vd t = vd_fma(xc, vd_set(VM_INV_LN2), vd_set(VM_MAGIC));
    vd n = vd_sub(t, vd_set(VM_MAGIC));
    vd r = vd_fma(n, vd_set(-VM_LN2_HI), xc);
    r = vd_fma(n, vd_set(-VM_LN2_LO), r);
    vd e = vd_add(vd_set(1.0), vd_fma(vd_mul(r, r), poly(r, VM_P(exp_p_f32)), r));
    /* 2^n straight from t's low bits (|n| <= 289: a normal double). */
    return vd_mul(e, vi_as_vd(vi_shl(vi_add(vd_as_vi(t), vi_set(1023)), 52)));
}

static inline vd expm1_f32_core(vd x)
{
    vd xc = vd_min(vd_set(200.0), vd_max(vd_set(-200.0), x));
    vd t = vd_fma(xc, vd_set(VM_INV_LN2), vd_set(VM_MAGIC));
    vd n = vd_sub(t, vd_set(VM_MAGIC));
    vd r = vd_fma(n, vd_set(-VM_LN2_HI), xc);
    r = vd_fma(n, vd_set(-VM_LN2_LO), r);
    vd q = vd_fma(vd_mul(r, r), poly(r, VM_P(exp_p_f32)), r);        /* e^r - 1 */
    vd s = vi_as_vd(vi_shl(vi_add(vd_as_vi(t), vi_set(1023)), 52));  /* 2^n */
    vd y = vd_fma(s, q, vd_sub(s, vd_set(1.0)));
    return vd_select(vd_eq(x, vd_set(0.0)), x, y);                   /* expm1(-0) = -0 */
}

/* log of a double that holds a float: positive finite values need no rescaling. */
static inline vd log_f32_positive(vd u)
{
    vi b = vi_add(vd_as_vi(u), vi_set(UINT64_C(0x3ff0000000000000) - VM_SQRT_HALF_BITS));
    vi m_bits = vi_add(vi_and(b, vi_set(UINT64_C(0x000fffffffffffff))), vi_set(VM_SQRT_HALF_BITS));
    vd k = vd_sub(vi_as_vd(vi_or(vi_shr(b, 52), vi_set(UINT64_C(0x4330000000000000)))),
                  vd_set(0x1p52 + 1023.0));
    vd f = vd_sub(vi_as_vd(m_bits), vd_set(1.0));
    vd s = vd_div(f, vd_add(vd_set(2.0), f));
    vd z = vd_mul(s, s);
    vd hfsq = vd_mul(vd_set(0.5), vd_mul(f, f));
    vd t = vd_mul(s, vd_fma(z, poly(z, VM_P(log_q_f32)), hfsq));
    return vd_fma(k, vd_set(VM_LN2_HI + VM_LN2_LO), vd_sub(f, vd_sub(hfsq, t)));
}

static inline vd log_specials(vd u, vd y)
{
    y = vd_select(vd_eq(u, vd_set(INFINITY)), u, y);
    y = vd_select(vd_eq(u, vd_set(0.0)), vd_set(-INFINITY), y);
    y = vd_select(vd_lt(u, vd_set(0.0)), vd_set(NAN), y);
    return nan_passthrough(u, y);
}

static inline vd log_f32_core(vd x) { return log_specials(x, log_f32_positive(x)); }

static inline vd log1p_f32_core(vd x)
{
    /* u + c = 1 + x exactly for |x| < 1 (Fast2Sum), and log(u + c) ~ log u + c / u ~ log u + c
     * to far below float's ulp: c != 0 needs |x| < 2^-29 (u ~ 1) or |x| >= 1/2 (c tiny against
     * the result).  For floats x >= 1, 1 + x is exact in double up to 2^53, and beyond that the
     * missing 1 is below the result's precision: c = 0. */
    vd one = vd_set(1.0);
    vd u = vd_add(one, x);
    vd c = vd_select(vd_lt(x, one), vd_add(vd_sub(one, u), x), vd_set(0.0));
    vd y = vd_add(log_f32_positive(u), c);
    y = log_specials(u, y);                       /* x = -1: -inf, x < -1: NaN, inf, NaN */
    return vd_select(vd_eq(x, vd_set(0.0)), x, y);  /* log1p(-0) = -0 */
}

/* Both sin x and cos x of a float (in double), as sincos_pair. */
static inline void sincos_f32_pair(vd x, vd *ys, vd *yc)
{
    vd t = vd_fma(x, vd_set(VM_TWO_OVER_PI), vd_set(VM_MAGIC));
    vd n = vd_sub(t, vd_set(VM_MAGIC));
    /* |x| <= 2^24: n < 2^24, so n * part is exact for the 28-bit parts; the rounding of the
     * second subtraction is < 2^-58, negligible against the smallest |r| of a float (~2^-27). */
    vd r = vd_fma(n, vd_set(-VM_PIO2_1), x);
    r = vd_fma(n, vd_set(-VM_PIO2_2), r);
    r = vd_fma(n, vd_set(-VM_PIO2_3), r);
    if (vm_any(vd_gt(vd_abs(x), vd_set(TG_VM_TRIG_HUGE)))) {
        trig_parts p = trig_reduce_huge(x, n, r, vd_set(0.0));    /* (its rl unused here) */
        n = p.n;
        r = p.rh;
    }
    vd z = vd_mul(r, r);
    vd sr = vd_fma(vd_mul(r, z), poly(z, VM_P(sin_s_f32)), r);
    vd cr = vd_fma(vd_mul(z, z), poly(z, VM_P(cos_c_f32)), vd_fma(z, vd_set(-0.5), vd_set(1.0)));
    /* NaN and inf give NaN through the arithmetic */
    *ys = vd_select(vd_eq(x, vd_set(0.0)), x, trig_quadrant(n, sr, cr, 0));  /* sin(-0) = -0 */
    *yc = trig_quadrant(n, sr, cr, 1);
}

static inline vd sincos_f32_core(vd x, int which)
{
    vd ys, yc;
    sincos_f32_pair(x, &ys, &yc);
    return which == 0 ? ys : yc;
}

/* e^z as float's e^z: inf where it overflows float (z > VM_SIGMOID_ZERO_F32), 0 where it rounds
 * to 0 (e^z < 2^-150); elsewhere within 1 ulp, not yet rounded to float. */
#define VM_EXP_ZERO_F32 (-0x1.9fe368f2a9ee1p+6)  /* -150 ln 2 */
static inline vd exp_f32_as_float(vd z)
{
    vd e = vd_select(vd_gt(z, vd_set(VM_SIGMOID_ZERO_F32)), vd_set(INFINITY), exp_f32_core(z));
    return vd_select(vd_lt(z, vd_set(VM_EXP_ZERO_F32)), vd_set(0.0), e);
}

/* PyTorch's float32 sigmoid: 1 / (1 + e^-x), each operation rounded to float (a float sum or
 * quotient rounded first to double gives the float result: double has more than twice float's
 * precision). */
static inline vd sigmoid_f32_core(vd x)
{
    vd e = vd_round_f32(exp_f32_as_float(vd_sub(vd_set(0.0), x)));
    vd d = vd_round_f32(vd_add(vd_set(1.0), e));
    return vd_div(vd_set(1.0), d);
}

/* ---- erf ---------------------------------------------------------------------------------
 * float64: |x| = r + d with r = i/128 the nearest grid point (|d| <= 1/256; |x| clamped to 6,
 * where erf rounds to 1), erf(r) and S = 2/sqrt(pi) e^(-r^2) from a table (double-doubles), and
 * erf(r + d) = erf(r) + S int_0^d e^(-2rt - t^2) dt = erf(r) + S d (1 + Q),
 * Q = sum_{k=1..6} c_k d^k / (k+1), e^(-2rt - t^2) = sum c_k t^k: c_0 = 1, c_1 = -2r,
 * c_{k+1} = -2 (r c_k + c_{k-1}) / (k+1) (Hermite's recurrence).  The series' remainder is below
 * 2^-68 relative (tools/vecmath_tables.py's grid); S d is kept exactly (FMA) and added to erf(r)
 * by Fast2Sum (erf(r) >= r S >= 2|S d| for r > 0), so the result is rounded once: ~0.5 ulp.
 * No exponential, no division and no data-dependent branch.
 * float32 (evaluated in double): |x| < 1: erf x = x + x A(x^2); |x| >= 1: erf |x| =
 * 1 - e^(-x^2) B(|x| - 2.5), B a fit of erfcx = e^(x^2) erfc on [1, 4] (clamped there: erf
 * already rounds to 1), both pieces computed for every vector (a data-dependent branch per vector
 * mispredicts on mixed inputs). */
static inline vd erf_f64_core(vd x)
{
    vd a = vd_min(vd_abs(x), vd_set(VM_ERF_END));   /* NaN gives END: a valid row */
    vd t = vd_fma(a, vd_set(VM_ERF_STEPS), vd_set(VM_MAGIC));
    vi i = vi_and(vd_as_vi(t), vi_set(0xfff));
    vd r = vd_mul(vd_sub(t, vd_set(VM_MAGIC)), vd_set(1.0 / VM_ERF_STEPS));
    vd d = vd_sub(a, r);                               /* exact */
    vd eh, el, sh, sl;
    vd_lookup4(tg_vm_erf_table, i, &eh, &el, &sh, &sl);
    vd c1 = vd_mul(r, vd_set(-2.0));
    vd c2 = vd_fma(vd_add(r, r), r, vd_set(-1.0));
    vd c3 = vd_mul(vd_fma(r, c2, c1), vd_set(-2.0 / 3.0));
    vd c4 = vd_mul(vd_fma(r, c3, c2), vd_set(-2.0 / 4.0));
    vd c5 = vd_mul(vd_fma(r, c4, c3), vd_set(-2.0 / 5.0));
    vd c6 = vd_mul(vd_fma(r, c5, c4), vd_set(-2.0 / 6.0));
    vd q = vd_mul(c6, vd_set(1.0 / 7.0));
    q = vd_fma(q, d, vd_mul(c5, vd_set(1.0 / 6.0)));
    q = vd_fma(q, d, vd_mul(c4, vd_set(1.0 / 5.0)));
    q = vd_fma(q, d, vd_mul(c3, vd_set(1.0 / 4.0)));
    q = vd_fma(q, d, vd_mul(c2, vd_set(1.0 / 3.0)));
    q = vd_mul(vd_fma(q, d, vd_mul(c1, vd_set(0.5))), d);
    /* S d = p + pl exactly (up to sl d's rounding) */
    vd p = vd_mul(sh, d);
    vd pl = vd_sub(vd_set(0.0), vd_fnma(sl, d, vd_fnma_exact(sh, d, p)));
    vd s = vd_add(eh, p);
    vd e = vd_add(vd_sub(eh, s), p);
    vd y = vd_add(s, vd_add(e, vd_add(el, vd_fma(p, q, pl))));
    y = vd_or(y, vd_and(x, vd_set(-0.0)));             /* the sign of x (erf(-0) = -0) */
    return nan_passthrough(x, y);
}

static inline vd erf_f32_core(vd x)
{
    vd ax = vd_abs(x);
    vd z = vd_mul(x, x);
    vd y = vd_fma(x, poly(z, VM_P(erf_a_f32)), x);
    vm big = vd_gt(ax, vd_set(0x1.fffffffffffffp-1));   /* |x| >= 1 (NaN: no) */
    vd a = vd_min(ax, vd_set(4.0));
    vd e = exp_f32_core(vd_sub(vd_set(0.0), vd_mul(a, a)));
    vd b = poly(vd_sub(a, vd_set(2.5)), VM_P(erf_b_f32));
    vd tail = vd_fnma(e, b, vd_set(1.0));                   /* 1 - erfc |x| */
    tail = vd_or(tail, vd_and(x, vd_set(-0.0)));            /* the sign of x */
    return vd_select(big, tail, y);
}

#endif /* VM_POW_ONLY */

/* ---- pow (x ** y for a number y) ---------------------------------------------------------
 * x^y = e^(y log|x|), both halves table-driven (tools/vecmath_tables.py).  float64 keeps log|x| as
 * a double-double, so that t = y log|x| has an absolute error ~2^-60 even at |t| ~ 745, where the
 * result's relative error is t's absolute one.
 *
 * log: |x| = 2^k m, m in [sqrt(1/2), sqrt 2) as in log_positive; m's slice (7 bits) gives invc ~
 * 1/c, a short number, and log c = lc + lcl, so that r = m invc - 1 is exact in one FMA
 * (|r| < 0.0056) and log|x| = k ln2 + log c + log1p(r), log1p(r) = r - r^2/2 + r^3 Q(r) with Q
 * Taylor's to r^10.  k ln2_hi + lc is exact (lc's grid), adding r is exact by Fast2Sum (the
 * table generator checks the slices where r could outrun lc) and so is adding -r^2/2 (the
 * square's rounding error is recovered by an FMA); these steps' errors, k ln2_lo, lcl and
 * r^3 Q(r) make the low part.  No division and no long chain: a one-element call waits for
 * the critical path (the former double-double log summed everything through error-free
 * additions and evaluated its polynomials by Horner's rule, ~2x the latency), so polynomials are
 * evaluated by Estrin's scheme.
 * exp: e^(th + tl), K = round(th 128/ln2) = 128 n + i (from y 128/ln2 times log's hi: it does not
 * wait for th, and any integer near serves), th + tl = K ln2/128 + r (the product with ln2/128's
 * leading part subtracted exactly by an FMA), |r| < 0.0031, e^t = 2^n 2^(i/128) e^r with
 * 2^(i/128) = s_i (1 + tail_i) from the table and 2^n added to s_i's exponent bits, e^r - 1 by
 * Taylor's polynomial to r^5 (float32: r^3): s (1 + (tail + r + ...)) is rounded once (FMA).
 * |th| > 708 (a result that overflows, is subnormal or 0: rare) takes a branch that clamps th and
 * scales by 2^600 or 2^-600 in two steps, giving the common path's bits wherever that one is in
 * range.  Every multiply-add is fused at every level (vd_fma_exact), so the levels' bits agree.
 * Special values (C99 / numpy pow): the caller handles y = 0, NaN and infinities; here |x| = 0
 * or inf give 0 or inf by the sign of y, a negative x gives NaN unless y is an integer, and an
 * odd integer y keeps the sign of x (signed zeros and infinities too).  Lanes past an array's end
 * are loaded as 1 (vd_load_part_one): log 1 = 0 and e^0 = 1 take no rare branch, where zeros
 * went through log 0 and an underflowing exponential (microcode assists at every short call). */
/* u = 2^k m (u a positive normal double, m in [sqrt(1/2), sqrt 2)): m, k, and the index of m's
 * slice when that range is cut into 2^bits (uniformly in the bits of each binade). */
static inline vi pow_split(vd u, int bits, vd *m, vd *k)
{
    vi b = vi_add(vd_as_vi(u), vi_set(UINT64_C(0x3ff0000000000000) - VM_SQRT_HALF_BITS));
    *m = vi_as_vd(vi_add(vi_and(b, vi_set(UINT64_C(0x000fffffffffffff))),
                         vi_set(VM_SQRT_HALF_BITS)));
    *k = vd_sub(vi_as_vd(vi_or(vi_shr(b, 52), vi_set(UINT64_C(0x4330000000000000)))),
                vd_set(0x1p52 + 1023.0));
    return vi_and(vi_shr(b, 52 - bits), vi_set((UINT64_C(1) << bits) - 1));
}

/* pow_split with the log table's row for m's slice. */
static inline void pow_log_split(vd u, vd *m, vd *k, vd *invc, vd *lc, vd *lcl)
{
    vi j = pow_split(u, VM_LOG_TABLE_BITS, m, k);
    vd unused;
    vd_lookup4(tg_vm_log_table, j, invc, lc, lcl, &unused);
    (void)unused;
}

/* log|x| = hi + *lo_out for ax = |x| > 0 finite; 0 gives log 1 (the caller patches it), inf and
 * NaN something finite. */
static inline vd pow_log(vd ax, vd *lo_out)
{
    vd u = ax, kadj = vd_set(0.0);
    vm tiny = vd_lt(ax, vd_set(0x1p-1022));
    if (vm_any(tiny)) {  /* subnormals: scaled into the normal range; zeros: 1 */
        vm zero = vd_eq(ax, vd_set(0.0));
        u = vd_select(zero, vd_set(1.0), vd_select(tiny, vd_mul(ax, vd_set(0x1p54)), ax));
        kadj = vd_select(vm_andnot(zero, tiny), vd_set(-54.0), vd_set(0.0));
    }
    vd m, k, invc, lc, lcl;
    pow_log_split(u, &m, &k, &invc, &lc, &lcl);
    k = vd_add(k, kadj);
    vd r = vd_fma_exact(m, invc, vd_set(-1.0));               /* exact */
    vd t1 = vd_fma_exact(k, vd_set(VM_LN2_HI), lc);           /* exact */
    vd t2 = vd_add(t1, r);
    vd lo1 = vd_fma_exact(k, vd_set(VM_LN2_LO), lcl);
    vd lo2 = vd_add(vd_sub(t1, t2), r);                        /* Fast2Sum */
    vd z = vd_mul(r, r);
    vd ar2 = vd_mul(z, vd_set(-0.5));
    vd hi = vd_add(t2, ar2);
    vd lo3 = vd_mul(vd_fnma_exact(r, r, z), vd_set(0.5));     /* -(r^2 - z) / 2 */
    vd lo4 = vd_add(vd_sub(t2, hi), ar2);                      /* Fast2Sum */
    /* Q = 1/3 - r/4 + ... - r^7/10 by Estrin's scheme */
    vd z2 = vd_mul(z, z);
    vd q01 = vd_fma_exact(r, vd_set(-1.0 / 4), vd_set(1.0 / 3));
    vd q23 = vd_fma_exact(r, vd_set(-1.0 / 6), vd_set(1.0 / 5));
    vd q45 = vd_fma_exact(r, vd_set(-1.0 / 8), vd_set(1.0 / 7));
    vd q67 = vd_fma_exact(r, vd_set(-1.0 / 10), vd_set(1.0 / 9));
    vd q = vd_fma_exact(z2, vd_fma_exact(z, q67, q45), vd_fma_exact(z, q23, q01));
    vd lo = vd_fma_exact(vd_mul(z, r), q, vd_add(vd_add(lo1, lo2), vd_add(lo3, lo4)));
    vd y = vd_add(hi, lo);
    *lo_out = vd_add(vd_sub(hi, y), lo);
    return y;
}

/* The common part of e^(th - ntl): 2^(K/128) into *s, and e^(th - ntl) / 2^(K/128) - 1 returned;
 * zk = th 128/ln2 + MAGIC, K in its low bits. */
static inline vd pow_exp_parts(vd th, vd ntl, vd zk, vd *s)
{
    vd kd = vd_sub(zk, vd_set(VM_MAGIC));
    vi ki = vd_as_vi(zk);                         /* K in the low bits */
    vd r = vd_fma_exact(kd, vd_set(-VM_POW_LN2N_HI), th);     /* exact */
    r = vd_sub(r, vd_fma_exact(kd, vd_set(VM_POW_LN2N_LO), ntl));
    vd tail, sbits;
    vd_lookup2(tg_vm_pow_exp_table, vi_and(ki, vi_set((1u << VM_POW_EXP_BITS) - 1)), &tail, &sbits);
    *s = vi_as_vd(vi_add(vd_as_vi(sbits), vi_shl(ki, 52 - VM_POW_EXP_BITS)));
    /* tail + r + r^2 (1/2 + r/6) + r^4 (1/24 + r/120) */
    vd z = vd_mul(r, r);
    vd c23 = vd_fma_exact(r, vd_set(1.0 / 6), vd_set(0.5));
    vd p = vd_fma_exact(z, vd_fma_exact(r, vd_set(1.0 / 120), vd_set(1.0 / 24)), c23);
    return vd_fma_exact(z, p, vd_add(tail, r));
}

/* pow_exp for a vector with some |th| > 708 (a result that overflows, is subnormal or 0): th
 * clamped, and 2^K scaled in two steps by 2^600 or 2^-600. */
static TG_VM_NOINLINE vd pow_exp_far(vd th, vd ntl)
{
    /* Beyond the clamp the result is 0 or inf whatever ntl is (which may be inf or NaN). */
    vd xc = vd_min(vd_set(720.0), vd_max(vd_set(-760.0), th));
    ntl = vd_select(vd_eq(xc, th), ntl, vd_set(0.0));
    th = xc;
    vd zk = vd_fma_exact(th, vd_set(VM_POW_N_OVER_LN2), vd_set(VM_MAGIC));
    vm pos = vd_gt(th, vd_set(0.0));
    vd bias = vd_select(pos, vi_as_vd(vi_set(UINT64_C(0) - (UINT64_C(600) << 52))),
                        vi_as_vd(vi_set(UINT64_C(600) << 52)));
    vd scale2 = vd_select(pos, vd_set(0x1p600), vd_set(0x1p-600));
    vd s, tmp = pow_exp_parts(th, ntl, zk, &s);
    s = vi_as_vd(vi_add(vd_as_vi(s), vd_as_vi(bias)));
    return vd_mul(vd_fma_exact(s, tmp, s), scale2);
}

/* e^(th - ntl), |ntl| <= ~2^-52 |th|; zk = th 128/ln2 + MAGIC (the caller's product: from y's
 * multiple and log's hi it does not wait for th). */
static inline vd pow_exp(vd th, vd ntl, vd zk)
{
    if (vm_any(vd_gt(vd_abs(th), vd_set(708.0)))) return pow_exp_far(th, ntl);
    vd s, tmp = pow_exp_parts(th, ntl, zk, &s);
    return vd_fma_exact(s, tmp, s);
}

/* What the loops need to know about the exponent y (finite, nonzero): y and y 128/ln2 (pow_exp's
 * zk).  What the special values need (pow_specials) is derived from y only where an x needs it. */
typedef struct {
    double y, y_n;
} pow_exponent;

static inline pow_exponent pow_exponent_of(double y)
{
    pow_exponent e;
    e.y = y;
    e.y_n = y * VM_POW_N_OVER_LN2;
    return e;
}

/* From r = |x|^y (right for positive normal x) to pow's value at every x; the selects only for
 * vectors that need them (a branch off the critical path: positive data never takes it). */
static inline vd pow_specials(vd x, vd ax, vd r, const pow_exponent *pe)
{
    vm special = vm_or(vm_or(vd_lt(x, vd_set(0x1p-1022)), vd_gt(x, vd_set(0x1.fffffffffffffp+1023))), vd_isnan(x));
    if (!vm_any(special)) return r;
    double y = pe->y;
    r = vd_select(vd_eq(ax, vd_set(0.0)), vd_set(y > 0 ? 0.0 : INFINITY), r);
    r = vd_select(vd_eq(ax, vd_set(INFINITY)), vd_set(y > 0 ? INFINITY : 0.0), r);
    /* y / 2 is exact, and not an integer for an odd y (|y| >= 2^53 is even) */
    if (floor(y) == y && floor(0.5 * y) != 0.5 * y)
        r = vd_or(r, vd_and(x, vd_set(-0.0)));
    else if (floor(y) != y)
        r = vd_select(vm_and(vd_lt(x, vd_set(0.0)), vd_gt(x, vd_set(-INFINITY))), vd_set(NAN), r);
    return nan_passthrough(x, r);
}

/* |x|^y, right for positive normal x (others: pow_specials). */
static inline vd pow_abs(vd ax, const pow_exponent *pe)
{
    vd lo;
    vd hi = pow_log(ax, &lo);
    vd y = vd_set(pe->y);
    vd th = vd_mul(y, hi);
    /* th - y (hi + lo) = (th - y hi) - y lo, both products exactly */
    vd ntl = vd_fnma_exact(y, lo, vd_fnma_exact(y, hi, th));
    vd zk = vd_fma_exact(vd_set(pe->y_n), hi, vd_set(VM_MAGIC));
    return pow_exp(th, ntl, zk);
}

static inline vd pow_core(vd x, const pow_exponent *pe)
{
    vd ax = vd_abs(x);
    return pow_specials(x, ax, pow_abs(ax, pe), pe);
}

/* ---- float64 exp and log, nearly correctly rounded --------------------------------------------
 * pow's table-driven halves (below) serve exp and log too: e^x is pow_exp(x, 0) and log x is
 * pow_log's double-double rounded once, each within ~0.501 ulp, so a result is the correctly
 * rounded one except within ~0.001 ulp of a midpoint.  PyTorch's float64 exp and log (MKL VML / the
 * SVML kernels numpy uses on AVX-512 CPUs, glibc's elsewhere) are nearly correctly rounded too:
 * the short polynomials above (within 1 ulp) gave other bits in 3-5% of inputs.  Their reduction
 * stays for expm1 and tanh. */
#ifndef VM_POW_ONLY
static inline vd exp_f64_core(vd x)
{
    vd zk = vd_fma_exact(x, vd_set(VM_POW_N_OVER_LN2), vd_set(VM_MAGIC));
    return nan_passthrough(x, pow_exp(x, vd_set(0.0), zk));
}

/* sigmoid x = 1 / (1 + e^-x), PyTorch's formula and order of operations (its float64 kernel
 * rounds the exponential, the sum and the quotient; so does this one, on this library's exp):
 * 0 where e^-x overflows, 1 at +inf, NaN for NaN. */
static inline vd sigmoid_f64_core(vd x)
{
    vd one = vd_set(1.0);
    return vd_div(one, vd_add(one, exp_f64_core(vd_sub(vd_set(0.0), x))));
}

/* float64 tanh|x| = E / (E + 2), E = expm1(2|x|), with E from a 16-entry table: 2|x| = K ln2/16 +
 * rh + rl (rh exact, |rh| <= ln2/32; rl = -K LN2N_LO, below 2^-48), e^(2|x|) = s (1 + tail)
 * e^(rh + rl) with s = 2^(K/16) rounded and tail its relative error (vecmath_tables.h's
 * VM_TANH_EXP columns, held in registers), so E = (s - 1) + s rh + s qt,
 * qt = (tail + rl)(1 + rh) + rh^2 P(rh), P the Taylor polynomial of (e^r - 1 - r) / r^2 to r^6
 * (the first term left out, r^9/9!, is below 2^-62 of E).  s - 1 is exact while s < 2^53
 * (|x| < 18.3; past it tanh rounds to 1 whatever that rounding) and s rh is split exactly, so E
 * is carried unrounded as hi + lo (Fast2Sum: |s - 1| >= |s rh| when K > 0, s - 1 = 0 when
 * K = 0) into the quotient, whose denominator's rounding is kept too and which one Newton step
 * corrects.  Rounding the sum s - 1 + s rh instead (an earlier prototype) cost up to
 * 2.04 ulp near |x| = 0.0017, where it cancels.  Against expm1_core's degree-9 polynomial and
 * recombination: fewer multiply-adds on a shorter path, and the table costs two permutes, not a
 * load per lane (with pow's 128-entry table, the loads ate the gain at the AVX-512 level).
 * Measured (tools/ulp_check.py): within 0.52 ulp, the same bits at every level; 0.86 -> 0.70 ns
 * per element in cache at the AVX-512 level, 1.75 -> 1.6 at AVX2 (the portable level calls C's
 * fma() for its exact multiply-adds: 11 -> 19 ns). */
static inline vd tanh_f64_core(vd x)
{
    static const double exp_tail[] = VM_TANH_EXP_TAIL, exp_sbits[] = VM_TANH_EXP_SBITS;
    vd a = vd_min(vd_abs(x), vd_set(20.0));        /* NaN gives 20 (patched below) */
    vd th = vd_add(a, a);                          /* exact */
    /* K from |x| times 2 16/ln2 (the product th 16/ln2 exactly; one addition less to wait for) */
    vd zk = vd_fma_exact(a, vd_set(2 * VM_TANH_N_OVER_LN2), vd_set(VM_MAGIC));
    vd kd = vd_sub(zk, vd_set(VM_MAGIC));
    vi ki = vd_as_vi(zk);                          /* K in the low bits */
    vd rh = vd_fma_exact(kd, vd_set(-VM_TANH_LN2N_HI), th);   /* exact */
    vd rl = vd_mul(kd, vd_set(-VM_TANH_LN2N_LO));
    vd tail, sbits;
    vd_lookup16(exp_tail, exp_sbits, vi_and(ki, vi_set((1u << VM_TANH_EXP_BITS) - 1)), &tail, &sbits);
    vd s = vi_as_vd(vi_add(vd_as_vi(sbits), vi_shl(ki, 52 - VM_TANH_EXP_BITS)));
    /* P = 1/2 + r/6 + r^2/24 + ... + r^6/8! by Estrin's scheme */
    vd z = vd_mul(rh, rh);
    vd p01 = vd_fma_exact(rh, vd_set(1.0 / 6), vd_set(0.5));
    vd p23 = vd_fma_exact(rh, vd_set(1.0 / 120), vd_set(1.0 / 24));
    vd p45 = vd_fma_exact(rh, vd_set(1.0 / 5040), vd_set(1.0 / 720));
    vd p = vd_fma_exact(vd_mul(z, z), vd_fma_exact(z, vd_set(1.0 / 40320), p45),
                        vd_fma_exact(z, p23, p01));
    vd tl = vd_add(tail, rl);
    vd qt = vd_fma_exact(z, p, vd_fma_exact(tl, rh, tl));
    vd e_a = vd_sub(s, vd_set(1.0));               /* exact */
    vd e_b = vd_mul(s, rh);
    vd e_bl_neg = vd_fnma_exact(s, rh, e_b);       /* e_b - s rh, exact */
    vd ab = vd_add(e_a, e_b);
    /* s qt is up to |x| times ab (qt ~ rh^2 / 2 where K = 0), so it joins the high part (Fast2Sum
     * again), for the Newton step's 1 / d to be 1 / (E + 2) to the last bits; ab's own rounding
     * error joins the low part off the path to the division */
    vd nsq = vd_fnma_exact(s, qt, e_bl_neg);       /* -(s qt + s rh - e_b) */
    vd e_hi = vd_sub(ab, nsq);
    vd e_lo = vd_add(vd_sub(vd_sub(ab, e_hi), nsq), vd_add(vd_sub(e_a, ab), e_b));
    /* (e_hi + e_lo) / (d + dl + e_lo), d + dl = e_hi + 2 exactly */
    vd two = vd_set(2.0);
    vd d = vd_add(e_hi, two);
    vd dl = vd_add(vd_sub(vd_max(e_hi, two), d), vd_min(e_hi, two));
    vd r = vd_div(vd_set(1.0), d);
    vd y = vd_mul(e_hi, r);
    vd residual = vd_fnma_exact(y, vd_add(dl, e_lo), vd_add(vd_fnma_exact(y, d, e_hi), e_lo));
    vd t = vd_fma_exact(residual, r, y);
    return nan_passthrough(x, vd_or(t, vd_and(x, vd_set(-0.0))));
}

static inline vd log_f64_core(vd x)
{
    vd unused;
    /* pow_log reads |x|; the specials patch negative, zero, infinite and NaN inputs. */
    return log_specials(x, pow_log(vd_abs(x), &unused));
}
#endif

/* ---- float32 pow ----------------------------------------------------------------------------
 * Its own algorithm, evaluated in double: a float x is a normal double (or 0, inf, NaN), and
 * where the float result is neither 0 nor inf, |t| = |y log2|x|| <= 150, so t needs an absolute
 * error ~2^-28 only.  log2|x| = (k + log2 c) + r Q(r) with c from a 32-slice table (rows invc,
 * log2 c; r = m invc - 1, |r| < 0.0153; Q of degree 4 by Estrin's scheme, relative error
 * < 2^-35.8 where log2|x| is smallest: tools/vecmath_tables.py).  t is never rounded: K =
 * round(128 t) and r' = t - K/128 come each from one FMA of y and log2|x| (adding 1.5 2^45 leaves
 * K in the low bits), 2^(K/128) is pow's exp table's s (2^n added to its exponent bits) and
 * 2^r' = 1 + r' E(r') (E of degree 2, |r'| <= 2^-8, 2^-40.7).  The double result is within
 * 2^-28.6 of x^y at |t| = 150 (less below) and is rounded once to float: a 0.54 ulp bound, and
 * ~1e-6 of the results not correctly rounded.  Shorter than the float64 core (no double-double,
 * small tables), it is what a one-element float32 pow waits for.  |t| > 1000 (the result far
 * past float's range; also 0, inf and NaN x, which pow_specials replaces) takes a branch that
 * computes 2^(+-1000) there instead, so that the exponent arithmetic stays in range, with the
 * common path's bits in a vector's other lanes. */
#define VM_POW_F32_SHIFT (VM_MAGIC / (1 << VM_POW_EXP_BITS))

/* 2^(y lg) from kd = y lg + SHIFT (K = round(128 y lg) in its low bits) and nk = SHIFT - kd. */
static inline vd pow_f32_exp2(vd y, vd lg, vd kd, vd nk)
{
    vd r = vd_fma_exact(y, lg, nk);
    vi ki = vd_as_vi(kd);
    vd unused, sbits;
    vd_lookup2(tg_vm_pow_exp_table, vi_and(ki, vi_set((1u << VM_POW_EXP_BITS) - 1)), &unused, &sbits);
    (void)unused;
    vd s = vi_as_vd(vi_add(vd_as_vi(sbits), vi_shl(ki, 52 - VM_POW_EXP_BITS)));
    /* r E(r) = r e2 + r^2 (e1 + e0 r) */
    vd p = vd_fma_exact(vd_mul(r, r), vd_fma_exact(r, vd_set(pow_exp2_e_f32[0]), vd_set(pow_exp2_e_f32[1])),
                        vd_mul(r, vd_set(pow_exp2_e_f32[2])));
    return vd_fma_exact(s, p, s);
}

/* pow_f32_exp2 for a vector with some |y lg| > 1000 (nk = SHIFT - kd): 2^(+-1000) there. */
static TG_VM_NOINLINE vd pow_f32_exp2_far(vd y, vd lg, vd nk)
{
    vm big = vd_gt(vd_abs(nk), vd_set(1000.0));
    lg = vd_select(big, vd_select(vd_gt(nk, vd_set(0.0)), vd_set(-1000.0), vd_set(1000.0)), lg);
    y = vd_select(big, vd_set(1.0), y);
    vd kd = vd_fma_exact(y, lg, vd_set(VM_POW_F32_SHIFT));
    return pow_f32_exp2(y, lg, kd, vd_sub(vd_set(VM_POW_F32_SHIFT), kd));
}

/* |x|^y, right for positive normal x (others: pow_specials). */
static inline vd pow_f32_abs(vd ax, const pow_exponent *pe)
{
    vd m, k, invc, log2c;
    vi j = pow_split(ax, VM_POW_LOG2_F32_BITS, &m, &k);
    vd_lookup2(tg_vm_pow_log2_f32_table, j, &invc, &log2c);
    vd r = vd_fma_exact(m, invc, vd_set(-1.0));
    /* r Q(r) = r (q4 + q3 r) + r^3 (q2 + q1 r + q0 r^2) */
    vd r2 = vd_mul(r, r);
    vd lo = vd_fma_exact(r, vd_set(pow_log2_q_f32[3]), vd_set(pow_log2_q_f32[4]));
    vd hi = vd_fma_exact(r2, vd_set(pow_log2_q_f32[0]),
                         vd_fma_exact(r, vd_set(pow_log2_q_f32[1]), vd_set(pow_log2_q_f32[2])));
    vd lg = vd_fma_exact(vd_mul(r2, r), hi, vd_fma_exact(r, lo, vd_add(k, log2c)));
    vd y = vd_set(pe->y);
    vd kd = vd_fma_exact(y, lg, vd_set(VM_POW_F32_SHIFT));
    vd nk = vd_sub(vd_set(VM_POW_F32_SHIFT), kd);                 /* -K/128, exact */
    if (vm_any(vd_gt(vd_abs(nk), vd_set(1000.0)))) return pow_f32_exp2_far(y, lg, nk);
    return pow_f32_exp2(y, lg, kd, nk);
}

static inline vd pow_f32_core(vd x, const pow_exponent *pe)
{
    vd ax = vd_abs(x);
    return pow_specials(x, ax, pow_f32_abs(ax, pe), pe);
}

#ifdef VM_POW_ONLY
#if VM_W != 1
#error "VM_POW_ONLY is pow's one-lane path"
#endif
/* pow's one-lane path (1-2 elements): one element at a time, no unrolled body (whose constants the
 * compiler loaded, and partly spilled, before it could start the first element); a positive
 * normal x goes straight to |x|^y, any other x to the vector levels' code for it (pow_specials
 * gives |x|^y unchanged for positive normal x: the same bits either way), out of line. */
#define VM_POW_ONE_LANE(CORE, ABS)                                                             \
    static TG_VM_NOINLINE vd CORE##_special(vd x, const pow_exponent *pe)                      \
    {                                                                                          \
        return CORE(x, pe);                                                                    \
    }                                                                                          \
    static inline vd CORE##_one(vd x, const pow_exponent *pe)                                  \
    {                                                                                          \
        if (x >= 0x1p-1022 && x <= 0x1.fffffffffffffp+1023) return ABS(x, pe);                \
        return CORE##_special(x, pe);                                                          \
    }
VM_POW_ONE_LANE(pow_core, pow_abs)
VM_POW_ONE_LANE(pow_f32_core, pow_f32_abs)
#define VM_POW_LOOP(SUFFIX, T, LOAD, LOAD_PART, STORE, STORE_PART, CORE)                       \
    void VM_XCAT3(tg_vm_pow_##SUFFIX, _, VM_LEVEL_NAME)(const T *x, T y, T *out, size_t n)     \
    {                                                                                          \
        const pow_exponent pe = pow_exponent_of((double)y);                                    \
        for (size_t i = 0; i < n; i++) STORE(out + i, CORE##_one(LOAD(x + i), &pe));           \
    }
#else
/* The tail goes through a masked load (lanes past the end read as 1) and a masked store (through a
 * buffer, its copy was a memcpy call, and at sizes 1-16 a pow is mostly tail). */
#define VM_POW_LOOP(SUFFIX, T, LOAD, LOAD_PART, STORE, STORE_PART, CORE)                       \
    void VM_XCAT3(tg_vm_pow_##SUFFIX, _, VM_LEVEL_NAME)(const T *x, T y, T *out, size_t n)     \
    {                                                                                          \
        const pow_exponent pe = pow_exponent_of((double)y);                                    \
        size_t i = 0;                                                                          \
        for (; i + 2 * VM_W <= n; i += 2 * VM_W) {                                             \
            vd a = CORE(LOAD(x + i), &pe), b = CORE(LOAD(x + i + VM_W), &pe);                  \
            STORE(out + i, a);                                                                 \
            STORE(out + i + VM_W, b);                                                          \
        }                                                                                      \
        for (; i + VM_W <= n; i += VM_W) STORE(out + i, CORE(LOAD(x + i), &pe));               \
        if (i < n) STORE_PART(out + i, CORE(LOAD_PART(x + i, n - i), &pe), n - i);             \
    }
#endif
VM_POW_LOOP(f64, double, vd_load, vd_load_part_one, vd_store, vd_store_part, pow_core)
VM_POW_LOOP(f32, float, vd_load_f32, vd_load_f32_part_one, vd_store_f32, vd_store_f32_part,
            pow_f32_core)

#ifndef VM_POW_ONLY
/* ---- per-element entry points and loops ----------------------------------------------------- */
#define VM_UNARY(name, expr64, expr32)                                                        \
    static inline vd name##_v64(vd x) { return expr64; }                                       \
    static inline vd name##_v32(vd x) { return expr32; }
VM_UNARY(exp, exp_f64_core(x), exp_f32_core(x))
VM_UNARY(expm1, expm1_core(x, VM_P(exp_p_f64)), expm1_f32_core(x))
VM_UNARY(log, log_f64_core(x), log_f32_core(x))
VM_UNARY(log1p, log1p_core(x, VM_P(log_q_f64)), log1p_f32_core(x))
VM_UNARY(sin, sincos_core(x, 0, VM_P(sin_s_f64), VM_P(cos_c_f64)), sincos_f32_core(x, 0))
VM_UNARY(cos, sincos_core(x, 1, VM_P(sin_s_f64), VM_P(cos_c_f64)), sincos_f32_core(x, 1))
VM_UNARY(tanh, tanh_f64_core(x), tanh_f32_core(x))
VM_UNARY(sigmoid, sigmoid_f64_core(x), sigmoid_f32_core(x))
VM_UNARY(erf, erf_f64_core(x), erf_f32_core(x))

/* silu x = x / (1 + e^-x), PyTorch's formula, each operation rounded to the dtype (float32 at the
 * portable level as sigmoid_f32_core; the others have native float code, vecmath_f32n.h): x = -inf
 * gives NaN and x < -88.7 gives -0 in float32, as PyTorch's. */
VM_UNARY(silu, vd_div(x, vd_add(vd_set(1.0), exp_f64_core(vd_sub(vd_set(0.0), x)))),
         vd_div(x, vd_round_f32(vd_add(vd_set(1.0), vd_round_f32(exp_f32_as_float(vd_sub(vd_set(0.0), x)))))))

/* Four vectors per iteration (their dependency chains -- a polynomial is one long chain -- overlap
 * in the out-of-order window), then one, then the tail padded with zeros into one more vector
 * (same code path, so an element's result does not depend on its position).  The tail is read by
 * a masked load: staged through a buffer, its scalar stores could not forward to the vector load,
 * which waited for them to reach the cache (a one-element call is all tail).  The float64 loops are the
 * level's exported kernels; the float32 ones (name_f32_via_f64) are exported by the level's
 * translation unit, which may replace some by native float code. */
#define VM_LOOPS(name)                                                                         \
    void VM_XCAT3(tg_vm_##name, _f64_, VM_LEVEL_NAME)(const double *x, double *y, size_t n)    \
    {                                                                                          \
        size_t i = 0;                                                                          \
        for (; i + 4 * VM_W <= n; i += 4 * VM_W) {                                             \
            vd a = name##_v64(vd_load(x + i)), b = name##_v64(vd_load(x + i + VM_W));          \
            vd c = name##_v64(vd_load(x + i + 2 * VM_W)), d = name##_v64(vd_load(x + i + 3 * VM_W)); \
            vd_store(y + i, a);                                                                \
            vd_store(y + i + VM_W, b);                                                         \
            vd_store(y + i + 2 * VM_W, c);                                                     \
            vd_store(y + i + 3 * VM_W, d);                                                     \
        }                                                                                      \
        for (; i + VM_W <= n; i += VM_W) vd_store(y + i, name##_v64(vd_load(x + i)));          \
        if (i < n) {                                                                           \
            double buf[VM_W];                                                                  \
            vd_store(buf, name##_v64(vd_load_part(x + i, n - i)));                             \
            VM_TAIL_COPY(y + i, buf, n - i);                                                   \
        }                                                                                      \
    }                                                                                          \
    static inline void name##_f32_via_f64(const float *x, float *y, size_t n)                  \
    {                                                                                          \
        size_t i = 0;                                                                          \
        for (; i + 4 * VM_W <= n; i += 4 * VM_W) {                                             \
            vd a = name##_v32(vd_load_f32(x + i)), b = name##_v32(vd_load_f32(x + i + VM_W));  \
            vd c = name##_v32(vd_load_f32(x + i + 2 * VM_W));                                  \
            vd d = name##_v32(vd_load_f32(x + i + 3 * VM_W));                                  \
            vd_store_f32(y + i, a);                                                            \
            vd_store_f32(y + i + VM_W, b);                                                     \
            vd_store_f32(y + i + 2 * VM_W, c);                                                 \
            vd_store_f32(y + i + 3 * VM_W, d);                                                 \
        }                                                                                      \
        for (; i + VM_W <= n; i += VM_W) vd_store_f32(y + i, name##_v32(vd_load_f32(x + i)));  \
        if (i < n) {                                                                           \
            float buf[VM_W];                                                                   \
            vd_store_f32(buf, name##_v32(vd_load_f32_part(x + i, n - i)));                     \
            VM_TAIL_COPY(y + i, buf, n - i);                                                   \
        }                                                                                      \
    }
TG_VM_KERNELS(VM_LOOPS)

/* ---- activations with parameters and activation gradients, one pass -------------------------
 * vecmath.h (tg_vm_elu_f64 ...) gives their formulas: PyTorch's, with the transcendental function
 * in registers instead of staged through memory.  float64 evaluates each formula's operations in
 * PyTorch's order; float32 evaluates them in double from the float32 kernels' functions (accurate
 * to ~2^-30) and rounds once, except where a float32 result decides a special value: x * beta is
 * rounded to float before it is compared with the threshold and exponentiated (as PyTorch's float
 * product), and e^z is inf where float's e^z overflows (z > VM_SIGMOID_ZERO_F32) and 0 where it
 * rounds to 0 (e^z < 2^-150), so that the formulas give PyTorch's inf and NaN there (g = inf
 * times e^-inf is NaN). */

/* elu: x > 0 ? x : alpha (e^x - 1) */
static inline vd elu_v64(vd x, double alpha, double unused)
{
    (void)unused;
    return vd_select(vd_gt(x, vd_set(0.0)), x, vd_mul(vd_set(alpha), expm1_core(x, VM_P(exp_p_f64))));
}
static inline vd elu_v32(vd x, double alpha, double unused)
{
    (void)unused;
    /* expm1 rounded to float before the product, as PyTorch rounds it (the product of two floats
     * is exact in double: one rounding, as float's product) */
    return vd_select(vd_gt(x, vd_set(0.0)), x, vd_mul(vd_set(alpha), vd_round_f32(expm1_f32_core(x))));
}

/* softplus: z = x beta; z > threshold ? x : log1p(e^z) / beta */
static inline vd softplus_v64(vd x, double beta, double threshold)
{
    vd z = vd_mul(x, vd_set(beta));
    vd y = vd_div(log1p_core(exp_f64_core(z), VM_P(log_q_f64)), vd_set(beta));
    return vd_select(vd_gt(z, vd_set(threshold)), x, y);
}
static inline vd softplus_v32(vd x, double beta, double threshold)
{
    vd z = vd_round_f32(vd_mul(x, vd_set(beta)));
    vd y = vd_div(log1p_f32_core(exp_f32_as_float(z)), vd_set(beta));
    return vd_select(vd_gt(z, vd_set(threshold)), x, y);
}

/* elu's gradient: x > 0 ? g : g alpha e^x (a NaN x gives NaN, as PyTorch's vectorised kernel;
 * its scalar tail gives g) */
static inline vd elu_grad_v64(vd g, vd x, double alpha, double unused)
{
    (void)unused;
    vd e = exp_f64_core(x);
    return vd_select(vd_gt(x, vd_set(0.0)), g, vd_mul(vd_mul(g, vd_set(alpha)), e));
}
static inline vd elu_grad_v32(vd g, vd x, double alpha, double unused)
{
    (void)unused;
    vd e = exp_f32_as_float(x);
    return vd_select(vd_gt(x, vd_set(0.0)), g, vd_mul(vd_mul(g, vd_set(alpha)), e));
}

/* softplus's gradient: z = x beta; z > threshold ? g : g e^z / (e^z + 1) */
static inline vd softplus_grad_v64(vd g, vd x, double beta, double threshold)
{
    vd z = vd_mul(x, vd_set(beta));
    vd e = exp_f64_core(z);
    vd y = vd_div(vd_mul(g, e), vd_add(e, vd_set(1.0)));
    return vd_select(vd_gt(z, vd_set(threshold)), g, y);
}
static inline vd softplus_grad_v32(vd g, vd x, double beta, double threshold)
{
    vd z = vd_round_f32(vd_mul(x, vd_set(beta)));
    vd e = exp_f32_as_float(z);
    vd y = vd_div(vd_mul(g, e), vd_add(e, vd_set(1.0)));
    return vd_select(vd_gt(z, vd_set(threshold)), g, y);
}

/* silu's gradient: s = 1 / (1 + e^-x); g s (1 + x (1 - s)) (no parameters) */
static inline vd silu_grad_of(vd g, vd x, vd s)
{
    vd one = vd_set(1.0);
    return vd_mul(vd_mul(g, s), vd_add(one, vd_mul(x, vd_sub(one, s))));
}
static inline vd silu_grad_v64(vd g, vd x, double unused0, double unused1)
{
    (void)unused0;
    (void)unused1;
    vd e = exp_f64_core(vd_sub(vd_set(0.0), x));
    return silu_grad_of(g, x, vd_div(vd_set(1.0), vd_add(vd_set(1.0), e)));
}
static inline vd silu_grad_v32(vd g, vd x, double unused0, double unused1)
{
    (void)unused0;
    (void)unused1;
    /* s in double (not PyTorch's float-rounded sigmoid): the formula is evaluated in double and
     * rounded once, as this level's other float32 kernels */
    vd one = vd_set(1.0);
    return silu_grad_of(g, x, vd_div(one, vd_add(one, exp_f32_as_float(vd_sub(vd_set(0.0), x)))));
}

/* The loops: VM_LOOPS' shape (four vectors per iteration, the tail through a masked load) with
 * the parameters, and for the gradients the upstream gradient g as a second array. */
#define VM_ACT_LOOP(DECL, T, LOAD, LOAD_PART, STORE, V)                                        \
    DECL(const T *x, T p0, T p1, T *y, size_t n)                                               \
    {                                                                                          \
        const double q0 = p0, q1 = p1;                                                         \
        size_t i = 0;                                                                          \
        for (; i + 4 * VM_W <= n; i += 4 * VM_W) {                                             \
            vd a = V(LOAD(x + i), q0, q1), b = V(LOAD(x + i + VM_W), q0, q1);                  \
            vd c = V(LOAD(x + i + 2 * VM_W), q0, q1), d = V(LOAD(x + i + 3 * VM_W), q0, q1);   \
            STORE(y + i, a);                                                                   \
            STORE(y + i + VM_W, b);                                                            \
            STORE(y + i + 2 * VM_W, c);                                                        \
            STORE(y + i + 3 * VM_W, d);                                                        \
        }                                                                                      \
        for (; i + VM_W <= n; i += VM_W) STORE(y + i, V(LOAD(x + i), q0, q1));                 \
        if (i < n) {                                                                           \
            T buf[VM_W];                                                                       \
            STORE(buf, V(LOAD_PART(x + i, n - i), q0, q1));                                    \
            VM_TAIL_COPY(y + i, buf, n - i);                                                   \
        }                                                                                      \
    }
#define VM_ACT_GRAD_LOOP(DECL, T, LOAD, LOAD_PART, STORE, V)                                   \
    DECL(const T *g, const T *x, T p0, T p1, T *y, size_t n)                                   \
    {                                                                                          \
        const double q0 = p0, q1 = p1;                                                         \
        size_t i = 0;                                                                          \
        for (; i + 4 * VM_W <= n; i += 4 * VM_W) {                                             \
            vd a = V(LOAD(g + i), LOAD(x + i), q0, q1);                                        \
            vd b = V(LOAD(g + i + VM_W), LOAD(x + i + VM_W), q0, q1);                          \
            vd c = V(LOAD(g + i + 2 * VM_W), LOAD(x + i + 2 * VM_W), q0, q1);                  \
            vd d = V(LOAD(g + i + 3 * VM_W), LOAD(x + i + 3 * VM_W), q0, q1);                  \
            STORE(y + i, a);                                                                   \
            STORE(y + i + VM_W, b);                                                            \
            STORE(y + i + 2 * VM_W, c);                                                        \
            STORE(y + i + 3 * VM_W, d);                                                        \
        }                                                                                      \
        for (; i + VM_W <= n; i += VM_W) STORE(y + i, V(LOAD(g + i), LOAD(x + i), q0, q1));    \
        if (i < n) {                                                                           \
            T buf[VM_W];                                                                       \
            STORE(buf, V(LOAD_PART(g + i, n - i), LOAD_PART(x + i, n - i), q0, q1));           \
            VM_TAIL_COPY(y + i, buf, n - i);                                                   \
        }                                                                                      \
    }
/* The float64 loops are the level's kernels; the float32 ones (name_f32_via_f64) are exported by
 * the level's translation unit, which may replace some by native float code (as VM_LOOPS'). */
#define VM_ACT_LOOPS(name)                                                                     \
    VM_ACT_LOOP(void VM_XCAT3(tg_vm_##name##_f64, _, VM_LEVEL_NAME), double, vd_load,          \
                vd_load_part, vd_store, name##_v64)                                            \
    VM_ACT_LOOP(static inline void name##_f32_via_f64, float, vd_load_f32, vd_load_f32_part,   \
                vd_store_f32, name##_v32)
#define VM_ACT_GRAD_LOOPS(name)                                                                \
    VM_ACT_GRAD_LOOP(void VM_XCAT3(tg_vm_##name##_f64, _, VM_LEVEL_NAME), double, vd_load,     \
                     vd_load_part, vd_store, name##_v64)                                       \
    VM_ACT_GRAD_LOOP(static inline void name##_f32_via_f64, float, vd_load_f32,                \
                     vd_load_f32_part, vd_store_f32, name##_v32)
TG_VM_ACTIVATIONS(VM_ACT_LOOPS)
TG_VM_ACTIVATION_GRADS(VM_ACT_GRAD_LOOPS)

/* sin and cos of the same x in one pass (vecmath.h: tg_vm_sincos_f64): the loops of VM_LOOPS with
 * two results per element. */
#define VM_SINCOS_LOOP(SUFFIX, T, LOAD, LOAD_PART, STORE, PAIR)                                 \
    static inline void sincos_##SUFFIX##_loop(const T *x, T *s, T *c, size_t n)                \
    {                                                                                          \
        size_t i = 0;                                                                          \
        vd ys[4], yc[4];                                                                       \
        for (; i + 4 * VM_W <= n; i += 4 * VM_W) {                                             \
            for (int j = 0; j < 4; j++) PAIR(LOAD(x + i + j * VM_W), &ys[j], &yc[j]);          \
            for (int j = 0; j < 4; j++) {                                                      \
                STORE(s + i + j * VM_W, ys[j]);                                                \
                STORE(c + i + j * VM_W, yc[j]);                                                \
            }                                                                                  \
        }                                                                                      \
        for (; i + VM_W <= n; i += VM_W) {                                                     \
            PAIR(LOAD(x + i), &ys[0], &yc[0]);                                                 \
            STORE(s + i, ys[0]);                                                               \
            STORE(c + i, yc[0]);                                                               \
        }                                                                                      \
        if (i < n) {                                                                           \
            T bs[VM_W], bc[VM_W];                                                              \
            PAIR(LOAD_PART(x + i, n - i), &ys[0], &yc[0]);                                     \
            STORE(bs, ys[0]);                                                                  \
            STORE(bc, yc[0]);                                                                  \
            for (size_t k = 0; k < n - i; k++) {                                               \
                s[i + k] = bs[k];                                                              \
                c[i + k] = bc[k];                                                              \
            }                                                                                  \
        }                                                                                      \
    }
#define VM_SINCOS_F64(x, ys, yc) sincos_pair(x, ys, yc, VM_P(sin_s_f64), VM_P(cos_c_f64))
VM_SINCOS_LOOP(f64, double, vd_load, vd_load_part, vd_store, VM_SINCOS_F64)
VM_SINCOS_LOOP(f32, float, vd_load_f32, vd_load_f32_part, vd_store_f32, sincos_f32_pair)

void VM_XCAT3(tg_vm_sincos, _f64_, VM_LEVEL_NAME)(const double *x, double *s, double *c, size_t n)
{
    sincos_f64_loop(x, s, c, n);
}

void VM_XCAT3(tg_vm_sincos, _f32_, VM_LEVEL_NAME)(const float *x, float *s, float *c, size_t n)
{
    sincos_f32_loop(x, s, c, n);
}
#endif /* VM_POW_ONLY */
