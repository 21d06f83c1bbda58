/* __enzyme_batch: the primal over lanes (Enzyme's batch mode) from C.
 * Entries take and return plain doubles / arrays so that ctypes can drive them. */
#include "enzyme.h"

int enzyme_width, enzyme_vector, enzyme_scalar;

double poly(double x, double a) { return a * x * x + 3.0 * x; }
void square_into(const double *x, double *res) { *res = *x * *x + 1.0; }

typedef struct { double a, b; } two;              /* returned in registers */
typedef struct { double v[4]; } four;             /* returned through sret */
typedef double v2 __attribute__((vector_size(16)));

two __enzyme_batch_two(void *, ...);
four __enzyme_batch_four(void *, ...);
void __enzyme_batch_void(void *, ...);
v2 __enzyme_batch_v2(void *, ...);

/* out[0..2) = poly(x[k], a) */
void batch_two(const double *x, double a, double *out) {
    two r = __enzyme_batch_two((void *)poly, enzyme_width, 2, enzyme_vector, x[0], x[1], enzyme_scalar, a);
    out[0] = r.a;
    out[1] = r.b;
}
/* out[0..4) = poly(x[k], a[k]) */
void batch_four(const double *x, const double *a, double *out) {
    four r = __enzyme_batch_four((void *)poly, enzyme_width, 4, enzyme_vector, x[0], x[1], x[2], x[3],
                                 enzyme_vector, a[0], a[1], a[2], a[3]);
    for (int k = 0; k < 4; k++) out[k] = r.v[k];
}
/* out[k] = x[k]^2 + 1 through pointers, k < 3 */
void batch_ptrs(const double *x, double *out) {
    __enzyme_batch_void((void *)square_into, enzyme_width, 3, enzyme_vector, &x[0], &x[1], &x[2],
                        enzyme_vector, &out[0], &out[1], &out[2]);
}
/* a vector of results */
void batch_vec(const double *x, double a, double *out) {
    v2 r = __enzyme_batch_v2((void *)poly, enzyme_width, 2, enzyme_vector, x[0], x[1], enzyme_scalar, a);
    out[0] = r[0];
    out[1] = r[1];
}
/* the gradient of a function that batches: d/dx of sum_k poly(x * k, 2) for k = 1, 2 */
double batched_sum(double x) {
    two r = __enzyme_batch_two((void *)poly, enzyme_width, 2, enzyme_vector, x, 2.0 * x, enzyme_scalar, 2.0);
    return r.a + r.b;
}
double batched_sum_grad(double x) { return __enzyme_autodiff((void *)batched_sum, x); }
