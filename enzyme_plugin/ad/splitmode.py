"""Split reverse mode from C: ``__enzyme_augmentfwd`` runs the forward sweep and
keeps the tape, ``__enzyme_reverse`` runs the reverse sweep from it.

The engine's tape is a ``{ptr, i64, i64}`` stack on the heap. The caller
gets hold of it in one of two ways, chosen per augmented call:

* ``enzyme_tape, t`` (with ``enzyme_allocated, N``, N >= 8): the tape's
  address is stored in the first word of the caller's memory ``t``, and
  ``__enzyme_reverse`` is given the same ``enzyme_tape, t`` and ``N``. On a
  device (``EngineOptions.device_tape``: PTX and the grid emulation), ``N``
  of at least :data:`~.helpers.TAPE_INLINE` bytes (a constant or a value
  known only when the code runs) holds the tape itself: its header and the
  first block of its stack, so the augmented call allocates nothing until
  that block is full (then the stack moves to the heap, as any device
  tape grows). A launch tape gives every thread such a block of one
  allocation made before the launch;
* no ``enzyme_tape``: ``__enzyme_augmentfwd`` returns the tape (a ``void *``,
  or the first member of a ``{void *, result}`` struct), and
  ``__enzyme_reverse`` takes it as its last argument (or after
  ``enzyme_tape``).

Which one applies to a reverse call is decided by the augmented calls of the
same function and argument kinds in the module; mixing both is an ADError.
The reverse call frees the tape.
"""

from __future__ import annotations

import re

from gpucompiler.llvm import Function, MDNode, constant, parse, types as T

from .emit import carries_derivative, declare, fconst, is_float_like, zero
from .errors import unsupported
from .helpers import TAPE_INLINE
from .sweep import TAPE_MARK


def _key(f, kinds):
    return f.name, tuple(kinds)


class TapeConventions:
    """Per (function, kinds): whether its augmented calls keep the tape behind ``enzyme_tape``."""

    def __init__(self, augment_sites):
        self._held: dict = {}
        for _inst, f, kinds, extras in augment_sites:
            self._held.setdefault(_key(f, kinds), set()).add("enzyme_tape" in extras)

    def held(self, inst, f, kinds) -> bool | None:
        """True: behind ``enzyme_tape`` memory; False: the returned pointer; None: no augmented call."""
        seen = self._held.get(_key(f, kinds), set())
        if len(seen) > 1:
            raise unsupported(f"the augmented calls of @{f.name} keep the tape both in enzyme_tape memory and "
                              f"as their result: use one convention", inst)
        return next(iter(seen)) if seen else None


TAPE_BYTES = 32
"""Bytes of a tape header on the heap (:data:`.reverse.TAPE`)."""

#: ``%v = call ... @__enzyme_virtualreverse(ptr @f)`` (C++-mangled names too): the value and the function
_VIRTUAL = re.compile(r'^(\s*%[\w.$"-]+ = )(?:tail |notail )?call [^@\n]*@"?[\w.$]*__enzyme_virtualreverse[\w.$]*"?'
                      r'\([^@)\n]*@("[^"\n]+"|[\w.$-]+)\)[^\n]*$', re.M)


def virtual_reverse_pairs(text: str) -> str:
    """``__enzyme_virtualreverse(f)`` of a function ``f`` of the module that takes and returns floats becomes
    the address of ``{f's augmented forward, f's reverse}``, Enzyme's shadow of a function pointer:
    ``{double, void *} aug(x...)`` (result, tape) and ``reverse(x..., d_result, tape)`` returning the adjoint
    of ``x`` (a struct of them for several), made of ``__enzyme_augmentfwd``/``__enzyme_reverse`` calls. A
    call of any other argument is left (:mod:`.leftover` refuses it)."""
    sites = _VIRTUAL.findall(text)
    if not sites:
        return text
    module = parse(text)
    made: dict[str, str] = {}
    for _, name in sites:
        fn = module.functions.get(name.strip('"'))
        if isinstance(fn, Function) and not fn.is_declaration and name not in made and _float_signature(fn):
            made[name] = _pair_text(name, fn)
    if not made:
        return text

    def replace(m: re.Match) -> str:
        if m.group(2) not in made:
            return m.group(0)
        return f'{m.group(1)}getelementptr i8, ptr @"{m.group(2).strip(chr(34))}.gpuc.virtual", i64 0'

    return _VIRTUAL.sub(replace, text) + "".join(made.values()) + (
        "\ndeclare ptr @__enzyme_augmentfwd.gpuc.virtual(ptr, ...)\n"
        "declare ptr @__enzyme_reverse.gpuc.virtual(ptr, ...)\n")


def _float_signature(fn) -> bool:
    ft = fn.function_type
    return bool(ft.params) and not ft.vararg and is_float_like(ft.ret) and all(
        p.kind in ("float", "double") for p in ft.params)


def _pair_text(name: str, fn) -> str:
    """The IR text of ``@f.gpuc.virtual``, the pair of :func:`virtual_reverse_pairs`, for ``@name``."""
    base = name.strip('"')
    ps = fn.function_type.params
    ret = fn.function_type.ret
    args = ", ".join(f"{p} %{k}" for k, p in enumerate(ps))
    adj = str(ps[0]) if len(ps) == 1 else "{ " + ", ".join(str(p) for p in ps) + " }"
    n = len(ps)
    return (f'\n@"{base}.gpuc.virtual" = internal constant [2 x ptr] [ptr @"{base}.gpuc.vaug", '
            f'ptr @"{base}.gpuc.vrev"]\n'
            f'define internal {{ {ret}, ptr }} @"{base}.gpuc.vaug"({args}) {{\n'
            f'  %r = call {{ {ret}, ptr }} (ptr, ...) @__enzyme_augmentfwd.gpuc.virtual(ptr @{name}, {args})\n'
            f'  ret {{ {ret}, ptr }} %r\n}}\n'
            f'define internal {adj} @"{base}.gpuc.vrev"({args}, {ret} %{n}, ptr %{n + 1}) {{\n'
            f'  %r = call {adj} (ptr, ...) @__enzyme_reverse.gpuc.virtual(ptr @{name}, {args}, {ret} %{n}, '
            f'ptr %{n + 1})\n'
            f'  ret {adj} %r\n}}\n')


def _in_caller_memory(engine, extras) -> bool:
    """Whether the tape may live in the caller's ``enzyme_tape`` memory: on a device, with its size given and not
    a constant below :data:`~.helpers.TAPE_INLINE` (a size known only at run time is tested there)."""
    size = extras.get("enzyme_allocated")
    if not engine.options.device_tape or size is None or extras.get("enzyme_tape") is None:
        return False
    n = getattr(size, "value", None)
    return not (isinstance(n, int) and n < TAPE_INLINE)


def _tape_call(call):
    """Mark the malloc/free of the tape's header as the AD tape's (the GPU validator accepts those: a
    kernel's split halves keep their tapes on the device heap)."""
    call.metadata[TAPE_MARK] = MDNode(["!{}"])
    return call


def augment(engine, b, inst, f, kinds, values, extras):
    """The augmented forward sweep; the value that replaces the marker call."""
    from .reverse import TAPE

    size = extras.get("enzyme_allocated")
    n = getattr(size, "value", None)
    if isinstance(n, int) and n < 8:
        raise unsupported(f"enzyme_allocated gives {n} bytes: the tape needs at least 8", inst)
    aug, _ = engine.split_fns(f, kinds)
    holder = extras.get("enzyme_tape")
    if _in_caller_memory(engine, extras):  # the header (and the stack's first block) in the caller's memory
        ts = b.call(engine.helper("tape_open"), [holder, size])
    else:
        malloc = declare(engine.module, "malloc", T.function(T.ptr(), [T.i64]))
        ts = _tape_call(b.call(malloc, [constant(T.i64, str(TAPE_BYTES))]))
        b.store(constant(TAPE, "zeroinitializer"), ts)
        if holder is not None:
            b.store(ts, holder)
    prim = b.call(aug, values + [ts])
    if f.return_type.kind == "ptr":  # {pointer, its shadow}
        prim = b.extractvalue(prim, 0)
    if holder is not None:
        ts = holder
    want = inst.type
    if want is T.void:
        return None
    if want.kind == "ptr":
        return ts
    if want is f.return_type:
        return prim
    if want.kind == "struct" and len(want.elements) == 2 and want.elements[0].kind == "ptr" \
            and want.elements[1] is f.return_type:
        return b.insertvalue(b.insertvalue(constant(want, "poison"), ts, 0), prim, 1)
    if want.kind == "struct" and len(want.elements) == 2 and want.elements[0] is f.return_type \
            and f.return_type.kind != "ptr" and want.elements[1].kind == "ptr":  # {result, void *}
        return b.insertvalue(b.insertvalue(constant(want, "poison"), prim, 0), ts, 1)
    raise unsupported(f"__enzyme_augmentfwd returns {want}: expected void *, the result of @{f.name}, "
                      f"{{void *, result}} or {{result, void *}}", inst)


def reverse(engine, b, inst, f, kinds, values, extras, conventions):
    """The reverse sweep from the tape of an augmented call; the adjoints it returns."""
    _, rev = engine.split_fns(f, kinds)
    given = extras.get("enzyme_tape", extras.get("returned_tape"))
    if given is None:
        raise unsupported("__enzyme_reverse needs the tape: enzyme_tape, t or the augmented call's result "
                          "as the last argument", inst)
    held = conventions.held(inst, f, kinds)
    if held is None:
        held = "enzyme_tape" in extras
    inline = held and "enzyme_tape" in extras and _in_caller_memory(engine, extras)
    if inline:
        ts = b.call(engine.helper("tape_header"), [given, extras["enzyme_allocated"]])
    else:
        ts = b.load(T.ptr(), given) if held else given
    rt = f.return_type
    if is_float_like(rt):
        seed = [extras.get("seed") or fconst(rt, 1.0)]
    else:  # an aggregate result holding floats gets a zero seed; others none
        seed = [zero(rt)] if carries_derivative(rt) else []
    out = b.call(rev, values + seed + [ts])
    if inline:
        b.call(engine.helper("tape_close"), [given, extras["enzyme_allocated"]])
    else:
        b.call(engine.helper("free"), [ts])
        _tape_call(b.call(declare(engine.module, "free", T.function(T.void, [T.ptr()])), [ts]))
    return out if out.type is not T.void else None
