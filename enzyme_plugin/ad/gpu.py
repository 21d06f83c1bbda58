"""GPU support of the engine: atomic adjoint accumulation, inactive and barrier calls.

* ``with options(atomic_adjoints=True)``: the reverse of a load from shadowed
  memory adds its adjoint with ``atomicrmw fadd`` (threads of a kernel may
  read the same element, so their adjoints collide), except for memory the
  function allocated itself (``alloca``), which is private to the thread.
* ``with options(warp_aggregate=target.warp_intrinsics())`` (PTX, AMD): such an atomic first checks
  whether the whole warp is active and adds to one address (a parameter every
  thread reads, ``w[j]`` at a loop index ``j`` shared by the warp); then the
  adjoints are summed with butterfly shuffles (the target's intrinsics) and one lane adds the sum,
  so a warp's width times fewer atomics contend for the address. Otherwise each lane
  adds its own. A record with ``target_sum`` (SPIR-V) marks the adjoint instead, and the target sums.
* ``atomicrmw fadd/fsub`` into shadowed memory (``atomic_add(out, 0, v)`` of a
  reduction) whose old value is unused: the forward sweep keeps it, the
  reverse reads the adjoint of the element with a plain load (an atomic add
  leaves the element's adjoint as it is, so nothing is written back) and
  gives it to ``v``.
* ``with options(device_tape=True)`` (PTX and the grid emulation): a tape
  whose size is known only as a loop runs grows by ``malloc`` + copy +
  ``free`` (a device has no ``realloc``) and, when it can, starts in an
  inline ``alloca`` segment (:mod:`.tape`); with ``tape_arena=N`` (combined mode) a call's loop
  cache arrays are carved from an ``N``-byte ``alloca`` first and reach the heap only past it.
* Calls to functions named ``gpuc.inactive.*`` (thread and block indices,
  the emulation's thread context) carry no derivative.
* Calls to functions named ``gpuc.barrier.*`` are barriers: kept in the
  forward sweep and mirrored in the reverse sweep, so that adjoints written
  to shared memory by one thread are complete before others read them.

``enzyme_plugin.passes.nvvm`` renames the target's intrinsics to these
prefixes before AD and back afterwards.
"""

from __future__ import annotations

import attrs

from gpucompiler.core import WarpIntrinsics
from gpucompiler.llvm import GlobalVariable, Instruction, const_int
from gpucompiler.runtime.device_heap import FLAG as HEAP_FLAG

from .emit import declare
from .errors import unsupported

INACTIVE_PREFIX = "gpuc.inactive."
BARRIER_PREFIX = "gpuc.barrier."

@attrs.frozen
class EngineOptions:
    """How the engine treats memory other threads may touch and tapes on a device (given to the engine)."""

    atomic_adjoints: bool = False
    """accumulate into shadow memory with atomic adds (GPU kernels, the CPU grid emulation)"""
    warp_aggregate: WarpIntrinsics | None = None
    """the target's warp intrinsics: sum a warp's adjoints with shuffles before one atomic add per warp
    (``Target.warp_intrinsics()``; None: an atomic add per thread)"""
    device_tape: bool = False
    """growing tapes avoid realloc (a device has none) and start in an inline segment (PTX, emulation)"""
    tape_arena: int = 1024
    """bytes of a per-call tape arena in combined mode on a device (``device_tape``): loop cache arrays
    are carved from an ``alloca`` of this size (a GPU's local memory, reserved by the driver once per
    launch, not a ``malloc`` per thread); what does not fit comes from the device heap (0: all of it).
    Kernels set it with ``EnzymeOptions(tape_arena=...)``"""
    thread_exit: str | None = None
    """the target's intrinsic that ends a thread (``Target.thread_exit``): a thread whose tape ``malloc``
    fails sets the module's heap flag and calls it instead of trapping, so that the context survives
    and the runtime raises DeviceHeapError after the launch (None: it traps)"""


def declare_heap_exit(module, intrinsic: str) -> None:
    """What the ``out_of_heap_exit`` helper uses: the flag the runtime reads after a launch
    (:data:`gpucompiler.runtime.device_heap.FLAG`, an ``i32`` in global memory) and ``intrinsic``,
    which ends the thread."""
    if HEAP_FLAG not in module.globals:
        module.add_global(GlobalVariable(HEAP_FLAG, _T.i32, prefix="addrspace(1) externally_initialized",
                                         initializer=const_int(_T.i32, 0), suffix=", align 4", addrspace=1))
    declare(module, intrinsic, _T.function(_T.void, []))


def _thread_private(p) -> bool:
    """Whether pointer ``p`` is (an address into) an ``alloca`` of the function."""
    for _ in range(64):
        if isinstance(p, Instruction) and p.opcode == "alloca":
            return True
        if isinstance(p, Instruction) and p.opcode in ("getelementptr", "bitcast", "addrspacecast"):
            p = p.operands[0]
            continue
        return False
    return False


def atomic_accumulate(r, inst, sp, d) -> bool:
    """Add ``d`` into shadow pointer ``sp`` atomically when enabled; False to let the caller do it."""
    if not r.engine.options.atomic_adjoints or _thread_private(inst.pointer_operand):
        return False
    if d.type.kind != "float" and (d.type.kind != "vector" or r.engine.options.warp_aggregate is not None):
        return False  # vectors on a GPU: the plain accumulation (no vector atomics in PTX)
    if not r.defer_adjoint(inst, sp, d):  # (deferred: one atomic when the loop's reverse ends, tape.py)
        add_to_shadow(r, sp, d)
    return True


def add_to_shadow(r, sp, d) -> None:
    """``atomicrmw fadd sp, d`` at ``r.b``: once per warp with the warp's sum when warp aggregation is on
    and every lane adds to ``sp`` (``r.b`` then ends in a new block)."""
    warp = r.engine.options.warp_aggregate
    if warp is not None and warp.target_sum and d.type in _BITS:  # the target sums in its finish
        atomic_fadd(r.b, sp, r.call(f"{warp.target_sum}.f{_BITS[d.type]}", d.type, [d]))
    elif warp is not None and d.type in _BITS:
        _warp_aggregated_add(r, warp, sp, d)
    elif d.type.kind == "vector":  # the CPU (OpenMP regions vectorized by clang): one atomic add per lane
        for k in range(d.type.count):
            atomic_fadd(r.b, r.b.gep(d.type.element, sp, [const_int(_T.i64, k)]),
                        r.b.extractelement(d, const_int(_T.i64, k)))
    else:
        atomic_fadd(r.b, sp, d)


def atomic_fadd(b, sp, d):
    """``atomicrmw fadd sp, d`` at ``b`` (the old value unused)."""
    parts = ["atomicrmw fadd ", sp.type, " ", 0, ", ", d.type, " ", 1, " monotonic"]
    rmw = Instruction("atomicrmw", d.type, parts, (), "")
    rmw.append_operand(sp)
    rmw.append_operand(d)
    b.insert(rmw)
    return rmw


_FULL = 0xFFFFFFFF


def _shfl(r, name, width, v, lane):
    """The shuffle intrinsic ``name`` over the full warp (``width`` lanes) of a 32- or 64-bit integer ``v``."""
    i32 = _T.i32
    args = lambda w: [const_int(i32, -1), w, const_int(i32, lane), const_int(i32, width - 1)]  # noqa: E731
    if v.type is i32:
        return r.call(name, i32, args(v))
    lo = r.b.trunc(v, i32)
    hi = r.b.trunc(r.b.lshr(v, const_int(_T.i64, 32)), i32)
    lo, hi = r.call(name, i32, args(lo)), r.call(name, i32, args(hi))
    return r.b.or_(r.b.zext(lo, _T.i64), r.b.shl(r.b.zext(hi, _T.i64), const_int(_T.i64, 32)))


def _warp_aggregated_add(r, warp: WarpIntrinsics, sp, d):
    """``atomicrmw fadd sp, d``, once per warp with the warp's sum when all lanes add to ``sp``.

    Emits, in the reverse function::

        full = activemask() == -1            ; every lane here (then shuffles are legal)
        br full, check, single
      check: same = vote.all(sp == shfl.idx(sp, 0)); br same, reduce, single
      reduce: s = butterfly sum of d (log2(width) shuffles); br laneid == 0, add, join
      add:    atomicrmw fadd sp, s
      single: atomicrmw fadd sp, d
    """
    b, fn = r.b, r.rev
    i32, i64 = _T.i32, _T.i64
    check, reduce, add, single, join = (fn.append_block("") for _ in range(5))
    full = b.icmp("eq", r.call(warp.active_mask, i32, []), const_int(i32, -1))
    b.cond_br(full, check, single)
    b.position_at_end(check)
    addr = b.ptrtoint(sp, i64)
    lead = _shfl(r, warp.shuffle_index, warp.width, addr, 0)
    same = r.call(warp.vote_all, _T.i1, [const_int(i32, -1), b.icmp("eq", addr, lead)])
    b.cond_br(same, reduce, single)
    b.position_at_end(reduce)
    it = _T.int_type(_BITS[d.type])
    s = d
    lane = warp.width // 2
    while lane:
        other = _shfl(r, warp.shuffle_xor, warp.width, b.bitcast(s, it), lane)
        lane //= 2
        s = b.fadd(s, b.bitcast(other, d.type))
    first = b.icmp("eq", r.call(warp.lane_id, i32, []), const_int(i32, 0))
    b.cond_br(first, add, join)
    b.position_at_end(add)
    atomic_fadd(b, sp, s)
    b.br(join)
    b.position_at_end(single)
    atomic_fadd(b, sp, d)
    b.br(join)
    b.position_at_end(join)


# -- atomic adds into shadowed memory ----------------------------------------------
def _is_add(inst) -> str | None:
    """``fadd``/``fsub`` for those ``atomicrmw`` operations, else None."""
    return inst.operation if inst.operation in ("fadd", "fsub") else None


def _int_rmw(inst) -> str | None:
    """``add``/``sub`` for those integer ``atomicrmw`` operations (a reference count), else None."""
    if inst.opcode != "atomicrmw" or inst.type.kind != "int":
        return None
    words = set(inst.parts[0].split()) if inst.parts and type(inst.parts[0]) is str else set()
    return next((op for op in ("add", "sub") if op in words), None)


def fwd_atomic(s, inst) -> None:
    """Forward rule of ``atomicrmw``/``cmpxchg``: only ``fadd``/``fsub`` into shadowed memory is differentiable;
    an integer ``add``/``sub`` (a reference count) is mirrored into the shadow, as integer stores are."""
    p = inst.pointer_operand
    if s.act.is_constant_instruction(inst) and p not in s.act.shadowed:
        return
    op = _int_rmw(inst)
    if op is not None:
        if p in s.act.shadowed:
            v, sp = s.val(inst.value_operand), s.shadow(p, inst)
            rmw = Instruction("atomicrmw", v.type, [f"atomicrmw {op} ", sp.type, " ", 0, ", ", v.type, " ", 1,
                                                    " monotonic"], (), "")
            rmw.append_operand(sp)
            rmw.append_operand(v)
            s.b.insert(rmw)
        return
    kind = _is_add(inst) if inst.opcode == "atomicrmw" else None
    if kind is None or p not in s.act.shadowed:
        raise unsupported("atomic operation on active memory (only atomic fadd/fsub into memory with a "
                          "shadow is differentiable)", inst, s.fn)
    if inst.users:
        raise unsupported("the old value of an atomic add into active memory is used (its derivative "
                          "depends on the order of the threads)", inst, s.fn)
    if s.tangents and inst.value_operand in s.act.active:
        t = s.shadow_map.get(inst.value_operand)
        if t is not None:
            atomic_fadd(s.b, s.shadow(p, inst), t if kind == "fadd" else s.b.fneg(t))


def rev_atomic(r, inst) -> None:
    """``v``'s adjoint += (-) the element's adjoint, a plain load; the element's adjoint is unchanged."""
    if inst.opcode != "atomicrmw" or _is_add(inst) is None:
        return
    v, p = inst.value_operand, inst.pointer_operand
    if v not in r.act.active or p not in r.act.shadowed:
        return
    m = r.b.load(v.type, r.fwd_shadow(p, inst), align=inst.alignment)
    r.accumulate(v, m if _is_add(inst) == "fadd" else r.fneg(m))


def classify(name: str) -> str | None:
    """``inactive`` or ``barrier`` for the renamed GPU intrinsics, else None."""
    if name.startswith(INACTIVE_PREFIX):
        return "inactive"
    if name.startswith(BARRIER_PREFIX):
        return "barrier"
    return None


def reverse_barrier(r, inst) -> None:
    """The reverse of a barrier is the same barrier."""
    r.b.call(inst.callee, [r.fwd(a) for a in inst.args]) if inst.args else r.b.call(inst.callee, [])


from gpucompiler.llvm import types as _T  # noqa: E402

T_PTR = _T.ptr()
_BITS = {_T.float_: 32, _T.double: 64}
