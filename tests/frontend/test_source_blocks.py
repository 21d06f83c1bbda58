"""The source of a compiled function (gpucompiler/frontend/lower.py ``_parse``): its block ends where the
positions of its code say when that is certain, else where tokenizing the file says (``inspect``'s way);
either way the syntax tree is the one ``inspect.getsourcelines`` gives, on every function of many modules
and on the layouts where the positions end early (dead code, a closing bracket at the margin, tabs)."""

from __future__ import annotations

import ast
import importlib
import inspect
import linecache
import sys
import textwrap
import types

import pytest

from gpucompiler import jit
from gpucompiler.errors import UnsupportedError
from gpucompiler.frontend import lower

MODULES = ["gpucompiler.frontend.statements", "gpucompiler.frontend.expressions", "gpucompiler.interpreter.infer",
           "gpucompiler.codegen.function", "gpucompiler.language.python.numbers", "gpucompiler.language.numpy.ufuncs",
           "tests.frontend.fuzz_programs", "tests.frontend.frontend_corpus", "textwrap", "ast", "inspect",
           "json.decoder", "argparse", "dataclasses", "fractions"]


def _inspects(fn) -> str:
    """The reference: the ``def`` node of ``inspect.getsourcelines(fn)``, dedented and parsed."""
    lines, _ = inspect.getsourcelines(fn)
    return ast.dump(ast.parse(textwrap.dedent("".join(lines))).body[0], include_attributes=True)


def _ours(fn) -> str:
    node, _, _ = lower._parse_code.__wrapped__(fn, fn.__code__)  # pyright: ignore[reportFunctionMemberAccess]
    return ast.dump(node, include_attributes=True)


def _functions(module):
    for value in vars(module).values():
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            yield value
        elif isinstance(value, type) and value.__module__ == module.__name__:
            yield from (v for v in vars(value).values() if isinstance(v, types.FunctionType))


@pytest.mark.parametrize("name", MODULES)
def test_every_function_of_a_module_parses_as_inspect_finds_it(name):
    compared = 0
    for fn in _functions(importlib.import_module(name)):
        try:
            want = _inspects(fn)
        except (OSError, TypeError, SyntaxError, IndentationError):
            continue  # no source, or a block inspect cannot cut (the frontend refuses those either way)
        if fn.__name__ == "<lambda>" or not isinstance(ast.parse(textwrap.dedent("".join(
                inspect.getsourcelines(fn)[0]))).body[0], ast.FunctionDef):
            continue
        assert _ours(fn) == want, fn.__qualname__
        compared += 1
    assert compared > 3


LAYOUTS = {
    "dead_code": "def f(x):\n    return x + 1\n    y = 2\n    return y\n",
    "dead_branch": "def f(x):\n    if x:\n        return 1\n    else:\n        return 2\n    pass\n",
    "closing_bracket_at_margin": "def f(a, b):\n    return (a +\n b\n)\n\nz = 1\n",
    "call_over_lines": "def f(a):\n    return max(a,\n1)\n\nz = 2\n",
    "decorated": "import functools\n\n@functools.lru_cache(\n    maxsize=None)\ndef f(x):\n    return x * 2\n",
    "comment_at_margin": "def f(x):\n    y = x\n# a note at the margin\n    return y\n\n# after\nz = 3\n",
    "trailing_string": 'def f(x):\n    y = x\n    """a string\nat the margin"""\n\nz = 4\n',
    "docstring_only": 'def f(x):\n    """only a\n    docstring"""\n',
    "pass_only": "def f(x):\n    pass\n",
    "nested": "def f(x):\n    def g(y):\n        return [y * k for k in range(3)]\n    return g(x)\n\nw = 5\n",
    "tabs": "def f(x):\n\ty = x\n\treturn y\n\n\n",
    "last_line_no_newline": "def f(x):\n    return x",
    "backslash": "def f(x):\n    return x + \\\n1\n\nz = 6\n",
    "method": "class C:\n    def f(self, x):\n        return x\n\n    def g(self):\n        return 1\n",
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_layouts_where_the_positions_end_early_parse_as_inspect_finds_them(tmp_path, monkeypatch, name):
    path = tmp_path / f"layout_{name}.py"
    path.write_text(LAYOUTS[name])
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(f"layout_{name}")
    try:
        fn = module.f if name != "method" else module.C.f
        if name == "decorated":
            fn = fn.__wrapped__
        assert _ours(fn) == _inspects(fn)
    finally:
        sys.modules.pop(f"layout_{name}", None)


def loops(n):
    s = 0.0
    for i in range(n):
        s += i * 0.5
    return s


def test_a_function_whose_positions_end_its_block_needs_no_tokenizing(monkeypatch):
    def tokenized(lines):
        raise AssertionError("inspect.getblock tokenized the file")

    monkeypatch.setattr(inspect, "getblock", tokenized)
    lower._parse_code.cache_clear()
    try:
        assert jit(loops, tier=False)(7) == loops(7)
    finally:
        lower._parse_code.cache_clear()


def test_a_function_whose_source_changed_is_still_refused(tmp_path, monkeypatch):
    path = tmp_path / "changed_source.py"
    path.write_text("def f(x):\n    return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("changed_source")
    try:
        path.write_text("def f(x):\n    return (x\n")  # the file on record no longer parses
        linecache.checkcache(str(path))
        with pytest.raises(UnsupportedError, match="does not parse on its own"):
            lower._parse_code.__wrapped__(module.f, module.f.__code__)  # pyright: ignore[reportFunctionMemberAccess]
    finally:
        sys.modules.pop("changed_source", None)
