"""Parse/print speed of the LLVM IR model (``gpucompiler.llvm``), paired with LLVM's own.

Prints a table (module, instructions, parse and print ms per 1000
instructions, and the ratios to LLVM's parser and printer on the same text)
for libdevice (when found), the test corpus after LLVM's O2 pipeline and a
generated straight-line module, and writes ``benchmarks/results/llvm_model.json``.
Each round times, per module text, our parse (every function body parsed),
LLVM's parse (llvmlite ``parse_assembly`` into a fresh context), our print,
LLVM's print (``str`` of the module) and our lazy parse (``lazy=True``: bodies
left to their first use), one after the other in this process; figures are
medians of 5 rounds after a warm-up round, ratios the medians of the
per-round ratios; ``--quick`` times one round. Then the floor of any Python
parse with this model (:func:`floor`): making its instruction objects alone,
and splitting the text at whitespace alone, each against LLVM's parse. Times are this process's CPU
time (``time.process_time``: LLVM's parser runs in this thread too), which a
loaded machine inflates less than wall time; garbage left by earlier rounds
is collected before each text, outside the timings.

``--ad-path [--tree OLD ...]``: the texts the parser gets on the AD path instead. A child process compiles
the six gradient programs of ``benchmarks/first_call.py`` (``@jit`` with ``autodiff`` inside, a fresh
cache) and saves every text handed to the parser (the deferred linking's and the marker lowering's,
lazy or not); then, for this tree and each older tree (``git archive REV | tar -x -C OLD``), fresh
processes time an eager parse of each text (every body parsed), as µs per instruction, three ways:
``once`` (each text once, in the order the compile parsed them, in a fresh process: what that process
paid), ``alone`` (each text with the parser's process-wide tables emptied first: a module parsed
first in its process) and ``again`` (each text after the same texts were parsed in the process).
Medians over ``--rounds`` processes (``once``) and rounds (the others), trees alternated.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import llvmlite.binding as llvm

from gpucompiler.llvm import parse
from gpucompiler.llvm.binding import initialize

ROOT = Path(__file__).resolve().parent.parent


def _libdevice() -> str | None:
    from gpucompiler.toolchain import find_libdevice

    try:
        path = find_libdevice()
    except Exception:
        return None
    return str(llvm.parse_bitcode(Path(path).read_bytes(), context=llvm.create_context()))


def _optimised_corpus() -> list[str] | None:
    """Every host-target corpus module after O2, concatenated as separate modules' texts."""
    texts = []
    for f in sorted((ROOT / "tests/llvm/corpus").glob("*.ll")):
        ref = llvm.parse_assembly(f.read_text(), context=llvm.create_context())
        if ref.triple and not ref.triple.startswith("x86_64"):
            continue
        tm = llvm.Target.from_default_triple().create_target_machine()
        pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=2))
        pb.getModulePassManager().run(ref, pb)
        texts.append(str(ref))
    return texts or None


def _generated(n: int = 20000) -> str:
    body = ["define i64 @chain(i64 %x) {", "entry:"]
    prev = "%x"
    for k in range(n):
        body.append(f"  %v{k} = add nsw i64 {prev}, {k}")
        prev = f"%v{k}"
    body += [f"  ret i64 {prev}", "}"]
    return "\n".join(body) + "\n"


def measure(texts, reps: int) -> dict:
    """Medians over ``reps`` timed rounds, after one untimed warm-up round."""
    n = sum(len(b.instructions) for t in texts for f in parse(t).functions.values() for b in f.blocks)
    runs: dict[str, list[float]] = {"parse": [], "print": [], "llvm_parse": [], "llvm_print": [], "lazy_parse": []}
    for rep in range(reps + 1):
        got = dict.fromkeys(runs, 0.0)
        for t in texts:
            gc.collect()  # earlier rounds' garbage (models hold cycles) is not collected inside a timing
            t0 = time.process_time()
            m = parse(t)
            t1 = time.process_time()
            str(m)
            t2 = time.process_time()
            ctx = llvm.create_context()
            t3 = time.process_time()
            ref = llvm.parse_assembly(t, context=ctx)
            t4 = time.process_time()
            str(ref)
            t5 = time.process_time()
            del m, ref
            t6 = time.process_time()
            lazy = parse(t, lazy=True)
            t7 = time.process_time()
            del lazy
            got["lazy_parse"] += t7 - t6
            got["parse"] += t1 - t0
            got["print"] += t2 - t1
            got["llvm_parse"] += t4 - t3
            got["llvm_print"] += t5 - t4
        if rep:
            for k, v in got.items():
                runs[k].append(v)
    k = n / 1000
    med = {name: statistics.median(v) for name, v in runs.items()}
    return {"instructions": n, "parse_ms_per_1k": med["parse"] * 1e3 / k, "print_ms_per_1k": med["print"] * 1e3 / k,
            "llvm_parse_ms_per_1k": med["llvm_parse"] * 1e3 / k, "llvm_print_ms_per_1k": med["llvm_print"] * 1e3 / k,
            "parse_ratio": statistics.median(a / b for a, b in zip(runs["parse"], runs["llvm_parse"])),
            "print_ratio": statistics.median(a / b for a, b in zip(runs["print"], runs["llvm_print"])),
            "lazy_parse_ms_per_1k": med["lazy_parse"] * 1e3 / k,
            "lazy_parse_ratio": statistics.median(a / b for a, b in zip(runs["lazy_parse"], runs["llvm_parse"])),
            "total_ms": (med["parse"] + med["print"]) * 1e3, "rounds": runs}


def floor(texts, reps: int) -> dict:
    """What a Python parse cannot go under, paired with LLVM's parser: making the model's instruction
    objects with their operands from a parse's parts (no text read at all), and splitting the text into
    lines and whitespace-separated words (``str.split``, in C). Medians of the per-round ratios."""
    from gpucompiler.llvm.instructions import Instruction
    from gpucompiler.llvm.values import PendingUses

    parts = [(i.opcode, i.type, i.parts, i.name, i.call, i.fields(), list(i.operands))
             for t in texts for f in parse(t).functions.values() for b in f.blocks for i in b.instructions]

    def objects():
        pending, made = PendingUses(), Instruction.parsed
        return [pending.add(made(op, ty, ps, name, call, fields), ops) for op, ty, ps, name, call, fields, ops in parts]

    ratios: dict[str, list[float]] = {"objects": [], "split": []}
    for _ in range(reps):
        gc.collect()
        gc.disable()  # as the parser runs (no_cyclic_gc): the collector would walk the model kept alive here
        try:
            t0 = time.process_time()
            objects()
            t1 = time.process_time()
            for t in texts:
                [line.split() for line in t.split("\n")]
            t2 = time.process_time()
            for t in texts:
                llvm.parse_assembly(t, context=llvm.create_context())
            t3 = time.process_time()
        finally:
            gc.enable()
        ratios["objects"].append((t1 - t0) / (t3 - t2))
        ratios["split"].append((t2 - t1) / (t3 - t2))
    return {k: statistics.median(v) for k, v in ratios.items()}


#: run in a child: compile the six gradient programs, saving every text the parser gets (argv: folder)
CAPTURE = r"""
import os, re, sys
folder = sys.argv[1]
import gpucompiler.llvm.parser as P
init = P.Parser.__init__
count = [0]

def saving(self, text, **kw):
    count[0] += 1
    with open(os.path.join(folder, f"{count[0]:04d}.ll"), "w") as f:
        f.write(text)
    init(self, text, **kw)

P.Parser.__init__ = saving
import numpy as np
from gpucompiler import jit
source = open(os.path.join(sys.argv[2], "benchmarks", "first_call.py")).read()
programs = re.search(r'GRADIENTS = r\"\"\"(.*?)\"\"\"', source, re.S).group(1)
with open(os.path.join(folder, "grad_programs.py"), "w") as f:
    f.write(programs)
sys.path.insert(0, folder)
import grad_programs as G
ns = {}
exec(source[source.index("ARGUMENTS = {"):source.index("VERSUS = ")], ns)
rng = np.random.default_rng(0)
for name, args in ns["ARGUMENTS"].items():
    jit(getattr(G, name), plugins=("enzyme",))(*eval("(" + args + ")", {"rng": rng, "np": np}))
"""

#: run in a child with a tree first on the path: µs per instruction of eager parses (argv: tree, folder, mode, rounds)
TIMED = r"""
import gc, glob, json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
import gpucompiler.llvm as L
from gpucompiler.llvm import parser_instructions, parser_values
assert L.__file__.startswith(sys.argv[1])
texts = [open(f).read() for f in sorted(glob.glob(sys.argv[2] + "/*.ll"))]
mode, rounds = sys.argv[3], int(sys.argv[4])
tables = [getattr(parser_instructions, "SHAPES", {}), getattr(parser_values, "AGGREGATE_TYPES", {})]

def one_round(empty):
    total, n = 0.0, 0
    for t in texts:
        if empty:
            for table in tables:
                table.clear()
        gc.collect()
        t0 = time.process_time()
        m = L.parse(t)
        total += time.process_time() - t0
        n += sum(len(b.instructions) for f in m.functions.values() for b in f.blocks)
    return total / n * 1e6, n

if mode == "once":
    print(json.dumps(one_round(False)))
else:
    one_round(mode == "alone")
    got = [one_round(mode == "alone") for _ in range(rounds)]
    print(json.dumps([statistics.median(g[0] for g in got), got[0][1]]))
"""


def ad_path(trees: list[str], rounds: int) -> dict:
    """µs per instruction of each tree's parser on the texts the AD path parses (see the module's docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "texts")
        os.mkdir(folder)
        env = {**os.environ, "GPUC_CACHE_DIR": os.path.join(tmp, "cache"),
               "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "plugins")])}
        for var in ("GPUC_SERVICE_URL", "GPUC_CACHE_URL"):
            env.pop(var, None)
        subprocess.run([sys.executable, "-c", CAPTURE, folder, str(ROOT)], env=env, check=True)
        n_texts = len([f for f in os.listdir(folder) if f.endswith(".ll")])
        got: dict[str, dict[str, list[float]]] = {t: {"once": [], "alone": [], "again": []} for t in trees}
        n = 0
        for mode in ("once", "alone", "again"):
            for _ in range(rounds if mode == "once" else 1):
                for tree in trees:
                    out = subprocess.run([sys.executable, "-c", TIMED, tree, folder, mode, str(rounds)],
                                         env=env, check=True, capture_output=True, text=True).stdout
                    us, n = json.loads(out)
                    got[tree][mode].append(us)
    return {"texts": n_texts, "instructions": n,
            "us_per_instruction": {t: {m: statistics.median(v) for m, v in modes.items()} for t, modes in got.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one repetition")
    ap.add_argument("--ad-path", action="store_true", help="the texts the AD path parses, µs per instruction")
    ap.add_argument("--tree", action="append", default=[], help="with --ad-path: an older tree to time too")
    ap.add_argument("--rounds", type=int, default=7, help="with --ad-path: processes (once) and rounds (the others)")
    args = ap.parse_args()
    if args.ad_path:
        trees = [str(ROOT), *args.tree]
        print(f"load average {os.getloadavg()[0]:.1f}")
        r = ad_path(trees, args.rounds)
        print(f"{r['texts']} texts, {r['instructions']} instructions; µs per instruction of an eager parse (medians)")
        print(f"{'tree':<40}{'once':>8}{'alone':>8}{'again':>8}")
        for tree, us in r["us_per_instruction"].items():
            print(f"{tree:<40}" + "".join(f"{us[m]:>8.2f}" for m in ("once", "alone", "again")))
        mine = r["us_per_instruction"][str(ROOT)]
        for tree in args.tree:
            old = r["us_per_instruction"][tree]
            print(f"{tree} / this tree: " + ", ".join(f"{m} {old[m] / mine[m]:.2f}x" for m in ("once", "alone", "again")))
        r["load_average_after"] = os.getloadavg()[0]
        out = ROOT / "benchmarks/results/llvm_model_ad_path.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(r, indent=2) + "\n")
        return
    initialize()
    reps = 1 if args.quick else 5
    cases = {"libdevice": _libdevice(), "corpus-O2": _optimised_corpus(), "generated-chain": _generated()}
    results = {}
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'module':<18}{'instructions':>13}{'parse ms/1k':>13}{'LLVM':>7}{'ratio':>7}{'print ms/1k':>13}{'LLVM':>7}"
          f"{'ratio':>7}{'lazy ms/1k':>12}{'ratio':>7}")
    for name, texts in cases.items():
        if texts is None:
            print(f"{name:<18}{'(not found)':>13}")
            continue
        r = results[name] = measure(texts if isinstance(texts, list) else [texts], reps)
        print(f"{name:<18}{r['instructions']:>13}{r['parse_ms_per_1k']:>13.2f}{r['llvm_parse_ms_per_1k']:>7.2f}"
              f"{r['parse_ratio']:>7.2f}{r['print_ms_per_1k']:>13.2f}{r['llvm_print_ms_per_1k']:>7.2f}"
              f"{r['print_ratio']:>7.2f}{r['lazy_parse_ms_per_1k']:>12.2f}{r['lazy_parse_ratio']:>7.2f}")
    print("floor of a Python parse, / LLVM's parse: instruction objects alone | str.split of the text alone")
    for name in ("libdevice", "corpus-O2"):
        texts = cases[name]
        if texts is not None:
            fl = results[name]["floor"] = floor(texts if isinstance(texts, list) else [texts], reps)
            print(f"{name:<18}{fl['objects']:>13.2f}{fl['split']:>13.2f}")
    results["load_average_after"] = os.getloadavg()[0]
    out = ROOT / "benchmarks/results/llvm_model.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
