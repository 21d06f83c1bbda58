"""The exact source of a function defined by ``python -c``, when it can be proved to be the one, and
the check that text registered under a pseudo-file name is the function's.

The command's text (``sys.orig_argv``) is compiled again and must hold a code object equal to the
function's (bytecode, constants, names, first line), so an ``exec`` of another string, which has the same
file name ``<string>``, is never read from the wrong text.
"""

from __future__ import annotations

import ast
import linecache
import sys
from types import CodeType


def _codes(code: CodeType):
    yield code
    for c in code.co_consts:
        if isinstance(c, CodeType):
            yield from _codes(c)


def _same(a: CodeType, b: CodeType) -> bool:
    return (a.co_code == b.co_code and a.co_names == b.co_names and a.co_varnames == b.co_varnames
            and a.co_firstlineno == b.co_firstlineno and a.co_name == b.co_name
            and [repr(c) for c in a.co_consts if not isinstance(c, CodeType)]
            == [repr(c) for c in b.co_consts if not isinstance(c, CodeType)])


def registered_elsewhere(code: CodeType) -> bool:
    """Whether the text :mod:`linecache` holds under ``code``'s pseudo-file name (``<string>``...) is
    another program's: 3.13 registers the text of ``python -c`` as ``<string>``, the name every
    ``exec`` of a string also gets. ``False`` where the text is not Python on its own (a notebook
    cell with magics), which cannot be checked."""
    name = code.co_filename
    if not (name.startswith("<") and name.endswith(">")):
        return False
    try:
        whole = compile("".join(linecache.getlines(name)), name, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return not any(_same(c, code) for c in _codes(whole))


def command_source(code: CodeType) -> str | None:
    """The text of ``python -c`` when ``code`` was compiled from it, else ``None``."""
    argv = getattr(sys, "orig_argv", [])
    if code.co_filename != "<string>" or "-c" not in argv[:-1]:
        return None
    text = argv[argv.index("-c") + 1]
    try:
        whole = compile(text, "<string>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    return text if any(_same(c, code) for c in _codes(whole)) else None


def definition(text: str, code: CodeType) -> ast.FunctionDef | ast.Lambda | None:
    """The one ``def`` or ``lambda`` of ``text`` that made ``code`` (by line, name and parameters)."""
    params = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef) and node.name == code.co_name:
            line = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        elif isinstance(node, ast.Lambda) and code.co_name == "<lambda>":
            line = node.lineno
        else:
            continue
        a = node.args
        if line == code.co_firstlineno and [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)] == params:
            found.append(node)
    return found[0] if len(found) == 1 else None


__all__ = ["command_source", "definition", "registered_elsewhere"]
