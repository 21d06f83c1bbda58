/* Unsupported: a malloc reached through a function pointer in a global struct
 * is not recognised as an allocation, so the memory has no shadow: ADError
 * saying so (not a wrong gradient). */
#include "enzyme.h"
#include <stdlib.h>
typedef struct { void *(*alloc)(size_t); void (*release)(void *); } allocator;
allocator heap = {malloc, free};
double fp_loss(const double *x, int n) {
    double *t = heap.alloc(sizeof(double) * n);
    double s = 0;
    for (int i = 0; i < n; i++) t[i] = x[i] * x[i];
    for (int i = 0; i < n; i++) s += t[i] * x[(i + 1) % n];
    heap.release(t);
    return s;
}
void fp_grad(double *x, double *dx, int n) { __enzyme_autodiff_void((void *)fp_loss, enzyme_dup, x, dx, enzyme_const, n); }
