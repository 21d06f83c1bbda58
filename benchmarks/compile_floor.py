"""How much of a cold compile is LLVM's own work, next to Numba's whole compile of the same function,
and what a tiered first compile (docs/user_guide.md) makes of it.

    python benchmarks/compile_floor.py [--rounds N] [--json out.json] [--tree OLD ...]

Each round runs three fresh processes (compile caches off, ``OPENBLAS_NUM_THREADS=1``): ours at
the full level at once (``tier=False``), ours tiered, then Numba's. Each first compiles a warm-up
function (each engine's one-time set-up: its modules, LLVM's initialisation, its rule tables),
then times the first call of ``loop20`` (``frontend_kernels.py``) on the main thread's CPU clock
(and the wall clock). The untiered process also keeps the module text it hands to LLVM and times
LLVM alone on it, the median of 7 repetitions: parsing and verifying (``parse_assembly``), the O2
pipeline and object code (``emit_object``), the same three steps the pipeline runs. That sum is a
floor no change on the Python side can go under without changing the code that runs. The tiered
process times, from the first call, the wall time until the full level is swapped in, and counts
the pure-Python work the main thread gets done meanwhile against the same loop before the call
(the tier-up thread holds the GIL in the Python stages only: LLVM's passes and code generation
run without it). Both processes then time ``loop20(2_000_000, 1.5)`` (median of 5): the run
time after the tier-up against the untiered one's, and the quick code's own. Prints medians over
rounds and the ratios to Numba's compile; writes ``benchmarks/results/compile_floor.json``.

``--tree OLD`` (repeatable): an older tree exported with ``git archive REV | tar -x -C OLD``, whose two
processes (at once and tiered) run in every round beside this checkout's, alternated; its rows are printed
after this checkout's table, their ratios to the same round's Numba compile.

``--levels``: instead, the first call of ``loop20``, ``stencil`` and ``primes`` compiled at O0, O1
and O2 (``tier=False``), a fresh process each, ``--rounds`` rounds: which level the quick tier uses.

``--parts``: instead, where the tiered first call of ``loop20`` spends the main thread's CPU time: the
compiler's functions of each part wrapped (type inference with its lowering to SSA, IR generation,
LLVM's passes, validation, object code; the rest is the keys, the cache's publishing and the load),
this checkout and each ``--tree`` alternated, ``--rounds`` rounds, medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any

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

def spin(seconds):
    n, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        n += 1
    return n / seconds

def run_ms(f):  # a call of compiled code holds the GIL: timed after the tier-up
    f(2_000_000, 1.5)
    return statistics.median(-time.perf_counter() + (f(2_000_000, 1.5), time.perf_counter())[1] for _ in range(5)) * 1e3

jit(warm)(2, 3)
texts.clear()
tiered = sys.argv[1] == "tiered"
f = jit(K.loop20, tier=tiered)
before = spin(0.05)
c0, w0 = time.thread_time(), time.perf_counter()
f(10, 1.5)
compile_ms, first_wall = (time.thread_time() - c0) * 1e3, (time.perf_counter() - w0) * 1e3
level = f.last_compile.result.job.config.opt_level
if tiered:
    entry = next(iter(f._entries.values()))
    n, s0 = 0.0, time.perf_counter()
    while entry.tier_up.is_alive():
        n += spin(0.002) * 0.002
    during = n / max(time.perf_counter() - s0, 1e-9)
    f.wait_tier_up()
    up_wall = (time.perf_counter() - w0) * 1e3
    quick_ms = run_ms(entry.call)  # the quick code, still loaded (through ctypes: so is the full level's)
    stages = {{k: v * 1e3 for k, v in f.last_compile.stage_times.items()}}
    print(json.dumps({{"compile": compile_ms, "first_wall": first_wall, "level": level, "tier_up_wall": up_wall,
                      "python_during": during / before, "quick_run": quick_ms, "run": run_ms(f),
                      "full_stages": stages}}))
    sys.exit(0)
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
print(json.dumps({{"compile": compile_ms, "first_wall": first_wall, "level": level, "llvm_parse": parse_ms,
                  "llvm_o2": o2_ms, "llvm_codegen": codegen_ms, "run": run_ms(f)}}))
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


_LEVEL = """
import json, sys, time
sys.path.insert(0, {here!r})
import numpy as np
from gpucompiler import jit
import frontend_kernels as K

def warm(a, b):
    return a * b - 1

name, level = sys.argv[1], int(sys.argv[2])
jit(warm, opt_level=level, tier=False)(2, 3)
args = {{"loop20": (100, 1.5), "stencil": (np.ones((10, 10)), np.zeros((10, 10))), "primes": (100,)}}[name]
f = jit(getattr(K, name), opt_level=level, tier=False)
c0 = time.thread_time()
f(*args)
print(json.dumps({{"compile": (time.thread_time() - c0) * 1e3}}))
"""


_PARTS = """
import json, sys, threading, time
sys.path.insert(0, {here!r})
from gpucompiler import jit
from gpucompiler.interpreter import infer
from gpucompiler.source.spec import FunctionSpec
from gpucompiler.stages import emit, irgen, optimize, validate
import frontend_kernels as K

def warm(a, b):
    return a * b - 1

jit(warm)(2, 3)
spent, main = {{}}, threading.main_thread()

def timed(owner, name, part):
    fn = getattr(owner, name)
    def wrapper(*a, **k):
        if threading.current_thread() is not main:  # the tier-up thread's
            return fn(*a, **k)
        t = time.thread_time()
        try:
            return fn(*a, **k)
        finally:
            spent[part] = spent.get(part, 0.0) + (time.thread_time() - t) * 1e3
    setattr(owner, name, wrapper)

for owner, name, part in ((FunctionSpec, "infer", "type inference"), (infer, "lower_function", "of which SSA"),
                          (irgen, "generate", "IR generation"), (optimize, "optimize", "passes"),
                          (validate, "validate", "validation"), (emit, "emit", "object code")):
    timed(owner, name, part)
f = jit(K.loop20)
c0 = time.thread_time()
f(10, 1.5)
total = (time.thread_time() - c0) * 1e3
assert f.last_compile.result.job.config.opt_level == 0, "not tiered"
f.wait_tier_up()
named = sum(v for k, v in spent.items() if k != "of which SSA")
print(json.dumps({{"total": total, **spent, "the rest": total - named}}))
"""

_PART_NAMES = ("type inference", "of which SSA", "IR generation", "passes", "validation", "object code", "the rest",
               "total")


def parts(script: str, rounds: int, trees: list[str]) -> None:
    """The tiered first call's parts, this checkout and each of ``trees`` alternated, medians over ``rounds``."""
    runs: dict[str, list[dict[str, float]]] = {t: [] for t in ["this checkout", *trees]}
    load = [os.getloadavg()[0]]
    for _ in range(rounds):
        for tree in runs:
            runs[tree].append(_run(script, tree=None if tree == "this checkout" else tree))
    load.append(os.getloadavg()[0])
    print(f"{rounds} rounds; load average {load[0]:.1f} -> {load[1]:.1f}; loop20's tiered first call, ms of the "
          "main thread's CPU time (medians)")
    print("| part | " + " | ".join(runs) + " |\n|---|" + "---:|" * len(runs))
    for part in _PART_NAMES:
        print(f"| {part} | " + " | ".join(f"{statistics.median(r.get(part, 0.0) for r in rs):.2f}"
                                          for rs in runs.values()) + " |")


def levels(script: str, rounds: int) -> None:
    """Each function's first call at O0, O1 and O2 (main thread's CPU), medians over ``rounds``."""
    rows: dict[tuple[str, int], list[float]] = {}
    load = [os.getloadavg()[0]]
    for _ in range(rounds):
        for name in ("loop20", "stencil", "primes"):
            for level in (0, 1, 2):
                rows.setdefault((name, level), []).append(_run(script, name, str(level))["compile"])
    load.append(os.getloadavg()[0])
    print(f"{rounds} rounds; load average {load[0]:.1f} -> {load[1]:.1f}; first call, ms of the main thread's CPU")
    print("| function | O0 | O1 | O2 |\n|---|---:|---:|---:|")
    for name in ("loop20", "stencil", "primes"):
        print(f"| `{name}` | " + " | ".join(f"{statistics.median(rows[(name, lv)]):.1f}" for lv in (0, 1, 2)) + " |")


def _run(script: str, *args: str, tree: str | None = None) -> dict[str, Any]:
    """``script``'s JSON line; ``tree``: gpucompiler imported from that directory (an exported older tree)."""
    env = dict(os.environ, GPUC_CACHE="off", OPENBLAS_NUM_THREADS="1", NUMBA_DISABLE_CACHE="1", GPUC_TIER="on")
    if tree is not None:
        env["PYTHONPATH"] = tree
    out = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{script} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "compile_floor.json"))
    ap.add_argument("--levels", action="store_true", help="the first call at O0, O1 and O2 instead")
    ap.add_argument("--parts", action="store_true", help="the tiered first call's parts instead")
    ap.add_argument("--tree", action="append", default=[], help="an older tree to alternate with")
    opts = ap.parse_args()
    if opts.parts:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "floor_parts.py")
            with open(path, "w") as f:
                f.write(_PARTS.format(here=HERE))
            parts(path, opts.rounds, opts.tree)
        return
    if opts.levels:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "floor_levels.py")
            with open(path, "w") as f:
                f.write(_LEVEL.format(here=HERE))
            levels(path, opts.rounds)
        return
    load = [os.getloadavg()[0]]
    ours: list[dict[str, Any]] = []
    tiered: list[dict[str, Any]] = []
    numba: list[dict[str, Any]] = []
    old: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {t: ([], []) for t in opts.tree}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, text in (("ours", _OURS), ("numba", _NUMBA)):
            paths[name] = os.path.join(tmp, f"floor_{name}.py")  # not numba.py: it would shadow the package
            with open(paths[name], "w") as f:
                f.write(text.format(here=HERE))
        for _ in range(opts.rounds):
            ours.append(_run(paths["ours"], "full"))
            tiered.append(_run(paths["ours"], "tiered"))
            for tree, (full_runs, tiered_runs) in old.items():
                full_runs.append(_run(paths["ours"], "full", tree=tree))
                tiered_runs.append(_run(paths["ours"], "tiered", tree=tree))
            numba.append(_run(paths["numba"]))
    load.append(os.getloadavg()[0])
    assert all(o["level"] == 2 for o in ours) and all(t["level"] == 0 for t in tiered), "a level differs"
    med = {k: statistics.median(s[k] for s in ours) for k in ours[0]}
    tmed = {k: statistics.median(s[k] for s in tiered) for k in tiered[0] if k != "full_stages"}
    stages = {k: statistics.median(t["full_stages"][k] for t in tiered) for k in tiered[0]["full_stages"]}
    med["llvm_total"] = statistics.median(s["llvm_parse"] + s["llvm_o2"] + s["llvm_codegen"] for s in ours)
    med["numba_compile"] = statistics.median(s["compile"] for s in numba)
    ratios = {k: statistics.median(o[k] / n["compile"] for o, n in zip(ours, numba)) for k in ("compile",)}
    ratios["llvm_total"] = statistics.median((o["llvm_parse"] + o["llvm_o2"] + o["llvm_codegen"]) / n["compile"]
                                             for o, n in zip(ours, numba))
    ratios["tiered"] = statistics.median(t["compile"] / n["compile"] for t, n in zip(tiered, numba))
    print(f"{opts.rounds} rounds, fresh processes after each engine's set-up; load average "
          f"{load[0]:.1f} -> {load[1]:.1f}; medians, ms of the main thread's CPU time")
    print("| what | ms | / Numba's compile |\n|---|---:|---:|")
    print(f"| Numba: `loop20`'s compile | {med['numba_compile']:.1f} | 1.00 |")
    print(f"| ours: `loop20`'s compile | {med['compile']:.1f} | {ratios['compile']:.2f} |")
    print(f"| LLVM alone on our module: parse + verify | {med['llvm_parse']:.1f} | |")
    print(f"| LLVM alone: O2 pipeline | {med['llvm_o2']:.1f} | |")
    print(f"| LLVM alone: object code | {med['llvm_codegen']:.1f} | |")
    print(f"| LLVM alone, total | {med['llvm_total']:.1f} | {ratios['llvm_total']:.2f} |")
    print(f"| ours, tiered: `loop20`'s first call (O0 code) | {tmed['compile']:.1f} | {ratios['tiered']:.2f} |")
    for tree, (full_runs, tiered_runs) in old.items():
        for what, runs in (("compile, the full level at once", full_runs), ("tiered first call", tiered_runs)):
            ratio = statistics.median(r["compile"] / n["compile"] for r, n in zip(runs, numba))
            print(f"| {tree}: `loop20`'s {what} | {statistics.median(r['compile'] for r in runs):.1f} | {ratio:.2f} |")
    print(f"\nwall clock, ms: first call {med['first_wall']:.1f} at once, {tmed['first_wall']:.1f} tiered; the full "
          f"level swapped in {tmed['tier_up_wall']:.1f} after the tiered call began (its compile: "
          + ", ".join(f"{k} {v:.1f}" for k, v in stages.items() if v >= 0.1) + ")")
    print(f"pure-Python work on the main thread during the tier-up: {tmed['python_during']:.2f}x its rate before")
    print(f"loop20(2_000_000, 1.5), ms: {med['run']:.2f} compiled at once, {tmed['run']:.2f} after the tier-up "
          f"({tmed['run'] / med['run']:.2f}x), {tmed['quick_run']:.2f} on the quick code")
    os.makedirs(os.path.dirname(opts.json), exist_ok=True)
    with open(opts.json, "w") as f:
        json.dump({"rounds": opts.rounds, "load_average": load, "medians_ms": med, "tiered_medians": tmed,
                   "ratios": ratios, "ours": ours, "tiered": tiered, "numba": numba,
                   "trees": {t: {"full": a, "tiered": b} for t, (a, b) in old.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
