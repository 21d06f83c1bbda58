/* Floats through integer memory: doubles memcpy'd into uint64_t storage (in a
 * callee, and in a local scalar) and read back. Type analysis follows the
 * bytes: the integer memory gets a shadow and the adjoints move with the
 * copies. */
#include "enzyme.h"
#include <stdint.h>
#include <string.h>

#define CAP 64

__attribute__((noinline)) void pack(const double *x, uint64_t *u, int n) {
    for (int i = 0; i < n; i++) memcpy(&u[i], &x[i], sizeof(double));
}

double intmem_loss(const double *x, int n) {
    uint64_t u[CAP];
    double s = 0.0;
    int m = n < CAP ? n : CAP;
    pack(x, u, m);
    for (int i = 0; i < m; i++) {
        double d;
        memcpy(&d, &u[(3 * i) % m], sizeof d);
        uint64_t w;
        memcpy(&w, &x[i], sizeof w);
        double e;
        memcpy(&e, &w, sizeof e);
        s += d * e * (i + 1);
    }
    return s;
}

double intmem_primal(double *x, int n) { return intmem_loss(x, n); }
void intmem_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)intmem_loss, enzyme_dup, x, dx, enzyme_const, n);
}
double intmem_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)intmem_loss, enzyme_dup, x, vx, enzyme_const, n);
}
