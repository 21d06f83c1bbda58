/* Unsupported: a malloc reached through a function pointer the caller passes is
 * not recognised as an allocation (only a global's initial pointer is, see
 * alloc_wrappers.c), so the memory has no shadow: ADError saying so (not a
 * wrong gradient). */
#include "enzyme.h"
#include <stdlib.h>
typedef void *(*alloc_fn)(size_t);
double fp_loss(const double *x, int n, alloc_fn alloc) {
    double *t = alloc(sizeof(double) * n);
    double s = 0;
    for (int i = 0; i < n; i++) t[i] = x[i] * x[i];
    for (int i = 0; i < n; i++) s += t[i] * x[(i + 1) % n];
    free(t);
    return s;
}
void fp_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)fp_loss, enzyme_dup, x, dx, enzyme_const, n, enzyme_const, (alloc_fn)malloc);
}
