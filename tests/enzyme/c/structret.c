/* Struct returns holding the adjoints of several active scalars. */
#include "enzyme.h"
#include <math.h>

/* two active scalars: both adjoints returned in a struct (registers) */
double two(double a, double b) { return sin(a) * b + a * a * b; }

double out2_primal(double *x, int n) { return two(x[0], x[1]); }
void out2_grad(double *x, double *dx, int n) {
    enzyme_d2 r = __enzyme_autodiff_d2((void *)two, enzyme_out, x[0], enzyme_out, x[1]);
    dx[0] += r.d0;
    dx[1] += r.d1;
}
double out2_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)two, enzyme_dup, x[0], vx[0], enzyme_dup, x[1], vx[1]);
}

/* three active scalars, implicit markers: the struct comes back through sret */
double three(double a, double b, double c) { return a * b * c + exp(a - c) + b / c; }

double out3_primal(double *x, int n) { return three(x[0], x[1], x[2]); }
void out3_grad(double *x, double *dx, int n) {
    enzyme_d3 r = __enzyme_autodiff_d3((void *)three, x[0], x[1], x[2]);
    dx[0] += r.d0;
    dx[1] += r.d1;
    dx[2] += r.d2;
}
double out3_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)three, enzyme_dup, x[0], vx[0], enzyme_dup, x[1], vx[1],
                            enzyme_dup, x[2], vx[2]);
}
