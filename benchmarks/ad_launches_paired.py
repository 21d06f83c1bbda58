"""The launch-tape benchmark against two checkouts of the project, alternated in one run.

    python benchmarks/ad_launches_paired.py BEFORE AFTER [--rounds 4] [--json PATH]

``BEFORE`` and ``AFTER`` are directories holding a checkout each (``git
worktree add`` or ``git archive <commit> | tar -x -C DIR``). Each round runs
``benchmarks/ad_launches.py`` of this checkout once against each (a fresh
process, ``PYTHONPATH=<checkout>:<checkout>/plugins``), at n = 256 (the
tape's host cost dominates) and n = 65536, and the table gives the medians
over the rounds of each process's medians: the gradient and the tape's cost
per recorded launch, so that both sides see the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ad_launches.py")
SIZES = ((256, 300), (65536, 20))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    sides = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
    runs: dict = {}
    loads = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, reps in SIZES:
            for k in range(args.rounds):
                for side, root in sides.items():
                    out = os.path.join(tmp, f"{side}-{n}-{k}.json")
                    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{os.path.join(root, 'plugins')}"}
                    subprocess.run([sys.executable, BENCH, "--n", str(n), "--reps", str(reps), "--json", out],
                                   env=env, cwd=root, check=True, capture_output=True)
                    with open(out) as fh:
                        for name, r in json.load(fh)["rows"].items():
                            if name.startswith("LaunchTape") and "error" not in r:
                                runs.setdefault(f"{n} {name} {side}", []).append(r)
                loads.append(os.getloadavg()[0])
    table = {}
    print(f"| n | implementation | side | gradient (ms) | tape µs/launch |  (load {min(loads):.1f}-{max(loads):.1f})")
    print("|---:|---|---|---:|---:|")
    for key, rs in sorted(runs.items(), key=lambda kv: (int(kv[0].split()[0]), kv[0])):
        n, *name, side = key.split()
        g = statistics.median(r["grad_s"] for r in rs)
        t = statistics.median(r["tape_per_launch_s"] for r in rs)
        table[key] = {"grad_s": g, "tape_per_launch_s": t, "rounds": len(rs)}
        print(f"| {n} | {' '.join(name)} | {side} | {g * 1e3:.3f} | {t * 1e6:.1f} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"before": sides["before"], "after": sides["after"], "load": loads, "rows": table}, fh,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
