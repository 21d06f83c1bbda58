/* __enzyme_virtualreverse(f): the address of {f's augmented forward, f's reverse}, Enzyme's shadow of a
 * function pointer, called here by hand as a virtual call would. */
#include <math.h>
#include "enzyme.h"

void *__enzyme_virtualreverse(void *);
typedef struct { double r; void *tape; } result_tape;

double cube_sin(double x) { return x * x * x + sin(x) * x; }
double two(double x, double y) { return x * x * y + y / x; }

double one_primal(double *x, int n) { return cube_sin(x[0]); }
void one_grad(double *x, double *dx, int n) {
  void **pair = (void **)__enzyme_virtualreverse((void *)cube_sin);
  result_tape (*aug)(double) = (result_tape (*)(double))pair[0];
  double (*rev)(double, double, void *) = (double (*)(double, double, void *))pair[1];
  result_tape rt = aug(x[0]);
  x[1] = rt.r; /* the augmented forward's result */
  dx[0] += rev(x[0], 2.5, rt.tape);
}

void two_grad(double *x, double *dx, int n) {
  void **pair = (void **)__enzyme_virtualreverse((void *)two);
  result_tape (*aug)(double, double) = (result_tape (*)(double, double))pair[0];
  enzyme_d2 (*rev)(double, double, double, void *) = (enzyme_d2 (*)(double, double, double, void *))pair[1];
  result_tape rt = aug(x[0], x[1]);
  x[2] = rt.r;
  enzyme_d2 d = rev(x[0], x[1], -1.5, rt.tape);
  dx[0] += d.d0;
  dx[1] += d.d1;
}

#ifdef REFUSED /* a function taking a pointer: no shadow pair of this form */
double through(double *p) { return p[0] * p[0]; }
void *refused(void) { return __enzyme_virtualreverse((void *)through); }
#endif
