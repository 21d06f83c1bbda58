/* Every activity marker and the implicit rules (struct returns of several
 * adjoints: structret.c). */
#include "enzyme.h"
#include <math.h>
#include <stdlib.h>

/* sum_i w_i x_i^2 + b^2 */
double wsum(const double *w, const double *x, double b, int n) {
    double s = b * b;
    for (int i = 0; i < n; i++) s += w[i] * x[i] * x[i];
    return s;
}

/* x = [w (n/2), x (n/2 - 1), b] */
double implicit_primal(double *x, int n) { int h = n / 2; return wsum(x, x + h, x[n - 1], h - 1); }
/* no markers: pointer then its shadow, double active (its adjoint is returned), int constant */
void implicit_grad(double *x, double *dx, int n) {
    int h = n / 2;
    dx[n - 1] += __enzyme_autodiff((void *)wsum, x, dx, x + h, dx + h, x[n - 1], h - 1);
}
double implicit_fwd(double *x, double *vx, int n) {
    int h = n / 2;
    return __enzyme_fwddiff((void *)wsum, enzyme_dup, x, vx, enzyme_dup, x + h, vx + h,
                            enzyme_dup, x[n - 1], vx[n - 1], enzyme_const, h - 1);
}

/* w constant (its gradient stays 0), x duplicated, b active through enzyme_out */
double consts_primal(double *x, int n) { int h = n / 2; return wsum(x, x + h, x[n - 1], h - 1); }
void consts_grad(double *x, double *dx, int n) {
    int h = n / 2;
    dx[n - 1] += __enzyme_autodiff((void *)wsum, enzyme_const, x, enzyme_dup, x + h, dx + h,
                                   enzyme_out, x[n - 1], enzyme_const, h - 1);
}
double consts_fwd(double *x, double *vx, int n) {
    int h = n / 2;
    return __enzyme_fwddiff((void *)wsum, enzyme_const, x, enzyme_dup, x + h, vx + h,
                            enzyme_dup, x[n - 1], vx[n - 1], enzyme_const, h - 1);
}

/* out[i] = x[i]^2 sin(x[i]); its primal value is not needed: enzyme_dupnoneed */
void square_into(const double *x, double *out, int n) {
    for (int i = 0; i < n; i++) out[i] = x[i] * x[i] * sin(x[i]);
}

double noneed_primal(double *x, int n) {
    double *out = malloc((size_t)n * sizeof(double)), s = 0.0;
    square_into(x, out, n);
    for (int i = 0; i < n; i++) s += (i + 1) * out[i];
    free(out);
    return s;
}
void noneed_grad(double *x, double *dx, int n) {
    double *out = malloc((size_t)n * sizeof(double)), *dout = malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++) dout[i] = i + 1;
    __enzyme_autodiff_void((void *)square_into, enzyme_dup, x, dx, enzyme_dupnoneed, out, dout,
                           enzyme_const, n);
    free(out);
    free(dout);
}
double noneed_fwd(double *x, double *vx, int n) {
    double *out = malloc((size_t)n * sizeof(double)), *dout = malloc((size_t)n * sizeof(double)), s = 0.0;
    __enzyme_fwddiff_void((void *)square_into, enzyme_dup, x, vx, enzyme_dupnoneed, out, dout, enzyme_const, n);
    for (int i = 0; i < n; i++) s += (i + 1) * dout[i];
    free(out);
    free(dout);
    return s;
}
