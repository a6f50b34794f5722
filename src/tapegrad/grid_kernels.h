/* tapegrad's grid_sample kernels (grid_kernels.c): F.grid_sample of a 4-d input, bilinear and
 * nearest, every padding mode and both align_corners conventions, forward and backward (the
 * input's and the grid's gradients).
 *
 * They reproduce PyTorch's vectorised CPU kernel (GridSamplerKernel.cpp) lane for lane, because
 * its results depend on its steps: the unnormalisation (a fused multiply-add where its build
 * contracts one), the reflection by truncated division, the weights s * e, s * w, n * e, n * w
 * and their sum in the order nw, ne, sw, se (fused where the build fuses), and the input
 * gradient's scatter-add, whose order among points that hit one pixel is chunks of `lanes`
 * points (the vector width), then channels, then corners nw, ne, sw, se.  Kernels never fail
 * and never touch Python objects: the Cython layer (ops_nn_kernels.pxi) checks dtypes and
 * layouts. */
#ifndef TAPEGRAD_GRID_KERNELS_H
#define TAPEGRAD_GRID_KERNELS_H

#include <stddef.h>

/* How one call samples.  mode: 0 bilinear, 1 nearest; padding: 0 zeros, 1 border,
 * 2 reflection; fused: PyTorch's build contracts a * b + c to fused multiply-adds; lanes: its
 * vector width in elements (points per chunk); row: chunks restart every `row` points (the
 * output plane H_out * W_out when PyTorch walks the grid as one flat run, else W_out). */
typedef struct {
    ptrdiff_t N, C, H, W;     /* input (N, C, H, W), C-contiguous */
    ptrdiff_t P;              /* output points per sample: grid (N, P, 2), output (N, C, P) */
    ptrdiff_t row, lanes;
    int mode, padding, align_corners, fused;
} tg_grid2d;

void tg_grid_sample_2d_f32(const float* input, const float* grid, float* out,
                           const tg_grid2d* g);
void tg_grid_sample_2d_f64(const double* input, const double* grid, double* out,
                           const tg_grid2d* g);
/* grad_input: NULL (not wanted) or zeroed (N, C, H, W); grad_grid: (N, P, 2), written. */
void tg_grid_sample_2d_backward_f32(const float* grad_out, const float* input, const float* grid,
                                    float* grad_input, float* grad_grid, const tg_grid2d* g);
void tg_grid_sample_2d_backward_f64(const double* grad_out, const double* input,
                                    const double* grid, double* grad_input, double* grad_grid,
                                    const tg_grid2d* g);

/* F.grid_sample of a 5-d input (trilinear or nearest): PyTorch's scalar kernel
 * (GridSampler.cpp), point by point in order, channels inner, corners tnw, tne, tsw, tse, bnw,
 * bne, bsw, bse; no fused multiply-adds (that file is built for the baseline ISA).  Its own
 * coordinate rules: ((g + 1) * size - 1) / 2 (or (g + 1) / 2 * (size - 1)), a NaN clipped to the
 * far edge, reflection by fmod. */
typedef struct {
    ptrdiff_t N, C, D, H, W;  /* input (N, C, D, H, W), C-contiguous */
    ptrdiff_t P;              /* output points per sample: grid (N, P, 3), output (N, C, P) */
    int mode, padding, align_corners;
} tg_grid3d;

void tg_grid_sample_3d_f32(const float* input, const float* grid, float* out,
                           const tg_grid3d* g);
void tg_grid_sample_3d_f64(const double* input, const double* grid, double* out,
                           const tg_grid3d* g);
void tg_grid_sample_3d_backward_f32(const float* grad_out, const float* input, const float* grid,
                                    float* grad_input, float* grad_grid, const tg_grid3d* g);
void tg_grid_sample_3d_backward_f64(const double* grad_out, const double* input,
                                    const double* grid, double* grad_input, double* grad_grid,
                                    const tg_grid3d* g);

#endif
