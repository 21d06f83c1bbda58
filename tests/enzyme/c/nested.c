/* Higher order from C: the differentiated function itself calls
 * __enzyme_autodiff / __enzyme_fwddiff.  Entry points (not the corpus's
 * NAME_grad shape; tests/enzyme/test_clang_nested.py drives them):
 *     double d2_F_G(double x)                  f''(x) with F over G (fwd/rev)
 *     double d3_fwd_fwd_rev(double x)          f'''(x)
 *     void hvp_fwd_rev(x, v, hv, n)            hv = H(x) v of the Rosenbrock function
 *     void hvp_rev_rev(x, v, hv, n)            hv += H(x) v (reverse over reverse)
 */
#include "enzyme.h"
#include <math.h>

static double cubic_sin(double x) { return x * x * x * sin(x); }

double d1_rev(double x) { return __enzyme_autodiff((void *)cubic_sin, x); }
double d1_fwd(double x) { return __enzyme_fwddiff((void *)cubic_sin, x, 1.0); }

double d2_fwd_rev(double x) { return __enzyme_fwddiff((void *)d1_rev, x, 1.0); }
double d2_rev_rev(double x) { return __enzyme_autodiff((void *)d1_rev, x); }
double d2_fwd_fwd(double x) { return __enzyme_fwddiff((void *)d1_fwd, x, 1.0); }
double d2_rev_fwd(double x) { return __enzyme_autodiff((void *)d1_fwd, x); }

double d3_fwd_fwd_rev(double x) { return __enzyme_fwddiff((void *)d2_fwd_rev, x, 1.0); }

/* Rosenbrock over an array, its gradient, and Hessian-vector products */
double rosenbrock(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i + 1 < n; i++) {
        double a = x[i + 1] - x[i] * x[i], b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
    }
    return s;
}

void rosenbrock_grad(const double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)rosenbrock, enzyme_dup, x, dx, enzyme_const, n);
}

void hvp_fwd_rev(const double *x, const double *v, double *hv, int n) {
    double dx[64] = {0};
    __enzyme_fwddiff_void((void *)rosenbrock_grad, enzyme_dup, x, v, enzyme_dup, dx, hv, enzyme_const, n);
}

void hvp_rev_rev(const double *x, const double *v, double *hv, int n) {
    double dx[64] = {0}, seed[64];
    for (int i = 0; i < n; i++) seed[i] = v[i];
    __enzyme_autodiff_void((void *)rosenbrock_grad, enzyme_dup, x, hv, enzyme_dup, dx, seed, enzyme_const, n);
}
