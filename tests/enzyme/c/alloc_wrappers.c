/* Memory from an allocator the differentiated code reaches through a wrapper: a function that returns what
 * malloc gave it, a wrapper of that wrapper, and a pool whose allocate/release pointers a global holds. */
#include <stdlib.h>
#include "enzyme.h"

__attribute__((noinline)) void *grab(size_t n) { return malloc(n); }
__attribute__((noinline)) void *grab_twice_removed(size_t n) { return (char *)grab(n + 16) + 16; }

struct pool {
  long served;
  void *(*get)(size_t);
  void (*put)(void *);
};
struct pool shared_pool = {0, malloc, free};
__attribute__((noinline)) void *pool_get(size_t n) { return shared_pool.get(n); }

/* x^3 through memory from grab */
double cube_in_grabbed(double x) {
  double *m = grab(2 * sizeof(double));
  m[0] = x * x;
  m[1] = m[0] * x;
  return m[1];
}
double cube_d(double x) { return __enzyme_autodiff((void *)cube_in_grabbed, x); }
double cube_fwd(double x) { return __enzyme_fwddiff((void *)cube_in_grabbed, x, 1.0); }

/* sum_i x[i]^2 x[(i+1) % n] through a scratch array from the pool, given back to it */
double pooled(const double *x, int n) {
  double *t = shared_pool.get(sizeof(double) * n);
  double *u = grab_twice_removed(sizeof(double) * n);
  double s = 0;
  for (int i = 0; i < n; i++) t[i] = x[i] * x[i];
  for (int i = 0; i < n; i++) u[i] = t[i] * x[(i + 1) % n];
  for (int i = 0; i < n; i++) s += u[i];
  shared_pool.put(t);
  free((char *)u - 16);
  return s;
}
void pooled_grad(double *x, double *dx, int n) {
  __enzyme_autodiff_void((void *)pooled, enzyme_dup, x, dx, enzyme_const, n);
}
double pooled_fwd(double *x, double *vx, int n) { return __enzyme_fwddiff((void *)pooled, enzyme_dup, x, vx, enzyme_const, n); }

/* the pool's allocator replaced after compilation: the derivative stops, naming the call */
double square_from_pool(double x) {
  double *m = pool_get(sizeof(double));
  *m = x * x;
  return *m;
}
double square_d(double x) { return __enzyme_autodiff((void *)square_from_pool, x); }
static void *counted_malloc(size_t n) {
  shared_pool.served++;
  return malloc(n);
}
double square_d_after_swap(double x) {
  shared_pool.get = counted_malloc;
  return square_d(x);
}
