"""Import time of ``gpucompiler`` and ``enzyme_plugin`` next to ``import numba``, in fresh processes.

Usage: ``python benchmarks/imports.py [--rounds N]`` (Numba must be installed in the
environment: ``pip install numba``). Cases, each timed inside a fresh interpreter
(wall and CPU time of the process from before the ``import`` to after the last
statement), the heavy modules it loaded noted:

* ``import M`` for ``enzyme_plugin``, ``gpucompiler`` and ``numba``;
* ``import + decorate``: the import and decorating ``loop20`` (``@jit`` / ``@njit``);
* ``import + first compile``: the import and ``loop20``'s first call (compile and
  run) with the caches off (``GPUC_CACHE=off``; ``@njit`` without ``cache``).

Each round runs every case once, ours and Numba's alternated. Medians, and the median
over rounds of each case's CPU time / Numba's same case in the same round. Writes
``benchmarks/results/imports.json``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
HEAVY = ("numpy", "networkx", "llvmlite")
_CODE = """
import sys, time
sys.path.insert(0, {here!r})
import loop20 as F
before = set(sys.modules)
t0, c0 = time.perf_counter(), time.process_time()
{body}
c1, t1 = time.process_time(), time.perf_counter()
print((t1 - t0) * 1e3, (c1 - c0) * 1e3, ",".join(m for m in {heavy!r} if m in sys.modules and m not in before))
"""
_DECORATOR = {"gpucompiler": "from gpucompiler import jit", "numba": "from numba import njit as jit"}
#: case -> (ours, Numba's): (label, module, statements)
CASES = {
    "import": (("enzyme_plugin", "import enzyme_plugin"), ("gpucompiler", "import gpucompiler")),
    "import + decorate": (("gpucompiler", f"{_DECORATOR['gpucompiler']}; f = jit(F.loop20)"),),
    "import + first compile": (("gpucompiler", f"{_DECORATOR['gpucompiler']}; jit(F.loop20)(10, 1.5)"),),
}
PEER = {"import": "import numba", "import + decorate": f"{_DECORATOR['numba']}; f = jit(F.loop20)",
        "import + first compile": f"{_DECORATOR['numba']}; jit(F.loop20)(10, 1.5)"}


def loop20_module(directory: str) -> None:
    """``loop20.py`` in ``directory``: ``frontend_kernels.loop20`` alone (that module imports NumPy, which
    would be loaded before Numba's import is timed)."""
    with open(os.path.join(HERE, "frontend_kernels.py")) as f:
        source = f.read()
    fn = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "loop20")
    with open(os.path.join(directory, "loop20.py"), "w") as f:
        f.write(ast.get_source_segment(source, fn) or "")


def run(body: str, directory: str) -> tuple[float, float, str]:
    env = {**os.environ, "GPUC_CACHE": "off"}
    code = _CODE.format(here=directory, body=body, heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env,
                         cwd=directory)  # the installed tree (or PYTHONPATH), not the current directory
    parts = out.stdout.split()
    return float(parts[0]), float(parts[1]), parts[2] if len(parts) > 2 else ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "imports.json"))
    opts = ap.parse_args()
    load = [os.getloadavg()[0]]
    rows_of = [(case, label, body) for case, ours in CASES.items() for label, body in ours]
    rows_of += [(case, "numba", body) for case, body in PEER.items()]
    samples: dict[tuple[str, str], list[tuple[float, float]]] = {(c, m): [] for c, m, _ in rows_of}
    loaded: dict[tuple[str, str], str] = {}
    with tempfile.TemporaryDirectory() as directory:
        loop20_module(directory)
        for _ in range(opts.rounds):
            for case, label, body in rows_of:
                wall, cpu, mods = run(body, directory)
                samples[case, label].append((wall, cpu))
                loaded[case, label] = mods
    load.append(os.getloadavg()[0])
    print(f"{opts.rounds} rounds, fresh processes; load average {load[0]:.1f} -> {load[1]:.1f}")
    print("| case | module | CPU ms (median) | wall ms (median) | CPU / Numba's (median of rounds) | loads |")
    print("|---|---|---:|---:|---:|---|")
    rows = []
    for case, label, _ in rows_of:
        mine, peer = samples[case, label], samples[case, "numba"]
        cpu = statistics.median(c for _, c in mine)
        wall = statistics.median(w for w, _ in mine)
        ratio = statistics.median(a[1] / b[1] for a, b in zip(mine, peer))
        print(f"| {case} | `{label}` | {cpu:.0f} | {wall:.0f} | {ratio:.2f} | {loaded[case, label] or '-'} |")
        rows.append({"case": case, "module": label, "cpu_median_ms": cpu, "wall_median_ms": wall,
                     "cpu_ratio_to_numba": ratio, "loads": loaded[case, label], "samples_wall_cpu_ms": mine})
    os.makedirs(os.path.dirname(opts.json), exist_ok=True)
    with open(opts.json, "w") as f:
        json.dump({"rounds": opts.rounds, "load_average": load, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
