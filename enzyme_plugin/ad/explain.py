"""Readable names for the values a type-analysis error is about, and what would settle it.

An error of the type analysis (what memory holds, what a float's bits become) names the value as the
user wrote it: the C variable from the debug info (``#dbg_declare``/``#dbg_value`` records, clang ``-g``),
else what the value is ("the 2nd argument of `f`", "a pointer loaded from `p` at line 12"), never an
unnamed IR value. :func:`settle` says what would settle it (``enzyme_const``, a floating-point type, ``-g``).
"""

from __future__ import annotations

from gpucompiler.llvm import Argument, GlobalVariable, Instruction

#: how deep :func:`describe` follows loads and address arithmetic
_DEPTH = 4


def _function(v):
    if isinstance(v, Argument):
        return v.function
    block = getattr(v, "parent", None)
    return getattr(block, "parent", None)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _unquote(text) -> str | None:
    return text.strip().strip('"') if isinstance(text, str) else None


def variable_name(v) -> str | None:
    """The source variable that ``v`` holds (``#dbg_value``) or whose memory it is (``#dbg_declare``)."""
    fn = _function(v)
    for block in getattr(fn, "blocks", None) or ():
        for inst in block.instructions:
            for record in inst.debug_records:
                if record.kind not in ("declare", "value", "assign") or not record.operands:
                    continue
                if record.operands[0] is v:
                    var = next((p for p in record.parts if hasattr(p, "field") and p.field("name")), None)
                    name = _unquote(var.field("name")) if var is not None else None
                    if name:
                        return name
    return None


def line_of(inst) -> str | None:
    """The source line of ``inst``'s ``!dbg`` location, or None."""
    node = (getattr(inst, "metadata", None) or {}).get("dbg")
    line = _unquote(node.field("line")) if node is not None and hasattr(node, "field") else None
    return line if line and line != "0" else None


def has_debug_info(inst) -> bool:
    """Whether ``inst`` or its function carries debug info (clang ``-g``)."""
    fn = _function(inst)
    return line_of(inst) is not None or "dbg" in (getattr(fn, "metadata", None) or {})


def _at(inst) -> str:
    line = line_of(inst)
    return f" at line {line}" if line else ""


def describe(v, depth: int = 0) -> str:
    """``v`` as the user knows it: `name` from the debug info, else what it is."""
    name = variable_name(v)
    if name:
        return f"`{name}`"
    if isinstance(v, Argument):
        fn = v.function
        args = list(fn.args) if fn is not None else []
        index = next((k for k, a in enumerate(args) if a is v), None)
        owner = f"`{fn.name}`" if fn is not None else "the function"
        return f"the {_ordinal(index + 1)} argument of {owner}" if index is not None else f"an argument of {owner}"
    if isinstance(v, GlobalVariable):
        return f"the global `{v.name}`"
    if not isinstance(v, Instruction):
        return "a constant"
    op = v.opcode
    if op in ("bitcast", "addrspacecast", "freeze") and depth < _DEPTH:
        return describe(v.operands[0], depth + 1)
    if op == "getelementptr" and depth < _DEPTH:
        return f"memory inside {describe(v.operands[0], depth + 1)}"
    if op == "alloca":
        fn = _function(v)
        return f"a local variable of `{fn.name}`{_at(v)}" if fn is not None else f"a local variable{_at(v)}"
    if op == "load" and depth < _DEPTH:
        slot = v.operands[0]
        if isinstance(slot, Instruction) and slot.opcode == "alloca":  # a local variable's value (-O0)
            name = variable_name(slot)
            stored = [u.operands[0] for u in slot.users if isinstance(u, Instruction) and u.opcode == "store"
                      and u.operands[1] is slot]
            if name:
                return f"`{name}`"
            if len(stored) == 1:  # a variable written once: what was written
                return describe(stored[0], depth + 1)
        return f"a value loaded from {describe(slot, depth + 1)}{_at(v)}"
    if op == "call":
        callee = getattr(v, "callee", None)
        callee_name = getattr(callee, "name", None) if getattr(callee, "sigil", None) == "@" else None
        return f"the result of `{callee_name}`{_at(v)}" if callee_name else f"the result of a call{_at(v)}"
    if op in ("phi", "select"):
        return f"a value chosen by a branch{_at(v)}"
    return f"a value computed{_at(v)}"


def argument_root(v) -> Argument | None:
    """The argument ``v`` is an address into (through casts and address arithmetic), or None."""
    for _ in range(16):
        if isinstance(v, Argument):
            return v
        if not isinstance(v, Instruction) or v.opcode not in ("getelementptr", "bitcast", "addrspacecast"):
            return None
        v = v.operands[0]
    return None


def settle(inst, pointer=None) -> str:
    """What would settle a type-analysis error at ``inst`` (about ``pointer``'s memory, when given)."""
    ways = []
    root = argument_root(pointer) if pointer is not None else None
    if root is not None:
        ways.append(f"pass {describe(root)} as `enzyme_const` if it carries no derivative")
    ways.append("keep the value in a floating-point variable (copy its bytes with memcpy or through a "
                "union member of type double/float, not through an integer variable)")
    return "; to settle it, " + ", or ".join(ways) + debug_hint(inst)


def debug_hint(inst) -> str:
    """`` (compile with -g ...)`` when ``inst`` has no debug info, else nothing."""
    return "" if has_debug_info(inst) else " (compile with -g for the C line and the variables' names)"
