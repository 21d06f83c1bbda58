"""The source files a plugin's module runs: its own file, its packages' ``__init__``, and what they import.

A plugin's code digest covers these files only (:func:`.keys.plugin_code`), so
two plugins in one package key apart: editing one changes neither the other's
keys nor its cache entries. The files are found without importing anything:
each file's ``import`` statements (at any depth, in functions too) are read
from its compiled bytecode (``IMPORT_NAME`` with its level and names; not
:mod:`ast`, whose conversion to Python objects fails with a ``SystemError``
in threads that foreign code created, such as JAX's callback threads, on
CPython 3.11), and those naming a module of the same top-level package
(absolute, or relative: ``from . import x``, ``from .m import y``) are
followed, transitively. Not followed: imports of other top-level packages
(gpucompiler has its own digest in every key; other distributions are named
by the plugin's version) and modules imported by a computed name
(``importlib.import_module(name)``): a plugin whose output depends on those
bumps its ``version``.

Where a file's text shows every import statement (each ``import`` keyword
begins its line, or follows the ``from <module>`` that does:
:func:`_statements_code`, the keyword found by ``bytes.find``), those
statements alone are compiled (the Enzyme plugin's closure of 74 modules:
7 ms, against 68 ms compiling every file, most of a fresh process's plugin
identity without ``__pycache__``). A
statement that is really text in a string adds imports, never removes one.
Otherwise the file's bytecode is read from its ``__pycache__`` when the
``.pyc`` there is valid for the source (:func:`_cached_code`); only a
missing or stale one is compiled.
"""

from __future__ import annotations

import dis
import importlib.util
import marshal
import os
import re
import types


def _module_file(directory: str, parts: list[str]) -> str | None:
    """The source of the module at ``parts`` below the package ``directory``: ``a/b.py`` or ``a/b/__init__.py``."""
    base = os.path.join(directory, *parts)
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(path):
            return path
    return None


def _imports(path: str, package: list[str]) -> list[list[str]]:
    """The dotted names (as lists) of the modules ``path`` may import; ``package``: its package's name
    parts (for relative imports). ``from m import n`` names ``m`` and ``m.n`` (``n`` may be a module)."""
    try:
        with open(path, "rb") as fh:
            source = fh.read()
            st = os.fstat(fh.fileno())
        code = _statements_code(source, path) or _cached_code(path, source, st) or compile(
            source, path, "exec", dont_inherit=True)
    except (OSError, SyntaxError, ValueError):
        return []  # unreadable: its bytes are in the digest anyway
    out: list[list[str]] = []
    for level, module, names in _import_statements(code):
        if level:
            if level - 1 > len(package):
                continue
            base = package[:len(package) - (level - 1)]
        else:
            base = []
        mod = base + (module.split(".") if module else [])
        out += [mod[:i] for i in range(1, len(mod) + 1)]
        out += [mod + [name] for name in names if name != "*"]
    return out


_LEAD = re.compile(rb"[ \t]*(?:from[ \t]+[\w.]+[ \t]+)?")  # what may come before `import` on its line
_WORD = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")  # what bytes patterns' \w match


def _keywords(source: bytes):
    """The offsets of the word ``import`` in ``source``, as ``re.finditer(rb"\\bimport\\b", source)`` finds
    them, by ``bytes.find`` (a pattern that starts with ``\\b`` is tried at every offset: 13 times slower,
    most of the Enzyme plugin's closure)."""
    i = source.find(b"import")
    while i >= 0:
        end = i + 6
        if (not i or source[i - 1] not in _WORD) and (end == len(source) or source[end] not in _WORD):
            yield i
        i = source.find(b"import", end)


def _statements_code(source: bytes, path: str) -> types.CodeType | None:
    """The code of ``source``'s import statements alone, compiled together; None unless the text shows
    every one of them.

    Every ``import`` keyword must begin, or follow the ``from <module>`` that begins, a line that no
    backslash continues; each such statement runs to the end of its line, or of its parentheses. A
    statement that is really text in a string only adds imports (more files covered, never fewer);
    anything else (an ``import`` after ``;`` or in a comment, a line continued, a statement the cut
    leaves invalid) is None, and the whole file's bytecode is read instead.
    """
    cuts = []
    for keyword in _keywords(source):
        start = source.rfind(b"\n", 0, keyword) + 1
        if not _LEAD.fullmatch(source, start, keyword):
            return None
        if start and source[source.rfind(b"\n", 0, start - 1) + 1:start - 1].rstrip(b"\r").endswith(b"\\"):
            return None  # `from m \` + `import n`: the line is part of a longer statement
        end, depth = start, 0
        while True:
            newline = source.find(b"\n", end)
            stop = len(source) if newline < 0 else newline
            line = source[end:stop]
            depth += line.count(b"(") - line.count(b")")
            if newline < 0 or (depth <= 0 and not line.rstrip().endswith(b"\\")):
                break
            end = stop + 1
        cuts.append(source[start:stop].lstrip(b" \t"))
    try:
        return compile(b"\n".join(cuts), path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None


def _cached_code(path: str, source: bytes, st: os.stat_result) -> types.CodeType | None:
    """The code object of ``path``'s ``.pyc`` in ``__pycache__`` (this interpreter's, no optimisation
    level: ``-O`` drops ``if __debug__:`` imports), None unless it is valid for ``source`` (read with
    stat ``st``).

    Valid as the import system checks it (PEP 552), and stricter: a hash-based ``.pyc`` when its
    SipHash is that of ``source`` (checked even where the import system would not); a timestamp-based
    one when its source mtime (seconds) and size are ``st``'s and it was written no earlier than the
    source's last change (``st_ctime``): a same-size edit within the recorded second, or one that set
    the mtime back, makes it stale here although an import would still run it.
    """
    try:
        pyc = importlib.util.cache_from_source(path, optimization="")
        with open(pyc, "rb") as fh:
            data = fh.read()
            written = os.fstat(fh.fileno()).st_mtime_ns
    except (OSError, NotImplementedError, ValueError):
        return None
    if len(data) < 16 or data[:4] != importlib.util.MAGIC_NUMBER:
        return None
    flags = int.from_bytes(data[4:8], "little")
    if flags & 1:  # hash-based
        if flags & ~0b11 or data[8:16] != importlib.util.source_hash(source):
            return None
    elif (flags or int.from_bytes(data[8:12], "little") != int(st.st_mtime) & 0xFFFFFFFF
          or int.from_bytes(data[12:16], "little") != st.st_size & 0xFFFFFFFF or written < st.st_ctime_ns):
        return None
    try:
        code = marshal.loads(memoryview(data)[16:])
    except (EOFError, ValueError, TypeError):
        return None
    return code if isinstance(code, types.CodeType) else None


_IMPORT_NAME, _LOAD_CONST = dis.opmap["IMPORT_NAME"], dis.opmap["LOAD_CONST"]
_CACHE = dis.opmap.get("CACHE", -1)  # the inline cache entries of 3.11 and later: not instructions
_IMPORT_BYTE = bytes([_IMPORT_NAME])


def _import_statements(code: types.CodeType):
    """``(level, module, names)`` of every import in ``code`` and the code objects inside it: the
    compiler emits ``LOAD_CONST level; LOAD_CONST names; IMPORT_NAME module`` for each statement.
    The instructions are read from the raw bytecode (``dis.get_instructions`` builds an object per
    instruction: 17 times slower), with ``EXTENDED_ARG`` prefixes folded into the next argument (a
    constant past the 256th)."""
    todo = [code]
    while todo:
        co = todo.pop()
        consts, names, raw = co.co_consts, co.co_names, co.co_code
        todo += [c for c in consts if isinstance(c, types.CodeType)]
        if _IMPORT_BYTE not in raw:  # no import here (most functions): one search in C
            continue
        level = fromlist = None
        loaded = extended = 0  # the LOAD_CONSTs just before: (level, fromlist) once there are two
        for i in range(0, len(raw), 2):
            op = raw[i]
            if op == _CACHE:
                continue
            arg = raw[i + 1] | extended
            if op == dis.EXTENDED_ARG:
                extended = arg << 8
                continue
            extended = 0
            if op == _IMPORT_NAME and loaded >= 2:
                yield (level if isinstance(level, int) else 0, names[arg], tuple(fromlist or ()))
            if op == _LOAD_CONST:
                level, fromlist, loaded = fromlist, consts[arg], loaded + 1
            else:
                loaded = 0


def import_closure(top: str, top_dir: str, module: str) -> list[tuple[str, str]]:
    """``(path relative to top_dir, path)`` of the files module ``module`` (of top-level package
    ``top``, whose directory is ``top_dir``) runs, sorted: its file, the ``__init__`` of each package
    above it, and the modules of ``top`` that any of them imports, transitively."""
    parts = module.split(".")[1:]
    files: dict[tuple[str, ...], str | None] = {}  # _module_file's answers: many files import the same modules

    def module_file(parts: list[str]) -> str | None:
        key = tuple(parts)
        if key not in files:
            files[key] = _module_file(top_dir, parts)
        return files[key]

    start = [module_file(parts[:i]) for i in range(len(parts) + 1)]
    todo = [(p, f) for p, f in zip((parts[:i] for i in range(len(parts) + 1)), start) if f is not None]
    seen: dict[str, str] = {}
    while todo:
        parts, path = todo.pop()
        if path in seen:
            continue
        seen[path] = os.path.relpath(path, top_dir)
        package = [top, *parts] if os.path.basename(path) == "__init__.py" else [top, *parts[:-1]]
        for name in _imports(path, package):
            if name[0] != top:
                continue
            found = module_file(name[1:])
            if found is not None and found not in seen:
                todo.append((name[1:], found))
    return sorted((rel, path) for path, rel in seen.items())


__all__ = ["import_closure"]
