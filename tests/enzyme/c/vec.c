/* Loops the -O2 vectoriser turns into vector code with
 * llvm.vector.reduce.fadd (compiled with -ffast-math: reassociation). */
#include "enzyme.h"
#include <math.h>

double sumsq(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    return s;
}

double norm(const double *x, int n) { return sqrt(sumsq(x, n)); }

double vnorm_primal(double *x, int n) { return norm(x, n); }
void vnorm_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)norm, enzyme_dup, x, dx, enzyme_const, n);
}
double vnorm_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)norm, enzyme_dup, x, vx, enzyme_const, n);
}

double wdot(const double *a, const double *b, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += a[i] * b[i] * (double)(i + 1);
    return s;
}

double vdot_primal(double *x, int n) { return wdot(x, x + n / 2, n / 2); }
void vdot_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)wdot, enzyme_dup, x, dx, enzyme_dup, x + n / 2, dx + n / 2,
                           enzyme_const, n / 2);
}
double vdot_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)wdot, enzyme_dup, x, vx, enzyme_dup, x + n / 2, vx + n / 2,
                            enzyme_const, n / 2);
}
