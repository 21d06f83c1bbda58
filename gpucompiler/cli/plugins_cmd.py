"""``gpuc plugins``: the discovered plugins, their versions, and the stages and markers they hook.

    gpuc plugins          a table, one row per callback
    gpuc plugins --json   the same as JSON: [{"name", "version", "callbacks": [...]}, ...]; a plugin
                          that fails to load: {"name", "version": null, "callbacks": [], "error"}
"""

from __future__ import annotations

import argparse
import json

from .. import plugin as gp


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "plugins", help="list discovered plugins and the stages they hook",
        description="List plugins (entry-point group gpucompiler.plugins), their versions, "
                    "and each callback's hook point, order and markers, in running order.")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(func=run)


def describe() -> list[dict]:
    """One entry per discovered plugin, sorted by name; callbacks in declaration order. An installed
    plugin that fails to load has ``"error"`` (its name, entry point and import error) and no callbacks."""
    found = {name: {"name": name, "version": p.version,
                    "callbacks": [{"callback": c.name, "stage": c.point, "order": c.order,
                                   "markers": list(c.markers)} for c in gp.declared_callbacks(p)]}
             for name, p in gp.discovered().items()}
    found.update({name: {"name": name, "version": None, "callbacks": [], "error": str(error)}
                  for name, error in gp.failed().items()})
    return [found[name] for name in sorted(found)]


def table(plugins: list[dict]) -> str:
    """Plain-text table: plugin, version, hook point, callback, order, markers."""
    header = ("plugin", "version", "stage", "callback", "order", "markers")
    rows = [(p["name"], p["version"], c["stage"], c["callback"], str(c["order"]), ",".join(c["markers"]) or "-")
            for p in plugins if "error" not in p
            for c in p["callbacks"] or [{"stage": "-", "callback": "-", "order": "-", "markers": []}]]
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in (header, *rows)]
    return "\n".join(lines + [f"{p['name']}: failed to load: {p['error']}" for p in plugins if "error" in p])


def run(args: argparse.Namespace) -> int:
    plugins = describe()
    print(json.dumps(plugins, indent=2) if args.json else table(plugins))
    return 0
