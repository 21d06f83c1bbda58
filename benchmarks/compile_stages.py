"""Where a cold compile goes: the pipeline's own stage times of a first call in a fresh process.

    python benchmarks/compile_stages.py [--rounds N] [--json out.json] TREE [TREE ...]

Each TREE is a checkout of this repository (as in ``compile_overhead.py``).
Each round runs every case once per tree, alternated, each in a fresh
process with the compile cache off (``GPUC_CACHE=off``), imports before the
timer. Inside the process every ``gpucompiler.pipeline.compile`` is wrapped:
its ``stage_times`` (the driver's ``with stage(...)`` blocks, timed here by
the main thread's CPU clock: a loaded machine stretches wall times many
times over) are summed per stage, and what the first call spent outside the
pipeline (the cache key with type inference, loading the object code, the
entry) is the rest. Medians over rounds, in milliseconds: ``cpu`` is the
first call's CPU time of the main thread (LLVM runs there too), ``wall``
its wall time. Writes ``benchmarks/results/compile_stages.json``.

Cases: ``loop20`` and ``add`` of ``frontend_kernels.py`` (``@jit``), and a
``saxpy`` kernel's first launch on the CPU grid emulation.
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

_CASE = """
import json, sys, time, types
sys.path.insert(0, {here!r})
import numpy as np
import gpucompiler.pipeline as pipeline
import gpucompiler.stages.context as context
context.time = types.SimpleNamespace(perf_counter=time.thread_time)  # stage times in CPU time
from gpucompiler import device as gd, jit, kernel
import frontend_kernels as K

stages, inside = {{}}, [0.0]
compile_job = pipeline.compile

def timed(*args, **kwargs):
    start = time.thread_time()
    result = compile_job(*args, **kwargs)
    inside[0] += time.thread_time() - start
    for name, seconds in result.stage_times.items():
        stages[name] = stages.get(name, 0.0) + seconds
    return result

pipeline.compile = timed

@kernel
def saxpy(a, x, y, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]

x, y, out = np.ones(64), np.ones(64), np.zeros(64)
case = {case!r}
call = {{"loop20": lambda: jit(K.loop20)(10, 1.5), "add": lambda: jit(K.add)(1, 2),
        "saxpy": lambda: saxpy[1, 64, "cpu"](2.0, x, y, out)}}[case]
t0, c0 = time.perf_counter(), time.thread_time()
call()
total, cpu = time.perf_counter() - t0, time.thread_time() - c0
print(json.dumps({{"wall": total * 1e3, "cpu": cpu * 1e3, "outside": (cpu - inside[0]) * 1e3,
                  **{{k: v * 1e3 for k, v in stages.items()}}}}))
"""

CASES = ("loop20", "add", "saxpy")
STAGES = ("irgen", "post_irgen", "link_deferred", "pre_ad", "optimize", "ad", "post_ad", "finish", "validate",
          "emit")


def run(tree: str, case: str, scripts: str) -> dict[str, float]:
    tree = os.path.abspath(tree)
    env = dict(os.environ, GPUC_CACHE="off", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([tree, os.path.join(tree, "plugins")]))
    script = os.path.join(scripts, f"first_{case}.py")  # a file: the kernel's source must be readable
    if not os.path.exists(script):
        with open(script, "w") as f:
            f.write(_CASE.format(here=HERE, case=case))
    out = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env, cwd=tree)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trees", nargs="+")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "compile_stages.json"))
    opts = ap.parse_args()
    load = [os.getloadavg()[0]]
    samples: dict[tuple[str, str], list[dict[str, float]]] = {(c, t): [] for c in CASES for t in opts.trees}
    with tempfile.TemporaryDirectory() as scripts:
        for _ in range(opts.rounds):
            for case in CASES:
                for tree in opts.trees:
                    samples[case, tree].append(run(tree, case, scripts))
    load.append(os.getloadavg()[0])
    print(f"{opts.rounds} rounds, fresh processes, GPUC_CACHE=off; load average {load[0]:.1f} -> {load[1]:.1f}")
    print("medians in ms of the main thread's CPU time (wall: the first call's wall time)")
    result = {"rounds": opts.rounds, "load_average": load, "trees": opts.trees, "cases": {}}
    for case in CASES:
        keys = ["wall", "cpu", "outside"] + [k for k in STAGES if any(k in s for t in opts.trees
                                                                       for s in samples[case, t])]
        medians = {t: {k: statistics.median(s.get(k, 0.0) for s in samples[case, t]) for k in keys}
                   for t in opts.trees}
        print(f"\n{case}\n| part | " + " | ".join(opts.trees) + " |")
        for k in keys:
            if any(medians[t][k] >= 0.05 for t in opts.trees):
                print(f"| {k} | " + " | ".join(f"{medians[t][k]:.1f}" for t in opts.trees) + " |")
        result["cases"][case] = {t: {"median_ms": medians[t], "samples": samples[case, t]} for t in opts.trees}
    os.makedirs(os.path.dirname(opts.json), exist_ok=True)
    with open(opts.json, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
