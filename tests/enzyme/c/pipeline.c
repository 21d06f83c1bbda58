/* AD at Enzyme's place in the pipeline (gpuc cc / gpuc enzyme --pre-opt).
 * Small functions clang inlines at -O1 and above, with rules that differ from
 * the true derivative (so a test sees whether the rule was used), a global
 * the derivative reads, and loops of a runtime trip count.
 * Entries: double NAME(double x) for each primal and derivative below. */
#include "enzyme.h"

static double scale = 1.5;          /* a global read by the differentiated code */
double table[4] = {1.0, -2.0, 0.5, 3.0};

double poly(double x) { return x * x + 2.0 * x; }           /* rule: d = 10 */
double poly_fwd(double x, double dx) { return 10.0 * dx; }
void *__enzyme_register_derivative_poly[2] = {(void *)poly, (void *)poly_fwd};

double wave(double x) { return x * x * x; }                  /* rule: d = 4 */
double wave_aug(double x) { return wave(x); }
double wave_rev(double x, double d) { return 4.0 * d; }
void *__enzyme_register_gradient_wave[3] = {(void *)wave, (void *)wave_aug, (void *)wave_rev};

double with_rules(double x) {
    double s = 0.0;
    for (int i = 0; i < 4; i++) s += table[i] * wave(x) + scale * poly(x);
    return s;
}
double with_rules_fwd(double x) { return __enzyme_fwddiff((void *)with_rules, x, 1.0); }
double with_rules_grad(double x) { return __enzyme_autodiff((void *)with_rules, x); }
/* forward mode uses poly's forward rule (10) and wave's body (3x^2); reverse mode wave's
 * reverse rule (4) and poly's body (2x + 2): sum(table) = 2.5, 4 iterations of scale = 1.5 */
double with_rules_want_fwd(double x) { return 2.5 * 3.0 * x * x + 4 * 1.5 * 10.0; }
double with_rules_want_grad(double x) { return 2.5 * 4.0 + 4 * 1.5 * (2.0 * x + 2.0); }

/* no rules: a loop of runtime length over a global and an array, true derivative */
int steps = 7;
double smooth(double x) {
    double y = x;
    for (int i = 0; i < steps; i++) y = y * scale * 0.5 + table[i % 4] * y * y * 0.01;
    return y;
}
double smooth_grad(double x) { return __enzyme_autodiff((void *)smooth, x); }
double smooth_fwd(double x) { return __enzyme_fwddiff((void *)smooth, x, 1.0); }

/* reverse mode through memory: dx[i] += d/dx[i] of sum x[i]^2 * table[i%4] */
double energy(double *x, int n) {
    double e = 0.0;
    for (int i = 0; i < n; i++) e += x[i] * x[i] * table[i % 4] + scale * poly(x[i]);
    return e;
}
void energy_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)energy, enzyme_dup, x, dx, enzyme_const, n);
}
