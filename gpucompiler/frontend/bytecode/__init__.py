"""Functions without a source file (the plain REPL, ``python -c``, standard input, ``exec`` of a string).

:func:`function_ast` gives the ``def`` node the frontend lowers, as if it had been read from a file:
the exact source where it can be recovered (:mod:`.recover`), else the function's bytecode written back
as Python (:mod:`.opcodes` -> :mod:`.blocks` -> :mod:`.structure`) with the code object's lines, so
errors still name ``<stdin>:3``. docs/architecture.md says why and what is supported per version.
"""

from __future__ import annotations

import ast
import inspect
import sys
from types import CodeType, FunctionType

from ...errors import UnsupportedError
from .blocks import Runner, split
from .opcodes import normalise
from .recover import command_source, definition, registered_elsewhere
from .structure import Structurer

_HINT = ("define the function in a file, or keep to assignments, arithmetic, calls, if/for/while and return")
_CO_VARARGS, _CO_VARKEYWORDS = inspect.CO_VARARGS, inspect.CO_VARKEYWORDS
_CO_GENERATORS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def function_ast(pyfunc: FunctionType) -> tuple[ast.FunctionDef, str, int]:
    """``(def node, file name, line offset)`` of a function that has no source file."""
    code = pyfunc.__code__
    text = command_source(code)
    node = definition(text, code) if text is not None else None
    if isinstance(node, ast.Lambda):
        body: list[ast.stmt] = [ast.copy_location(ast.Return(node.body), node.body)]
        return ast.copy_location(_def(node.args, body), node), code.co_filename, 0
    if node is not None:
        assert isinstance(node, ast.FunctionDef)
        return node, code.co_filename, 0
    return decompile(pyfunc), code.co_filename, 0


def decompile(pyfunc: FunctionType) -> ast.FunctionDef:
    """``pyfunc``'s bytecode as a ``def`` of the supported subset (a typed error names what is not)."""
    code = pyfunc.__code__
    kwdefaults = pyfunc.__kwdefaults__ or {}
    node = _function(code, [_constant(d, pyfunc) for d in pyfunc.__defaults__ or ()],
                     {n: _constant(v, pyfunc) for n, v in kwdefaults.items()})
    ast.fix_missing_locations(node)
    for sub in ast.walk(node):  # a statement spans at least its own line
        line = getattr(sub, "lineno", None)
        if line is not None:
            setattr(sub, "end_lineno", max(getattr(sub, "end_lineno", None) or line, line))  # noqa: B010
            setattr(sub, "end_col_offset", getattr(sub, "end_col_offset", None) or getattr(sub, "col_offset", 0))  # noqa: B010
    return node


def _function(code: CodeType, defaults: list[ast.expr], kwdefaults: dict[str, ast.expr]) -> ast.FunctionDef:
    """The ``def`` of ``code`` (also of a nested function or lambda, whose defaults are expressions)."""
    where = (code.co_filename, code.co_firstlineno, 0)
    if code.co_flags & _CO_GENERATORS:
        raise UnsupportedError("generator or coroutine", where, code.co_qualname if sys.version_info >= (3, 11)
                               else code.co_name, _HINT)
    blocks = split(normalise(code))
    Runner(code, blocks, _function).run()

    def fail(what: str, start: int) -> None:
        op = blocks[start].ops[0]
        raise UnsupportedError(f"{what} in a function without source", (code.co_filename, op.line, op.col),
                               code.co_name, _HINT)
    body = Structurer(blocks, fail).run()
    node = _def(_arguments(code, defaults, kwdefaults), body or [ast.Pass()])
    node.name = code.co_name
    node.lineno, node.col_offset = code.co_firstlineno, 0
    return node


def _arguments(code: CodeType, defaults: list[ast.expr], kwdefaults: dict[str, ast.expr]) -> ast.arguments:
    names = code.co_varnames
    npos, nkw = code.co_argcount, code.co_kwonlyargcount
    rest = npos + nkw
    vararg = ast.arg(names[rest]) if code.co_flags & _CO_VARARGS else None
    kwarg = ast.arg(names[rest + bool(vararg)]) if code.co_flags & _CO_VARKEYWORDS else None
    return ast.arguments(
        posonlyargs=[ast.arg(n) for n in names[:code.co_posonlyargcount]],
        args=[ast.arg(n) for n in names[code.co_posonlyargcount:npos]],
        vararg=vararg, kwonlyargs=[ast.arg(n) for n in names[npos:rest]],
        kw_defaults=[kwdefaults.get(n) for n in names[npos:rest]], kwarg=kwarg, defaults=defaults)


def _constant(value, pyfunc: FunctionType) -> ast.expr:
    if not isinstance(value, (int, float, complex, bool, str, type(None))):
        code = pyfunc.__code__
        raise UnsupportedError("default that is not a constant", (code.co_filename, code.co_firstlineno, 0),
                               pyfunc.__qualname__, "pass the value as an argument")
    return ast.Constant(value)


def _def(args: ast.arguments, body: list[ast.stmt]) -> ast.FunctionDef:
    extra = {"type_params": []} if sys.version_info >= (3, 12) else {}
    return ast.FunctionDef(name="<lambda>", args=args, body=body, decorator_list=[], returns=None,
                           type_comment=None, **extra)


__all__ = ["decompile", "function_ast", "registered_elsewhere"]
