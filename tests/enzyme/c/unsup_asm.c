/* Unsupported: inline assembly on an active value must raise ADError. */
#include "enzyme.h"

double opaque(double t) {
    double v = t * t;
    __asm__("" : "+x"(v));
    return v * t;
}

double asm_grad(double t) { return __enzyme_autodiff((void *)opaque, t); }
