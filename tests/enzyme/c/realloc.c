/* realloc of active memory (its own module, so that the other array
 * programs do not depend on it). */
#include "enzyme.h"
#include <stdlib.h>

/* a buffer of active values grown by realloc */
double grow(const double *x, int n) {
    int cap = 1, len = 0;
    double *buf = malloc(sizeof(double));
    for (int i = 0; i < n; i++) {
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, (size_t)cap * sizeof(double));
        }
        buf[len++] = x[i] * x[i];
    }
    double s = 0.0;
    for (int i = 1; i < len; i++) s += buf[i] * buf[i - 1];
    free(buf);
    return s;
}

double grow_primal(double *x, int n) { return grow(x, n); }
void grow_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)grow, enzyme_dup, x, dx, enzyme_const, n);
}
double grow_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)grow, enzyme_dup, x, vx, enzyme_const, n);
}
