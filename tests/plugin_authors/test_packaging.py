"""Packaging: a plugin's code digest covers the modules it runs, not every module of its package, so two
plugins in one package key apart (editing one leaves the other's cache keys and entries alone)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
import shutil
import sys
import types
import textwrap

import pytest

from gpucompiler.identity import imports, keys
from gpucompiler.identity.imports import import_closure

from installing import AUTHOR_PLUGINS, HERE, install


@pytest.fixture
def copied(tmp_path, monkeypatch, fresh_registry):
    """The author plugins' package copied to a site directory of its own and installed there."""
    site = install(tmp_path / "site", "author_plugins_copy", AUTHOR_PLUGINS)
    shutil.copytree(HERE / "author_plugins", site / "author_plugins", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("GPUC_CACHE_DIR", str(tmp_path / "cache"))
    importlib.invalidate_caches()
    saved = _forget()
    keys.plugin_code.cache_clear()
    yield site
    keys.plugin_code.cache_clear()
    _forget()
    sys.modules.update(saved)


def _forget() -> dict[str, types.ModuleType]:
    """Drop the author plugins' modules from ``sys.modules`` (the copies must not replace the originals)."""
    return {n: sys.modules.pop(n) for n in [m for m in sys.modules if m.partition(".")[0] == "author_plugins"]}


def identities() -> dict[str, str]:
    """The plugins' code digests as a new process computes them (nothing imported, the memo checked)."""
    _forget()
    keys.plugin_code.cache_clear()
    return {n: i[3] for n, i in ((i[0], i) for i in keys.plugin_identity(AUTHOR_PLUGINS))}


def test_editing_one_plugin_of_a_package_changes_only_its_own_key(copied):
    before = identities()
    assert len(set(before.values())) == len(AUTHOR_PLUGINS)  # plugins of one package: a digest each
    overlay = copied / "author_plugins" / "overlay.py"
    overlay.write_text(overlay.read_text() + "\n# an edit\n")
    after = identities()
    assert after["overlay"] != before["overlay"]
    assert {n: d for n, d in after.items() if n != "overlay"} == {n: d for n, d in before.items() if n != "overlay"}


def test_a_module_two_plugins_import_is_covered_in_both(copied):
    package = copied / "author_plugins"
    (package / "shared.py").write_text("EPS = 0.0\n")
    before = identities()  # not imported yet: no key changes
    for name in ("divsan.py", "keep_rules.py"):
        path = package / name
        path.write_text(path.read_text() + "\nfrom . import shared  # noqa\n")
    imported = identities()
    assert imported["overlay"] == before["overlay"]
    assert imported["divsan"] != before["divsan"] and imported["keep_rules"] != before["keep_rules"]
    (package / "shared.py").write_text("EPS = 1e-300\n")
    edited = identities()
    assert edited["overlay"] == imported["overlay"]
    assert edited["divsan"] != imported["divsan"] and edited["keep_rules"] != imported["keep_rules"]


def test_the_reference_plugins_of_one_package_key_apart():
    """``mock_enzyme`` and ``instrumentation`` both live in ``gpucompiler_plugins``."""
    mock, instrumentation = (keys.plugin_identity([n])[0][3] for n in ("mock_enzyme", "instrumentation"))
    assert mock is not None and instrumentation is not None and mock != instrumentation
    assert keys.covered_files("gpucompiler_plugins.instrumentation") == ["__init__.py", "instrumentation.py"]
    assert "mock_autodiff.py" in (keys.covered_files("gpucompiler_plugins.mock_enzyme") or [])


def test_the_import_closure_follows_every_spelling_of_an_import_inside_the_package(tmp_path):
    top = tmp_path / "pkg"
    (top / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "sub/__init__.py": "from .. import base\n",
        "sub/plug.py": textwrap.dedent("""
            import os
            import pkg.absolute
            from . import sibling
            from .nested import inner
            from ..other import thing
            from pkg import by_name

            def late():
                from . import lazily
            """),
        "base.py": "", "absolute.py": "", "sub/sibling.py": "", "sub/lazily.py": "", "other.py": "thing = 1\n",
        "by_name.py": "from .deep import leaf\n", "deep.py": "", "unrelated.py": "", "sub/unused.py": "",
        "sub/nested/__init__.py": "", "sub/nested/inner.py": "",
    }
    for rel, text in files.items():
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text(text)
    covered = [rel for rel, _ in import_closure("pkg", str(top), "pkg.sub.plug")]
    assert covered == sorted(["__init__.py", "sub/__init__.py", "base.py", "sub/plug.py", "absolute.py",
                              "sub/sibling.py", "sub/nested/__init__.py", "sub/nested/inner.py", "other.py",
                              "by_name.py", "deep.py", "sub/lazily.py"])


def test_an_import_after_the_256th_constant_is_followed(tmp_path):
    """The import's level and names are constants past the 256th of their code object (an EXTENDED_ARG
    prefix): it was missed, and editing the imported file left the plugin's keys unchanged."""
    top = tmp_path / "pkg"
    top.mkdir()
    many = ", ".join(f"{k}.5" for k in range(300))
    (top / "__init__.py").write_text("")
    (top / "plug.py").write_text(f"TABLE = [{many}]\n\ndef late():\n    x = [{many}]\n    from . import helper\n")
    (top / "helper.py").write_text("")
    covered = [rel for rel, _ in import_closure("pkg", str(top), "pkg.plug")]
    assert covered == ["__init__.py", "helper.py", "plug.py"]


def _ast_imports(path: Path) -> list[tuple[int, str, tuple[str, ...]]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(0, alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or "", tuple(alias.name for alias in node.names)))
    return sorted(found)


def test_the_bytecode_scan_finds_the_imports_ast_finds_in_every_module_of_the_project():
    root = Path(imports.__file__).resolve().parents[2]
    files = sorted([*root.glob("gpucompiler/**/*.py"), *root.glob("enzyme_plugin/**/*.py")])
    assert len(files) > 100
    for path in files:
        code = compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
        assert sorted(imports._import_statements(code)) == _ast_imports(path), path
