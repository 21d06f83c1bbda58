"""Run Enzyme's own integration tests (a checkout given by path) through both routes and classify them.

    python scripts/enzyme_integration.py ENZYME/enzyme/test/Integration [-d ReverseMode -d ForwardMode ...]
        [--jobs 2] [--json results.jsonl] [--only NAME]

No test of Enzyme's is part of this repository: point the script at a checkout (``git clone
https://github.com/EnzymeAD/Enzyme``). For each ``.c``/``.cpp`` file the RUN lines give the clang flags and
the optimisation levels; each level is built two ways:

* ``optimised``: ``clang-19 <flags> -O<N> -S -emit-llvm`` then ``gpuc enzyme`` (AD on clang's output);
* ``pipeline``: ``gpuc cc -O<N>`` (AD at Enzyme's place in LLVM's pipeline).

The differentiated module becomes an object through llvmlite, is linked by clang-19 (``-fopenmp`` where the
test uses it) and run. Outcomes: ``pass``; ``wrong`` (the test's own checks fail: an abort, a non-zero exit,
or its FileCheck lines); ``typed`` (``gpuc`` refused with a typed error); ``crash`` (``gpuc`` died or
printed a traceback, the module did not link, the program crashed or hung); ``invalid`` (a wrong answer of a
test in :data:`INVALID`, whose checks contradict the derivative it asks for: counted, never as passing). A test whose source plain
clang cannot compile (Eigen, MPI, BLAS headers ...) or whose RUN lines expect a failure is left out.
A test counts as passing when every variant passes; otherwise it takes its worst variant's outcome
(wrong, then crash, then typed).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path

import llvmlite.binding as llvm

CLANG = os.environ.get("CLANG", "clang-19")
FILECHECK = os.environ.get("FILECHECK", "FileCheck-19")
DIRS = ("ReverseMode", "ForwardMode", "ForwardModeVector", "BatchMode")
ROUTES = ("optimised", "pipeline")
GPUC = (sys.executable, "-c", "import sys; from gpucompiler.cli import main; sys.exit(main())")
SEVERITY = ("wrong", "crash", "typed", "invalid")
#: tests whose own checks no derivative can satisfy -> why
INVALID = {
    "ForwardMode/omp/omp_crit.c": "calls __enzyme_fwddiff with a zero direction and checks that the direction "
                                  "became the gradient (a copy of the reverse-mode test); its RUN lines never run Enzyme",
}
_DROP = {"-S", "-emit-llvm", "-o", "-", "%s", "-disable-llvm-optzns", "-g"}


@dataclass(frozen=True)
class Spec:
    """What the RUN lines of one test ask for."""

    path: Path
    flags: tuple[str, ...]
    levels: tuple[int, ...]
    check_prefix: str | None
    openmp: bool


@dataclass
class Outcome:
    test: str
    route: str
    level: int
    result: str
    detail: str


def _run_lines(text: str) -> list[str]:
    return [line.split("RUN:", 1)[1] for line in text.splitlines() if line.lstrip().startswith("// RUN:")]


@functools.cache
def llvm_version() -> int:
    """The major version of ``CLANG`` (what the RUN lines' ``%llvmver`` stands for)."""
    out = subprocess.run([CLANG, "--version"], capture_output=True, text=True).stdout
    match = re.search(r"version (\d+)", out)
    return int(match.group(1)) if match else 0


_COMPARE = {"eq": int.__eq__, "ne": int.__ne__, "lt": int.__lt__, "le": int.__le__, "gt": int.__gt__,
            "ge": int.__ge__}


def _version_holds(line: str) -> bool:
    """Whether every ``[ %llvmver -OP N ]`` condition of a RUN line holds for this clang."""
    return all(_COMPARE[op](llvm_version(), int(n)) for op, n in re.findall(r"%llvmver -(\w\w) (\d+)", line))


def parse_spec(path: Path) -> Spec | None:
    """The flags, levels and FileCheck prefix of ``path``'s RUN lines; None when none of them runs the
    program expecting success."""
    lines = [line for line in _run_lines(path.read_text(errors="replace"))
             if ("%lli" in line or "%s.out" in line) and "not " not in line and "inactive-file" not in line
             and _version_holds(line)]
    if not lines:
        return None
    levels: list[int] = []
    flags: list[str] = []
    prefix = None
    for line in lines:
        words = shlex.split(line.replace(";", " ; "), posix=True)
        if "%clang" not in words and "%clang++" not in words:
            continue
        start = words.index("%clang") if "%clang" in words else words.index("%clang++")
        clang_words: list[str] = []
        for word in words[start + 1:]:
            if word in ("|", ";"):
                break
            clang_words.append(word)
        level = next((int(w[2]) for w in clang_words if re.fullmatch(r"-O[0-3]", w)), None)
        if level is None or level in levels:
            continue
        levels.append(level)
        skip = False
        for word in clang_words:
            if skip:
                skip = False
            elif word in ("-Xclang", "-mllvm"):
                skip = True
            elif not re.fullmatch(r"-O[0-3s]", word) and word not in _DROP and word[0] != "%" and word not in flags:
                flags.append(word)
        if "FileCheck" in line and prefix is None:
            match = re.search(r"--check-prefix[=\s]+(\S+)", line)
            prefix = match.group(1) if match else "CHECK"
    if not levels:
        return None
    return Spec(path, tuple(flags), tuple(sorted(levels)), prefix, "-fopenmp" in flags)


def _object(ir_text: str) -> bytes:
    module = llvm.parse_assembly(ir_text)
    module.verify()
    target = llvm.Target.from_triple(module.triple or llvm.get_process_triple())
    machine = target.create_target_machine(codemodel="default", reloc="pic", opt=2)
    return machine.emit_object(module)


def _typed(stderr: str) -> bool:
    return "Traceback" not in stderr and bool(re.search(r"^gpuc: error:", stderr, re.M))


def _variant(spec: Spec, route: str, level: int, root: Path) -> Outcome:
    name = str(spec.path.relative_to(root))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        diff = work / "diff.ll"
        if route == "optimised":
            ir = work / "in.ll"
            built = subprocess.run([CLANG, *spec.flags, f"-O{level}", "-S", "-emit-llvm", str(spec.path), "-o",
                                    str(ir)], capture_output=True, text=True)
            if built.returncode:
                return Outcome(name, route, level, "uncompiled", built.stderr[-400:])
            ad = [*GPUC, "enzyme", str(ir), "-o", str(diff)]
        else:
            ad = [*GPUC, "cc", f"-O{level}",
                  *[f"--clang-flag={f}" for f in spec.flags], str(spec.path), "-o", str(diff)]
        try:
            done = subprocess.run(ad, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            return Outcome(name, route, level, "crash", "gpuc hung (600 s)")
        if done.returncode:
            if "clang" in done.stderr and "error:" in done.stderr and "gpuc: error: clang" in done.stderr:
                return Outcome(name, route, level, "uncompiled", done.stderr[-400:])
            kind = "typed" if done.returncode == 1 and _typed(done.stderr) else "crash"
            return Outcome(name, route, level, kind, done.stderr.strip()[-600:])
        try:
            (work / "diff.o").write_bytes(_object(diff.read_text()))
        except Exception as exc:  # llvmlite's RuntimeError on IR it cannot verify or emit
            return Outcome(name, route, level, "crash", f"emit: {exc}"[:600])
        driver = CLANG.replace("clang", "clang++") if spec.path.suffix == ".cpp" else CLANG
        linked = subprocess.run([driver, *(["-fopenmp"] if spec.openmp else []), str(work / "diff.o"),
                                 "-o", str(work / "a.out"), "-lm"], capture_output=True, text=True)
        if linked.returncode:
            return Outcome(name, route, level, "crash", f"link: {linked.stderr.strip()[-400:]}")
        try:
            ran = subprocess.run([str(work / "a.out")], capture_output=True, text=True, timeout=120,
                                 cwd=spec.path.parent)
        except subprocess.TimeoutExpired:
            return Outcome(name, route, level, "crash", "the program hung (120 s)")
        if ran.returncode < 0 and ran.returncode != -signal.SIGABRT:
            return Outcome(name, route, level, "crash", f"signal {-ran.returncode}: {ran.stderr[-300:]}")
        if ran.returncode:
            if name in INVALID:
                return Outcome(name, route, level, "invalid", INVALID[name])
            return Outcome(name, route, level, "wrong", (ran.stderr or ran.stdout)[-400:])
        if spec.check_prefix:
            checked = subprocess.run([FILECHECK, str(spec.path), f"--check-prefix={spec.check_prefix}"],
                                     input=ran.stdout, capture_output=True, text=True)
            if checked.returncode:
                return Outcome(name, route, level, "wrong", checked.stderr[-400:])
        return Outcome(name, route, level, "pass", "")


def collect(root: Path, dirs: list[str], only: str | None) -> list[Spec]:
    specs = []
    for sub in dirs:
        for path in sorted((root / sub).rglob("*")):
            if path.suffix in (".c", ".cpp") and (only is None or only in path.name):
                spec = parse_spec(path)
                if spec is not None:
                    specs.append(spec)
    return specs


def summarise(outcomes: list[Outcome], routes: list[str]) -> str:
    """One row per directory and route: tests by worst outcome, and variants passing."""
    rows = ["| directory | route | tests | pass | wrong | crash | typed | invalid | variants passing |",
            "|---|---|---|---|---|---|---|---|---|"]
    by_test: dict[tuple[str, str, str], list[Outcome]] = {}
    for o in outcomes:
        if o.result != "uncompiled":
            by_test.setdefault((o.test.split("/")[0], o.route, o.test), []).append(o)
    for directory in sorted({k[0] for k in by_test}):
        for route in routes:
            tests = [v for k, v in by_test.items() if k[0] == directory and k[1] == route]
            worst = Counter(next((s for s in SEVERITY if any(o.result == s for o in v)), "pass") for v in tests)
            variants = [o for v in tests for o in v]
            rows.append(f"| {directory} | {route} | {len(tests)} | {worst['pass']} | {worst['wrong']} | "
                        f"{worst['crash']} | {worst['typed']} | {worst['invalid']} | "
                        f"{sum(o.result == 'pass' for o in variants)}/{len(variants)} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run Enzyme's integration tests through both routes and classify them.")
    parser.add_argument("root", type=Path, help="enzyme/test/Integration of an Enzyme checkout")
    parser.add_argument("-d", "--dir", action="append", help=f"subdirectory (default: {', '.join(DIRS)})")
    parser.add_argument("--route", action="append", choices=ROUTES, help="route (default: both)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write one JSON line per variant here")
    parser.add_argument("--only", help="only tests whose file name contains this")
    args = parser.parse_args(argv)
    routes: list[str] = args.route or list(ROUTES)
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    root = args.root.resolve()
    specs = collect(root, args.dir or list(DIRS), args.only)
    jobs = [(s, r, lv) for s in specs for r in routes for lv in s.levels]
    outcomes = []
    out = args.json.open("w") if args.json else None
    with ThreadPoolExecutor(args.jobs) as pool:
        for done in as_completed([pool.submit(_variant, s, r, lv, root) for s, r, lv in jobs]):
            o = done.result()
            outcomes.append(o)
            if out is not None:
                out.write(json.dumps(asdict(o)) + "\n")
                out.flush()
            if o.result != "pass":
                last = o.detail.strip().splitlines()[-1] if o.detail.strip() else ""
                print(f"{o.result:10} {o.route:9} O{o.level} {o.test}: {last}", flush=True)
    if out is not None:
        out.close()
    print(summarise(outcomes, routes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
