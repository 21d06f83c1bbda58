"""Gradient time / primal time of OpenMP regions at 1 and 2 threads (libomp), both routes.

    python tests/enzyme/openmp_bench.py [--n 1048576]

c/openmp_bench.c's regions (a parallel-for scale, a dot-product reduction, an axpy with firstprivate,
a collapsed 1024 x n/1024 nest) compiled by clang-19 -O2 -fopenmp and differentiated on its optimised
IR (``optimised``) and inside the pipeline (``pipeline``, what ``gpuc cc -O2`` does); each time is the
median of 5 runs of the mean of 20 calls. The machine's cores are shared: read ratios, not times.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import statistics
import subprocess
import sys
import timeit
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from clang_levels import C_DIR, compile_c  # noqa: E402

_P = ctypes.POINTER(ctypes.c_double)
NAMES = ("scale", "dot", "axpy", "nest")


def _library(route: str):
    import llvmlite.binding as llvm

    import enzyme_plugin
    from enzyme_plugin.cc import clang_ir
    from enzyme_plugin.cpipeline import differentiate_in_pipeline
    from gpucompiler.runtime import CPULibrary

    libomp = subprocess.run(["clang-19", "-print-file-name=libomp.so"], capture_output=True, text=True,
                            check=True).stdout.strip()
    llvm.load_library_permanently(libomp)
    if route == "optimised":
        text = enzyme_plugin.differentiate(compile_c("openmp_bench.c", "O2", False, ("-fopenmp",)))
    else:
        text = differentiate_in_pipeline(clang_ir(C_DIR / "openmp_bench.c", 2, [f"-I{C_DIR}", "-fopenmp"]), 2)
    return CPULibrary.from_ir(text), ctypes.CDLL(libomp)


def _time(call) -> float:
    return statistics.median(timeit.repeat(call, number=20, repeat=5)) / 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1 << 20)
    n = parser.parse_args().n
    x, y = np.linspace(0.1, 1.0, n), np.linspace(1.0, 0.2, n)
    dx, dy = np.zeros(n), np.ones(n)
    px, py, pdx, pdy = (a.ctypes.data_as(_P) for a in (x, y, dx, dy))
    print(f"n = {n}; gradient / primal at 1 and 2 threads, and each one's 2-thread speedup")
    for route in ("optimised", "pipeline"):
        lib, omp = _library(route)
        for name in NAMES:
            primal = lib.function(f"{name}_p", None, _P, _P, ctypes.c_int)
            grad = lib.function(f"{name}_g", None, _P, _P, _P, _P, ctypes.c_int)
            row = {}
            for threads in (1, 2):
                omp.omp_set_num_threads(threads)
                row[threads] = (_time(functools.partial(primal, px, py, n)), _time(functools.partial(grad, px, pdx, py, pdy, n)))
            (p1, g1), (p2, g2) = row[1], row[2]
            print(f"{route:9s} {name:6s} grad/primal 1 thread {g1 / p1:5.2f}  2 threads {g2 / p2:5.2f}   "
                  f"speedup primal {p1 / p2:4.2f} gradient {g1 / g2:4.2f}")


if __name__ == "__main__":
    main()
