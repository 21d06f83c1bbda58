/* Custom reverse rules for functions of active float scalars, registered
 * through __enzyme_register_gradient_*: the rule returns the adjoint of the
 * argument (a float), or of two arguments (a struct of two floats, returned
 * in one vector register).  The rules use made-up derivatives (3x instead of
 * 2x, and (b, 2a) instead of (b, a)) so that the test sees whether their
 * results reach the gradient. */
#include "enzyme.h"

float __enzyme_fwddiff_f(void *, int, float *, float *, int, int);
void __enzyme_autodiff_f(void *, int, float *, float *, int, int);

__attribute__((noinline)) float fsq(float x) {
    float v = x;
    __asm__("" : "+x"(v));
    return v * x;
}

void *fsq_augment(float x) { return NULL; }
float fsq_reverse(float x, float dret, void *tape) { return dret * 3.0f * x; }
float fsq_forward(float x, float dx) { return 3.0f * x * dx; }

void *__enzyme_register_gradient_fsq[3] = {(void *)fsq, (void *)fsq_augment, (void *)fsq_reverse};
void *__enzyme_register_derivative_fsq[2] = {(void *)fsq, (void *)fsq_forward};

typedef struct { float da, db; } fpair;

__attribute__((noinline)) float fmul2(float a, float b) {
    float v = a;
    __asm__("" : "+x"(v));
    return v * b;
}

void *fmul2_augment(float a, float b) { return NULL; }
fpair fmul2_reverse(float a, float b, float dret, void *tape) {
    fpair r = {dret * b, 2.0f * dret * a};
    return r;
}
float fmul2_forward(float a, float da, float b, float db) { return da * b + 2.0f * a * db; }

void *__enzyme_register_gradient_fmul2[3] = {(void *)fmul2, (void *)fmul2_augment, (void *)fmul2_reverse};
void *__enzyme_register_derivative_fmul2[2] = {(void *)fmul2, (void *)fmul2_forward};

float floss(const float *x, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += fsq(x[i]) + fmul2(x[i], x[(i + 1) % n]);
    return s;
}

float fcustom_primal(float *x, int n) { return floss(x, n); }
void fcustom_grad(float *x, float *dx, int n) {
    __enzyme_autodiff_f((void *)floss, enzyme_dup, x, dx, enzyme_const, n);
}
float fcustom_fwd(float *x, float *vx, int n) {
    return __enzyme_fwddiff_f((void *)floss, enzyme_dup, x, vx, enzyme_const, n);
}
