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

import enum
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from gpucompiler.llvm import (BasicBlock, Builder, ConstantExpr, Function, GlobalVariable, Instruction, Module, constant,
                              no_cyclic_gc, parse, types as T)
from gpucompiler.contain import contained

from . import batch, custom, leaf, leftover, preprocess, splitmode, stack
from .analysis import CONST, DUP, OUT
from .emit import carries_derivative, is_float_like, sizeof
from .engine import Engine
from .gpu import EngineOptions
from .errors import ADError, unsupported

if TYPE_CHECKING:  # pragma: no cover
    import llvmlite.binding as llvm


class MarkerMode(enum.Enum):
    """What a marker call of Enzyme's C interface asks for; the value is the marker's name (matched
    as a substring, so C++-mangled names work)."""

    REVERSE = "__enzyme_autodiff"
    FORWARD = "__enzyme_fwddiff"
    AUGMENT = "__enzyme_augmentfwd"
    SPLIT_REVERSE = "__enzyme_reverse"


MARKERS = ("enzyme_runtime_activity", "enzyme_dupnoneed", "enzyme_dup", "enzyme_const_return", "enzyme_const", "enzyme_out",
           "enzyme_allocated", "enzyme_tape", "enzyme_width", "enzyme_vector", "enzyme_scalar", "enzyme_context",
           "enzyme_nofree", "enzyme_primal_return", "enzyme_noret")
_MDSTR = re.compile(r'!"([^"]*)"')


def marker_mode(name: str) -> MarkerMode | None:
    for mode in MarkerMode:
        if mode.value in name:
            return mode
    return None


def _marker_of(v) -> str | None:
    if isinstance(v, tuple):
        return v[1]
    g = v
    if isinstance(v, Instruction) and v.opcode == "load":
        g = v.pointer_operand
    while isinstance(g, (Instruction, ConstantExpr)) and g.opcode in ("addrspacecast", "bitcast"):
        g = g.operands[0]  # CUDA device code: the marker lives in addrspace(1), read through a cast
    if isinstance(g, GlobalVariable):
        for m in MARKERS:
            if m in g.name:
                return m
    return None


def call_items(inst) -> list:
    """The call's arguments in order: values, and ``("marker", name)`` for metadata strings."""
    args = inst.args
    items: list = []
    done = 0
    for before, spelling in inst.call.metadata_args:
        items += args[done:before]
        done = before
        m = _MDSTR.search(spelling)
        if m:
            items.append(("marker", m.group(1)))
    return items + args[done:]


#: markers that take one value and say something about the call, not about an argument
_EXTRA = ("enzyme_allocated", "enzyme_tape", "enzyme_width", "enzyme_runtime_activity")
#: markers without a value that say something about the call
_FLAGS = ("enzyme_primal_return",)
#: markers of Enzyme's interface the engine does not implement
_UNSUPPORTED_MARKERS = ("enzyme_vector", "enzyme_scalar", "enzyme_context", "enzyme_nofree",
                        "enzyme_const_return", "enzyme_noret")


class _TooFew(Exception):
    """The marker call ran out of arguments (the message says what was missing)."""


def _integer_accesses(p, depth: int = 0) -> int | None:
    """How many integer loads and stores the function makes through pointer ``p`` (through the pointers it
    loads from it, and in the defined functions it passes ``p`` to); None when it accesses the memory
    otherwise, or lets ``p`` go elsewhere, so that the memory might carry a derivative."""
    if depth > 3:
        return None
    n = 0
    for u in p.users:
        if not isinstance(u, Instruction):
            return None
        k = None
        if u.opcode == "getelementptr" and u.operands[0] is p:
            k = _integer_accesses(u, depth)
        elif u.opcode == "load" and u.operands[0] is p:
            k = _integer_accesses(u, depth + 1) if u.type.kind == "ptr" else int(u.type.scalar.kind == "int") or None
        elif u.opcode == "store" and u.operands[1] is p and (u.operands[0].type.scalar.kind == "int"
                                                              or getattr(u.operands[0], "ref", None) == "null"):
            k = 1
        elif u.opcode == "call" and isinstance(u.callee, Function) and u.callee.blocks:
            params = [a for a, v in zip(u.callee.args, u.args) if v is p]
            counts = [_integer_accesses(a, depth + 1) for a in params]
            k = None if not params or None in counts else sum(c or 0 for c in counts)
        if k is None:
            return None
        n += k
    return n


def _integer_memory(p) -> bool:
    """Whether the function reads or writes ``p``'s memory, and only as integers (:func:`_integer_accesses`)."""
    return bool(_integer_accesses(p))


def _integer_object(v) -> bool:
    """Whether ``v`` points into a stack slot or global declared as integers (an ``int`` array)."""
    while isinstance(v, (Instruction, ConstantExpr)) and v.opcode in ("getelementptr", "bitcast", "addrspacecast"):
        v = v.operands[0]
    t = v.allocated_type if isinstance(v, Instruction) and v.opcode == "alloca" else \
        v.value_type if isinstance(v, GlobalVariable) else None
    while isinstance(t, (T.ArrayType, T.VectorType)):
        t = t.element
    return t is not None and t.kind == "int"


def _integer_argument(a, value) -> bool:
    """Whether unmarked pointer parameter ``a``, given ``value``, can carry no derivative: the function only
    reads and writes its memory as integers, or never touches it and ``value`` points to integers."""
    return _integer_memory(a) or (not _used(a) and _integer_object(value))


def _used(a) -> bool:
    """Whether an instruction uses ``a`` (debug records aside)."""
    return any(isinstance(u, Instruction) for u in a.users)


def decode(inst, fn, mode: MarkerMode, sret=None):
    """``(kinds, caller values per derivative parameter, split-mode extras)`` of a marker call on ``fn``.

    An unmarked pointer is ``enzyme_dup``; when that leaves the call without enough arguments, an unmarked
    pointer to memory ``fn`` only reads and writes as integers (``int *n``, ``long **meta``: no derivative
    can flow through it) is ``enzyme_const``, as Enzyme's C interface takes such calls.
    """
    try:
        return _decode(inst, fn, mode, sret, False)
    except _TooFew as short:
        if any(a.type.kind == "ptr" and (_integer_memory(a) or not _used(a)) for a in fn.args):
            try:
                return _decode(inst, fn, mode, sret, True)
            except _TooFew:
                pass
        leaf_lanes = _leaf_lanes(inst, fn, mode, sret)
        if leaf_lanes is not None:
            return leaf_lanes
        raise unsupported(str(short), inst) from None


def _leaf_lanes(inst, fn, mode: MarkerMode, sret):
    """A forward-mode batch call with exactly one shadow after each duplicated pointer (and no active scalar),
    decoded with ``extras["leaf_lanes"]`` set (:mod:`.leaf`); else None."""
    if mode is not MarkerMode.FORWARD:
        return None
    try:
        kinds, values, extras = _decode(inst, fn, mode, sret, False, leaf_lanes=True)
    except (ADError, _TooFew):
        return None
    if width_of(extras, inst) == 1 or any(k == DUP and a.type.kind != "ptr" for a, k in zip(fn.args, kinds)):
        return None
    extras["leaf_lanes"] = True
    return kinds, values, extras


def _decode(inst, fn, mode: MarkerMode, sret, int_pointers_const: bool, leaf_lanes: bool = False):
    """:func:`decode`, with unmarked pointers to integer memory constant when ``int_pointers_const``, and one
    shadow after each ``enzyme_dup`` pointer of a batch when ``leaf_lanes`` (:mod:`.leaf`).

    ``enzyme_allocated, N`` and ``enzyme_tape, t`` may stand before, between or after the
    arguments; in split reverse mode a trailing pointer is the tape (as ``__enzyme_augmentfwd``
    returned it) and a trailing float before it the seed of the result's adjoint. Too few or too
    many arguments for ``fn``, or a marker with no value after it, raise :class:`ADError` naming
    the call. ``enzyme_primal_return`` (no value) makes the result ``{primal, tangent}`` (forward mode)
    or ``{adjoints, primal}`` (reverse mode). ``enzyme_width, N`` (a constant, before the arguments) asks for a batch of ``N``
    derivatives (vector mode): every ``enzyme_dup`` value is followed by ``N`` shadows, and the
    result holds ``N`` derivatives of each kind (a struct of ``N``).
    """
    items = call_items(inst)[2 if sret else 1:]
    kinds, values, i = [], [], 0
    extras = {}

    def take(n: int, what: str) -> list:
        nonlocal i
        if i + n > len(items):
            raise _TooFew(f"too few arguments for @{fn.name} in the marker call (missing {what})")
        out = items[i:i + n]
        i += n
        return out

    def take_extras() -> None:
        nonlocal i
        while i < len(items):
            marker = _marker_of(items[i])
            if marker in _UNSUPPORTED_MARKERS:
                raise unsupported(f"the {marker} marker is not supported", inst)
            if marker in _FLAGS:
                i += 1
                extras[marker] = True
                continue
            if marker not in _EXTRA:
                return
            i += 1
            extras[marker] = take(1, f"the value after {marker}")[0]

    for a in fn.args:
        take_extras()
        if i >= len(items):
            raise _TooFew(f"too few arguments for @{fn.name} in the marker call")
        m = _marker_of(items[i])
        if m is not None:
            i += 1
        else:
            if a.type.kind == "ptr":
                m = "enzyme_const" if int_pointers_const and _integer_argument(a, items[i]) else "enzyme_dup"
            elif is_float_like(a.type):
                m = "enzyme_dup" if mode is MarkerMode.FORWARD else "enzyme_out"
            else:
                m = "enzyme_const"
        if m in ("enzyme_dup", "enzyme_dupnoneed") and (mode is MarkerMode.FORWARD or a.type.kind == "ptr"):
            if m == "enzyme_dupnoneed":  # its memory's primal values are not needed afterwards
                extras["noneed"] = extras.get("noneed", frozenset()) | {len(kinds)}
            kinds.append(DUP)
            n = 1 if leaf_lanes else width_of(extras, inst)
            what = f"the value and shadow after {m}" if n == 1 else f"the value and {n} shadows after {m}"
            taken = take(1 + n, what)
            if any(_marker_of(v) is not None for v in taken[1:]):  # a marker is never a shadow
                raise _TooFew(f"too few arguments for @{fn.name} in the marker call (missing {what})")
            values += taken
        elif m in ("enzyme_dup", "enzyme_dupnoneed", "enzyme_out"):
            kinds.append(OUT if is_float_like(a.type) else CONST)
            values += take(1, f"the value after {m}")
        else:
            kinds.append(CONST)
            values += take(1, f"the value after {m}")
    take_extras()
    if mode is MarkerMode.SPLIT_REVERSE:
        rest = items[i:]
        first = rest[0] if rest else None
        if first is not None and is_float_like(fn.return_type) and not isinstance(first, tuple) \
                and first.type is fn.return_type:
            extras["seed"] = rest[0]
            i += 1
            rest = rest[1:]
        if len(rest) == 1 and "enzyme_tape" not in extras and getattr(rest[0], "type", None) is not None \
                and rest[0].type.kind == "ptr":
            extras["returned_tape"] = rest[0]
            i += 1
    if i < len(items):
        raise unsupported(f"{len(items) - i} argument(s) too many for @{fn.name} in the marker call", inst)
    for v in values:
        if isinstance(v, tuple):
            raise unsupported("misplaced activity marker in the marker call", inst)
    return kinds, values, extras


def width_of(extras, inst) -> int:
    """The batch width of a marker call from its decoded extras (1 without ``enzyme_width``)."""
    v = extras.get("enzyme_width")
    if v is None:
        return 1
    n = getattr(v, "value", None)
    if not isinstance(n, int) or n < 1:
        raise unsupported("enzyme_width must be followed by a constant positive integer", inst)
    return n


def _sret(inst):
    """``(pointer, None)`` when the marker returns its struct through ``sret``, else None."""
    return (inst.args[0], None) if inst.has_attribute("sret") else None


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
    if have.kind == "float" and want.kind == "float":  # a float derivative through a `double` prototype
        return b.cast("fpext" if sizeof(want) > sizeof(have) else "fptrunc", v, want)
    hel = have.elements or () if isinstance(have, T.StructType) else None
    if hel is not None and len(hel) == 1 and hel[0] is want:
        return b.extractvalue(v, 0)
    if hel is not None and isinstance(want, (T.StructType, T.ArrayType)):
        n = len(want.elements or ()) if isinstance(want, T.StructType) else want.count
        if n == len(hel):
            out = constant(want, "poison")
            for k in range(n):
                out = b.insertvalue(out, b.extractvalue(v, k), k)
            return out
    raise unsupported(f"marker call returns {want} but the derivative gives {have}", inst)


def _invoked_markers_as_calls(fn) -> None:
    """``invoke`` of a marker (C++ compiled with exceptions): a marker does not throw, so it becomes a call
    and a branch to the normal destination (an unwind destination with phis, or an ``sret`` result: left)."""
    b = Builder()
    for inst in [i for i in fn.instructions() if i.opcode == "invoke"]:
        callee = inst.callee
        if getattr(callee, "sigil", "") != "@" or marker_mode(callee.name) is None or inst.has_attribute("sret"):
            continue
        normal, unwind = [o for o in inst.operands if isinstance(o, BasicBlock)][-2:]
        if any(i.opcode == "phi" for i in unwind.instructions):
            continue
        b.position_before(inst)
        call = b.call(callee, inst.args)
        if inst.type is not T.void:
            inst.replace_all_uses_with(call)
        b.br(normal)
        inst.erase()


def marker_sites(module) -> list:
    """Every marker call of ``module`` as ``(call, mode)``, in module order (an ``invoke`` of a marker made a
    call first)."""
    sites = []
    for fn in list(module.functions.values()):
        left = module.unparsed.get(fn)
        if left is not None and "__enzyme_" not in left:
            continue  # a body not parsed yet that names no marker (every MarkerMode's name holds it)
        _invoked_markers_as_calls(fn)
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
    refs: dict = {}  # a function -> the functions its body names, read for those a site reaches only

    def reaches_marker(f) -> bool:
        seen, todo = set(), [f]
        while todo:
            g = todo.pop()
            if g in holders:
                return True
            if g not in seen:
                seen.add(g)
                if g not in refs:
                    refs[g] = {op for inst in g.instructions() for op in inst.operands if isinstance(op, Function)}
                todo.extend(refs[g])
        return False

    ready = []
    for inst, mode in sites:
        if not reaches_marker(_target(inst, _sret(inst))):
            ready.append((inst, mode))
    if not ready:
        raise unsupported("autodiff of a function that differentiates itself (the marker calls form a "
                          "cycle): a derivative of unbounded order", sites[0][0])
    return ready


def differentiate_module(module, sites=None, options: EngineOptions = EngineOptions()):
    """Differentiate ``sites`` (default: every marker call of ``module``) in place; returns
    (engine, count). The functions the sites differentiate must not contain marker calls
    themselves: :func:`differentiate_nested` orders them."""
    engine = Engine(module, options)
    sites = marker_sites(module) if sites is None else sites
    existing = set(module.functions)
    augmented = []
    for inst, mode in sites:
        if mode is MarkerMode.AUGMENT:
            sret = _sret(inst)
            f = custom.wrap_function_like(module, _target(inst, sret), engine.function_like)
            kinds, _, extras = decode(inst, f, mode, sret)
            augmented.append((inst, f, kinds, extras))
    tapes = splitmode.TapeConventions(augmented)
    for inst, mode in sites:  # decoded again: a call replaced earlier may be an argument
        sret = _sret(inst)
        f = custom.wrap_function_like(module, _target(inst, sret), engine.function_like)
        kinds, values, extras = decode(inst, f, mode, sret)
        b = Builder()
        b.position_before(inst)
        before = set(inst.parent.instructions)
        if mode is not MarkerMode.SPLIT_REVERSE:
            engine.globals.zero_before(b, f)
        width = width_of(extras, inst)
        ra = extras.get("enzyme_runtime_activity")
        engine.runtime_activity = ra is not None and getattr(ra, "value", 1) != 0
        if width > 1 and mode in (MarkerMode.AUGMENT, MarkerMode.SPLIT_REVERSE):
            raise unsupported("batch mode (enzyme_width) in split mode (__enzyme_augmentfwd / __enzyme_reverse)",
                              inst)
        if mode is MarkerMode.AUGMENT:
            res = splitmode.augment(engine, b, inst, f, kinds, values, extras)
        elif mode is MarkerMode.SPLIT_REVERSE:
            res = splitmode.reverse(engine, b, inst, f, kinds, values, extras, tapes)
        elif mode is MarkerMode.FORWARD:
            leaf_lanes = "leaf_lanes" in extras
            d = engine.forward_fn(f, kinds, width, leaf_lanes)
            out = b.call(d, _lanes_of(b, kinds, values, width) if leaf_lanes else values)
            res = b.extractvalue(out, 1) if carries_derivative(f.return_type) or f.return_type.kind == "ptr" else None
            if "enzyme_primal_return" in extras:  # {primal, tangent}
                res = out if res is not None else None
        else:
            if "enzyme_primal_return" in extras and not is_float_like(f.return_type):
                raise unsupported(f"enzyme_primal_return in reverse mode of @{f.name}, which returns "
                                  f"{f.return_type}: a float result is supported", inst)
            noneed = extras.get("noneed", frozenset()) if engine.options.noneed_writes else frozenset()
            d = engine.combined_fn(f, kinds, width, primal="enzyme_primal_return" in extras, noneed=noneed)
            out = b.call(d, values)
            res = out if d.return_type is not T.void else None
        if sret is not None and res is not None:  # the struct of adjoints has the sret struct's layout
            b.store(res, sret[0])
        new = _convert(b, res, inst.type, inst) if sret is None else None
        _take_location(inst, [i for i in inst.parent.instructions if i not in before])
        if sret is not None:
            inst.erase()
            continue
        if new is not None:
            inst.replace_all_uses_with(new)
        inst.erase()
    engine.run()
    _count_iterations_up([f for name, f in module.functions.items() if name not in existing])
    return engine, len(sites)


def _lanes_of(b, kinds, values, width: int) -> list:
    """``values`` with each duplicated argument's one shadow buffer given as its ``width`` lanes' shadows."""
    out, rest = [], iter(values)
    for k in kinds:
        out.append(next(rest))
        if k == DUP:
            buffer = next(rest)
            out += [leaf.lane_shadow(b, buffer, lane) for lane in range(width)]
    return out


#: what ``__enzyme_iter`` is called while the engine works (a name :mod:`.leftover` does not refuse)
_ITER_NAME = "gpuc.enzyme.iter"


def _count_iterations_up(derivatives) -> None:
    """``__enzyme_iter(n, k)`` in the functions a differentiation made becomes ``__enzyme_iter(n + k, k)``:
    each derivative taken of code runs ``k`` more iterations than the code (Enzyme's convention)."""
    b = Builder()
    for fn in derivatives:
        for inst in [i for i in fn.instructions() if i.opcode == "call" and _ITER_NAME in getattr(i.callee, "name", "")]:
            b.position_before(inst)
            n, k = inst.args[0], inst.args[1]
            inst.set_operand(inst.operands.index(n), b.binop("add", n, k))


def iterations_marked(text: str) -> str:
    """``text`` with ``__enzyme_iter`` renamed for the engine (:func:`_count_iterations_up`)."""
    return text.replace("__enzyme_iter", _ITER_NAME)


def iterations_resolved(text: str) -> str:
    """``text`` with each ``__enzyme_iter(n, k)`` left replaced by ``n``."""
    if _ITER_NAME not in text:
        return text
    module = parse(text)
    for fn in list(module.functions.values()):
        if _ITER_NAME in fn.name and fn.is_declaration:
            for inst in [u for u in fn.users if isinstance(u, Instruction) and u.opcode == "call"]:
                inst.replace_all_uses_with(inst.args[0])
                inst.erase()
            if not fn.users:
                module.remove_function(fn)
    return str(module)


def _take_location(marker, emitted) -> None:
    """The instructions replacing a marker call get its ``!dbg`` location: inlining the derivative
    (a function without debug info that may call functions with it) into a caller with debug info
    then gives every inlined location its call site (LLVM's verifier requires it)."""
    loc = (marker.metadata or {}).get("dbg")
    if loc is None:
        return
    for i in emitted:
        i.metadata = {**(i.metadata or {}), "dbg": loc}


def differentiate_nested(ir: str | llvm.ModuleRef, optimize: Callable[[str], str | llvm.ModuleRef],
                         options: EngineOptions = EngineOptions()) -> str:
    """Differentiate every marker call of LLVM IR ``ir`` (text, or a module LLVM holds, verified, with no
    ``optnone`` function: prepared in place), innermost first; returns the text (helpers defined, not
    optimised).

    A function that calls ``__enzyme_autodiff``/``__enzyme_fwddiff`` is differentiated after
    its own marker calls became calls of derivative functions; between the levels the module
    is optimised (``optimize``: text -> text, or -> the verified module LLVM holds, prepared
    in place) and prepared again, so the outer derivative
    sees the inner one as SSA code, as Enzyme differentiates its own output. Inner levels add
    adjoints with plain atomics, which the outer level differentiates."""
    with no_cyclic_gc():  # the engine builds many long-lived objects, as the parser does
        return _differentiate_levels(ir, optimize, options)


def _differentiate_levels(ir: str | llvm.ModuleRef, optimize: Callable[[str], str | llvm.ModuleRef],
                          options: EngineOptions) -> str:
    module = _prepared(ir)
    while True:
        sites = marker_sites(module)
        ready = _innermost(module, sites) if sites else []
        if len(ready) == len(sites):
            engine, _ = differentiate_module(module, ready, options)
            stack.inline_again(module)
            _drop_marker_declarations(module)
            text = engine.finalize(str(module))
            module.drop()  # freed now, not by a pass of the collector when the compile's pause ends
            return text
        # loop tapes on the heap (no tape arena, whose pointers would mix memory with and without
        # shadow): the outer level differentiates them
        engine, _ = differentiate_module(module, ready, attrs.evolve(options, tape_arena=0, differentiated_again=True))
        text = engine.finalize(str(module), out_of_line=True)
        module.drop()
        module = _prepared(optimize(text))  # no optnone left: the first level's cleanup dropped it


def _drop_marker_declarations(module) -> None:
    """Remove the marker declarations whose calls were all replaced: without the optimiser (``opt_level=0``)
    nothing else does, and a declaration nobody defines fails to link."""
    for fn in list(module.functions.values()):
        if fn.is_declaration and marker_mode(fn.name) is not None and not fn.users:
            module.remove_function(fn)


def _prepared(ir: str | llvm.ModuleRef) -> Module:
    """The IR model of ``ir`` (text, or a module LLVM holds: :func:`preprocess.prepare`) after the
    cleanup passes, every vector lane defined."""
    module = parse(preprocess.prepare(ir), lazy=True)  # the bodies the engine never reads print as read
    preprocess.define_unused_lanes(module)
    return module


def differentiate(ir_text: str, *, optimize: bool = True, options: EngineOptions = EngineOptions()) -> str:
    """LLVM IR text with every ``__enzyme_autodiff``/``__enzyme_fwddiff`` call replaced by a call to
    the generated derivative; the result verifies under LLVM and is optimised at O2. ``options``:
    how adjoints are accumulated into shared memory (:class:`~enzyme_plugin.ad.gpu.EngineOptions`).

    LLVM may abort or exit on foreign IR: the work runs in a child process, where such a crash is a
    :class:`~gpucompiler.errors.CompilerCrashError`; the engine's errors (:class:`ADError`, an error
    handler's) come back as themselves. The error handler runs in that child."""
    return contained(lambda: differentiate_here(ir_text, optimize=optimize, options=options).encode(),
                     "the differentiation").decode()


def differentiate_here(ir_text: str, *, optimize: bool = True, options: EngineOptions = EngineOptions()) -> str:
    """:func:`differentiate` in this process (for a caller that contains it already). A marker left
    in the result is an ADError (:mod:`.leftover`)."""
    ir_text = batch.lower_text(ir_text)
    ir_text = iterations_marked(splitmode.virtual_reverse_pairs(ir_text))
    leftover.refuse_unknown(ir_text)
    text = iterations_resolved(differentiate_nested(ir_text, lambda t: preprocess.optimize(t, 2), options))
    return leftover.check_output(preprocess.optimize(text, 2 if optimize else 0))
