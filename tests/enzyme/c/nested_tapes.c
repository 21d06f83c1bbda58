/* Higher-order reverse mode over code that keeps tapes: each level differentiates the tapes (pushes, loop
 * caches grown by realloc, blocks from the engine's allocator) that the level inside it wrote. */
#include <stdint.h>
#include <stdlib.h>

double __enzyme_autodiff(void *, ...);
uint64_t __enzyme_iter(uint64_t, uint64_t);

__attribute__((noinline)) static uint64_t falling(uint64_t k) { return k < 2 ? 1 : k * falling(k - 1); }

/* the terms k <= n of the cosine series, every third power left out, in a loop whose trip count grows by one
 * per derivative level: the fourth level's loop caches outgrow their first block */
double cos_part(double x) {
  double s = 0.0;
  uint64_t n = __enzyme_iter(14, 1);
  for (uint64_t k = 0; k <= n; k++) {
    if (k % 2 == 1 || k % 3 == 0)
      continue;
    s += __builtin_pow(x, (double)k) / (double)falling(k) * (k % 4 == 0 ? 1.0 : -1.0);
  }
  return s;
}
double cos_d1(double x) { return __enzyme_autodiff((void *)cos_part, x); }
double cos_d2(double x) { return __enzyme_autodiff((void *)cos_d1, x); }
double cos_d3(double x) { return __enzyme_autodiff((void *)cos_d2, x); }
double cos_d4(double x) { return __enzyme_autodiff((void *)cos_d3, x); }

/* a table of pointers grown by realloc between storing a pointer and reading through it: the new block's
 * shadow must hold the old one's shadow pointers */
double through_grown_table(double x) {
  double **table = malloc(2 * sizeof(double *));
  double *cell = malloc(sizeof(double));
  *cell = x * x;
  table[1] = cell;
  table = realloc(table, 300 * sizeof(double *));
  table[299] = cell;
  double r = *table[1] * x + *table[299];
  free(cell);
  free(table);
  return r;
}
double grown_table_d1(double x) { return __enzyme_autodiff((void *)through_grown_table, x); }
