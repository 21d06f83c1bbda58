/* The Enzyme C interface as the test corpus uses it.
 *
 * Activity markers are ordinary int globals: the differentiated call receives
 * the value loaded from them and the engine recognises the load by the
 * global's name.  They are defined here (tentative definitions) so that a
 * module still links once its differentiation calls are gone.
 *
 * Every program also exposes plain C entry points with one shape, so that a
 * single harness can drive them through ctypes:
 *     T    NAME_primal(T *x, int n)           the function of x[0..n)
 *     void NAME_grad(T *x, T *dx, int n)      dx += gradient (reverse mode)
 *     T    NAME_fwd(T *x, T *vx, int n)       directional derivative along vx
 */
#ifndef GPUC_ENZYME_H
#define GPUC_ENZYME_H

#include <stddef.h>

int enzyme_dup;
int enzyme_dupnoneed;
int enzyme_const;
int enzyme_out;
int enzyme_allocated;
int enzyme_tape;

/* Reverse mode.  The return type says what comes back: the adjoint of the
 * single active scalar argument, nothing, or a struct of several adjoints. */
double __enzyme_autodiff(void *, ...);
void __enzyme_autodiff_void(void *, ...);
typedef struct { double d0, d1; } enzyme_d2;        /* returned in registers */
typedef struct { double d0, d1, d2; } enzyme_d3;    /* returned through sret */
enzyme_d2 __enzyme_autodiff_d2(void *, ...);
enzyme_d3 __enzyme_autodiff_d3(void *, ...);

/* Forward mode: returns the tangent of the result (void: tangents only
 * through shadow memory). */
double __enzyme_fwddiff(void *, ...);
void __enzyme_fwddiff_void(void *, ...);

/* Split reverse mode with a caller-allocated tape. */
void *__enzyme_augmentfwd(void *, ...);
void __enzyme_reverse(void *, ...);

#endif
