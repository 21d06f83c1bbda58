"""OpenMP parallel regions in reverse and forward mode, as Enzyme differentiates them.

clang outlines the body of ``#pragma omp parallel for`` into ``@f.omp_outlined(ptr gtid, ptr btid,
captured...)`` and calls ``__kmpc_fork_call(loc, n, @f.omp_outlined, captured...)``; the body takes its
static chunk from ``__kmpc_for_static_init_*`` (integer bounds: inactive). The engine differentiates a
*model* of the body (:func:`model`), in split mode:

* the forward sweep forks the model's augmented forward: each thread records its tape in its own slot
  (indexed by its number in the team) of an array, with the team's size in front;
* the reverse sweep forks the model's reverse with that team size (``__kmpc_push_num_threads``), so each
  thread reverses its own static chunk from its own tape. In a module that forks, adjoints added into
  memory other than a function's own ``alloca`` are atomic (``atomicrmw fadd``): threads share it;
* a ``firstprivate`` float (passed as its bits in an integer) receives the sum of the threads' adjoints.

The model replaces what the runtime decides by what AD can follow: a ``reduction(+:s)`` takes the
runtime's atomic branch (each thread ``atomicrmw fadd`` its partial sum into ``s``; the reverse hands
every thread the adjoint of ``s``), and a ``critical`` section that is ``s += v`` of one float becomes
``atomicrmw fadd``. Whatever else the runtime is asked for in a differentiated region (dynamic or guided
schedules, tasks, ``single``/``master``, nested regions, the thread number, a ``num_threads`` clause) is
an :class:`ADError` naming the C line, as is batch (vector) mode. A barrier is kept, and mirrored in the
reverse. Forward mode forks the model's forward derivative (tangents travel with the values; no tape).
"""

from __future__ import annotations

import weakref

import attrs

from gpucompiler.llvm import Builder, Function, Instruction, const_int, types as T

from .analysis import CONST, DUP, OUT, callee_name
from .emit import declare, is_float_like, zero
from .errors import unsupported
from .floatbits import float_bits, retyped_clone
from .gpu import atomic_fadd

FORK = "__kmpc_fork_call"
#: runtime calls of an outlined body that carry no derivative (static schedules, thread ids)
INACTIVE = frozenset(("__kmpc_for_static_init_4", "__kmpc_for_static_init_4u", "__kmpc_for_static_init_8",
                      "__kmpc_for_static_init_8u", "__kmpc_for_static_fini", "__kmpc_global_thread_num",
                      "omp_get_num_threads", "omp_get_max_threads"))
_REDUCE, _END_REDUCE = "__kmpc_reduce_nowait", "__kmpc_end_reduce_nowait"
_CRITICAL, _END_CRITICAL = "__kmpc_critical", "__kmpc_end_critical"
#: a barrier (``#pragma omp barrier``, the end of an ``omp for`` without ``nowait``): kept in the forward
#: sweep and mirrored in the reverse sweep, as a GPU barrier (:mod:`.gpu`)
BARRIER = "__kmpc_barrier"
_MODELED = INACTIVE | {_REDUCE, _END_REDUCE, _CRITICAL, _END_CRITICAL, BARRIER}
#: what to do instead, for runtime calls a differentiated region may not make (prefix -> advice)
_ADVICE = {
    "__kmpc_dispatch_": "a dynamic, guided or runtime schedule is not modeled: use schedule(static)",
    "__kmpc_omp_task": "OpenMP tasks are not modeled: use a parallel for",
    "__kmpc_fork_call": "a nested parallel region is not modeled: parallelise one level",
    "omp_get_thread_num": "work that depends on the thread number is not modeled: let a static parallel "
                          "for divide the work",
    "__kmpc_reduce": "a reduction inside a worksharing loop of a larger region is not modeled: use "
                     "`parallel for reduction(+:x)`",
}
#: bytes of the engine's tape (:data:`.reverse.TAPE`: a pointer, two i64, a pointer)
_TAPE_BYTES = 32


def is_fork(name: str | None) -> bool:
    return name == FORK


def classify(name: str) -> str | None:
    """``omp_fork`` for a fork, ``barrier`` for a barrier (:func:`calls.classify`'s kinds), else None."""
    return "omp_fork" if name == FORK else "barrier" if name == BARRIER else None


def engine_options(module, options):
    """``options`` with atomic adjoints when ``module`` forks parallel regions (their threads share memory)."""
    fork = module.functions.get(FORK)
    if fork is None or not fork.users or options.atomic_adjoints:
        return options
    return attrs.evolve(options, atomic_adjoints=True)


def passed_to_fork(inst) -> bool:
    """Whether ``inst`` (an integer bitcast of a float) is used only as a captured value of forks."""
    return bool(inst.users) and all(isinstance(u, Instruction) and u.opcode == "call" and is_fork(callee_name(u))
                                    for u in inst.users)


class _Model:
    __slots__ = ("fn", "floats")

    def __init__(self, fn: Function, floats: list):
        self.fn = fn
        #: per captured value: the float type its integer bits carry (``firstprivate``), else None
        self.floats = floats


_MODELS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: per engine: name of a function a region calls that calls the runtime -> its model (:func:`_model_body`)
_BODIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: per forward sweep: fork call -> (tape array, reverse wrapper, kinds, model)
_FORKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# -- the model of an outlined body -----------------------------------------------------------------
def model(engine, outlined: Function) -> _Model:
    """The differentiable model of ``outlined`` (made once per engine)."""
    cache = _MODELS.setdefault(engine, {})
    hit = cache.get(outlined.name)
    if hit is None:
        hit = cache[outlined.name] = _make_model(outlined, _BODIES.setdefault(engine, {}))
    return hit


def _make_model(outlined: Function, bodies: dict) -> _Model:
    floats = [float_bits(a) for a in outlined.args[2:]]
    name = outlined.name + ".gpuc.omp"
    _check_runtime_calls(outlined)
    clone = retyped_clone(outlined, name, [None, None, *floats]) if any(floats) else outlined.clone(name)
    _model_body(clone, outlined, bodies)
    return _Model(clone, floats)


def _check_runtime_calls(fn: Function) -> None:
    """A call of an OpenMP runtime function the model does not cover is an ADError naming the C line."""
    for inst in fn.instructions():
        name = callee_name(inst) if inst.opcode in ("call", "invoke") else None
        if name is None or name in _MODELED or not _declared(inst.callee):
            continue
        for prefix, advice in _ADVICE.items():
            if name.startswith(prefix):
                raise unsupported(f"@{name} in an OpenMP parallel region: {advice}", inst, fn)
        if name.startswith(("__kmpc_", "omp_")):
            raise unsupported(f"@{name} in an OpenMP parallel region: the AD engine does not model this "
                              "runtime call", inst, fn)


def _model_body(fn: Function, original: Function, models: dict) -> None:
    """Reductions and critical sums of ``fn`` (a copy of ``original``) made atomic; a defined function it
    calls that calls the runtime (clang -O0 -g outlines the body once more, into ``*_debug__``) is
    called as its own model (``models``: original name -> model, made once)."""
    models[original.name] = fn
    for inst in list(fn.instructions()):
        which = callee_name(inst) if inst.opcode == "call" else None
        callee = inst.callee
        if which == _REDUCE:
            _atomic_reduction(inst, original)
        elif which == _CRITICAL:
            _atomic_critical(inst, original)
        elif isinstance(callee, Function) and not callee.is_declaration and any(
                (callee_name(i) or "").startswith("__kmpc_") for i in callee.instructions() if i.opcode == "call"):
            model = models.get(callee.name)
            if model is None:
                _check_runtime_calls(callee)
                model = callee.clone(callee.name + ".gpuc.omp")
                _model_body(model, callee, models)
            inst.set_operand(inst.operands.index(callee), model)


def _declared(callee) -> bool:
    return isinstance(callee, Function) and callee.is_declaration


def _atomic_reduction(call, outlined) -> None:
    """``__kmpc_reduce_nowait``'s result (1: combine under the runtime's lock, 2: atomically) fixed to 2."""
    users = call.users
    if len(users) != 1 or not isinstance(users[0], Instruction) or users[0].opcode != "switch":
        raise unsupported("a reduction whose runtime decision is not a switch (not the shape clang emits)",
                          call, outlined)
    call.replace_all_uses_with(const_int(call.type, 2))
    call.erase()


def _atomic_critical(call, outlined) -> None:
    """``critical { s += v; }`` of one float becomes ``atomicrmw fadd s, v`` (a sum clang computes in
    double for a float ``s`` adds ``v`` rounded to float: the same derivative, rounding differs by the
    order of the threads anyway); a critical section that touches no float is kept; any other is refused."""
    block = call.parent
    k = block.instructions.index(call)
    body = []
    end = None
    for inst in block.instructions[k + 1:]:
        if inst.opcode == "call" and callee_name(inst) == _END_CRITICAL:
            end = inst
            break
        if not (inst.opcode == "call" and (callee_name(inst) or "").startswith(("llvm.dbg.", "llvm.lifetime."))):
            body.append(inst)
    touches_floats = any(is_float_like(i.type) or (i.opcode == "store" and is_float_like(i.value_operand.type))
                         or i.opcode == "call" for i in body)
    if end is None:
        if touches_floats or any(i.is_terminator for i in block.instructions[k + 1:]):
            raise unsupported("a critical section spanning several blocks is not modeled: keep it to "
                              "`shared += value`", call, outlined)
        return
    if not touches_floats:
        return
    chain = _critical_sum(body)
    if chain is not None:
        load, store, v, between = chain
        b = Builder()
        b.position_before(store)
        if v.type != store.value_operand.type:  # the sum was in double: each thread adds its value rounded
            v = b.cast("fptrunc", v, store.value_operand.type)
        atomic_fadd(b, load.pointer_operand, v)
        for inst in (store, *reversed(between), load, end, call):
            inst.erase()
        return
    raise unsupported("a critical section other than `shared += value` of one float is not modeled",
                      call, outlined)


def _critical_sum(body):
    """``(load s, store s, v, between)`` when ``body`` is ``s = [fptrunc] fadd([fpext] s, v)`` (casts of
    ``v`` inside the section allowed; ``between``: the chain's instructions from the load to the store,
    exclusive), else None."""
    loads = [i for i in body if i.opcode == "load"]
    stores = [i for i in body if i.opcode == "store"]
    if len(loads) != 1 or len(stores) != 1:
        return None
    load, store = loads[0], stores[0]
    if store.pointer_operand is not load.pointer_operand or store.value_operand.type != load.type:
        return None
    narrow = store.value_operand
    add = narrow.operands[0] if isinstance(narrow, Instruction) and narrow.opcode == "fptrunc" else narrow
    widen = next((u for u in load.users if isinstance(u, Instruction) and u.opcode == "fpext"), None)
    old = load if widen is None else widen
    if not isinstance(add, Instruction) or add.opcode != "fadd" or old not in add.operands:
        return None
    v = add.operands[1] if add.operands[0] is old else add.operands[0]
    between = [i for i in (widen, add, narrow if narrow is not add else None) if i is not None]
    chain = [load, *between, store]
    if v is old or any(len(i.users) != 1 for i in chain[:-1]) or any(i not in body for i in between):
        return None
    rest = [i for i in body if i not in chain]
    if any(i.opcode not in ("fpext", "fptrunc") or any(u not in body for u in i.users) for i in rest):
        return None
    return load, store, v, between


# -- the forward and reverse sweeps --------------------------------------------------------------
def forward(s, inst) -> None:
    """The forward sweep at a fork: the fork of the model's augmented forward replaces the copied one."""
    act = s.act
    if act.is_constant_instruction(inst) and not any(_float_source(a, act) for a in inst.args[3:]):
        return  # nothing in the region carries a derivative: the copied fork stays
    outlined = inst.args[2]
    if not isinstance(outlined, Function) or outlined.is_declaration:
        raise unsupported("a parallel region whose outlined body is not a function of the module", inst, s.fn)
    if s.width > 1:
        raise unsupported("batch mode through an OpenMP parallel region is not implemented: differentiate it "
                          "with width 1", inst, s.fn)
    _refuse_num_threads(inst, s.fn)
    m = model(s.engine, outlined)
    if s.tangents:
        _forward_mode(s, inst, m)
        return
    kinds = [CONST, CONST]
    for a, f in zip(inst.args[3:], m.floats):
        if f is not None:
            kinds.append(OUT if _float_source(a, act) is not None else CONST)
        elif _float_source(a, act) is not None:
            raise unsupported("the bits of an active float captured by a parallel region that uses them as an "
                              "integer (not only as a float)", inst, s.fn)
        elif a in act.shadowed:
            kinds.append(DUP if _holds_shadowed_pointers(a, act, s.fn) else CONST)
        elif a in act.active:
            raise unsupported("a float captured by value in a parallel region (not the shape clang emits)",
                              inst, s.fn)
        else:
            kinds.append(CONST)
    aug, rev = s.engine.split_fns(m.fn, kinds)
    module = s.engine.module
    aug_w = _wrapper(s.engine, aug, m, kinds, reverse=False)
    rev_w = _wrapper(s.engine, rev, m, kinds, reverse=True)
    b = s.b
    slots = s.call("omp_get_max_threads", T.i32, [])
    n = b.zext(b.add(slots, const_int(T.i32, 1)), T.i64)
    tapes = s.call("calloc", T.ptr(), [n, const_int(T.i64, _TAPE_BYTES)])
    args = [s.val(inst.args[0]), None, aug_w, tapes]
    for a, k in zip(inst.args[3:], kinds[2:]):
        args.append(s.val(a))
        if k == DUP:
            args.append(s.shadow(a, inst))
    copy = s.vmap[inst]
    s.vmap[inst] = _fork(b, module, args)
    copy.erase()
    _FORKS.setdefault(s, {})[inst] = (tapes, rev_w, kinds)


def _forward_mode(s, inst, m: _Model) -> None:
    """Forward mode: the fork of the model's forward derivative replaces the copied one (no tape: each
    thread's tangents are complete when its chunk is)."""
    act, b = s.act, s.b
    kinds = [CONST, CONST]
    args = [s.val(inst.args[0]), None, None]
    for a, f in zip(inst.args[3:], m.floats):
        src = _float_source(a, act)
        args.append(s.val(a))
        if f is not None and src is not None:
            kinds.append(DUP)
            t = s.tangent(src)
            args.append(b.bitcast(t if t is not None else zero(src.type), a.type))
        elif src is not None or (f is None and a in act.active):
            raise unsupported("the bits of an active float captured by a parallel region that uses them as an "
                              "integer (not only as a float)", inst, s.fn)
        elif f is None and a in act.shadowed and _holds_shadowed_pointers(a, act, s.fn):
            kinds.append(DUP)
            args.append(s.shadow(a, inst))
        else:
            kinds.append(CONST)
    args[2] = _forward_wrapper(s.engine, s.engine.forward_fn(m.fn, kinds), m, kinds)
    copy = s.vmap[inst]
    s.vmap[inst] = _fork(b, s.engine.module, args)
    copy.erase()


def reverse(r, inst) -> None:
    """The reverse sweep at a fork: the model's reverse forked with the forward's team size."""
    hit = _FORKS.get(r.sweep, {}).get(inst)
    if hit is None:
        return
    tapes_fwd, rev_w, kinds = hit
    tapes = r._from_forward(inst.parent, tapes_fwd)
    outs = [(a, k) for a, k in zip(inst.args[3:], kinds[2:]) if k == OUT]
    b = r.b
    acc = r.call("calloc", T.ptr(), [const_int(T.i64, max(len(outs), 1)), const_int(T.i64, 8)])
    loc = r.fwd(inst.args[0])
    team = b.load(T.i32, tapes)
    gtid = r.call("__kmpc_global_thread_num", T.i32, [loc])
    r.call("__kmpc_push_num_threads", T.void, [loc, gtid, team])
    args = [loc, None, rev_w, tapes, acc]
    for a, k in zip(inst.args[3:], kinds[2:]):
        args.append(r.fwd(a))
        if k == DUP:
            args.append(r.fwd_shadow(a, inst))
    _fork(b, r.engine.module, args)
    for j, (a, _) in enumerate(outs):
        src = a.operands[0]
        r.accumulate(src, b.load(src.type, b.gep(T.i8, acc, [const_int(T.i64, 8 * j)])))
    r.call("free", T.void, [acc])
    r.call("free", T.void, [tapes])


def _float_source(a, act):
    """The active float whose bits the captured integer ``a`` is (a firstprivate float), else None."""
    if isinstance(a, Instruction) and a.opcode == "bitcast" and a.operands[0] in act.active:
        return a.operands[0]
    return None


def _holds_shadowed_pointers(p, act, fn) -> bool:
    """Whether the captured variable ``p`` (shared: clang passes its address) carries derivatives into the
    region: not when it holds a pointer the caller stores only constant (shadowless) pointers into, whose
    shadow would be null. A variable given both kinds of pointers is an ADError."""
    if not (isinstance(p, Instruction) and p.opcode == "alloca" and getattr(p.allocated_type, "kind", "") == "ptr"):
        return True
    stores = [u for u in p.users if isinstance(u, Instruction) and u.opcode == "store" and u.pointer_operand is p]
    shadowed = [u.value_operand in act.shadowed for u in stores]
    if all(shadowed):
        return True
    if any(shadowed):
        raise unsupported("a shared pointer variable of a parallel region given both pointers with shadows and "
                          "constant ones: use two variables", stores[shadowed.index(False)], fn)
    return False


def _refuse_num_threads(inst, fn) -> None:
    block = inst.parent
    for other in block.instructions[:block.instructions.index(inst)]:
        if other.opcode == "call" and callee_name(other) in ("__kmpc_push_num_threads", "__kmpc_push_proc_bind"):
            raise unsupported("a num_threads or proc_bind clause on a differentiated parallel region is not "
                              "modeled: set OMP_NUM_THREADS instead", other, fn)


def _fork(b, module, args):
    """``__kmpc_fork_call(args)``; ``args[1]``, the count of captured values, is filled in."""
    fork = declare(module, FORK, T.function(T.void, [T.ptr(), T.i32, T.ptr()], vararg=True))
    args[1] = const_int(T.i32, len(args) - 3)
    return b.call(fork, args)


def _forward_wrapper(engine, target, m: _Model, kinds) -> Function:
    """The outlined function a fork of forward mode calls: ``(gtid, btid, captured and tangents)`` -> ``target``
    (the model's forward derivative; a firstprivate float's tangent comes as bits too)."""
    module = engine.module
    name = f"{target.name}.omp"
    have = module.functions.get(name)
    if have is not None:
        return have
    params: list[T.Type] = [T.ptr(), T.ptr()]
    for a, k, f in zip(m.fn.args[2:], kinds[2:], m.floats):
        t = T.int_type(_bits(f)) if f is not None else a.type
        params += [t, t] if k == DUP else [t]
    fn = Function(name, T.function(T.void, params), prefix="internal")
    module.add_function(fn)
    b = Builder(fn.append_block("entry"))
    args: list = []
    for v, f in zip(fn.args, [None, None, *_with_shadows(m.floats, kinds[2:])]):
        args.append(b.bitcast(v, f) if f is not None else v)
    b.call(target, args)
    b.ret()
    return fn


def _with_shadows(floats, kinds) -> list:
    """``floats`` with each entry repeated for the shadow (tangent) a ``DUP`` kind adds."""
    out = []
    for f, k in zip(floats, kinds):
        out += [f, f] if k == DUP else [f]
    return out


def _wrapper(engine, target, m: _Model, kinds, reverse: bool) -> Function:
    """The outlined function a fork calls: ``(gtid, btid, tapes, [acc], captured and shadows)`` -> ``target``
    (the model's augmented forward or reverse) on the thread's tape; the reverse checks that the team is
    the forward's, adds the adjoints of firstprivate floats into ``acc`` and frees the thread's tape."""
    module = engine.module
    name = f"{target.name}.omp"
    have = module.functions.get(name)
    if have is not None:
        return have
    params: list[T.Type] = [T.ptr(), T.ptr(), T.ptr()]
    if reverse:
        params.append(T.ptr())
    for a, k, f in zip(m.fn.args[2:], kinds[2:], m.floats):
        params.append(T.int_type(_bits(f)) if f is not None else a.type)
        if k == DUP:
            params.append(a.type)
    fn = Function(name, T.function(T.void, params), prefix="internal")
    module.add_function(fn)
    b = Builder(fn.append_block("entry"))
    gtid, btid, tapes = fn.args[:3]
    tid = b.call(declare(module, "omp_get_thread_num", T.function(T.i32, [])), [])
    team = b.call(declare(module, "omp_get_num_threads", T.function(T.i32, [])), [])
    if reverse:  # __kmpc_push_num_threads asked for the forward's team: anything else would misplace chunks
        ok, bad = fn.append_block("same_team"), fn.append_block("other_team")
        b.cond_br(b.icmp("eq", b.load(T.i32, tapes), team), ok, bad)
        b.position_at_end(bad)
        b.call(declare(module, "llvm.trap", T.function(T.void, [])), [])
        b.unreachable()
        b.position_at_end(ok)
    else:
        b.store(team, tapes)
    offset = b.mul(b.zext(b.add(tid, const_int(T.i32, 1)), T.i64), const_int(T.i64, _TAPE_BYTES))
    slot = b.gep(T.i8, tapes, [offset])
    args: list = [gtid, btid]
    rest = iter(fn.args[4 if reverse else 3:])
    for k, f in zip(kinds[2:], m.floats):
        v = next(rest)
        args.append(b.bitcast(v, f) if f is not None else v)
        if k == DUP:
            args.append(next(rest))
    out = b.call(target, args + [slot])
    if reverse:
        for j in range(sum(1 for k in kinds if k == OUT)):
            atomic_fadd(b, b.gep(T.i8, fn.args[3], [const_int(T.i64, 8 * j)]), b.extractvalue(out, j))
        b.call(engine.helper("free"), [slot])
    b.ret()
    return fn


def _bits(t) -> int:
    return {"half": 16, "bfloat": 16, "float": 32, "double": 64}[str(t)]


__all__ = ["FORK", "INACTIVE", "engine_options", "forward", "is_fork", "model", "passed_to_fork", "reverse"]
