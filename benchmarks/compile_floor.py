"""How much of a cold compile is LLVM's own work, next to Numba's whole compile of the same function.

    python benchmarks/compile_floor.py [--rounds N] [--json out.json]

Each round runs two fresh processes (compile caches off, ``OPENBLAS_NUM_THREADS=1``), ours then
Numba's. Each first compiles a warm-up function (each engine's one-time set-up: its modules,
LLVM's initialisation, its rule tables), then times the first call of ``loop20``
(``frontend_kernels.py``) on the main thread's CPU clock. Ours also keeps the module text it hands
to LLVM and times LLVM alone on it, the median of 7 repetitions: parsing and verifying
(``parse_assembly``), the O2 pipeline and object code (``emit_object``), the same three steps
the pipeline runs. That sum is a floor no change on the Python side can go under without
changing the code that runs. Prints medians over rounds and the ratios to Numba's compile;
writes ``benchmarks/results/compile_floor.json``.
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

_OURS = """
import json, statistics, sys, time
sys.path.insert(0, {here!r})
import llvmlite.binding as llvm
from gpucompiler import jit
from gpucompiler.targets.native import NativeTarget
import frontend_kernels as K

texts, parse = [], llvm.parse_assembly
llvm.parse_assembly = lambda text, *a, **k: (texts.append(text), parse(text, *a, **k))[1]

def warm(a, b):
    return a * b - 1

jit(warm)(2, 3)
texts.clear()
f = jit(K.loop20)
c0 = time.thread_time()
f(10, 1.5)
compile_ms = (time.thread_time() - c0) * 1e3
machine = NativeTarget().target_machine(2)
steps = []
for _ in range(7):
    a = time.thread_time()
    m = parse(texts[0])
    m.verify()
    b = time.thread_time()
    pb = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(speed_level=2))
    pb.getModulePassManager().run(m, pb)
    c = time.thread_time()
    machine.emit_object(m)
    steps.append(((b - a) * 1e3, (c - b) * 1e3, (time.thread_time() - c) * 1e3))
parse_ms, o2_ms, codegen_ms = (statistics.median(s[k] for s in steps) for k in range(3))
print(json.dumps({{"compile": compile_ms, "llvm_parse": parse_ms, "llvm_o2": o2_ms, "llvm_codegen": codegen_ms}}))
"""

_NUMBA = """
import json, sys, time
sys.path.insert(0, {here!r})
from numba import njit
import frontend_kernels as K

@njit
def warm(a, b):
    return a * b - 1

warm(2, 3)
f = njit(K.loop20)
c0 = time.thread_time()
f(10, 1.5)
print(json.dumps({{"compile": (time.thread_time() - c0) * 1e3}}))
"""


def _run(script: str) -> dict[str, float]:
    env = dict(os.environ, GPUC_CACHE="off", OPENBLAS_NUM_THREADS="1", NUMBA_DISABLE_CACHE="1")
    out = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{script} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "compile_floor.json"))
    opts = ap.parse_args()
    load = [os.getloadavg()[0]]
    ours: list[dict[str, float]] = []
    numba: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, text in (("ours", _OURS), ("numba", _NUMBA)):
            paths[name] = os.path.join(tmp, f"floor_{name}.py")  # not numba.py: it would shadow the package
            with open(paths[name], "w") as f:
                f.write(text.format(here=HERE))
        for _ in range(opts.rounds):
            ours.append(_run(paths["ours"]))
            numba.append(_run(paths["numba"]))
    load.append(os.getloadavg()[0])
    med = {k: statistics.median(s[k] for s in ours) for k in ours[0]}
    med["llvm_total"] = statistics.median(s["llvm_parse"] + s["llvm_o2"] + s["llvm_codegen"] for s in ours)
    med["numba_compile"] = statistics.median(s["compile"] for s in numba)
    ratios = {k: statistics.median(o[k] / n["compile"] for o, n in zip(ours, numba)) for k in ("compile",)}
    ratios["llvm_total"] = statistics.median((o["llvm_parse"] + o["llvm_o2"] + o["llvm_codegen"]) / n["compile"]
                                             for o, n in zip(ours, numba))
    print(f"{opts.rounds} rounds, fresh processes after each engine's set-up; load average "
          f"{load[0]:.1f} -> {load[1]:.1f}; medians, ms of the main thread's CPU time")
    print("| what | ms | / Numba's compile |\n|---|---:|---:|")
    print(f"| Numba: `loop20`'s compile | {med['numba_compile']:.1f} | 1.00 |")
    print(f"| ours: `loop20`'s compile | {med['compile']:.1f} | {ratios['compile']:.2f} |")
    print(f"| LLVM alone on our module: parse + verify | {med['llvm_parse']:.1f} | |")
    print(f"| LLVM alone: O2 pipeline | {med['llvm_o2']:.1f} | |")
    print(f"| LLVM alone: object code | {med['llvm_codegen']:.1f} | |")
    print(f"| LLVM alone, total | {med['llvm_total']:.1f} | {ratios['llvm_total']:.2f} |")
    os.makedirs(os.path.dirname(opts.json), exist_ok=True)
    with open(opts.json, "w") as f:
        json.dump({"rounds": opts.rounds, "load_average": load, "medians_ms": med, "ratios": ratios,
                   "ours": ours, "numba": numba}, f, indent=1)


if __name__ == "__main__":
    main()
