"""The AD engine's error and its single error-handler hook.

Every unsupported construct goes through :func:`unsupported`, which builds an
:class:`ADError` naming the instruction (as printed) and the function, hands
it to the installed handler (default: raise). Never a silently wrong
derivative.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import gpucompiler
from gpucompiler.errors import GPUCompilerError


class ADError(GPUCompilerError):
    """A construct the AD engine cannot differentiate.

    ``instruction`` is the offending instruction as printed (or None),
    ``function`` the name of the function being differentiated and
    ``location`` the source ``file:line`` when the IR carries debug info.
    """

    def __init__(self, message: str, instruction: str | None = None, function: str | None = None,
                 location: str | None = None):
        self.reason, self.instruction, self.function = message, instruction, function
        #: ``file:line`` from the debug info (``!dbg``) of the instruction or function, when present
        self.location = location
        text = f"{location}: {message}" if location else message
        if function:
            text += f" in function @{function}"
        if instruction:
            text += f"\n    {instruction.strip()}"
        super().__init__(text)


class VectorizedCodeError(ADError):
    """Memory operations of the loop and SLP vectorizers the engine has no rules for (masked loads and
    stores, gathers and scatters through vectors of addresses): in IR given vectorized (the pipeline before
    AD runs no vectorizer)."""


def _raise(err: ADError) -> None:
    raise err


#: the error handler: receives every ADError; the default raises it
_handler: list[Callable[[ADError], None]] = [_raise]


def set_error_handler(handler: Callable[[ADError], None] | None) -> None:
    """Install ``handler`` (None restores the default, which raises). A handler
    that returns lets the engine raise anyway: nothing unsupported is skipped."""
    _handler[0] = handler or _raise


def print_instruction(inst) -> str:
    """``%x = fmul double %a, %b`` as LLVM would print it (operands by reference; an unnamed value by
    its number in the function, as LLVM numbers it when it prints the module the engine holds)."""
    try:
        slots = _slots(inst)
        parts = []
        for p in inst.parts:
            if type(p) is int:
                op = inst.operands[p]
                parts.append(op.ref or slots.get(op, "%<unnamed>"))
            elif type(p) is str:
                parts.append(p)
            else:
                parts.append(str(p) if not hasattr(p, "slot") else "#?")
        body = "".join(parts)
        ref = inst.ref or (slots.get(inst) if inst.type.kind != "void" else None)
        return f"{ref} = {body}" if ref else body
    except Exception:  # printing must never hide the real error
        return f"<{inst.opcode}>"


def _slots(inst) -> dict:
    """``%N`` of each unnamed argument, block and non-void instruction of ``inst``'s function."""
    block = getattr(inst, "parent", None)
    fn = getattr(block, "parent", None)
    if fn is None:
        return {}
    slots, n = {}, 0
    for vs in (fn.args, *([b, *[i for i in b.instructions if i.type.kind != "void"]] for b in fn.blocks)):
        for v in vs:
            if v.ref is None:
                slots[v] = f"%{n}"
                n += 1
    return slots


def _unquote(text) -> str | None:
    return text.strip().strip('"') if isinstance(text, str) else None


def source_location(inst=None, fn=None) -> str | None:
    """``file:line`` of ``inst``'s ``!dbg`` location, else of ``fn``'s ``DISubprogram``, else None."""
    for node in (getattr(inst, "metadata", None) or {}).get("dbg"), (getattr(fn, "metadata", None) or {}).get("dbg"):
        if node is None or not hasattr(node, "field"):
            continue
        line = _unquote(node.field("line"))
        scope, depth = node, 0
        while scope is not None and hasattr(scope, "field") and depth < 32:
            f = scope.field("file")
            if hasattr(f, "field"):
                name = _unquote(f.field("filename"))
                return f"{name}:{line}" if name and line else name
            scope, depth = scope.field("scope"), depth + 1
        if line:
            return f"line {line}"
    return None


def _line_of(inst) -> tuple[str, int] | None:
    """``(file, line)`` from ``!gpuc.loc !{!"file", i32 line}`` (what the Python frontend attaches
    to code a plugin transforms), or None."""
    md = getattr(inst, "metadata", {}).get("gpuc.loc")
    if md is None or not md.parts or type(md.parts[0]) is not str:
        return None
    m = re.match(r'!\{\s*!"((?:[^"\\]|\\.)*)"', md.parts[0])
    line = md.operands[0].ref if md.operands else None
    if m is None or line is None or not str(line).lstrip("-").isdigit():
        return None
    return m.group(1), int(line)


def python_line(inst) -> tuple[str, int] | None:
    """The Python source line of ``inst``: its own, else the nearest located instruction before it
    in its block, else after it, else in the blocks before its block, else after it (optimisations
    make instructions without one; the vectorizers a whole loop body without one)."""
    where = _line_of(inst)
    block = getattr(inst, "parent", None)
    if (where is not None and not _compilers_own(where[0])) or block is None:
        return where
    insts = block.instructions
    at = next((k for k, i in enumerate(insts) if i is inst), None)
    if at is None:
        return None
    blocks = getattr(block.parent, "blocks", [block])
    here = next((k for k, b in enumerate(blocks) if b is block), 0)
    before = [i for b in reversed(blocks[:here]) for i in reversed(b.instructions)]
    after = [i for b in blocks[here + 1:] for i in b.instructions]
    for i in [*reversed(insts[:at]), *insts[at + 1:], *before, *after]:
        where = _line_of(i)
        if where is not None and not _compilers_own(where[0]):
            return where
    return None


def _compilers_own(path: str) -> bool:
    """Whether ``path`` is a file of the compiler (its builtins written in Python): an error names the
    user's line that called them instead."""
    return path.startswith(os.path.dirname(os.path.abspath(gpucompiler.__file__)) + os.sep)


def unsupported(message: str, inst: Any = None, function: Any = None, kind: type[ADError] = ADError,
                quote: bool = True) -> ADError:
    """Report ``message`` about ``inst`` (an instruction or value of the IR model) in ``function`` (one, or its
    name) through the handler, then raise (a ``kind``). ``quote=False``: the message names what it is about in
    the source's terms (:mod:`.explain`); ``inst`` only gives the location, and the error quotes no IR."""
    fn = function
    if fn is None and inst is not None and getattr(inst, "parent", None) is not None:
        fn = inst.parent.parent
    try:
        where = source_location(inst, fn if not isinstance(fn, str) else None)
        if where is None and inst is not None:  # the Python frontend's !gpuc.loc (no debug info)
            line = python_line(inst)
            where = f"{line[0]}:{line[1]}" if line else None
    except Exception:  # a malformed location must never hide the real error
        where = None
    err = kind(message, print_instruction(inst) if inst is not None and quote else None,
                  getattr(fn, "name", fn) if fn is not None else None, where)
    _handler[0](err)
    raise err
