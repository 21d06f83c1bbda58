"""``gpuc.enzyme.autodiff`` markers -> calls of Enzyme's C interface.

The interpreter leaves ``call @gpuc.enzyme.autodiff(ptr @f, i32 mode, (i32 activity, values...)...)``
(:mod:`enzyme_plugin.rules`). Once the nested job ``@f`` is linked, each call
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

from ..api import Activity
from ..rules import MARKER, MODES

ENZYME_MARKERS = tuple(a.marker for a in Activity if a is not Activity.TAPE)
"""Enzyme's marker globals the lowered calls name."""
_MODE_NAMES = {v: k for k, v in MODES.items()}


def _is_array(t) -> bool:
    return (t.kind == "struct" and len(t.elements) == 3 and t.elements[0].kind == "ptr"
            and t.elements[1].kind == "array")


def _fields(t) -> tuple:
    """The fields of an array struct (:func:`_is_array`)."""
    assert isinstance(t, T.StructType) and t.elements is not None
    return t.elements


def _flat_types(t) -> list:
    if _is_array(t):
        n = t.elements[1].count
        return [T.ptr()] + [T.i64] * (2 * n)
    return [t]


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
    b = Builder(w.append_block("entry"))
    it = iter(w.args)
    args = []
    for a in f.args:
        t = a.type
        if not _is_array(t):
            args.append(next(it))
            continue
        fields = _fields(t)
        n = fields[1].count
        agg = b.insertvalue(constant(t, "poison"), next(it), 0)
        for field in (1, 2):
            dims = constant(fields[field], "poison")
            for k in range(n):
                dims = b.insertvalue(dims, next(it), k)
            agg = b.insertvalue(agg, dims, field)
        args.append(agg)
    out = b.call(f, args)
    b.ret(out if f.return_type is not T.void else None)
    if not f.has_attribute("noinline"):
        f.add_attribute("alwaysinline")
    return w


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


def lower_call(model, call) -> None:
    """Rewrite one marker call into an ``__enzyme_autodiff`` / ``__enzyme_fwddiff`` call."""
    f, mode_v, *rest = call.args
    if not isinstance(f, Function):
        raise CompileError(f"{MARKER} in @{call.function.name}: first argument must be a function, got {f!r}")
    mode = _MODE_NAMES[_int_const(mode_v, "the mode", call)]
    w = _wrapper(model, f)
    b = Builder()
    b.position_before(call)
    args, actives, i = [w], [], 0
    if mode in ("Augment", "SplitReverse"):  # the tape holder: enzyme_allocated 8, enzyme_tape <its data>
        if _activity(rest[0], call) is not Activity.TAPE:
            raise CompileError(f"{MARKER} in @{call.function.name}: split mode needs the tape holder first")
        args += [_marker_global(model, "enzyme_allocated"), constant(T.i64, "8"),
                 _marker_global(model, "enzyme_tape"), _flatten(b, rest[1])[0]]
        i = 2
    width = 1
    if i < len(rest) and _activity(rest[i], call) is Activity.WIDTH:  # a batch: enzyme_width N
        width = _int_const(rest[i + 1], "the batch width", call)
        args += [_marker_global(model, "enzyme_width"), constant(T.i64, str(width))]
        i += 2
    for _param in f.args:
        kind = _activity(rest[i], call)
        n = 1 + width if kind.duplicated else 1
        vals = rest[i + 1:i + 1 + n]
        i += 1 + n
        flat = [_flatten(b, v) for v in vals]
        marker = _marker_global(model, kind.marker)
        if kind is Activity.ACTIVE:
            actives.append(vals[0].type)
        if len(flat) >= 2 and len(flat[0]) > 1:  # an array: data and shadow data, then shape/strides const
            args += [marker, *(x[0] for x in flat)]
            for extra in flat[0][1:]:
                args += [_marker_global(model, "enzyme_const"), extra]
        elif len(flat) >= 2:
            args += [marker, *(x[0] for x in flat)]
        else:
            for k, x in enumerate(flat[0]):
                args += [marker if k == 0 else _marker_global(model, "enzyme_const"), x]
    if width > 1:  # every derivative is a struct of one per lane
        actives = [T.struct([t] * width) for t in actives]
    if mode in ("Reverse", "SplitReverse"):
        name = "__enzyme_autodiff" if mode == "Reverse" else "__enzyme_reverse"
        rt = T.void if not actives else actives[0] if len(actives) == 1 else T.struct(actives)
    elif mode == "Augment":  # the primal result comes back through memory (enzyme_plugin.split)
        name, rt = "__enzyme_augmentfwd", T.void
    else:
        name = "__enzyme_fwddiff"
        rt = f.return_type if f.return_type.kind == "float" else T.void
        if width > 1 and rt is not T.void:
            rt = T.struct([rt] * width)
    decl = model.functions.get(name)
    if decl is None:
        decl = model.add_function(Function(name, T.function(T.void, [T.ptr()], vararg=True)))
    out = b.call(decl, args, fnty=T.function(rt, [T.ptr()], vararg=True))
    want = call.type
    if want is T.void:
        res = None
    elif rt is want:
        res = out
    elif rt is T.void:
        res = constant(want, "zeroinitializer")
    else:  # a one-element tuple
        res = b.insertvalue(constant(want, "poison"), out, 0)
    if res is not None:
        call.replace_all_uses_with(res)
    call.erase()


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
