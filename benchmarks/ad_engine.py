"""Speed of the AD engine (``enzyme_plugin.differentiate``): the clang fixtures and a size sweep.

Usage: ``python benchmarks/ad_engine.py [--rounds N] [--sizes 100,500,...] [TREE ...]``
where each TREE is a checkout of this repository (default: this one; e.g.
``git worktree add --detach /tmp/before main~3`` and ``.`` to compare). Each
round measures every tree once, the trees alternated, each in a fresh process
with the tree first on ``sys.path``; the table gives medians of the process's
CPU time (less sensitive than wall time on a loaded machine) and the median
over rounds of each tree's time / the first tree's.

What is timed:

* ``fixtures``: ``differentiate`` on every clang fixture of ``tests/enzyme/fixtures``
  that differentiates (the ``unsup_*`` ones raise ``ADError`` by design), split
  into the engine (Python) and LLVM's passes around it (``preprocess.prepare``,
  the O2 pipeline), per 1000 instructions of the fixtures as parsed;
* ``loop N``: a generated loop whose body is a chain of ``N`` float operations
  (``fmul``, ``fadd``, ``llvm.sin``) over ``x[i]`` and the loop's running sum,
  differentiated in reverse mode: every value is taped per iteration. The
  engine alone (the input prepared once, outside the timer; no O2 after it);
  ``--o2`` adds the O2 pipeline on the result, once, in this tree.

Writes ``benchmarks/results/ad_engine.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def loop_ir(k: int) -> str:
    """A loop over ``x[0:n]`` whose body is a chain of ``k`` float operations, and its gradient call."""
    lines = ["declare double @llvm.sin.f64(double)", "declare double @__enzyme_autodiff(ptr, ...)",
             "define double @f(ptr %x, i64 %n) {", "entry:", "  br label %loop", "loop:",
             "  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]",
             "  %acc = phi double [ 0.0, %entry ], [ %r, %loop ]",
             "  %p = getelementptr inbounds double, ptr %x, i64 %i", "  %v = load double, ptr %p, align 8"]
    prev = "%v"
    ops = ("fmul double {}, %v", "fadd double {}, %acc", "call double @llvm.sin.f64(double {})",
           "fmul double {}, 5.000000e-01")
    for j in range(k):
        lines.append(f"  %t{j} = " + ops[j % 4].format(prev))
        prev = f"%t{j}"
    lines += [f"  %r = fadd double %acc, {prev}", "  %i.next = add nuw nsw i64 %i, 1",
              "  %c = icmp slt i64 %i.next, %n", "  br i1 %c, label %loop, label %exit", "exit:",
              "  ret double %r", "}", "define double @grad(ptr %x, ptr %dx, i64 %n) {", "entry:",
              '  %r = call double (ptr, ...) @__enzyme_autodiff(ptr @f, metadata !"enzyme_dup", ptr %x, ptr %dx, '
              'metadata !"enzyme_const", i64 %n)', "  ret double %r", "}"]
    return "\n".join(lines) + "\n"


# -- the measuring child (runs with the tree under test first on sys.path) --------------------
_CHILD = r"""
import glob, json, os, sys, time
sys.path.insert(0, {here!r})
from ad_engine import loop_ir
import enzyme_plugin
from enzyme_plugin.ad import ADError, c_interface, preprocess
from gpucompiler.llvm import parse

def count(text):
    return sum(len(b.instructions) for f in parse(text).functions.values() for b in f.blocks)

llvm_cpu = [0.0]
def timed(fn):
    def run(*a, **k):
        c0 = time.process_time()
        try:
            return fn(*a, **k)
        finally:
            llvm_cpu[0] += time.process_time() - c0
    return run
preprocess.prepare, preprocess.optimize = timed(preprocess.prepare), timed(preprocess.optimize)

out = {{}}
texts = [open(f).read() for f in sorted(glob.glob(os.path.join({root!r}, "tests/enzyme/fixtures/*.ll")))]
n = total = 0
for t in texts:
    c0, before = time.process_time(), llvm_cpu[0]
    try:
        enzyme_plugin.differentiate(t)
    except ADError:
        llvm_cpu[0] = before
        continue
    total += time.process_time() - c0
    n += count(t)
out["fixtures"] = {{"instructions": n, "total_s": total, "llvm_s": llvm_cpu[0], "engine_s": total - llvm_cpu[0]}}
for k in {sizes!r}:
    pre = preprocess.prepare(loop_ir(k))
    c0 = time.process_time()
    c_interface.differentiate_nested(pre, lambda s: s)
    out[f"loop {{k}}"] = {{"instructions": count(pre), "engine_s": time.process_time() - c0}}
print(json.dumps(out))
"""


def measure(tree: str, sizes: list[int]) -> dict:
    tree = os.path.abspath(tree)
    env = dict(os.environ, GPUC_CACHE="off", PYTHONPATH=os.pathsep.join([tree, os.path.join(tree, "plugins")]))
    code = _CHILD.format(here=HERE, root=ROOT, sizes=sizes)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tree)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout)


def _o2_seconds(sizes: list[int]) -> dict[int, float]:
    import time

    from enzyme_plugin.ad import c_interface, preprocess

    out = {}
    for k in sizes:
        text = c_interface.differentiate_nested(preprocess.prepare(loop_ir(k)), lambda s: s)
        c0 = time.process_time()
        preprocess.optimize(text, 2)
        out[k] = time.process_time() - c0
    return out


def _slope(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of log(time) over log(size): 1 is linear."""
    xs, ys = [math.log(n) for n, _ in points], [math.log(t) for _, t in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="*", default=[ROOT])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="100,250,500,1000,2000,5000")
    ap.add_argument("--o2", action="store_true", help="also time LLVM's O2 on each loop's derivative (this tree)")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "ad_engine.json"))
    opts = ap.parse_args()
    sizes = [int(s) for s in opts.sizes.split(",")]
    load = [os.getloadavg()[0]]
    runs: dict[str, list[dict]] = {t: [] for t in opts.trees}
    for _ in range(opts.rounds):
        for tree in opts.trees:
            runs[tree].append(measure(tree, sizes))
    load.append(os.getloadavg()[0])
    o2 = _o2_seconds(sizes) if opts.o2 else {}
    cases = list(runs[opts.trees[0]][0])
    print(f"{opts.rounds} rounds, fresh processes; load average {load[0]:.1f} -> {load[1]:.1f}; "
          "CPU seconds per 1000 instructions (medians)")
    head = "| case | instructions | " + " | ".join(f"engine {t}" for t in opts.trees)
    head += "".join(f" | ratio {t}" for t in opts.trees[1:]) + (" | O2 after |" if o2 else " |")
    print(head)
    rows = []
    for case in cases:
        n = runs[opts.trees[0]][0][case]["instructions"]
        row: dict = {"case": case, "instructions": n}
        cells, ratios = [], []
        for t in opts.trees:
            per_k = [r[case]["engine_s"] / n * 1000 for r in runs[t]]
            row[t] = {"engine_s_per_1k": statistics.median(per_k), "rounds": [r[case] for r in runs[t]]}
            cells.append(f"{statistics.median(per_k):.3f}")
        for t in opts.trees[1:]:
            r = statistics.median(a[case]["engine_s"] / b[case]["engine_s"]
                                  for a, b in zip(runs[t], runs[opts.trees[0]]))
            row[t]["ratio_to_first"] = r
            ratios.append(f"{r:.2f}")
        line = f"| {case} | {n} | " + " | ".join(cells) + "".join(f" | {r}" for r in ratios)
        if case == "fixtures":
            fx = {t: statistics.median(r[case]["llvm_s"] / n * 1000 for r in runs[t]) for t in opts.trees}
            row["llvm_s_per_1k"] = fx
            line += f" | (LLVM passes {fx[opts.trees[-1]]:.3f})" if o2 else ""
        elif o2:
            k = int(case.split()[1])
            row["o2_s_per_1k"] = o2[k] / n * 1000
            line += f" | {o2[k] / n * 1000:.3f}"
        print(line + " |")
        rows.append(row)
    slopes = {t: _slope([(rw["instructions"], rw[t]["engine_s_per_1k"] * rw["instructions"]) for rw in rows
                         if rw["case"].startswith("loop")]) for t in opts.trees}
    print("growth exponent of the engine over the loop sweep (1 = linear): "
          + ", ".join(f"{t}: {s:.2f}" for t, s in slopes.items()))
    os.makedirs(os.path.dirname(opts.json), exist_ok=True)
    with open(opts.json, "w") as f:
        json.dump({"rounds": opts.rounds, "load_average": load, "sizes": sizes, "rows": rows,
                   "growth_exponent": slopes}, f, indent=1)


if __name__ == "__main__":
    main()
