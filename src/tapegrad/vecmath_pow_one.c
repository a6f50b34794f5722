/* pow's one-lane path: vecmath_impl.h's pow (and nothing else: VM_POW_ONLY) on one lane of plain
 * doubles (vecmath_one_lane.h), compiled for AVX2 + FMA so that each of its fused multiply-adds is
 * one instruction.  A pow of a few elements is all latency: one element through the 4-lane kernel
 * also pays the masked tail load and store, the table rows' transposes through memory and the
 * vector mask tests; here each element is a scalar chain (consecutive elements overlap in the
 * CPU).  The same operations in the same order, every multiply-add fused, so the bits are the
 * vector levels' (tests/test_vecmath.py).  vecmath.c calls it only at the AVX2 and AVX-512
 * levels (the CPU has FMA). */
#include "vecmath_levels.h"

#if TG_VM_BUILD_POW_ONE

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC target("avx2,fma")
#endif

#define VM_LEVEL_NAME one
#define VM_POW_ONLY
#include "vecmath_one_lane.h"
#include "vecmath_impl.h"

#if defined(__clang__)
#pragma clang attribute pop
#endif

#else
/* ISO C forbids an empty translation unit. */
typedef int tg_vm_pow_one_not_built;
#endif
