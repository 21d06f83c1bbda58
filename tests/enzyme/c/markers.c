/* Markers of Enzyme's C interface the engine does not implement (or a call
 * of one it does that it must refuse), one per module (-DCASE=n); each must be an ADError naming it, never a call left
 * in the output. MARKER_LINE is the line of the marker call. */
#include "enzyme.h"

double sq(double x) { return x * x; }
int enzyme_context, enzyme_width, enzyme_vector, enzyme_scalar;

#if CASE == 1 /* implemented (c/batch.c), but here it returns one double for two lanes */
double __enzyme_batch(void *, ...);
double use(double x) { return __enzyme_batch((void *)sq, enzyme_width, 2, enzyme_vector, x, x); }
#elif CASE == 2
double *__enzyme_shadow(void *, ...);
double g_data[2];
double use(double x) { return __enzyme_shadow((void *)g_data)[0] + x; }
#elif CASE == 3 /* implemented for functions of floats (c/virtual_reverse.c), not of a pointer */
void *__enzyme_virtualreverse(void *);
double first(double *p) { return p[0] * p[0]; }
double use(double x) { return __enzyme_virtualreverse((void *)first) ? x : 0.0; }
#elif CASE == 4
void __enzyme_set_fixed_point(void *, ...);
double use(double x) { __enzyme_set_fixed_point((void *)sq, 1e-6); return x; }
#elif CASE == 5
double __enzyme_fixed_point(void *, ...);
double use(double x) { return __enzyme_fixed_point((void *)sq, x); }
#elif CASE == 6
void *__enzyme_allocation_like(void *, ...);
double use(double x) { return __enzyme_allocation_like((void *)sq, 0) ? x : 0.0; }
#elif CASE == 7
double __enzyme_checkpoint(void *, ...);
double use(double x) { return __enzyme_checkpoint((void *)sq, x); }
#elif CASE == 8
double use(double x) { return __enzyme_autodiff((void *)sq, enzyme_context, 0, x); }
#elif CASE == 9
typedef struct { void *tape; double primal; } aug_t;
aug_t __enzyme_augmentfwd_struct(void *, ...);
double use(double x) { return __enzyme_augmentfwd_struct((void *)sq, x).primal; }
#elif CASE == 10
void *__enzyme_inactive_global[1] = {(void *)&enzyme_scalar};
double use(double x) { return __enzyme_autodiff((void *)sq, x); }
#elif CASE == 11
void *__enzyme_inactivefn[1] = {(void *)sq};
double use(double x) { return __enzyme_autodiff((void *)sq, x); }
#elif CASE == 12
void *__enzyme_function_like_shadow[2] = {(void *)sq, "enzyme_shadow"};
double use(double x) { return __enzyme_autodiff((void *)sq, x); }
#endif
