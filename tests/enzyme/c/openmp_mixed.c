/* Critical sections that add a value of one floating type into a shared value of another (the
 * conversion clang emits inside the section: fpext/fptrunc around the fadd). */
#include "enzyme.h"

float __enzyme_fwddiff_f(void *, ...);

/* a float shared sum of double per-thread partials: res = (float)((double)res + part) */
float narrowed_sum(const float *a, int n) {
  float res = 0.0f;
#pragma omp parallel
  {
    double part = 0.0;
#pragma omp for
    for (int i = 0; i < n; i++) part += (double)a[i] * a[i] * (i % 3 + 1);
#pragma omp critical
    res += part;
  }
  return res;
}
float narrowed_primal(float *a, int n) { return narrowed_sum(a, n); }
void narrowed_grad(float *a, float *da, int n) {
  __enzyme_autodiff((void *)narrowed_sum, enzyme_dup, a, da, enzyme_const, n);
}
float narrowed_fwd(float *a, float *v, int n) {
  return __enzyme_fwddiff_f((void *)narrowed_sum, enzyme_dup, a, v, enzyme_const, n);
}

/* a double shared sum of float per-thread partials: res = res + (double)part */
double widened_sum(const float *a, int n) {
  double res = 0.0;
#pragma omp parallel
  {
    float part = 0.0f;
#pragma omp for
    for (int i = 0; i < n; i++) part += a[i] * a[i] * (i % 3 + 1);
#pragma omp critical
    res += part;
  }
  return res;
}
double widened_primal(float *a, int n) { return widened_sum(a, n); }
void widened_grad(float *a, float *da, int n) {
  __enzyme_autodiff((void *)widened_sum, enzyme_dup, a, da, enzyme_const, n);
}
double widened_fwd(float *a, float *v, int n) {
  return __enzyme_fwddiff((void *)widened_sum, enzyme_dup, a, v, enzyme_const, n);
}
