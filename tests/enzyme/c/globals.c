/* Active values stored into globals: a callee writes gsq = x*x, a loop fills
 * the global array garr, and gacc accumulates through read-modify-write.
 * Every active global gets a shadow global, zeroed by each differentiation
 * call (a second call must give the same gradient). */
#include "enzyme.h"
#include <math.h>

#define CAP 64

double gsq;
double garr[CAP];
static double gacc;
double gscale = 0.5; /* read only: stays inactive */

__attribute__((noinline)) void put_square(double x) { gsq = x * x; }

__attribute__((noinline)) void accumulate(double v) { gacc += v * gscale; }

double gloss(const double *x, int n) {
    double s = 0.0;
    gacc = 0.0;
    for (int i = 0; i < n && i < CAP; i++) garr[i] = sin(x[i]) * x[i];
    for (int i = 0; i < n && i < CAP; i++) {
        put_square(x[i]);
        s += gsq * garr[(3 * i) % n];
        accumulate(garr[i]);
    }
    return s + gacc * gacc;
}

double globals_primal(double *x, int n) { return gloss(x, n); }
void globals_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)gloss, enzyme_dup, x, dx, enzyme_const, n);
}
double globals_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)gloss, enzyme_dup, x, vx, enzyme_const, n);
}
