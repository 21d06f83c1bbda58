"""GPU support of the engine: atomic adjoint accumulation, inactive and barrier calls.

* ``with options(atomic_adjoints=True)``: the reverse of a load from shadowed
  memory adds its adjoint with ``atomicrmw fadd`` (threads of a kernel may
  read the same element, so their adjoints collide), except for memory the
  function allocated itself (``alloca``), which is private to the thread.
  The adds are plain ``atomicrmw fadd``: a GPU target's ``finish`` sums a warp's adds to one address
  (a parameter every thread reads) before one atomic (``gpucompiler.targets.warpatomics``).
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
    device_tape: bool = False
    """growing tapes avoid realloc (a device has none) and start in an inline segment (PTX, emulation)"""
    tape_arena: int = 1024
    """bytes of a per-call tape arena in combined mode on a device (``device_tape``): loop cache arrays
    are carved from an ``alloca`` of this size (a GPU's local memory, reserved by the driver once per
    launch, not a ``malloc`` per thread); what does not fit comes from the device heap (0: all of it).
    Kernels set it with ``EnzymeOptions(tape_arena=...)``"""
    differentiated_again: bool = False
    """the derivatives are differentiated once more (an inner level of nested AD): a host loop's growing
    tape stays on the heap from its first frame, where the next level's ``realloc`` rule follows it"""
    noneed_writes: bool = False
    """``EnzymeOptions.noneed_writes``: reverse mode leaves out the writes into the memory of ``enzyme_dupnoneed``
    arguments that nothing in the function reads (:func:`.memory.unneeded_writes`)"""
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
    if d.type.kind not in ("float", "vector"):
        return False
    if not r.defer_adjoint(inst, sp, d):  # (deferred: one atomic when the loop's reverse ends, tape.py)
        add_to_shadow(r, sp, d)
    return True


def add_to_shadow(r, sp, d) -> None:
    """``atomicrmw fadd sp, d`` at ``r.b``; a vector (OpenMP regions vectorized by clang) one per lane."""
    if d.type.kind == "vector":
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
