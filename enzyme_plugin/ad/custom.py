"""User-registered derivative rules: ``__enzyme_register_gradient_<f> = {f, augment, reverse}``
and ``__enzyme_register_derivative_<f> = {f, forward}`` global arrays, and
``__enzyme_function_like* = {f, "log1p"}`` (``f`` takes a math function's rule).

The engine wraps them in its own calling convention: the augmented wrapper
pushes the user's tape pointer on the engine's tape, the reverse wrapper pops
it and hands it back.
"""

from __future__ import annotations

import re

from gpucompiler.llvm import Builder, Function, Instruction, const_int, constant, types as T

from .analysis import DUP
from .emit import reshape
from .errors import unsupported
from .rules import math_name


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


#: ``__enzyme_*`` globals the engine reads; any other (``__enzyme_inactivefn``, ``__enzyme_allocation_like``...)
#: asks for a behaviour the engine does not implement
_KNOWN_GLOBALS = ("__enzyme_register_gradient", "__enzyme_register_derivative", "__enzyme_function_like")


def check_globals(module) -> None:
    """An ``__enzyme_*`` declaration global the engine does not implement is an ADError naming it
    (ignoring it would differentiate the function against the user's declaration); so is a registered
    rule whose function the optimiser inlined (:func:`check_not_inlined`)."""
    for g in module.globals.values():
        if g.name.startswith("__enzyme_") and g.initializer is not None and not g.name.startswith(_KNOWN_GLOBALS):
            raise unsupported(f"@{g.name} is not supported (the engine reads only __enzyme_register_gradient_*, "
                              f"__enzyme_register_derivative_* and __enzyme_function_like*)")
    gradients, derivatives = registered(module)
    check_not_inlined(module, gradients, derivatives, function_like(module))


#: the marker calls whose first function argument the engine differentiates (substrings, as
#: :class:`~.c_interface.MarkerMode` matches them)
_MARKER_CALLS = ("__enzyme_autodiff", "__enzyme_fwddiff", "__enzyme_augmentfwd", "__enzyme_reverse")


def check_not_inlined(module, gradients, derivatives, like) -> None:
    """A function with a registered rule (``gradients``/``derivatives`` of :func:`registered`, ``like`` of
    :func:`function_like`) whose body the optimiser inlined before AD is an ADError: the engine would
    differentiate the inlined body and never call the rule (clang -O2 inlines a small function into
    its callers). With debug info the inlined instructions name the function (``inlinedAt``) in the
    functions the markers reach; without it, a function that can be inlined (no ``noinline``/``optnone``)
    is refused when no call of it is left outside its own rules, or when LLVM's optimiser ran on it (it
    may be inlined into some callers and called from others)."""
    rules = {name: f"__enzyme_register_gradient_{name}" for name in gradients}
    rules.update({name: f"__enzyme_register_derivative_{name}" for name in derivatives})
    rules.update({name: f"__enzyme_function_like ({kind})" for name, kind in like.items()})
    fns = {name: f for name in rules if (f := module.functions.get(name)) is not None and not f.is_declaration}
    if not fns:
        return
    helpers = {f for pair in gradients.values() for f in pair} | set(derivatives.values())
    reached = _marker_reach(module)
    by_node = {f.metadata["dbg"]: f for f in fns.values() if "dbg" in f.metadata}
    for g in reached:
        if g in helpers or g.name in fns:
            continue
        for inst in g.instructions():
            hit = _inlined_from(inst.metadata.get("dbg"), by_node, fns)
            if hit is not None:
                f, line = hit
                raise unsupported(f"@{f.name} has a registered derivative rule ({rules[f.name]}), but the optimiser "
                                  f"inlined its body into @{g.name}{line} before differentiation, so the rule "
                                  f"cannot apply: {_HOW}", inst, g)
    for f in fns.values():
        if "dbg" in f.metadata or f.has_attribute("noinline") or f.has_attribute("optnone"):
            continue
        if not any(isinstance(u.user, Instruction) and u.user.parent is not None
                   and u.user.parent.parent not in helpers for u in f.uses):
            raise unsupported(f"@{f.name} has a registered derivative rule ({rules[f.name]}) but no call of it is "
                              f"left: the optimiser inlined it (or removed its calls) before differentiation, so "
                              f"the rule cannot apply: {_HOW}", None, f)
        if any(f.has_attribute(a) for a in _INFERRED):
            raise unsupported(f"@{f.name} has a registered derivative rule ({rules[f.name]}) and LLVM's optimiser ran "
                              f"on the module (@{f.name} carries attributes it infers), so it may have been inlined "
                              f"into some of its callers, which would not call the rule; without debug info the "
                              f"engine cannot tell which: compile with -g, or {_HOW}", None, f)


#: function attributes only LLVM's optimisation pipeline gives a function (clang's -O0 and
#: -disable-llvm-optzns output has none): the inliner may have run on the module
_INFERRED = ("nosync", "nofree", "norecurse", "willreturn", "memory")


_HOW = ("mark the function __attribute__((noinline)), or give gpuc enzyme IR the optimiser has not run on yet "
        "(clang -O2 -Xclang -disable-llvm-optzns, or -O0 -Xclang -disable-O0-optnone) and optimise after it")


def _marker_reach(module) -> list[Function]:
    """The defined functions the marker calls differentiate and the functions they call, in module order."""
    work = []
    for fn in module.functions.values():
        for inst in fn.instructions():
            callee = getattr(inst, "callee", None) if inst.opcode == "call" else None
            name = getattr(callee, "name", "") or ""
            if any(m in name for m in _MARKER_CALLS):
                work += [o for o in inst.operands if isinstance(o, Function) and o is not callee]
    seen: set = set()
    while work:
        f = work.pop()
        if f in seen or f.is_declaration:
            continue
        seen.add(f)
        work += [o for inst in f.instructions() for o in inst.operands if isinstance(o, Function)]
    return [f for f in module.functions.values() if f in seen]


def _inlined_from(loc, by_node, fns):
    """``(function, " at <file:line>")`` when debug location ``loc`` is code inlined from one of ``fns``
    (its subprogram, or one of the locations it was inlined at, belongs to it), else None."""
    depth = 0
    while loc is not None and getattr(loc, "kind", None) == "DILocation" and depth < 64:
        at = loc.field("inlinedAt")
        if not hasattr(at, "field"):
            return None  # the outermost location: the function's own code
        sp = _subprogram(loc)
        f = by_node.get(sp) if sp is not None else None
        if f is None and sp is not None:
            f = fns.get(_unquote(sp.field("linkageName"))) or fns.get(_unquote(sp.field("name")))
        if f is not None:
            return f, _inlined_line(at)
        loc, depth = at, depth + 1
    return None


def _subprogram(loc):
    scope, depth = loc.field("scope"), 0
    while hasattr(scope, "field") and scope.kind != "DISubprogram" and depth < 64:
        scope, depth = scope.field("scope"), depth + 1
    return scope if hasattr(scope, "kind") and scope.kind == "DISubprogram" else None


def _inlined_line(at) -> str:
    line = _unquote(at.field("line"))
    return f" (at line {line})" if line else ""


def _unquote(text) -> str | None:
    return text.strip().strip('"') if isinstance(text, str) else None


def function_like(module) -> dict[str, str]:
    """``__enzyme_function_like* = {f, "name"}`` globals: function name -> the math function whose
    derivative it takes (``log1p``)."""
    out = {}
    for g in module.globals.values():
        init = g.initializer
        if init is None or not g.name.startswith("__enzyme_function_like"):
            continue
        ops = list(getattr(init, "operands", ()))
        name = _c_string(ops[1]) if len(ops) >= 2 else None
        if name is None or not isinstance(ops[0], Function):
            raise unsupported(f"@{g.name} must be {{function, \"math function name\"}}")
        if math_name(name) is None:
            raise unsupported(f"@{g.name} declares @{ops[0].name} to behave like '{name}', "
                              f"which has no derivative rule")
        out[ops[0].name] = name
    return out


def wrap_function_like(module, fn, like) -> Function:
    """``fn`` itself, or when it is declared function-like, an internal function that calls it (so
    that differentiating it directly takes the math function's rule, as calls to it do)."""
    if fn.name not in like:
        return fn
    name = f"{fn.name}.like"
    w = module.functions.get(name)
    if w is None:
        w = Function(name, fn.function_type, prefix="internal")
        module.add_function(w)
        b = Builder(w.append_block("entry"))
        out = b.call(fn, list(w.args))
        b.ret(out) if fn.return_type is not T.void else b.ret()
    return w


def _c_string(v) -> str | None:
    """The text of a global holding ``c"...\\00"``, or None."""
    ref = getattr(getattr(v, "initializer", None), "ref", None)
    if not isinstance(ref, str) or not ref.startswith('c"'):
        return None
    raw = re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), ref[2:-1])
    return raw.split("\0", 1)[0]


def _user_args(fn, kinds, params, width: int = 1, lane: int = 0):
    """Primal arguments with each shadow (of ``lane``, when the parameters hold ``width`` per dup
    argument) right after its primal (the user rules' convention)."""
    if width == 1:
        return list(params[: sum(2 if k == DUP else 1 for k in kinds)])
    out, it = [], iter(params)
    for k in kinds:
        out.append(next(it))
        if k == DUP:
            shadows = [next(it) for _ in range(width)]
            out.append(shadows[lane])
    return out


def _check_arity(fn, kinds, user, args) -> None:
    """The rule takes every argument with a shadow followed by it: an argument without one at the call
    (not active there) would shift the rest."""
    if len(args) != len(user.args):
        raise unsupported(f"the rule @{user.name} of @{fn.name} takes {len(user.args)} arguments, the call gives "
                          f"{len(args)}: every array argument of a function with a custom rule needs a shadow at "
                          "the call (one is constant there); pass it with Duplicated or call a copy of the "
                          "function without the rule", None, fn)


def gen_forward(engine, fn, kinds, new, user, width: int = 1):
    b = Builder(new.append_block("entry"))
    if width > 1:
        _gen_forward_batch(b, fn, kinds, new, user, width)
        return
    args = _user_args(fn, kinds, new.args)
    _check_arity(fn, kinds, user, args)
    out = b.call(user, args)
    rt = fn.return_type
    if rt is T.void:
        b.ret()
        return
    if out.type is new.return_type:
        b.ret(out)
        return
    if out.type is rt:  # the rule gives the tangent (or shadow) only: the primal comes from fn
        prim = b.call(fn, [a for a, k in zip(new.args, _primal_mask(kinds)) if k])
        agg = b.insertvalue(constant(new.return_type, "poison"), prim, 0)
        b.ret(b.insertvalue(agg, out, 1))
        return
    both = reshape(b, out, new.return_type) if out.type is not T.void else None
    if both is None:
        raise unsupported(f"the forward rule @{user.name} registered for @{fn.name} returns {out.type}: "
                          f"return the tangent of the result ({rt}), or the primal and the tangent", None, fn)
    b.ret(both)


def _gen_forward_batch(b, fn, kinds, new, user, width: int) -> None:
    """A batch through a forward rule: the rule once per lane (its tangent), the primal from ``fn``."""
    rt = fn.return_type
    tangents = []
    for lane in range(width):
        args = _user_args(fn, kinds, new.args, width, lane)
        _check_arity(fn, kinds, user, args)
        out = b.call(user, args)
        if out.type is not rt and rt is not T.void:
            both = reshape(b, out, T.struct([rt, rt])) if out.type is not T.void else None
            if both is None:
                raise unsupported(f"the forward rule @{user.name} registered for @{fn.name} returns {out.type}: "
                                  f"return the tangent of the result ({rt}), or the primal and the tangent", None, fn)
            out = b.extractvalue(both, 1)
        tangents.append(out)
    if rt is T.void:
        b.ret()
        return
    prim = b.call(fn, [a for a, k in zip(new.args, _primal_mask(kinds, width)) if k])
    agg = b.insertvalue(constant(new.return_type, "poison"), prim, 0)
    for lane, t in enumerate(tangents):
        agg = b.insertvalue(agg, t, (1, lane))
    b.ret(agg)


def _primal_mask(kinds, width: int = 1):
    mask = []
    for k in kinds:
        mask.append(True)
        if k == DUP:
            mask += [False] * width
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
    if fn.return_type.kind == "ptr":
        raise unsupported(f"registered reverse rules of a function returning a pointer (@{fn.name}) are not "
                          f"supported: its shadow cannot be returned", None, fn)
    b = Builder(aug.append_block("entry"))
    args = _user_args(fn, kinds, aug.args)
    _check_arity(fn, kinds, user_aug, args)
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
        return
    adjoints = reshape(b, out, rev.return_type) if out.type is not T.void else None
    if adjoints is None:
        raise unsupported(f"the reverse rule @{user_rev.name} registered for @{fn.name} returns {out.type}, "
                          f"but the adjoints of its active arguments are {rev.return_type}: return them "
                          f"(one value, or a struct of them in argument order)", None, fn)
    b.ret(adjoints)
