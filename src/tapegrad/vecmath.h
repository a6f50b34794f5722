/* tapegrad's vectorised math kernels: elementwise transcendental functions over contiguous
 * float32 / float64 arrays, selected at run time for the CPU.
 *
 * Levels.  TG_VM_SCALAR is portable C99 (any compiler, any CPU); TG_VM_AVX2 uses AVX2 + FMA
 * intrinsics (x86-64 with GCC, Clang or MSVC, chosen only when the CPU and OS support it).  The
 * first call picks the best level available, unless the environment variable TAPEGRAD_SIMD names
 * one ("scalar" or "avx2"; an unavailable or unknown name falls back to the best available).
 *
 * Accuracy (tests/test_vecmath.py, tools/ulp_check.py): within 1 ulp of the correctly rounded
 * result for float32 (evaluated in double, rounded once) and 2 ulp for float64, at every level;
 * special values (signed zeros, infinities, NaN, subnormals, overflow and underflow) as numpy
 * gives them; sin/cos reduce huge arguments exactly (Payne-Hanek).  Floating-point exception
 * flags are not part of the contract.
 *
 * Contract of every kernel: y[i] = f(x[i]) for i < n; x and y are contiguous and either the same
 * array (in place) or disjoint.  The result of one element never depends on its neighbours or on
 * n (the vector tail is computed through the same code path), so a kernel's output is
 * reproducible for a given level.  Kernels never fail, allocate or touch Python objects. */
#ifndef TAPEGRAD_VECMATH_H
#define TAPEGRAD_VECMATH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TG_VM_SCALAR = 0,
    TG_VM_AVX2 = 1,
    TG_VM_N_LEVELS
} tg_vm_level_id;

/* X(name): the kernels, each defined for float64 (tg_vm_<name>_f64) and float32 (..._f32). */
#define TG_VM_KERNELS(X) \
    X(exp) X(log) X(log1p) X(expm1) X(sin) X(cos) X(tanh) X(sigmoid)

#define TG_VM_DECLARE(name)                                                      \
    void tg_vm_##name##_f64(const double *x, double *y, size_t n);               \
    void tg_vm_##name##_f32(const float *x, float *y, size_t n);
TG_VM_KERNELS(TG_VM_DECLARE)
#undef TG_VM_DECLARE

/* The level in use (resolving TAPEGRAD_SIMD on first use). */
int tg_vm_level(void);
/* The best level this build and CPU support. */
int tg_vm_best_level(void);
/* Use `level` from now on; returns it, or -1 (and changes nothing) if it is unavailable here.
 * Not thread-safe against concurrent kernel calls: meant for tests and start-up. */
int tg_vm_set_level(int level);
/* "scalar", "avx2", or NULL for an unknown level. */
const char *tg_vm_level_name(int level);

#ifdef __cplusplus
}
#endif

#endif
