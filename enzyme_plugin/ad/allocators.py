"""Allocations the engine sees through a wrapper: a function that returns memory it allocates (``noinline
void *my_alloc(size_t n)``), and a call through a function pointer kept in a global (``pool.get(n)`` with
``pool = {malloc, free}``).

A call to a defined function that may return what an allocator gave it has a shadow, as the allocator's
call has: the function's derivative returns the shadow of its result. A call through a pointer read from a global whose initializer holds ``malloc``, ``calloc``, ``operator new``
or ``free`` (or ``operator delete``) at that place is differentiated as a call of that function: its result
gets a shadow allocation, as a direct call's would. The global may be written elsewhere (another file, code
not differentiated), so where the call runs the derivative checks that the pointer still holds that
function; if it does not, the program stops with a message naming the call's C line, never computing a
derivative of another function.
"""

from __future__ import annotations

from gpucompiler.llvm import ConstantExpr, Function, GlobalVariable, Instruction, constant, types as T

from .errors import source_location
from .emit import sizeof
from .typeinfo import field_offset, locate

#: what a call through a global's pointer is modelled as (allocation and release)
MODELED = frozenset(("malloc", "calloc", "_Znwm", "_Znam", "free", "_ZdlPv", "_ZdaPv", "_ZdlPvm"))


def _constant_offset(p) -> tuple[GlobalVariable, int] | None:
    """``(global, byte offset)`` of a pointer into a global through constant GEPs, else None."""
    base, c, s, _ = locate(p)
    if s:
        return None
    while isinstance(base, ConstantExpr) and base.opcode == "getelementptr":
        t = next((x for x in base.parts if isinstance(x, T.Type)), None)
        indices = [v for v in (getattr(i, "value", None) for i in base.operands[1:]) if isinstance(v, int)]
        if t is None or not indices or len(indices) != len(base.operands) - 1:
            return None
        c += indices[0] * sizeof(t)
        for k in indices[1:]:
            if isinstance(t, T.StructType) and t.elements is not None:
                c += field_offset(t, k)
                t = t.elements[k]
            elif isinstance(t, (T.ArrayType, T.VectorType)):
                t = t.element
                c += k * sizeof(t)
            else:
                return None
        base = base.operands[0]
    return (base, c) if isinstance(base, GlobalVariable) else None


def _held_at(value, t: T.Type, offset: int):
    """The constant of initializer ``value`` (of type ``t``) that starts at ``offset``, else None."""
    while offset or isinstance(t, (T.StructType, T.ArrayType)):
        if isinstance(t, T.StructType):
            fields = [(field_offset(t, j), e) for j, e in enumerate(t.elements or ())]
        elif isinstance(t, T.ArrayType):
            fields = [(j * sizeof(t.element), t.element) for j in range(t.count)]
        else:
            return None
        place = next(((j, at, e) for j, (at, e) in enumerate(fields) if at <= offset < at + sizeof(e)), None)
        if place is None or len(value.operands) != len(fields):
            return None  # padding, zeroinitializer, a string
        j, at, t = place
        value, offset = value.operands[j], offset - at
    return value


def initial_callee(inst) -> Function | None:
    """The function of :data:`MODELED` that call ``inst`` reaches through a pointer loaded from a global,
    when the global's initializer holds it there; else None."""
    fp = inst.callee
    if not (isinstance(fp, Instruction) and fp.opcode == "load"):
        return None
    place = _constant_offset(fp.pointer_operand)
    if place is None:
        return None
    g, offset = place
    init = g.initializer
    if init is None:
        return None
    held = _held_at(init, g.value_type, offset)
    return held if isinstance(held, Function) and held.name in MODELED else None


def check_callee(s, inst, fn: Function) -> None:
    """Where the forward sweep copies ``inst``: stop the program unless its function pointer is ``fn``."""
    where = source_location(inst) or f"@{s.fn.name}"
    text = (f"gpuc: {where}: a call through a function pointer, differentiated as a call of {fn.name} (what the "
            f"global it is read from held at first), reached another function\n").encode()
    module = s.engine.module
    name = f"__gpuc_ad_callee_note.{len(module.globals)}"
    escaped = "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\{b:02X}" for b in text + b"\0")
    ty = T.array(len(text) + 1, T.i8)
    note = module.add_global(GlobalVariable(name, ty, prefix="private unnamed_addr", is_constant=True,
                                            initializer=constant(ty, f'c"{escaped}"'), suffix=", align 1"))
    s.b.call(s.engine.helper("check_callee"), [s.val(inst.callee), fn, note])


def returns_allocation(fn, allocators: frozenset, depth: int = 0) -> bool:
    """Whether defined function ``fn`` may return (an address into) memory it got from a call of one of
    ``allocators`` (directly, through a global's pointer, or from a function that does so)."""
    if fn.is_declaration or depth > 4 or fn.function_type.ret.kind != "ptr":
        return False
    for block in fn.blocks:
        term = block.instructions[-1] if block.instructions else None
        if term is None or term.opcode != "ret" or not term.operands:
            continue
        work, seen = [term.operands[0]], set()
        while work:
            v = work.pop()
            if not isinstance(v, Instruction) or v in seen:
                continue
            seen.add(v)
            if v.opcode in ("getelementptr", "bitcast", "addrspacecast", "freeze"):
                work.append(v.operands[0])
            elif v.opcode == "phi":
                work += [x for x, _ in v.incoming]
            elif v.opcode == "select":
                work += v.operands[1:]
            elif v.opcode == "call":
                callee = v.callee
                target = callee if isinstance(callee, Function) else initial_callee(v)
                if target is not None and (target.name in allocators
                                           or returns_allocation(target, allocators, depth + 1)):
                    return True
    return False
