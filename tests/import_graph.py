"""The import graph of a package read from its source with ``ast``, for the layer tests
(``tests/test_layers.py`` for gpucompiler, ``tests/test_enzyme_layers.py`` for enzyme_plugin).

Every ``import`` and ``from ... import`` counts, at any depth (inside functions too, flagged); imports
under ``if TYPE_CHECKING:`` are module-level imports like any other (an annotation naming a room above
is the same dependency); a package facade's ``_LAZY`` table of names loaded on first use
(:mod:`gpucompiler.lazy`) counts as the module-level imports it stands for.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The repository: module names are paths relative to it."""


def module_name(path: Path) -> str:
    """``gpucompiler/llvm/__init__.py`` -> ``gpucompiler.llvm``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room(module: str) -> str:
    """The room of a module: its package's folder or top-level module (``__init__`` for the package)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _lazy_table(node: ast.AST) -> bool:
    """``_LAZY = {...}``: the names a package facade loads on first use (:mod:`gpucompiler.lazy`)."""
    return (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
            and [ast.unparse(t) for t in node.targets] == ["_LAZY"])


def imports(path: Path, modules: set[str], source: str | None = None) -> Iterator[tuple[str, int, bool]]:
    """``(imported module, line, inside a function)`` for every runtime import of ``path``; ``modules``: the
    known module names (``from package import submodule`` is an import of the submodule)."""
    name = module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]

    def visit(node: ast.AST, in_function: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name, child.lineno, in_function
            elif isinstance(child, ast.ImportFrom):
                base = package[:len(package) - child.level + 1] if child.level else []
                module = ".".join(base + ([child.module] if child.module else []))
                for alias in child.names:
                    sub = f"{module}.{alias.name}"
                    yield (sub if sub in modules else module), child.lineno, in_function
            elif _lazy_table(child):
                assert isinstance(child, ast.Assign) and isinstance(child.value, ast.Dict)
                for value in child.value.values:
                    assert isinstance(value, ast.Constant) and isinstance(value.value, str)
                    relative = value.value.lstrip(".")
                    base = package[:len(package) - (len(value.value) - len(relative)) + 1]
                    yield ".".join([*base, relative]), child.lineno, in_function
            else:
                yield from visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    yield from visit(ast.parse(path.read_text() if source is None else source), False)


__all__ = ["ROOT", "imports", "module_name", "room"]
