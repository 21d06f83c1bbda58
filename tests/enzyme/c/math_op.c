/* One scalar rule per module: compiled once per entry of MATH_OPS in
 * programs.py with -DEXPR=<expression in x and y>. */
#include "enzyme.h"
#include <math.h>

double f(double x, double y) { return EXPR; }

double math_primal(double *x, int n) { return f(x[0], x[1]); }

void math_grad(double *x, double *dx, int n) {
    /* x active (explicit enzyme_out), y constant */
    dx[0] += __enzyme_autodiff((void *)f, enzyme_out, x[0], enzyme_const, x[1]);
    /* x constant, y active by the implicit rule for floating-point arguments */
    dx[1] += __enzyme_autodiff((void *)f, enzyme_const, x[0], x[1]);
}

double math_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)f, enzyme_dup, x[0], vx[0], enzyme_dup, x[1], vx[1]);
}
