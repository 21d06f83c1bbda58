/* __enzyme_iter(n, k): n in the primal, n + k in each derivative taken of the code (Enzyme's way to give
 * a truncated series more terms where it is differentiated). */
#include <stdint.h>
#include "enzyme.h"

uint64_t __enzyme_iter(uint64_t, uint64_t);

/* sum of x^i / i! for i = 0..n */
double series(double x) {
  double term = 1.0, s = 0.0;
  uint64_t n = __enzyme_iter(3, 2);
  for (uint64_t i = 0; i <= n; i++) {
    s += term;
    term = term * x / (double)(i + 1);
  }
  return s;
}
double iter_primal(double *x, int n) { return series(x[0]); }
void iter_grad(double *x, double *dx, int n) { dx[0] += __enzyme_autodiff((void *)series, x[0]); }
double iter_fwd(double *x, double *v, int n) { return __enzyme_fwddiff((void *)series, x[0], v[0]); }

/* a second derivative: n + 2k iterations */
double d_series(double x) { return __enzyme_autodiff((void *)series, x); }
void iter2_grad(double *x, double *dx, int n) { dx[0] += __enzyme_autodiff((void *)d_series, x[0]); }
