/* vecmath's native float32 kernels: exp, log, log1p, sigmoid, silu and gelu evaluated in float on
 * VF_W float lanes (twice the lanes of the double evaluation the other float32 kernels use), and
 * the activations built on e^x (vecmath.h's TG_VM_ACTIVATIONS / _GRADS except elu, whose expm1 is
 * double's, and gelu's gradient) in float, one pass each.  Written once over a small float-vector abstraction and
 * included by vecmath_avx2.c (8 lanes) and vecmath_avx512.c (16 lanes), which define it first:
 *
 * vf (VF_W floats), vfi (32-bit integer lanes), vfm (a lane mask), vf_set vf_loadu vf_storeu
 * vf_load_part (the first m < VF_W elements, the others 0, reading nothing beyond) vf_add vf_sub
 * vf_mul vf_div vf_fma(a,b,c)=a*b+c vf_fnma(a,b,c)=c-a*b (fused) vf_min vf_max (NaN in the first
 * operand gives the second) vf_abs vf_and vf_or (bitwise) vf_rcp (1/x to at least 2^-12)
 * vf_bits vf_as_int vf_pick8 (lane i gets column[k_i], k_i <= 7, of an 8-float column), comparisons
 * vf_lt vf_gt vf_eq vf_isnan giving vfm, vfm_or vfm_any, vf_select(m,a,b)=m?a:b,
 * vf_keep(m,v)=m?v:0, vf_clear(m,v)=m?0:v, vfi_set vfi_add vfi_sub vfi_and vfi_shl vfi_shr
 * vfi_to_vf (convert).
 *
 * exp, log and log1p stay within 1 ulp by the same means as the float64 kernels, scaled down:
 * Cody-Waite reduction with FMA, the result's leading term kept exact and the polynomial only in a
 * correction of weight <= 0.17 (exp) or 0.03 (log), one final rounding; tests/test_vecmath.py and
 * tools/ulp_check.py hold them to the bound.  sigmoid and silu are PyTorch's float formulas on that
 * exp.  Every operation is the same IEEE operation at both widths, so both levels give the same
 * bits. */

static const float exp_p_f32n[] = VM_EXP_P_F32N;
static const float log_q_f32n[] = VM_LOG_Q_F32N;
#define VF_MAGIC 0x1.8p23f /* float's round-to-integer constant (see VM_MAGIC) */

static inline vf vf_poly(vf x, const float *c, int n)
{
    vf acc = vf_set(c[0]);
    for (int i = 1; i < n; i++) acc = vf_fma(acc, x, vf_set(c[i]));
    return acc;
}

/* c[0] x^5 + ... + c[5] by Estrin's scheme (x2 = x^2): three multiply-adds deep instead of five,
 * so that more independent vectors fit in the out-of-order window. */
static inline vf vf_estrin6(vf x, vf x2, const float *c)
{
    vf q0 = vf_fma(vf_set(c[4]), x, vf_set(c[5]));
    vf q1 = vf_fma(vf_set(c[2]), x, vf_set(c[3]));
    vf q2 = vf_fma(vf_set(c[0]), x, vf_set(c[1]));
    return vf_fma(vf_fma(q2, x2, q1), x2, q0);
}

/* 2^k for integral k in [-126, 127] held as a float (k + VF_MAGIC has k in its low bits). */
static inline vf vf_pow2i(vf k)
{
    vfi b = vf_as_int(vf_add(k, vf_set(VF_MAGIC)));
    return vf_bits(vfi_shl(vfi_add(b, vfi_set(127)), 23));
}

/* e^xc = 2^n (s1 + w) with xc in [-110, 89], the pair s1 + w unrounded; t = n + VF_MAGIC. */
static inline void exp_f32n_parts(vf xc, vf *t, vf *n, vf *s1, vf *w)
{
    *t = vf_fma(xc, vf_set(0x1.715476p+0f), vf_set(VF_MAGIC));
    *n = vf_sub(*t, vf_set(VF_MAGIC));
    /* x = n ln2 + rh + rl: rh = x - n LN2_HI_F is exact (a multiple of x's or LN2_HI_F's last
     * bit, below 1/2: it fits 24 bits; the FMA rounds nothing), rl = -n LN2_LO_F < 2^-21. */
    vf rh = vf_fnma(*n, vf_set(VM_LN2_HI_F), xc);
    vf rl = vf_mul(*n, vf_set(-VM_LN2_LO_F));
    /* e^r = 1 + rh + tail, tail = u + rl e^rh, u = rh^2 P(rh); 1 + rh's rounding error is kept
     * (Fast2Sum), so the sum is rounded once: ~0.55 ulp instead of ~0.95. */
    vf r2 = vf_mul(rh, rh);
    vf u = vf_mul(r2, vf_estrin6(rh, r2, exp_p_f32n));
    vf tail = vf_add(u, vf_fma(rl, vf_add(rh, u), rl));
    *s1 = vf_add(vf_set(1.0f), rh);
    vf err1 = vf_add(vf_sub(vf_set(1.0f), *s1), rh);
    *w = vf_add(tail, err1);
}

/* e * 2^n; lanes whose result is subnormal or overflows are scaled in two exact steps so that
 * they round once.  (t = n + VF_MAGIC has n in its low bits.) */
static inline vf scale_f32n(vf e, vf t, vf n)
{
    vfm out = vfm_or(vf_lt(n, vf_set(-125.0f)), vf_gt(n, vf_set(127.0f)));
    if (vfm_any(out)) {
        vf n1 = vf_sub(vf_add(vf_mul(n, vf_set(0.5f)), vf_set(VF_MAGIC)),
                              vf_set(VF_MAGIC));
        return vf_mul(vf_mul(e, vf_pow2i(n1)), vf_pow2i(vf_sub(n, n1)));
    }
    return vf_mul(e, vf_bits(vfi_shl(
                                vfi_add(vf_as_int(t), vfi_set(127)), 23)));
}

static inline vf exp_f32n(vf x)
{
    /* Outside [-110, 89] the result is 0 or inf anyway; NaN passes (x is the second operand). */
    vf xc = vf_min(vf_set(89.0f), vf_max(vf_set(-110.0f), x));
    vf t, n, s1, w;
    exp_f32n_parts(xc, &t, &n, &s1, &w);
    return scale_f32n(vf_add(s1, w), t, n);
}

/* e^x for x <= 0 (NaN passes), shorter than exp_f32n for a factor that other roundings follow
 * (gelu's gradient): r = x - n ln2 rounded once and e^r = 1 + (r + r^2 P(r)) rounded once, P of
 * degree 4 (VM_EXP_P4_F32N, 2^-26.5): 12 operations and a shallower chain where exp_f32n's
 * compensated sum takes 19, within 1.07 ulp (exp_f32n: 0.55). */
static const float exp_p4_f32n[] = VM_EXP_P4_F32N;
static inline vf exp_le0_short_f32n(vf x)
{
    vf xc = vf_max(vf_set(-110.0f), x);   /* below, e^x is 0 anyway */
    vf t = vf_fma(xc, vf_set(0x1.715476p+0f), vf_set(VF_MAGIC));
    vf n = vf_sub(t, vf_set(VF_MAGIC));
    vf r = vf_fnma(n, vf_set(VM_LN2_LO_F), vf_fnma(n, vf_set(VM_LN2_HI_F), xc));
    vf r2 = vf_mul(r, r);
    const float *c = exp_p4_f32n;   /* Estrin: three multiply-adds deep */
    vf p = vf_fma(vf_fma(vf_set(c[0]), r2, vf_fma(vf_set(c[1]), r, vf_set(c[2]))), r2,
                  vf_fma(vf_set(c[3]), r, vf_set(c[4])));
    return scale_f32n(vf_add(vf_set(1.0f), vf_fma(r2, p, r)), t, n);
}

/* sigmoid x = 1 / (1 + e^-x) in float, PyTorch's formula and rounding (vecmath_impl.h's
 * sigmoid_f64_core): 0 where e^-x overflows, NaN for NaN. */
static inline vf sigmoid_f32n(vf x)
{
    vf one = vf_set(1.0f);
    return vf_div(one, vf_add(one, exp_f32n(vf_sub(vf_set(0.0f), x))));
}

/* log of u > 0 plus a small correction `corr` (log1p's c / u), as in log_positive. */
#define VF_SQRT_HALF_BITS 0x3f3504f3
static inline vf log_f32n_positive(vf u, vf corr)
{
    vfm sub = vf_lt(u, vf_set(0x1p-126f));
    u = vf_select(sub, vf_mul(u, vf_set(0x1p23f)), u);
    vfi b = vfi_add(vf_as_int(u), vfi_set(0x3f800000 - VF_SQRT_HALF_BITS));
    vf k = vfi_to_vf(vfi_sub(vfi_shr(b, 23), vfi_set(127)));
    k = vf_sub(k, vf_keep(sub, vf_set(23.0f)));
    vf m = vf_bits(vfi_add(vfi_and(b, vfi_set(0x007fffff)),
                                    vfi_set(VF_SQRT_HALF_BITS)));
    vf f = vf_sub(m, vf_set(1.0f));
    vf s = vf_div(f, vf_add(vf_set(2.0f), f));
    vf z = vf_mul(s, s);
    vf hfsq = vf_mul(vf_set(0.5f), vf_mul(f, f));
    vf r = vf_mul(z, vf_poly(z, log_q_f32n, VM_NCOEF(log_q_f32n)));
    vf t = vf_fma(s, vf_add(hfsq, r), vf_fma(k, vf_set(VM_LN2_LO16_F), corr));
    /* k ln2 + f as hi + lo exactly (k * LN2_HI16_F is exact and at least |f| unless k = 0), so
     * that only the final sum rounds: near u = sqrt(1/2) the two halves nearly cancel. */
    vf a = vf_mul(k, vf_set(VM_LN2_HI16_F));
    vf hi = vf_add(a, f);
    vf lo = vf_add(vf_sub(a, hi), f);
    return vf_add(hi, vf_sub(lo, vf_sub(hfsq, t)));
}

static inline vf log_f32n_specials(vf u, vf y)
{
    y = vf_select(vf_eq(u, vf_set(INFINITY)), u, y);
    y = vf_select(vf_eq(u, vf_set(0.0f)), vf_set(-INFINITY), y);
    y = vf_select(vf_lt(u, vf_set(0.0f)), vf_set(NAN), y);
    return vf_select(vf_isnan(u), u, y);
}

static inline vf log_f32n(vf x)
{
    return log_f32n_specials(x, log_f32n_positive(x, vf_set(0.0f)));
}

static inline vf log1p_f32n(vf x)
{
    /* u + c = 1 + x exactly (Fast2Sum on the larger and the smaller of 1 and x; x >= -1
     * wherever the result is a number).  |c / u| <= 2^-24 and the result
     * is c itself for |x| < 2^-24, so c / u must be correctly rounded (a division); its rounding
     * then costs at most 1/4 ulp of the result. */
    vf one = vf_set(1.0f);
    vf u = vf_add(one, x);
    vf c = vf_add(vf_sub(vf_max(one, x), u), vf_min(one, x));
    vf y = log_f32n_positive(u, vf_div(c, u));
    y = log_f32n_specials(u, y);                             /* x = -1, x < -1, inf, NaN */
    return vf_select(vf_eq(x, vf_set(0.0f)), x, y);   /* log1p(-0) = -0 */
}


/* silu (vecmath.h): x / (1 + e^-x) in float. */
static inline vf silu_f32n(vf x)
{
    vf e = exp_f32n(vf_sub(vf_set(0.0f), x));
    return vf_div(x, vf_add(vf_set(1.0f), e));
}

/* The activations of vecmath.h in float, each operation rounded as PyTorch's float kernels round
 * it (e^z: exp_f32n, inf where float's e^z overflows and 0 where it underflows, as PyTorch's). */
static inline vf elu_grad_f32n(vf g, vf x, float alpha, float unused)
{
    (void)unused;
    vf e = exp_f32n(x);
    return vf_select(vf_gt(x, vf_set(0.0f)), g, vf_mul(vf_mul(g, vf_set(alpha)), e));
}

static inline vf softplus_f32n(vf x, float beta, float threshold)
{
    vf z = vf_mul(x, vf_set(beta));
    vf y = vf_div(log1p_f32n(exp_f32n(z)), vf_set(beta));
    return vf_select(vf_gt(z, vf_set(threshold)), x, y);
}

static inline vf softplus_grad_f32n(vf g, vf x, float beta, float threshold)
{
    vf z = vf_mul(x, vf_set(beta));
    vf e = exp_f32n(z);
    vf y = vf_div(vf_mul(g, e), vf_add(e, vf_set(1.0f)));
    return vf_select(vf_gt(z, vf_set(threshold)), g, y);
}

static inline vf silu_grad_f32n(vf g, vf x, float unused0, float unused1)
{
    (void)unused0;
    (void)unused1;
    vf one = vf_set(1.0f);
    vf s = vf_div(one, vf_add(one, exp_f32n(vf_sub(vf_set(0.0f), x))));
    return vf_mul(vf_mul(g, s), vf_add(one, vf_mul(x, vf_sub(one, s))));
}

/* gelu (vecmath.h): 0.5 x (1 + erf(z)), z = x / sqrt 2, with an erf of its own.  A table lookup
 * (erf_f32n at the AVX2 level: eight loads and ten shuffles per vector) was most of gelu's time;
 * here each lane takes its interval's coefficients out of a register (vf_pick8: one permute per
 * coefficient): |z| in 8 intervals around k/2 (k = round(2|z|), at most 7; |z| clamped to 4,
 * where float erf is 1), erf|z| = c0h + (c0l + t (c1 + ... + t c7)) at t = |z| - k/2
 * (tools/vecmath_tables.py; approximation error below 2^-29).  Rounded twice (the polynomial
 * part, then the sum), this erf is within 0.75 ulp; for gelu, 1 + erf(z) and 0.5 x are then
 * joined by one multiply-add, h + h e with h = 0.5 x, one rounding fewer than PyTorch's
 * (0.5 x) (1 + e).  x's sign bit is put back at the end: h + h e is +0 where the product
 * gives -0 (-0 + +0), and gelu has x's sign.  NaN passes through h; |z| = inf is clamped
 * (e = +-1: gelu(inf) = inf, gelu(-inf) = NaN, as PyTorch's formula gives). */
static const float gelu_erf_c0h[8] = VM_GELU_ERF_C0H, gelu_erf_c0l[8] = VM_GELU_ERF_C0L,
                   gelu_erf_c1[8] = VM_GELU_ERF_C1, gelu_erf_c2[8] = VM_GELU_ERF_C2,
                   gelu_erf_c3[8] = VM_GELU_ERF_C3, gelu_erf_c4[8] = VM_GELU_ERF_C4,
                   gelu_erf_c5[8] = VM_GELU_ERF_C5, gelu_erf_c6[8] = VM_GELU_ERF_C6,
                   gelu_erf_c7[8] = VM_GELU_ERF_C7;

/* erf(z) with z's sign (a NaN z gives +-1: the callers keep NaN through x) */
static inline vf gelu_erf_f32n(vf z)
{
    vf sign = vf_and(z, vf_set(-0.0f));
    vf a = vf_min(vf_abs(z), vf_set(4.0f));   /* NaN: 4 */
    /* 2|z| rounded to an integer k <= 7, which the magic constant leaves in the low bits */
    vf km = vf_min(vf_fma(a, vf_set(2.0f), vf_set(VF_MAGIC)), vf_set(VF_MAGIC + 7.0f));
    vfi k = vf_as_int(km);
    vf t = vf_fnma(vf_sub(km, vf_set(VF_MAGIC)), vf_set(0.5f), a);  /* exact */
    vf r = vf_pick8(gelu_erf_c7, k);
    r = vf_fma(r, t, vf_pick8(gelu_erf_c6, k));
    r = vf_fma(r, t, vf_pick8(gelu_erf_c5, k));
    r = vf_fma(r, t, vf_pick8(gelu_erf_c4, k));
    r = vf_fma(r, t, vf_pick8(gelu_erf_c3, k));
    r = vf_fma(r, t, vf_pick8(gelu_erf_c2, k));
    r = vf_fma(r, t, vf_pick8(gelu_erf_c1, k));
    vf e = vf_add(vf_pick8(gelu_erf_c0h, k), vf_fma(r, t, vf_pick8(gelu_erf_c0l, k)));
    return vf_or(e, sign);
}

static inline vf gelu_f32n(vf x)
{
    vf z = vf_mul(x, vf_set(TG_VM_SQRT1_2F));
    vf e = gelu_erf_f32n(z);
    vf h = vf_mul(vf_set(0.5f), x);
    return vf_or(vf_fma(h, e, h), vf_and(z, vf_set(-0.0f)));
}

/* gelu's gradient (vecmath.h): g (0.5 (1 + erf(x / sqrt 2)) + (x / sqrt(2 pi)) e^(-x^2/2)),
 * PyTorch's formula in float at its rounded arguments (x / sqrt 2, and -x^2/2 as (-0.5 x) x), both
 * functions in registers.  0.5 (1 + e) is one multiply-add (the same value: the halving is exact),
 * and the pdf term joins it in another, one rounding fewer than PyTorch's (cdf + x pdf); that
 * margin pays for e^(-x^2/2) by the short exponential (within 1.07 ulp, not 0.55): within 2.6 ulp
 * of the formula at e's value where the terms do not cancel, 3.1 with the long exponential and
 * PyTorch's roundings (tests/test_vecmath.py), and 24% fewer cycles. */
static inline vf gelu_grad_f32n(vf g, vf x)
{
    vf e1 = gelu_erf_f32n(vf_mul(x, vf_set(TG_VM_SQRT1_2F)));
    vf e2 = exp_le0_short_f32n(vf_mul(vf_mul(vf_set(-0.5f), x), x));
    vf cdf = vf_fma(e1, vf_set(0.5f), vf_set(0.5f));
    return vf_mul(g, vf_fma(vf_mul(x, vf_set(TG_VM_INV_SQRT_2PIF)), e2, cdf));
}

void VM_XCAT3(tg_vm_gelu_grad_f32, _, VM_LEVEL_NAME)(const float *g, const float *x, float *out,
                                                     size_t n)
{
    size_t i = 0;
    for (; i + 4 * VF_W <= n; i += 4 * VF_W) {   /* four independent chains (5% faster than two) */
        vf a = gelu_grad_f32n(vf_loadu(g + i), vf_loadu(x + i));
        vf b = gelu_grad_f32n(vf_loadu(g + i + VF_W), vf_loadu(x + i + VF_W));
        vf c = gelu_grad_f32n(vf_loadu(g + i + 2 * VF_W), vf_loadu(x + i + 2 * VF_W));
        vf d = gelu_grad_f32n(vf_loadu(g + i + 3 * VF_W), vf_loadu(x + i + 3 * VF_W));
        vf_storeu(out + i, a);
        vf_storeu(out + i + VF_W, b);
        vf_storeu(out + i + 2 * VF_W, c);
        vf_storeu(out + i + 3 * VF_W, d);
    }
    for (; i + VF_W <= n; i += VF_W)
        vf_storeu(out + i, gelu_grad_f32n(vf_loadu(g + i), vf_loadu(x + i)));
    if (i < n) {
        float buf[VF_W];
        vf_storeu(buf, gelu_grad_f32n(vf_load_part(g + i, n - i), vf_load_part(x + i, n - i)));
        VM_TAIL_COPY(out + i, buf, n - i);
    }
}

/* The loops: four vectors per iteration, then one, the tail padded with zeros into one more
 * vector (a masked load, as vecmath_impl.h's loops). */
#define VF_LOOP(name, core)                                                                    \
    void VM_XCAT3(tg_vm_##name##_f32, _, VM_LEVEL_NAME)(const float *x, float *y, size_t n)   \
    {                                                                                          \
        size_t i = 0;                                                                          \
        for (; i + 4 * VF_W <= n; i += 4 * VF_W) {                                             \
            vf a = core(vf_loadu(x + i)), b = core(vf_loadu(x + i + VF_W));                    \
            vf c = core(vf_loadu(x + i + 2 * VF_W)), d = core(vf_loadu(x + i + 3 * VF_W));     \
            vf_storeu(y + i, a);                                                               \
            vf_storeu(y + i + VF_W, b);                                                        \
            vf_storeu(y + i + 2 * VF_W, c);                                                    \
            vf_storeu(y + i + 3 * VF_W, d);                                                    \
        }                                                                                      \
        for (; i + VF_W <= n; i += VF_W) vf_storeu(y + i, core(vf_loadu(x + i)));             \
        if (i < n) {                                                                           \
            float buf[VF_W];                                                                   \
            vf_storeu(buf, core(vf_load_part(x + i, n - i)));                                  \
            VM_TAIL_COPY(y + i, buf, n - i);                                                   \
        }                                                                                      \
    }
#define VF_ACT_LOOP(name)                                                                      \
    void VM_XCAT3(tg_vm_##name##_f32, _, VM_LEVEL_NAME)(const float *x, float p0, float p1,   \
                                                        float *y, size_t n)                    \
    {                                                                                          \
        size_t i = 0;                                                                          \
        for (; i + 2 * VF_W <= n; i += 2 * VF_W) {                                             \
            vf a = name##_f32n(vf_loadu(x + i), p0, p1);                                       \
            vf b = name##_f32n(vf_loadu(x + i + VF_W), p0, p1);                                \
            vf_storeu(y + i, a);                                                               \
            vf_storeu(y + i + VF_W, b);                                                        \
        }                                                                                      \
        for (; i + VF_W <= n; i += VF_W) vf_storeu(y + i, name##_f32n(vf_loadu(x + i), p0, p1)); \
        if (i < n) {                                                                           \
            float buf[VF_W];                                                                   \
            vf_storeu(buf, name##_f32n(vf_load_part(x + i, n - i), p0, p1));                   \
            VM_TAIL_COPY(y + i, buf, n - i);                                                   \
        }                                                                                      \
    }
#define VF_ACT_GRAD_LOOP(name)                                                                 \
    void VM_XCAT3(tg_vm_##name##_f32, _, VM_LEVEL_NAME)(const float *g, const float *x,       \
                                                        float p0, float p1, float *y, size_t n) \
    {                                                                                          \
        size_t i = 0;                                                                          \
        for (; i + 2 * VF_W <= n; i += 2 * VF_W) {                                             \
            vf a = name##_f32n(vf_loadu(g + i), vf_loadu(x + i), p0, p1);                      \
            vf b = name##_f32n(vf_loadu(g + i + VF_W), vf_loadu(x + i + VF_W), p0, p1);        \
            vf_storeu(y + i, a);                                                               \
            vf_storeu(y + i + VF_W, b);                                                        \
        }                                                                                      \
        for (; i + VF_W <= n; i += VF_W)                                                       \
            vf_storeu(y + i, name##_f32n(vf_loadu(g + i), vf_loadu(x + i), p0, p1));           \
        if (i < n) {                                                                           \
            float buf[VF_W];                                                                   \
            vf_storeu(buf, name##_f32n(vf_load_part(g + i, n - i), vf_load_part(x + i, n - i), \
                                       p0, p1));                                               \
            VM_TAIL_COPY(y + i, buf, n - i);                                                   \
        }                                                                                      \
    }
VF_LOOP(exp, exp_f32n)
VF_LOOP(log, log_f32n)
VF_LOOP(log1p, log1p_f32n)
VF_LOOP(sigmoid, sigmoid_f32n)
VF_LOOP(silu, silu_f32n)
VF_LOOP(gelu, gelu_f32n)
VF_ACT_LOOP(softplus)
VF_ACT_GRAD_LOOP(elu_grad)
VF_ACT_GRAD_LOOP(softplus_grad)
VF_ACT_GRAD_LOOP(silu_grad)

/* The float32 kernels these levels evaluate in double (vecmath_impl.h's loops): expm1, sin, cos,
 * tanh and elu (whose expm1 is double's). */
#define VM_EXPORT_F32(name)                                                                       \
    void VM_XCAT3(tg_vm_##name##_f32, _, VM_LEVEL_NAME)(const float *x, float *y, size_t n)      \
    {                                                                                             \
        name##_f32_via_f64(x, y, n);                                                              \
    }
VM_EXPORT_F32(expm1)
VM_EXPORT_F32(sin)
VM_EXPORT_F32(cos)
VM_EXPORT_F32(tanh)

void VM_XCAT3(tg_vm_elu_f32, _, VM_LEVEL_NAME)(const float *x, float p0, float p1, float *y,
                                               size_t n)
{
    elu_f32_via_f64(x, p0, p1, y, n);
}
