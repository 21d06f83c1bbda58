/* OpenMP parallel regions differentiated in reverse mode (enzyme_plugin/ad/openmp.py).
 *
 * Each case exposes   double NAME_primal(double *x, int n)      a loss of x[0..n)
 *                     void   NAME_grad(double *x, double *dx, int n)   dx += its gradient
 * where the region is the function __enzyme_autodiff differentiates. Built with -fopenmp (parallel)
 * and without (the pragmas ignored: the serial reference).
 */
#include "enzyme.h"

#define N_MAX 64

/* parallel for: y[i] = 3 x[i]^2 */
void omp_scale(const double *x, double *y, int n) {
#pragma omp parallel for
  for (int i = 0; i < n; i++) y[i] = 3.0 * x[i] * x[i];
}
double scale_primal(double *x, int n) {
  double y[N_MAX], s = 0.0;
  omp_scale(x, y, n);
  for (int i = 0; i < n; i++) s += (i + 1) * y[i];
  return s;
}
void scale_grad(double *x, double *dx, int n) {
  double y[N_MAX], dy[N_MAX];
  for (int i = 0; i < n; i++) dy[i] = i + 1;
  __enzyme_autodiff_void((void *)omp_scale, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, n);
}

/* reduction(+:s): a dot product of the two halves, one of them squared */
double omp_dot(const double *x, const double *y, int n) {
  double s = 0.0;
#pragma omp parallel for reduction(+ : s)
  for (int i = 0; i < n; i++) s += x[i] * y[i] * y[i];
  return s;
}
double dot_primal(double *x, int n) { return omp_dot(x, x + n / 2, n / 2); }
void dot_grad(double *x, double *dx, int n) {
  __enzyme_autodiff((void *)omp_dot, enzyme_dup, x, dx, enzyme_dup, x + n / 2, dx + n / 2, enzyme_const, n / 2);
}

/* firstprivate(a): y = a x + y*y, the adjoint of a summed over the threads */
void omp_axpy(double a, const double *x, double *y, int n) {
#pragma omp parallel for firstprivate(a)
  for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i] * y[i];
}
double axpy_primal(double *x, int n) {
  double y[N_MAX], s = 0.0;
  for (int i = 0; i < n - 1; i++) y[i] = x[i + 1] - 0.5;
  omp_axpy(x[0], x + 1, y, n - 1);
  for (int i = 0; i < n - 1; i++) s += (i + 2) * y[i];
  return s;
}
void axpy_grad(double *x, double *dx, int n) {
  double y[N_MAX], dy[N_MAX];
  for (int i = 0; i < n - 1; i++) {
    y[i] = x[i + 1] - 0.5;
    dy[i] = i + 2;
  }
  dx[0] += __enzyme_autodiff((void *)omp_axpy, enzyme_out, x[0], enzyme_dup, x + 1, dx + 1, enzyme_dup, y, dy,
                             enzyme_const, n - 1);
  for (int i = 0; i < n - 1; i++) dx[i + 1] += dy[i];
}

/* critical: s += v of one shared double */
double omp_critical_sum(const double *x, int n) {
  double s = 0.0;
#pragma omp parallel for
  for (int i = 0; i < n; i++) {
    double v = x[i] * x[i] * (i % 3 + 1);
#pragma omp critical
    s += v;
  }
  return s;
}
double critical_primal(double *x, int n) { return omp_critical_sum(x, n); }
void critical_grad(double *x, double *dx, int n) {
  __enzyme_autodiff((void *)omp_critical_sum, enzyme_dup, x, dx, enzyme_const, n);
}

/* collapse(2) over a 6 x 6 nest; every thread reads the shared column a[j] (atomic adjoints) */
void omp_nest(const double *a, double *b, int rows, int cols) {
#pragma omp parallel for collapse(2)
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < cols; j++) b[i * cols + j] = a[i * cols + j] * a[j] + (double)i;
}
double nest_primal(double *x, int n) {
  double b[36], s = 0.0;
  (void)n;
  omp_nest(x, b, 6, 6);
  for (int i = 0; i < 36; i++) s += (i % 5 + 1) * b[i];
  return s;
}
void nest_grad(double *x, double *dx, int n) {
  double b[36], db[36];
  (void)n;
  for (int i = 0; i < 36; i++) db[i] = i % 5 + 1;
  __enzyme_autodiff_void((void *)omp_nest, enzyme_dup, x, dx, enzyme_dup, b, db, enzyme_const, 6, enzyme_const, 6);
}

/* a region inside a loop, a shared scalar read by every thread (its adjoint from all threads) */
double omp_repeat(const double *x, double *w, int n) {
  double s = 0.0;
  for (int r = 0; r < 3; r++) {
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < n; i++) {
      w[i] = w[i] * x[0] + x[i];
      s += w[i] * w[i];
    }
  }
  return s;
}
double repeat_primal(double *x, int n) {
  double w[N_MAX];
  for (int i = 0; i < n; i++) w[i] = 0.1 * i;
  return omp_repeat(x, w, n);
}
void repeat_grad(double *x, double *dx, int n) {
  double w[N_MAX], dw[N_MAX];
  for (int i = 0; i < n; i++) {
    w[i] = 0.1 * i;
    dw[i] = 0.0;
  }
  __enzyme_autodiff((void *)omp_repeat, enzyme_dup, x, dx, enzyme_dup, w, dw, enzyme_const, n);
}

/* two worksharing loops in one region: the second reads what other threads wrote before the barrier
 * (mirrored in the reverse, so that adjoints written across threads are complete) */
void omp_two_loops(const double *x, double *y, double *z, int n) {
#pragma omp parallel
  {
#pragma omp for
    for (int i = 0; i < n; i++) y[i] = x[i] * x[i];
#pragma omp for
    for (int i = 0; i < n; i++) z[i] = y[(i + 7) % n] * x[i] + y[i];
  }
}
double barrier_primal(double *x, int n) {
  double y[N_MAX], z[N_MAX], s = 0.0;
  omp_two_loops(x, y, z, n);
  for (int i = 0; i < n; i++) s += (i % 4 + 1) * z[i];
  return s;
}
void barrier_grad(double *x, double *dx, int n) {
  double y[N_MAX], dy[N_MAX], z[N_MAX], dz[N_MAX];
  for (int i = 0; i < n; i++) {
    dy[i] = 0.0;
    dz[i] = i % 4 + 1;
  }
  __enzyme_autodiff_void((void *)omp_two_loops, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_dup, z, dz,
                         enzyme_const, n);
}

/* schedule(static, 3) (chunks dealt round-robin) and lastprivate(v) */
double omp_chunks(const double *x, double *y, int n) {
  double v = 0.0;
#pragma omp parallel for schedule(static, 3) lastprivate(v)
  for (int i = 0; i < n; i++) {
    v = x[i] * x[(i + 1) % n];
    y[i] = v * x[i];
  }
  return v;
}
double chunks_primal(double *x, int n) {
  double y[N_MAX], s;
  s = omp_chunks(x, y, n); /* the return's seed is 1 */
  for (int i = 0; i < n; i++) s += (i % 3 + 1) * y[i];
  return s;
}
void chunks_grad(double *x, double *dx, int n) {
  double y[N_MAX], dy[N_MAX];
  for (int i = 0; i < n; i++) dy[i] = i % 3 + 1;
  __enzyme_autodiff((void *)omp_chunks, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, n);
}

/* every thread adds into the adjoints of the whole shared vector w (rows x 16 matrix times w): clang
 * vectorizes the inner loop, so each thread's reverse adds vectors of adjoints into shared memory
 * (one atomic add per lane) */
#define MV_ROWS 4000
static double mv_m(int i, int j) { return ((i * 7 + j * 3) % 11) * 0.1 - 0.4; }
void omp_matvec(const double *w, const double *m, double *out, int rows) {
#pragma omp parallel for
  for (int i = 0; i < rows; i++) {
    double s = 0.0;
    for (int j = 0; j < 16; j++) s += m[i * 16 + j] * w[j] * w[j];
    out[i] = s;
  }
}
static double mv_matrix[MV_ROWS * 16], mv_out[MV_ROWS], mv_dout[MV_ROWS];
static void mv_fill(void) {
  for (int i = 0; i < MV_ROWS; i++) {
    for (int j = 0; j < 16; j++) mv_matrix[i * 16 + j] = mv_m(i, j);
    mv_dout[i] = (i % 5) * 0.25;
  }
}
double matvec_primal(double *x, int n) {
  double s = 0.0;
  (void)n;
  mv_fill();
  omp_matvec(x, mv_matrix, mv_out, MV_ROWS);
  for (int i = 0; i < MV_ROWS; i++) s += mv_dout[i] * mv_out[i];
  return s;
}
void matvec_grad(double *x, double *dx, int n) {
  static double dm[MV_ROWS * 16];
  (void)n;
  mv_fill();
  for (int i = 0; i < MV_ROWS * 16; i++) dm[i] = 0.0;
  __enzyme_autodiff_void((void *)omp_matvec, enzyme_dup, x, dx, enzyme_const, mv_matrix, enzyme_dup, mv_out,
                         mv_dout, enzyme_const, MV_ROWS);
}

/* a shared scalar (the default: passed by address) read by every thread, an `omp atomic` sum, and the
 * region in a function the differentiated one calls (kept out of line) */
__attribute__((noinline)) static double omp_shared(double a, const double *x, double *y, int n) {
  double s = 0.0;
#pragma omp parallel for shared(a)
  for (int i = 0; i < n; i++) {
    y[i] = a * x[i] * x[i];
#pragma omp atomic
    s += y[i] * a;
  }
  return s;
}
double omp_shared_outer(double a, const double *x, double *y, int n) { return omp_shared(a * a, x, y, n) + a; }
double shared_primal(double *x, int n) {
  double y[N_MAX];
  return omp_shared_outer(x[0], x + 1, y, n - 1);
}
void shared_grad(double *x, double *dx, int n) {
  double y[N_MAX], dy[N_MAX];
  for (int i = 0; i < n - 1; i++) dy[i] = 0.0;
  dx[0] += __enzyme_autodiff((void *)omp_shared_outer, enzyme_out, x[0], enzyme_dup, x + 1, dx + 1, enzyme_dup, y, dy,
                             enzyme_const, n - 1);
}

/* forward mode: NAME_fwd(x, v, n) is the derivative of NAME_primal along v */
double scale_fwd(double *x, double *v, int n) {
  double y[N_MAX], dy[N_MAX], s = 0.0;
  __enzyme_fwddiff_void((void *)omp_scale, enzyme_dup, x, v, enzyme_dup, y, dy, enzyme_const, n);
  for (int i = 0; i < n; i++) s += (i + 1) * dy[i];
  return s;
}
double dot_fwd(double *x, double *v, int n) {
  return __enzyme_fwddiff((void *)omp_dot, enzyme_dup, x, v, enzyme_dup, x + n / 2, v + n / 2, enzyme_const, n / 2);
}
double axpy_fwd(double *x, double *v, int n) {
  double y[N_MAX], dy[N_MAX], s = 0.0;
  for (int i = 0; i < n - 1; i++) {
    y[i] = x[i + 1] - 0.5;
    dy[i] = v[i + 1];
  }
  __enzyme_fwddiff_void((void *)omp_axpy, enzyme_dup, x[0], v[0], enzyme_dup, x + 1, v + 1, enzyme_dup, y, dy,
                        enzyme_const, n - 1);
  for (int i = 0; i < n - 1; i++) s += (i + 2) * dy[i];
  return s;
}
double critical_fwd(double *x, double *v, int n) {
  return __enzyme_fwddiff((void *)omp_critical_sum, enzyme_dup, x, v, enzyme_const, n);
}
double barrier_fwd(double *x, double *v, int n) {
  double y[N_MAX], dy[N_MAX], z[N_MAX], dz[N_MAX], s = 0.0;
  __enzyme_fwddiff_void((void *)omp_two_loops, enzyme_dup, x, v, enzyme_dup, y, dy, enzyme_dup, z, dz, enzyme_const, n);
  for (int i = 0; i < n; i++) s += (i % 4 + 1) * dz[i];
  return s;
}

/* split mode: __enzyme_augmentfwd forks the forward, __enzyme_reverse the reverse, the tape between them */
double split_primal(double *x, int n) { return scale_primal(x, n); }
void split_grad(double *x, double *dx, int n) {
  double y[N_MAX], dy[N_MAX];
  for (int i = 0; i < n; i++) dy[i] = i + 1;
  void *tape = __enzyme_augmentfwd((void *)omp_scale, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, n);
  __enzyme_reverse((void *)omp_scale, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, n, tape);
}

/* a region writing a global array (its shadow global, adjoints from every thread) */
static double omp_g[N_MAX];
__attribute__((noinline)) double omp_with_global(const double *x, int n) {
  double s = 0.0;
#pragma omp parallel for
  for (int i = 0; i < n; i++) omp_g[i] = x[i] * x[i] * (i % 3 + 1);
  for (int i = 0; i < n; i++) s += omp_g[i] * omp_g[(i + 5) % n];
  return s;
}
double global_primal(double *x, int n) { return omp_with_global(x, n); }
void global_grad(double *x, double *dx, int n) {
  __enzyme_autodiff((void *)omp_with_global, enzyme_dup, x, dx, enzyme_const, n);
}
