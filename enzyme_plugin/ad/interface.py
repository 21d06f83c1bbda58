"""Enzyme's C interface: find the marker calls, decode their argument
conventions, generate the derivatives and replace the markers.

``__enzyme_autodiff*`` (reverse mode, adjoints of active scalars returned),
``__enzyme_fwddiff*`` (forward mode, the tangent of the return), matched by
substring so C++-mangled names work. Argument conventions: ``enzyme_dup``,
``enzyme_dupnoneed``, ``enzyme_const``, ``enzyme_out`` given as globals (or
loads of them) or metadata strings; without a marker a pointer is followed
by its shadow, a float is active (forward mode: followed by its tangent) and
an integer is constant.
"""

from __future__ import annotations

import re
from typing import Callable

from gpucompiler.llvm import Builder, Function, GlobalVariable, Instruction, constant, parse, types as T

from . import custom, gpu, preprocess
from .analysis import CONST, DUP, OUT
from .emit import carries_derivative, is_float_like
from .engine import Engine
from .errors import unsupported

MODES = (("__enzyme_autodiff", "reverse"), ("__enzyme_fwddiff", "forward"),
         ("__enzyme_augmentfwd", "augment"), ("__enzyme_reverse", "split_reverse"))
MARKERS = ("enzyme_dupnoneed", "enzyme_dup", "enzyme_const", "enzyme_out", "enzyme_allocated", "enzyme_tape")
_MDSTR = re.compile(r'!"([^"]*)"')


def marker_mode(name: str) -> str | None:
    for key, mode in MODES:
        if key in name:
            return mode
    return None


def _marker_of(v) -> str | None:
    if isinstance(v, tuple):
        return v[1]
    g = v
    if isinstance(v, Instruction) and v.opcode == "load":
        g = v.pointer_operand
    if isinstance(g, GlobalVariable):
        for m in MARKERS:
            if m in g.name:
                return m
    return None


def call_items(inst) -> list:
    """The call's arguments in order: values, and ``("marker", name)`` for metadata strings."""
    k = inst._callee_slot()
    items, pending = [], None
    parts = inst.parts
    for p in parts[parts.index(k) + 1:]:
        if isinstance(p, T.Type):
            pending = p
        elif type(p) is int:
            items.append(inst.operands[p])
            pending = None
        elif type(p) is str and pending is T.metadata:
            m = _MDSTR.search(p)
            if m:
                items.append(("marker", m.group(1)))
                pending = None
    return items


def decode(inst, fn, mode: str, sret=None):
    """``(kinds, caller values per derivative parameter, split-mode extras)`` of a marker call on ``fn``.

    Too few or too many arguments for ``fn``, or a marker with no value after
    it, raise :class:`ADError` naming the call.
    """
    items = call_items(inst)[2 if sret else 1:]
    kinds, values, i = [], [], 0
    extras = {}

    def take(n: int, what: str) -> list:
        nonlocal i
        if i + n > len(items):
            raise unsupported(f"too few arguments for @{fn.name} in the marker call (missing {what})", inst)
        out = items[i:i + n]
        i += n
        return out

    while i < len(items) and _marker_of(items[i]) in ("enzyme_allocated", "enzyme_tape"):
        marker = _marker_of(items[i])
        i += 1
        extras[marker] = take(1, f"the value after {marker}")[0]
    for a in fn.args:
        if i >= len(items):
            raise unsupported(f"too few arguments for @{fn.name} in the marker call", inst)
        m = _marker_of(items[i])
        if m is not None:
            i += 1
        else:
            if a.type.kind == "ptr":
                m = "enzyme_dup"
            elif is_float_like(a.type):
                m = "enzyme_dup" if mode == "forward" else "enzyme_out"
            else:
                m = "enzyme_const"
        if m in ("enzyme_dup", "enzyme_dupnoneed") and (mode == "forward" or a.type.kind == "ptr"):
            kinds.append(DUP)
            values += take(2, f"the value and shadow after {m}")
        elif m in ("enzyme_dup", "enzyme_dupnoneed", "enzyme_out"):
            kinds.append(OUT if is_float_like(a.type) else CONST)
            values += take(1, f"the value after {m}")
        else:
            kinds.append(CONST)
            values += take(1, f"the value after {m}")
    if i < len(items):
        raise unsupported(f"{len(items) - i} argument(s) too many for @{fn.name} in the marker call", inst)
    for v in values:
        if isinstance(v, tuple):
            raise unsupported("misplaced activity marker in the marker call", inst)
    return kinds, values, extras


def _sret(inst):
    """``(pointer, None)`` when the marker returns its struct through ``sret``, else None."""
    for k, p in enumerate(inst.parts):
        if type(p) is str and "sret(" in p:
            return inst.args[0], None
    return None


def _target(inst, sret=None):
    items = call_items(inst)[1 if sret else 0:]
    f = items[0] if items else None
    if not isinstance(f, Function):
        raise unsupported("the first argument of the marker call must be a function", inst)
    return f


def _convert(b, v, want, inst):
    """Reshape the derivative's result ``v`` to the marker call's return type ``want``."""
    have = v.type if v is not None else T.void
    if want is T.void:
        return None
    if v is None:
        from .emit import zero

        return zero(want)
    if have is want:
        return v
    if have.kind == "struct" and len(have.elements) == 1 and have.elements[0] is want:
        return b.extractvalue(v, 0)
    if have.kind == "struct" and want.kind in ("struct", "array"):
        n = len(want.elements) if want.kind == "struct" else want.count
        if n == len(have.elements):
            out = constant(want, "poison")
            for k in range(n):
                out = b.insertvalue(out, b.extractvalue(v, k), k)
            return out
    raise unsupported(f"marker call returns {want} but the derivative gives {have}", inst)


def _split_site(engine, b, inst, f, kinds, values, extras, mode):
    """``__enzyme_augmentfwd`` / ``__enzyme_reverse``: the engine's tape is kept behind a pointer
    stored in the first word of the caller's tape memory (``enzyme_tape``)."""
    from .emit import declare, fconst, zero
    from .reverse import TAPE

    holder = extras.get("enzyme_tape")
    if holder is None:
        raise unsupported("split mode needs an enzyme_tape argument", inst)
    aug, rev = engine.split_fns(f, kinds)
    if mode == "augment":
        malloc = declare(engine.module, "malloc", T.function(T.ptr(), [T.i64]))
        ts = b.call(malloc, [constant(T.i64, "24")])
        b.store(constant(TAPE, "zeroinitializer"), ts)
        b.call(aug, values + [ts])
        b.store(ts, holder)
        return holder if inst.type.kind == "ptr" else None
    ts = b.load(T.ptr(), holder)
    rt = f.return_type
    seed = [fconst(rt, 1.0)] if is_float_like(rt) else [zero(rt)] if carries_derivative(rt) else []
    out = b.call(rev, values + seed + [ts])
    b.call(engine.helper("free"), [ts])
    b.call(declare(engine.module, "free", T.function(T.void, [T.ptr()])), [ts])
    return out if out.type is not T.void else None


def marker_sites(module) -> list:
    """Every marker call of ``module`` as ``(call, mode)``, in module order."""
    sites = []
    for fn in list(module.functions.values()):
        for inst in list(fn.instructions()):
            if inst.opcode != "call" or inst.callee is None or getattr(inst.callee, "sigil", "") != "@":
                continue
            mode = marker_mode(inst.callee.name)
            if mode is not None:
                sites.append((inst, mode))
    return sites


def _innermost(module, sites) -> list:
    """The sites whose differentiated function reaches no other marker call (through calls or
    function references): differentiated first, so that an outer derivative differentiates
    the code of the inner one (higher-order AD). A marker reached from its own function
    (``f`` differentiating itself) is an ADError."""
    holders = {inst.parent.parent for inst, _ in sites}
    refs: dict = {}
    for fn in module.functions.values():
        refs[fn] = {op for inst in fn.instructions() for op in inst.operands if isinstance(op, Function)}

    def reaches_marker(f) -> bool:
        seen, todo = set(), [f]
        while todo:
            g = todo.pop()
            if g in holders:
                return True
            if g not in seen:
                seen.add(g)
                todo.extend(refs.get(g, ()))
        return False

    ready = []
    for inst, mode in sites:
        if not reaches_marker(_target(inst, _sret(inst))):
            ready.append((inst, mode))
    if not ready:
        raise unsupported("autodiff of a function that differentiates itself (the marker calls form a "
                          "cycle): a derivative of unbounded order", sites[0][0])
    return ready


def differentiate_module(module, sites=None):
    """Differentiate ``sites`` (default: every marker call of ``module``) in place; returns
    (engine, count). The functions the sites differentiate must not contain marker calls
    themselves: :func:`differentiate_nested` orders them."""
    engine = Engine(module)
    sites = marker_sites(module) if sites is None else sites
    for inst, mode in sites:
        sret = _sret(inst)
        f = custom.wrap_function_like(module, _target(inst, sret), engine.function_like)
        kinds, values, extras = decode(inst, f, mode, sret)
        b = Builder()
        b.position_before(inst)
        if mode != "split_reverse":
            engine.globals.zero_before(b, f)
        if mode in ("augment", "split_reverse"):
            res = _split_site(engine, b, inst, f, kinds, values, extras, mode)
        elif mode == "forward":
            d = engine.forward_fn(f, kinds)
            out = b.call(d, values)
            res = b.extractvalue(out, 1) if carries_derivative(f.return_type) else None
        else:
            d = engine.combined_fn(f, kinds)
            out = b.call(d, values)
            res = out if d.return_type is not T.void else None
        if sret is not None:
            if res is not None:  # the struct of adjoints has the sret struct's layout
                b.store(res, sret[0])
            inst.erase()
            continue
        new = _convert(b, res, inst.type, inst)
        if new is not None:
            inst.replace_all_uses_with(new)
        inst.erase()
    engine.run()
    return engine, len(sites)


def differentiate_nested(text: str, optimize: Callable[[str], str]) -> str:
    """Differentiate every marker call of LLVM IR ``text``, innermost first; returns the text
    (helpers defined, not optimised).

    A function that calls ``__enzyme_autodiff``/``__enzyme_fwddiff`` is differentiated after
    its own marker calls became calls of derivative functions; between the levels the module
    is optimised (``optimize``: text -> text) and prepared again, so the outer derivative
    sees the inner one as SSA code, as Enzyme differentiates its own output. Inner levels add
    adjoints with plain atomics (no warp shuffles), which the outer level differentiates."""
    module = parse(preprocess.prepare(text))
    while True:
        sites = marker_sites(module)
        ready = _innermost(module, sites) if sites else []
        if len(ready) == len(sites):
            engine, _ = differentiate_module(module, ready)
            return engine.finalize(str(module))
        with gpu.options(warp_aggregate=False):  # plain atomics: the outer level differentiates them
            engine, _ = differentiate_module(module, ready)
        module = parse(preprocess.prepare(optimize(engine.finalize(str(module)))))


def differentiate(ir_text: str, *, optimize: bool = True) -> str:
    """LLVM IR text with every ``__enzyme_autodiff``/``__enzyme_fwddiff`` call replaced by a call to
    the generated derivative; the result verifies under LLVM and is optimised at O2."""
    text = differentiate_nested(ir_text, lambda t: preprocess.optimize(t, 2))
    return preprocess.optimize(text, 2 if optimize else 0)
