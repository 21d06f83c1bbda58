"""The rooms of enzyme_plugin/ import one way: a declared layer order, no cycles.

A *room* is a folder of ``enzyme_plugin/`` or one of its top-level modules. The import graph is read
from the source with ``ast`` (:mod:`import_graph`): imports inside functions, under ``if
TYPE_CHECKING:`` and a facade's ``_LAZY`` table all count. docs/architecture.md shows the same order.
"""

from __future__ import annotations

import re
from collections import defaultdict

import networkx as nx

from import_graph import ROOT, imports, module_name, room

PACKAGE = ROOT / "enzyme_plugin"

#: the layers, bottom first: a room may import only rooms listed before it (and itself)
LAYERS: tuple[tuple[str, ...], ...] = (
    ("values", "options", "locations"),                   # ground: Python values, typed options, error locations
    ("ad",),                                              # the AD engine on LLVM IR
    ("calls", "splitting", "modes", "activities"),        # the vocabulary: modes, activities, what compiled code sees
    ("language",),                                        # the language's AD rules (interpreter rules)
    ("passes",),                                          # the pipeline half: marker lowering, renames
    ("compiled",),                                        # autodiff from Python through a compiled entry
    ("split", "launches"),                                # split mode; launch tapes and host programs
    ("dispatch", "api", "derivatives", "interop"),        # the user API; PyTorch and JAX
    ("cpipeline", "cc", "cli", "ad_stage"),               # IR from clang; gpuc enzyme; the ad stage
    ("plugin",),                                          # the plugin: hooks, rules, stages
    ("contract", "__init__"),                             # the AD contract for plugin authors; the facade
)
ORDER = [r for layer in LAYERS for r in layer]

ENGINE = "ad"
"""The engine's modules among themselves are its own matter (their imports are one room's)."""

#: imports inside functions that reach another room, each a measured import-time saving
ALLOWED_FUNCTION_IMPORTS: dict[tuple[str, str], str] = {
    ("dispatch.py", "enzyme_plugin.launches.programs"): "import time: NumPy, the kernel language and the launch "
                                                        "tape (~0.9 s), only for a host function naming a device "
                                                        "space",
    ("plugin.py", "enzyme_plugin.cli"): "import time: gpuc's and the plugin's command-line modules (~11 ms without "
                                        "__pycache__), only when gpuc builds its parser",
    ("plugin.py", "enzyme_plugin.passes.inttoptr"): "import time: ctypes.util and subprocess (~4 ms), only for a "
                                                    "module that calls a constant address",
}


def _graph():
    """``(room edges with where, module edges, function-level imports)`` of enzyme_plugin."""
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in files}
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    module_edges: set[tuple[str, str]] = set()
    function_level = []
    for path in files:
        rel = path.relative_to(PACKAGE).as_posix()
        here = module_name(path)
        for module, line, in_function in imports(path, modules):
            if module.split(".")[0] != "enzyme_plugin":
                continue
            if in_function:
                function_level.append((rel, module, line))
            if room(module) != room(here):
                edges[(room(here), room(module))].append(f"{rel}:{line}")
            if module != here and module in modules:
                module_edges.add((here, module))
    return edges, module_edges, function_level


def test_every_room_is_in_the_declared_layers():
    rooms = {room(module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert sorted(rooms - set(ORDER)) == [], "add new rooms to LAYERS (and docs/architecture.md)"
    assert sorted(set(ORDER) - rooms) == [], "LAYERS names rooms that do not exist"
    assert len(ORDER) == len(set(ORDER))


def test_rooms_import_only_rooms_below_them():
    edges, _, _ = _graph()
    rank = {r: k for k, r in enumerate(ORDER)}
    upward = sorted(f"{a} -> {b} ({', '.join(where)})" for (a, b), where in edges.items() if rank[b] > rank[a])
    assert upward == []


def test_no_import_cycle_between_rooms():
    edges, _, _ = _graph()
    assert list(nx.simple_cycles(nx.DiGraph(list(edges)))) == []


def test_no_import_cycle_between_the_modules_outside_the_engine():
    """Within a room too (a package's modules importing each other, through its ``__init__`` or not)."""
    _, module_edges, _ = _graph()
    outside = [(a, b) for a, b in module_edges if ENGINE not in (room(a), room(b))]
    assert list(nx.simple_cycles(nx.DiGraph(outside))) == []


def test_function_level_imports_outside_the_engine_are_only_the_listed_ones():
    _, _, function_level = _graph()
    found = {(rel, module) for rel, module, _ in function_level if not rel.startswith(f"{ENGINE}/")}
    assert sorted(found - set(ALLOWED_FUNCTION_IMPORTS)) == [], "import at module level, from a room below"
    assert sorted(set(ALLOWED_FUNCTION_IMPORTS) - found) == [], "listed function-level imports that no longer exist"


def test_the_walk_sees_upward_imports_in_functions_under_type_checking_and_in_lazy_tables():
    """The checker itself: an upward import in each form is an edge (it cannot pass vacuously)."""
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .split import Tape\n"
              "def f():\n    from .launches import programs\n_LAZY = {'autodiff': '.dispatch'}\n")
    known = {"enzyme_plugin.split", "enzyme_plugin.launches", "enzyme_plugin.launches.programs"}
    found = list(imports(PACKAGE / "modes.py", known, source))
    assert found == [("typing", 1, False), ("enzyme_plugin.split", 3, False),
                     ("enzyme_plugin.launches.programs", 5, True), ("enzyme_plugin.dispatch", 6, False)]


def test_the_rules_and_the_vocabulary_import_nothing_that_differentiates_from_python():
    """The language's rules, the vocabulary and the passes know ``autodiff`` and the thunks by what compiled
    code sees (:mod:`enzyme_plugin.calls`, :mod:`enzyme_plugin.splitting`), not the modules that run them."""
    edges, _, _ = _graph()
    below = {r for layer in LAYERS[:LAYERS.index(("passes",)) + 1] for r in layer}
    above = {"compiled", "split", "launches", "dispatch", "api", "plugin", "__init__"}
    assert sorted(f"{a} -> {b}" for a, b in edges if a in below and b in above) == []


def test_architecture_doc_shows_the_same_layers():
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = text.split("### The layers of enzyme_plugin", 1)[1].split("```", 2)[1]
    shown = [tuple(r.rstrip("/") for r in re.split(r"\s{3,}", line.strip())[0].split())
             for line in block.strip().splitlines()]
    assert shown == [tuple(layer) for layer in reversed(LAYERS)]
