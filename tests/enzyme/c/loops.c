/* Loops as the tape sees them: a trip count known before the loop (a cache
 * array sized in the preheader), nested loops (rectangular and triangular),
 * a while loop with a data-dependent exit and a loop with an early exit
 * (arrays that grow). Each keeps a loop-carried value the reverse needs. */
#include "enzyme.h"
#include <math.h>

/* trip count n, known before the loop */
double counted(const double *x, int n) {
    double s = 0.5;
    for (int i = 0; i < n; i++)
        s = sin(s) * x[i] + x[i];
    return s;
}

/* nested: a rectangular nest (inner count invariant) and a triangular one */
double nest(const double *x, int n) {
    double s = 0.25;
    for (int t = 0; t < 3; t++)
        for (int i = 1; i < n; i++)
            s = 0.9 * s + sin(x[i] * s) * x[i - 1];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            s += 0.1 * cos(s * x[j]) * x[i];
    return s;
}

/* while loop: the exit depends on the values computed */
double untilsum(const double *x, int n) {
    double s = 0.0;
    int i = 0;
    while (s < 3.0) {
        double v = x[i % n];
        s = s + v * v * (1.0 + 0.5 * sin(s)) + 0.1;
        i++;
    }
    return s * s;
}

/* a counted loop left early */
double early(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        s = s + x[i] * x[i] * (1.0 + 0.5 * sin(s));
        if (s > 1.5)
            break;
    }
    return s * s;
}

/* a constant trip count: the cache is small enough for the stack frame */
double fixed(const double *x, int n) {
    double s = 0.3;
    for (int i = 0; i < 24; i++)
        s = sin(s) * x[i % n] + 0.5 * x[(i + 1) % n];
    return s;
}

/* a rectangular nest of constant trip counts, also on the stack */
double fixnest(const double *x, int n) {
    double s = 0.2;
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 5; i++)
            s = 0.8 * s + cos(s * x[(t + i) % n]) * x[i % n];
    return s;
}

/* a rectangular nest over n: one array for both levels */
double rect(const double *x, int n) {
    double s = 0.1;
    for (int t = 0; t < n; t++) {
        s = s * x[t];
        for (int i = 0; i < n; i++)
            s = 0.7 * s + sin(s * x[i]) * x[t];
    }
    return s;
}

#define ENTRIES(f)                                                              \
    double f##_primal(double *x, int n) { return f(x, n); }                     \
    void f##_grad(double *x, double *dx, int n) {                               \
        __enzyme_autodiff_void((void *)f, enzyme_dup, x, dx, enzyme_const, n); \
    }                                                                           \
    double f##_fwd(double *x, double *vx, int n) {                              \
        return __enzyme_fwddiff((void *)f, enzyme_dup, x, vx, enzyme_const, n); \
    }

ENTRIES(counted)
ENTRIES(nest)
ENTRIES(untilsum)
ENTRIES(early)
ENTRIES(fixed)
ENTRIES(fixnest)
ENTRIES(rect)
