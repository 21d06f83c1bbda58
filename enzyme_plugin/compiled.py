"""``autodiff`` from Python through a compiled entry: the call's arguments checked, an entry function
``(values) -> autodiff(mode, f, activities...)`` generated per mode, function and activities' structure,
compiled with the ``enzyme`` plugin and called.

Split mode (:mod:`enzyme_plugin.split`), launch tapes and host programs (:mod:`enzyme_plugin.launches`)
generate their compiled callers with :func:`autodiff_deferred`; :func:`enzyme_plugin.dispatch.autodiff`,
the user's ``autodiff``, adds the path of host functions that run parallel regions on a device space.
"""

from __future__ import annotations

import functools
import linecache
import sys
import types as pytypes
from typing import Any

from gpucompiler import jit
from gpucompiler.errors import PLUGIN_ATTRIBUTE, ArgumentBindingError, ArgumentTypeError, SourceError
from gpucompiler.kernel import Kernel, Launch

from .activities import ACTIVITIES, Active, Activity, Annotation, BatchDuplicated, Const, Duplicated, mixed
from .calls import Call, marked
from .locations import ENTRY, user_errors
from .modes import WITH_PRIMAL, Forward, Mode, Reverse, mode_options, set_runtime_activity
from .values import (add_into, copied, holds_array, init_less_dataclass, is_float, leaves, member_paths, nesting, plain,
                     record_like, shape, shown, writable_floats)


def prepared(mode, f, args: tuple) -> tuple[Mode, bool, Any, tuple[Annotation, ...]]:
    """``(mode, runtime activity, function, activities)`` of an ``autodiff`` call from Python, checked: a mode
    ``autodiff`` takes, a function it can differentiate (bound methods and partials unwrapped), one activity
    per parameter (a bare value is ``Const``) fitting its value."""
    mode, runtime_activity = mode_options(mode)
    if not isinstance(mode, Mode) or mode not in (Reverse, Forward, *WITH_PRIMAL):
        raise ArgumentTypeError("mode", type(mode), function="autodiff",
                                hint="pass Reverse, Forward, ReverseWithPrimal or ForwardWithPrimal "
                                     "(split mode: autodiff_thunk(ReverseSplit, ...))")
    f, args = bound(f, args)
    f = checked_function(f, "autodiff")
    ann = tuple(a if isinstance(a, Annotation) else Const(a) for a in args)
    check_arguments(f, ann, WITH_PRIMAL.get(mode, mode))
    return mode, runtime_activity, f, ann


def differentiate(mode: Mode, runtime_activity: bool, f, ann: tuple[Annotation, ...], seed=None):
    """The derivatives of a :func:`prepared` call, through a compiled entry (see :mod:`enzyme_plugin.api` for
    what each mode returns)."""
    primal = None
    if mode in WITH_PRIMAL:
        mode = WITH_PRIMAL[mode]
        primal = (primal_value(f, ann),)
    if seed is not None:
        f, ann = _seeded(mode, f, ann, seed, primal[0] if primal else primal_value(f, ann))
    ann = tuple(mixed(a) for a in ann)
    kinds = tuple((type(a).__name__, tuple(shape(v) for v in a.values())) for a in ann)
    entry = _entry(set_runtime_activity(mode, runtime_activity), f, kinds)
    derivs = entry(*(v for a in ann for v in a.values()))
    if mode is Reverse:
        derivs = _returned(derivs, ann)
    if primal is None:
        return derivs
    return (derivs, *primal) if mode is Reverse else (*derivs, *primal)


@marked(Call.AUTODIFF)
@user_errors
def autodiff_deferred(mode: Mode, f, *args, seed=None):
    """``autodiff`` as generated code calls it (Enzyme.jl's ``autodiff_deferred``): in compiled code the same
    nested job as ``autodiff``; from Python a compiled entry, without ``autodiff``'s path for host functions
    that run parallel regions on a device space (:func:`enzyme_plugin.dispatch.autodiff`)."""
    mode, runtime_activity, f, ann = prepared(mode, f, args)
    return differentiate(mode, runtime_activity, f, ann, seed)


def bound(f, args: tuple) -> tuple:
    """``(function, arguments)`` of a bound method (its object first) or a ``functools.partial`` without
    keywords (its arguments first): the bound values are constants (``Const``)."""
    while True:
        if isinstance(f, pytypes.MethodType):
            f, args = f.__func__, (f.__self__, *args)
        elif isinstance(f, functools.partial) and not f.keywords:
            f, args = f.func, (*f.args, *args)
        else:
            return f, args


def _seeded(mode, f, ann, seed, result) -> tuple:
    """``(g, activities)``: ``g`` the sum of ``f``'s result's float members times their seeds (passed as a
    ``Const`` tuple after ``f``'s arguments), whose reverse sweep seeds each member with its own seed."""
    if mode is not Reverse:
        raise ArgumentTypeError("seed", type(seed).__name__, function="autodiff",
                                hint="a seed is the cotangent of the result in reverse mode; forward mode takes "
                                     "tangents in Duplicated arguments")
    if nesting(seed) != nesting(result) or not all(is_float(x) or type(x) is int for x in leaves(seed)) or not all(
            map(is_float, leaves(result))):
        raise ArgumentTypeError("seed", f"{shown(seed)} for {f.__qualname__}'s result {shown(result)}",
                                function="autodiff", hint="give one float seed per float of the result, nested as "
                                                          "the result (a tuple for a tuple or record result)")
    return _seeding(f, len(ann), shape(result)), (*ann, Const(tuple(float(x) for x in leaves(seed))))


@functools.lru_cache(maxsize=256)
def _seeding(f, n: int, result):
    """The compilable ``g(x1, ..., xn, seeds) = sum(seeds[k] * (leaf k of f(x1, ..., xn)))`` (``result``: the
    nesting of ``f``'s result, :func:`shape`)."""
    params = ", ".join(f"x{k}" for k in range(n))
    paths = member_paths("r", result)
    src = (f"def seeded({params}{', ' if n else ''}seeds):\n    r = F({params})\n"
           f"    return {' + '.join(f'seeds[{k}] * {p}' for k, p in enumerate(paths))}\n")
    filename = f"<enzyme_plugin.autodiff seed {f.__module__}.{f.__qualname__}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)  # pyright: ignore[reportArgumentType]
    namespace = {"F": f}
    exec(compile(src, filename, "exec"), namespace)
    return namespace["seeded"]


def checked_function(f, api: str):
    """``f`` if it can be differentiated (a Python function), else a typed error that says what to pass."""
    if isinstance(f, (Kernel, Launch)):
        k = f.kernel if isinstance(f, Launch) else f
        raise ArgumentTypeError("f", f"the kernel {k.py_func.__qualname__}", function=api,
                                hint="a kernel is differentiated through its launches: record them with "
                                     "`with LaunchTape() as tape:` and call tape.backward() (docs/autodiff.md, "
                                     "'Programs that launch kernels'), or differentiate the kernel's body in a "
                                     "kernel: autodiff(Reverse, body, ...) inside a @kernel")
    if not isinstance(f, pytypes.FunctionType):
        raise ArgumentTypeError("f", type(f).__name__, function=api,
                                hint=_FUNCTION_HINT if api == "autodiff" else "pass a Python function or a lambda "
                                     "(autodiff also takes bound methods and functools.partial objects)")
    if f.__code__.co_flags & _GENERATOR_FLAGS:
        raise ArgumentTypeError("f", f"the generator function {f.__qualname__}", function=api,
                                hint="differentiate a function that returns its result")
    return f


_FUNCTION_HINT = ("pass a Python function (a lambda, a bound method or a functools.partial without keywords "
                  "of one too)")
_GENERATOR_FLAGS = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine, async generator


def _returned(derivs, ann):
    """The derivatives of the ``Active`` arguments (records of their type, per lane in a batch); those of the
    float members of mixed ones are added into their shadows."""
    batched = any(isinstance(a, BatchDuplicated) for a in ann)  # per lane, a batch of width 1 too
    out, it = [], iter(derivs)
    for a in ann:
        if isinstance(a, Active):
            d = next(it)
            out.append(tuple(record_like(a.val, lane) for lane in d) if batched else record_like(a.val, d))
        elif a.kind is Activity.MIXED:
            d = next(it)
            for shadow, lane in zip(a.values()[1:], d if batched else (d,)):
                add_into(shadow, iter(lane))
    return tuple(out)


def check_arguments(f, ann, mode) -> None:
    """One activity per parameter of ``f``; shadows of their values' structure, type, dtype and shape; in
    reverse mode the float scalars of a duplicated record in fields that can take their derivatives."""
    code = f.__code__
    names = code.co_varnames[:code.co_argcount]
    if len(ann) != len(names) and not (code.co_kwonlyargcount or code.co_flags & 0x0C):
        what = (f"takes {len(names)} arguments, got {len(ann)}" if len(ann) > len(names) else
                "is missing the argument(s) " + ", ".join(repr(n) for n in names[len(ann):]))
        raise ArgumentBindingError(f"autodiff: {f.__qualname__}({', '.join(names)}) {what} (defined at "
                                   f"{code.co_filename}:{code.co_firstlineno})", None, f.__qualname__,
                                   "pass one activity (Active, Duplicated, Const) per parameter")
    widths = {a.width for a in ann if isinstance(a, BatchDuplicated)}
    if len(widths) > 1 or (widths and any(isinstance(a, Duplicated) for a in ann)):
        raise ArgumentTypeError("args", "BatchDuplicated arguments of widths " + ", ".join(map(str, sorted(widths)))
                                + (" and Duplicated ones" if any(isinstance(a, Duplicated) for a in ann) else ""),
                                function=f.__qualname__,
                                hint="give every BatchDuplicated argument the same number of shadows; a Duplicated "
                                     "argument of a batch is a BatchDuplicated with one shadow repeated")
    for name, a in zip(names, ann):
        _check_annotation(f, name, a, mode)


def _check_annotation(f, name: str, a: Annotation, mode) -> None:
    if isinstance(a, Active) and holds_array(a.val):
        raise ArgumentTypeError(name, f"Active({shown(a.val)})", function=f.__qualname__,
                                hint="an array's derivative is accumulated into a shadow: pass "
                                     "Duplicated(a, np.zeros_like(a)); Active is for float scalars")
    for v in a.values():
        fields = init_less_dataclass(v)
        if fields:
            raise ArgumentTypeError(name, f"the dataclass {fields}, which has fields that are not set by its "
                                    "__init__ (init=False)", function=f.__qualname__,
                                    hint="give every field a place in __init__, or pass a NamedTuple")
    for shadow in a.values()[1:]:
        if shape(a.val) != shape(shadow):
            raise ArgumentTypeError(name, f"a {type(a).__name__} shadow of structure {shown(shadow)} (the value: "
                                    f"{shown(a.val)})", function=f.__qualname__,
                                    hint="give the shadow the value's structure: the same tuple or record class, "
                                         "field by field")
        for v, dv in zip(leaves(a.val), leaves(shadow)):
            if _double(v) and _double(dv):  # float, np.float64: both doubles
                continue
            same = (type(v) is type(dv) and getattr(v, "dtype", None) == getattr(dv, "dtype", None)
                    and getattr(v, "ndim", None) == getattr(dv, "ndim", None))
            if not same:
                raise ArgumentTypeError(name, f"a {type(a).__name__} shadow {shown(dv)} (the value: {shown(v)})",
                                        function=f.__qualname__,
                                        hint="allocate the shadow like the value (np.zeros_like)")
            if getattr(v, "shape", None) != getattr(dv, "shape", None):
                axis = next(k for k, (n, m) in enumerate(zip(v.shape, dv.shape)) if n != m)
                raise ShadowError(f"autodiff: the shadow of {f.__qualname__}'s argument {name!r} must have the "
                                       f"shape of its value: axis {axis} has {v.shape[axis]} elements in the value, "
                                       f"{dv.shape[axis]} in the shadow", function=f.__qualname__,
                                       hint="allocate the shadow like the value (np.zeros_like)")
            if _strides(v) != _strides(dv):
                axis = next(k for k, (n, m) in enumerate(zip(_strides(v), _strides(dv))) if n != m)
                raise ShadowError(f"autodiff: the shadow of {f.__qualname__}'s argument {name!r} must have the "
                                       f"strides of its value: axis {axis} steps {v.strides[axis]} bytes in the "
                                       f"value, {dv.strides[axis]} in the shadow", function=f.__qualname__,
                                       hint="the derivative code reads the shadow with the value's strides: for "
                                            "a strided view a pass np.ascontiguousarray(a) and np.zeros_like of it")
            np = sys.modules.get("numpy")  # loaded when an argument is a NumPy array
            if np is not None and isinstance(v, np.ndarray) and isinstance(dv, np.ndarray) and v.size and (
                    np.shares_memory(v, dv)):
                raise ShadowError(f"autodiff: the shadow of {f.__qualname__}'s argument {name!r} shares memory with "
                                  "its value", function=f.__qualname__,
                                  hint="the derivative code adds into the shadow while it reads the value: "
                                       "allocate the shadow apart (np.zeros_like)")
        if mode is Reverse and shape(a.val) is not None and not writable_floats(shadow):
            raise ArgumentTypeError(name, f"a {type(a).__name__} shadow {shown(shadow)} whose float scalars cannot "
                                    "receive their derivatives", function=f.__qualname__,
                                    hint="in reverse mode a record's float fields take their derivatives in a "
                                         "(non-frozen) dataclass shadow; in a tuple or NamedTuple pass them as "
                                         "Active arguments of their own, or hold them in arrays")


class ShadowError(SourceError, ValueError):
    """A shadow that does not fit its value: another shape or strides (the derivative code would read and write
    past it), or memory shared with it (the derivative code would add into the value it reads)."""


def _strides(a) -> tuple:
    """The strides of a NumPy array's axes that step (more than one element, none empty); ``()`` otherwise."""
    shape, strides = getattr(a, "shape", None), getattr(a, "strides", None)
    if shape is None or strides is None or 0 in shape:
        return ()
    return tuple(s if n > 1 else None for n, s in zip(shape, strides))


def primal_value(f, ann):
    """``f`` at the primal values, compiled; arrays are copied so that ``f``'s writes happen once."""
    vals = [copied(a.val) for a in ann]
    return _entry(None, f, tuple(("", (shape(a.val),)) for a in ann))(*vals)


@functools.lru_cache(maxsize=256)
def _entry(mode, f, kinds: tuple[tuple[str, tuple], ...]):
    """A jit-compiled entry ``(values) -> autodiff(mode, f, activities...)`` (``mode`` None: ``f(values...)``,
    the primal); ``kinds``: per argument, the activity's class name and the nesting (:func:`shape`) of each
    value it holds. Tuples and records are passed as they are; in reverse mode the derivatives of ``Active``
    records come back as plain tuples (:func:`plain`), rebuilt by :func:`_returned`."""
    params, wrapped, k = [], [], 0
    taken = {"autodiff", "MODE", "F", "r", *ACTIVITIES}
    given = f.__code__.co_varnames[:f.__code__.co_argcount]
    for j, (kind, specs) in enumerate(kinds):  # named after f's parameters, so that an error names them
        base = given[j] if j < len(given) else f"a{j}"
        names = [base if i == 0 else f"d{base}" if len(specs) == 2 else f"d{base}_{i}" for i in range(len(specs))]
        names = [n if n not in taken else f"a{k + i}" for i, n in enumerate(names)]
        taken.update(names)
        k += len(specs)
        params += names
        if not kind:
            wrapped.append(names[0])
        elif issubclass(ACTIVITIES[kind], BatchDuplicated):
            wrapped.append(f"{kind}({names[0]}, ({', '.join(names[1:])},))")
        else:
            wrapped.append(f"{kind}({', '.join(names)})")
    call = "F(" if mode is None else "autodiff(MODE, F, "
    body = f"    return {call}{', '.join(wrapped)})\n"
    base, _ = mode_options(mode)
    returned = [(kind, specs[0]) for kind, specs in kinds if kind in ("Active", "MixedDuplicated",
                                                                        "BatchMixedDuplicated")]
    if base is Reverse and returned:
        batched = [len(specs) - 1 for kind, specs in kinds if kind.startswith("Batch")]
        width = max(batched, default=1)
        parts = [(plain(f"r[{j}]", spec) if not batched else
                  "(" + "".join(plain(f"r[{j}][{lane}]", spec) + ", " for lane in range(width)) + ")")
                 if kind == "Active" else f"r[{j}]" for j, (kind, spec) in enumerate(returned)]
        body = f"    r = {call}{', '.join(wrapped)})\n    return ({''.join(p + ', ' for p in parts)})\n"
    src = f"def {ENTRY}({', '.join(params)}):\n{body}"
    shown = " ".join(kind if len(specs) <= 2 else f"{kind}{len(specs) - 1}" for kind, specs in kinds)
    filename = f"<enzyme_plugin.autodiff {mode!r} {f.__module__}.{f.__qualname__} {shown}>"
    # source for the frontend; no mtime (None), so linecache.checkcache keeps the entry
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)  # pyright: ignore[reportArgumentType]
    namespace = {"autodiff": autodiff_deferred, "MODE": mode, "F": f, **ACTIVITIES}
    exec(compile(src, filename, "exec"), namespace)
    return jit(namespace[ENTRY], plugins=("enzyme",))


def _double(x) -> bool:
    """A Python float or an ``np.float64`` (a ``float`` subclass): the same double either way."""
    return isinstance(x, float)


setattr(autodiff_deferred, PLUGIN_ATTRIBUTE, "enzyme")  # a call in compiled code enables the plugin

__all__ = ["ShadowError", "autodiff_deferred", "bound", "check_arguments", "checked_function", "differentiate",
           "prepared", "primal_value"]
