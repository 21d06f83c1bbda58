/* Single precision: libm's float functions and their intrinsics
 * (compiled with -fno-math-errno so clang emits llvm.*.f32). */
#include "enzyme.h"
#include <math.h>

/* Non-variadic prototypes: a float passed through "..." would be promoted
 * to double. */
float __enzyme_autodiff_ff(void *, float);
float __enzyme_fwddiff_ff(void *, int, float, float);
void __enzyme_autodiff_fp(void *, int, float *, float *, int, int);
float __enzyme_fwddiff_fp(void *, int, float *, float *, int, int);

/* elementwise over an array */
float elemf(const float *x, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; i++) {
        float v = x[i];
        s += sqrtf(v) * expf(-v) + logf(v) * sinf(v) + cosf(v) * tanhf(v);
    }
    return s;
}

float float_elem_primal(float *x, int n) { return elemf(x, n); }
void float_elem_grad(float *x, float *dx, int n) {
    __enzyme_autodiff_fp((void *)elemf, enzyme_dup, x, dx, enzyme_const, n);
}
float float_elem_fwd(float *x, float *vx, int n) {
    return __enzyme_fwddiff_fp((void *)elemf, enzyme_dup, x, vx, enzyme_const, n);
}

/* binary functions of x[0], x[1] read through a pointer */
float binf(const float *x, int n) {
    float a = x[0], b = x[1];
    return powf(a, b) + fmaf(a, b, a) + fmaxf(a, b - 1.0f) * copysignf(a, b - 1.4f)
         + hypotf(a, b) + atan2f(a, b) + fabsf(a - 0.6f) * b + a * b + __builtin_powif(a, 3);
}

float float_bin_primal(float *x, int n) { return binf(x, n); }
void float_bin_grad(float *x, float *dx, int n) {
    __enzyme_autodiff_fp((void *)binf, enzyme_dup, x, dx, enzyme_const, n);
}
float float_bin_fwd(float *x, float *vx, int n) {
    return __enzyme_fwddiff_fp((void *)binf, enzyme_dup, x, vx, enzyme_const, n);
}

/* an active float scalar argument */
float scalf(float x) { return x * cbrtf(x) + erff(x) + exp2f(x) * log2f(x); }

float float_scalar_primal(float *x, int n) { return scalf(x[0]); }
void float_scalar_grad(float *x, float *dx, int n) { dx[0] += __enzyme_autodiff_ff((void *)scalf, x[0]); }
float float_scalar_fwd(float *x, float *vx, int n) {
    return __enzyme_fwddiff_ff((void *)scalf, enzyme_dup, x[0], vx[0]);
}
