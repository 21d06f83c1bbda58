/* Calls to other defined functions (kept out of line and inlined) and
 * recursion. */
#include "enzyme.h"
#include <math.h>

__attribute__((noinline)) double sq(double t) { return t * t; }
static double cube(double t) { return t * t * t; }

__attribute__((noinline)) void axpy(double a, const double *x, double *y, int n) {
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}

double calls(const double *x, int n) {
    double y[64];
    for (int i = 0; i < n; i++) y[i] = sq(x[i]) + cube(x[i]);
    axpy(sin(x[0]), x, y, n);
    double s = 0.0;
    for (int i = 0; i < n; i++) s += y[i] * sq(y[i] - x[i]);
    return s;
}

double calls_primal(double *x, int n) { return calls(x, n); }
void calls_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)calls, enzyme_dup, x, dx, enzyme_const, n);
}
double calls_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)calls, enzyme_dup, x, vx, enzyme_const, n);
}

/* linear recursion (tail-recursion elimination may turn it into a loop at -O2) */
double rpow(double t, int k) {
    if (k == 0) return 1.0;
    return t * rpow(t, k - 1);
}

/* tree recursion: two recursive calls per level */
double tree(double t, int depth) {
    if (depth == 0) return sin(t) + 1.5;
    return 0.7 * tree(0.9 * t, depth - 1) * tree(t + 0.1, depth - 1);
}

double recursion_primal(double *x, int n) { return rpow(x[0], 5) + tree(x[1], 4); }
void recursion_grad(double *x, double *dx, int n) {
    dx[0] += __enzyme_autodiff((void *)rpow, x[0], 5);
    dx[1] += __enzyme_autodiff((void *)tree, x[1], enzyme_const, 4);
}
double recursion_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)rpow, enzyme_dup, x[0], vx[0], enzyme_const, 5)
         + __enzyme_fwddiff((void *)tree, enzyme_dup, x[1], vx[1], enzyme_const, 4);
}
