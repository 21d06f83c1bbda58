"""Calls: math functions by rule, allocation with shadow allocations, memory
intrinsics, calls to defined functions differentiated recursively.

``forward(sweep, inst)`` runs in the forward sweep after the copied call;
``reverse(r, inst)`` in the reverse sweep.
"""

from __future__ import annotations

from gpucompiler.llvm import const_int, types as T

from .analysis import CONST, DUP, OUT, TAPE_ALLOC, ArgKind, callee_name, memory_type
from .emit import sizeof, zero
from . import allocators, explain, gpu, memory, openmp, stack
from .errors import VectorizedCodeError, unsupported
from .rules import MATH_FORWARD, MATH_REVERSE, derived_forward, math_name

#: calls that never carry derivatives (no memory of the caller written with floats)
INACTIVE = frozenset("printf fprintf puts putchar fflush fputs abort exit __assert_fail rand srand time clock "
                     "malloc_usable_size".split()) | openmp.INACTIVE
#: intrinsics with no derivative effect
_IGNORED_PREFIXES = ("llvm.lifetime.", "llvm.dbg.", "llvm.assume", "llvm.experimental.noalias.scope.decl",
                     "llvm.invariant.", "llvm.prefetch", "llvm.donothing", "llvm.sideeffect",
                     "llvm.stacksave", "llvm.stackrestore", "llvm.trap", "llvm.expect", "llvm.annotation",
                     "llvm.var.annotation", "llvm.umax", "llvm.umin", "llvm.smax",
                     "llvm.smin", "llvm.abs.i", "llvm.ctpop", "llvm.ctlz", "llvm.cttz", "llvm.fshl", "llvm.fshr",
                     "llvm.bswap", "llvm.is.fpclass", "llvm.objectsize",
                     # float -> integer conversions: an integer result carries no derivative
                     "llvm.fptosi.sat.", "llvm.fptoui.sat.", "llvm.lround.", "llvm.llround.", "llvm.lrint.",
                     "llvm.llrint.")
#: intrinsics whose result is their first argument as far as derivatives go (annotations, invariant groups,
#: an arithmetic fence): the shadow, tangent or adjoint passes through them
_PASSTHROUGH_PREFIXES = ("llvm.ptr.annotation.", "llvm.launder.invariant.group.", "llvm.strip.invariant.group.",
                         "llvm.ssa.copy.", "llvm.arithmetic.fence.")
ALLOC = frozenset(("malloc", "_Znwm", "_Znam", TAPE_ALLOC))
FREE = frozenset(("free", "_ZdlPv", "_ZdaPv", "_ZdlPvm"))


def rule_name(inst, like=None) -> str | None:
    """The math rule key of a call: its callee's, or that of the function the callee is declared to
    behave like (``like``: callee name -> math function, from ``__enzyme_function_like``)."""
    name = callee_name(inst)
    if like and name in like:
        key = math_name(like[name])
        if key is None:
            raise unsupported(f"@{name} is declared to behave like '{like[name]}' (__enzyme_function_like), "
                              f"which has no derivative rule", inst)
        return key
    return math_name(name) if name is not None else None


def _math_key(inst, like) -> str:
    """The rule key of a call that :func:`classify` calls ``math``."""
    key = rule_name(inst, like)
    assert key is not None, "a math call has a rule key"
    return key


def _called(inst) -> str | None:
    """The callee's name; for a call through a global's pointer, what :mod:`.allocators` models it as."""
    name = callee_name(inst)
    if name is not None:
        return name
    target = allocators.initial_callee(inst)
    return target.name if target is not None else None


def classify(inst, like=None) -> str:
    """What kind of call ``inst`` is: ``ignored``, ``passthrough``, ``math``, ``alloc``, ``calloc``, ``realloc``,
    ``free``, ``memcpy``, ``memset``, ``tape`` (the engine's stack helpers), ``omp_fork`` (an OpenMP
    parallel region, :mod:`.openmp`), ``defined``, ``inactive`` or ``unknown``. ``like`` as in :func:`rule_name`."""
    name = _called(inst)
    if name is None:
        return "unknown"
    if like and name in like:
        return "math"
    omp = openmp.classify(name)
    if omp is not None:
        return omp
    special = gpu.classify(name)
    if special is not None:
        return special
    if stack.operation(inst) is not None:
        return "tape"
    if name.startswith(_IGNORED_PREFIXES):
        return "ignored"
    if name.startswith(_PASSTHROUGH_PREFIXES):
        return "passthrough"
    if math_name(name) is not None:
        return "math"
    if name in ALLOC:
        return "alloc"
    if name == "calloc":
        return "calloc"
    if name == "realloc":
        return "realloc"
    if name == "posix_memalign":
        return "posix_memalign"
    if name in FREE:
        return "free"
    if name.startswith(("llvm.memcpy.", "llvm.memmove.")):
        return "memcpy"
    if name.startswith("llvm.memset."):
        return "memset"
    if name in INACTIVE:
        return "inactive"
    if not inst.callee.is_declaration:
        return "defined"
    return "unknown"


def call_kinds(act, inst, forward: bool) -> list[ArgKind]:
    """The argument kinds of a call to a defined function, from the caller's activity."""
    out = []
    for a in inst.args:
        if a in act.shadowed:
            out.append(DUP)
        elif a in act.active:
            out.append(DUP if forward else OUT)
        else:
            out.append(CONST)
    return out


def copied_type(e, inst, kind):
    """The float type a memcpy/memset into memory with a shadow moves (its adjoints move with it),
    or None when the bytes hold no floats (a memset of bytes that nothing reads or writes with a
    type, such as an array made and never used). Memory mixing floats with pointers, several float
    types, or a memcpy of bytes of unknown type raise ADError."""
    n = inst.args[2]
    size = n.value if isinstance(getattr(n, "value", None), int) else None
    held = set(e.act.mem.types_at(inst.args[0], size))
    if kind == "memcpy":
        held |= e.act.mem.types_at(inst.args[1], size)
    floats = {t for t in held if t.kind == "float"}
    if not held and kind == "memset":
        return None  # no load or store gives the bytes a type: none of them carries a derivative
    if not held:
        source = f" from {explain.describe(inst.args[1])}" if kind == "memcpy" else ""
        raise unsupported(f"cannot deduce the type of the memory a {kind} writes: the bytes it copies{source} into "
                          f"{explain.describe(inst.args[0])} are never loaded or stored with a type"
                          f"{explain.settle(inst, inst.args[0])}", inst, e.fn, quote=False)
    if len(floats) > 1:
        raise unsupported(f"{kind} over memory holding several float types: {explain.describe(inst.args[0])} holds "
                          f"{' and '.join(sorted(map(str, floats)))}; copy them field by field"
                          f"{explain.debug_hint(inst)}", inst, e.fn, quote=False)
    if floats and any(t.kind == "ptr" for t in held):
        raise unsupported(f"{kind} over memory holding both floating-point values and pointers: "
                          f"{explain.describe(inst.args[0])}; copy the "
                          f"fields one by one{explain.debug_hint(inst)}", inst, e.fn, quote=False)
    if floats and any(e.act.mem.misaligned_floats(q, size, sizeof(next(iter(floats))))
                      for q in inst.args[:2 if kind == "memcpy" else 1]):
        raise unsupported(f"{kind} over floats that do not start at multiples of their size from the copy's start "
                          "(a packed record): copy the fields one by one", inst, e.fn)
    return next(iter(floats)) if floats else None


#: calls whose derivatives are not emitted lane by lane in a batch (vector mode), and what they are
_NOT_BATCHED = {"tape": "a tape helper", "realloc": "a call of", "posix_memalign": "a call of"}


# -- forward sweep -----------------------------------------------------------
def forward(s, inst):
    like = s.engine.function_like
    kind = classify(inst, like)
    act = s.act
    varied = not act.is_constant_instruction(inst)
    if kind == "ignored" and inst in act.active:  # none gives a float (a pointer they give has no shadow use)
        raise unsupported(f"no derivative rule for call to '{callee_name(inst)}'", inst, s.fn)
    if kind in ("ignored", "inactive", "barrier"):
        return
    if kind == "omp_fork":
        openmp.forward(s, inst)
        return
    if kind == "passthrough":
        if inst in act.shadowed or (s.tangents and inst in act.active):
            s.shadow_map[inst] = s.shadow(inst.args[0], inst)
        return
    if s.width > 1 and kind in _NOT_BATCHED and (varied or inst in act.active or inst in act.shadowed):
        raise unsupported(f"batch mode (width {s.width}) through {_NOT_BATCHED[kind]} "
                          f"'{callee_name(inst)}': differentiate it with width 1 (Duplicated), or let the "
                          "optimiser inline the callee (a small function without noinline)", inst, s.fn)
    if kind == "tape":
        stack.forward(s, inst)
        return
    if kind == "math":
        if s.tangents and inst in act.active:
            key = _math_key(inst, like)
            ts = [s.tangent(a) for a in inst.args]
            fwd = MATH_FORWARD.get(key)
            t = fwd(s, inst, ts) if fwd else derived_forward(MATH_REVERSE[key], s, inst, ts)
            s.shadow_map[inst] = t if t is not None else zero(inst.type)
        return
    if kind in ("alloc", "calloc", "free") and callee_name(inst) is None:
        target = allocators.initial_callee(inst)
        assert target is not None, "classify named it"
        allocators.check_callee(s, inst, target)
    if kind in ("alloc", "calloc"):
        copy = s.vmap[inst]
        sh = _tape_like(inst, s.call(_called(inst), inst.type, [s.val(a) for a in inst.args]))
        if kind == "alloc":
            s.memset(sh, s.val(inst.args[0]))
        s.shadow_map[inst] = sh
        del copy
        return
    if kind == "realloc":
        _forward_realloc(s, inst)
        return
    if kind == "posix_memalign":
        _forward_memalign(s, inst)
        return
    if kind == "free":
        p = inst.args[0]
        if s.tangents and p in act.shadowed:
            _tape_like(inst, s.call(_called(inst), T.void, [s.shadow(p, inst)]))
        return
    if kind in ("memcpy", "memset"):
        dst = inst.args[0]
        if dst not in act.shadowed:
            if kind == "memcpy" and inst.args[1] in act.shadowed and not s.engine.runtime_activity:
                raise unsupported("copy from active memory into memory without shadow" + memory.RUNTIME_ACTIVITY,
                                  inst, s.fn)
            return
        mt = copied_type(s, inst, kind)
        if not s.tangents and mt is not None and mt.kind == "float":
            return  # float adjoints are moved by the reverse sweep
        args = [s.shadow(dst, inst)]
        if kind == "memcpy":
            args.append(s.shadow(inst.args[1], inst))
            args += [s.val(a) for a in inst.args[2:]]
        else:
            args += [zero(inst.args[1].type)] + [s.val(a) for a in inst.args[2:]]
        s.call(callee_name(inst), T.void, args)
        return
    if kind == "defined":
        if not varied and inst not in act.active and inst not in act.shadowed:
            return
        if any(a in act.shadowed and a.type.kind in ("struct", "array") for a in inst.args):
            raise unsupported(f"an aggregate holding pointers with shadows passed to @{callee_name(inst)}: "
                              "not modeled (pass the pointers)", inst, s.fn)
        s.engine.forward_call(s, inst, call_kinds(act, inst, s.tangents))
        return
    # an unknown callee none of whose arguments or results carries a derivative is inactive, as in Enzyme: it
    # computes from values without derivatives, and no memory with a shadow is handed to it
    if varied or inst in act.active or inst in act.shadowed:
        name = callee_name(inst) or "an indirect callee"
        if name.startswith(_MASKED):
            raise unsupported(f"no derivative rule for call to '{name}'{VECTORIZED}", inst, s.fn, VectorizedCodeError)
        raise unsupported(f"no derivative rule for call to '{name}'", inst, s.fn)


#: the vectorizers' masked, gathering and scattering memory intrinsics (no derivative rules)
_MASKED = ("llvm.masked.", "llvm.vp.", "llvm.experimental.vp.")
#: what to do about them (the ``ad`` stage retries without the vectorizers: they reach users in IR vectorized
#: elsewhere)
VECTORIZED = (": the vectorizers' masked, gathering and scattering memory operations have no derivative rules; "
              "hand the AD engine code compiled without them (clang: -fno-vectorize -fno-slp-vectorize)")


def _forward_memalign(s, inst):
    """``posix_memalign(&p, align, n)``: the shadow of ``p`` (the shadow slot of ``&p``) gets a zeroed
    allocation of its own, freed by the reverse sweep (or with ``p`` in forward mode)."""
    slot = inst.args[0]
    if slot not in s.act.shadowed:
        return  # a pointer slot without shadow: its memory has none (active stores into it are errors)
    shadow_slot = s.shadow(slot, inst)
    rc = s.call("posix_memalign", inst.type, [shadow_slot, s.val(inst.args[1]), s.val(inst.args[2])])
    ok = s.b.icmp("eq", rc, zero(rc.type))
    sh = s.select(ok, s.b.load(T.ptr(), shadow_slot), zero(T.ptr()))
    s.memset(sh, s.select(ok, s.val(inst.args[2]), zero(inst.args[2].type)))
    s.shadow_map[inst] = sh


_TAPE_MARK = "!gpuc.ad.tape"


def _tape_like(primal, call):
    """Mark ``call`` (a shadow's malloc or free) as the AD tape's when ``primal`` is: an inner
    derivative's tape (higher-order AD) has shadows the device allows alike."""
    mark = primal.metadata.get(_TAPE_MARK[1:])
    if mark is not None:
        call.metadata[_TAPE_MARK[1:]] = mark
    return call


def _forward_realloc(s, inst):
    """Forward mode: the shadow is reallocated alike. Reverse mode: a fresh zeroed shadow; the old
    one stays alive so the reverse can hand back the adjoints of the bytes realloc copied. Memory of
    pointers and integers (a grown tape of shadow pointers in higher-order AD) has no adjoints: its
    new shadow gets the old one's bytes, as the new block gets the old one's."""
    old, n = inst.args
    so = s.shadow(old, inst)
    if s.tangents:
        s.shadow_map[inst] = s.call("realloc", inst.type, [so, s.val(n)])
        return
    kinds = {t.kind for p in (inst, old) for t in s.act.mem.types_at(p, None)}
    if "float" in kinds and "ptr" in kinds:
        raise unsupported(f"realloc of memory holding both floating-point values and pointers "
                          f"({explain.describe(old)}): keep them in separate allocations{explain.debug_hint(inst)}",
                          inst, s.fn, quote=False)
    ns = s.call("malloc", inst.type, [s.val(n)])
    s.memset(ns, s.val(n))
    usable = s.call("malloc_usable_size", T.i64, [so])
    nn = s.val(n) if s.val(n).type is T.i64 else s.b.zext(s.val(n), T.i64)
    s.realloc_bytes[inst] = kept = s.select(s.b.icmp("ult", usable, nn), usable, nn)
    if "float" not in kinds:
        s.call("llvm.memcpy.p0.p0.i64", T.void, [ns, so, kept, const_int(T.i1, 0)])
    s.shadow_map[inst] = ns


# -- reverse sweep -----------------------------------------------------------
def reverse(r, inst):
    like = r.engine.function_like
    kind = classify(inst, like)
    act = r.act
    if kind == "barrier":
        gpu.reverse_barrier(r, inst)
        return
    if kind == "omp_fork":
        openmp.reverse(r, inst)
        return
    if kind == "tape":
        stack.reverse(r, inst)
        return
    if kind == "passthrough":
        if inst in act.active:
            r.accumulate(inst.args[0], r.take_adjoint(inst))
        return
    if kind == "math":
        if inst not in act.active:
            return
        d = r.take_adjoint(inst)
        rule = MATH_REVERSE[_math_key(inst, like)]
        for a, adjoint in zip(inst.args, rule):
            if adjoint is not None and a in act.active:
                r.accumulate(a, adjoint(r, inst, d))
        return
    if kind in ("alloc", "calloc") or (kind == "posix_memalign" and inst.args[0] in act.shadowed):
        _tape_like(inst, r.call("free", T.void, [r.fwd_shadow(inst, inst)]))
        return
    if kind == "realloc":
        ns = r.fwd_shadow(inst, inst)
        mt = memory_type(inst)
        if mt is not None and mt.kind == "float":
            nbytes = r._from_forward(inst.parent, r.sweep.realloc_bytes[inst])
            r.b.call(r.engine.memcpy_adjoint(mt), [ns, r.fwd_shadow(inst.args[0], inst), nbytes])
        r.call("free", T.void, [ns])
        return
    if kind in ("memcpy", "memset"):
        dst = inst.args[0]
        if dst not in act.shadowed:
            return
        mt = copied_type(r, inst, kind)
        if mt is None or mt.kind != "float":
            return
        n = r.fwd(inst.args[2])
        sd = r.fwd_shadow(dst, inst)
        if kind == "memset":
            r.memset(sd, n)
        else:
            helper = r.engine.memcpy_adjoint(mt)
            r.b.call(helper, [sd, r.fwd_shadow(inst.args[1], inst), n if n.type is T.i64 else r.b.zext(n, T.i64)])
        return
    if kind == "defined" and not act.is_constant_instruction(inst):
        r.engine.reverse_call(r, inst, call_kinds(act, inst, False))
