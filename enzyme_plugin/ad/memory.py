"""Memory instructions: shadows in the forward sweep, adjoint accumulation in the reverse.

Forward rules ``fwd(sweep, inst)`` run after the primal copy of ``inst``;
reverse rules ``rev(r, inst)`` run in the reverse block of ``inst``'s block.
"""

from __future__ import annotations

from gpucompiler.llvm import Instruction, const_int, types as T

from .emit import has_float, is_float_like, sizeof, zero
from . import explain, gpu, leaf, stack
from .errors import unsupported
from .typeinfo import is_copy_store


def _align(inst):
    return inst.alignment


def fwd_alloca(s, inst):
    if inst not in s.act.shadowed:
        return
    copy = s.vmap[inst]
    size = sizeof(inst.allocated_type)
    n = const_int(T.i64, size)
    if inst.operands:
        cnt = copy.operands[0]
        if cnt.type is not T.i64:
            cnt = s.b.zext(cnt, T.i64) if cnt.type.bits < 64 else s.b.trunc(cnt, T.i64)
        n = s.b.mul(cnt, n)
    if s.heap_shadows:  # freed by the reverse of the alloca (rev_alloca)
        sh = s.b.call(s.engine.helper("tape_alloc"), [n])
    else:
        sh = copy.detached_copy("")
        for o in copy.operands:
            sh.append_operand(o)
        s.b.insert(sh)
    s.memset(sh, n)
    s.shadow_map[inst] = sh


def _int_access_check(s, inst, p, t):
    """An integer access of memory with a shadow must not touch floats or pointers (their
    derivative or shadow would be lost): copies were retyped, anything else is an error."""
    held = s.act.mem.types_at(p, sizeof(t))
    bad = sorted({str(x) for x in held if x.kind in ("float", "ptr")})
    if bad:
        what, verb = ("load from", "read") if inst.opcode == "load" else ("store into", "written")
        raise unsupported(f"integer {what} memory holding {', '.join(bad)} (an active bit pattern): "
                          f"{explain.describe(p)} holds {' and '.join(bad)} but is {verb} as {t}, which would "
                          f"lose its derivative{explain.settle(inst, p)}", inst, s.fn, quote=False)
    if inst.opcode == "store" and is_copy_store(inst) and not held:
        v = inst.value_operand
        src = v.pointer_operand if isinstance(v, Instruction) and v.opcode == "load" else None
        if src is not None and not s.act.mem.types_at(src, sizeof(t)):
            raise unsupported(f"cannot deduce the type of the bytes an integer copy ({t}) moves from "
                              f"{explain.describe(src)} to {explain.describe(p)}, memories with shadows: nothing "
                              f"loads or stores them with a type{explain.settle(inst, src)}", inst, s.fn,
                              quote=False)


def fwd_load(s, inst):
    p = inst.pointer_operand
    if p not in s.act.shadowed:
        return
    if inst.type.scalar.kind == "int":
        _int_access_check(s, inst, p, inst.type)
    if inst in s.act.shadowed or (s.tangents and inst in s.act.active):
        s.shadow_map[inst] = s.b.load(inst.type, s.shadow(p, inst), align=_align(inst))


def fwd_store(s, inst):
    v, p = inst.value_operand, inst.pointer_operand
    has = p in s.act.shadowed
    if v in s.act.active and not has:
        if s.engine.runtime_activity:  # Enzyme's runtime activity: the derivative through this memory is dropped
            return
        raise unsupported("active value stored into memory that has no shadow" + _origin(p) + RUNTIME_ACTIVITY,
                          inst, s.fn)
    if not has:
        return
    t = v.type
    sp = s.shadow(p, inst)
    if is_float_like(t):
        if s.tangents:
            tv = s.shadow_map.get(v) if v in s.act.active else None
            s.b.store(tv if tv is not None else zero(t), sp, align=_align(inst))
        return
    if t.kind == "ptr":
        sv = s.shadow_map.get(v)
        s.b.store(sv if sv is not None else zero(t), sp, align=_align(inst))
        return
    if t.kind in ("int",) or (t.kind == "vector" and t.element.kind == "int"):
        _int_access_check(s, inst, p, t)
        s.b.store(s.val(v), sp, align=_align(inst))
        return
    if _zero_aggregate(v):  # a struct set to zero (a tape's state): its shadow too
        s.b.store(zero(t), sp, align=_align(inst))
        return
    raise unsupported(f"store of {t} into active memory", inst, s.fn)


RUNTIME_ACTIVITY = ("; if that memory is meant to be constant (a Const argument or memory derived from one), "
                    "ask for runtime activity: autodiff(set_runtime_activity(Reverse), ...) drops the "
                    "derivatives that flow through memory without a shadow, as Enzyme's runtime activity does")


_ADDRESS_STEPS = ("getelementptr", "bitcast", "addrspacecast")


def unneeded_writes(fn, indices) -> list:
    """The stores and the atomic adds whose old value is unused of ``fn`` into the memory of its pointer
    arguments ``indices`` (``enzyme_dupnoneed``: their primal values are not needed afterwards), for each such
    argument whose addresses (the argument, ``getelementptr`` and casts of it) are used by such writes only:
    nothing in ``fn`` reads or passes on that memory, so leaving the writes out changes no value the
    derivative computes. An argument whose memory is used any other way keeps its writes."""
    out: list = []
    args = list(fn.args)
    for k in sorted(indices):
        writes, seen, work, ok = [], set(), [args[k]], True
        while work and ok:
            v = work.pop()
            for u in v.users:
                if not isinstance(u, Instruction) or id(u) in seen:
                    continue
                op = u.opcode
                if op in _ADDRESS_STEPS and u.operands[0] is v:
                    seen.add(id(u))
                    work.append(u)
                elif _plain_write(u, v):
                    seen.add(id(u))
                    writes.append(u)
                else:
                    ok = False
                    break
        if ok:
            out += writes
    return out


def _plain_write(inst, p) -> bool:
    """Whether ``inst`` only writes through address ``p``: a store of another value there, or an atomic
    read-modify-write of it whose old value is unused (neither volatile)."""
    if inst.is_volatile:
        return False
    if inst.opcode == "store":
        return inst.pointer_operand is p and inst.value_operand is not p
    return inst.opcode == "atomicrmw" and inst.operands[0] is p and inst.operands[1] is not p and not inst.users


def _zero_aggregate(v) -> bool:
    return v.type.kind in ("struct", "array") and getattr(v, "ref", None) in ("zeroinitializer", "undef", "poison")


def _origin(p) -> str:
    """Why ``p``'s memory may have no shadow, when its base object tells."""
    base = p
    while isinstance(base, Instruction) and base.opcode in ("getelementptr", "bitcast", "addrspacecast"):
        base = base.operands[0]
    if isinstance(base, Instruction) and base.opcode == "call" and getattr(base.callee, "sigil", "") != "@":
        return (" (it was returned by a call through a function pointer, which is not recognised as an "
                "allocation: call malloc/calloc/new directly)")
    return ""


def fwd_address(s, inst):
    """getelementptr / bitcast / addrspacecast: the same computation on the shadow."""
    if inst not in s.act.shadowed:
        return
    if s.leaf_lanes and inst.opcode == "getelementptr":
        leaf.scaled_address(s, inst)
        return
    copy = s.vmap[inst]
    sh = copy.detached_copy("")
    for k, o in enumerate(copy.operands):
        sh.append_operand(s.shadow(inst.operands[0], inst) if k == 0 else o)
    s.b.insert(sh)
    s.shadow_map[inst] = sh


FORWARD = {
    "alloca": fwd_alloca,
    "load": fwd_load,
    "store": fwd_store,
    "getelementptr": fwd_address,
    "bitcast": lambda s, i: fwd_address(s, i) if i.type.kind == "ptr" else None,
    "addrspacecast": fwd_address,
    "atomicrmw": lambda s, i: gpu.fwd_atomic(s, i),
    "cmpxchg": lambda s, i: gpu.fwd_atomic(s, i),
    "fence": lambda s, i: None,
}


# -- reverse -----------------------------------------------------------------
def rev_load(r, inst):
    if inst not in r.act.active:
        return
    d = r.take_adjoint(inst)
    sp = r.fwd_shadow(inst.pointer_operand, inst)
    if gpu.atomic_accumulate(r, inst, sp, d):
        return
    old = r.b.load(inst.type, sp, align=_align(inst))
    r.b.store(r.fadd(old, d), sp, align=_align(inst))


def rev_store(r, inst):
    v, p = inst.value_operand, inst.pointer_operand
    if p in r.act.shadowed and _zero_aggregate(v) and has_float(v.type):  # overwritten: adjoints dropped
        r.b.store(zero(v.type), r.fwd_shadow(p, inst), align=_align(inst))
        return
    if p not in r.act.shadowed or not is_float_like(v.type):
        return
    sp = r.fwd_shadow(p, inst)
    m = r.b.load(v.type, sp, align=_align(inst))
    r.b.store(zero(v.type), sp, align=_align(inst))
    if v in r.act.active:
        r.accumulate(v, m)


def rev_alloca(r, inst):
    """Every use of the alloca is reversed: free its shadow stack (a tape struct, :mod:`.stack`) and,
    in split mode, its heap shadow."""
    if inst not in r.act.shadowed:
        return
    stack.free_shadow_stacks(r, inst)
    if r.sweep.heap_shadows:
        r.b.call(r.engine.helper("tape_free"), [r.fwd_shadow(inst, inst)])


REVERSE = {"load": rev_load, "store": rev_store, "alloca": rev_alloca,
           "atomicrmw": lambda r, i: gpu.rev_atomic(r, i)}
