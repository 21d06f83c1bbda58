"""Where a cold first call's time goes, as a picture: the JSON of ``first_call.py --jax --json`` drawn as
one stacked bar per program, beside JAX's first call.

    python benchmarks/plot_first_call.py benchmarks/results/first_call_jax.json docs/images/first_call.svg

Each bar is this checkout's first call (the JSON's first tree), medians over the rounds of each part:
LLVM's own work on the final module (its ``O<n>`` after AD and the code generation), LLVM's ``O<n>`` before
AD, the rest of the pipeline (IR generation, the AD engine, the plugins' passes, the prints and parses
between stages) and what is outside the pipeline (the cache key with its type inference, the cache's
files, loading the code); a mark shows JAX's first ``jit(grad)`` call of the same program. Needs
``matplotlib`` (the ``plot`` extra); the SVG is written without a date, so a run on the same numbers gives
the same file.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

#: the program names of first_call.py's GRADIENTS, as the picture labels them, in its order
LABELS = {"mlp": "MLP loss", "lse": "log-sum-exp", "softplus": "softplus regression", "hvp": "Rosenbrock hvp",
          "rk4": "RK4 jacobian", "newton": "Newton while"}
LLVM_FINAL = ("llvm: O<n> after AD", "llvm: code generation")
PARTS = ("LLVM on the final module", "LLVM's O<n> before AD", "the rest of the pipeline", "outside the pipeline")
COLOURS = ("#3b6ea8", "#8fb3de", "#e0924a", "#9a9a9a")


class PlotError(Exception):
    """A JSON that is not first_call.py's ``--jax --json`` of this version."""


def parts(data: dict) -> tuple[list[str], list[list[float]], list[float]]:
    """``(programs, per part the median ms of each program, JAX's median ms of each)`` of the JSON's first
    tree (see the module docstring)."""
    trees = data.get("trees") or []
    rows = data.get("rows") or {}
    if not trees or not rows:
        raise PlotError("no 'trees' or 'rows': give the JSON of `first_call.py --jax --json OUT`")
    tree = trees[0]
    programs = [p for p in LABELS if f"{p}|{tree}" in rows and f"{p}|jax" in rows]
    if not programs:
        raise PlotError(f"no program has both this tree's ({tree}) and JAX's rows")
    columns: list[list[float]] = [[] for _ in PARTS]
    jax = []
    for p in programs:
        runs = rows[f"{p}|{tree}"]
        missing = {"pipeline", "llvm: O<n> before AD", *LLVM_FINAL} - set(runs[0].get("stages_ms", {}))
        if missing:
            raise PlotError(f"{p}: the runs hold no {sorted(missing)}: run this checkout's first_call.py again")
        per_run = []
        for r in runs:
            got = r["stages_ms"]
            final = sum(got[k] for k in LLVM_FINAL)
            before = got["llvm: O<n> before AD"]
            per_run.append((final, before, got["pipeline"] - final - before, r["first_ms"] - got["pipeline"]))
        for k in range(len(PARTS)):
            columns[k].append(statistics.median(run[k] for run in per_run))
        jax.append(statistics.median(r["first_ms"] for r in rows[f"{p}|jax"]))
    return programs, columns, jax


def draw(data: dict, out: str) -> None:
    import matplotlib  # the `plot` extra

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "gpucompiler"  # the same ids in every run
    from matplotlib import pyplot as plt

    programs, columns, jax = parts(data)
    fig, ax = plt.subplots(figsize=(8, 0.55 * len(programs) + 1.6))
    y = list(range(len(programs)))[::-1]
    left = [0.0] * len(programs)
    for name, colour, widths in zip(PARTS, COLOURS, columns):
        ax.barh(y, widths, left=left, color=colour, label=name, height=0.6)
        left = [a + b for a, b in zip(left, widths)]
    ax.scatter(jax, y, marker="D", color="black", zorder=3, label="JAX's first jit(grad) call")
    for yy, total, j in zip(y, left, jax):
        ax.annotate(f"{total / j:.1f}× JAX", (total, yy), xytext=(4, -3), textcoords="offset points", fontsize=8)
    ax.set_yticks(y, [LABELS[p] for p in programs])
    ax.set_xlabel("first call in a fresh process, ms (medians)")
    load = data.get("load")
    ax.set_title("A gradient's cold first call, part by part" + (f" (load {load[0]:.1f})" if load else ""),
                 fontsize=10)
    ax.set_xlim(0, max(max(left), max(jax)) * 1.18)
    ax.legend(fontsize=7, loc="lower right", frameon=False)
    fig.tight_layout()
    fig.savefig(out, format="svg", metadata={"Date": None})
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", help="first_call.py --jax --json's output")
    parser.add_argument("out", help="the SVG to write")
    args = parser.parse_args()
    try:
        with open(args.json) as f:
            data = json.load(f)
        draw(data, args.out)
    except (OSError, json.JSONDecodeError, PlotError) as exc:
        print(f"plot_first_call: {exc}", file=sys.stderr)
        return 1
    except ImportError:
        print("plot_first_call: needs matplotlib (pip install 'gpucompiler[plot]')", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
