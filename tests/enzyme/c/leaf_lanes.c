/* Vector forward mode with one shadow buffer per argument (Enzyme's vectorize-at-leaf-nodes convention):
 * enzyme_width N, then one shadow after each duplicated pointer, holding the N tangents of each double side
 * by side. -DCASE=n builds a call the convention does not cover (an ADError). */
#include <stddef.h>
#include "enzyme.h"

int enzyme_width;

/* out[0] = sum w[i] x[i]^3, out[1] = out[0] * x[0] */
void weighted_cubes(const double *x, const double *w, double *out, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += w[i] * x[i] * x[i] * x[i];
  out[0] = s;
  out[1] = s * x[0];
}

/* the derivatives of out along the first 4 unit directions: jx holds 4 lanes per element of x, jout 4 per
 * element of out */
void cubes_jac4(const double *x, const double *w, double *jx, double *jout, size_t n) {
  double out[2];
  __enzyme_fwddiff_void((void *)weighted_cubes, enzyme_width, 4, enzyme_dup, x, jx, enzyme_const, w,
                        enzyme_dupnoneed, out, jout, enzyme_const, n);
}

#if CASE == 1 /* a derivative returned, not written */
double dot_self(const double *x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += x[i] * x[i];
  return s;
}
double refused(double *x, double *jx, size_t n) {
  return __enzyme_fwddiff((void *)dot_self, enzyme_width, 2, enzyme_dup, x, jx, enzyme_const, n);
}
#elif CASE == 2 /* floats: lanes of 4 bytes */
void scale_f(const float *x, float *y) { y[0] = 3.0f * x[0] * x[1]; }
void refused(float *x, float *jx, float *y, float *jy) {
  __enzyme_fwddiff_void((void *)scale_f, enzyme_width, 2, enzyme_dup, x, jx, enzyme_dup, y, jy);
}
#elif CASE == 3 /* the buffer handed to a function that is not inlined */
__attribute__((noinline)) void square_into(const double *x, double *y) { y[0] = x[0] * x[0]; }
void outer(const double *x, double *y) { square_into(x, y); y[1] = x[1]; }
void refused(double *x, double *jx, double *y, double *jy) {
  __enzyme_fwddiff_void((void *)outer, enzyme_width, 2, enzyme_dup, x, jx, enzyme_dup, y, jy);
}
#endif
