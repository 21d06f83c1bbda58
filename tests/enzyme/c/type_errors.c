/* Programs whose memory or values the type analysis cannot follow: each is an ADError that names the
 * value (the C variable with -g), its line and what would settle it.  One case per module (-DCASE=N).
 * The line each error names carries the comment ERROR-LINE. */
#include <stdlib.h>
#include <string.h>
#include "enzyme.h"

#if CASE == 1
/* integer arithmetic on the bits of the doubles of an active array (was a silently wrong gradient) */
double bump(double *vals, int n) {
    long *bits = (long *)vals;
    bits[1] = bits[0] + n;
    return vals[1] * vals[0]; /* ERROR-LINE: the doubles are made of the integers' bits here */
}
void grad(double *x, double *dx, int n) { __enzyme_autodiff_void((void *)bump, x, dx, n); }

#elif CASE == 2
/* the bits of an active double changed as an integer */
double nudge(double x) {
    union { double d; long l; } u = {x};
    u.l += 3; /* ERROR-LINE */
    return u.d * x;
}
double grad(double x) { return __enzyme_autodiff((void *)nudge, x); }

#elif CASE == 3
/* bytes copied between active memories that nothing reads or writes with a type */
void move(char *to, const char *from) {
    memcpy(to, from, 24); /* ERROR-LINE */
}
void grad(char *a, char *da, char *b, char *db) {
    __enzyme_autodiff_void((void *)move, enzyme_dup, a, da, enzyme_dup, b, db);
}

#elif CASE == 4
/* records holding a double and a pointer copied whole */
typedef struct { double w; double *p; } item;
double weigh(double *x, int n) {
    item *a = malloc((size_t)n * sizeof(item)), *b = malloc((size_t)n * sizeof(item));
#pragma clang loop vectorize(disable) interleave(disable)
    for (int i = 0; i < n; i++) {
        a[i].w = x[i] * x[i];
        a[i].p = &x[(i + 1) % n];
    }
    for (int i = 0; i < n; i++) memcpy(&b[(3 * i) % n], &a[i], sizeof(item)); /* ERROR-LINE */
    double s = 0.0;
    for (int i = 0; i < n; i++) s += b[i].w * *b[i].p;
    free(a);
    free(b);
    return s;
}
void grad(double *x, double *dx, int n) { __enzyme_autodiff_void((void *)weigh, enzyme_dup, x, dx, enzyme_const, n); }
#endif
