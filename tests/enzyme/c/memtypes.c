/* What memory holds, by type analysis: copies of doubles as 8-byte memcpy
 * (an i64 load/store after instcombine or clang -O2), structs of doubles
 * copied whole, a struct mixing doubles and integers, type punning through a
 * union. The derivative must move with the bytes. */
#include "enzyme.h"
#include <stdlib.h>
#include <string.h>
#include <math.h>

/* element-wise memcpy of doubles into a permuted heap copy */
double punned(const double *x, int n) {
    double *y = malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++) memcpy(&y[i], &x[(3 * i) % n], sizeof(double));
    double s = 0.0;
    for (int i = 0; i < n; i++) s += y[i] * y[i] * (i + 1);
    free(y);
    return s;
}

double punned_primal(double *x, int n) { return punned(x, n); }
void punned_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)punned, enzyme_dup, x, dx, enzyme_const, n);
}
double punned_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)punned, enzyme_dup, x, vx, enzyme_const, n);
}

/* arrays of structs of doubles, copied by struct assignment */
typedef struct { double a, b; } pair;

double structs(const double *x, int n) {
    pair *p = malloc((size_t)n * sizeof(pair)), *q = malloc((size_t)n * sizeof(pair));
    for (int i = 0; i < n; i++) {
        p[i].a = x[i] * x[i];
        p[i].b = sin(x[i]);
    }
    for (int i = 0; i < n; i++) q[i] = p[(3 * i) % n];
    double s = 0.0;
    for (int i = 0; i < n; i++) s += q[i].a * q[i].b + (i + 1) * q[i].a;
    free(p);
    free(q);
    return s;
}

double structs_primal(double *x, int n) { return structs(x, n); }
void structs_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)structs, enzyme_dup, x, dx, enzyme_const, n);
}
double structs_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)structs, enzyme_dup, x, vx, enzyme_const, n);
}

/* a struct of a double and an integer, copied whole; the integer picks a weight */
typedef struct { double v; long id; } tagged;

double mixed(const double *x, int n) {
    tagged *p = malloc((size_t)n * sizeof(tagged)), *q = malloc((size_t)n * sizeof(tagged));
    for (int i = 0; i < n; i++) {
        p[i].v = exp(0.5 * x[i]);
        p[i].id = (7 * i) % 5;
    }
    for (int i = 0; i < n; i++) q[n - 1 - i] = p[i];
    double s = 0.0;
    for (int i = 0; i < n; i++) s += q[i].v * (double)(q[i].id + 1) * x[i];
    free(p);
    free(q);
    return s;
}

double mixed_primal(double *x, int n) { return mixed(x, n); }
void mixed_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)mixed, enzyme_dup, x, dx, enzyme_const, n);
}
double mixed_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)mixed, enzyme_dup, x, vx, enzyme_const, n);
}

/* a double moved through the integer member of a union, into a reversed copy */
typedef union { double d; unsigned long u; } pun;

double unions(const double *x, int n) {
    double *y = malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++) {
        pun a;
        a.d = x[i];
        unsigned long bits = a.u;
        pun b;
        b.u = bits;
        y[n - 1 - i] = b.d;
    }
    double s = 0.0;
    for (int i = 0; i < n; i++) s += y[i] * x[i];
    free(y);
    return s;
}

double unions_primal(double *x, int n) { return unions(x, n); }
void unions_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)unions, enzyme_dup, x, dx, enzyme_const, n);
}
double unions_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)unions, enzyme_dup, x, vx, enzyme_const, n);
}
