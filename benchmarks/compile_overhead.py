"""Compiler overhead in fresh processes: imports and first compiles, two source trees side by side.

Usage: ``python benchmarks/compile_overhead.py [--rounds N] [--numba] TREE [TREE ...]``
where each TREE is a checkout of this repository (e.g. ``git worktree add
--detach /tmp/before main~1`` and ``.``). Each round runs every case once per
tree, the trees alternated, each in a fresh process with the compile cache
off and the tree first on ``sys.path`` (imports before the timer; "imports networkx":
networkx was in ``sys.modules`` after the call); the table shows medians and the
load average before and after; CPU time of the measured process is shown
besides wall time, being less sensitive to a loaded machine. ``--numba`` adds,
in every round right after the trees, Numba's first call of ``loop20`` and
``import numba`` (its cache off) and the ratios of each tree to them, the median
over rounds of the pairs. ``OPENBLAS_NUM_THREADS=1`` for every process: NumPy's
BLAS threads, started by the imports, spin for a while and were counted in
whichever CPU time came first. Writes ``benchmarks/results/compile_overhead.json``.

Cases (milliseconds):

* ``import enzyme_plugin`` and ``import gpucompiler``;
* ``loop20``: the first call of the 20-line loop function of
  ``frontend_kernels.py`` (compile and run, imports excluded);
* ``grad``: the first call of a function that calls ``autodiff`` (Enzyme
  plugin enabled: a deferred job, the AD engine);
* ``stmt1000``: the first call of a generated function of 1000 statements.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

_GRAD = """
from enzyme_plugin import Active, Const, Reverse, autodiff

def poly(x, n):
    s = 0.0
    for i in range(n):
        s += x * x * i
    return s

def grad(x, n):
    return autodiff(Reverse, poly, Active(x), Const(n))
"""

_FIRST_CALL = """
import sys, time
sys.path.insert(0, {here!r}); sys.path.insert(0, {gen!r})
from gpucompiler import jit
import frontend_kernels as K, {module} as G
t0, c0 = time.perf_counter(), time.process_time(); jit({fn}{plugins})({args})
print((time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3, int("networkx" in sys.modules))
"""

_NUMBA_FIRST_CALL = """
import sys, time
sys.path.insert(0, {here!r})
from numba import njit
import frontend_kernels as K
t0, c0 = time.perf_counter(), time.process_time(); njit(K.loop20)(10, 1.5)
print((time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3, int("networkx" in sys.modules))
"""

_IMPORT = """
import sys, time
t0, c0 = time.perf_counter(), time.process_time(); import {module}
print((time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3, int("networkx" in sys.modules))
"""


def generated_source(n: int) -> str:
    lines = ["def stmt1000(x):", "    s = x"]
    lines += [f"    s = s * 0.5 + {i % 7}.0" for i in range(n)]
    return "\n".join([*lines, "    return s"])


def cases(gen: str) -> dict[str, str]:
    def first(fn, args, module="generated", plugins=""):
        return _FIRST_CALL.format(here=HERE, gen=gen, fn=fn, args=args, module=module, plugins=plugins)

    return {"import enzyme_plugin": _IMPORT.format(module="enzyme_plugin"),
            "import gpucompiler": _IMPORT.format(module="gpucompiler"),
            "loop20 first call": first("K.loop20", "10, 1.5"),
            "grad first call": first("G.grad", "1.5, 10", "graded", ', plugins=("enzyme",)'),
            "stmt1000 first call": first("G.stmt1000", "1.5")}


#: Numba's rows: what each tree's row of the same case is compared with
NUMBA = {"loop20 first call": _NUMBA_FIRST_CALL.format(here=HERE), "import gpucompiler": _IMPORT.format(module="numba")}


def run(tree: str, code: str) -> tuple[float, float, bool]:
    tree = os.path.abspath(tree)
    env = dict(os.environ, GPUC_CACHE="off", NUMBA_DISABLE_CACHE="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([tree, os.path.join(tree, "plugins")]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tree)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    wall, cpu, nx = out.stdout.split()
    return float(wall), float(cpu), nx == "1"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trees", nargs="+")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--numba", action="store_true", help="pair loop20 and the import with Numba's")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "compile_overhead.json"))
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as gen:
        with open(os.path.join(gen, "generated.py"), "w") as f:
            f.write(generated_source(1000))
        with open(os.path.join(gen, "graded.py"), "w") as f:
            f.write(_GRAD)
        load = [os.getloadavg()[0]]
        samples = {(c, t, clock): [] for c in cases(gen) for t in opts.trees for clock in ("wall", "cpu")}
        networkx = {}
        peers = [*opts.trees, "numba"] if opts.numba else opts.trees
        samples.update({(c, "numba", clock): [] for c in NUMBA for clock in ("wall", "cpu")})
        for _ in range(opts.rounds):
            for case, code in cases(gen).items():
                for tree in peers:
                    if tree == "numba" and case not in NUMBA:
                        continue
                    wall, cpu, nx = run(opts.trees[0], NUMBA[case]) if tree == "numba" else run(tree, code)
                    samples[case, tree, "wall"].append(wall)
                    samples[case, tree, "cpu"].append(cpu)
                    networkx[case, tree] = nx
        load.append(os.getloadavg()[0])
    print(f"{opts.rounds} rounds, fresh processes, GPUC_CACHE=off; load average {load[0]:.1f} -> {load[1]:.1f}")
    print("medians in ms, CPU time of the process (wall time); ratio: median over rounds of each tree's CPU "
          "time / the previous tree's")
    print("| case | " + " | ".join(opts.trees) + " | " + " | ".join(f"ratio {t}" for t in opts.trees[1:]) + " |")
    rows = []
    for case in cases(""):
        cells, row = [], {"case": case}
        for t in opts.trees:
            cpu, wall = (statistics.median(samples[case, t, c]) for c in ("cpu", "wall"))
            mark = " (imports networkx)" if networkx[case, t] else ""
            cells.append(f"{cpu:.0f} ({wall:.0f}){mark}")
            row[t] = {"cpu_median_ms": cpu, "wall_median_ms": wall, "imports_networkx": networkx[case, t],
                      "cpu_ms": samples[case, t, "cpu"], "wall_ms": samples[case, t, "wall"]}
        ratios = [statistics.median(a / b for a, b in zip(samples[case, t, "cpu"], samples[case, prev, "cpu"]))
                  for prev, t in zip(opts.trees, opts.trees[1:])]
        for t, r in zip(opts.trees[1:], ratios):
            row[t]["cpu_ratio_median"] = r
        print(f"| {case} | " + " | ".join(cells) + " | " + " | ".join(f"{r:.2f}" for r in ratios) + " |")
        rows.append(row)
        if opts.numba and case in NUMBA:
            cpu, wall = (statistics.median(samples[case, "numba", c]) for c in ("cpu", "wall"))
            peer = "import numba" if case.startswith("import") else "Numba's " + case
            row["numba"] = {"case": peer, "cpu_median_ms": cpu, "wall_median_ms": wall,
                            "cpu_ms": samples[case, "numba", "cpu"], "wall_ms": samples[case, "numba", "wall"]}
            for t in opts.trees:
                for clock in ("cpu", "wall"):
                    row[t][f"{clock}_ratio_to_numba"] = statistics.median(
                        a / b for a, b in zip(samples[case, t, clock], samples[case, "numba", clock]))
            print(f"|   {peer} | {cpu:.0f} ({wall:.0f}) | ratio to it, CPU (wall): " + " | ".join(
                f"{row[t]['cpu_ratio_to_numba']:.2f} ({row[t]['wall_ratio_to_numba']:.2f})" for t in opts.trees))
    os.makedirs(os.path.dirname(opts.json), exist_ok=True)
    with open(opts.json, "w") as f:
        json.dump({"rounds": opts.rounds, "load_average": load, "trees": opts.trees, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
