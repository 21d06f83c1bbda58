"""The ``gpuc`` command line.

Each subcommand lives in its own module with ``add_parser(subparsers)`` (which
sets ``func`` on the parser) so that the list below reads as the CLI's table
of contents. Plugins add their own subcommands through the ``add_commands``
hook (``gpuc enzyme`` comes from the Enzyme plugin).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import llvmlite

from .. import plugin
from ..errors import GPUCompilerError, PluginError
from ..version import __version__
from . import cache_cmd, compile_ir, plugins_cmd, serve
from .compile_ir import EMIT_CHOICES, compile_text, read_ir, write_artifact

SUBCOMMANDS = (compile_ir, plugins_cmd, cache_cmd, serve)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``gpuc``: the built-in subcommands, then those of every installed plugin (one that fails
    to load, or whose ``add_commands`` fails, is left out with a RuntimeWarning naming it)."""
    parser = argparse.ArgumentParser(prog="gpuc", description="gpucompiler command line")
    parser.add_argument("--version", action="version",
                        version=f"gpuc {__version__} (llvmlite {llvmlite.__version__}, Python {sys.version.split()[0]})")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.add_parser(sub)
    for name, p in plugin.discovered().items():
        try:
            plugin.hook(p, "add_commands")(sub)
        except Exception as exc:  # one plugin's bug leaves the other commands usable
            error = PluginError(name, "add_commands", "add_commands", exc, at=plugin.plugin_location(exc, p))
            warnings.warn(f"{error}; its subcommands are left out", RuntimeWarning, stacklevel=2)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except BrokenPipeError:  # `gpuc plugins | head`: the reader left; say nothing, as coreutils do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not fail again
        return 141
    except GPUCompilerError as exc:
        print(f"gpuc: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # an output file that cannot be written, a directory that cannot be read
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"gpuc: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1


__all__ = ["EMIT_CHOICES", "build_parser", "compile_text", "main", "read_ir", "write_artifact"]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
