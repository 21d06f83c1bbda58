"""The ``gpuc`` command line.

Each subcommand lives in its own module with ``add_parser(subparsers)`` (which
sets ``func`` on the parser) so that the list below reads as the CLI's table
of contents.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import GPUCompilerError

SUBCOMMANDS = ("compile_ir", "plugins_cmd", "cache_cmd", "serve", "enzyme")


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = argparse.ArgumentParser(prog="gpuc", description="gpucompiler command line")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"{__name__}.{name}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except GPUCompilerError as exc:
        print(f"gpuc: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
