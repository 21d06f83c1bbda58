/* libc calls with rules: frexp (the mantissa's derivative 2^-e), ldexp, and
 * posix_memalign (the shadow gets an aligned zeroed allocation of its own). */
#include "enzyme.h"
#include <math.h>
#include <stdlib.h>

double libc_loss(const double *x, int n) {
    double *buf;
    if (posix_memalign((void **)&buf, 64, sizeof(double) * n) != 0) return 0.0;
    for (int i = 0; i < n; i++) {
        int e;
        double m = frexp(x[i] * 3.0, &e);
        buf[i] = m * m + ldexp(x[i], e % 4);
    }
    double s = 0.0;
    for (int i = 0; i < n; i++) s += buf[i] * buf[(i + 1) % n];
    free(buf);
    return s;
}

double libc_primal(double *x, int n) { return libc_loss(x, n); }
void libc_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)libc_loss, enzyme_dup, x, dx, enzyme_const, n);
}
double libc_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)libc_loss, enzyme_dup, x, vx, enzyme_const, n);
}
