"""CPython 3.10-3.13 bytecode as one small instruction set (:class:`Op`), table-driven per version.

Each ``dis`` instruction becomes zero or more :class:`Op`; an opcode this table does not name is an
:class:`~gpucompiler.errors.UnsupportedError` with its line, never a guess.
"""

from __future__ import annotations

import bisect
import dis
import sys
from types import CodeType
from typing import Any

from ...errors import UnsupportedError

PY = sys.version_info[:2]
#: 3.13 pushes a call's NULL (or self) above the callable, 3.11-3.12 below it; 3.10 has no NULL
NULL_ABOVE = PY >= (3, 13)
#: MAKE_FUNCTION pops the qualified name (3.10), takes its extras from its flags (3.10-3.12) or from
#: SET_FUNCTION_ATTRIBUTE (3.13)
QUALNAME_ON_STACK = PY < (3, 11)
#: FOR_ITER's exit edge keeps the iterator (popped by END_FOR in 3.12, by POP_TOP in 3.13)
EXIT_KEEPS_ITERATOR = PY >= (3, 12)
END_FOR_POPS = 1 if PY == (3, 12) else 0

BINARY = {"ADD": "+", "SUBTRACT": "-", "MULTIPLY": "*", "TRUE_DIVIDE": "/", "FLOOR_DIVIDE": "//",
          "MODULO": "%", "POWER": "**", "MATRIX_MULTIPLY": "@", "LSHIFT": "<<", "RSHIFT": ">>",
          "AND": "&", "OR": "|", "XOR": "^"}
UNARY = {"UNARY_NEGATIVE": "-", "UNARY_POSITIVE": "+", "UNARY_NOT": "not", "UNARY_INVERT": "~"}
JUMPS = {"JUMP_FORWARD", "JUMP_ABSOLUTE", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP",
         "JUMP_NO_INTERRUPT"}
#: the conditional jumps: what makes them jump
COND_JUMPS = {"POP_JUMP_IF_FALSE": "false", "POP_JUMP_IF_TRUE": "true", "POP_JUMP_IF_NONE": "none",
              "POP_JUMP_IF_NOT_NONE": "notnone"}
NO_OPS = {"NOP", "RESUME", "PRECALL", "COPY_FREE_VARS", "MAKE_CELL", "CACHE", "EXTENDED_ARG", "GEN_START",
          "TO_BOOL", "NOT_TAKEN"}
SIMPLE = {"BINARY_SUBSCR": "binary_subscr", "STORE_SUBSCR": "store_subscr", "DELETE_SUBSCR": "delete_subscr", "BINARY_SLICE": "binary_slice",
          "STORE_SLICE": "store_slice", "POP_TOP": "pop", "GET_ITER": "get_iter", "RETURN_VALUE": "return",
          "PUSH_NULL": "push_null"}


class Op:
    """One normalised instruction: ``kind``, its operand, the jump target's offset, and where it is (a plain
    class: a frozen dataclass took ~0.5 ms to make at a process's first compile)."""

    __slots__ = ("kind", "arg", "target", "offset", "line", "col")

    def __init__(self, kind: str, arg: Any, target: int | None, offset: int, line: int, col: int):
        self.kind, self.arg, self.target, self.offset, self.line, self.col = kind, arg, target, offset, line, col

    def __repr__(self) -> str:
        return f"Op({self.kind!r}, {self.arg!r}, {self.target}, {self.offset}, {self.line}, {self.col})"


def _positions(code: CodeType) -> list[tuple[dis.Instruction, int, int]]:
    """The instructions with the (line, column) each belongs to (3.10 carries ``starts_line`` forward)."""
    out, line = [], code.co_firstlineno
    for ins in dis.get_instructions(code):
        pos = getattr(ins, "positions", None)
        if pos is not None and pos.lineno is not None:
            line, col = pos.lineno, pos.col_offset or 0
        else:
            start = getattr(ins, "line_number", None) if PY >= (3, 13) else ins.starts_line
            line, col = (start if isinstance(start, int) and start is not True else line), 0
        out.append((ins, line, col))
    return out


def normalise(code: CodeType) -> list[Op]:
    """``code``'s instructions as :class:`Op` (a typed error names the first one outside the table)."""
    ops: list[Op] = []
    for ins, line, col in _positions(code):
        name, argval, oparg = ins.opname, ins.argval, ins.arg or 0

        def op(kind, arg=None, target=None, at=ins.offset, line=line, col=col):
            ops.append(Op(kind, arg, target, at, line, col))

        if name in NO_OPS:
            continue  # a jump to it lands on the next instruction (one loop head for `continue` and the end)
        if name in SIMPLE:
            op(SIMPLE[name])
        elif name in ("LOAD_FAST", "LOAD_FAST_CHECK"):
            op("load_fast", argval)
        elif name == "LOAD_FAST_LOAD_FAST":
            op("load_fast", argval[0])
            op("load_fast", argval[1], at=ins.offset + 1)
        elif name == "STORE_FAST_STORE_FAST":
            op("store_fast", argval[0])
            op("store_fast", argval[1], at=ins.offset + 1)
        elif name == "STORE_FAST_LOAD_FAST":
            op("store_fast", argval[0])
            op("load_fast", argval[1], at=ins.offset + 1)
        elif name == "LOAD_CONST":
            op("load_const", argval)
        elif name == "RETURN_CONST":
            op("load_const", argval)
            op("return", at=ins.offset + 1)
        elif name == "LOAD_GLOBAL":
            op("load_global", (argval, PY >= (3, 11) and bool(oparg & 1)))
        elif name == "LOAD_CLOSURE":
            op("load_closure", argval)
        elif name == "MAKE_FUNCTION":
            op("make_function", oparg)
        elif name == "SET_FUNCTION_ATTRIBUTE":
            op("set_function_attribute", oparg)
        elif name == "LOAD_DEREF":
            op("load_deref", argval)
        elif name == "STORE_FAST":
            op("store_fast", argval)
        elif name == "STORE_DEREF":
            op("store_deref", argval)
        elif name == "LOAD_ATTR":
            op("load_attr", (argval, PY >= (3, 12) and bool(oparg & 1)))
        elif name == "LOAD_METHOD":
            op("load_attr", (argval, True))
        elif name == "STORE_ATTR":
            op("store_attr", argval)
        elif name == "BINARY_OP":
            op("binop", ins.argrepr)
        elif name.startswith(("BINARY_", "INPLACE_")) and name.split("_", 1)[1] in BINARY:
            sym = BINARY[name.split("_", 1)[1]]
            op("binop", sym + "=" if name.startswith("INPLACE_") else sym)
        elif name in UNARY:
            op("unary", UNARY[name])
        elif name == "CALL_INTRINSIC_1" and ins.argrepr == "INTRINSIC_UNARY_POSITIVE":
            op("unary", "+")
        elif name == "COMPARE_OP":
            sym = str(argval)
            op("compare", sym[5:-1] if sym.startswith("bool(") else sym)
        elif name == "IS_OP":
            op("compare", "is not" if oparg else "is")
        elif name == "CONTAINS_OP":
            op("compare", "not in" if oparg else "in")
        elif name in ("CALL", "CALL_FUNCTION", "CALL_METHOD"):
            op("call", oparg)
        elif name in ("CALL_KW", "CALL_FUNCTION_KW"):
            op("call_kw", oparg)
        elif name == "KW_NAMES":
            op("kw_names", code.co_consts[oparg])
        elif name == "BUILD_TUPLE":
            op("build_tuple", oparg)
        elif name == "BUILD_SLICE":
            op("build_slice", oparg)
        elif name == "UNPACK_SEQUENCE":
            op("unpack", oparg)
        elif name == "COPY":
            op("copy", oparg)
        elif name == "DUP_TOP":
            op("copy", 1)
        elif name == "DUP_TOP_TWO":
            op("copy", 2)
            op("copy", 2, at=ins.offset + 1)
        elif name == "SWAP":
            op("swap", oparg)
        elif name in ("ROT_TWO", "ROT_THREE", "ROT_FOUR"):
            op("rot", {"ROT_TWO": 2, "ROT_THREE": 3, "ROT_FOUR": 4}[name])
        elif name in JUMPS:
            op("jump", target=argval)
        elif name.replace("_FORWARD", "").replace("_BACKWARD", "") in COND_JUMPS:
            op("cjump", COND_JUMPS[name.replace("_FORWARD", "").replace("_BACKWARD", "")], target=argval)
        elif name in ("JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP"):
            op("jump_or_pop", "false" if "FALSE" in name else "true", target=argval)
        elif name == "FOR_ITER":
            op("for_iter", target=argval)
        elif name == "END_FOR":
            op("end_for", END_FOR_POPS)
        else:
            what = {"BUILD_LIST": "list display",
                    "LIST_APPEND": "list comprehension", "BUILD_MAP": "dict display", "SETUP_FINALLY": "try",
                    "BEFORE_WITH": "with", "SETUP_WITH": "with", "PUSH_EXC_INFO": "try",
                    "RAISE_VARARGS": "raise", "FORMAT_VALUE": "f-string", "FORMAT_SIMPLE": "f-string",
                    "YIELD_VALUE": "yield", "IMPORT_NAME": "import", "LOAD_ASSERTION_ERROR": "assert",
                    "STORE_GLOBAL": "global assignment", "DELETE_FAST": "del",
                    "LOAD_FAST_AND_CLEAR": "comprehension"}.get(name, f"bytecode {name}")
            raise UnsupportedError(f"{what} in a function without source", (code.co_filename, line, col),
                                   code.co_name, "define the function in a file, or keep to assignments, "
                                   "arithmetic, calls, if/for/while and return")
    starts = [o.offset for o in ops]
    return [o if o.target is None or o.target in starts else
            Op(o.kind, o.arg, starts[bisect.bisect_left(starts, o.target)], o.offset, o.line, o.col) for o in ops]


__all__ = ["END_FOR_POPS", "EXIT_KEEPS_ITERATOR", "NULL_ABOVE", "QUALNAME_ON_STACK", "Op", "normalise"]
