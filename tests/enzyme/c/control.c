/* Control flow: branches, switch, nested loops with run-time trip counts,
 * early exits, while loops with data-dependent exits. */
#include "enzyme.h"
#include <math.h>

/* if/else and a switch inside a loop; n % 4 picks the switch phase */
double branchy(const double *x, int n) {
    int k = n % 4;
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        double v = x[i];
        if (v > 0.6)
            s += v * v;
        else
            s -= sin(v);
        switch ((i + k) % 4) {
        case 0: s *= 1.01 + v; break;
        case 1: s += exp(-v) * v; break;
        case 2: s = 0.5 * s + v * v * v; break;
        default: s += log(1.0 + v); break;
        }
    }
    return s;
}

double branchy_primal(double *x, int n) { return branchy(x, n); }
void branchy_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)branchy, enzyme_dup, x, dx, enzyme_const, n);
}
double branchy_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)branchy, enzyme_dup, x, vx, enzyme_const, n);
}

/* a scalar piecewise function with early returns */
double piecewise(double t) {
    if (t < 0.4) return t * t * t;
    if (t < 0.7) return sin(3.0 * t) + t;
    if (t < 1.0) {
        double u = t - 0.7;
        return exp(u) * t;
    }
    return sqrt(t);
}

double piecewise_primal(double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += piecewise(x[i]);
    return s;
}
void piecewise_grad(double *x, double *dx, int n) {
    for (int i = 0; i < n; i++) dx[i] += __enzyme_autodiff((void *)piecewise, x[i]);
}
double piecewise_fwd(double *x, double *vx, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += __enzyme_fwddiff((void *)piecewise, enzyme_dup, x[i], vx[i]);
    return s;
}

/* triangular nested loops, both trip counts known only at run time */
double nested(const double *x, int n, int m) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        double r = 0.0;
        for (int j = 0; j <= i % m; j++) r += x[j] * cos(x[i] * (j + 1));
        s += r * x[i];
    }
    return s;
}

double nested_primal(double *x, int n) { return nested(x, n, 3 + n % 4); }
void nested_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)nested, enzyme_dup, x, dx, enzyme_const, n, enzyme_const, 3 + n % 4);
}
double nested_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)nested, enzyme_dup, x, vx, enzyme_const, n, enzyme_const, 3 + n % 4);
}

/* early exit: accumulate squares until a threshold is passed */
double until(const double *x, int n, double limit) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        s += x[i] * x[i] * (1.0 + i);
        if (s > limit) break;
    }
    return s;
}

double until_primal(double *x, int n) { return until(x, n, 2.0); }
void until_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)until, enzyme_dup, x, dx, enzyme_const, n, enzyme_const, 2.0);
}
double until_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)until, enzyme_dup, x, vx, enzyme_const, n, enzyme_const, 2.0);
}

/* Newton's iteration for sqrt(c): exits when converged */
double newton(double c) {
    double r = c > 1.0 ? c : 1.0;
    int k = 0;
    while (k < 60 && fabs(r * r - c) > 1e-15 * c) {
        r = 0.5 * (r + c / r);
        k++;
    }
    return r;
}

/* exp(t) by its Taylor series: stops when the term no longer matters */
double expseries(double t) {
    double term = 1.0, s = 1.0;
    int k = 1;
    while (fabs(term) > 1e-17 * s) {
        term = term * t / k;
        s += term;
        k++;
    }
    return s;
}

double whiles_primal(double *x, int n) { return newton(x[0]) + expseries(x[1]); }
void whiles_grad(double *x, double *dx, int n) {
    dx[0] += __enzyme_autodiff((void *)newton, enzyme_out, x[0]);
    dx[1] += __enzyme_autodiff((void *)expseries, enzyme_out, x[1]);
}
double whiles_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)newton, enzyme_dup, x[0], vx[0])
         + __enzyme_fwddiff((void *)expseries, enzyme_dup, x[1], vx[1]);
}
