"""``gpuc compile-ir``: compile an LLVM IR file through the pipeline.

    gpuc compile-ir kernel.ll --target ptx:sm_90 --emit asm --kernel -o kernel.ptx
    gpuc compile-ir lib.ll --target native --emit obj -O3 -o lib.o
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import ConfigError, IRParseError
from ..core import CompilerConfig, CompilerJob, LLVMSource
from ..llvm.binding import parse_ir
from ..pipeline import compile
from ..contain import contained
from ..targets import known_targets, parse_target

EMIT_CHOICES = ("llvm", "bc", "asm", "obj")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "compile-ir", help="compile an LLVM IR file for a target",
        description="Compile LLVM IR (.ll) through the gpucompiler pipeline and write one artifact.")
    parser.add_argument("input", type=Path, metavar="IN.ll", help="LLVM IR text file")
    parser.add_argument("--target", default="native",
                        help=f"one of {', '.join(known_targets())} (default: native)")
    parser.add_argument("--emit", choices=EMIT_CHOICES, default="llvm",
                        help="what to write: LLVM IR text, bitcode, assembly (PTX) or object code")
    parser.add_argument("-O", dest="opt_level", type=int, default=2, choices=range(4), metavar="N",
                        help="optimisation level 0-3 (default 2)")
    parser.add_argument("--plugin", dest="plugins", action="append", default=[], metavar="NAME",
                        help="enable a plugin (repeatable)")
    parser.add_argument("-o", dest="output", type=Path, help="output file (default: stdout)")
    parser.add_argument("--entry", help="entry function (default: the only or first defined function)")
    parser.add_argument("--kernel", action="store_true", help="compile the entry as a GPU kernel")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.emit in ("obj", "bc") and args.output is None:
        raise ConfigError(f"--emit {args.emit} writes binary data: give an output file with -o")
    text = read_ir(args.input)
    artifact = compile_text(text, args.input, target=parse_target(args.target), emit=args.emit, entry=args.entry,
                            kernel=args.kernel, opt_level=args.opt_level, plugins=tuple(args.plugins))
    write_artifact(artifact, args.output)
    return 0


def compile_text(text: str, path: Path, *, target, emit: str, entry: str | None, kernel: bool, opt_level: int,
                 plugins: tuple[str, ...]) -> bytes:
    """``text`` (read from ``path``) compiled through the pipeline for ``target``; the ``emit`` artifact.

    Shared by ``gpuc compile-ir`` and ``gpuc enzyme --target`` (one path: the plugins' stages run
    inside the pipeline). Everything that hands the text to LLVM, finding the entry included, runs in a
    child process (:mod:`gpucompiler.contain`): an LLVM abort or exit is a typed error."""
    config = CompilerConfig(target=target, kernel=kernel, opt_level=opt_level, plugins=plugins)

    def build() -> bytes:
        job = CompilerJob(LLVMSource(text, entry or _first_definition(text, path)), config)
        try:
            artifact = compile(job, emit=(emit,)).artifacts[emit]
        except IRParseError as exc:
            raise _located(exc, path) from None
        return artifact.encode() if isinstance(artifact, str) else artifact

    return contained(build, str(path))


def read_ir(path: Path | str) -> str:
    """The text of the LLVM IR file ``path`` (``-``: standard input); a file that cannot be read or is not
    UTF-8 is a typed error naming it (and the offset of the first bad byte)."""
    try:
        data = sys.stdin.buffer.read() if str(path) == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IRParseError(f"{'standard input' if str(path) == '-' else path}: byte {exc.start}: not UTF-8 text "
                           f"(0x{data[exc.start]:02x}); LLVM IR is UTF-8") from None


def write_artifact(artifact: bytes, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(artifact.decode())
    else:
        output.write_bytes(artifact)


def _first_definition(text: str, path: Path) -> str:
    try:
        ref = parse_ir(text)
    except IRParseError as exc:
        raise _located(exc, path) from None
    defined = [f.name for f in ref.functions if not f.is_declaration]
    if not defined:
        raise ConfigError(f"{path} defines no function to compile")
    return defined[0]


def _located(exc: IRParseError, path: Path) -> IRParseError:
    """The same parse error, prefixed with the file name."""
    where = f"{path}:{exc.line}: " if exc.line is not None else f"{path}: "
    located = IRParseError(where + exc.llvm_message, source_line=exc.source_line)
    located.line = exc.line
    return located
