"""Whether an installed plugin's class defines ``cache_settings``, read from its package's source.

A key names a plugin's settings only when its class defines the hook
(:func:`.keys.installed_identity`); to know that without importing the
plugin, the class statement the entry point names is read (``ast``) and its
bases followed through the package's own modules. The answer is "no" only
when every step is plain:

* no ``.py`` file of the plugin's top-level package spells ``cache_settings``
  (so no class of it defines the hook, and no code of it assigns one by name);
* the entry point names a class defined by one ``class`` statement (or
  imported by ``from <module of the package> import``, followed), without
  decorators or keywords (a metaclass could add methods);
* each base is gpucompiler's ``Plugin`` (``gp.Plugin`` of ``import
  gpucompiler.plugin as gp``, or ``Plugin`` imported from
  ``gpucompiler.plugin`` or ``gpucompiler.interface``) or, by the same rules,
  a class of the package.

Anything else (a base from another package, a computed name, a syntax the
walk does not follow, ``ast`` failing as it can in threads that foreign code
created on CPython 3.11) is "not known", and the plugin is imported to ask it.
"""

from __future__ import annotations

import ast
import os

HOOK = "cache_settings"
_PLUGIN_MODULES = ("gpucompiler.plugin", "gpucompiler.interface")


def defines_no_settings(top: str, top_dir: str, files: list[tuple[str, str]], module: str, attr: str) -> bool:
    """Whether the class ``attr`` of ``module`` (of package ``top`` at ``top_dir``, whose source
    files are ``files``: ``(relative path, path)``) is known not to define :data:`HOOK`."""
    try:
        for _, path in files:
            with open(path, "rb") as fh:
                if HOOK.encode() in fh.read():
                    return False
        return _plain_class(top, top_dir, module, attr, set())
    except (OSError, SyntaxError, ValueError, SystemError, RecursionError):
        return False


def _source(top_dir: str, module: str) -> str | None:
    base = os.path.join(top_dir, *module.split(".")[1:])
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(path):
            return path
    return None


def _plain_class(top: str, top_dir: str, module: str, name: str, seen: set[tuple[str, str]]) -> bool:
    """Whether ``module``'s top-level ``name`` is a class of the package without the hook."""
    if (module, name) in seen or (module != top and not module.startswith(top + ".")):
        return False
    seen.add((module, name))
    path = _source(top_dir, module)
    if path is None:
        return False
    with open(path, "rb") as fh:
        tree = ast.parse(fh.read(), path)
    package = module if os.path.basename(path) == "__init__.py" else module.rpartition(".")[0]
    node = _binding(tree, name)
    if isinstance(node, ast.ImportFrom):  # a re-export: followed into the package
        source, original = _imported(node, name, package)
        return source is not None and _plain_class(top, top_dir, source, original, seen)
    if not isinstance(node, ast.ClassDef) or node.decorator_list or node.keywords:
        return False
    return all(_plain_base(top, top_dir, tree, module, package, base, seen) for base in node.bases)


def _plain_base(top: str, top_dir: str, tree: ast.Module, module: str, package: str, base: ast.expr,
                seen: set[tuple[str, str]]) -> bool:
    """Whether ``base`` (of a class statement of ``tree``, the source of ``module``) is gpucompiler's
    ``Plugin`` or a class of the package without the hook."""
    if isinstance(base, ast.Attribute):  # gp.Plugin, gpucompiler.plugin.Plugin
        dotted = _dotted(base.value)
        return base.attr == "Plugin" and dotted is not None and _names_module(tree, dotted, package)
    if not isinstance(base, ast.Name):
        return False
    node = _binding(tree, base.id)
    if isinstance(node, ast.ImportFrom):
        source, original = _imported(node, base.id, package)
        if source in _PLUGIN_MODULES:
            return original == "Plugin"
        return source is not None and _plain_class(top, top_dir, source, original, seen)
    return isinstance(node, ast.ClassDef) and _plain_class(top, top_dir, module, base.id, seen)


def _binding(tree: ast.Module, name: str) -> ast.stmt | None:
    """The one statement of ``tree``'s top level that binds ``name``; None if it is bound elsewhere
    too (twice, inside a block, as a local of a function: not followed) or not at all."""
    nodes = [node for node in ast.walk(tree) if name in _bound(node)]
    return nodes[0] if len(nodes) == 1 and isinstance(nodes[0], ast.stmt) and nodes[0] in tree.body else None


def _bound(node: ast.AST) -> list[str]:
    """The names ``node`` binds in its scope (a class, a function, an import, an assignment target...)."""
    if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).partition(".")[0] for a in node.names]
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return [node.id]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    named = getattr(node, "name", None) if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) else None
    rest = getattr(node, "rest", None) if isinstance(node, ast.MatchMapping) else None
    return [n for n in (named, rest) if isinstance(n, str)]


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def _names_module(tree: ast.Module, dotted: str, package: str) -> bool:
    """Whether ``dotted`` (``gp``, ``gpucompiler.plugin``) is, in ``tree``, a module holding ``Plugin``."""
    node = _binding(tree, dotted.partition(".")[0])
    if isinstance(node, ast.ImportFrom):  # from gpucompiler import plugin as gp
        if "." in dotted:
            return False
        source, original = _imported(node, dotted, package)
        return source is not None and f"{source}.{original}" in _PLUGIN_MODULES
    if isinstance(node, ast.Import):
        alias = next(a for a in node.names if (a.asname or a.name).partition(".")[0] == dotted.partition(".")[0])
        if alias.asname:  # import gpucompiler.plugin as gp
            return alias.name in _PLUGIN_MODULES and dotted == alias.asname
        return dotted == alias.name and dotted in _PLUGIN_MODULES  # import gpucompiler.plugin
    return False


def _imported(node: ast.ImportFrom, local: str, package: str) -> tuple[str | None, str]:
    """``(absolute module, name there)`` of the name ``local`` that ``from ... import`` ``node`` binds
    in ``package``."""
    alias = next(a for a in node.names if (a.asname or a.name) == local)
    if not node.level:
        return node.module, alias.name
    parts = package.split(".")
    if node.level - 1 >= len(parts):
        return None, alias.name
    base = ".".join(parts[:len(parts) - (node.level - 1)])
    return (f"{base}.{node.module}" if node.module else base), alias.name
