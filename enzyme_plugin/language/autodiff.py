"""``autodiff(mode, f, activities...)`` in compiled code: a nested job of ``f`` (deferred under
:class:`~enzyme_plugin.language.types.EnzymeMeta`, :func:`gpucompiler.interpreter.deferred.deferred_call`; the
nested job keeps the target's overlays) lowered to the marker call (:mod:`.lowering`);
``set_runtime_activity(mode)`` a compile-time mode; ``autodiff_thunk`` refused (split mode is made in Python)."""

from __future__ import annotations

from gpucompiler import types as T
from gpucompiler.errors import TypeInferenceError
from gpucompiler.interpreter import BOTTOM, CallResult, Const, deferred_call, is_function, nested_interpreter, pyobj, widen

from ..activities import Activity
from ..calls import Call, call_of
from ..modes import WITH_PRIMAL, Forward, Mode, Reverse, ReverseSplit, RuntimeActivity, mode_options, set_runtime_activity
from .lowering import emit_autodiff
from .sets import MARKER, SPLIT_ONLY_FROM_PYTHON, rules
from .types import ActivityType, EnzymeMeta, array_members, is_float, result_type


def _mode_of(v):
    """The mode of an ``autodiff`` call (options such as runtime activity kept)."""
    if isinstance(v, Const) and isinstance(v.value, (Mode, RuntimeActivity)):
        mode, _ = mode_options(v.value)
        if mode is ReverseSplit:
            raise TypeInferenceError(f"autodiff: {SPLIT_ONLY_FROM_PYTHON}",
                                     hint="use autodiff(Reverse, ...) in compiled code")
        return v.value
    raise TypeInferenceError(f"autodiff: the mode must be Reverse or Forward, got {widen(v)!r}",
                             hint="autodiff(Reverse, f, Active(x), ...)")


def activities_of(mode: Mode, args) -> tuple[list[ActivityType], list[bool]]:
    """The activity of every argument, and whether it was given wrapped (``Const(n)``) or bare (``n``)."""
    out, wrapped = [], []
    for a in args:
        t = widen(a)
        wrapped.append(isinstance(t, ActivityType))
        if not isinstance(t, ActivityType):
            if t == pyobj or not isinstance(t, T.Type):
                raise TypeInferenceError(f"autodiff: cannot pass {a!r} to a differentiated function")
            t = ActivityType((t,), Activity.CONST)
        if mode is Forward and t.kind is Activity.ACTIVE:
            raise TypeInferenceError("autodiff: Active is for reverse mode; in forward mode use "
                                     "Duplicated(x, dx) with the tangent dx")
        if mode is Reverse and t.kind.duplicated and t.kind is not Activity.MIXED and not array_members(
                t.items[0]):
            raise TypeInferenceError(f"autodiff: in reverse mode Duplicated takes arrays (or tuples and records of "
                                     f"them), got {t.items[0]!r}",
                                     hint="use Active(x) for a scalar (or a tuple or record of scalars) whose "
                                          "derivative you want; a record of arrays and scalars in compiled code: "
                                          "pass its scalars Active and its arrays Duplicated (from Python a "
                                          "dataclass shadow takes both)")
        out.append(t)
    widths = sorted({len(t.items) - 1 for t in out if t.kind.duplicated})
    if len(widths) > 1:
        raise TypeInferenceError("autodiff: the duplicated arguments of a batch must all have the same number of "
                                 f"shadows, got {', '.join(map(str, widths))}",
                                 hint="BatchDuplicated(x, (dx1, ..., dxN)) with one N for every argument")
    return out, wrapped


def check_arity(f, given: int) -> None:
    """One activity per parameter of ``f``: an extra one would get a phantom zero derivative."""
    code = f.__code__
    names = code.co_varnames[:code.co_argcount]
    if code.co_kwonlyargcount or code.co_flags & 0x0C:  # keyword-only, *args, **kwargs
        raise TypeInferenceError(f"autodiff: {f.__qualname__} has keyword-only, *args or **kwargs parameters",
                                 hint="differentiate a function of positional parameters only")
    if given > len(names):
        raise TypeInferenceError(f"autodiff: {f.__qualname__}({', '.join(names)}) takes {len(names)} arguments, "
                                 f"got {given}", hint="pass one activity (Active, Duplicated, Const) per parameter")
    if given < len(names):
        missing = ", ".join(repr(n) for n in names[given:])
        raise TypeInferenceError(f"autodiff: {f.__qualname__}({', '.join(names)}) is missing the argument(s) "
                                 f"{missing}", hint="pass one activity per parameter (defaults are not filled in)")


def _check_not_differentiating_itself(interp, f, meta) -> None:
    """``autodiff`` of ``f`` while ``f`` is being inferred (``f`` differentiates itself, directly or
    through calls): a derivative of unbounded order."""
    child = nested_interpreter(interp, tuple(meta.rules))
    if any(fr.pyfunc is f for fr in (*interp.stack, *child.stack)):
        raise TypeInferenceError(f"autodiff of {f.__qualname__} inside {f.__qualname__} (directly or through "
                                 "the functions it calls): a derivative of unbounded order",
                                 hint="differentiate a function that does not call autodiff on itself")


@rules.handler
def _set_runtime_activity(interp, fn, args):
    """``set_runtime_activity(Reverse)`` in compiled code: a compile-time mode."""
    if fn is not set_runtime_activity:
        return None
    if len(args) == 1 and isinstance(args[0], Const) and isinstance(args[0].value, (Mode, RuntimeActivity)):
        return CallResult(Const(set_runtime_activity(args[0].value), pyobj), lambda *_: None)
    raise TypeInferenceError("set_runtime_activity takes a mode known at compile time",
                             hint="set_runtime_activity(Reverse) or set_runtime_activity(Forward)")


@rules.handler
def _autodiff(interp, fn, args):
    call = call_of(fn)
    if call is Call.AUTODIFF_THUNK:
        raise TypeInferenceError(f"autodiff_thunk: {SPLIT_ONLY_FROM_PYTHON}",
                                 hint="use autodiff(Reverse, ...) in compiled code")
    if call is not Call.AUTODIFF:
        return None
    if len(args) < 2 or not is_function(args[1]):
        got = repr(args[1]) if len(args) > 1 else "nothing"
        raise TypeInferenceError(f"autodiff needs a Python function as second argument, got {got}",
                                 hint="pass a module-level function: autodiff(Reverse, f, Active(x))")
    mode, runtime_activity = mode_options(_mode_of(args[0]))
    with_primal = mode in WITH_PRIMAL
    mode = WITH_PRIMAL[mode] if with_primal else mode
    f = args[1].value
    split = mode.is_split_half
    if split:  # autodiff(<half>, f, tape holder, activities...): both halves share one nested job
        holder = widen(args[2]) if len(args) > 2 else None
        if not (isinstance(holder, T.ArrayType) and holder.dtype.kind == "i"):
            raise TypeInferenceError(f"autodiff: split mode needs an integer tape holder array, got {holder!r}")
    acts, wrapped = activities_of(Reverse if split else mode, args[3 if split else 2:])
    check_arity(f, len(acts))
    primal = tuple(a.items[0] for a in acts)
    meta = EnzymeMeta("ReverseSplit" if split else mode.name)
    _check_not_differentiating_itself(interp, f, meta)
    res = deferred_call(interp, meta, f, primal, marker=MARKER)
    if res.restype is BOTTOM:
        return CallResult(BOTTOM)
    assert res.deferred is not None, "a deferred call with a result records its job"
    job = res.deferred.job
    restype = result_type(Reverse if split else mode, acts, res.restype)
    if with_primal:  # Enzyme's primal return: (derivatives, primal) / (tangent, primal)
        ret = widen(res.restype)
        if not is_float(ret):
            raise TypeInferenceError(f"autodiff: {mode.name}WithPrimal in compiled code needs a function returning "
                                     f"a float, got {ret!r}", hint=f"use autodiff({mode.name}, ...) and call f")
        restype = T.TupleType((restype, ret) if mode is Reverse else (*restype.items, ret))

    def lower(cg, values, argtypes, rt):
        if split:
            return emit_autodiff(cg, job, mode, acts, wrapped, values[3:], restype, tape=values[2], fn=f,
                                 runtime_activity=runtime_activity)
        return emit_autodiff(cg, job, mode, acts, wrapped, values[2:], restype, fn=f,
                             runtime_activity=runtime_activity, primal=with_primal)

    return CallResult(restype, lower)


__all__ = ["activities_of", "check_arity"]
