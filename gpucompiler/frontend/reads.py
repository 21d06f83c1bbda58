"""Which names code may read before it assigns them: liveness over Python's AST, statement by statement.

Used for ``prange`` loops: a variable the loop body assigns (private to each
iteration) has no value after the loop, so code after it must not read it
before assigning it again. Conservative: a branch counts as read where
either side reads, a name counts as assigned after a branch only where both
sides assign it, a loop body may run zero times or again, and any statement
other than an assignment, a branch or a loop reads every name it mentions.
"""

from __future__ import annotations

import ast

_LOOPS = (ast.For, ast.While)


def _loads(node: ast.AST | None) -> set[str]:
    if node is None:
        return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _assigned(targets) -> set[str]:
    """Names a whole-name assignment binds (``x = ``, ``x, y = ``), not ``a[i] = `` nor ``a.b = ``."""
    out: set[str] = set()
    for t in targets:
        if isinstance(t, ast.Name):
            out.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            out |= _assigned(t.elts)
    return out


def _run(stmts: list[ast.stmt], unset: set[str], read: set[str]) -> set[str]:
    """Run ``stmts`` with the names ``unset`` not assigned yet: add those they may read to ``read``;
    return the names still not assigned after them."""
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            read |= _loads(stmt.test) & unset
            unset = _run(stmt.body, set(unset), read) | _run(stmt.orelse, set(unset), read)
        elif isinstance(stmt, _LOOPS):  # later iterations start with fewer names unset: the first reads most
            head = stmt.iter if isinstance(stmt, ast.For) else stmt.test
            read |= _loads(head) & unset
            _run(stmt.body, unset - (_assigned([stmt.target]) if isinstance(stmt, ast.For) else set()), read)
            unset = _run(stmt.orelse, unset, read)  # the body may not run at all
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            read |= (_loads(stmt.value) | set().union(*(_loads(t) for t in targets))) & unset
            if isinstance(stmt, ast.AugAssign):
                read |= _assigned(targets) & unset  # x += 1 reads x
            unset = unset - _assigned(targets)
        else:
            read |= _loads(stmt) & unset
    return unset


def _path(stmts: list[ast.stmt], target: ast.stmt) -> list[tuple[list[ast.stmt], int, ast.stmt | None]] | None:
    """``(statements, index, their owner)`` from ``stmts`` down to ``target``, outermost first."""
    for k, stmt in enumerate(stmts):
        if stmt is target:
            return [(stmts, k, None)]
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                found = _path(inner, target)
                if found is not None:
                    return [(stmts, k, None), *((s, i, o if o is not None else stmt) for s, i, o in found)]
    return None


def read_after(body: list[ast.stmt], target: ast.stmt, names: set[str]) -> set[str]:
    """The names of ``names`` that code running after ``target`` (a statement of the function body
    ``body``, at any depth) may read before assigning them; ``target`` itself assigns none of them."""
    path = _path(body, target)
    assert path is not None, "the statement is in the body"
    read: set[str] = set()
    unset = set(names)
    for stmts, k, owner in reversed(path):
        unset = _run(stmts[k + 1:], unset, read)
        if isinstance(owner, _LOOPS) and stmts is owner.body:  # the loop around runs its body again
            if isinstance(owner, ast.While):
                read |= _loads(owner.test) & unset
            _run(owner.body, unset, read)
    return read
