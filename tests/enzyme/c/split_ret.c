/* Split reverse mode, the other conventions of Enzyme's interface:
 * __enzyme_augmentfwd returns the tape and __enzyme_reverse takes it as its
 * last argument (after the seed of the result's adjoint), and the
 * enzyme_allocated / enzyme_tape markers after the primal arguments. */
#include "enzyme.h"
#include <math.h>

double sumcos(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += cos(x[i]) * x[i] + 0.5 * s;
    return s;
}

void sumcos_out(const double *x, double *out, int n) { *out = sumcos(x, n); }

double __enzyme_fwddiff_d(void *, ...);

double splitret_primal(double *x, int n) { return 2.0 * sumcos(x, n) + sumcos(x, n); }

void splitret_grad(double *x, double *dx, int n) {
    /* 2 * sumcos: the returned tape, the seed 2.0 before it */
    void *tape = __enzyme_augmentfwd((void *)sumcos, enzyme_dup, x, dx, enzyme_const, n);
    __enzyme_reverse((void *)sumcos, enzyme_dup, x, dx, enzyme_const, n, 2.0, tape);
    /* + sumcos: the markers after the arguments */
    _Alignas(16) char mem[64];
    double out = 0.0, dout = 0.0;
    __enzyme_augmentfwd((void *)sumcos_out, enzyme_dup, x, dx, enzyme_dup, &out, &dout, enzyme_const, n,
                        enzyme_allocated, (size_t)sizeof mem, enzyme_tape, mem);
    dout = 1.0;
    __enzyme_reverse((void *)sumcos_out, enzyme_dup, x, dx, enzyme_dup, &out, &dout, enzyme_const, n,
                     enzyme_allocated, (size_t)sizeof mem, enzyme_tape, mem);
}

double splitret_fwd(double *x, double *vx, int n) {
    return 3.0 * __enzyme_fwddiff_d((void *)sumcos, enzyme_dup, x, vx, enzyme_const, n);
}
