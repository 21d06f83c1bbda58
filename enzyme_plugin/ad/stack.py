"""The engine's stack tape met again: rules for its helpers in derivative code
that is differentiated once more (higher-order AD).

An inner derivative keeps the values its reverse needs on a stack
(``push``/``pop``/``free`` helpers over a ``{ptr base, i64 sp, i64 cap}``
struct, :mod:`.helpers`). Between levels those helpers stay out of line
(``noinline``, external linkage so that their signatures survive the optimiser),
so the outer derivative sees each frame as the result of a call: its bytes have one type per offset, and the outer engine mirrors the
stack instead of differentiating the helpers' bodies:

* forward sweep: the shadow of the tape struct gets the same push/pop (the
  shadow stack has the primal's layout) and, in forward mode, the same free;
* reverse mode: a frame's shadow is rebuilt in the reverse sweep as the
  shadow stack's final base plus the frame's offset, recorded in the forward
  sweep (a stack that grew moved its frames; the offsets stay valid), and the
  shadow stack is freed at the reverse of the tape struct's ``alloca``. A pushed shadow frame is
  zeroed when pushed and again when its reverse is done: the adjoints of a
  frame pushed before it at the same place start from zero.
"""

from __future__ import annotations

from gpucompiler.llvm import Instruction, types as T

from .helpers import PREFIX

#: the stack helpers by LLVM name -> operation
STACK_HELPERS = {PREFIX + op: op for op in ("push", "pop", "free")}


def operation(inst) -> str | None:
    """``push``/``pop``/``free`` for a call of a stack helper, else None."""
    callee = inst.callee if inst.opcode == "call" else None
    return STACK_HELPERS.get(getattr(callee, "name", "")) if callee is not None else None


def forward(s, inst) -> None:
    """Mirror ``inst`` on the shadow stack (see the module docstring)."""
    t = inst.args[0]
    if t not in s.act.shadowed:
        return
    st = s.shadow(t, inst)
    op = operation(inst)
    if op == "free":
        if s.tangents:  # reverse mode frees the shadow stack when its reverse sweep ends
            s.b.call(inst.callee, [st])
        return
    frame = s.b.call(inst.callee, [st, s.val(inst.args[1])])
    s.shadow_map[inst] = frame
    if op == "push":  # adjoints accumulate into the frame: it starts at zero
        s.memset(frame, s.val(inst.args[1]))
    if not s.tangents:
        base = s.b.load(T.ptr(), st)
        s.frame_offsets[inst] = s.b.sub(s.b.ptrtoint(frame, T.i64), s.b.ptrtoint(base, T.i64))


def reverse(r, inst) -> None:
    """The reverse of a stack helper: a pushed frame's shadow is zeroed when its reverse is done
    (a frame pushed earlier at the same place, with other types at its offsets, reads it next)."""
    t = inst.args[0]
    if t not in r.act.shadowed:
        return
    if operation(inst) == "push":
        r.memset(shadow_frame(r, inst), r.fwd(inst.args[1]))


def free_shadow_stacks(r, alloca) -> None:
    """At the reverse of the tape struct's ``alloca`` (every use reversed): free its shadow stack."""
    for u in alloca.users:
        if isinstance(u, Instruction) and u.opcode == "call" and operation(u) == "free" and u.args[0] is alloca:
            r.b.call(u.callee, [r.fwd_shadow(alloca, u)])
            return


def shadow_frame(r, v) -> Instruction:
    """The shadow of frame ``v`` (a push/pop result) in the reverse sweep: final base + offset."""
    key = ("frame", r.cur, v)
    hit = r.memo.get(key)
    if hit is None:
        off = r._from_forward(v.parent, r.sweep.frame_offsets[v])
        base = r.b.load(T.ptr(), r.fwd_shadow(v.args[0], v))
        hit = r.memo[key] = r.b.gep(T.i8, base, [off])
    return hit


def inline_again(module) -> None:
    """After the last level: every helper is internal again, the stack helpers always inlined."""
    for name, fn in module.functions.items():
        if not name.startswith(PREFIX) or fn.is_declaration:
            continue
        if "internal" not in fn.prefix.split():
            fn.prefix = f"internal {fn.prefix}".strip()
        if name in STACK_HELPERS:
            fn.remove_attribute("noinline")
            fn.add_attribute("alwaysinline")


def out_of_line(body: str) -> str:
    """A helper definition for a derivative that is differentiated again: external linkage, so
    that the optimiser between levels keeps its signature (no argument promotion of an internal
    function) and the next level's rules and calls still apply; the stack helpers ``noinline``."""
    body = body.replace("define internal ", "define ", 1)
    for name in STACK_HELPERS:
        body = body.replace(f"@{name}(ptr %t, i64 %n) alwaysinline", f"@{name}(ptr %t, i64 %n) noinline")
        body = body.replace(f"@{name}(ptr %t) alwaysinline", f"@{name}(ptr %t) noinline")
    return body
