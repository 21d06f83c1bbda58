/* Unsupported: a pointer into active memory rebuilt from an integer
 * (ptrtoint, arithmetic, inttoptr) would have no shadow: ADError. */
#include "enzyme.h"
#include <stdint.h>

volatile uintptr_t key = 0x5a5a;

double pick(double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        uintptr_t a = (uintptr_t)(x + i) ^ key;
        double *q = (double *)(a ^ key);
        s += *q * *q;
    }
    return s;
}

void intptr_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)pick, enzyme_dup, x, dx, enzyme_const, n);
}
