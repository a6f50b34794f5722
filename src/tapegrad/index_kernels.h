/* tapegrad's index copy kernels (index_kernels.c), for the Cython layer of indexing
 * (ops_index.pxi), which checks dtypes, layouts and bounds before it calls them. */
#ifndef TAPEGRAD_INDEX_KERNELS_H
#define TAPEGRAD_INDEX_KERNELS_H

#include <stddef.h>

/* Row r of y, elements 0 .. n-1: row r of x read backwards, y[r][j] = x[r][n - 1 - j].  Rows
 * are `rows` apart by x_row / y_row bytes; elements are `item` bytes, contiguous in a row. */
void tg_reverse_rows(const char* x, ptrdiff_t x_row, char* y, ptrdiff_t y_row, ptrdiff_t rows,
                     ptrdiff_t n, ptrdiff_t item);

#endif
