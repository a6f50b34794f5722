/* Running sums and products (scan_kernels.h describes the layout and the rounding).
 *
 * Along an inner dim (inner == 1) a running sum is bound by the latency of its add: four rows
 * run at once as independent chains.  Along an outer dim the lanes of a row are independent:
 * acc holds their running values and the loop over them vectorises.  Compiled at -O3 with the
 * other kernels (at -Os, the module's level, the widening conversions' false dependencies
 * serialised the four chains: 5x slower).
 *
 * STEP keeps a NaN running value as it is: numpy's accumulate computes running OP element with
 * the running value as the first operand, and an x86 add or multiply of two NaNs returns the
 * first one, so a -NaN (inf - inf, 0 * inf) stays -NaN past a later +NaN element.  The compiler
 * may swap the operands of a commutative OP (it did in the vectorised loop), so the rule is
 * written out. */
#include "scan_kernels.h"

#define STEP(acc, OP, x) ((acc) != (acc) ? (acc) : (acc) OP (double)(x))

#define SCAN_KERNEL(NAME, T, OP, ROUND)                                                           \
void NAME(const T* x, T* y, double* acc, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner)           \
{                                                                                                 \
    ptrdiff_t o = 0, i, k;                                                                        \
    if (inner == 1) {                                                                             \
        for (; o + 4 <= outer; o += 4) {                                                          \
            const T* x0 = x + o * n;                                                              \
            T* y0 = y + o * n;                                                                    \
            double a0 = x0[0], a1 = x0[n], a2 = x0[2 * n], a3 = x0[3 * n];                        \
            y0[0] = ROUND(a0);                                                                    \
            y0[n] = ROUND(a1);                                                                    \
            y0[2 * n] = ROUND(a2);                                                                \
            y0[3 * n] = ROUND(a3);                                                                \
            for (i = 1; i < n; i++) {                                                             \
                a0 = STEP(a0, OP, x0[i]);                                                         \
                a1 = STEP(a1, OP, x0[n + i]);                                                     \
                a2 = STEP(a2, OP, x0[2 * n + i]);                                                 \
                a3 = STEP(a3, OP, x0[3 * n + i]);                                                 \
                y0[i] = ROUND(a0);                                                                \
                y0[n + i] = ROUND(a1);                                                            \
                y0[2 * n + i] = ROUND(a2);                                                        \
                y0[3 * n + i] = ROUND(a3);                                                        \
            }                                                                                     \
        }                                                                                         \
        for (; o < outer; o++) {                                                                  \
            const T* x0 = x + o * n;                                                              \
            T* y0 = y + o * n;                                                                    \
            double a0 = x0[0];                                                                    \
            y0[0] = ROUND(a0);                                                                    \
            for (i = 1; i < n; i++) {                                                             \
                a0 = STEP(a0, OP, x0[i]);                                                         \
                y0[i] = ROUND(a0);                                                                \
            }                                                                                     \
        }                                                                                         \
        return;                                                                                   \
    }                                                                                             \
    for (; o < outer; o++) {                                                                      \
        const T* x0 = x + o * n * inner;                                                          \
        T* y0 = y + o * n * inner;                                                                \
        for (k = 0; k < inner; k++) {                                                             \
            acc[k] = x0[k];                                                                       \
            y0[k] = ROUND(acc[k]);                                                                \
        }                                                                                         \
        for (i = 1; i < n; i++) {                                                                 \
            const T* xi = x0 + i * inner;                                                         \
            T* yi = y0 + i * inner;                                                               \
            for (k = 0; k < inner; k++) {                                                         \
                acc[k] = STEP(acc[k], OP, xi[k]);                                                 \
                yi[k] = ROUND(acc[k]);                                                            \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
}

/* the running value rounded to the output type; a sum's then + 0 (a -0 reads +0) */
#define SUM_F32(a) ((float)(a) + 0.0f)
#define SUM_F64(a) ((a) + 0.0)
#define PROD_F32(a) ((float)(a))
#define PROD_F64(a) (a)

SCAN_KERNEL(tg_cumsum_f32, float, +, SUM_F32)
SCAN_KERNEL(tg_cumsum_f64, double, +, SUM_F64)
SCAN_KERNEL(tg_cumprod_f32, float, *, PROD_F32)
SCAN_KERNEL(tg_cumprod_f64, double, *, PROD_F64)
