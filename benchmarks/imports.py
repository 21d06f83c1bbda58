"""Import time of ``enzyme_plugin`` and ``gpucompiler`` next to ``import numba``, in fresh processes.

Usage: ``python benchmarks/imports.py [--rounds N]`` (Numba must be installed in the
environment: ``pip install numba``). Each round imports every module once, alternated,
each in a fresh interpreter; the import is timed inside that process (wall and CPU time
of the process around the ``import`` statement), and the heavy modules it loaded are
noted. Medians, and the median over rounds of each module's CPU time / Numba's in the
same round. Writes ``benchmarks/results/imports.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = ("enzyme_plugin", "gpucompiler", "numba")
_CODE = """
import sys, time
t0, c0 = time.perf_counter(), time.process_time()
import {module}
c1, t1 = time.process_time(), time.perf_counter()
print((t1 - t0) * 1e3, (c1 - c0) * 1e3, ",".join(m for m in ("numpy", "networkx", "llvmlite") if m in sys.modules))
"""


def run(module: str) -> tuple[float, float, str]:
    out = subprocess.run([sys.executable, "-c", _CODE.format(module=module)], capture_output=True, text=True,
                         check=True)
    wall, cpu, loaded = out.stdout.split(" ", 2)
    return float(wall), float(cpu), loaded.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "imports.json"))
    opts = ap.parse_args()
    load = [os.getloadavg()[0]]
    samples: dict[str, list[tuple[float, float]]] = {m: [] for m in MODULES}
    loaded: dict[str, str] = {}
    for _ in range(opts.rounds):
        for m in MODULES:
            wall, cpu, mods = run(m)
            samples[m].append((wall, cpu))
            loaded[m] = mods
    load.append(os.getloadavg()[0])
    print(f"{opts.rounds} rounds, fresh processes; load average {load[0]:.1f} -> {load[1]:.1f}")
    print("| module | CPU ms (median) | wall ms (median) | CPU / numba's (median of rounds) | loads |")
    print("|---|---:|---:|---:|---|")
    rows = []
    for m in MODULES:
        cpu = statistics.median(c for _, c in samples[m])
        wall = statistics.median(w for w, _ in samples[m])
        ratio = statistics.median(a[1] / b[1] for a, b in zip(samples[m], samples["numba"]))
        print(f"| `import {m}` | {cpu:.0f} | {wall:.0f} | {ratio:.2f} | {loaded[m] or '-'} |")
        rows.append({"module": m, "cpu_median_ms": cpu, "wall_median_ms": wall, "cpu_ratio_to_numba": ratio,
                     "loads": loaded[m], "samples_wall_cpu_ms": samples[m]})
    os.makedirs(os.path.dirname(opts.json), exist_ok=True)
    with open(opts.json, "w") as f:
        json.dump({"rounds": opts.rounds, "load_average": load, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
