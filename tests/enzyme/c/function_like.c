/* __enzyme_function_like: my_log1p is declared to behave like log1p, so its
 * derivative is log1p's, 1/(1+x), and not the derivative of its body (a
 * truncated series with derivative 1 - x + x^2). */
#include "enzyme.h"

__attribute__((noinline)) double my_log1p(double x) { return x - x * x / 2.0 + x * x * x / 3.0; }

void *__enzyme_function_like[2] = {(void *)my_log1p, "log1p"};

double likesum(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += (i + 1) * my_log1p(x[i]);
    return s;
}

double like_primal(double *x, int n) { return likesum(x, n); }
void like_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)likesum, enzyme_dup, x, dx, enzyme_const, n);
}
double like_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)likesum, enzyme_dup, x, vx, enzyme_const, n);
}
