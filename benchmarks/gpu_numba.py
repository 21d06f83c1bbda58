"""numba-cuda's side of benchmarks/gpu.py, run as a subprocess (its own numba and llvmlite).

Prints one JSON line: ``{"version", "scale_ms", "launch_us"}`` or ``{"error": ...}``.
Timing as in gpu.py: CUDA events around ``--inner`` back-to-back launches of
``out[i] = a * x[i]`` (median of ``--reps``), and host wall time per launch
of a one-array kernel. Arrays are numba device arrays (numba-cuda's own).
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1 << 26)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--inner", type=int, default=10)
    parser.add_argument("--launches", type=int, default=20000)
    opts = parser.parse_args()
    try:
        import numba
        import numpy as np
        from numba import cuda

        @cuda.jit
        def scale(a, x, out):
            i = cuda.grid(1)
            if i < x.shape[0]:
                out[i] = a * x[i]

        @cuda.jit
        def touch(x):
            if cuda.grid(1) == 0:
                x[0] += 1.0

        n, block = opts.n, 256
        x = cuda.to_device(np.random.random(n))
        out = cuda.device_array_like(x)
        blocks = (n + block - 1) // block
        scale[blocks, block](2.0, x, out)
        cuda.synchronize()
        assert np.allclose(out.copy_to_host()[:1000], 2.0 * x.copy_to_host()[:1000])
        times = []
        for _ in range(opts.reps):
            start, end = cuda.event(), cuda.event()
            start.record()
            for _ in range(opts.inner):
                scale[blocks, block](2.0, x, out)
            end.record()
            end.synchronize()
            times.append(cuda.event_elapsed_time(start, end) / opts.inner)
        y = cuda.to_device(np.zeros(32))
        touch[1, 32](y)
        cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(opts.launches):
            touch[1, 32](y)
        launch_us = (time.perf_counter() - t0) / opts.launches * 1e6
        cuda.synchronize()
        try:
            from importlib.metadata import version
            nc = version("numba-cuda")
        except Exception:
            nc = "?"
        print(json.dumps({"version": f"numba {numba.__version__}, numba-cuda {nc}",
                          "scale_ms": float(np.median(times)), "launch_us": launch_us}))
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"[:300]}))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
