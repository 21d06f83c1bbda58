"""The rooms of gpucompiler/ import one way: a declared layer order, no cycles, no plugin imports.

A *room* is a folder of ``gpucompiler/`` or one of its top-level modules, or a module of a folder that
sits on another layer than the rest of it (``SUB_ROOMS``: ``cache.default``).
The import graph is read from the source with ``ast`` (every ``import`` and
``from ... import``, at any depth; imports under ``if TYPE_CHECKING:`` count
as module-level imports: an annotation that names a room above is the same
dependency; a package's ``_LAZY`` table of names loaded on first use,
:mod:`gpucompiler.lazy`, counts as the module-level imports it stands for).
docs/architecture.md shows the same order.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from collections import defaultdict
from pathlib import Path

import networkx as nx

from import_graph import imports as _imports  # the walk, shared with tests/test_enzyme_layers.py

PACKAGE = Path(__file__).resolve().parent.parent / "gpucompiler"

#: the layers, bottom first: a room may import only rooms listed before it (and itself)
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "version", "lazy", "pristine", "types", "hashing", "settings", "toolchain", "arguments", "graphs", "signatures", "reference", "contain"),  # ground
    ("llvm", "module"),                          # the LLVM IR model; a module in its three forms
    ("core",),                                   # the contract: Target, CompilerConfig, CompilerJob, Source
    ("interface", "discovery", "plugin"),        # the plugin hooks; installed entry points; the registry
    ("frontend", "interpreter"),                 # Python source -> SSA -> types (the rule machinery)
    ("language",),                               # the language's rules: Python, math, NumPy
    ("codegen",),                                # typed SSA -> LLVM IR
    ("device",),                                 # the kernel language (rules for both devices)
    ("targets",),                                # the targets: each one's overlays, lowering, checks
    ("source", "identity", "cache"),             # Python job sources; job keys; cache tiers
    ("stages", "pipeline"),                      # the driver
    ("service", "cache.default", "cached"),      # the compile service; the default cache, wired (its former path)
    ("runtime",),                                # loading and launching: CPU JIT, grid emulation, CUDA
    ("kernel", "jit", "parallel", "ufunc", "cli", "__main__", "__init__"),  # user API and command line
)
ORDER = [room for layer in LAYERS for room in layer]
#: modules that are rooms of their own inside a folder (above the folder's other modules)
SUB_ROOMS = ("cache.default",)

#: imports inside functions, each an optional dependency or a measured import-time saving
ALLOWED_FUNCTION_IMPORTS: dict[tuple[str, str], str] = {
    ("cache/tiers.py", "redis"): "optional dependency",
    ("service/client.py", "httpx"): "optional dependency",
    ("cache/default.py", "gpucompiler.service.client"): "optional dependency (httpx)",
    ("cli/serve.py", "uvicorn"): "optional dependency",
    ("cli/serve.py", "gpucompiler.service.app"): "optional dependency (starlette)",
    ("runtime/cuda.py", "cuda.bindings"): "optional dependency",
    ("runtime/cuda.py", "cuda"): "optional dependency",
    ("runtime/launch_entry.py", "gpucompiler.codegen.launchentry"): "import time: llvmlite's IR builder, for the "
                                                                     "first native launch entry, not a launch",
    ("runtime/launch_entry.py", "gpucompiler.runtime.cpu"): "import time: llvmlite's library (~20 ms), for the "
                                                            "first native launch entry, not a launch",
    ("arguments.py", "numpy"): "import time: NumPy (~240 ms), only for array arguments",
    ("runtime/owned.py", "numpy"): "import time: NumPy (~240 ms), only for returned arrays",
    ("parallel.py", "numpy"): "import time: NumPy (~240 ms), only for device reductions",
    ("language/numpy/ufuncs.py", "numpy"): "import time: NumPy (~240 ms), only when NumPy code is compiled",
    ("jit.py", "tempfile"): "import time: tempfile, shutil, random, bz2 and lzma (~3 ms), only for a stage's IR",
    ("jit.py", "llvmlite.binding"): "import time: llvmlite's library (~20 ms), for a tiered compile's warm-up, not "
                                    "a cache hit loading its shared object",
    ("source/spec.py", "gpucompiler.language"): "import time: the language's rules (~11 ms) register at the first "
                                                "inference, not on a cache hit",
    ("cache/core.py", "gpucompiler.cache.serialisable"): "import time: the checks and the module facts' walk "
                                                        "(~1.3 ms) load at the first compile, not on a cache hit",
    ("targets/native.py", "gpucompiler.llvm.vector_variants"): "import time: its patterns (~1 ms), for a "
                                                               "compile's math calls, not a cache hit",
    ("targets/native.py", "llvmlite.binding"): "import time: llvmlite's library (~20 ms), for a compile or the "
                                               "LLJIT, not a cache hit loading its shared object",
    ("targets/native.py", "gpucompiler.llvm.binding"): "import time: llvmlite's library (~20 ms), for a compile, "
                                                       "not a cache hit loading its shared object",
    ("targets/libmvec.py", "llvmlite.binding"): "import time: llvmlite's library (~20 ms), for a compile or the "
                                                "LLJIT, not a cache hit loading its shared object",
    ("cache/default.py", "gpucompiler.targets.sharedlink"): "import time: the linker's subprocess and files "
                                                            "(~3 ms), for a compile, not a cache hit",
    ("targets/native.py", "gpucompiler.targets.hostblas"): "import time: glob and the BLAS names (~0.3 ms), for a "
                                                          "symbol LLVM did not find",
    ("targets/libmvec.py", "gpucompiler.core.mathfns"): "import time: the math table (~0.8 ms), for a compile, "
                                                       "not a cache hit (which asks only loaded())",
    ("targets/libmvec.py", "gpucompiler.llvm.vector_variants"): "import time: its patterns (~1 ms), for a compile, "
                                                                "not a cache hit",
    ("identity/documents.py", "gpucompiler.identity.keys"): "import time: the plugin registry and the plugins' "
                                                           "identity (~1.5 ms), for a key that names plugins",
    ("identity/llvmversion.py", "gpucompiler.llvm.binding"): "import time: llvmlite's library (~20 ms), for a "
                                                            "key's LLVM version without its memo",
    ("targets/ptx.py", "gpucompiler.targets.ptx_codegen"): "import time: the IR model, libdevice's linking, the "
                                                          "atomics' passes and LLVM (~8 ms, ~28 with llvmlite's "
                                                          "library), for a compile, not a launch from the cache",
    ("targets/ptx.py", "gpucompiler.targets.ptx_overlays"): "import time: the kernel language's rules (~17 ms), "
                                                           "for inference, not a launch from the cache",
    ("targets/ptx.py", "gpucompiler.targets.libdevice"): "import time: llvmlite's library and the math table "
                                                        "(~22 ms), for the AD engine's math names",
    ("targets/ptx.py", "gpucompiler.llvm.binding"): "import time: llvmlite's library (~20 ms), for the message of "
                                                   "an unknown PTX ISA version",
    ("targets/sharedlink.py", "subprocess"): "import time: subprocess and selectors (~3 ms, not loaded by a "
                                              "compile), on the thread that links after the first call",
    ("targets/ptx_codegen.py", "subprocess"): "import time: subprocess, signal, selectors, locale (~3 ms), for "
                                              "ptxas's check, not a compile",
    ("cache/report.py", "gpucompiler.plugin"): "import time: the plugin registry (~0.8 ms), for a compile's or a "
                                               "read report, not a cache hit",
    ("cache/core.py", "gpucompiler.cache.trust"): "import time: hmac and the MACs (~0.3 ms), with a shared tier's "
                                                  "secret, not for the private disk alone",
    ("cache/tiers.py", "fcntl"): "import time: ~0.25 ms, for a miss's compile lock, not a cache hit",
    ("cache/tiers.py", "gpucompiler.cache.fleet"): "import time: the fleet's breaker and lease (~0.15 ms), with a "
                                                   "Redis tier only",
    ("cache/core.py", "gpucompiler.llvm.binding"): "import time: llvmlite's library (~20 ms), for a compile's "
                                                  "address bindings, not a GPU kernel's hit",
    ("cache/core.py", "gpucompiler.module"): "import time: the IR module's facade (~0.1 ms), when a hit's module "
                                             "is read, not on the hit",
    ("runtime/grid.py", "gpucompiler.codegen"): "import time: the code generator, the interpreter and the frontend "
                                                "(~10 ms), for a compile, not a launch served from the cache",
    ("cache/default.py", "gpucompiler.pipeline"): "import time: the pipeline's modules (~40 ms) load at the first compile, "
                                           "not on a cache hit",
    ("discovery.py", "importlib.metadata"): "import time: importlib.metadata (~18 ms), for distributions or a "
                                            "METADATA its own read does not take",
    ("llvm/instructions.py", "gpucompiler.llvm.module"): "the block class of the module that holds instructions",
    ("llvm/module.py", "gpucompiler.llvm.clone"): "the cloner works on the module's classes",
    ("llvm/module.py", "gpucompiler.llvm.printer"): "the printer works on the module's classes",
}
#: the user API modules whose decorators run at import: they import the compiler (frontend, interpreter,
#: code generation, cache, LLVM: ~150 ms of ``import gpucompiler``, docs/benchmarks.md) in the methods
#: that compile, so decorating costs only their module-level imports (``tests/test_imports.py``)
FIRST_COMPILE_IMPORTS = ("jit.py", "kernel.py")
PLUGIN_PACKAGES = ("enzyme_plugin", "gpucompiler_plugins")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _room(module: str) -> str:
    parts = module.split(".")
    sub = ".".join(parts[1:3])
    return sub if sub in SUB_ROOMS else parts[1] if len(parts) > 1 else "__init__"


def _graph():
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {_module_name(p) for p in files}
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    function_level, plugin_imports = [], []
    for path in files:
        rel = path.relative_to(PACKAGE).as_posix()
        here = _room(_module_name(path))
        for module, line, in_function in _imports(path, modules):
            if module.split(".")[0] in PLUGIN_PACKAGES:
                plugin_imports.append(f"{rel}:{line} imports {module}")
            if in_function:
                function_level.append((rel, module, line))
            if module.split(".")[0] == "gpucompiler" and _room(module) != here:
                edges[(here, _room(module))].append(f"{rel}:{line}")
    return edges, function_level, plugin_imports


def test_every_room_is_in_the_declared_layers():
    rooms = {_room(_module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert sorted(rooms - set(ORDER)) == [], "add new rooms to LAYERS (and docs/architecture.md)"
    assert sorted(set(ORDER) - rooms) == [], "LAYERS names rooms that do not exist"
    assert len(ORDER) == len(set(ORDER))


def test_rooms_import_only_rooms_below_them():
    edges, _, _ = _graph()
    rank = {room: k for k, room in enumerate(ORDER)}
    upward = sorted(f"{a} -> {b} ({', '.join(where)})" for (a, b), where in edges.items() if rank[b] > rank[a])
    assert upward == []


def test_no_import_cycle_between_rooms():
    edges, _, _ = _graph()
    cycles = list(nx.simple_cycles(nx.DiGraph(list(edges))))
    assert cycles == []


def test_gpucompiler_imports_nothing_from_the_plugins():
    _, _, plugin_imports = _graph()
    assert plugin_imports == []


def test_function_level_imports_are_only_the_listed_ones():
    _, function_level, _ = _graph()
    unlisted = sorted(f"{rel}:{line} imports {module}" for rel, module, line in function_level
                      if (rel, module) not in ALLOWED_FUNCTION_IMPORTS
                      and not (rel in FIRST_COMPILE_IMPORTS and module.startswith("gpucompiler.")))
    assert unlisted == [], "import at module level; only optional dependencies and measured " \
                           "import-time savings may be imported in a function (list them with the reason)"
    stale = sorted(set(ALLOWED_FUNCTION_IMPORTS) - {(rel, module) for rel, module, _ in function_level})
    assert stale == [], "listed function-level imports that no longer exist"


def test_the_walk_sees_an_upward_import_inside_a_function():
    """The checker itself: it finds a function-level upward import (it cannot pass vacuously)."""
    source = "def f():\n    from ..pipeline import compile\n"
    found = list(_imports(PACKAGE / "llvm" / "fake.py", {"gpucompiler.pipeline"}, source))
    assert found == [("gpucompiler.pipeline", 2, True)]


def test_the_walk_counts_an_import_under_type_checking():
    """An annotation-only import (``if TYPE_CHECKING:``) of a room above is an upward import too."""
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..targets.ptx import PTXTarget\n"
    found = list(_imports(PACKAGE / "core" / "fake.py", {"gpucompiler.targets.ptx"}, source))
    assert found == [("typing", 1, False), ("gpucompiler.targets.ptx", 3, False)]


def test_the_core_imports_no_room_above_it():
    """The contract's types (Target, CompilerConfig, CompilerJob, Source) sit at the bottom: the core imports
    only the ground and the IR model, annotations included."""
    edges, _, _ = _graph()
    allowed = {room for layer in LAYERS[:LAYERS.index(("core",))] for room in layer}
    assert sorted(b for (a, b) in edges if a == "core" and b not in allowed) == []


def test_the_walk_reads_a_lazy_table_as_module_level_imports():
    """A facade's ``_LAZY`` names are imports of the modules they name (an upward one is caught)."""
    source = "_LAZY = {'compile': '..pipeline', 'Interpreter': '..interpreter.infer'}\n"
    found = list(_imports(PACKAGE / "llvm" / "fake.py", set(), source))
    assert found == [("gpucompiler.pipeline", 1, False), ("gpucompiler.interpreter.infer", 1, False)]
    found = list(_imports(PACKAGE / "llvm" / "__init__.py", set(), "_LAZY = {'parse': '.parser'}\n"))
    assert found == [("gpucompiler.llvm.parser", 1, False)]


def test_architecture_doc_shows_the_same_layers():
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    block = text.split("## Layers", 1)[1].split("```", 2)[1]
    shown = [tuple(r.rstrip("/") for r in re.split(r"\s{3,}", line.strip())[0].split())
             for line in block.strip().splitlines()]
    assert shown == [tuple(layer) for layer in reversed(LAYERS)]


def test_plugins_import_only_what_the_gpucompiler_facades_export():
    """enzyme_plugin and gpucompiler_plugins use the public API: modules, or names in their ``__all__``."""
    root = PACKAGE.parent
    private = []
    for path in [*(root / "enzyme_plugin").rglob("*.py"), *(root / "plugins" / "gpucompiler_plugins").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                    and node.module.split(".")[0] == "gpucompiler"):
                continue
            exported = getattr(importlib.import_module(node.module), "__all__", ())
            for alias in node.names:
                if alias.name not in exported and not _is_module(f"{node.module}.{alias.name}"):
                    private.append(f"{path.relative_to(root)}:{node.lineno} {node.module}.{alias.name}")
    assert private == [], "export the name from the package facade (its __all__) or use a public one"


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a name inside a module that is not a package
        return False
