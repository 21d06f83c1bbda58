"""Python AST -> SSA IR (:mod:`.ir`), keeping file:line:col on every value.

Operators become calls of the functions in :mod:`operator`; loops over
``range`` and the short-circuit operators become control flow. Anything
outside the supported subset raises :class:`UnsupportedError` naming the
construct, with a hint.
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import linecache
import sys
import textwrap
import tokenize

from ..errors import UnsupportedError
from .ir import Arg, Const, Function, Return
from .parallel import function_from_ast
from .ssa import SSABuilder
from .statements import Statements
from .bytecode import function_ast, registered_elsewhere
from .closures import CLOSURES_ATTRIBUTE, SOURCE_ATTRIBUTE, Closures, own_bindings
from .comprehensions import Comprehensions
from .expressions import Expressions
from .iteration import Iteration
from .powerloops import PowerLoops



def _parse(pyfunc) -> tuple[ast.FunctionDef, str, int]:
    """``(def node, file name, line offset)``; the source comes through :mod:`linecache` (files,
    notebook cells, any source registered there), lambdas from the statement that holds them. Kept per
    function and code object: a function whose code is replaced (``f.__code__ = ...``, as IPython's
    autoreload does) is parsed again, as its key (the code's digest) changes with it."""
    return _parse_code(pyfunc, pyfunc.__code__)


@functools.lru_cache(maxsize=512)
def _parse_code(pyfunc, code) -> tuple[ast.FunctionDef, str, int]:
    nested = getattr(pyfunc, SOURCE_ATTRIBUTE, None)
    if nested is not None:  # made from a nested def or lambda (closures.py)
        return nested
    if pyfunc.__name__ == "<lambda>":
        return _lambda(pyfunc), code.co_filename, 0
    if registered_elsewhere(code):  # exec() of a string under `python -c` on 3.13
        return function_ast(pyfunc)
    try:
        obj = inspect.unwrap(pyfunc)
        lines, lnum = inspect.findsource(obj)
    except (OSError, TypeError):
        return function_ast(pyfunc)  # the REPL, `python -c`, standard input, exec() of a string
    first = lnum + 1
    end = _end_by_positions(getattr(obj, "__code__", None), lines, lnum)
    tree = None
    if end is not None:
        try:
            tree = ast.parse(textwrap.dedent("".join(lines[lnum:end])))
        except SyntaxError:  # a closing bracket on a line of its own after the last position
            pass
    if tree is None:
        try:
            tree = ast.parse(textwrap.dedent("".join(inspect.getblock(lines[lnum:]))))
        except (SyntaxError, tokenize.TokenError):  # tokenizing stopped inside a statement
            raise UnsupportedError("function whose source does not parse on its own", (code.co_filename, first, 0),
                                   pyfunc.__qualname__, "the source on record may have changed since the "
                                   "function was defined: define it with a plain `def` statement") from None
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        raise UnsupportedError(type(node).__name__, (inspect.getsourcefile(pyfunc), first, 0),
                               hint="compile a plain `def` function")
    return node, inspect.getsourcefile(pyfunc) or "<unknown>", first - 1


def _end_by_positions(code, lines: list[str], lnum: int) -> int | None:
    """The end (exclusive line index) of the ``def`` at ``lines[lnum]``, from the positions of ``code`` and its
    nested code (Python 3.11+), where that is the block ``inspect.getsourcelines`` finds by tokenizing the rest
    of the file (a third of a small function's lowering): the next line that is neither blank nor a
    comment is indented no deeper than the ``def``. None otherwise (code the compiler dropped after the last
    position, tabs in the indentation, no positions): the caller tokenizes. Lines cut inside a statement
    (a closing bracket of its own at the ``def``'s indentation) do not parse, and the caller tokenizes too."""
    if code is None or not hasattr(code, "co_positions"):
        return None
    end, todo = 0, [code]
    while todo:
        c = todo.pop()
        end = max([end, *(p[1] for p in c.co_positions() if p[1] is not None)])
        todo += [k for k in c.co_consts if isinstance(k, type(code))]
    indent = _indent(lines[lnum])
    if end <= lnum or indent is None:
        return None
    for line in lines[end:]:
        text = line.strip()
        if text and not text.startswith("#"):
            deeper = _indent(line)
            return end if deeper is not None and deeper <= indent else None
    return end


def _indent(line: str) -> int | None:
    """The indentation of ``line`` in spaces; None when it holds another white space character (a tab)."""
    body = line.lstrip()
    lead = line[:len(line) - len(body)]
    return len(lead) if lead.strip(" ") == "" else None


def _lambda(pyfunc) -> ast.FunctionDef:
    """The ``lambda`` expression that made ``pyfunc``, found by line (and parameters) in its file's
    source, as a ``def`` returning its body."""
    code = pyfunc.__code__
    where = (code.co_filename, code.co_firstlineno, 0)
    lines = linecache.getlines(code.co_filename, pyfunc.__globals__)
    if not lines or registered_elsewhere(code):
        return function_ast(pyfunc)[0]
    try:
        tree = ast.parse("".join(lines))
    except SyntaxError:
        raise UnsupportedError("lambda whose file does not parse", where, "<lambda>",
                               "define the function with `def`") from None
    params = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno
             and [a.arg for a in _parameters(n)] == params]
    if len(found) > 1 and hasattr(code, "co_positions"):  # Python 3.11+: the columns of the lambda's code
        cols = [p[2] for p in code.co_positions()
                if p[0] == code.co_firstlineno and p[2] is not None and p[3] is not None and p[3] > p[2]]
        if cols:
            col = min(cols)
            found = [n for n in found if n.body.lineno == code.co_firstlineno
                     and n.body.col_offset <= col < (n.body.end_col_offset or 0)]
    if len(found) != 1:
        raise UnsupportedError("lambda that cannot be told apart from the others on its line" if found else
                               "lambda not found in its source", where, "<lambda>", "define the function with `def`")
    lam = found[0]
    ret = ast.copy_location(ast.Return(lam.body), lam.body)
    node = ast.FunctionDef(name="<lambda>", args=lam.args, body=[ret], decorator_list=[], returns=None,
                           type_comment=None, **({"type_params": []} if sys.version_info >= (3, 12) else {}))
    return ast.copy_location(node, lam)


def function_source(pyfunc) -> tuple[ast.FunctionDef, str, int]:
    """``(def node, file name, line offset)`` of ``pyfunc``, as the frontend reads it (a typed error when it
    has no source)."""
    return _parse(pyfunc)


def with_parameters(pyfunc, names: tuple[str, ...]):
    """``pyfunc`` with its free variables ``names`` (closure cells) turned into trailing parameters, so that
    arrays a closure captures are passed as arguments (and can be differentiated)."""
    node, filename, offset = _parse(pyfunc)
    new = copy.deepcopy(node)
    new.name = pyfunc.__name__ if pyfunc.__name__.isidentifier() else "functor"
    new.args.args = [*new.args.args, *(ast.arg(n) for n in names)]
    return function_from_ast(new, node, pyfunc, filename, offset)


def lower_function(pyfunc) -> Function:
    """Build the SSA IR of the Python function ``pyfunc``."""
    node, filename, offset = _parse(pyfunc)
    return _Lowerer(pyfunc, node, filename, offset).run()


def _parameters(node: ast.FunctionDef | ast.Lambda) -> list[ast.arg]:
    """The parameters in the order of the compiled function's arguments (as ``co_varnames`` lists them)."""
    a = node.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs]


class _Lowerer(Statements, Expressions, Iteration, Closures, Comprehensions, PowerLoops):
    def __init__(self, pyfunc, node: ast.FunctionDef, filename: str, offset: int):
        self.node, self.filename, self.offset = node, filename, offset
        a = node.args
        if a.vararg or a.kwarg:
            self.unsupported(node, "*args or **kwargs parameters", "use named parameters")
        args = [Arg(i, p.arg, self.loc(p)) for i, p in enumerate(_parameters(node))]
        self.fn = Function(pyfunc.__qualname__, filename, node.lineno + offset, args, pyfunc)
        self.ssa = SSABuilder(self.fn)
        self.bindings = own_bindings(node)
        self.locals = set(self.bindings)
        self.closures = dict(getattr(pyfunc, CLOSURES_ATTRIBUTE, {}))
        self.loops = []
        self.params = {a.arg for a in _parameters(node)}
        self.range_vars = []
        self.unchecked = set()
        self.power_flag, self.held = None, None
        self.ntemp = 0

    # -- driver ------------------------------------------------------------
    def run(self) -> Function:
        self.block = self.ssa.new_block()
        self.ssa.seal(self.block)
        for arg in self.fn.args:
            self.write(arg.name, arg)
        self.body(self.node.body)
        if self.block is not None:
            self.terminate(Return(Const(None), self.loc(self.node)))
        self.ssa.finish()
        return self.fn

    def body(self, stmts) -> None:
        for stmt in stmts:
            if self.block is None:
                return  # code after return/break/continue never runs
            handler = getattr(self, "stmt_" + type(stmt).__name__, None)
            if handler is None:
                self.unsupported(stmt)
            handler(stmt)


__all__ = ["function_source", "lower_function", "with_parameters"]
