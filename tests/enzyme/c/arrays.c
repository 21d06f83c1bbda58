/* Arrays through pointers: dot product, Horner, memory overwritten after it
 * was read, memcpy/memset, malloc/free of active memory. */
#include "enzyme.h"
#include <stdlib.h>
#include <string.h>
#include <math.h>

/* dot product of the two halves of x: two duplicated pointers */
double dot(const double *a, const double *b, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

double dot_primal(double *x, int n) { return dot(x, x + n / 2, n / 2); }
void dot_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)dot, enzyme_dup, x, dx, enzyme_dup, x + n / 2, dx + n / 2,
                           enzyme_const, n / 2);
}
double dot_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)dot, enzyme_dup, x, vx, enzyme_dup, x + n / 2, vx + n / 2,
                            enzyme_const, n / 2);
}

/* polynomial by Horner: coefficients x[0..n-1) duplicated, point x[n-1] active */
double horner(const double *c, int deg, double t) {
    double p = c[deg];
    for (int i = deg - 1; i >= 0; i--) p = p * t + c[i];
    return p;
}

double horner_primal(double *x, int n) { return horner(x, n - 2, x[n - 1]); }
void horner_grad(double *x, double *dx, int n) {
    dx[n - 1] += __enzyme_autodiff((void *)horner, enzyme_dup, x, dx, enzyme_const, n - 2, x[n - 1]);
}
double horner_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)horner, enzyme_dup, x, vx, enzyme_const, n - 2,
                            enzyme_dup, x[n - 1], vx[n - 1]);
}

/* two sweeps that overwrite x in place, each reading what the other wrote */
double overwrite(double *x, int n) {
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) x[i] = 0.5 * x[i] * x[i] + sin(x[i]);
    for (int i = 1; i < n; i++) x[i] = x[i] * x[i - 1];
    return x[n - 1] + x[0];
}

double overwrite_primal(double *x, int n) { return overwrite(x, n); }
void overwrite_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)overwrite, enzyme_dup, x, dx, enzyme_const, n);
}
double overwrite_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)overwrite, enzyme_dup, x, vx, enzyme_const, n);
}

/* heap copies: malloc, memcpy, memset, scatter, memcpy back, free */
double memops(const double *x, int n) {
    size_t bytes = (size_t)n * sizeof(double);
    double *a = malloc(bytes), *b = malloc(bytes);
    memcpy(a, x, bytes);
    memset(b, 0, bytes);
    for (int i = 0; i < n; i++) b[(3 * i) % n] += a[i] * a[i];
    memcpy(a, b, bytes);
    double s = 0.0;
    for (int i = 0; i < n; i++) s += a[i] * x[i];
    free(a);
    free(b);
    return s;
}

double memops_primal(double *x, int n) { return memops(x, n); }
void memops_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)memops, enzyme_dup, x, dx, enzyme_const, n);
}
double memops_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)memops, enzyme_dup, x, vx, enzyme_const, n);
}
