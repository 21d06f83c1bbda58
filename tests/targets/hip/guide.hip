/* The gradient of a device function on AMD GPUs, one element per thread, with
 * __enzyme_autodiff called in the kernel: our HIP version of Enzyme's CUDA guide
 * (tests/enzyme/cuda/guide.cu is the CUDA one).
 *
 * Device code, without HIP headers (none are installed here):
 *   clang-19 -x hip --cuda-device-only --offload-arch=gfx90a -nogpulib -nogpuinc \
 *            -emit-llvm -S -O2 guide.hip -o guide.ll
 *   gpuc enzyme guide.ll --target amdgpu:gfx90a --kernel --entry dcube --emit obj -o guide.hsaco
 * The markers are __device__ globals (address space 1), the thread index comes from the
 * AMDGPU builtins HIP's threadIdx/blockIdx/blockDim wrap, sin from the ROCm device
 * libraries (ocml). Compiled as C++ for the host (clang-19 -x c++), the same per-thread body
 * runs over the grid in a loop, with libm's sin, so CI checks the numbers without a GPU. */
#ifdef __HIP__
#define DEVICE __attribute__((device))
#define GLOBAL __attribute__((global))
#else
#define DEVICE
#endif

extern "C" {
DEVICE int enzyme_dup;
DEVICE int enzyme_const;
DEVICE void __enzyme_autodiff(void *, ...);
#ifdef __HIP__
DEVICE double __ocml_sin_f64(double);
#define SIN __ocml_sin_f64
#else
double sin(double);
#define SIN sin
#endif

/* y = x^3 + 2x + sin(x): the gradient is 3x^2 + 2 + cos(x) */
DEVICE __attribute__((noinline)) void cube(const double *__restrict__ x, double *__restrict__ y) {
    *y = *x * *x * *x + 2.0 * *x + SIN(*x);
}

/* one thread's work: dx[i] += dy[i] * d cube / dx at x[i] (dy[i] is consumed) */
DEVICE void dcube_at(int i, const double *x, double *dx, double *y, double *dy, int n) {
    if (i < n) __enzyme_autodiff((void *)cube, enzyme_dup, x + i, dx + i, enzyme_dup, y + i, dy + i);
}

#ifdef __HIP__
GLOBAL void dcube(const double *x, double *dx, double *y, double *dy, int n) {
    int i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x()
            + __builtin_amdgcn_workitem_id_x();
    dcube_at(i, x, dx, y, dy, n);
}
#else
/* the grid as a loop: what the kernel does with blocks * threads >= n threads */
void dcube_host(const double *x, double *dx, double *y, double *dy, int n) {
    for (int i = 0; i < n; i++) dcube_at(i, x, dx, y, dy, n);
}
#endif
}
