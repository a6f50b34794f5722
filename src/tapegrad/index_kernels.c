/* Index copy kernels (index_kernels.h).  Compiled at -O3 with the other kernels: the reversing
 * loops vectorise into permutes, where numpy's copy of a reversed view moves one element per
 * step (flip of a 64 x 1000 float32 along dim 1 took 2x PyTorch's time in that copy alone). */
#include <string.h>
#include <stdint.h>
#include "index_kernels.h"

#define REVERSE(T)                                                                                \
    for (r = 0; r < rows; r++) {                                                                  \
        const T* xs = (const T*)(x + r * x_row);                                                  \
        T* ys = (T*)(y + r * y_row);                                                              \
        for (j = 0; j < n; j++)                                                                   \
            ys[j] = xs[n - 1 - j];                                                                \
    }

void tg_reverse_rows(const char* x, ptrdiff_t x_row, char* y, ptrdiff_t y_row, ptrdiff_t rows,
                     ptrdiff_t n, ptrdiff_t item)
{
    ptrdiff_t r, j;
    switch (item) {
    case 1: REVERSE(uint8_t) return;
    case 2: REVERSE(uint16_t) return;
    case 4: REVERSE(uint32_t) return;
    case 8: REVERSE(uint64_t) return;
    default:
        for (r = 0; r < rows; r++)
            for (j = 0; j < n; j++)
                memcpy(y + r * y_row + j * item, x + r * x_row + (n - 1 - j) * item, (size_t)item);
    }
}
