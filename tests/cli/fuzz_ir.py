"""IR fuzzer of ``gpuc compile-ir`` and ``gpuc enzyme``: mutated corpus modules, every failure typed.

Each seed picks a module of the corpora (tests/llvm/corpus, the clang
fixtures of tests/enzyme/fixtures) and applies one to three mutations:
drop, duplicate or swap lines; corrupt metadata (a reference to another or a
missing node, a node's operands changed, a definition dropped); change a
type; add an attribute (``"target-cpu"="i386"``, a target feature, ``optnone``
without ``noinline``...); change the triple or data layout; truncate the
text; insert bytes that are not UTF-8 (or a NUL). The mutant then goes
through one of the commands ``gpuc compile-ir`` (native, or PTX assembly) and
``gpuc enzyme`` and the run is classified as

* ``ok``: status 0;
* ``typed``: a nonzero status and one ``gpuc: error:`` message, no traceback;
* ``internal``: the typed report of an untyped exception in the child
  (``internal error (KeyError: ...)``): a compiler bug;
* ``traceback``: a Python traceback in the output;
* ``untyped``: a nonzero status without the typed message (LLVM's ``exit``
  from inside the process);
* ``signal``: the process was killed by a signal (an uncontained abort);
* ``hang``: no answer within the timeout.

Only ``ok`` and ``typed`` are acceptable. Runs happen in worker
subprocesses that call the ``gpuc`` entry point (:func:`gpucompiler.cli.main`)
once per run, so that thousands of runs do not each pay the interpreter's
start; each run announces itself first, so a worker that dies or stops is
attributed to its run, and a fresh worker goes on with the next.
``--subprocesses`` runs each as its own ``python -m gpucompiler`` instead.

    python -m tests.cli.fuzz_ir --mutants 2000 [--seed 0] [--jobs 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import random
import re
import select
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPORA = (ROOT / "tests" / "llvm" / "corpus", ROOT / "tests" / "enzyme" / "fixtures")
KINDS = ("ok", "typed", "internal", "traceback", "untyped", "signal", "hang")
#: the commands a mutant goes through (``{out}`` is the output file)
COMMANDS = (("compile-ir", "{ir}", "-o", "{out}"), ("enzyme", "{ir}", "-o", "{out}"),
            ("enzyme", "{ir}", "-o", "{out}"), ("compile-ir", "{ir}", "--plugin", "enzyme", "-O", "1", "-o", "{out}"),
            ("compile-ir", "{ir}", "--target", "ptx:sm_80", "--emit", "asm", "-o", "{out}"))
_TYPES = ("double", "float", "i32", "i64", "i1", "i8", "ptr", "half", "<2 x double>", "void", "x86_fp80",
          "{ double, i64 }", "[4 x i32]", "ptr addrspace(1)", "i128", "label", "<vscale x 2 x double>")
_ATTRIBUTES = ('"target-cpu"="i386"', '"target-cpu"="sm_90"', '"target-features"="+avx512f,-sse2"',
               '"target-features"="+ptx99"', "optnone", "noinline", "alwaysinline", "readnone", "nounwind",
               "memory(none)", "memory(argmem: write)", "vscale_range(1,16)", '"denormal-fp-math"="bogus"',
               '"frame-pointer"="all"', "speculatable", "noreturn", "willreturn", "minsize", "naked",
               '"no-trapping-math"="maybe"', "allocsize(0)", "returns_twice", "cold", "strictfp")
_TRIPLES = ('"nvptx64-nvidia-cuda"', '"i386-pc-linux-gnu"', '"aarch64-unknown-linux-gnu"', '"spirv64"',
            '"amdgcn-amd-amdhsa"', '"wasm32"', '"bogus-triple"', '""')
_LAYOUTS = ('"e-p:32:32"', '"E-m:e-i64:64"', '"e-i64:64-v16:16-v32:32-n16:32:64"', '"not a layout"', '"A5"')
_METADATA_NODES = ('!{}', '!{!"double"}', '!{i64 0}', '!{!0, !0, i64 0}', '!{ptr null}', '!{i32 2, !"x", i32 3}',
                   'distinct !{}', '!DILocation(line: 0, scope: !0)', '!{!"omnipotent char", !1}', '!{!1, i64 999}')
_JUNK = (b"\xff", b"\xfe\xff", b"\xc3\x28", b"\x00", b"\xed\xa0\x80", b"\xe2\x82", b"\x80\x80", b"\xf8\x88\x80\x80\x80")


def corpus() -> list[Path]:
    """The modules mutated: every ``.ll`` of the corpora, smallest first (seed ``s`` picks one)."""
    files = [p for d in CORPORA for p in sorted(d.glob("*.ll")) if p.stat().st_size < 40_000]
    return sorted(files, key=lambda p: (p.stat().st_size, p.name))


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _drop(rng, text):
    lines = _lines(text)
    del lines[rng.randrange(len(lines))]
    return "\n".join(lines)


def _duplicate(rng, text):
    lines = _lines(text)
    k = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[k])
    return "\n".join(lines)


def _swap(rng, text):
    lines = _lines(text)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def _metadata(rng, text):
    refs = list(re.finditer(r"!(\d+)\b", text))
    defs = [m for m in re.finditer(r"^!(\d+) = (.*)$", text, re.M)]
    choice = rng.random()
    if refs and choice < 0.4:  # a reference to another node, or to one that does not exist
        m = rng.choice(refs)
        other = rng.choice([str(rng.randrange(0, 40)), "999", m.group(1)])
        return text[:m.start(1)] + other + text[m.end(1):]
    if defs and choice < 0.75:  # a node's operands replaced
        m = rng.choice(defs)
        return text[:m.start(2)] + rng.choice(_METADATA_NODES) + text[m.end(2):]
    if defs and choice < 0.9:  # a definition dropped
        m = rng.choice(defs)
        return text[:m.start()] + text[m.end():]
    # a tag on a random instruction
    lines = _lines(text)
    body = [k for k, ln in enumerate(lines) if ln.startswith("  ") and "=" in ln]
    if not body:
        return text
    k = rng.choice(body)
    tag = rng.choice(("!tbaa", "!dbg", "!range", "!nonnull", "!prof", "!noalias", "!llvm.loop"))
    lines[k] += f", {tag} !{rng.randrange(0, 30)}"
    return "\n".join(lines)


def _retype(rng, text):
    found = [m for t in ("double", "float", "i32", "i64", "ptr", "i1", "i8") for m in re.finditer(rf"\b{re.escape(t)}\b", text)]
    if not found:
        return text
    m = rng.choice(found)
    return text[:m.start()] + rng.choice(_TYPES) + text[m.end():]


def _attribute(rng, text):
    groups = [m for m in re.finditer(r"^attributes #\d+ = \{", text, re.M)]
    defs = [m for m in re.finditer(r"^define [^\n]*\)", text, re.M)]
    attr = rng.choice(_ATTRIBUTES)
    if groups and (rng.random() < 0.6 or not defs):
        m = rng.choice(groups)
        text = text[:m.end()] + f" {attr} " + text[m.end():]
        if attr.startswith('"target-cpu"'):  # replace the group's own target-cpu too
            text = re.sub(r'"target-cpu"="[^"]*"', attr, text)
        return text
    if defs:
        m = rng.choice(defs)
        return text[:m.end()] + f" {attr}" + text[m.end():]
    return text


def _target(rng, text):
    if rng.random() < 0.6:
        new = f"target triple = {rng.choice(_TRIPLES)}"
        return re.sub(r"^target triple = .*$", new, text, flags=re.M) if "target triple" in text else new + "\n" + text
    new = f"target datalayout = {rng.choice(_LAYOUTS)}"
    return re.sub(r"^target datalayout = .*$", new, text, flags=re.M) if "target datalayout" in text \
        else new + "\n" + text


def _opcode(rng, text):
    ops = ("fadd", "fmul", "fsub", "fdiv", "add", "mul", "sdiv", "udiv", "load", "store", "call", "phi", "br",
           "ret", "getelementptr", "alloca", "icmp", "fcmp", "select", "freeze", "unreachable", "fneg")
    found = [m for op in ops for m in re.finditer(rf"(?<=[ =] ){op}\b", text)]
    if not found:
        return text
    m = rng.choice(found)
    return text[:m.start()] + rng.choice(ops) + text[m.end():]


def _truncate(rng, text):
    return text[:rng.randrange(len(text) + 1)]


MUTATIONS = {"drop": _drop, "duplicate": _duplicate, "swap": _swap, "metadata": _metadata, "retype": _retype,
             "attribute": _attribute, "target": _target, "opcode": _opcode, "truncate": _truncate}

#: mutations that often leave a module LLVM parses weigh more: they reach the pipeline and the engine
_WEIGHTED = sorted(MUTATIONS) + ["attribute", "attribute", "metadata", "metadata", "target"]


def mutant(seed: int, files: list[Path] | None = None) -> tuple[bytes, str, tuple[str, ...]]:
    """``(module bytes, description, command)`` of seed ``seed``."""
    rng = random.Random(seed)
    files = files or corpus()
    source = files[seed % len(files)]
    text = source.read_text()
    names = list(dict.fromkeys(rng.choice(_WEIGHTED) for _ in range(rng.choice((1, 1, 1, 2, 3)))))
    for name in names:
        if text:
            text = MUTATIONS[name](rng, text)
    data = text.encode()
    if rng.random() < 0.12:  # bytes that are not UTF-8 (or a NUL)
        at = rng.randrange(len(data) + 1)
        data = data[:at] + rng.choice(_JUNK) + data[at:]
        names.append("bytes")
    command = COMMANDS[rng.randrange(len(COMMANDS))]
    return data, f"{source.relative_to(ROOT)} {'+'.join(names)}", command


def classify(status: str | int, output: str) -> str:
    """The kind of one run: ``status`` is its exit status, or ``"signal"`` / ``"hang"``."""
    if status in ("signal", "hang"):
        return str(status)
    if isinstance(status, int) and status < 0:
        return "signal"
    if "Traceback (most recent call last)" in output:
        return "traceback"
    if "gpuc: error: internal error (" in output:  # an untyped exception in the contained child
        return "internal"
    if status == 0:
        return "ok"
    lines = [ln for ln in output.splitlines() if ln.strip()]
    return "typed" if lines and lines[0].startswith("gpuc: error: ") else "untyped"


# -- the worker: many runs in one process ---------------------------------------------------------
def _worker(workdir: Path, seeds: list[int]) -> None:
    """Run each seed's command through :func:`gpucompiler.cli.main` in this process: ``start <seed>``
    before, ``end <seed> <status>`` after, the run's output (file descriptor 2 included) in
    ``<seed>.err``."""
    from gpucompiler.cli import main

    for seed in seeds:
        ir, out, err = workdir / f"{seed}.ll", workdir / f"{seed}.out", workdir / f"{seed}.err"
        command = json.loads((workdir / f"{seed}.cmd").read_text())
        print(f"start {seed}", flush=True)
        sys.stderr.flush()
        saved = os.dup(2)
        with open(err, "w") as sink:
            os.dup2(sink.fileno(), 2)
            try:
                status = main([a.format(ir=ir, out=out) for a in command])
            except SystemExit as exc:  # argparse
                status = exc.code if isinstance(exc.code, int) else 2
            except BaseException:  # what a real process would print as a traceback
                traceback.print_exc()
                status = 1
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                os.close(saved)
        with contextlib.suppress(OSError):
            out.unlink()
        print(f"end {seed} {status}", flush=True)


def _start_worker(workdir: Path, seeds: list[int]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": _pythonpath(), "PYTHONFAULTHANDLER": ""}
    return subprocess.Popen([sys.executable, "-m", "tests.cli.fuzz_ir", "--worker", str(workdir),
                             *map(str, seeds)], cwd=workdir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)


def _run_batch(workdir: Path, seeds: list[int], timeout: float) -> dict[int, tuple[str, str]]:
    """``seed -> (kind, detail)`` for ``seeds`` run by workers (a new one after each death or hang)."""
    results: dict[int, tuple[str, str]] = {}
    todo = list(seeds)
    while todo:
        proc = _start_worker(workdir, todo)
        assert proc.stdout is not None
        current, started = None, time.monotonic()
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, started + timeout - time.monotonic()))
            if not ready:  # the current run (or the worker's start) took too long
                proc.kill()
                proc.wait()
                if current is not None:
                    results[current] = ("hang", f"no answer in {timeout:.0f} s")
                    todo.remove(current)
                else:
                    for s in todo:
                        results[s] = ("hang", "the worker did not start")
                    todo = []
                break
            line = proc.stdout.readline()
            if not line:  # the worker died
                status = proc.wait()
                if current is not None:
                    err = _read(workdir / f"{current}.err")
                    kind = "signal" if status < 0 else "untyped"
                    results[current] = (kind, f"worker {'killed by signal ' + str(-status) if status < 0 else 'exited ' + str(status)}: {err[-300:]}")
                    todo.remove(current)
                else:
                    for s in todo:
                        results[s] = ("untyped", f"the worker failed to start (status {status})")
                    todo = []
                break
            word, seed, *rest = line.split()
            if word == "start":
                current, started = int(seed), time.monotonic()
            elif word == "end":
                s = int(seed)
                err = _read(workdir / f"{s}.err")
                results[s] = (classify(int(rest[0]), err), err.strip()[-400:])
                todo.remove(s)
                current, started = None, time.monotonic()
        proc.wait()
    return results


def _pythonpath() -> str:
    """The project first (a ``PYTHONPATH`` already set stays in front: another tree can be fuzzed)."""
    own = f"{ROOT}{os.pathsep}{ROOT / 'plugins'}"
    return f"{os.environ['PYTHONPATH']}{os.pathsep}{own}" if os.environ.get("PYTHONPATH") else own


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _run_subprocess(workdir: Path, seed: int, timeout: float) -> tuple[str, str]:
    command = json.loads((workdir / f"{seed}.cmd").read_text())
    argv = [a.format(ir=workdir / f"{seed}.ll", out=workdir / f"{seed}.out") for a in command]
    env = {**os.environ, "PYTHONPATH": _pythonpath()}
    try:
        proc = subprocess.run([sys.executable, "-m", "gpucompiler", *argv], cwd=workdir, env=env,
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "hang", f"no answer in {timeout:.0f} s"
    output = proc.stderr.decode(errors="replace") + proc.stdout.decode(errors="replace")
    return classify(proc.returncode, output), output.strip()[-400:]


def run(seeds: list[int], *, jobs: int = 1, timeout: float = 120.0, subprocesses: bool = False,
        batch: int = 100) -> dict[int, tuple[str, str, str]]:
    """``seed -> (kind, description, detail)`` of every seed."""
    files = corpus()
    with tempfile.TemporaryDirectory(prefix="gpuc-fuzz-ir-") as tmp:
        workdir = Path(tmp)
        described = {}
        for s in seeds:
            data, description, command = mutant(s, files)
            (workdir / f"{s}.ll").write_bytes(data)
            (workdir / f"{s}.cmd").write_text(json.dumps(command))
            described[s] = f"{description} | gpuc {' '.join(command[:1] + command[2:]).replace('-o {out}', '')}"
        out: dict[int, tuple[str, str]] = {}
        if subprocesses:
            for s in seeds:
                out[s] = _run_subprocess(workdir, s, timeout)
        else:
            chunks = [seeds[k:k + batch] for k in range(0, len(seeds), batch)]
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max(1, jobs)) as pool:
                for part in pool.map(lambda c: _run_batch(workdir, c, timeout), chunks):
                    out.update(part)
        return {s: (out[s][0], described[s], out[s][1]) for s in seeds}


def table(results) -> dict[str, int]:
    counts = collections.Counter(kind for kind, _, _ in results.values())
    return {k: counts.get(k, 0) for k in KINDS}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mutants", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="worker batches run at once")
    ap.add_argument("--batch", type=int, default=100, help="runs per worker batch")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds one run may take")
    ap.add_argument("--subprocesses", action="store_true", help="one `python -m gpucompiler` per run")
    ap.add_argument("--json", default=None, help="write the counts and every unacceptable run here")
    ap.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        _worker(Path(args.worker[0]), [int(s) for s in args.worker[1:]])
        return 0
    seeds = list(range(args.seed, args.seed + args.mutants))
    start = time.monotonic()
    results = run(seeds, jobs=args.jobs, timeout=args.timeout, subprocesses=args.subprocesses, batch=args.batch)
    counts = table(results)
    bad = {s: r for s, r in sorted(results.items()) if r[0] not in ("ok", "typed")}
    seconds = time.monotonic() - start
    print(json.dumps(counts), f"{seconds:.0f} s")
    for s, (kind, description, detail) in list(bad.items())[:40]:
        print(f"seed {s}: {kind}: {description}\n    {detail[-300:]}")
    if args.json:
        Path(args.json).write_text(json.dumps({"seeds": [seeds[0], seeds[-1]], "counts": counts,
                                               "seconds": round(seconds), "bad": {
                                                   str(s): list(r) for s, r in bad.items()}}, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
