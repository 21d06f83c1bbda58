"""Floats passed as their bits: the type analysis follows a float's bits through an integer parameter.

C code that moves a ``double`` through a ``uint64_t`` parameter (``memcpy`` into an integer, a union, a
``firstprivate`` capture of OpenMP) leaves ``bitcast double %v to i64`` at the call and ``bitcast i64 %p
to double`` in the callee. :func:`retype_float_bit_calls` makes such a call pass the float to a clone of
the callee whose parameter is the float (:func:`retyped_clone`), so the derivative flows where the bits
go, as Enzyme's type analysis lets it; the primal computes the same bits.
"""

from __future__ import annotations

from collections.abc import Collection

from gpucompiler.llvm import Builder, Function, Instruction, constant, types as T

from .emit import sizeof

#: the suffix of a clone taking floats where the original took their bits
SUFFIX = ".gpuc.bits"


def float_bits(param, hint=None):
    """The float type an integer parameter holds the bits of, else None: its every use (debug records aside) a
    ``bitcast`` to that type, or a store of the bits into memory (the float is ``hint``, what the caller
    passes the bits of, when no use casts them)."""
    if param.type.kind != "int":
        return None
    uses = _operand_users(param)
    casts = [u for u in uses if u.opcode == "bitcast"]
    stores = [u for u in uses if u.opcode == "store" and u.operands[0] is param and u.operands[1] is not param]
    tys = {u.type for u in casts}
    if not uses or len(casts) + len(stores) != len(uses) or len(tys) > 1:
        return None
    t = next(iter(tys)) if tys else hint
    return t if t is not None and t.kind == "float" and sizeof(t) == sizeof(param.type) else None


def retyped_clone(fn: Function, name: str, floats: list, result=None) -> Function:
    """A copy of ``fn`` named ``name`` whose parameter ``k`` is ``floats[k]`` where that is not None (the
    float whose bits it held: its bitcasts are gone), returning float type ``result`` (the float whose bits
    each ``ret`` returns: :func:`returns_float_bits`) when given, added to ``fn``'s module."""
    module = fn.module
    assert module is not None, "a function of a module"
    clone = fn.clone(name + ".tmp")
    params = [f or a.type for a, f in zip(clone.args, floats)]
    ret = result or clone.return_type
    new = Function(name, T.function(ret, params, clone.function_type.vararg), prefix=_internal(fn.prefix))
    new.metadata = dict(clone.metadata)
    new.attribute_groups, new.attributes = list(clone.attribute_groups), list(clone.attributes)
    new.blocks = clone.blocks
    clone.blocks = []
    for block in new.blocks:
        block.parent = new
    b = Builder()
    if result is not None:
        for block in new.blocks:
            term = block.terminator
            if term is not None and term.opcode == "ret":
                cast = term.operands[0]
                src = _float_source(cast)
                assert isinstance(cast, Instruction) and src is not None, "returns_float_bits checked every ret"
                b.position_before(term)
                b.ret(src)
                term.erase()
                _erase_if_unused(cast)
    for old, arg, f in zip(clone.args, new.args, floats):
        arg.name = old.name
        if f is None:
            old.replace_all_uses_with(arg)
            continue
        for use in _operand_users(old):
            if use.opcode == "store":  # the bits stored: the float (same bytes)
                b.position_before(use)
                b.store(arg, use.operands[1], align=use.alignment)
            else:
                use.replace_all_uses_with(arg)
            use.erase()
        old.replace_all_uses_with(constant(old.type, "poison"))  # what debug records said of it
    module.remove_function(clone)
    module.add_function(new)
    return new


def _internal(prefix: str) -> str:
    """``prefix`` (linkage, calling convention...) with internal linkage."""
    words = [w for w in prefix.split() if w not in ("dso_local", "external", "linkonce_odr", "weak_odr", "linkonce",
                                                    "weak", "available_externally", "private", "internal",
                                                    "hidden", "protected", "default")]
    return " ".join(["internal", *words])


def returns_float_bits(fn: Function):
    """The float type whose bits every ``ret`` of ``fn`` returns (a ``bitcast`` of a float), else None."""
    rets = [b.terminator for b in fn.blocks if b.terminator is not None and b.terminator.opcode == "ret"]
    srcs = [_float_source(r.operands[0]) if r.operands else None for r in rets]
    tys = {s.type for s in srcs if s is not None}
    return next(iter(tys)) if rets and len(tys) == 1 and all(s is not None for s in srcs) else None


def _erase_if_unused(inst) -> None:
    """Erase instruction ``inst`` when nothing but debug records uses it."""
    if isinstance(inst, Instruction) and not _operand_users(inst):
        inst.replace_all_uses_with(constant(inst.type, "poison"))  # what debug records said of it
        inst.erase()


def _operand_users(v) -> list:
    """The instructions using ``v`` as an operand (not only in a debug record)."""
    return [u for u in v.users if isinstance(u, Instruction) and v in u.operands]


def _float_source(a):
    """The float value whose bits integer ``a`` is (``bitcast`` of a float), else None."""
    if isinstance(a, Instruction) and a.opcode == "bitcast" and a.type.kind == "int" and \
            a.operands[0].type.kind == "float":
        return a.operands[0]
    return None


def retype_float_bit_calls(fn: Function, ruled: Collection[str] = ()) -> None:
    """Each call in ``fn`` of a defined function that takes a float's bits (:func:`_float_source`) in a
    parameter it uses only as that float (:func:`float_bits`), or returns a float's bits the call uses only
    as that float (:func:`returns_float_bits`), calls the callee's retyped clone with (for) the float. Callees
    named in ``ruled`` (they carry registered derivative rules) are called as they are."""
    b = Builder()
    for inst in list(fn.instructions()):
        callee = inst.callee if inst.opcode == "call" else None
        if not isinstance(callee, Function) or callee.is_declaration or callee.function_type.vararg or \
                callee.name in ruled:
            continue
        floats, sources = [], []
        for a, p in zip(inst.args, callee.args):
            src = _float_source(a)
            if src is not None and float_bits(p, src.type) is src.type:
                floats.append(src.type)
                sources.append(src)
            else:
                floats.append(None)
                sources.append(a)
        uses = _operand_users(inst)
        result = returns_float_bits(callee) if uses and all(
            u.opcode == "bitcast" and u.type.kind == "float" for u in uses) else None
        if result is not None and any(u.type is not result for u in uses):
            result = None
        if not any(floats) and result is None:
            continue
        name = callee.name + SUFFIX + "".join(str(k) for k, f in enumerate(floats) if f is not None) + (
            "r" if result is not None else "")
        target = fn.module.functions.get(name) if fn.module is not None else None
        if target is None:
            target = retyped_clone(callee, name, floats, result)
        b.position_before(inst)
        new = b.call(target, sources, name=inst.name)
        new.metadata = dict(inst.metadata)
        if result is not None:
            for u in uses:
                u.replace_all_uses_with(new)
                u.erase()
            inst.replace_all_uses_with(constant(inst.type, "poison"))  # what debug records said of it
        else:
            inst.replace_all_uses_with(new)
        casts = [a for a, f in zip(inst.args, floats) if f is not None]
        inst.erase()
        for cast in casts:
            _erase_if_unused(cast)
