/* realloc of records that hold a double and a pointer: the new block's shadow would need the old one's
 * pointers and none of its adjoints, which one copy cannot give (refused, naming this line) */
#include <stdlib.h>

double __enzyme_autodiff(void *, ...);

struct cell {
  double v;
  double *next;
};

double grown_cells(double x) {
  struct cell *c = malloc(sizeof(struct cell));
  c[0].v = x;
  c[0].next = &c[0].v;
  c = realloc(c, 4 * sizeof(struct cell));
  double r = *c[0].next * c[0].v;
  free(c);
  return r;
}
double grown_cells_d1(double x) { return __enzyme_autodiff((void *)grown_cells, x); }
