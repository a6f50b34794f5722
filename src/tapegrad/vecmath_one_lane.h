/* The vector abstraction of vecmath_impl.h on one lane of plain C99 doubles (VM_W = 1): the
 * portable level (vecmath_scalar.c) and pow's one-lane path (vecmath_pow_one.c) include it before
 * vecmath_impl.h, with their own VM_LEVEL_NAME.  a*b+c stays unfused (vd_fma: a software fma()
 * would be slow on CPUs without one); vd_fma_exact and vd_fnma_exact are C99's fma(). */
#ifndef TAPEGRAD_VECMATH_ONE_LANE_H
#define TAPEGRAD_VECMATH_ONE_LANE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define VM_W 1

typedef double vd;
typedef uint64_t vi;
typedef int vm;

static inline vd vd_set(double c) { return c; }
static inline vd vd_load(const double *p) { return *p; }
static inline void vd_store(double *p, vd v) { *p = v; }
static inline vd vd_load_f32(const float *p) { return (double)*p; }
static inline void vd_store_f32(float *p, vd v) { *p = (float)v; }
static inline vd vd_round_f32(vd v) { return (double)(float)v; }
/* One lane: an array has no partial tail (never called). */
static inline vd vd_load_part(const double *p, size_t m) { (void)m; return *p; }
static inline vd vd_load_f32_part(const float *p, size_t m) { (void)m; return (double)*p; }
static inline vd vd_load_part_one(const double *p, size_t m) { (void)m; return *p; }
static inline vd vd_load_f32_part_one(const float *p, size_t m) { (void)m; return (double)*p; }
static inline void vd_store_part(double *p, vd v, size_t m) { (void)m; *p = v; }
static inline void vd_store_f32_part(float *p, vd v, size_t m) { (void)m; *p = (float)v; }
static inline vd vd_add(vd a, vd b) { return a + b; }
static inline vd vd_sub(vd a, vd b) { return a - b; }
static inline vd vd_mul(vd a, vd b) { return a * b; }
static inline vd vd_div(vd a, vd b) { return a / b; }
static inline vd vd_fma(vd a, vd b, vd c) { return a * b + c; }
static inline vd vd_fnma(vd a, vd b, vd c) { return c - a * b; }
/* Only where a correction step needs the exact residual c - a*b (float64 tanh, sigmoid): C99's
 * fma(), in hardware where the CPU has it (glibc and MSVC's CRT dispatch at run time), in
 * software otherwise; one instruction in a translation unit compiled for FMA (vecmath_pow_one.c). */
static inline vd vd_fnma_exact(vd a, vd b, vd c) { return fma(-a, b, c); }
/* Fused where the other levels' bits must be matched (pow: every multiply-add). */
static inline vd vd_fma_exact(vd a, vd b, vd c) { return fma(a, b, c); }
static inline vd vd_min(vd a, vd b) { return a < b ? a : b; }
static inline vd vd_max(vd a, vd b) { return a > b ? a : b; }
static inline vd vd_abs(vd a) { return fabs(a); }
static inline vi vd_as_vi(vd a) { vi b; memcpy(&b, &a, sizeof b); return b; }
static inline vd vi_as_vd(vi a) { vd b; memcpy(&b, &a, sizeof b); return b; }
static inline vd vd_and(vd a, vd b) { return vi_as_vd(vd_as_vi(a) & vd_as_vi(b)); }
static inline vd vd_or(vd a, vd b) { return vi_as_vd(vd_as_vi(a) | vd_as_vi(b)); }
static inline vd vd_xor(vd a, vd b) { return vi_as_vd(vd_as_vi(a) ^ vd_as_vi(b)); }
static inline vm vd_lt(vd a, vd b) { return a < b; }
static inline vm vd_gt(vd a, vd b) { return a > b; }
static inline vm vd_eq(vd a, vd b) { return a == b; }
static inline vm vd_isnan(vd a) { return a != a; }
static inline vm vm_or(vm a, vm b) { return a || b; }
static inline vm vm_and(vm a, vm b) { return a && b; }
static inline vm vm_andnot(vm a, vm b) { return !a && b; }
static inline int vm_any(vm m) { return m; }
static inline vd vd_select(vm m, vd a, vd b) { return m ? a : b; }
static inline vi vi_set(uint64_t c) { return c; }
static inline vi vi_add(vi a, vi b) { return a + b; }
static inline vi vi_and(vi a, vi b) { return a & b; }
static inline vi vi_or(vi a, vi b) { return a | b; }
static inline vi vi_shl(vi a, int k) { return a << k; }
static inline vi vi_shr(vi a, int k) { return a >> k; }
static inline vm vi_eq(vi a, vi b) { return a == b; }
static inline void vd_lookup4(const double *t, vi i, vd *a, vd *b, vd *c, vd *d)
{
    const double *row = t + 4 * i;
    *a = row[0];
    *b = row[1];
    *c = row[2];
    *d = row[3];
}
static inline void vd_lookup2(const double *t, vi i, vd *a, vd *b)
{
    *a = t[2 * i];
    *b = t[2 * i + 1];
}
static inline void vd_lookup16(const double *ta, const double *tb, vi i, vd *a, vd *b)
{
    *a = ta[i];
    *b = tb[i];
}

#endif
