/* Registered rules whose function clang's optimiser may inline before AD.
 * Each rule deliberately differs from the true derivative, so the test sees
 * whether the rule was used: the gradient must be the rule's, or the engine
 * must refuse (ADError); the primal body's derivative is always wrong.
 *
 * Built with -DCASE=n, one case per module:
 *   1  forward rule (__enzyme_register_derivative_*), forward mode
 *   2  reverse rule (__enzyme_register_gradient_*), reverse mode, inside a loop
 *   3  __enzyme_function_like: a hand-written log1p whose body is 2x
 *   4  case 1 with the function noinline: the rule applies at every level
 *   5  the ruled function is also differentiated directly (a use is left)
 *      while its body is inlined into the caller that is differentiated
 * Entries: double rule_primal(double x), double rule_deriv(double x) (the
 * derivative through the engine) and double rule_want(double x) (what the
 * rule says it is). */
#include "enzyme.h"
#include <math.h>

#if CASE == 1 || CASE == 4 || CASE == 5
#if CASE == 4
__attribute__((noinline))
#endif
double sq(double x) { return x * x; }
double sq_fwd(double x, double dx) { return 100.0 * dx; } /* the rule: d sq = 100 */
void *__enzyme_register_derivative_sq[2] = {(void *)sq, (void *)sq_fwd};
double outer(double x) { return sq(x) * 3.0 + x; }
double rule_primal(double x) { return outer(x); }
double rule_deriv(double x) { return __enzyme_fwddiff((void *)outer, x, 1.0); }
double rule_want(double x) { return 301.0; }
#if CASE == 5
double direct(double x) { return __enzyme_fwddiff((void *)sq, x, 1.0); }
#endif
#endif

#if CASE == 2
double cube(double x) { return x * x * x; }
double cube_aug(double x) { return cube(x); }
double cube_rev(double x, double d) { return 7.0 * d; } /* the rule: d cube = 7 */
void *__enzyme_register_gradient_cube[3] = {(void *)cube, (void *)cube_aug, (void *)cube_rev};
double sum_cubes(double x) {
    double s = 0.0;
    for (int i = 1; i <= 3; i++) s += cube(x * i);
    return s;
}
double rule_primal(double x) { return sum_cubes(x); }
double rule_deriv(double x) { return __enzyme_autodiff((void *)sum_cubes, x); }
double rule_want(double x) { return 7.0 * (1 + 2 + 3); }
#endif

#if CASE == 3
double my_log1p(double x) { return 2.0 * x; } /* not log1p: the declaration says to use log1p's rule */
void *__enzyme_function_like[2] = {(void *)my_log1p, "log1p"};
double through_log(double x) { return my_log1p(x * x) + x; }
double rule_primal(double x) { return through_log(x); }
double rule_deriv(double x) { return __enzyme_autodiff((void *)through_log, x); }
double rule_want(double x) { return 2.0 * x / (1.0 + x * x) + 1.0; }
#endif
