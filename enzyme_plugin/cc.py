"""``gpuc cc``: compile C, C++ (or CUDA device code) with clang and differentiate its Enzyme calls at
Enzyme's place in the optimisation pipeline, in one command (as clang with Enzyme's plugin does)::

    gpuc cc -O2 grad.c -o grad.ll
    gpuc cc -O3 grad.cpp -I include -D N=8 -o grad.ll
    gpuc cc -O2 k.cu --clang-flag=--cuda-device-only --clang-flag=--cuda-gpu-arch=sm_80 -o k.ll

clang (``$CLANG``, else ``clang-19``) runs at ``-O<N>`` with its optimiser off (``-Xclang
-disable-llvm-optzns``; at ``-O0``, ``-Xclang -disable-O0-optnone``), then
:func:`enzyme_plugin.cpipeline.differentiate_in_pipeline` runs the early simplification, AD and the
level's pipeline. A clang that fails is a :class:`~gpucompiler.errors.ConfigError` with its messages.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from gpucompiler.errors import ConfigError
from gpucompiler.contain import contained

from .cpipeline import differentiate_in_pipeline_here


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "cc", help="compile C/C++ with clang, differentiating __enzyme_* calls inside the pipeline",
        description="clang at -O<N> with its optimiser off, then AD at Enzyme's place in LLVM's O<N> pipeline; "
                    "writes the optimised, differentiated LLVM IR.")
    parser.add_argument("input", metavar="FILE", type=Path, help="C, C++ or CUDA source file")
    parser.add_argument("-o", dest="output", type=Path, help="output LLVM IR file (default: stdout)")
    parser.add_argument("-O", dest="opt_level", type=int, default=2, choices=range(4), metavar="N",
                        help="optimisation level 0-3 (default 2)")
    parser.add_argument("-I", dest="includes", action="append", default=[], metavar="DIR", help="include directory")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                        help="preprocessor definition")
    parser.add_argument("-g", dest="debug", action="store_true", help="debug info (errors name the C line)")
    parser.add_argument("--clang-flag", dest="clang_flags", action="append", default=[], metavar="FLAG",
                        help="one more clang argument, e.g. --clang-flag=-std=c++17 (repeat for several)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    flags = [*(f"-I{d}" for d in args.includes), *(f"-D{d}" for d in args.defines), *args.clang_flags]
    text = clang_ir(args.input, args.opt_level, flags, debug=args.debug)
    out = contained(lambda: differentiate_in_pipeline_here(text, args.opt_level).encode(), str(args.input)).decode()
    if args.output is None:
        sys.stdout.write(out)
    else:
        args.output.write_text(out)
    return 0


def clang_command(source: Path, level: int, flags: list[str], debug: bool = False) -> list[str]:
    """The clang command line that writes ``source``'s LLVM IR with the level's attributes and no pass run."""
    cc = os.environ.get("CLANG") or shutil.which("clang-19") or shutil.which("clang")
    if cc is None:
        raise ConfigError("gpuc cc needs clang (clang-19): install it or set CLANG to its path")
    off = ("-Xclang", "-disable-O0-optnone") if level == 0 else ("-Xclang", "-disable-llvm-optzns")
    return [cc, f"-O{level}", *off, "-S", "-emit-llvm", "-g" if debug else "-g0", *flags, str(source), "-o", "-"]


def clang_ir(source: Path, level: int, flags: list[str], debug: bool = False) -> str:
    """``source`` compiled by :func:`clang_command`; a failing clang is a ConfigError with its messages."""
    proc = subprocess.run(clang_command(source, level, flags, debug), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ConfigError(f"clang could not compile {source}:\n{proc.stderr.strip()}")
    return proc.stdout
