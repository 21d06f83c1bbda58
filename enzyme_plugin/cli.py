"""``gpuc enzyme``: differentiate the Enzyme calls of an LLVM IR file (added by the plugin's
``add_commands`` hook).

    gpuc enzyme grad.ll -o grad.diff.ll
    gpuc enzyme kernel.ll --target ptx:sm_90 -o kernel.ptx     (differentiated, then compiled)
    gpuc enzyme hip.ll --target amdgpu:gfx90a --kernel --entry k --emit obj -o k.hsaco  (an AMD code object)
    clang-19 -S -emit-llvm -O2 grad.c -o - | gpuc enzyme - > grad.diff.ll
    clang-19 -S -emit-llvm -O3 -Xclang -disable-llvm-optzns grad.c -o - | gpuc enzyme -O3 - > grad.diff.ll

IR no LLVM pass ran on (detected, or ``--pre-opt``) is differentiated at Enzyme's place in the
``-O`` level's pipeline (:mod:`enzyme_plugin.cpipeline`); ``gpuc cc`` (:mod:`enzyme_plugin.cc`)
compiles C/C++ that way in one command.

Every ``__enzyme_autodiff*`` / ``__enzyme_fwddiff*`` / ``__enzyme_augmentfwd*``
/ ``__enzyme_reverse*`` call is replaced by a call to the derivative the
engine generates (Enzyme's C conventions, see docs/enzyme.md). The output is
verified by LLVM before it is written. Unsupported constructs (``ADError``)
and malformed IR exit with status 1 and the message.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpucompiler.cli import EMIT_CHOICES, compile_text, read_ir, write_artifact
from gpucompiler.errors import ConfigError, IRParseError
from gpucompiler.llvm import parse_ir
from gpucompiler.contain import contained
from gpucompiler.targets import known_targets, parse_target

from . import cc
from .cpipeline import differentiate_auto


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "enzyme", help="differentiate __enzyme_* calls in an LLVM IR file",
        description="Replace every Enzyme autodiff/fwddiff call in LLVM IR by the derivative it asks "
                    "for, and write the verified module.")
    parser.add_argument("input", metavar="IN.ll", help="LLVM IR text file ('-' reads stdin)")
    parser.add_argument("-o", dest="output", type=Path, help="output file (default: stdout)")
    parser.add_argument("--target", help="also compile the differentiated module for this target (one of "
                                         f"{', '.join(known_targets())}, as compile-ir): writes --emit instead of "
                                         "LLVM IR")
    parser.add_argument("--emit", choices=EMIT_CHOICES, default="asm",
                        help="with --target: what to write (default asm: PTX for ptx targets, GCN assembly "
                             "for amdgpu; obj: an AMD GPU's loadable code object)")
    parser.add_argument("-O", dest="opt_level", type=int, default=2, choices=range(4), metavar="N",
                        help="optimisation level 0-3 (default 2): of the pipeline AD runs in (IR no pass ran on) "
                             "and with --target")
    route = parser.add_mutually_exclusive_group()
    route.add_argument("--pre-opt", dest="pre_opt", action="store_const", const=True, default=None,
                       help="the input is IR no LLVM pass ran on (clang -O<N> -Xclang -disable-llvm-optzns): AD "
                            "runs at Enzyme's place in the O<N> pipeline (default: detected)")
    route.add_argument("--optimised", dest="pre_opt", action="store_const", const=False,
                       help="the input is optimised IR: AD, then O2 (default: detected)")
    parser.add_argument("--entry", help="with --target: entry function (default: the first defined one)")
    parser.add_argument("--kernel", action="store_true", help="with --target: compile the entry as a GPU kernel")
    parser.set_defaults(func=run)
    cc.add_parser(subparsers)


def run(args: argparse.Namespace) -> int:
    text = read_ir(args.input)
    if args.target is not None:
        return _compile(text, args)
    # LLVM may abort or exit on foreign IR: parsing, differentiating and verifying run in a child process
    out = contained(lambda: _differentiate(text, args.input, args.opt_level, args.pre_opt).encode(),
                    args.input).decode()
    if args.output is None:
        sys.stdout.write(out)
    else:
        args.output.write_text(out)
    return 0


def _differentiate(text: str, name: str, level: int = 2, pre_opt: bool | None = None) -> str:
    try:
        parse_ir(text)
    except IRParseError as exc:
        raise _located(exc, name) from None
    out = differentiate_auto(text, level, pre_opt)
    try:
        parse_ir(out)
    except IRParseError as exc:
        raise IRParseError(f"the differentiated module of {name} does not verify (an AD engine "
                           f"bug: please report it with the input): {exc}") from None
    return out


def _compile(text: str, args: argparse.Namespace) -> int:
    """The compile-ir path with the enzyme plugin: its ``ad`` stage differentiates the markers."""
    if args.emit in ("obj", "bc") and args.output is None:
        raise ConfigError(f"--emit {args.emit} writes binary data: give an output file with -o")
    artifact = compile_text(text, Path(args.input), target=parse_target(args.target), emit=args.emit,
                            entry=args.entry, kernel=args.kernel, opt_level=args.opt_level, plugins=("enzyme",))
    write_artifact(artifact, args.output)
    return 0


def _located(exc: IRParseError, name: str) -> IRParseError:
    where = f"{name}:{exc.line}: " if exc.line is not None else f"{name}: "
    located = IRParseError(where + exc.llvm_message, source_line=exc.source_line)
    located.line = exc.line
    return located
