/* While loops whose trip counts the data set: their tapes start in a
 * 256-byte inline segment and reach the heap only when they outgrow it.
 * A loop alone, one per iteration of a counted loop, one per frame of a
 * recursion, and the single loop in split mode. */
#include "enzyme.h"
#include <math.h>

/* about (x[0] - x[1]) * 8 iterations when x[2] = 1 and x[3] is small */
double walk(const double *x, int n) {
    double s = x[1];
    while (s < x[0])
        s = s * x[2] + sin(s) * x[3] + 0.125;
    return s * s;
}

/* a while loop per element, inside a counted loop */
double walks(const double *x, int n) {
    double t = 0.0;
    for (int i = 0; i < n; i++) {
        double s = x[i];
        while (s < 2.0)
            s = s + 0.125 + 0.0625 * sin(s * x[i]);
        t += s * x[i];
    }
    return t;
}

/* walks by recursion: a while loop in each frame */
double rwalks(const double *x, int n) {
    if (n <= 0)
        return 0.0;
    double s = x[n - 1];
    while (s < 2.0)
        s = s + 0.125 + 0.0625 * sin(s * x[n - 1]);
    return s * x[n - 1] + rwalks(x, n - 1);
}

#define ENTRIES(f)                                                              \
    double f##_primal(double *x, int n) { return f(x, n); }                     \
    void f##_grad(double *x, double *dx, int n) {                               \
        __enzyme_autodiff_void((void *)f, enzyme_dup, x, dx, enzyme_const, n); \
    }

ENTRIES(walk)
ENTRIES(walks)
ENTRIES(rwalks)

/* walk in split mode: the forward sweep and the reverse sweep in two calls */
void walk_out(const double *x, double *out, int n) { *out = walk(x, n); }

void walk_split_grad(double *x, double *dx, int n) {
    _Alignas(16) char tape[4096];
    double out = 0.0, dout = 0.0;
    __enzyme_augmentfwd((void *)walk_out, enzyme_allocated, (size_t)4096, enzyme_tape, tape,
                        enzyme_dup, x, dx, enzyme_dup, &out, &dout, enzyme_const, n);
    dout = 1.0;
    __enzyme_reverse((void *)walk_out, enzyme_allocated, (size_t)4096, enzyme_tape, tape,
                     enzyme_dup, x, dx, enzyme_dup, &out, &dout, enzyme_const, n);
}
