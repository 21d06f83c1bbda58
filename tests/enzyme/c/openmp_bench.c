/* OpenMP regions at benchmark sizes (tests/enzyme/openmp_bench.py): NAME_p runs the region, NAME_g its
 * gradient (__enzyme_autodiff), on caller-owned arrays x, dx, y, dy of n doubles. */
#include "enzyme.h"

static void scale(const double *x, double *y, int n) {
#pragma omp parallel for
  for (int i = 0; i < n; i++) y[i] = 3.0 * x[i] * x[i];
}
void scale_p(double *x, double *y, int n) { scale(x, y, n); }
void scale_g(double *x, double *dx, double *y, double *dy, int n) {
  __enzyme_autodiff_void((void *)scale, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, n);
}

static double dot(const double *x, const double *y, int n) {
  double s = 0.0;
#pragma omp parallel for reduction(+ : s)
  for (int i = 0; i < n; i++) s += x[i] * y[i];
  return s;
}
void dot_p(double *x, double *y, int n) { y[0] += 1e-300 * dot(x, y, n); }
void dot_g(double *x, double *dx, double *y, double *dy, int n) {
  __enzyme_autodiff((void *)dot, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, n);
}

static void axpy(double a, const double *x, double *y, int n) {
#pragma omp parallel for firstprivate(a)
  for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i];
}
void axpy_p(double *x, double *y, int n) { axpy(0.5, x, y, n); }
void axpy_g(double *x, double *dx, double *y, double *dy, int n) {
  dx[0] += __enzyme_autodiff((void *)axpy, enzyme_out, 0.5, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, n);
}

static void nest(const double *a, double *b, int rows, int cols) {
#pragma omp parallel for collapse(2)
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < cols; j++) b[i * cols + j] = a[i * cols + j] * a[j] + (double)i;
}
void nest_p(double *x, double *y, int n) { nest(x, y, 1024, n / 1024); }
void nest_g(double *x, double *dx, double *y, double *dy, int n) {
  __enzyme_autodiff_void((void *)nest, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, 1024, enzyme_const,
                         n / 1024);
}
