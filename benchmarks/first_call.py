"""A cached ``@jit`` gradient's first call in a fresh process, and the plugin modules it imports.

    python benchmarks/first_call.py [--rounds 9] [--tree OLD ...]

The program is the MLP-free case of a JAX user's first gradient: a
least-squares loss over a loop, differentiated by ``autodiff(Reverse, ...)``
inside ``@jit``. Each tree (this checkout, and every ``--tree`` directory: an
older tree exported with ``git archive REV | tar -x -C OLD``) gets its own
cache directory, filled by one run; then the trees' fresh processes alternate,
``--rounds`` each, and the medians are printed: the imports (``gpucompiler``,
``enzyme_plugin``'s API, NumPy), the first call from the disk cache, and how
many ``enzyme_plugin`` modules the process holds after it (the API alone is 4);
then where the cold compile's time went, stage by stage (the ``gpucompiler.stages``
log records, summed over the gradient's jobs: a nested job's stages run inside its
parent's ``link_deferred``, so the sum exceeds the wall time when there are several).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROGRAM = r"""
import json, logging, sys, time
t0 = time.perf_counter()
import numpy as np
from gpucompiler import jit
from enzyme_plugin import Active, Const, Reverse, autodiff
t1 = time.perf_counter()
stages = {}


class Stages(logging.Handler):
    def emit(self, record):  # "<job>: stage <name> <ms> ms": summed over the gradient's nested jobs
        _, name, ms = record.args[:3]
        stages[name] = stages.get(name, 0.0) + ms


if sys.argv[1:] == ["--stages"]:
    logging.getLogger("gpucompiler.stages").addHandler(Stages())
    logging.getLogger("gpucompiler.stages").setLevel(logging.INFO)


def loss(w, b, xs, ys, n):
    acc = 0.0
    for i in range(n):
        r = w * xs[i] + b - ys[i]
        acc += r * r
    return acc / n


def grad_loss(w, b, xs, ys, n):
    return autodiff(Reverse, loss, Active(w), Active(b), Const(xs), Const(ys), Const(n))


g = jit(grad_loss, plugins=("enzyme",))
xs = np.linspace(0.0, 1.0, 50)
ys = 3.0 * xs + 1.0
t2 = time.perf_counter()
dw, db = g(2.0, 0.5, xs, ys, 50)
t3 = time.perf_counter()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_call_ms": (t3 - t2) * 1e3, "grad": [dw, db],
                  "plugin_modules": sum(m.startswith("enzyme_plugin") for m in sys.modules),
                  "tier": getattr(getattr(g, "last_compile", None), "tier", None), "stages_ms": stages}))
"""


def run(tree: str, cache: str, *flags: str) -> dict:
    env = {**os.environ, "GPUC_CACHE_DIR": cache,
           "PYTHONPATH": os.pathsep.join([tree, os.path.join(tree, "plugins")])}
    env.pop("GPUC_SERVICE_URL", None)
    env.pop("GPUC_CACHE_URL", None)
    done = subprocess.run([sys.executable, "-c", PROGRAM, *flags], env=env, cwd=tree, capture_output=True, text=True,
                          check=True)  # cwd: `python -c` puts it first on sys.path
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description="a cached @jit gradient's first call in fresh processes")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--tree", action="append", default=[], help="an older tree to alternate with")
    args = parser.parse_args()
    trees = [ROOT, *args.tree]
    with tempfile.TemporaryDirectory() as tmp:
        caches = {t: os.path.join(tmp, f"cache{k}") for k, t in enumerate(trees)}
        cold = {t: run(t, caches[t], "--stages") for t in trees}
        rows: dict[str, list[dict]] = {t: [] for t in trees}
        for _ in range(args.rounds):
            for t in trees:
                rows[t].append(run(t, caches[t]))
    print(f"{'tree':40} {'cold (ms)':>10} {'import (ms)':>12} {'cached first call (ms)':>23} {'plugin modules':>15}")
    for t in trees:
        first = [r["first_call_ms"] for r in rows[t]]
        assert all(r["grad"] == cold[t]["grad"] for r in rows[t]), "a cached gradient differs from the cold one"
        print(f"{t[-40:]:40} {cold[t]['first_call_ms']:10.0f} {statistics.median(r['import_ms'] for r in rows[t]):12.0f} "
              f"{statistics.median(first):10.0f} ({min(first):.0f}-{max(first):.0f}) "
              f"{rows[t][-1]['plugin_modules']:15d}")
    print("\nthe cold compile by stage (ms, summed over the gradient's jobs), then the warm runs' tiers:")
    for t in trees:
        parts = cold[t].get("stages_ms", {})
        print(f"{t[-40:]:40} " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1])
                                           if v >= 1) + f"; {sorted({str(r.get('tier')) for r in rows[t]})}")


if __name__ == "__main__":
    main()
