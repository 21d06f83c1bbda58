/* Unsupported: arithmetic on the bit pattern of an active double (here:
 * doubling it by bumping the exponent) must raise ADError, not give 0. */
#include "enzyme.h"

typedef union { double d; unsigned long u; } pun;

double twice(double t) {
    pun a;
    a.d = t * t;
    a.u += 1ul << 52;
    return a.d;
}

double bits_grad(double t) { return __enzyme_autodiff((void *)twice, t); }
