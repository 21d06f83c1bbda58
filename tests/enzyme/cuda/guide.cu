/* Enzyme's CUDA guide, our version: the gradient of a device function, one
 * element per thread, with __enzyme_autodiff called in the kernel.
 *
 * Compiled twice by regen_fixtures.py:
 *   clang-19 --cuda-device-only -nocudainc -nocudalib  -> guide.ptx.ll (NVPTX)
 *   clang-19 -x c++ (host)                              -> guide.host.ll
 * No CUDA header is needed: the markers and the thread index are declared
 * here. In device code the markers are __device__ globals (address space 1,
 * read through addrspacecast). The host build runs the same per-thread body
 * over the grid in a loop, so CI checks the numbers without a GPU. */
#ifdef __CUDA__
#define DEVICE __attribute__((device))
#define GLOBAL __attribute__((global))
#else
#define DEVICE
#define GLOBAL
#endif

extern "C" {
DEVICE int enzyme_dup;
DEVICE int enzyme_const;
DEVICE void __enzyme_autodiff(void *, ...);

/* y = x^3 + 2x: the gradient is 3x^2 + 2 */
DEVICE __attribute__((noinline)) void cube(const double *x, double *y) { *y = *x * *x * *x + 2.0 * *x; }

/* one thread's work: dx[i] += dy[i] * d cube / dx at x[i] (dy[i] is consumed) */
DEVICE void dcube_at(int i, const double *x, double *dx, double *y, double *dy, int n) {
    if (i < n) __enzyme_autodiff((void *)cube, enzyme_dup, x + i, dx + i, enzyme_dup, y + i, dy + i);
}

#ifdef __CUDA__
GLOBAL void dcube(const double *x, double *dx, double *y, double *dy, int n) {
    int i = __nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() + __nvvm_read_ptx_sreg_tid_x();
    dcube_at(i, x, dx, y, dy, n);
}
#else
/* the grid as a loop: what the kernel does with blocks * threads >= n threads */
void dcube_host(const double *x, double *dx, double *y, double *dy, int n) {
    for (int i = 0; i < n; i++) dcube_at(i, x, dx, y, dy, n);
}
#endif
}
