/* Derivatives that pass through global variables between functions, in the
 * shapes clang's optimiser rewrites: a static array split into one global per
 * element (@g.0, @g.1 at -O1 and above), a reader that takes no argument (its
 * call has nothing varied, yet it returns what an earlier call stored), a
 * writer of a constant that must drop the adjoint of the value it overwrites,
 * a struct split by field, a pointer to a global handed out by a call, and
 * doubles copied byte-wise into integer and byte storage.
 *
 * Every case exposes  double NAME_primal(double x),  double NAME_grad(double x)
 * (reverse mode) and  double NAME_fwd(double x)  (forward mode). */
#include "enzyme.h"
#include <math.h>

/* put(x) fills a static array, total() reads it back with no argument */
static double pair[2];
__attribute__((noinline)) void put(double x) { pair[0] = x * x; pair[1] = sin(x); }
__attribute__((noinline)) double total(void) { return pair[0] + 3.0 * pair[1]; }
double split_pair(double x) { put(x); return total() * x; }

/* the same without noinline: the optimiser may inline, split and forward */
static double lanes[3];
void fill(double x) { for (int i = 0; i < 3; i++) lanes[i] = x * (i + 1.0); }
double dot3(void) { return lanes[0] * lanes[1] + lanes[2]; }
double split_inlined(double x) { fill(x); return dot3() + lanes[2] * x; }

/* a writer of constants between the write and the read: g[0]'s old adjoint must go */
static double slots[2];
__attribute__((noinline)) void store_both(double x) { slots[0] = exp(x); slots[1] = x * x * x; }
__attribute__((noinline)) void reset_first(void) { slots[0] = 2.0; }
__attribute__((noinline)) double read_slots(void) { return slots[0] * slots[1]; }
double split_reset(double x) { store_both(x); reset_first(); return read_slots(); }

/* a struct split by field; the reader is a no-argument function again */
static struct { double a; int k; double b; } rec;
__attribute__((noinline)) void set_rec(double x) { rec.a = cos(x); rec.k = 3; rec.b = x / (1.0 + x * x); }
__attribute__((noinline)) double get_rec(void) { return rec.a * rec.k + rec.b * rec.b; }
double split_struct(double x) { set_rec(x); return get_rec(); }

/* a pointer to a global element from a call with no argument */
static double cells[4];
__attribute__((noinline)) double *cell(void) { return &cells[2]; }
__attribute__((noinline)) double sum_cells(void) { return cells[0] + cells[2] * cells[2]; }
double split_pointer(double x) { cells[0] = x; *cell() = tanh(x); return sum_cells(); }

/* doubles stored through memcpy into a long and into a byte buffer the optimiser splits */
#include <string.h>
static long slot;
static char raw[16];
__attribute__((noinline)) void put_bytes(double x) {
    double y = x * x, z = 3.0 * sin(x);
    memcpy(&slot, &y, 8);
    memcpy(raw + 8, &z, 8);
}
__attribute__((noinline)) double get_bytes(void) {
    double y, z;
    memcpy(&y, &slot, 8);
    memcpy(&z, raw + 8, 8);
    return y * z + z;
}
double split_bytes(double x) { put_bytes(x); return get_bytes(); }

#define ENTRIES(NAME)                                                                   \
    double NAME##_primal(double x) { return NAME(x); }                                  \
    double NAME##_grad(double x) { return __enzyme_autodiff((void *)NAME, x); }         \
    double NAME##_fwd(double x) { return __enzyme_fwddiff((void *)NAME, x, 1.0); }

ENTRIES(split_pair)
ENTRIES(split_inlined)
ENTRIES(split_reset)
ENTRIES(split_struct)
ENTRIES(split_pointer)
ENTRIES(split_bytes)
