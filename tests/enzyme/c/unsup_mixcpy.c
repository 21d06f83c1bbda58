/* Unsupported: copying structs that hold both a double and a pointer to
 * doubles (a memcpy over floats and pointers) must raise ADError. */
#include "enzyme.h"
#include <stdlib.h>

typedef struct { double w; double *p; } item;

double weigh(double *x, int n) {
    item *a = malloc((size_t)n * sizeof(item)), *b = malloc((size_t)n * sizeof(item));
#pragma clang loop vectorize(disable) interleave(disable)
    for (int i = 0; i < n; i++) {
        a[i].w = x[i] * x[i];
        a[i].p = &x[(i + 1) % n];
    }
    for (int i = 0; i < n; i++) b[(3 * i) % n] = a[i];
    double s = 0.0;
    for (int i = 0; i < n; i++) s += b[i].w * *b[i].p;
    free(a);
    free(b);
    return s;
}

void mixcpy_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)weigh, enzyme_dup, x, dx, enzyme_const, n);
}
