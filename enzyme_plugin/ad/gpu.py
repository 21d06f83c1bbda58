"""GPU support of the engine: atomic adjoint accumulation, inactive and barrier calls.

* ``with options(atomic_adjoints=True)``: the reverse of a load from shadowed
  memory adds its adjoint with ``atomicrmw fadd`` (threads of a kernel may
  read the same element, so their adjoints collide), except for memory the
  function allocated itself (``alloca``), which is private to the thread.
* Calls to functions named ``gpuc.inactive.*`` (thread and block indices,
  the emulation's thread context) carry no derivative.
* Calls to functions named ``gpuc.barrier.*`` are barriers: kept in the
  forward sweep and mirrored in the reverse sweep, so that adjoints written
  to shared memory by one thread are complete before others read them.

``enzyme_plugin.passes.nvvm`` renames the target's intrinsics to these
prefixes before AD and back afterwards.
"""

from __future__ import annotations

import contextlib

from gpucompiler.llvm import Instruction

INACTIVE_PREFIX = "gpuc.inactive."
BARRIER_PREFIX = "gpuc.barrier."

_OPTIONS = {"atomic_adjoints": False}


@contextlib.contextmanager
def options(**kw):
    """Engine options for the duration of the block (``atomic_adjoints``)."""
    old = dict(_OPTIONS)
    unknown = set(kw) - set(_OPTIONS)
    if unknown:
        raise TypeError(f"unknown engine options {sorted(unknown)}; known: {sorted(_OPTIONS)}")
    _OPTIONS.update(kw)
    try:
        yield
    finally:
        _OPTIONS.clear()
        _OPTIONS.update(old)


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
    if not _OPTIONS["atomic_adjoints"] or _thread_private(inst.pointer_operand):
        return False
    if d.type.kind != "float":
        return False  # vectors: the plain accumulation (no vector atomics in PTX)
    rmw = Instruction("atomicrmw", d.type, ["atomicrmw fadd ", T_PTR, " ", 0, ", ", d.type, " ", 1, " monotonic"], (), "")
    rmw.append_operand(sp)
    rmw.append_operand(d)
    r.b.insert(rmw)
    return True


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
