"""Loop versioning for bounds checks: one range test before a loop instead of one per access.

A ``for v in range(start, stop[, step])`` loop (``step`` a literal) whose
body indexes an array with ``v + c`` is lowered twice::

    if all_in_bounds(a, axis, lo + c, hi + c, ...):   # lo..hi: every value v takes
        <the loop, those accesses unchecked>
    else:
        <the loop, every access checked>              # raises exactly where Python does

The first copy runs only when no covered access can go out of bounds, so
both copies compute the same thing; the checked copy keeps Python's
behaviour (writes before a bad index done, none after). This is LLVM's
inductive range check elimination done at the source level, where the
induction variable is known. An index component is covered when it is an
int literal, or ``name``/``name + c``/``name - c`` with ``name`` the loop
variable or a parameter / enclosing loop variable the loop body never
assigns; the array must be a parameter the loop body never assigns.
With bounds checks off (or for non-arrays) ``all_in_bounds`` is a
constant, so only one copy survives.
"""

from __future__ import annotations

import ast


def _int(node) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _int(node.operand)
        return -v if v is not None else None
    return None


def _affine(node) -> tuple[str | None, int] | None:
    """``(name, c)`` for ``name + c`` (``name`` None for a literal), else None."""
    c = _int(node)
    if c is not None:
        return None, c
    if isinstance(node, ast.Name):
        return node.id, 0
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        left, right = node.left, _int(node.right)
        if isinstance(left, ast.Name) and right is not None:
            return left.id, right if isinstance(node.op, ast.Add) else -right
        c = _int(left)
        if isinstance(node.op, ast.Add) and isinstance(node.right, ast.Name) and c is not None:
            return node.right.id, c
    return None


def stored_names(stmts) -> set[str]:
    return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def step_sign(call: ast.Call) -> int | None:
    """+1 or -1 for a range whose step is absent or a literal, else None."""
    if len(call.args) < 3:
        return 1
    step = _int(call.args[2])
    return None if not step else (1 if step > 0 else -1)


def covered_accesses(loop: ast.For, params, enclosing) -> list[tuple[ast.Subscript, str, list]]:
    """``(subscript, array name, [(axis, name, c)])`` for every access the range test can cover."""
    if not isinstance(loop.target, ast.Name):
        return []
    var, stored = loop.target.id, stored_names(loop.body)
    if var in stored:
        return []
    invariant = (set(params) | set(enclosing)) - stored - {var}
    found = []
    for stmt in loop.body:
        for sub in ast.walk(stmt):
            if not (isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name)
                    and sub.value.id in params and sub.value.id not in stored):
                continue
            elts = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
            maybe = [_affine(e) for e in elts]
            comps = [c for c in maybe if c is not None]
            if len(comps) < len(maybe) or any(c[0] is not None and c[0] != var and c[0] not in invariant
                                              for c in comps):
                continue
            if any(c[0] == var for c in comps):
                found.append((sub, sub.value.id, [(k, n, c) for k, (n, c) in enumerate(comps)]))
    return found
