/* Unsupported: loops vectorised with gathers and scatters through an index
 * array (-O3 for AVX-512) must raise ADError, not give a zero gradient (the
 * lanes of addresses carried no shadow). */
#include "enzyme.h"

double gathered(const double *__restrict x, double *__restrict y, const long *__restrict idx, long n) {
    double s = 0.0;
    for (long i = 0; i < n; i++) {
        y[i] = x[idx[i]] * x[idx[i]];
        s += x[2 * i];
    }
    return s;
}

double gather_grad(const double *x, double *dx, double *y, double *dy, const long *idx, long n) {
    return __enzyme_autodiff((void *)gathered, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, idx,
                             enzyme_const, n);
}
