"""``__enzyme_batch``: the primal function over ``N`` lanes (Enzyme's batch mode) from C.

``__enzyme_batch(f, enzyme_width, N, <marker, values>...)``: each argument of ``f`` is preceded by
``enzyme_vector`` (``N`` values follow, one per lane) or ``enzyme_scalar`` (one value, every lane).
The call becomes ``N`` calls of ``f``, one per lane; the results come back as the marker's return
type holds them: a struct, array or vector of ``N`` results, or through ``sret`` (``N`` results in
a row), or nothing when ``f`` returns ``void``. Anything else is an :class:`ADError` naming the call.
"""

from __future__ import annotations

import re

from gpucompiler.llvm import (Builder, ConstantExpr, Function, GlobalVariable, Instruction, const_int, constant, parse,
                              types as T)

from .errors import unsupported

BATCH = "__enzyme_batch"
_CALL = re.compile(r"@\"?[\w.$]*__enzyme_batch[\w.$]*\"?\(")


def lower_text(text: str) -> str:
    """LLVM IR ``text`` with every ``__enzyme_batch*`` call replaced by its lanes' calls (``text`` itself
    when it has none)."""
    if not _CALL.search(text):
        return text
    module = parse(text)
    for fn in list(module.functions.values()):
        for inst in list(fn.instructions()):
            callee = inst.callee if inst.opcode == "call" else None
            if isinstance(callee, Function) and BATCH in callee.name:
                _lower(inst)
    for fn in [f for f in module.functions.values() if BATCH in f.name and f.is_declaration and not f.users]:
        module.remove_function(fn)
    return str(module)


_MARKERS = ("enzyme_width", "enzyme_vector", "enzyme_scalar")


def marker_of(v) -> str | None:
    """The batch marker ``v`` loads (``enzyme_width``...: C's ``int`` globals), else None."""
    g = v.pointer_operand if isinstance(v, Instruction) and v.opcode == "load" else v
    while isinstance(g, (Instruction, ConstantExpr)) and g.opcode in ("addrspacecast", "bitcast"):
        g = g.operands[0]
    if isinstance(g, GlobalVariable):
        return next((m for m in _MARKERS if m in g.name), None)
    return None


def _lower(inst: Instruction) -> None:
    sret = inst.args[0] if inst.has_attribute("sret") else None
    items = inst.args[1 if sret is not None else 0:]
    f = items[0] if items else None
    if not isinstance(f, Function):
        raise unsupported("the first argument of __enzyme_batch must be a function", inst)
    rest = items[1:]
    width = getattr(rest[1], "value", None) if len(rest) >= 2 and marker_of(rest[0]) == "enzyme_width" else None
    if not isinstance(width, int) or width < 1:
        raise unsupported("__enzyme_batch needs enzyme_width, N (a constant N >= 1) after the function", inst)
    lanes: list[list] = [[] for _ in range(width)]
    i = 2
    for number, _ in enumerate(f.args, 1):
        kind = marker_of(rest[i]) if i < len(rest) else None
        if kind in ("enzyme_vector", "enzyme_scalar"):
            i += 1
        elif kind is None and i < len(rest):
            kind = "enzyme_vector"  # Enzyme's default: one value per lane
        else:
            raise unsupported(f"argument {number} of @{f.name} in __enzyme_batch: give it {width} values "
                              f"(enzyme_vector, the default) or enzyme_scalar and one value", inst)
        n = width if kind == "enzyme_vector" else 1
        values = rest[i:i + n]
        if len(values) < n or any(marker_of(v) for v in values):
            raise unsupported(f"too few values ({kind}) for argument {number} of @{f.name} in __enzyme_batch",
                              inst)
        for k in range(width):
            lanes[k].append(values[k if n > 1 else 0])
        i += n
    if i < len(rest):
        raise unsupported(f"{len(rest) - i} argument(s) too many for @{f.name} in __enzyme_batch", inst)
    shape = _shape(inst, f, width, sret)
    b = Builder()
    b.position_before(inst)
    block = inst.parent
    assert block is not None, "a call of the module"
    before = set(block.instructions)
    results = [b.call(f, lane) for lane in lanes]
    _return(b, inst, f, results, sret, shape)
    loc = (inst.metadata or {}).get("dbg")
    if loc is not None:  # the calls may be inlined into a function with debug info: they need a location
        for new in [i for i in block.instructions if i not in before]:
            new.metadata = {**(new.metadata or {}), "dbg": loc}
    inst.erase()


def _shape(inst: Instruction, f: Function, width: int, sret) -> str:
    """How the call returns the lanes' results: ``"sret"``, ``"none"``, ``"vector"`` or ``"aggregate"``;
    a return type that cannot hold them is an ADError (raised before anything is emitted)."""
    rt, want = f.return_type, inst.type
    if sret is not None and rt is not T.void:
        return "sret"
    if rt is not T.void and want is T.void:
        raise unsupported(f"__enzyme_batch of @{f.name} returns void, but @{f.name} returns {rt}", inst)
    if rt is T.void or want is T.void:
        return "none"
    if isinstance(want, T.VectorType) and want.count == width and want.element is rt:
        return "vector"
    members = want.elements if isinstance(want, T.StructType) else \
        [want.element] * want.count if isinstance(want, T.ArrayType) else None
    if members is None or len(members) != width or any(m is not rt for m in members):
        raise unsupported(f"__enzyme_batch of @{f.name} returns {want}: {width} results of type {rt} "
                          f"(a struct, array or vector of them) expected", inst)
    return "aggregate"


def _return(b: Builder, inst: Instruction, f: Function, results: list, sret, shape: str) -> None:
    if shape == "sret":
        for k, r in enumerate(results):
            b.store(r, b.gep(f.return_type, sret, [const_int(T.i64, k)]))
        return
    if shape == "none":
        return
    out = constant(inst.type, "poison")
    for k, r in enumerate(results):
        out = b.insertelement(out, r, const_int(T.i32, k)) if shape == "vector" else b.insertvalue(out, r, k)
    inst.replace_all_uses_with(out)
