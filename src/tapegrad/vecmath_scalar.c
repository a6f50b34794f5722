/* The portable level of vecmath: the algorithms of vecmath_impl.h on one lane of plain C99
 * doubles.  a*b+c stays unfused here (a software fma() would be slow on CPUs without one); the
 * algorithms only rely on products being exact where they say so, and pow fuses every
 * multiply-add (vd_fma_exact: C99's fma) to give the other levels' bits. */
#include "vecmath_levels.h"

#define VM_LEVEL_NAME scalar
#include "vecmath_one_lane.h"
#include "vecmath_impl.h"

#define VM_EXPORT_F32(name)                                                      \
    void tg_vm_##name##_f32_scalar(const float *x, float *y, size_t n)           \
    {                                                                            \
        name##_f32_via_f64(x, y, n);                                             \
    }
TG_VM_KERNELS(VM_EXPORT_F32)

#define VM_EXPORT_ACT_F32(name)                                                                   \
    void tg_vm_##name##_f32_scalar(const float *x, float p0, float p1, float *y, size_t n)       \
    {                                                                                             \
        name##_f32_via_f64(x, p0, p1, y, n);                                                      \
    }
#define VM_EXPORT_ACT_GRAD_F32(name)                                                              \
    void tg_vm_##name##_f32_scalar(const float *g, const float *x, float p0, float p1, float *y, \
                                   size_t n)                                                      \
    {                                                                                             \
        name##_f32_via_f64(g, x, p0, p1, y, n);                                                   \
    }
TG_VM_ACTIVATIONS(VM_EXPORT_ACT_F32)
TG_VM_ACTIVATION_GRADS(VM_EXPORT_ACT_GRAD_F32)
