"""The main job: a GPU kernel that calls ``autodiff`` inside, checked against finite differences.

``grad_kernel`` (examples/ad_kernels.py) differentiates a per-particle energy
``E_i = w0 sin(x_i) x_i + w1 exp(-x_i^2)`` in reverse mode inside the kernel:
each thread adds its dE/dx_i into ``dx`` and its dE/dw into the shared ``dw``
(atomically, since every thread touches it). The kernel runs on the GPU when
one is visible (CuPy arrays) and on the CPU grid emulation otherwise; the
example prints the gradient and its check against central finite
differences of the total energy, and exits 1 when the check fails.

Run: ``python examples/main.py``
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ad_kernels as K
from gpucompiler import kernel

N, BLOCK = 4096, 128


def energy(x, w):
    return np.sum(w[0] * np.sin(x) * x + w[1] * np.exp(-x * x))


def run(x, w):
    """(dx, dw, where it ran)."""
    k = kernel(K.grad_kernel, plugins=("enzyme",))
    try:
        import cupy as cp

        if cp.cuda.runtime.getDeviceCount() > 0:
            d = [cp.asarray(x), cp.zeros_like(x), cp.asarray(w), cp.zeros_like(w)]
            k[(N + BLOCK - 1) // BLOCK, BLOCK](*d)
            return cp.asnumpy(d[1]), cp.asnumpy(d[3]), "GPU " + cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception:  # no CuPy, no driver or no device: the CPU emulation
        pass
    dx, dw = np.zeros_like(x), np.zeros_like(w)
    k[(N + BLOCK - 1) // BLOCK, BLOCK, "cpu"](x, dx, w, dw)
    return dx, dw, "CPU grid emulation"


def main() -> int:
    x = np.linspace(-3.0, 3.0, N)
    w = np.array([1.5, -0.75])
    dx, dw, where = run(x, w)
    h = 1e-6
    fd_w = np.array([(energy(x, w + e) - energy(x, w - e)) / (2 * h) for e in np.eye(2) * h])
    idx = [0, N // 3, N - 1]
    fd_x = []
    for i in idx:
        e = np.zeros(N)
        e[i] = h
        fd_x.append((energy(x + e, w) - energy(x - e, w)) / (2 * h))
    err_w = np.max(np.abs(dw - fd_w) / np.maximum(1.0, np.abs(fd_w)))
    err_x = np.max(np.abs(dx[idx] - fd_x) / np.maximum(1.0, np.abs(fd_x)))
    print(f"autodiff inside a kernel, {N} threads, on the {where}")
    print(f"  dE/dw          = {dw}")
    print(f"  finite diff.   = {fd_w}")
    for i, f in zip(idx, fd_x):
        print(f"  dE/dx[{i:4d}]    = {dx[i]: .12f}   finite diff. {f: .12f}")
    ok = err_w < 1e-6 and err_x < 1e-6
    print(f"check against finite differences: max rel. error {max(err_w, err_x):.2e} -> {'OK' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
