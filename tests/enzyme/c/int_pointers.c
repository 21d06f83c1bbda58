/* Unmarked pointers to integer memory in a marker call: Enzyme's C interface takes `int *n` (no shadow after
 * it) as constant. Each function reads its length through integer memory. */
#include <stdio.h>
#include "enzyme.h"

/* sum of squares of x[0..*n) */
double sumsq(double *x, int *n) {
    double s = 0.0;
    for (int i = 0; i < *n; i++) s += x[i] * x[i];
    return s;
}
void sumsq_grad(double *x, double *dx, int n) { __enzyme_autodiff_void((void *)sumsq, x, dx, &n); }

/* the same with the shadow of n given: n is duplicated as the call says */
void sumsq_grad_dup(double *x, double *dx, int n) {
    int dn = 0;
    __enzyme_autodiff_void((void *)sumsq, x, dx, &n, &dn);
}

/* a length read through a pointer to a pointer in a callee, which then clears it: x[i] *= 3 over
 * [seg[0], seg[1]) */
__attribute__((noinline)) void scale(double *x, long **meta) {
    long *seg = meta[0];
    for (long i = seg[0]; i < seg[1]; i++) x[i] *= 3.0;
    meta[0] = 0;
}
void meta_fn(double *x, long **meta) { scale(x, meta); }
void meta_grad(double *x, double *dx, long lo, long hi) {
    long seg[2] = {lo, hi};
    long *m = seg;
    __enzyme_autodiff_void((void *)meta_fn, x, dx, &m);
}

/* a pointer the function never reads, to an int array of the caller: constant */
double twice(double *x, int *tags) { return 2.0 * x[0]; }
void twice_grad(double *x, double *dx, int n) {
    int tags[4] = {n, n, n, n};
    __enzyme_autodiff_void((void *)twice, x, dx, tags);
}

#ifdef WITH_DOT
/* a pointer to doubles with no shadow after it stays an error (it may carry a derivative) */
double dot(double *x, double *y) { return x[0] * y[0] + x[1] * y[1]; }
void dot_grad(double *x, double *dx, double *y) { __enzyme_autodiff_void((void *)dot, x, dx, y); }
#endif
