/* Calls returning pointers with shadows, not inlined: pick() returns a
 * pointer into its argument, make_scaled() a fresh allocation it filled;
 * the caller reads and writes floats through both. */
#include "enzyme.h"
#include <stdlib.h>

__attribute__((noinline)) double *pick(double *x, int i) { return x + i; }

__attribute__((noinline)) double *make_scaled(const double *x, int n) {
    double *out = malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++) out[i] = x[i] * x[i];
    return out;
}

double ptrloss(double *x, int n) {
    double *s = make_scaled(x, n);
    double acc = 0.0;
    for (int i = 0; i < n; i++) acc += *pick(s, (i * 5) % n) * x[i];
    *pick(x, 0) *= 2.0;
    acc += x[0] * s[n - 1];
    free(s);
    return acc;
}

double ptrret_primal(double *x, int n) { return ptrloss(x, n); }
void ptrret_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)ptrloss, enzyme_dup, x, dx, enzyme_const, n);
}
double ptrret_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)ptrloss, enzyme_dup, x, vx, enzyme_const, n);
}
