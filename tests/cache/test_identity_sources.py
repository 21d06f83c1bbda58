"""What a plugin's identity reads from its package without importing it: the import closure from the
import statements the text shows, else from valid ``__pycache__`` bytecode (compiling only what is
missing or stale), whether its class defines ``cache_settings`` from the source, and a built-in
plugin's digest (the compiler's own)."""

from __future__ import annotations

import builtins
import importlib.util
import os
import py_compile
import re
import shutil
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest

from gpucompiler.identity import code_digest, entrypoints, hookprobe, imports, keys
from gpucompiler.identity.codeprint import files_under

PLUGIN = "from . import base\nfrom .util import helper\n_PAD = 'abcdefghijklmno'\n\n\ndef run():\n    from .lazy import thing\n    return thing\n"
EDITED = "from . import base\nfrom .util import helper\nfrom . import extra as e\n\n\ndef run():\n    from .lazy import thing\n    return thing\n"


#: a comment naming ``import``: the text no longer shows where every import statement is, so the
#: file's bytecode is read (from ``__pycache__`` or compiled)
OPAQUE = "# an import in a comment\n"


@pytest.fixture
def package(tmp_path):
    """``pkg`` with ``plug.py`` importing ``base``, ``util`` and (in a function) ``lazy``; ``extra.py``
    is imported by nobody, until :data:`EDITED` (the same size as :data:`PLUGIN`) replaces ``plug.py``.
    Every file ends with :data:`OPAQUE`: its imports come from its bytecode."""
    assert len(PLUGIN) == len(EDITED)
    top = tmp_path / "pkg"
    top.mkdir()
    for name, text in (("__init__", ""), ("plug", PLUGIN), ("base", "X = 1\n"), ("util", "def helper():\n    pass\n"),
                       ("lazy", "thing = 2\n"), ("extra", "Y = 3\n")):
        (top / f"{name}.py").write_text(text + OPAQUE)
    return top


def _closure(top: Path) -> list[str]:
    return [rel for rel, _ in imports.import_closure("pkg", str(top), "pkg.plug")]


@pytest.fixture
def compiles(monkeypatch):
    """The paths ``compile`` is called on while the test runs."""
    seen: list[str] = []
    real = builtins.compile

    def spy(source, filename, *args, **kwargs):
        seen.append(str(filename))
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(builtins, "compile", spy)
    return seen


def _write_pycs(top: Path, mode: py_compile.PycInvalidationMode) -> None:
    for path in top.glob("*.py"):
        py_compile.compile(str(path), doraise=True, invalidation_mode=mode)


WITHOUT = ["__init__.py", "base.py", "lazy.py", "plug.py", "util.py"]


@pytest.mark.parametrize("mode", list(py_compile.PycInvalidationMode))
def test_valid_bytecode_is_read_not_compiled(package, compiles, mode):
    expected = _closure(package)  # no __pycache__ yet: compiled
    assert expected == WITHOUT and len(compiles) == 5
    _write_pycs(package, mode)
    compiles.clear()
    assert _closure(package) == expected
    assert [c for c in compiles if c.startswith(str(package))] == []  # each file's .pyc, no compile


@pytest.mark.parametrize("mode", list(py_compile.PycInvalidationMode))
def test_a_same_size_edit_that_keeps_the_mtime_is_not_read_from_the_stale_pyc(package, compiles, mode):
    """The header of a timestamp ``.pyc`` still matches (mtime in seconds and size), as it would for an
    import; an unchecked hash-based one is never compared by an import. Both are stale here."""
    _write_pycs(package, mode)
    plug = package / "plug.py"
    st = plug.stat()
    time.sleep(0.05)  # past the file system's clock tick: the edit comes after the .pyc was written
    plug.write_text(EDITED + OPAQUE)
    os.utime(plug, ns=(st.st_atime_ns, st.st_mtime_ns))
    compiles.clear()
    assert _closure(package) == ["__init__.py", "base.py", "extra.py", "lazy.py", "plug.py", "util.py"]
    assert [c for c in compiles if c.startswith(str(package))] == [str(plug)]  # the others' .pyc still read


def test_a_pyc_of_another_interpreter_or_a_truncated_one_is_compiled_instead(package, compiles):
    _write_pycs(package, py_compile.PycInvalidationMode.TIMESTAMP)
    pyc = Path(importlib.util.cache_from_source(str(package / "plug.py")))
    data = pyc.read_bytes()
    pyc.write_bytes(b"\x00\x00\r\n" + data[4:])  # another magic number
    util = Path(importlib.util.cache_from_source(str(package / "util.py")))
    util.write_bytes(util.read_bytes()[:20])  # a valid header, half a code object
    compiles.clear()
    assert _closure(package) == WITHOUT
    assert sorted(c for c in compiles if c.startswith(str(package))) == [str(package / "plug.py"),
                                                                          str(package / "util.py")]


def test_an_optimised_pyc_is_not_used(package, compiles):
    """``-O`` bytecode drops ``if __debug__:`` blocks, imports included."""
    (package / "plug.py").write_text("if __debug__:\n    from . import extra\n" + OPAQUE)
    for path in package.glob("*.py"):
        py_compile.compile(str(path), doraise=True, optimize=1)
    compiles.clear()
    assert _closure(package) == ["__init__.py", "extra.py", "plug.py"]
    assert str(package / "plug.py") in compiles


def test_a_file_whose_text_shows_its_imports_is_never_compiled_whole(tmp_path, monkeypatch):
    """Without ``__pycache__`` (``PYTHONDONTWRITEBYTECODE``, a fresh checkout) each file of a plugin was
    compiled to read its imports: most of a fresh process's plugin identity without a memo. Now only
    the import statements are compiled, and the closure is the bytecode's."""
    top = tmp_path / "pkg"
    top.mkdir()
    for name, text in (("__init__", '"""A package.\n\nimported by nobody here."""\n'), ("plug", PLUGIN),
                       ("base", "X = 1\n"), ("util", "def helper():\n    pass\n"), ("lazy", "thing = 2\n"),
                       ("extra", "Y = 3\n")):
        (top / f"{name}.py").write_text(text)
    sources: list[bytes] = []
    real = builtins.compile

    def spy(source, filename, *args, **kwargs):
        sources.append(source)
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(builtins, "compile", spy)
    assert _closure(top) == WITHOUT
    whole = {(top / rel).read_bytes() for rel in WITHOUT} - {b""}
    assert sources and not whole & set(sources)


#: sources whose import statements the text alone does not show, or shows inside strings; the scan
#: must find every import the bytecode holds (falling back to the bytecode) and may add only the
#: ones that strings spell
TRICKY = {
    "after a semicolon": "X = 1; from . import extra\n",
    "on an if's line": "if True: from . import extra\n",
    "from continued": "from . \\\n    import extra\n",
    "module continued": "from \\\n    .extra import Y\n",
    "no space after from": "from.extra import Y\n",
    "a paren in a comment": "from . import (base,  # )\n    extra)\n",
    "an open paren in a comment": "from . import base  # (\nfrom . import extra\n",
    "a docstring's example": 'def f():\n    """Use it so:\n\n    from . import extra\n    """\n',
    "prose in a docstring": '"""Then import it."""\nfrom . import extra\n',
    "a future import after a docstring's": '"""\nimport base\n"""\nfrom __future__ import annotations\n'
                                            'from . import extra\n',
    "tabs and a form feed": "if True:\n\f\tfrom . import extra\n",
    "CR line ends": "X = 1\rfrom . import extra\r",
    "a star import": "from .extra import *\n",
}


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_the_text_scan_finds_every_import_the_bytecode_holds(name):
    source = TRICKY[name].encode()
    exact = set(imports._import_statements(compile(source, "plug.py", "exec", dont_inherit=True)))
    code = imports._statements_code(source, "plug.py")
    found = exact if code is None else set(imports._import_statements(code))
    assert exact <= found
    assert found - exact <= {(0, "base", ()), (1, "", ("extra",))}  # only what a string spells


def test_the_text_scan_finds_every_import_the_bytecode_holds_in_every_module_of_the_project():
    root = Path(imports.__file__).resolve().parents[2]
    files = sorted(root.glob("**/*.py"))
    assert len(files) > 300
    scanned = 0
    for path in files:
        source = path.read_bytes()
        try:
            exact = set(imports._import_statements(compile(source, str(path), "exec", dont_inherit=True)))
        except SyntaxError:
            continue
        code = imports._statements_code(source, str(path))
        if code is not None:
            scanned += 1
            assert exact <= set(imports._import_statements(code)), path
    assert scanned > len(files) // 2


#: where the word ``import`` may sit: at either end of the text, beside letters, digits, ``_``, dots,
#: non-ASCII bytes (not word characters for a bytes pattern) and line ends
KEYWORD_EDGES = [b"import", b"import x", b"x import", b"_import", b"import_", b"importimport", b"import import",
                 b"Import", b"imports", b"reimport", b"9import", b"import9", b".import.", b"\xc3\xa9import",
                 b"import\xc3\xa9", b"\nimport\n", b"(import)", b"impor", b"mport", b"", b"im port",
                 b"from . import x  # import\nimport y"]


@pytest.mark.parametrize("text", KEYWORD_EDGES)
def test_the_keyword_scan_finds_what_the_word_boundary_pattern_finds(text):
    """``_keywords`` replaced ``re.finditer(rb"\\bimport\\b")``, which tried the pattern at every offset
    (4.7 of the Enzyme closure's 11 ms): the same offsets."""
    assert list(imports._keywords(text)) == [m.start() for m in re.finditer(rb"\bimport\b", text)]


def test_the_keyword_scan_finds_what_the_word_boundary_pattern_finds_in_every_module_of_the_project():
    root = Path(imports.__file__).resolve().parents[2]
    files = sorted(root.glob("**/*.py")) + sorted(Path(re.__file__).parent.parent.glob("*.py"))
    assert len(files) > 300
    for path in files:
        source = path.read_bytes()
        assert list(imports._keywords(source)) == [m.start() for m in re.finditer(rb"\bimport\b", source)], path


# the compiler's ~400 modules: 40 s, with the slow set (the keyword scan itself is checked on every file above)
@pytest.mark.parametrize("where", ["enzyme_plugin", pytest.param("gpucompiler", marks=pytest.mark.slow),
                                   "plugins/gpucompiler_plugins"])
def test_the_closure_of_every_module_of_a_package_is_the_word_pattern_scans(where, monkeypatch, tmp_path):
    """Differential: every module's import closure with the keyword scan and with the pattern it replaced (on
    a copy of the package: the checkout's files may change between the two)."""
    source = Path(imports.__file__).resolve().parents[2] / where
    package = source.name
    top_dir = tmp_path / package
    shutil.copytree(source, top_dir, ignore=shutil.ignore_patterns("__pycache__"))
    modules = sorted({".".join((package, *p.relative_to(top_dir).with_suffix("").parts)).removesuffix(".__init__")
                      for p in top_dir.glob("**/*.py") if "__pycache__" not in p.parts})
    assert len(modules) >= 4
    scanned = {m: imports.import_closure(package, str(top_dir), m) for m in modules}
    monkeypatch.setattr(imports, "_keywords", lambda source: (m.start() for m in re.finditer(rb"\bimport\b", source)))
    for module in modules:
        assert imports.import_closure(package, str(top_dir), module) == scanned[module], module


ADVERSARIAL = {  # a package whose modules hide, spell or break their imports
    "__init__.py": "from . import plug\n",
    "plug.py": "import sys\nif sys.version_info > (3,):\n    from . import cond\nelse:\n    from .never import x\n"
               "try:\n    from .opt import y\nexcept ImportError:\n    y = None\n"
               "def f():\n    from .lazy import z  # imported late\n    return z\n"
               "IMPORTANT = 'reimport_x'  # éimport\nimport importlib\nM = importlib.import_module('pkg.computed')\n",
    "cond.py": '"""Docs: import pkg.doc"""\nfrom .. import nothing\n',
    "opt.py": "y = 1\r\nfrom .crlf import w\r\n",
    "crlf.py": "w = 2\n",
    "lazy.py": "from . import broken\nz = 3\n",
    "broken.py": "def (:\n    import pkg.hidden\n",
    "doc.py": "from .deep import *\n",
    "deep.py": "D = 4\n",
    "never.py": "", "computed.py": "", "hidden.py": "", "nothing.py": "",
}


def test_the_closure_of_an_adversarial_package_is_the_word_pattern_scans(tmp_path, monkeypatch):
    top = tmp_path / "pkg"
    top.mkdir()
    for name, text in ADVERSARIAL.items():
        (top / name).write_bytes(text.encode())
    scanned = _closure(top)
    # conditional, optional, late and CRLF imports followed; a computed name not, nor `..` past the top; a
    # docstring's prose beside `import` sends its file to the bytecode (doc.py not reached); a file that does
    # not compile still has its import lines read from its text
    assert scanned == ["__init__.py", "broken.py", "cond.py", "crlf.py", "hidden.py", "lazy.py", "never.py",
                       "opt.py", "plug.py"]
    monkeypatch.setattr(imports, "_keywords", lambda source: (m.start() for m in re.finditer(rb"\bimport\b", source)))
    assert _closure(top) == scanned


def test_a_builtin_plugin_has_the_compilers_digest_without_an_import_closure(monkeypatch):
    """The CPU grid emulation's plugin lives in gpucompiler.device: its code is the compiler's, whose digest
    every key holds (before: the closure of 200 of the compiler's modules, compiled in every fresh process
    without a memo)."""
    keys.plugin_code.cache_clear()

    def refuse(*args):
        raise AssertionError("an import closure of the compiler's modules")

    monkeypatch.setattr(imports, "import_closure", refuse)
    monkeypatch.setattr(keys, "import_closure", refuse)
    try:
        assert keys.plugin_code("gpucompiler.device") == code_digest("gpucompiler")
    finally:
        keys.plugin_code.cache_clear()
    files = keys.covered_files("gpucompiler.device")
    assert files is not None and "device.py" in files and "identity/keys.py" in files


# -- whether a class defines cache_settings, from its package's source --------------------------------

BASE = "import gpucompiler.plugin as gp\n\n\nclass Base(gp.Plugin):\n    name = 'base'\n"
CASES = {  # name: ({file: source}, class module, class name, known to define no cache_settings)
    "gp.Plugin": ({"plug.py": "import gpucompiler.plugin as gp\n\n\nclass P(gp.Plugin):\n    name = 'p'\n"},
                  "plug", "P", True),
    "Plugin imported": ({"plug.py": "from gpucompiler.interface import Plugin as B\n\n\nclass P(B):\n    pass\n"},
                        "plug", "P", True),
    "dotted module": ({"plug.py": "import gpucompiler.plugin\n\n\nclass P(gpucompiler.plugin.Plugin):\n    pass\n"},
                      "plug", "P", True),
    "from gpucompiler import plugin": ({"plug.py": "from gpucompiler import plugin\n\n\nclass P(plugin.Plugin):\n"
                                                   "    pass\n"}, "plug", "P", True),
    "a base of the package": ({"base.py": BASE, "plug.py": "from .base import Base\n\n\nclass P(Base):\n    pass\n"},
                              "plug", "P", True),
    "a base in the same module": ({"plug.py": BASE + "\n\nclass P(Base):\n    pass\n"}, "plug", "P", True),
    "re-exported by __init__": ({"__init__.py": "from .impl import P\n",
                                 "impl.py": "import gpucompiler.plugin as gp\n\n\nclass P(gp.Plugin):\n    pass\n"},
                                "", "P", True),
    "the hook defined": ({"plug.py": BASE + "\n    def cache_settings(self):\n        return 1\n"}, "plug", "Base",
                         False),
    "the hook in a base": ({"base.py": BASE + "\n    def cache_settings(self):\n        return 1\n",
                            "plug.py": "from .base import Base\n\n\nclass P(Base):\n    pass\n"}, "plug", "P", False),
    "set by name elsewhere": ({"__init__.py": "from . import extra\n", "plug.py": BASE,
                               "extra.py": "from .plug import Base\n"
                               "setattr(Base, 'cache_settings', lambda self: 1)\n"}, "plug", "Base", False),
    "a base of another package": ({"plug.py": "from otherpkg import Base\n\n\nclass P(Base):\n    pass\n"},
                                  "plug", "P", False),
    "a decorator": ({"plug.py": "from otherpkg import add_hooks\n" + BASE.replace("class", "@add_hooks\nclass")},
                    "plug", "Base", False),
    "a metaclass": ({"plug.py": BASE.replace("(gp.Plugin)", "(gp.Plugin, metaclass=type)")}, "plug", "Base", False),
    "bound twice": ({"plug.py": BASE + "\ntry:\n    from otherpkg import Base\nexcept ImportError:\n    pass\n"},
                    "plug", "Base", False),
    "another module's Plugin": ({"plug.py": "import otherpkg as gp\n\n\nclass P(gp.Plugin):\n    pass\n"},
                                "plug", "P", False),
    "not a class": ({"plug.py": "def P():\n    pass\n"}, "plug", "P", False),
    "a syntax error": ({"plug.py": "class P(:\n"}, "plug", "P", False),
}
OTHER = "import gpucompiler.plugin as gp\n\n\ndef add_hooks(cls):\n    cls.cache_settings = lambda self: 1\n    return cls\n\n\n" \
        "class Base(gp.Plugin):\n    def cache_settings(self):\n        return 1\n\n\nPlugin = Base\n"


@pytest.mark.parametrize("case", list(CASES))
def test_the_source_tells_a_class_without_cache_settings_and_nothing_else(tmp_path, case):
    files, module, name, expected = CASES[case]
    top = tmp_path / "probepkg"
    top.mkdir()
    (top / "__init__.py").write_text("")
    for fname, text in files.items():
        (top / fname).write_text(text)
    (tmp_path / "otherpkg.py").write_text(OTHER)
    dotted = "probepkg" + (f".{module}" if module else "")
    got = hookprobe.defines_no_settings("probepkg", str(top), files_under(str(top)), dotted, name)
    assert got is expected
    if case == "a syntax error":
        return
    # the truth, in a fresh interpreter: only a class without the hook may be said to have none
    check = textwrap.dedent(f"""
        import importlib, sys
        from gpucompiler.identity.keys import _has_settings_hook
        cls = getattr(importlib.import_module({dotted!r}), {name!r})
        print(isinstance(cls, type) and _has_settings_hook(cls()))
    """)
    done = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])})
    assert done.returncode == 0, done.stderr
    defines = done.stdout.strip() == "True"
    assert not (got and defines)
    assert defines == (case in ("the hook defined", "the hook in a base", "set by name elsewhere",
                                "a base of another package", "a decorator", "bound twice",
                                "another module's Plugin"))


def test_no_entry_point_memo_where_distributions_could_hide_from_its_stamp(tmp_path, monkeypatch):
    """A zip on ``sys.path`` (its distributions are not listed) or another finder of distributions on
    ``sys.meta_path``: the entry point is read each time, nothing memoised."""
    monkeypatch.setenv("GPUC_CACHE_DIR", str(tmp_path / "cache"))
    memos = tmp_path / "cache" / "code"
    found = entrypoints.installed("enzyme")
    assert found is not None and found.module == "enzyme_plugin.plugin" and found.attr == "EnzymePlugin"
    assert len(list(memos.glob("entry-points-*.json"))) == 1
    assert entrypoints.installed("enzyme") == found  # from the memo
    zipped = tmp_path / "dists.zip"
    zipfile.ZipFile(zipped, "w").close()
    monkeypatch.setattr(sys, "path", [*sys.path, str(zipped)])
    assert entrypoints.installed("enzyme") == found
    monkeypatch.setattr(sys, "path", sys.path[:-1])

    class Finder:
        @staticmethod
        def find_spec(*args, **kwargs):
            return None

        @staticmethod
        def find_distributions(*args, **kwargs):
            return iter(())

    monkeypatch.setattr(sys, "meta_path", [Finder, *sys.meta_path])
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path)])  # a new search path: no memo of it yet
    assert entrypoints.installed("enzyme") == found
    assert len(list(memos.glob("entry-points-*.json"))) == 1
