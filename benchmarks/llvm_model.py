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
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
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


def _optimised_corpus() -> str | None:
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one repetition")
    args = ap.parse_args()
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
