/* Split reverse mode: __enzyme_augmentfwd runs the forward sweep and fills a
 * caller-allocated tape (enzyme_allocated <bytes>, enzyme_tape <pointer>);
 * __enzyme_reverse later runs the reverse sweep from that tape. */
#include "enzyme.h"
#include <math.h>

#define TAPE_BYTES 4096

void sinsum(const double *x, double *out, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += sin(x[i]) * x[i] + s * 0.1;
    *out = s * s;
}

double split_primal(double *x, int n) {
    double out;
    sinsum(x, &out, n);
    return out;
}

void split_grad(double *x, double *dx, int n) {
    _Alignas(16) char tape[TAPE_BYTES];
    double out = 0.0, dout = 0.0;
    __enzyme_augmentfwd((void *)sinsum, enzyme_allocated, (size_t)TAPE_BYTES, enzyme_tape, tape,
                        enzyme_dup, x, dx, enzyme_dup, &out, &dout, enzyme_const, n);
    dout = 1.0; /* seed the adjoint of the output between the two sweeps */
    __enzyme_reverse((void *)sinsum, enzyme_allocated, (size_t)TAPE_BYTES, enzyme_tape, tape,
                     enzyme_dup, x, dx, enzyme_dup, &out, &dout, enzyme_const, n);
}

double split_fwd(double *x, double *vx, int n) {
    double out = 0.0, dout = 0.0;
    __enzyme_fwddiff_void((void *)sinsum, enzyme_dup, x, vx, enzyme_dup, &out, &dout, enzyme_const, n);
    return dout;
}
