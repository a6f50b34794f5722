/* Every float32 input through tg_vm_sigmoid_f32 at each level this CPU runs, against a float64
 * reference: prints the largest error in ulps (of the float nearest the reference) and where.
 * A check, not a test (about a minute per level): run by hand after changing a float32 sigmoid.
 *
 *   cc -O2 -pthread -Isrc/tapegrad tools/sigmoid_f32_exhaustive.c src/tapegrad/vecmath.c \
 *      src/tapegrad/vecmath_scalar.c src/tapegrad/vecmath_avx2.c src/tapegrad/vecmath_avx512.c \
 *      -lm -o /tmp/sigmoid_check && /tmp/sigmoid_check [level name, e.g. avx512: that level only]
 *
 * The reference, 1 / (1 + e^-x) or e^x / (1 + e^x) in double, is within ~2^-51 of the exact value,
 * far below the resolution that matters for a float's ulp.  PyTorch's special values are the
 * contract where e^-x overflows float (x < -88.72...: exactly 0), and NaN must stay NaN. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vecmath.h"

#define CHUNK (1u << 20)

static double reference(float x)
{
    double v = x;
    if (x < -0x1.62e42ep+6f) return 0.0;
    return v >= 0 ? 1 / (1 + exp(-v)) : exp(v) / (1 + exp(v));
}

static double ulp_error(float got, double ref)
{
    float rf = (float)ref;
    double ulp = (double)nextafterf(fabsf(rf), INFINITY) - fabsf(rf);
    if (rf == 0.0f) ulp = 0x1p-149;
    return fabs((double)got - ref) / ulp;
}

int main(int argc, char **argv)
{
    float *x = malloc(CHUNK * sizeof *x), *y = malloc(CHUNK * sizeof *y);
    int failed = 0;
    for (int level = 0; level < TG_VM_N_LEVELS; level++) {
        if (argc > 1 && strcmp(argv[1], tg_vm_level_name(level)) != 0) continue;
        if (tg_vm_set_level(level) < 0) continue;
        double worst = 0;
        float worst_x = 0;
        uint64_t bad_nan = 0;
        for (uint64_t start = 0; start < (UINT64_C(1) << 32); start += CHUNK) {
            for (uint32_t i = 0; i < CHUNK; i++) {
                uint32_t bits = (uint32_t)(start + i);
                memcpy(&x[i], &bits, sizeof bits);
            }
            tg_vm_sigmoid_f32(x, y, CHUNK);
            for (uint32_t i = 0; i < CHUNK; i++) {
                if (isnan(x[i])) {
                    bad_nan += !isnan(y[i]);
                    continue;
                }
                double e = ulp_error(y[i], reference(x[i]));
                if (!(e <= worst)) {
                    worst = e;
                    worst_x = x[i];
                }
            }
        }
        printf("%-7s max %.4f ulp at x = %a; NaN inputs not giving NaN: %llu\n",
               tg_vm_level_name(level), worst, worst_x, (unsigned long long)bad_nan);
        failed |= worst > 1.0 || bad_nan;
    }
    free(x);
    free(y);
    return failed;
}
