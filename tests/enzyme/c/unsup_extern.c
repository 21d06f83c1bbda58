/* Unsupported: a call to an unknown external function with a floating-point
 * argument must raise ADError naming the function. */
#include "enzyme.h"

extern double mystery_kernel(double);

double caller(double t) { return mystery_kernel(t * t) + t; }

double extern_grad(double t) { return __enzyme_autodiff((void *)caller, t); }
