/* tapegrad's running sums and products (scan_kernels.c): cumsum and cumprod along one dim.
 *
 * The input and output are C-contiguous arrays viewed as (outer, n, inner), the scan running
 * along n.  Values combine left to right in double (float32 input: each element widened, the
 * running value rounded back to float) - numpy's accumulate at PyTorch's accumulator precision,
 * value for value.  A running sum adds + 0 to each rounded value (PyTorch's starts from +0: a -0
 * reads +0).  `acc` is scratch of `inner` doubles (unused when inner == 1).  Kernels never fail
 * and never touch Python objects: the Cython layer (ops_reduce.pxi) checks dtypes and layout. */
#ifndef TAPEGRAD_SCAN_KERNELS_H
#define TAPEGRAD_SCAN_KERNELS_H

#include <stddef.h>

void tg_cumsum_f32(const float* x, float* y, double* acc, ptrdiff_t outer, ptrdiff_t n,
                   ptrdiff_t inner);
void tg_cumsum_f64(const double* x, double* y, double* acc, ptrdiff_t outer, ptrdiff_t n,
                   ptrdiff_t inner);
void tg_cumprod_f32(const float* x, float* y, double* acc, ptrdiff_t outer, ptrdiff_t n,
                    ptrdiff_t inner);
void tg_cumprod_f64(const double* x, double* y, double* acc, ptrdiff_t outer, ptrdiff_t n,
                    ptrdiff_t inner);

#endif
