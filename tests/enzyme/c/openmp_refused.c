/* OpenMP regions the AD engine does not model: each is an ADError naming its C line (compiled with
 * -DCASE=k, one case per module). */
#include <omp.h>
#include "enzyme.h"

#if CASE == 1 /* a dynamic schedule */
void region(const double *x, double *y, int n) {
#pragma omp parallel for schedule(dynamic, 2)
  for (int i = 0; i < n; i++) y[i] = x[i] * x[i];
}
#elif CASE == 2 /* a write placed by the thread number */
void region(const double *x, double *y, int n) {
#pragma omp parallel
  {
    int t = omp_get_thread_num();
    if (t < n) y[t] = x[t] * x[t];
  }
}
#elif CASE == 3 /* a critical section that is not a sum */
void region(const double *x, double *y, int n) {
  double m = 0.0;
#pragma omp parallel for
  for (int i = 0; i < n; i++) {
#pragma omp critical
    {
      if (x[i] > m) m = x[i];
    }
  }
  y[0] = m;
}
#elif CASE == 4 /* a num_threads clause */
void region(const double *x, double *y, int n) {
#pragma omp parallel for num_threads(2)
  for (int i = 0; i < n; i++) y[i] = x[i] * x[i];
}
#elif CASE == 5 /* a product reduction (the runtime's atomic branch is a compare-exchange loop) */
void region(const double *x, double *y, int n) {
  double p = 1.0;
#pragma omp parallel for reduction(* : p)
  for (int i = 0; i < n; i++) p *= x[i];
  y[0] = p;
}
#elif CASE == 6 /* tasks */
void region(const double *x, double *y, int n) {
#pragma omp parallel
#pragma omp single
  for (int i = 0; i < n; i++) {
#pragma omp task firstprivate(i)
    y[i] = x[i] * x[i];
  }
}
#elif CASE == 7 /* vector (batch) forward mode, below */
int enzyme_width;
void region(const double *x, double *y, int n) {
#pragma omp parallel for
  for (int i = 0; i < n; i++) y[i] = x[i] * x[i];
}
#endif

void region_grad(double *x, double *dx, double *y, double *dy, int n) {
#if CASE == 7
  __enzyme_fwddiff_void((void *)region, enzyme_width, 2, enzyme_dup, x, dx, dx + n, enzyme_dup, y, dy, dy + n,
                        enzyme_const, n);
#else
  __enzyme_autodiff_void((void *)region, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, n);
#endif
}
