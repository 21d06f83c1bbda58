#!/usr/bin/env python3
"""Regenerate tests/enzyme/fixtures/*.ll from tests/enzyme/c/*.c (and tests/enzyme/cuda/*.ll from
cuda/guide.cu) with clang-19.

    python tests/enzyme/regen_fixtures.py            # rewrite the fixtures
    python tests/enzyme/regen_fixtures.py --check    # fail if any differs

Each program is compiled for x86_64 Linux at -O0 (with optnone disabled, so
the AD engine's own optimisation may run) and at -O2, with -fno-ident and
relative paths so that the output is byte-for-byte reproducible. The
``; ModuleID`` / ``source_filename`` lines name the .c file only. CI has no
clang: the fixtures are committed and the tests read them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "c"
OUT = HERE / "fixtures"
sys.path.insert(0, str(HERE))
from enzyme_corpus import LEVELS, MATH_OPS, PROGRAMS  # noqa: E402

BASE_FLAGS = ["--target=x86_64-pc-linux-gnu", "-S", "-emit-llvm", "-fno-ident", "-g0",
              "-ffp-contract=on", "-fno-discard-value-names"]


def clang() -> str:
    path = os.environ.get("CLANG") or shutil.which("clang-19")
    if not path:
        sys.exit("regen_fixtures: clang-19 not found (set CLANG=/path/to/clang-19)")
    return path


def jobs() -> list[tuple[str, str, list[str]]]:
    """(fixture name, source file, extra flags) for every module."""
    out = [(name, src, flags) for name, (src, flags) in PROGRAMS.items()]
    out += [(f"math_{op}", "math_op.c", [f"-DEXPR={expr}"]) for op, (expr, _) in MATH_OPS.items()]
    return out


def compile_one(cc: str, src: str, level: list[str], flags: list[str]) -> str:
    # -g fixtures name the directory "." and system headers "SYS" (no absolute path)
    maps = [f"-fdebug-prefix-map={SRC}=.", "-fdebug-prefix-map=/usr=SYS"]
    proc = subprocess.run([cc, *BASE_FLAGS, *maps, *level, *flags, src, "-o", "-"], cwd=SRC,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"regen_fixtures: {src} {' '.join(flags)} failed:\n{proc.stderr}")
    return proc.stdout


#: the CUDA guide example: (fixture, clang flags), compiled from cuda/guide.cu in cuda/
CUDA = HERE / "cuda"
CUDA_JOBS = [
    ("guide.ptx.ll", ["--cuda-device-only", "-nocudainc", "-nocudalib", "--cuda-gpu-arch=sm_90",
                      "-Wno-unknown-cuda-version"]),
    ("guide.host.ll", ["-x", "c++", "--target=x86_64-pc-linux-gnu"]),
]


def compile_cuda(cc: str, flags: list[str]) -> str:
    proc = subprocess.run([cc, *flags, "-S", "-emit-llvm", "-fno-ident", "-g0", "-O2", "-fno-discard-value-names",
                           "guide.cu", "-o", "-"], cwd=CUDA, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"regen_fixtures: cuda/guide.cu {' '.join(flags)} failed:\n{proc.stderr}")
    return proc.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    args = ap.parse_args()
    cc = clang()
    OUT.mkdir(exist_ok=True)
    differ = []
    for name, src, flags in jobs():
        for level, level_flags in LEVELS.items():
            text = compile_one(cc, src, level_flags, flags)
            path = OUT / f"{name}.{level}.ll"
            if args.check:
                if not path.exists() or path.read_text() != text:
                    differ.append(path.name)
            else:
                path.write_text(text)
    for name, flags in CUDA_JOBS:
        text = compile_cuda(cc, flags)
        path = CUDA / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                differ.append(f"cuda/{name}")
        else:
            path.write_text(text)
    if differ:
        print("regen_fixtures: out of date:", ", ".join(differ))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
