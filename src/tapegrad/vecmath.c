/* vecmath's run-time dispatch (see vecmath.h) and the exact argument reduction for huge sin/cos
 * arguments, shared by all levels. */
#include "vecmath_levels.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if TG_VM_BUILD_AVX2 && defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#include <immintrin.h>
#endif

/* ---- Payne-Hanek reduction ------------------------------------------------------------------
 * x = M 2^E with M a 53-bit integer.  x (2/pi) mod 4 = M (2^E (2/pi) mod 4) mod 4, because M is
 * an integer: so only 2+190 bits of 2/pi starting at weight 2^(1-E) are needed, as a 192-bit
 * fixed-point number A with 2 integer bits.  M * A mod 2^192 then holds the quadrant in its top
 * two bits and the fraction below; truncating A costs at most 2^53 * 2^-190 = 2^-137 quadrants,
 * far below the closest approach of any double to a multiple of pi/2 (~2^-61). */

#include "vecmath_consts.h"
#include "vecmath_tables.h"

/* The lookup tables every level shares (declared in vecmath_impl.h). */
const double tg_vm_erf_table[] = VM_ERF_TABLE;
const double tg_vm_log_table[] = VM_LOG_TABLE;
const double tg_vm_pow_exp_table[] = VM_POW_EXP_TABLE;
const double tg_vm_pow_log2_f32_table[] = VM_POW_LOG2_F32_TABLE;

static const uint64_t two_over_pi_words[20] = VM_TWO_OVER_PI_WORDS;

/* 64 bits of 2/pi with weights 2^-(pos+1) .. 2^-(pos+64); bits before the binary point are 0. */
static uint64_t two_over_pi_bits(int pos)
{
    if (pos <= -64) return 0;
    if (pos < 0) return two_over_pi_words[0] >> -pos;
    int w = pos / 64, s = pos % 64;
    if (s == 0) return two_over_pi_words[w];
    return (two_over_pi_words[w] << s) | (two_over_pi_words[w + 1] >> (64 - s));
}

/* Full 64x64 -> 128-bit product from 32-bit halves (portable; this path is rare). */
static void mul_64x64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo)
{
    uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    *lo = (mid << 32) | (p00 & 0xffffffffu);
    *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

static int leading_zeros_64(uint64_t v)
{
    int n = 0;
    if (v == 0) return 64;
    while (!(v & (UINT64_C(1) << 63))) { v <<= 1; n++; }
    return n;
}

void tg_vm_rem_pio2_huge(double x, double *n_out, double *rhi, double *rlo)
{
    if (!isfinite(x)) {
        *n_out = 0.0;
        *rhi = *rlo = x - x;  /* NaN */
        return;
    }
    uint64_t bits;
    double ax = fabs(x);
    memcpy(&bits, &ax, sizeof bits);
    int e = (int)(bits >> 52) - 1023;                     /* ax >= 2^24: normal */
    uint64_t m = (bits & UINT64_C(0x000fffffffffffff)) | (UINT64_C(1) << 52);
    int pos = e - 52 - 2;  /* A's top bit (weight 2^1) is 2/pi's bit of weight 2^(1-E) */
    uint64_t a2 = two_over_pi_bits(pos), a1 = two_over_pi_bits(pos + 64),
             a0 = two_over_pi_bits(pos + 128);

    /* R = m * A mod 2^192, limbs r2:r1:r0. */
    uint64_t h0, l0, h1, l1, h2, l2;
    mul_64x64(m, a0, &h0, &l0);
    mul_64x64(m, a1, &h1, &l1);
    mul_64x64(m, a2, &h2, &l2);
    (void)h2;
    uint64_t r0 = l0;
    uint64_t r1 = l1 + h0;
    uint64_t r2 = l2 + h1 + (r1 < h0);

    /* Round to the nearest quadrant; the remainder is a signed fraction in [-1/2, 1/2). */
    uint64_t q = ((r2 + (UINT64_C(1) << 61)) >> 62) & 3;
    r2 -= q << 62;
    int negative = (r2 >> 63) != 0;
    if (negative) {  /* two's complement negation of the 192-bit value */
        r0 = ~r0; r1 = ~r1; r2 = ~r2;
        r0 += 1;
        if (r0 == 0) { r1 += 1; if (r1 == 0) r2 += 1; }
    }
    /* Normalise the magnitude so that its top 128 bits are t1:t0; `shift` counts the bits moved. */
    int shift = 0;
    while (r2 == 0 && shift < 128) { r2 = r1; r1 = r0; r0 = 0; shift += 64; }
    int lz = leading_zeros_64(r2);
    if (lz > 0 && lz < 64) {
        r2 = (r2 << lz) | (r1 >> (64 - lz));
        r1 = (r1 << lz) | (r0 >> (64 - lz));
        shift += lz;
    }
    /* The fraction (in quadrants) is (r2 2^128 + r1 2^64 + ...) 2^(-190 - shift); its top 106
     * bits split into two 53-bit pieces, which convert to double exactly. */
    double c_hi = (double)(r2 >> 11);
    double c_lo = (double)(((r2 & 0x7ff) << 42) | (r1 >> 22));
    double f_hi = ldexp(c_hi, 11 + 128 - 190 - shift);
    double f_lo = ldexp(c_lo, 22 + 64 - 190 - shift);
    /* r = f * pi/2 in double-double. */
    double p_hi = f_hi * VM_PIO2_HI;
    double p_lo = fma(f_hi, VM_PIO2_HI, -p_hi) + (f_hi * VM_PIO2_LO + f_lo * VM_PIO2_HI);
    double h = p_hi + p_lo;
    double l = (p_hi - h) + p_lo;
    if (negative) { h = -h; l = -l; }
    double n = (double)q;
    if (x < 0) { n = -n; h = -h; l = -l; }
    *n_out = n;
    *rhi = h;
    *rlo = l;
}

/* ---- dispatch -------------------------------------------------------------------------------
 * Each public kernel picks its level's function itself (one compare of the active level per
 * call) rather than through a table of every kernel: a module linking the kernels' static library
 * for one function (nn_kernels.c calls exp) then carries that function only, since the linker
 * drops the sections nothing reaches; a table referring to all of them kept a second full copy of
 * vecmath in _ops_nn. */
static const char *const level_names[TG_VM_N_LEVELS] = { "scalar", "avx2", "avx512" };

static int cpu_has_avx2_fma(void)
{
#if TG_VM_BUILD_AVX2 && (defined(__GNUC__) || defined(__clang__))
    /* libgcc / compiler-rt also check that the OS saves the YMM registers (XGETBV). */
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#elif TG_VM_BUILD_AVX2 && defined(_MSC_VER)
    int r[4];
    __cpuid(r, 0);
    if (r[0] < 7) return 0;
    __cpuid(r, 1);
    int fma = (r[2] >> 12) & 1, osxsave = (r[2] >> 27) & 1, avx = (r[2] >> 28) & 1;
    if (!(fma && osxsave && avx)) return 0;
    if ((_xgetbv(0) & 6) != 6) return 0;  /* XMM and YMM state enabled by the OS */
    __cpuidex(r, 7, 0);
    return (r[1] >> 5) & 1;               /* AVX2 */
#else
    return 0;
#endif
}

static int cpu_has_avx512(void)
{
#if TG_VM_BUILD_AVX512
    /* libgcc / compiler-rt check that the OS saves the ZMM and mask registers too. */
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")
           && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
#else
    return 0;
#endif
}

/* Resolved on first use (-1 until then; read inline by tg_vm_level_fast).  A race between two
 * first calls is benign: both store the same value. */
int tg_vm_active_level = -1;
int tg_vm_fast_gather = 0;

/* Whether 8-lane gathers beat loads and shuffles (vecmath_levels.h): Intel's cores with AVX512-FP16
 * (Sapphire Rapids and later), whose gathers are neither microcoded (AMD Zen 4) nor slowed by the
 * Gather Data Sampling mitigation (Skylake to Tiger Lake, none of which has AVX512-FP16).
 * Measured on Sapphire Rapids: exp 0.90 -> 0.68 ns per float64, sigmoid 1.09 -> 0.81. */
static int cpu_has_fast_gather(void)
{
#if TG_VM_BUILD_AVX512 && ((defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12) || \
                           (defined(__clang__) && __clang_major__ >= 16))
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512fp16");
#else
    return 0;
#endif
}

int tg_vm_best_level(void)
{
    if (!cpu_has_avx2_fma()) return TG_VM_SCALAR;
    return cpu_has_avx512() ? TG_VM_AVX512 : TG_VM_AVX2;
}

const char *tg_vm_level_name(int level)
{
    return level >= 0 && level < TG_VM_N_LEVELS ? level_names[level] : NULL;
}

int tg_vm_set_level(int level)
{
    if (level < 0 || level > tg_vm_best_level()) return -1;
    tg_vm_fast_gather = level == TG_VM_AVX512 && cpu_has_fast_gather();
    tg_vm_active_level = level;
    return level;
}

static int resolve(void)
{
    if (tg_vm_active_level < 0) {
        int level = tg_vm_best_level();
        const char *want = getenv("TAPEGRAD_SIMD");
        if (want != NULL) {
            for (int i = 0; i < TG_VM_N_LEVELS; i++)
                if (strcmp(want, level_names[i]) == 0 && i < level) level = i;
        }
        tg_vm_set_level(level);
    }
    return tg_vm_active_level;
}

int tg_vm_level(void)
{
    return resolve();
}

#define TG_VM_PUBLIC(name)                                                       \
    void tg_vm_##name##_f64(const double *x, double *y, size_t n)                \
    {                                                                            \
        TG_VM_PICK(resolve(), name, f64)(x, y, n);                               \
    }                                                                            \
    void tg_vm_##name##_f32(const float *x, float *y, size_t n)                  \
    {                                                                            \
        TG_VM_PICK(resolve(), name, f32)(x, y, n);                               \
    }
TG_VM_KERNELS(TG_VM_PUBLIC)

void tg_vm_sincos_f64(const double *x, double *s, double *c, size_t n)
{
    TG_VM_PICK(resolve(), sincos, f64)(x, s, c, n);
}

void tg_vm_sincos_f32(const float *x, float *s, float *c, size_t n)
{
    TG_VM_PICK(resolve(), sincos, f32)(x, s, c, n);
}

/* The exponents whose results do not depend on the algorithm (0, NaN, infinities: exact special
 * values or a comparison of |x| with 1) go to the C library, lane by lane, out of line (the
 * common call then needs no stack frame); the kernels take the finite nonzero ones. */

static TG_VM_NOINLINE void pow_libm_f64(const double *x, double y, double *out, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = pow(x[i], y);
}

static TG_VM_NOINLINE void pow_libm_f32(const float *x, float y, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = powf(x[i], y);
}

/* The level for a pow of n elements: at most 4 take AVX2's 4-lane kernel at the AVX-512 level too
 * (the same bits; one 8-lane vector waits longer on CPUs that split 512-bit operations in two, and
 * a short array is all latency). */
static inline int pow_level(size_t n)
{
    int level = tg_vm_level_fast();
#if TG_VM_BUILD_AVX512
    if (level == TG_VM_AVX512 && n <= 4) level = TG_VM_AVX2;
#else
    (void)n;
#endif
    return level;
}

/* Up to this many elements, the AVX2 and AVX-512 levels take pow's one-lane path (the same bits,
 * less latency: vecmath_pow_one.c; at 3 its scalar chains cost more than one 4-lane vector). */
#define TG_VM_POW_ONE_LANE_MAX 2
#if TG_VM_BUILD_POW_ONE
#define POW_ONE_LANE(n) ((n) <= TG_VM_POW_ONE_LANE_MAX && tg_vm_level_fast() != TG_VM_SCALAR)
#else /* not built: the branch is never taken, and calls the portable level */
#define POW_ONE_LANE(n) 0
#define tg_vm_pow_f64_one tg_vm_pow_f64_scalar
#define tg_vm_pow_f32_one tg_vm_pow_f32_scalar
#endif

void tg_vm_pow_f64(const double *x, double y, double *out, size_t n)
{
    if (y == 0.0 || !isfinite(y))
        pow_libm_f64(x, y, out, n);
    else if (POW_ONE_LANE(n))
        tg_vm_pow_f64_one(x, y, out, n);
    else
        TG_VM_PICK(pow_level(n), pow, f64)(x, y, out, n);
}

void tg_vm_pow_f32(const float *x, float y, float *out, size_t n)
{
    if (y == 0.0f || !isfinite(y))
        pow_libm_f32(x, y, out, n);
    else if (POW_ONE_LANE(n))
        tg_vm_pow_f32_one(x, y, out, n);
    else
        TG_VM_PICK(pow_level(n), pow, f32)(x, y, out, n);
}

void tg_vm_gelu_f32(const float *x, float *y, size_t n)
{
#if TG_VM_BUILD_AVX512
    if (resolve() == TG_VM_AVX512) {
        tg_vm_gelu_f32_avx512(x, y, n);
        return;
    }
#endif
#if TG_VM_BUILD_AVX2
    if (resolve() == TG_VM_AVX2) {
        tg_vm_gelu_f32_avx2(x, y, n);
        return;
    }
#endif
    /* erf's argument staged per chunk (x and y may be the same array). */
    float t[256];
    for (size_t i0 = 0; i0 < n; i0 += 256) {
        size_t m = n - i0 < 256 ? n - i0 : 256;
        for (size_t k = 0; k < m; k++) t[k] = x[i0 + k] * TG_VM_SQRT1_2F;
        tg_vm_erf_f32(t, t, m);
        for (size_t k = 0; k < m; k++) y[i0 + k] = 0.5f * x[i0 + k] * (1.0f + t[k]);
    }
}

void tg_vm_gelu_grad_f32(const float *g, const float *x, float *out, size_t n)
{
#if TG_VM_BUILD_AVX512
    if (resolve() == TG_VM_AVX512) {
        tg_vm_gelu_grad_f32_avx512(g, x, out, n);
        return;
    }
#endif
#if TG_VM_BUILD_AVX2
    if (resolve() == TG_VM_AVX2) {
        tg_vm_gelu_grad_f32_avx2(g, x, out, n);
        return;
    }
#endif
    float t1[256], t2[256];
    for (size_t i0 = 0; i0 < n; i0 += 256) {
        size_t m = n - i0 < 256 ? n - i0 : 256;
        for (size_t k = 0; k < m; k++) {
            float v = x[i0 + k];
            t1[k] = v * TG_VM_SQRT1_2F;
            t2[k] = -0.5f * v * v;
        }
        tg_vm_erf_f32(t1, t1, m);
        tg_vm_exp_f32(t2, t2, m);
        for (size_t k = 0; k < m; k++)
            out[i0 + k] = g[i0 + k] * (0.5f * (1.0f + t1[k])
                                       + x[i0 + k] * TG_VM_INV_SQRT_2PIF * t2[k]);
    }
}

#define TG_VM_PUBLIC_ACT(name)                                                                    \
    void tg_vm_##name##_f64(const double *x, double p0, double p1, double *y, size_t n)          \
    {                                                                                             \
        TG_VM_PICK(resolve(), name, f64)(x, p0, p1, y, n);                                        \
    }                                                                                             \
    void tg_vm_##name##_f32(const float *x, float p0, float p1, float *y, size_t n)              \
    {                                                                                             \
        TG_VM_PICK(resolve(), name, f32)(x, p0, p1, y, n);                                        \
    }
#define TG_VM_PUBLIC_ACT_GRAD(name)                                                               \
    void tg_vm_##name##_f64(const double *g, const double *x, double p0, double p1, double *out, \
                            size_t n)                                                             \
    {                                                                                             \
        TG_VM_PICK(resolve(), name, f64)(g, x, p0, p1, out, n);                                   \
    }                                                                                             \
    void tg_vm_##name##_f32(const float *g, const float *x, float p0, float p1, float *out,      \
                            size_t n)                                                             \
    {                                                                                             \
        TG_VM_PICK(resolve(), name, f32)(g, x, p0, p1, out, n);                                   \
    }
TG_VM_ACTIVATIONS(TG_VM_PUBLIC_ACT)
TG_VM_ACTIVATION_GRADS(TG_VM_PUBLIC_ACT_GRAD)
