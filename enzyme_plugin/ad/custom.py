"""User-registered derivative rules: ``__enzyme_register_gradient_<f> = {f, augment, reverse}``
and ``__enzyme_register_derivative_<f> = {f, forward}`` global arrays.

The engine wraps them in its own calling convention: the augmented wrapper
pushes the user's tape pointer on the engine's tape, the reverse wrapper pops
it and hands it back.
"""

from __future__ import annotations

from gpucompiler.llvm import Builder, Function, const_int, constant, types as T

from .analysis import DUP
from .emit import is_float_like, zero


def registered(module):
    """``(gradients, derivatives)``: function name -> (augment, reverse) / forward."""
    grads, fwds = {}, {}
    for g in module.globals.values():
        init = g.initializer
        if init is None or "__enzyme_register_" not in g.name:
            continue
        fns = [o for o in getattr(init, "operands", ()) if isinstance(o, Function)]
        if "__enzyme_register_gradient" in g.name and len(fns) >= 3:
            grads[fns[0].name] = (fns[1], fns[2])
        elif "__enzyme_register_derivative" in g.name and len(fns) >= 2:
            fwds[fns[0].name] = fns[1]
    return grads, fwds


def _user_args(fn, kinds, params):
    """Primal arguments with each shadow right after its primal (the user rules' convention)."""
    return list(params[: sum(2 if k == DUP else 1 for k in kinds)])


def gen_forward(engine, fn, kinds, new, user):
    b = Builder(new.append_block("entry"))
    args = _user_args(fn, kinds, new.args)
    out = b.call(user, args)
    rt = fn.return_type
    if rt is T.void:
        b.ret()
        return
    if out.type is new.return_type:
        b.ret(out)
        return
    prim = b.call(fn, [a for a, k in zip(new.args, _primal_mask(kinds)) if k])
    agg = b.insertvalue(constant(new.return_type, "poison"), prim, 0)
    b.ret(b.insertvalue(agg, out if is_float_like(out.type) else zero(rt), 1))


def _primal_mask(kinds):
    mask = []
    for k in kinds:
        mask.append(True)
        if k == DUP:
            mask.append(False)
    return mask


def _augment_results(b, out, rt):
    """(tape, primal result) from the augmented rule's return: a tape pointer, the primal result,
    or Enzyme's ``{tape, primal result[, ...]}`` struct (either part None when absent)."""
    ty = out.type
    if ty.kind == "struct" and ty.elements and ty.elements[0].kind == "ptr":
        prim = b.extractvalue(out, 1) if rt is not T.void and len(ty.elements) > 1 and ty.elements[1] is rt else None
        return b.extractvalue(out, 0), prim
    if ty.kind == "ptr" and rt is not T.ptr():
        return out, None
    if rt is not T.void and ty is rt:
        return None, out
    return None, None


def gen_split(engine, fn, kinds, aug, rev, user_aug, user_rev):
    b = Builder(aug.append_block("entry"))
    args = _user_args(fn, kinds, aug.args)
    tape = aug.args[-1]
    out = b.call(user_aug, args)
    t, prim = _augment_results(b, out, fn.return_type)
    if t is not None:
        w = b.call(engine.helper("push"), [tape, const_int(T.i64, 8)])
        b.store(t, w, align=8)
    if fn.return_type is T.void:
        b.ret()
    else:
        if prim is None:  # the rule gives no primal result: run the primal for it
            prim = b.call(fn, [a for a, k in zip(aug.args, _primal_mask(kinds)) if k])
        b.ret(prim)
    b = Builder(rev.append_block("entry"))
    rargs = _user_args(fn, kinds, rev.args)
    extra = list(rev.args[len(rargs):-1])  # dret, if any
    if t is not None:
        w = b.call(engine.helper("pop"), [rev.args[-1], const_int(T.i64, 8)])
        extra.append(b.load(T.ptr(), w, align=8))
    out = b.call(user_rev, rargs + extra[: len(user_rev.args) - len(rargs)])
    if rev.return_type is T.void:
        b.ret()
    elif out.type is rev.return_type:
        b.ret(out)
    else:
        b.ret(zero(rev.return_type))
