"""Shadows of globals: a global that differentiated code may write floats into
gets a shadow global of the same type (``__gpuc_ad_shadow.<name>``, internal,
zero-initialised), as Enzyme gives active globals shadows.

A global is given one when some function of the module writes it (a store,
``memcpy``/``memset`` or atomic whose base object is the global) and its
memory holds floats; read-only globals stay constant. Each differentiation
call (``__enzyme_autodiff``, ``__enzyme_fwddiff``, ``__enzyme_augmentfwd``)
zeroes the shadows of the globals its function reaches before it runs, so
every call starts from zero adjoints (Enzyme's convention for globals it
shadows itself); ``__enzyme_reverse`` continues from its augmented call.
Globals of other address spaces (GPU shared and device memory) get none:
zeroing them from every thread would race.
"""

from __future__ import annotations

import re

from gpucompiler.llvm import Builder, ConstantExpr, Function, GlobalVariable, Instruction, const_int, types as T

from .emit import has_float
from .emit import declare, sizeof, zero

_ADDRESS = ("getelementptr", "bitcast", "addrspacecast")
#: a global's name as IR text spells it (printable ASCII without ``"`` and ``\\``: not escaped)
_SPELLED = re.compile(r'[ !#-\[\]-~]+')
_WRITES = ("store", "atomicrmw", "cmpxchg")


def base_global(v) -> GlobalVariable | None:
    """The global a pointer (instruction or constant expression chain) is derived from, or None."""
    seen = 0
    while isinstance(v, (Instruction, ConstantExpr)) and v.opcode in _ADDRESS and seen < 64:
        v = v.operands[0]
        seen += 1
    return v if isinstance(v, GlobalVariable) else None


def _written(inst) -> GlobalVariable | None:
    op = inst.opcode
    if op in _WRITES:
        return base_global(inst.pointer_operand if op == "store" else inst.operands[0])
    if op == "call":
        name = getattr(inst.callee, "name", "") or ""
        if name.startswith(("llvm.memcpy.", "llvm.memmove.", "llvm.memset.")):
            return base_global(inst.args[0])
    return None


class GlobalShadows:
    """The shadow of every global that differentiated code may write floats into."""

    def __init__(self, module):
        self.module = module
        #: primal global -> its shadow global
        self.of: dict[GlobalVariable, GlobalVariable] = {}
        self._exprs: dict = {}
        writable = [g.name for g in module.globals.values() if not g.is_constant and g.addrspace == 0]
        spelled = all(_SPELLED.fullmatch(name) for name in writable)
        for fn in module.functions.values():
            left = module.unparsed.get(fn)
            if left is not None and spelled and not any(name in left for name in writable):
                continue  # a body not parsed yet that names no global it could write
            for inst in fn.instructions():
                g = _written(inst)
                if g is not None and g not in self.of and self._wants_shadow(g, inst):
                    self.of[g] = self._make(g)

    @staticmethod
    def _wants_shadow(g: GlobalVariable, inst) -> bool:
        if g.is_constant or g.addrspace != 0 or g.name.startswith("__enzyme_"):
            return False
        stored = inst.value_operand.type if inst.opcode == "store" else None
        return has_float(g.value_type) or (stored is not None and has_float(stored))

    def _make(self, g: GlobalVariable) -> GlobalVariable:
        m = re.search(r"align (\d+)", g.suffix)
        align = f", align {m.group(1)}" if m else ""
        sh = GlobalVariable(f"__gpuc_ad_shadow.{g.name}", g.value_type, prefix="internal",
                            initializer=zero(g.value_type), suffix=align)
        return self.module.add_global(sh)

    # -- queries ----------------------------------------------------------------
    def shadow(self, v):
        """The shadow of constant pointer ``v`` (a shadowed global or an address expression over
        one), or None."""
        if isinstance(v, GlobalVariable):
            return self.of.get(v)
        if not isinstance(v, ConstantExpr) or v.opcode not in _ADDRESS or base_global(v) not in self.of:
            return None
        hit = self._exprs.get(v)
        if hit is None:
            base = self.shadow(v.operands[0])
            assert base is not None, "the base of a shadowed address has a shadow"
            hit = self._exprs[v] = ConstantExpr(v.type, v.opcode, list(v.parts), [base, *v.operands[1:]])
        return hit

    def operands_with_shadow(self, fn) -> dict:
        """Constant pointers used by ``fn`` that have a shadow -> the shadow."""
        out = {}
        for inst in fn.instructions():
            for o in inst.operands:
                if isinstance(o, (GlobalVariable, ConstantExpr)) and o not in out:
                    sh = self.shadow(o)
                    if sh is not None:
                        out[o] = sh
        return out

    def reached(self, fn) -> list[GlobalVariable]:
        """The shadowed globals ``fn`` and the functions it calls use, in module order."""
        used, seen, work = set(), set(), [fn]
        while work:
            f = work.pop()
            if f in seen or f.is_declaration:
                continue
            seen.add(f)
            for inst in f.instructions():
                for o in inst.operands:
                    if isinstance(o, Function):
                        work.append(o)
                    g = base_global(o) if isinstance(o, (GlobalVariable, ConstantExpr)) else None
                    if g in self.of:
                        used.add(g)
        return [g for g in self.of if g in used]

    def callees(self) -> frozenset[str]:
        """Names of the defined functions that use a shadowed global, themselves or through the
        functions they call: a call of one carries derivatives even with no varied argument
        (``get()`` returning what ``put(x)`` stored)."""
        if not self.of:
            return frozenset()
        callers: dict[Function, set[Function]] = {}
        work = []
        for fn in self.module.functions.values():
            if fn.is_declaration:
                continue
            direct = False
            for inst in fn.instructions():
                for o in inst.operands:
                    if isinstance(o, Function):
                        callers.setdefault(o, set()).add(fn)
                    elif not direct and isinstance(o, (GlobalVariable, ConstantExpr)) and base_global(o) in self.of:
                        direct = True
            if direct:
                work.append(fn)
        out: set[Function] = set()
        while work:
            f = work.pop()
            if f not in out:
                out.add(f)
                work += callers.get(f, ())
        return frozenset(f.name for f in out)

    def seed_calls(self, act, callees: frozenset[str]) -> None:
        """Calls in ``act``'s function of ``callees`` (see :meth:`callees`) carry derivatives through
        the globals with no varied argument: ``get()`` returns what ``put(x)`` stored, ``reset()``
        overwrites it and drops its adjoint. Each is marked varied (a float or aggregate result
        active, a pointer result shadowed, a void call active so that it is differentiated) and the
        analysis propagates from them."""
        grew = False
        for inst in act.fn.instructions():
            callee = inst.callee if inst.opcode == "call" else None
            if not isinstance(callee, Function) or callee.name not in callees:
                continue
            if inst in act.active or inst in act.shadowed:
                continue
            (act.shadowed if inst.type.kind == "ptr" else act.active).add(inst)
            grew = True
        if grew:
            act._run()  # the analysis's fixpoint again, from the seeds

    def zero_before(self, b: Builder, fn) -> None:
        """Zero the shadows of the globals ``fn`` reaches, at ``b``'s position."""
        for g in self.reached(fn):
            memset = declare(self.module, "llvm.memset.p0.i64",
                             T.function(T.void, [T.ptr(), T.i8, T.i64, T.i1]))
            b.call(memset, [self.of[g], const_int(T.i8, 0), const_int(T.i64, sizeof(g.value_type)),
                            const_int(T.i1, 0)])
