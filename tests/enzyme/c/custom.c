/* Custom rules registered through __enzyme_register_gradient_* (augmented
 * forward returning a tape, reverse taking it) and
 * __enzyme_register_derivative_* (forward).  quantize's body holds inline
 * assembly the engine cannot differentiate: only the rules make it work.
 * The rules implement the straight-through estimator d quantize(x)/dx := 1,
 * which differs from the true derivative (0 almost everywhere), so the test
 * sees whether the rule was used. */
#include "enzyme.h"
#include <math.h>

__attribute__((noinline)) void quantize(const double *x, double *out) {
    double v = *x * 4.0;
    __asm__("" : "+x"(v));
    *out = round(v) * 0.25;
}

void *quantize_augment(const double *x, double *dx, double *out, double *dout) {
    quantize(x, out);
    return NULL;
}

void quantize_reverse(const double *x, double *dx, double *out, double *dout, void *tape) {
    *dx += *dout;
    *dout = 0.0;
}

void quantize_forward(const double *x, const double *dx, double *out, double *dout) {
    quantize(x, out);
    *dout = *dx;
}

void *__enzyme_register_gradient_quantize[3] = {
    (void *)quantize, (void *)quantize_augment, (void *)quantize_reverse};
void *__enzyme_register_derivative_quantize[2] = {(void *)quantize, (void *)quantize_forward};

double qloss(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        double q;
        quantize(&x[i], &q);
        s += q * q + x[i];
    }
    return s;
}

double custom_primal(double *x, int n) { return qloss(x, n); }
void custom_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)qloss, enzyme_dup, x, dx, enzyme_const, n);
}
double custom_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)qloss, enzyme_dup, x, vx, enzyme_const, n);
}
