"""Vector forward mode with one shadow buffer per argument (Enzyme's ``-enzyme-vectorize-at-leaf-nodes``).

``__enzyme_fwddiff(f, enzyme_width, N, enzyme_dup, x, dx, ...)`` with one shadow after each duplicated
pointer (instead of ``N``) means: ``dx`` holds the ``N`` tangents of each double of ``x`` side by side,
the ``N`` lanes of the double at byte ``o`` of ``x`` at byte ``o * N`` of ``dx``. Lane ``k``'s shadow of
an argument is ``dx + 8 k`` and every address computed from it moves ``N`` times as far as the primal's
(:func:`scaled_address`). This holds for memory of doubles only: a function that reads or writes its
arguments' memory otherwise (other types, pointers kept in it, copies, calls given it) or returns a
derivative is an :class:`ADError` naming what.
"""

from __future__ import annotations

from gpucompiler.llvm import Function, const_int, types as T

from .errors import unsupported

#: the size of the one element type the convention covers (``double``)
LANE_BYTES = 8
#: instructions that only move a pointer with a shadow (their shadows are computed alike)
_ADDRESS = ("getelementptr", "bitcast", "addrspacecast", "phi", "select", "freeze")


def check(fn: Function, act) -> None:
    """Raise ADError unless every use of memory with a shadow in ``fn`` is a double load or store, through
    addresses computed by ``getelementptr``/``phi``/``select``."""
    where = "vector forward mode with one shadow buffer per argument (enzyme_width, one shadow each)"
    if fn.return_type.kind == "ptr" or fn.return_type.scalar.kind == "float" or \
            fn.return_type.kind in ("struct", "array"):
        raise unsupported(f"{where}: @{fn.name} returns {fn.return_type}; only functions writing their "
                          "derivatives into memory (returning void or an integer) are supported", None, fn)
    for inst in fn.instructions():
        touched = [o for o in inst.operands if o in act.shadowed]
        if not touched and inst not in act.shadowed:
            continue
        op = inst.opcode
        if op in _ADDRESS:
            continue
        if op == "load" and inst.type is T.double and not touched[1:]:
            continue
        if op == "store" and inst.operands[0].type is T.double and inst.operands[0] not in act.shadowed:
            continue
        what = (f"a {inst.type} load" if op == "load" else
                f"a store of {inst.operands[0].type}" if op == "store" else f"'{op}'")
        raise unsupported(f"{where}: {what} on memory with a shadow; only doubles read and written through "
                          "addresses into the arguments are supported", inst, fn)


def lane_shadow(b, shadow, lane: int):
    """Lane ``lane``'s shadow of an argument whose one shadow buffer is ``shadow``."""
    return b.gep(T.i8, shadow, [const_int(T.i64, lane * LANE_BYTES)]) if lane else shadow


def scaled_address(s, inst) -> None:
    """The shadow of address ``inst`` (a ``getelementptr`` of a pointer with a shadow): the primal's byte
    distance from its base, ``width`` times, from the base's shadow."""
    base = inst.operands[0]
    b = s.b
    distance = b.sub(b.ptrtoint(s.vmap[inst], T.i64), b.ptrtoint(s.val(base), T.i64))
    scaled = b.mul(distance, const_int(T.i64, s.width))
    s.shadow_map[inst] = b.gep(T.i8, s.shadow(base, inst), [scaled])
