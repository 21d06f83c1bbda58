"""Type analysis of memory by byte offset: which scalar types a location holds.

A pointer is located as ``(base object, offset ≡ c mod s)`` by walking its
GEPs back to the base (``s == 0``: the offset is exactly ``c``; a variable
index over elements of ``n`` bytes makes it ``c mod gcd(s, n)``). Every
access reached from the base (loads, stores, typed GEPs, the allocated type
of an ``alloca``, and the bytes ``memcpy`` brings in from another base)
records the scalar leaves it touches. :func:`types_at` answers which scalar
types overlap ``[offset, offset + size)``: Enzyme's question "what do these
bytes hold", asked of an integer load/store or a memcpy.

:func:`retype_integer_copies` uses it before any analysis: an integer
load whose memory holds floats and whose only users are stores (a ``memcpy``
that instcombine or clang turned into ``load i64``/``store i64``, or a
type-punned copy) becomes a float load and float stores, so the derivative
moves with the bytes.
"""

from __future__ import annotations

import re
from math import gcd

from gpucompiler.llvm import Argument, Builder, Instruction, types as T

from .emit import alignof, sizeof, zero

_ADDRESS = ("getelementptr", "bitcast", "addrspacecast", "freeze")


def field_offset(t: T.StructType, k: int) -> int:
    """Byte offset of element ``k`` of struct ``t``."""
    off = 0
    for j, e in enumerate(t.elements or ()):
        a = 1 if t.packed else alignof(e)
        off = (off + a - 1) // a * a
        if j == k:
            return off
        off += sizeof(e)
    raise IndexError(k)


def _const(v):
    val = getattr(v, "value", None)
    return val if isinstance(val, int) and not isinstance(val, bool) and v.type.kind == "int" else None


def _index_form(v, depth: int = 0) -> tuple[int, int]:
    """``(c, s)``: integer ``v`` is ``c`` plus a multiple of ``s`` (``s == 0``: exactly ``c``), read
    through ``add``/``mul``/``shl``/``or disjoint`` by constants (a record of ``n`` bytes indexed as
    ``i * n + k`` in an ``i8`` GEP, the layout of tapes), and through ``phi``/``select`` of such values
    (the join of their forms: what GVN leaves when it merges two equal offset computations). Unknown
    values are ``(0, 1)``."""
    k = _const(v)
    if k is not None:
        return k, 0
    if not isinstance(v, Instruction) or depth > 6 or v.opcode not in ("add", "mul", "shl", "or", "sext",
                                                                      "zext", "phi", "select"):
        return 0, 1
    if v.opcode in ("phi", "select"):
        options = [x for x, _ in v.incoming] if v.opcode == "phi" else v.operands[1:]
        forms = [_index_form(o, depth + 1) for o in options]
        c0, s = forms[0][0], 0
        for c, step in forms:
            s = gcd(gcd(s, step), abs(c - c0))
        return c0, s
    if v.opcode in ("sext", "zext"):
        return _index_form(v.operands[0], depth + 1)
    a, b = (_index_form(o, depth + 1) for o in v.operands)
    if v.opcode == "add" or (v.opcode == "or" and "disjoint" in v.flags):
        return a[0] + b[0], gcd(a[1], b[1])
    if v.opcode == "mul" and b[1] == 0:
        return a[0] * b[0], a[1] * b[0]
    if v.opcode == "mul" and a[1] == 0:
        return a[0] * b[0], b[1] * a[0]
    if v.opcode == "shl" and b[1] == 0 and 0 <= b[0] < 63:
        return a[0] << b[0], a[1] << b[0]
    return 0, 1


def _gep_step(inst, c: int, s: int):
    """Offset after GEP ``inst`` from ``(c, s)``; None when a step is not understood."""
    t = inst.source_element_type
    for k, idx in enumerate(inst.indices):
        if k > 0:
            if t.kind == "struct":
                j = _const(idx)
                if j is None:
                    return None
                c += field_offset(t, j)
                t = t.elements[j]
                continue
            if t.kind not in ("array", "vector"):
                return None
            t = t.element
        n = sizeof(t)
        jc, js = _index_form(idx)
        c += jc * n
        s = gcd(s, js * n)
    return c, s, t


def locate(p):
    """``(base, c, s, t)``: ``p`` points at offset ``c`` (mod ``s``; 0: exact) of ``base``; ``t`` is
    the type the last GEP indexed (None if unknown). ``c, s`` are (0, 1) when the walk gives up."""
    steps = []
    seen = set()
    while isinstance(p, Instruction) and p.opcode in _ADDRESS and p not in seen:
        seen.add(p)
        steps.append(p)
        p = p.operands[0]
    c, s, t = 0, 0, None
    for g in reversed(steps):
        if g.opcode != "getelementptr":
            continue
        step = _gep_step(g, c, s)
        if step is None:
            return p, 0, 1, None
        c, s, t = step
    if s:
        c %= s
    return p, c, s, t


def _leaves(t, c, out, kind_only=False):
    """Scalar leaves of ``t`` at offset ``c``: ``(offset, size, scalar type)``."""
    k = t.kind
    if k in ("float", "int", "ptr"):
        out.append((c, sizeof(t), t))
    elif k in ("array", "vector"):
        n = sizeof(t.element)
        count = t.count
        if count > 64:
            # a long array: one leaf per element type, periodic
            out.append((c, n, t.element) if t.element.kind in ("float", "int", "ptr") else (c, n, None))
            return
        for j in range(count):
            _leaves(t.element, c + j * n, out)
    elif k == "struct":
        for j, e in enumerate(t.elements or ()):
            _leaves(e, c + field_offset(t, j), out)


class _Base:
    """Typed accesses of one base object: ``(c, s, size, scalar type)``."""

    def __init__(self):
        self.items: list = []
        self.copies: list = []  # (c, s, other pointer, length)

    def add(self, t, c, s):
        leaves = []
        _leaves(t, c, leaves)
        for lc, n, lt in leaves:
            if lt is not None and lt is not T.i8:  # bytes say nothing about their type
                self.items.append((lc % s if s else lc, s, n, lt))


#: the parameter attribute saying what a pointer argument's memory holds (Enzyme's type trees, e.g.
#: ``"enzyme_type"="{[-1]:Pointer, [-1,-1]:Float@double}"``: a pointer to doubles at every offset)
ENZYME_TYPE = "enzyme_type"
_DECLARED = re.compile(r'"enzyme_type"\s*=\s*"\{[^"]*\[-1,\s*-1\]:\s*Float@(double|float|half)\b')


def _scan(base) -> _Base:
    info = _Base()
    declared = _DECLARED.search(base.attrs) if isinstance(base, Argument) else None
    if declared is not None:  # every element of the array behind the pointer
        t = T.SIMPLE[declared.group(1)]
        info.add(t, 0, sizeof(t))
    if isinstance(base, Instruction) and base.opcode == "alloca":
        t = base.allocated_type
        if t is not None:
            info.add(t, 0, sizeof(t))
    vt = getattr(base, "value_type", None)
    if vt is not None and getattr(base, "type", None) is not None and base.type.kind == "ptr":
        info.add(vt, 0, 0)
    work, seen = [(base, 0, 0)], set()
    while work:
        v, c, s = work.pop()
        if (v, c, s) in seen:
            continue
        seen.add((v, c, s))
        for u in v.users:
            if not isinstance(u, Instruction):
                continue
            op = u.opcode
            if op == "getelementptr" and u.operands[0] is v:
                step = _gep_step(u, c, s)
                if step is None:
                    work.append((u, 0, 1))
                    continue
                nc, ns, t = step
                if t is not None and not (isinstance(t, T.IntType) and t.bits <= 8):
                    info.add(t, nc, ns)
                work.append((u, nc % ns if ns else nc, ns))
            elif op in ("bitcast", "addrspacecast", "freeze") and u.type.kind == "ptr":
                work.append((u, c, s))
            elif op in ("phi", "select"):  # a merge of pointers at one exact offset of their bases stays there
                merged = [m for m, _ in u.incoming] if op == "phi" else u.operands[1:]  # (base pointers of a
                # grown tape: 0; the data slots of two arrays' records: 8)
                exact = s == 0 and all(_at_offset(m, c) for m in merged)
                work.append((u, c, 0) if exact else (u, 0, 1))
            elif op == "load" and u.pointer_operand is v:
                if not is_copy_load(u):
                    info.add(u.type, c, s)
            elif op == "store" and u.pointer_operand is v:
                if not is_copy_store(u):
                    info.add(u.operands[0].type, c, s)
            elif op in ("atomicrmw", "cmpxchg") and u.pointer_operand is v:
                info.add(u.operands[1].type, c, s)
            elif op == "call" and u.callee is not None and getattr(u.callee, "name", "").startswith(
                    ("llvm.memcpy.", "llvm.memmove.")):
                args = u.args
                n = _const(args[2])
                for k in (0, 1):
                    if args[k] is v:
                        info.copies.append((c, s, args[1 - k], n))
    return info


def _at_offset(p, c: int) -> bool:
    """Whether pointer ``p`` is exactly ``c`` bytes into its base object (a null or undefined one is anywhere)."""
    if getattr(p, "ref", None) in ("null", "undef", "poison"):
        return True
    _, pc, ps, _ = locate(p)
    return (pc, ps) == (c, 0)


def is_copy_load(inst) -> bool:
    """An integer load whose value is only stored: it copies bytes and says nothing of their type."""
    return (_int_like(inst.type) and bool(inst.users)
            and all(isinstance(u, Instruction) and u.opcode == "store" and u.operands[0] is inst
                    and u.operands[1] is not inst for u in inst.users))


def is_copy_store(inst) -> bool:
    """A store of an integer load's value, or of integer zero (which is any type's zero)."""
    v = inst.value_operand
    if not _int_like(v.type):
        return False
    if getattr(v, "ref", None) in ("0", "zeroinitializer"):
        return True
    return isinstance(v, Instruction) and v.opcode == "load" and is_copy_load(v)


class MemoryTypes:
    """Per-function cache of :func:`_scan` results; answers :meth:`types_at`."""

    def __init__(self):
        self._bases: dict = {}

    def _info(self, base) -> _Base:
        info = self._bases.get(base)
        if info is None:
            info = self._bases[base] = _scan(base)
        return info

    def types_at(self, p, size: int | None) -> set:
        """Scalar types overlapping ``[p, p + size)`` (``size`` None: anywhere in ``p``'s object)."""
        base, c, s, _ = locate(p)
        return self._at(base, c, s, size, 0)

    def _at(self, base, c, s, size, depth) -> set:
        info = self._info(base)
        out = set()
        for ic, is_, n, t in info.items:
            if size is None or _overlaps(c, s, size, ic, is_, n):
                out.add(t)
        if depth >= 4:
            return out
        for cc, cs, other, n in info.copies:
            if size is not None and n is not None and not _overlaps(c, s, size, cc, cs, n):
                continue
            ob, oc, os_, _ = locate(other)
            g = gcd(s, cs)
            if size is not None and n is not None and (g == 0 or g >= n):
                rs = [c - cc] if g == 0 else [(c - cc) % g, (c - cc) % g - g]
                for r in rs:
                    lo, hi = max(r, 0), min(r + size, n)
                    if hi > lo:
                        out |= self._at(ob, oc + lo, os_, hi - lo, depth + 1)
                continue
            if size is not None and n is None:  # a copy of unknown length: byte b lands at b - cc + oc
                g = gcd(gcd(s, cs), os_)
                out |= self._at(ob, (c - cc + oc) % g if g else c - cc + oc, g, size, depth + 1)
                continue
            out |= self._at(ob, oc, os_, n, depth + 1)  # where in the copy is not known: all of it
        return out


    def misaligned_floats(self, p, size: int | None, unit: int) -> bool:
        """Whether a float in ``[p, p + size)`` (``size`` None: anywhere in ``p``'s object) is known to start at
        a distance from ``p`` that is not a multiple of ``unit`` bytes (a packed record): a copy's adjoint moved
        ``unit`` bytes at a time would split it. Accesses at offsets known only loosely are no evidence."""
        base, c, s, _ = locate(p)
        return self._misaligned(base, c, s, size, unit, 0)

    def _misaligned(self, base, c, s, size, unit, depth) -> bool:
        info = self._info(base)
        for ic, is_, n, t in info.items:
            if t.kind == "float" and (size is None or _overlaps(c, s, size, ic, is_, n)) and \
                    gcd(s, is_) % unit == 0 and (ic - c) % unit:
                return True
        if depth >= 4:
            return False
        for cc, cs, other, _ in info.copies:
            ob, oc, os_, _ = locate(other)
            g = gcd(gcd(s, cs), os_)
            if self._misaligned(ob, (c - cc + oc) % g if g else c - cc + oc, g, size, unit, depth + 1):
                return True
        return False


def _overlaps(c1, s1, n1, c2, s2, n2) -> bool:
    g = gcd(s1, s2)
    if g == 0:
        return c2 - n1 < c1 < c2 + n2
    d = (c2 - c1) % g
    return d < n1 or d > g - n2


def float_view(types: set, t: T.Type):
    """The float type (scalar or vector) with ``t``'s size when ``types`` holds one float type and no
    integers or pointers; else None."""
    floats = {x for x in types if x.kind == "float"}
    if len(floats) != 1 or len(floats) != len(types):
        return None
    (f,) = floats
    n, fn = sizeof(t), sizeof(f)
    if n == fn:
        return f
    if n % fn == 0:
        return T.vector(n // fn, f)
    return None


def _int_like(t) -> bool:
    return t.scalar.kind == "int"


def retype_integer_copies(fn, mt: MemoryTypes | None = None) -> None:
    """Integer loads of float memory used only by stores become float loads and stores (same bits);
    integer constants stored into float memory become float constants of the same bits."""
    mt = mt or MemoryTypes()
    b = Builder()
    for inst in list(fn.instructions()):
        if inst.opcode == "load" and _int_like(inst.type) and inst.users:
            if not is_copy_load(inst):
                continue
            users = inst.users
            ft = float_view(mt.types_at(inst.pointer_operand, sizeof(inst.type)), inst.type)
            if ft is None and not mt.types_at(inst.pointer_operand, sizeof(inst.type)):
                # bytes of unknown type copied into memory holding floats: they are those floats
                views = {float_view(mt.types_at(u.operands[1], sizeof(inst.type)), inst.type) for u in users}
                ft = next(iter(views)) if len(views) == 1 else None
            if ft is None:
                continue
            b.position_before(inst)
            new = b.load(ft, inst.pointer_operand, align=inst.alignment)
            for u in list(users):
                b.position_before(u)
                b.store(new, u.operands[1], align=u.alignment)
                u.erase()
            inst.erase()
        elif inst.opcode == "store" and _int_like(inst.value_operand.type):
            v = inst.value_operand
            if getattr(v, "ref", None) not in ("0", "zeroinitializer"):
                continue
            ft = float_view(mt.types_at(inst.pointer_operand, sizeof(v.type)), v.type)
            if ft is None:
                continue
            b.position_before(inst)
            b.store(zero(ft), inst.pointer_operand, align=inst.alignment)
            inst.erase()
