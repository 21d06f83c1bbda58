"""``gpuc.enzyme.autodiff`` markers -> calls of Enzyme's C interface.

The interpreter leaves ``call @gpuc.enzyme.autodiff(ptr @f, i32 mode, (i32 activity, values...)...)``
(:mod:`enzyme_plugin.language`). Once the nested job ``@f`` is linked, each call
becomes, for ``f(double x, array a)`` with ``Active(x)``, ``Duplicated(a, da)``::

    define internal double @f.enzyme(double %x, ptr %a.data, i64 %a.n, i64 %a.stride) alwaysinline {
      ; rebuilds the array struct {ptr, [1 x i64], [1 x i64]} and calls @f
    }
    %d = call double (ptr, ...) @__enzyme_autodiff(ptr @f.enzyme, ptr @enzyme_out, double %x,
             ptr @enzyme_dup, ptr %a.data, ptr %da.data, ptr @enzyme_const, i64 %a.n, ...)

Arrays are passed flattened so that the data pointer carries the shadow (the
shadow array has the primal's shape and strides). The result is repacked into
the tuple the Python code expects.
"""

from __future__ import annotations

from gpucompiler.errors import CompileError
from gpucompiler.llvm import Builder, Function, GlobalVariable, constant, types as T

from ..ad.errors import ADError, python_line, source_location
from ..ad.typeinfo import ENZYME_TYPE, MemoryTypes
from ..activities import Activity
from ..modes import Mode
from ..language import MARKER

ENZYME_MARKERS = tuple(a.marker for a in Activity if a is not Activity.TAPE)
"""Enzyme's marker globals the lowered calls name."""


def _is_array(t) -> bool:
    return (t.kind == "struct" and len(t.elements) == 3 and t.elements[0].kind == "ptr"
            and t.elements[1].kind == "array")


def _fields(t) -> tuple:
    """The fields of an array struct (:func:`_is_array`)."""
    assert isinstance(t, T.StructType) and t.elements is not None
    return t.elements


def _is_tuple(t) -> bool:
    """A literal struct that is not an array: a tuple, passed member by member."""
    return isinstance(t, T.StructType) and not _is_array(t) and t.elements is not None


def _flat_types(t) -> list:
    if _is_array(t):
        n = t.elements[1].count
        return [T.ptr()] + [T.i64] * (2 * n)
    if _is_tuple(t):
        return [x for e in _fields(t) for x in _flat_types(e)]
    return [t]


def _float_struct(t) -> bool:
    """A literal struct of floats (nested ones included): a tuple of float scalars; its tangent has its type."""
    return isinstance(t, T.StructType) and bool(t.elements) and all(
        e.kind == "float" or _float_struct(e) for e in t.elements or ())


def _marker_global(model, name: str) -> GlobalVariable:
    g = model.globals.get(name)
    if g is None:
        g = model.add_global(GlobalVariable(name, T.i32, prefix="internal", initializer=constant(T.i32, "0")))
    return g


def _wrapper(model, f: Function) -> Function:
    """``f`` with every array argument flattened to (data, shape..., strides...)."""
    name = f"{f.name}.enzyme"
    if name in model.functions:
        return model.functions[name]
    params = [p for a in f.args for p in _flat_types(a.type)]
    w = model.add_function(Function(name, T.function(f.return_type, params), prefix="internal"))
    flat = iter(w.args)
    for a in f.args:  # what each array holds, seen before LLVM turns typed copy loops into memcpy
        for k, p in enumerate([next(flat) for _ in _flat_types(a.type)]):
            held = _element_type(a) if k == 0 and _is_array(a.type) else None
            if held is not None:
                p.attrs = f'{p.attrs} "{ENZYME_TYPE}"="{{[-1]:Pointer, [-1,-1]:Float@{held}}}"'.strip()
    b = Builder(w.append_block("entry"))
    it = iter(w.args)
    args = [_rebuild(b, a.type, it) for a in f.args]
    out = b.call(f, args)
    b.ret(out if f.return_type is not T.void else None)
    if not f.has_attribute("noinline"):
        f.add_attribute("alwaysinline")
    _inline_aggregate_callees(f)
    return w


def _element_type(arg, depth: int = 0) -> T.Type | None:
    """The float type the data of array parameter ``arg`` holds, from the typed loads and stores of its
    data pointer in the function and the functions it is passed to (None when none says, or when they
    say more than one type)."""
    for u in arg.users:
        if u.opcode == "extractvalue" and u.operands[0] is arg and tuple(u.aggregate_indices) == (0,):
            held = MemoryTypes().types_at(u, None)
            if len(held) == 1 and next(iter(held)).kind == "float":  # one float type, nothing else
                return next(iter(held))
        elif u.opcode == "call" and isinstance(u.callee, Function) and not u.callee.is_declaration and depth < 8:
            for k, v in enumerate(u.args):
                held = _element_type(u.callee.args[k], depth + 1) if v is arg and k < len(u.callee.args) else None
                if held is not None:
                    return held
    return None


def _holds_pointer(t) -> bool:
    return isinstance(t, T.StructType) and any(e.kind == "ptr" or _holds_pointer(e) for e in t.elements or ())


def _inline_aggregate_callees(f: Function) -> None:
    """``alwaysinline`` on every function ``f`` reaches through calls that take an array (or a tuple
    holding one) by value: the engine follows a shadow through pointers, not through a struct passed
    to a call, so such a call left out of line (an allocating helper called twice) would be constant."""
    work, seen = [f], {f.name}
    while work:
        for inst in work.pop().instructions():
            g = inst.callee if inst.opcode == "call" else None
            if not isinstance(g, Function) or g.name in seen or g.is_declaration:
                continue
            seen.add(g.name)
            work.append(g)
            if not g.has_attribute("noinline") and any(_holds_pointer(a.type) for a in g.args):
                if _recursive(g):
                    _refuse_recursion(g, inst)
                g.add_attribute("alwaysinline")


def _callees(g: Function) -> list[Function]:
    return [i.callee for i in g.instructions() if i.opcode == "call" and isinstance(i.callee, Function)
            and not i.callee.is_declaration]


def _recursive(g: Function) -> bool:
    """Whether ``g`` calls itself, directly or through other functions (it cannot be inlined)."""
    work, seen = _callees(g), set()
    while work:
        h = work.pop()
        if h is g:
            return True
        if h.name not in seen:
            seen.add(h.name)
            work += _callees(h)
    return False


def _refuse_recursion(g: Function, call) -> None:
    """A recursive function taking an array by value stays a call, through which the engine follows no
    shadow: its derivative would be silently zero."""
    where = python_line(call)
    raise ADError(f"a recursive function (@{g.name}) takes an array by value: the engine follows an array's "
                  "shadow through pointers, not through a recursive call, so its gradient would be zero; write "
                  "the recursion as a loop", function=g.name,
                  location=f"{where[0]}:{where[1]}" if where else source_location(call, g))


def _rebuild(b, t, it):
    """A value of type ``t`` (an array struct, a tuple, a scalar) from the flattened parameters ``it``."""
    if _is_tuple(t):
        agg = constant(t, "poison")
        for k, e in enumerate(_fields(t)):
            agg = b.insertvalue(agg, _rebuild(b, e, it), k)
        return agg
    if not _is_array(t):
        return next(it)
    fields = _fields(t)
    n = fields[1].count
    agg = b.insertvalue(constant(t, "poison"), next(it), 0)
    for field in (1, 2):
        dims = constant(fields[field], "poison")
        for k in range(n):
            dims = b.insertvalue(dims, next(it), k)
        agg = b.insertvalue(agg, dims, field)
    return agg


def _leaves(b, v) -> list:
    """The members of tuple ``v`` (nested tuples flattened), or ``[v]``."""
    if not _is_tuple(v.type):
        return [v]
    return [x for k in range(len(_fields(v.type))) for x in _leaves(b, b.extractvalue(v, k))]


def _nest(b, t, it):
    """A value of type ``t`` whose scalars (nested structs walked in order) come from ``it``."""
    if not isinstance(t, T.StructType):
        return next(it)
    agg = constant(t, "poison")
    for k, e in enumerate(_fields(t)):
        agg = b.insertvalue(agg, _nest(b, e, it), k)
    return agg


def _flatten(b, v) -> list:
    t = v.type
    if not _is_array(t):
        return [v]
    n = t.elements[1].count
    out = [b.extractvalue(v, 0)]
    for field in (1, 2):
        dims = b.extractvalue(v, field)
        out += [b.extractvalue(dims, k) for k in range(n)]
    return out


def _int_const(v, what, call) -> int:
    try:
        return int(v.text if hasattr(v, "text") else str(v).split()[-1])
    except (TypeError, ValueError):
        raise CompileError(f"{MARKER} in @{call.function.name}: {what} must be a constant, got {v!r}") from None


def _activity(v, call) -> Activity:
    code = _int_const(v, "an activity", call)
    try:
        return Activity(code)
    except ValueError:
        raise CompileError(f"{MARKER} in @{call.function.name}: unknown activity code {code}") from None


def _mode(v, call) -> Mode:
    code = _int_const(v, "the mode", call)
    try:
        return Mode.of_code(code)
    except ValueError:
        raise CompileError(f"{MARKER} in @{call.function.name}: unknown mode code {code}") from None


def lower_call(model, call) -> None:
    """Rewrite one marker call into an ``__enzyme_autodiff`` / ``__enzyme_fwddiff`` call."""
    f, mode_v, *rest = call.args
    if not isinstance(f, Function):
        raise CompileError(f"{MARKER} in @{call.function.name}: first argument must be a function, got {f!r}")
    mode = _mode(mode_v, call)
    w = _wrapper(model, f)
    b = Builder()
    b.position_before(call)
    args, actives, i = [w], [], 0
    if mode.is_split_half:  # the tape holder: enzyme_allocated <its bytes>, enzyme_tape <its data>
        if _activity(rest[0], call) is not Activity.TAPE:
            raise CompileError(f"{MARKER} in @{call.function.name}: split mode needs the tape holder first")
        flat = _flatten(b, rest[1])
        ndim = (len(flat) - 1) // 2
        nbytes = b.mul(flat[1], flat[1 + ndim]) if ndim else constant(T.i64, "8")  # contiguous: rows x row stride
        args += [_marker_global(model, "enzyme_allocated"), nbytes, _marker_global(model, "enzyme_tape"), flat[0]]
        i = 2
    if i < len(rest) and _activity(rest[i], call) is Activity.RUNTIME_ACTIVITY:
        args += [_marker_global(model, "enzyme_runtime_activity"), constant(T.i64, "1")]
        i += 2
    primal = i < len(rest) and _activity(rest[i], call) is Activity.PRIMAL_RETURN
    if primal:  # Enzyme's bare marker: the derivative returns the primal result too
        args += [_marker_global(model, "enzyme_primal_return")]
        i += 2
    width = 1
    if i < len(rest) and _activity(rest[i], call) is Activity.WIDTH:  # a batch: enzyme_width N
        width = _int_const(rest[i + 1], "the batch width", call)
        args += [_marker_global(model, "enzyme_width"), constant(T.i64, str(width))]
        i += 2
    counts = []  # per active argument: how many scalars (a tuple's members)
    for _param in f.args:
        kind = _activity(rest[i], call)
        n = 1 + width if kind.duplicated else 1
        vals = rest[i + 1:i + 1 + n]
        i += 1 + n
        marker = _marker_global(model, kind.marker)
        members = [_leaves(b, v) for v in vals]  # a tuple: each member with its activity
        if kind is Activity.ACTIVE:
            actives += [x.type for x in members[0]]
            counts.append(len(members[0]))
        if kind is Activity.MIXED:
            args += _mixed(model, b, members, mode, actives, counts)
            continue
        for leaf in zip(*members):
            flat = [_flatten(b, v) for v in leaf]
            if len(flat) >= 2 and len(flat[0]) > 1:  # an array: data and shadow data, then shape/strides const
                args += [marker, *(x[0] for x in flat)]
                for extra in flat[0][1:]:
                    args += [_marker_global(model, "enzyme_const"), extra]
            elif len(flat) >= 2:
                args += [marker, *(x[0] for x in flat)]
            else:
                for k, x in enumerate(flat[0]):
                    args += [marker if k == 0 else _marker_global(model, "enzyme_const"), x]
    leaf_types = actives
    if width > 1:  # every derivative is a struct of one per lane
        actives = [T.struct([t] * width) for t in actives]
    if mode in (Mode.Reverse, Mode.SplitReverse):
        name = "__enzyme_autodiff" if mode is Mode.Reverse else "__enzyme_reverse"
        rt = T.void if not actives else actives[0] if len(actives) == 1 else T.struct(actives)
        if primal:  # {adjoints, primal}
            rt = T.struct([T.struct(actives), f.return_type])
    elif mode is Mode.Augment:  # the primal result comes back through memory (enzyme_plugin.split)
        name, rt = "__enzyme_augmentfwd", T.void
    else:
        name = "__enzyme_fwddiff"
        rt = f.return_type if f.return_type.kind == "float" or _float_struct(f.return_type) else T.void
        if width > 1 and rt is not T.void:
            rt = T.struct([rt] * width)
        if primal:  # {primal, tangent}, as Enzyme returns them
            rt = T.struct([f.return_type, rt])
    decl = model.functions.get(name)
    if decl is None:
        decl = model.add_function(Function(name, T.function(T.void, [T.ptr()], vararg=True)))
    out = b.call(decl, args, fnty=T.function(rt, [T.ptr()], vararg=True))
    want = call.type
    if primal:
        res = _with_primal(b, out, want, mode, leaf_types, counts, width)
    elif want is T.void:
        res = None
    elif rt is want:
        res = out
    elif rt is T.void:
        res = constant(want, "zeroinitializer")
    elif mode in (Mode.Reverse, Mode.SplitReverse):  # the adjoints of the active arguments' members, nested again
        res = _adjoints(b, out, want, leaf_types, counts, width)
    else:  # a one-element tuple (of one lane in a batch of width 1)
        res = b.insertvalue(constant(want, "poison"), _lane(b, out, _fields(want)[0]), 0)
    if res is not None:
        call.replace_all_uses_with(res)
    call.erase()


def _mixed(model, b, members, mode, actives, counts) -> list:
    """The arguments of a record with mixed activity, member by member: arrays duplicated (shape and strides
    constant), float scalars active in reverse mode (their adjoints returned: counted in ``actives`` and
    ``counts``) and duplicated in forward mode, other scalars constant."""
    args, n = [], 0
    dup, out, const = (_marker_global(model, a.marker) for a in (Activity.DUP, Activity.ACTIVE, Activity.CONST))
    reverse = mode in (Mode.Reverse, Mode.SplitReverse)
    for leaf in zip(*members):
        value = leaf[0]
        if _is_array(value.type):
            flat = [_flatten(b, v) for v in leaf]
            args += [dup, *(x[0] for x in flat)]
            for extra in flat[0][1:]:
                args += [const, extra]
        elif value.type.kind == "float" and reverse:
            args += [out, value]
            actives.append(value.type)
            n += 1
        elif value.type.kind == "float":
            args += [dup, *leaf]
        else:
            args += [const, value]
    counts.append(n)
    return args


def _with_primal(b, out, want, mode, leaf_types, counts, width):
    """``want`` of a ``...WithPrimal`` call from the engine's ``{adjoints, primal}`` (reverse) or
    ``{primal, tangent}`` (forward): ``((derivatives...), primal)`` / ``(tangent, primal)``."""
    if mode is Mode.Reverse:
        derivs, prim = b.extractvalue(out, 0), b.extractvalue(out, 1)
        dwant = _fields(want)[0]
        if not leaf_types:
            dres = constant(dwant, "zeroinitializer")
        else:
            one = derivs if len(leaf_types) > 1 else b.extractvalue(derivs, 0)
            dres = _adjoints(b, one, dwant, leaf_types, counts, width)
        return b.insertvalue(b.insertvalue(constant(want, "poison"), dres, 0), prim, 1)
    res = b.insertvalue(constant(want, "poison"), _lane(b, b.extractvalue(out, 1), _fields(want)[0]), 0)
    return b.insertvalue(res, b.extractvalue(out, 0), 1)


def _lane(b, v, want):
    """``v`` as ``want``: itself, or the one lane of a batch of width 1 (``{v}``)."""
    if v.type is want:
        return v
    return b.insertvalue(constant(want, "poison"), v, 0)


def _adjoints(b, out, want, leaf_types, counts, width):
    """``want`` (one entry per active argument: its type, or a struct of ``width`` of them) from the
    engine's adjoints ``out`` (one per member of an active argument, each a struct of ``width`` in a batch)."""
    one = len(leaf_types) == 1
    member = [out if one else b.extractvalue(out, k) for k in range(len(leaf_types))]
    res, start = constant(want, "poison"), 0
    for j, (t, n) in enumerate(zip(_fields(want), counts)):
        mine = member[start:start + n]
        start += n
        if width == 1:
            v = _nest(b, t, iter(mine))
        else:
            v = constant(t, "poison")
            for lane, lt in enumerate(_fields(t)):
                v = b.insertvalue(v, _nest(b, lt, iter(b.extractvalue(m, lane) for m in mine)), lane)
        res = b.insertvalue(res, v, j)
    return res


def lower_markers(model) -> int:
    """Rewrite every marker call of ``model``; returns how many."""
    marker = model.functions.get(MARKER)
    if marker is None:
        return 0
    calls = [u.user for u in list(marker.uses)]
    for call in calls:
        lower_call(model, call)
    model.remove_function(marker)
    return len(calls)
