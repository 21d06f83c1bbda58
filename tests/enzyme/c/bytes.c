/* Floats moved as integers: the type analysis follows the bytes (enzyme_plugin/ad/typeinfo.py).
 * Each case (compiled with -DCASE=k, one per module) defines double NAME_primal(double *x, int n) and
 * void NAME_grad(double *x, double *dx, int n). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "enzyme.h"

#define N_MAX 64

#if CASE == 1
/* doubles kept as their bits in a uint64_t buffer (memcpy into integer memory and back) */
__attribute__((noinline)) double bits_buffer(const double *x, int n) {
  uint64_t buf[N_MAX];
  double s = 0.0;
  for (int i = 0; i < n; i++) {
    double v = x[i] * x[i];
    memcpy(&buf[i], &v, sizeof v);
  }
  for (int i = 0; i < n; i++) {
    double v;
    memcpy(&v, &buf[n - 1 - i], sizeof v);
    s += v * (i + 1);
  }
  return s;
}
double bits_primal(double *x, int n) { return bits_buffer(x, n); }
void bits_grad(double *x, double *dx, int n) { __enzyme_autodiff((void *)bits_buffer, enzyme_dup, x, dx, enzyme_const, n); }
#endif

#if CASE == 2
/* a union of a double and its bits: written as the double, copied as the integer */
typedef union {
  double d;
  uint64_t u;
} word;
__attribute__((noinline)) double union_copy(const double *x, int n) {
  word a[N_MAX], b[N_MAX];
  double s = 0.0;
  for (int i = 0; i < n; i++) a[i].d = x[i] * 2.0 + x[(i + 1) % n];
  for (int i = 0; i < n; i++) b[i].u = a[(i + 3) % n].u;
  for (int i = 0; i < n; i++) s += b[i].d * b[i].d;
  return s;
}
double union_primal(double *x, int n) { return union_copy(x, n); }
void union_grad(double *x, double *dx, int n) { __enzyme_autodiff((void *)union_copy, enzyme_dup, x, dx, enzyme_const, n); }
#endif

#if CASE == 3
/* a struct of doubles copied as a whole (clang: memcpy or integer loads and stores) */
typedef struct {
  double a, b;
} pair;
__attribute__((noinline)) double struct_copy(const double *x, int n) {
  pair p[N_MAX / 2], q[N_MAX / 2];
  double s = 0.0;
  int m = n / 2;
  for (int i = 0; i < m; i++) {
    p[i].a = x[2 * i] * x[2 * i];
    p[i].b = x[2 * i + 1] + 1.0;
  }
  for (int i = 0; i < m; i++) q[i] = p[m - 1 - i];
  for (int i = 0; i < m; i++) s += q[i].a * q[i].b * (i + 1);
  return s;
}
double struct_primal(double *x, int n) { return struct_copy(x, n); }
void struct_grad(double *x, double *dx, int n) { __enzyme_autodiff((void *)struct_copy, enzyme_dup, x, dx, enzyme_const, n); }
#endif

#if CASE == 4
/* records mixing doubles and integers copied with memcpy */
typedef struct {
  double v;
  int k;
  double w;
  long tag;
} record;
__attribute__((noinline)) double mixed_records(const double *x, int n) {
  record r[N_MAX], c[N_MAX];
  double s = 0.0;
  for (int i = 0; i < n; i++) {
    r[i].v = x[i] * x[i];
    r[i].k = i % 3;
    r[i].w = x[(i + 2) % n];
    r[i].tag = -i;
  }
  memcpy(c, r, (size_t)n * sizeof(record));
  for (int i = 0; i < n; i++) s += c[i].v * (c[i].k + 1) + c[i].w * c[i].w * (double)c[i].tag;
  return s;
}
double mixed_primal(double *x, int n) { return mixed_records(x, n); }
void mixed_grad(double *x, double *dx, int n) { __enzyme_autodiff((void *)mixed_records, enzyme_dup, x, dx, enzyme_const, n); }
#endif

#if CASE == 5
/* a double's bits passed through an integer parameter and back */
__attribute__((noinline)) static double from_bits(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d * d;
}
__attribute__((noinline)) double bits_param(const double *x, int n) {
  double s = 0.0;
  for (int i = 0; i < n; i++) {
    uint64_t u;
    double v = x[i] + 0.5;
    memcpy(&u, &v, sizeof u);
    s += from_bits(u) * (i % 4 + 1);
  }
  return s;
}
double param_primal(double *x, int n) { return bits_param(x, n); }
void param_grad(double *x, double *dx, int n) { __enzyme_autodiff((void *)bits_param, enzyme_dup, x, dx, enzyme_const, n); }
#endif

#if CASE == 6 /* a double's bits returned through an integer result */
__attribute__((noinline)) static uint64_t to_bits(double d) {
  uint64_t u;
  d = d * d;
  memcpy(&u, &d, sizeof u);
  return u;
}
__attribute__((noinline)) double bits_result(const double *x, int n) {
  double s = 0.0;
  for (int i = 0; i < n; i++) {
    uint64_t u = to_bits(x[i] - 0.25);
    double v;
    memcpy(&v, &u, sizeof v);
    s += v * (i % 3 + 1);
  }
  return s;
}
double result_primal(double *x, int n) { return bits_result(x, n); }
void result_grad(double *x, double *dx, int n) { __enzyme_autodiff((void *)bits_result, enzyme_dup, x, dx, enzyme_const, n); }
#endif

#if CASE == 7 /* the bits changed as integer arithmetic (the mantissa): no derivative rule, an ADError */
__attribute__((noinline)) double bit_abs(const double *x, int n) {
  double s = 0.0;
  for (int i = 0; i < n; i++) {
    uint64_t u;
    double v = x[i] - 0.5;
    memcpy(&u, &v, sizeof u);
    u += 1ull << 40;
    memcpy(&v, &u, sizeof v);
    s += v;
  }
  return s;
}
double abs_primal(double *x, int n) { return bit_abs(x, n); }
void abs_grad(double *x, double *dx, int n) { __enzyme_autodiff((void *)bit_abs, enzyme_dup, x, dx, enzyme_const, n); }
#endif

#if CASE == 8 /* packed records: a double 4 bytes into each 12-byte record, copied whole (an ADError: moving
                 its adjoint 8 bytes at a time from the copy's start would split it) */
typedef struct __attribute__((packed)) {
  int k;
  double v;
} packed_rec;
__attribute__((noinline)) double packed_records(const double *x, int n) {
  packed_rec r[N_MAX], c[N_MAX];
  double s = 0.0;
  for (int i = 0; i < n; i++) {
    r[i].k = i % 3;
    r[i].v = x[i] * x[i];
  }
  memcpy(c, r, (size_t)n * sizeof(packed_rec));
  for (int i = 0; i < n; i++) s += c[i].v * (c[i].k + 1) + r[i].v * r[i].v * 0.5;
  return s;
}
double packed_primal(double *x, int n) { return packed_records(x, n); }
void packed_grad(double *x, double *dx, int n) { __enzyme_autodiff((void *)packed_records, enzyme_dup, x, dx, enzyme_const, n); }
#endif

#if CASE == 9 /* a double's bits passed through an integer parameter that the callee stores into memory */
__attribute__((noinline)) static uint64_t *store_bits(uint64_t u, uint64_t tag) {
  uint64_t *cell = malloc(2 * sizeof *cell);
  double d;
  memcpy(&d, &u, sizeof d);
  *(double *)cell = d;
  cell[1] = tag;
  return cell;
}
__attribute__((noinline)) double stored_bits(const double *x, int n) {
  double s = 0.0;
  for (int i = 0; i < n; i++) {
    uint64_t u;
    double v = x[i] * x[i];
    memcpy(&u, &v, sizeof u);
    uint64_t *cell = store_bits(u, (uint64_t)i);
    s += *(double *)cell * (i % 3 + 1);
    free(cell);
  }
  return s;
}
double stored_primal(double *x, int n) { return stored_bits(x, n); }
void stored_grad(double *x, double *dx, int n) { __enzyme_autodiff((void *)stored_bits, enzyme_dup, x, dx, enzyme_const, n); }
#endif
