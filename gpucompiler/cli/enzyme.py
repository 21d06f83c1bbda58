"""``gpuc enzyme``: differentiate the Enzyme calls of an LLVM IR file.

    gpuc enzyme grad.ll -o grad.diff.ll
    clang-19 -S -emit-llvm -O2 grad.c -o - | gpuc enzyme - > grad.diff.ll

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

from ..errors import ConfigError, IRParseError


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "enzyme", help="differentiate __enzyme_* calls in an LLVM IR file",
        description="Replace every Enzyme autodiff/fwddiff call in LLVM IR by the derivative it asks "
                    "for, and write the verified module.")
    parser.add_argument("input", metavar="IN.ll", help="LLVM IR text file ('-' reads stdin)")
    parser.add_argument("-o", dest="output", type=Path, help="output file (default: stdout)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from enzyme_plugin import differentiate

    from ..llvm.binding import parse_ir

    text = _read(args.input)
    try:
        parse_ir(text)
    except IRParseError as exc:
        raise _located(exc, args.input) from None
    out = differentiate(text)
    try:
        parse_ir(out)
    except IRParseError as exc:
        raise IRParseError(f"the differentiated module of {args.input} does not verify (an AD engine "
                           f"bug: please report it with the input): {exc}") from None
    if args.output is None:
        sys.stdout.write(out)
    else:
        args.output.write_text(out)
    return 0


def _read(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    try:
        return Path(name).read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read {name}: {exc.strerror}") from None


def _located(exc: IRParseError, name: str) -> IRParseError:
    where = f"{name}:{exc.line}: " if exc.line is not None else f"{name}: "
    located = IRParseError(where + exc.llvm_message, source_line=exc.source_line)
    located.line = exc.line
    return located
