"""Interpreter rules of the Enzyme plugin: activities as values, ``autodiff`` as a deferred job.

``Active(x)``, ``Const(v)``, ``Duplicated(a, da)``, ``DuplicatedNoNeed(a, da)``
are typed as :class:`ActivityType` (a tuple of the primal and its shadow,
tagged with the activity). ``autodiff(mode, f, *args)`` defers ``f`` under
:class:`EnzymeMeta` (:func:`gpucompiler.interpreter.deferred.deferred_call`;
the nested job keeps the target's overlays) and lowers to::

    %f = call ptr @gpuc.lookup(ptr @"gpuc.job.<id>")
    %r = call {double} (ptr, ...) @gpuc.enzyme.autodiff(ptr %f, i32 <mode>, i32 <activity>, <values>...)

which the pipeline half (:mod:`enzyme_plugin.passes.lower`) turns into
Enzyme's C interface after the nested job is linked.
"""

from __future__ import annotations

import sys

import attrs
from llvmlite import ir

from gpucompiler import types as T
from gpucompiler.errors import ReadOnlyArrayError, TypeInferenceError
from gpucompiler.interpreter import (BOTTOM, Any_, CallResult, Const, DeferredMeta, RuleSet, borrowed, deferred_call,
                                     is_function, nested_interpreter, pyobj, widen)

from .. import api

MARKER = "gpuc.enzyme.autodiff"
"""The marker call the interpreter leaves for the pipeline half."""
SPLIT_ONLY_FROM_PYTHON = ("split mode is made in Python: FWD, REV = autodiff_thunk(ReverseSplit, f, ...) at "
                          "module level; @jit functions and kernels call FWD and REV (docs/autodiff.md)")

rules = RuleSet("enzyme")
"""Rules of every job that enables the ``enzyme`` plugin."""
nested_rules = RuleSet("enzyme.nested")
"""Rules of the differentiated (nested) jobs only: custom derivative rules keep their functions out of line."""


@attrs.frozen(repr=False, cache_hash=True)
class ActivityType(T.TupleType):
    """The type of ``Active(x)`` & co: a tuple (primal[, shadow]) tagged with the activity ``kind``."""

    kind: api.Activity = api.Activity.CONST
    batch: bool = False
    """``BatchDuplicated`` (of any width, one included): the call's derivatives come per lane."""

    def __repr__(self) -> str:
        return f"{'batch ' if self.batch else ''}{self.kind.name.lower()}(" + ", ".join(map(repr, self.items)) + ")"


@attrs.frozen
class EnzymeMeta(DeferredMeta):
    """What a nested job of ``autodiff`` is for (part of its job id)."""

    mode: str = "Reverse"
    rules = (nested_rules,)
    error_slot = True  # checks inside f stop it (plain signatures for the engine): see lowering.py
    source_lines = True  # an ADError names the Python line of what it cannot differentiate


def _is_float(t) -> bool:
    t = widen(t)
    return isinstance(t, T.Scalar) and t.kind == "f"


def _is_float_array(t) -> bool:
    t = widen(t)
    return isinstance(t, T.ArrayType) and t.dtype.kind in "fc"


def members(t) -> tuple | None:
    """The member types of a tuple or a record (``NamedTuple``, dataclass), else None (an activity too)."""
    t = widen(t)
    if isinstance(t, T.RecordType) or (isinstance(t, T.TupleType) and not isinstance(t, ActivityType)):
        return t.items
    return None


def leaf_types(t) -> list:
    """The scalars and arrays of ``t``, nested tuples and records walked in member order (``[t]`` for a leaf)."""
    items = members(t)
    return [widen(t)] if items is None else [x for m in items for x in leaf_types(m)]


def _aggregate_of(t, leaf) -> bool:
    """A non-empty tuple or record whose leaves all satisfy ``leaf``."""
    return bool(members(t)) and all(leaf(x) for x in leaf_types(t))


def _float_members(t) -> bool:
    """A tuple or record whose members (nested ones walked) are all float scalars or float arrays."""
    return _aggregate_of(t, lambda x: _is_float(x) or _is_float_array(x))


def _array_members(t) -> bool:
    return _aggregate_of(t, _is_float_array) or _is_float_array(t)


def mixed_members(t) -> bool:
    """A tuple or record of float arrays, float scalars and integers, with a float scalar: in reverse mode its
    arrays have shadows, its float scalars derivatives and its integers none (Enzyme's mixed activity)."""
    leaves = leaf_types(t)
    return _aggregate_of(t, lambda x: _is_float(x) or _is_float_array(x) or _is_integer(x)) and any(
        map(_is_float, leaves))


def _is_integer(t) -> bool:
    t = widen(t)
    return isinstance(t, T.Scalar) and t.kind in "iub"


def _pack(cg, args, argtypes, rt):
    out = ir.Constant(cg.ll(rt), ir.Undefined)
    for k, v in enumerate(args):
        out = cg.b.insert_value(out, cg.cast(v, argtypes[k], rt.items[k]), k)
    return out


def _single(kind):
    def restype(x):
        w = widen(x)
        if kind is api.Activity.ACTIVE and not (_is_float(w) or float_tuple(w)):
            raise TypeInferenceError(f"Active takes a float scalar or a tuple or record of them, got {w!r}", (w,),
                                     hint="use Duplicated for arrays (complex ones too: a complex scalar's "
                                          "derivative comes from a one-element complex array) and Const for "
                                          "integers")
        if w == pyobj or not isinstance(w, T.Type):
            raise TypeInferenceError(f"{kind.name.lower()} activity of a compile-time object", (w,))
        return ActivityType((w,), kind)
    return restype


_LAYOUT_HINT = ("the derivative code reads the shadow with the value's strides: give both the same layout (for a "
                "strided view a, pass np.ascontiguousarray(a) and np.zeros_like of that)")


def _double(kind):
    def restype(x, dx):
        w, dw = widen(x), widen(dx)
        if isinstance(dw, T.ArrayType) and dw.readonly:
            raise ReadOnlyArrayError("the shadow of a Duplicated array is written by the derivative code: "
                                     "assignment destination is read-only", (dw,), hint="pass a writeable shadow")
        if isinstance(w, T.ArrayType) and w.readonly:  # a read-only value: its shadow is writeable
            w = attrs.evolve(w, readonly=False)
        x = widen(x)
        if isinstance(w, T.ArrayType) and w != dw and borrowed(w) == borrowed(dw):
            # one made by the compiled code, one lent by Python: both managed (a null buffer for the lent
            # one), so that the activity holds a reference to the new array until the call
            w, x, dw = (attrs.evolve(t, managed=True) for t in (w, x, dw))
        if w != dw:
            raise TypeInferenceError(f"the shadow of a Duplicated value must have its type: {w!r} and {dw!r}",
                                     (w, dw), hint=_LAYOUT_HINT if isinstance(w, T.ArrayType) and isinstance(
                                         dw, T.ArrayType) and w.layout != dw.layout else
                                     "allocate the shadow like the value (np.zeros_like)")
        if not (_is_float(w) or _is_float_array(w) or _float_members(w)
                or (kind is api.Activity.MIXED and mixed_members(w))):
            raise TypeInferenceError(f"Duplicated takes a float scalar, a float array or a tuple or record of them, got {w!r}",
                                     (w,), hint="use Const for integers and integer arrays")
        return ActivityType((x, dw), kind)
    return restype


def _batch(kind):
    def restype(x, dxs):
        ds = widen(dxs)
        if not isinstance(ds, T.TupleType) or isinstance(ds, ActivityType) or not ds.items:
            raise TypeInferenceError(f"BatchDuplicated takes a value and a tuple of its shadows, got {ds!r}",
                                     (ds,), hint="BatchDuplicated(x, (dx1, dx2))")
        pairs = [_double(kind)(x, d) for d in ds.items]
        return ActivityType((pairs[0].items[0], *(p.items[1] for p in pairs)), kind, batch=True)
    return restype


def _pack_batch(cg, args, argtypes, rt):
    """``(x, (dx1, ..., dxN))`` -> ``{x, dx1, ..., dxN}``."""
    out = cg.b.insert_value(ir.Constant(cg.ll(rt), ir.Undefined), cg.cast(args[0], argtypes[0], rt.items[0]), 0)
    shadows = widen(argtypes[1]).items
    for k in range(len(rt.items) - 1):
        out = cg.b.insert_value(out, cg.cast(cg.b.extract_value(args[1], k), shadows[k], rt.items[k + 1]), k + 1)
    return out


for _cls, _rt in ((api.Const, _single(api.Activity.CONST)), (api.Active, _single(api.Activity.ACTIVE)),
                  (api.Duplicated, _double(api.Activity.DUP)),
                  (api.DuplicatedNoNeed, _double(api.Activity.DUPNONEED)),
                  (api.MixedDuplicated, _double(api.Activity.MIXED))):
    n = 2 if issubclass(_cls, api.Duplicated) else 1
    rules.define(_cls, *([Any_] * n), restype=_rt, pure=False)(_pack)
for _cls, _rt in ((api.BatchDuplicated, _batch(api.Activity.DUP)),
                  (api.BatchDuplicatedNoNeed, _batch(api.Activity.DUPNONEED)),
                  (api.BatchMixedDuplicated, _batch(api.Activity.MIXED))):
    rules.define(_cls, Any_, Any_, restype=_rt, pure=False)(_pack_batch)


def width(acts) -> int:
    """The batch width of a call's activities: the number of shadows of its duplicated arguments."""
    return max((len(a.items) - 1 for a in acts if a.kind.duplicated), default=1)


def _mode_of(v):
    """The mode of an ``autodiff`` call (options such as runtime activity kept)."""
    if isinstance(v, Const) and isinstance(v.value, (api.Mode, api.RuntimeActivity)):
        mode, _ = api.mode_options(v.value)
        if mode is api.ReverseSplit:
            raise TypeInferenceError(f"autodiff: {SPLIT_ONLY_FROM_PYTHON}",
                                     hint="use autodiff(Reverse, ...) in compiled code")
        return v.value
    raise TypeInferenceError(f"autodiff: the mode must be Reverse or Forward, got {widen(v)!r}",
                             hint="autodiff(Reverse, f, Active(x), ...)")


def _activities(mode: api.Mode, args) -> tuple[list[ActivityType], list[bool]]:
    """The activity of every argument, and whether it was given wrapped (``Const(n)``) or bare (``n``)."""
    out, wrapped = [], []
    for a in args:
        t = widen(a)
        wrapped.append(isinstance(t, ActivityType))
        if not isinstance(t, ActivityType):
            if t == pyobj or not isinstance(t, T.Type):
                raise TypeInferenceError(f"autodiff: cannot pass {a!r} to a differentiated function")
            t = ActivityType((t,), api.Activity.CONST)
        if mode is api.Forward and t.kind is api.Activity.ACTIVE:
            raise TypeInferenceError("autodiff: Active is for reverse mode; in forward mode use "
                                     "Duplicated(x, dx) with the tangent dx")
        if mode is api.Reverse and t.kind.duplicated and t.kind is not api.Activity.MIXED and not _array_members(
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


def float_tuple(t) -> bool:
    """A tuple or record of float scalars (nested ones included): a value with a tuple shadow."""
    return _aggregate_of(t, _is_float)


def _holds_float(t) -> bool:
    return any(_is_float(x) or _is_complex(x) or _is_float_array(x) for x in leaf_types(t))


def result_type(mode: api.Mode, acts, ret) -> T.TupleType:
    """What ``autodiff`` returns in compiled code. A tuple of floats returned by ``f`` has a tuple
    tangent in forward mode, a complex number a complex one; in reverse mode they would need seeds (a typed
    error)."""
    n = width(acts)
    lanes = n > 1 or any(a.batch for a in acts)  # a batch of width 1 too: one lane, as Enzyme.jl
    ret = widen(ret)

    def batch(t):
        return T.TupleType((t,) * n) if lanes else t
    if members(ret) is not None and _holds_float(ret) and (mode is api.Reverse or not float_tuple(ret)):
        what = ("in reverse mode each element needs its own seed" if mode is api.Reverse else
                "only a tuple of float scalars has a tangent")
        raise TypeInferenceError(
            f"autodiff: the differentiated function returns {ret!r}: {what}",
            hint="reverse mode: from Python pass one cotangent per element, autodiff(Reverse, f, ..., seed=(s1, "
                 "s2)); in compiled code write the results into an array passed as Duplicated(out, seeds) (the "
                 "seeds are the cotangents), or return one float; forward mode returns the tuple's tangent")
    if _is_float_array(ret):  # a new array or a view: no shadow to seed or to hand back
        raise TypeInferenceError(
            f"autodiff: the differentiated function returns an array, {ret!r}: an array result has no shadow",
            hint="write the result into an array passed as Duplicated(out, dout) (reverse: dout holds the "
                 "cotangents; forward: dout receives the tangents) and return nothing or a float")
    if _is_complex(ret) and mode is api.Reverse:  # no seed: its derivatives would be silent zeros
        raise TypeInferenceError(
            f"autodiff: the differentiated function returns a complex number ({ret!r}): reverse mode seeds a real "
            "result", hint="return a real value (z.real, abs(z)), or write the result into an array passed as "
                           "Duplicated(out, dout): dout holds its cotangent, dL/dRe + i dL/dIm")
    if mode is api.Reverse:  # per Active argument its derivative; per mixed one its float scalars' derivatives
        return T.TupleType(tuple(batch(a.items[0]) if a.kind is api.Activity.ACTIVE else
                                 batch(T.TupleType(tuple(x for x in leaf_types(a.items[0]) if _is_float(x))))
                                 for a in acts if a.kind in (api.Activity.ACTIVE, api.Activity.MIXED)))
    return T.TupleType((batch(ret),) if _is_float(ret) or _is_complex(ret) or float_tuple(ret) else ())


def _is_complex(t) -> bool:
    t = widen(t)
    return isinstance(t, T.Scalar) and t.kind == "c"


def _check_arity(f, given: int) -> None:
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


def _is_thunk(fn) -> bool:
    """``autodiff_thunk``, the API's or :mod:`enzyme_plugin.split`'s. That module (it loads NumPy) is not
    imported for the check: while it is not loaded, no one holds its function."""
    split = sys.modules.get(f"{api.__name__.rpartition('.')[0]}.split")
    return fn is api.autodiff_thunk or (split is not None and fn is split.autodiff_thunk)


@rules.handler
def _set_runtime_activity(interp, fn, args):
    """``set_runtime_activity(Reverse)`` in compiled code: a compile-time mode."""
    if fn is not api.set_runtime_activity:
        return None
    if len(args) == 1 and isinstance(args[0], Const) and isinstance(args[0].value, (api.Mode, api.RuntimeActivity)):
        return CallResult(Const(api.set_runtime_activity(args[0].value), pyobj), lambda *_: None)
    raise TypeInferenceError("set_runtime_activity takes a mode known at compile time",
                             hint="set_runtime_activity(Reverse) or set_runtime_activity(Forward)")


@rules.handler
def _autodiff(interp, fn, args):
    if _is_thunk(fn):
        raise TypeInferenceError(f"autodiff_thunk: {SPLIT_ONLY_FROM_PYTHON}",
                                 hint="use autodiff(Reverse, ...) in compiled code")
    if fn is not api.autodiff:
        return None
    if len(args) < 2 or not is_function(args[1]):
        got = repr(args[1]) if len(args) > 1 else "nothing"
        raise TypeInferenceError(f"autodiff needs a Python function as second argument, got {got}",
                                 hint="pass a module-level function: autodiff(Reverse, f, Active(x))")
    mode, runtime_activity = api.mode_options(_mode_of(args[0]))
    with_primal = mode in api.WITH_PRIMAL
    mode = api.WITH_PRIMAL[mode] if with_primal else mode
    f = args[1].value
    split = mode.is_split_half
    if split:  # autodiff(<half>, f, tape holder, activities...): both halves share one nested job
        holder = widen(args[2]) if len(args) > 2 else None
        if not (isinstance(holder, T.ArrayType) and holder.dtype.kind == "i"):
            raise TypeInferenceError(f"autodiff: split mode needs an integer tape holder array, got {holder!r}")
    acts, wrapped = _activities(api.Reverse if split else mode, args[3 if split else 2:])
    _check_arity(f, len(acts))
    primal = tuple(a.items[0] for a in acts)
    meta = EnzymeMeta("ReverseSplit" if split else mode.name)
    _check_not_differentiating_itself(interp, f, meta)
    res = deferred_call(interp, meta, f, primal, marker=MARKER)
    if res.restype is BOTTOM:
        return CallResult(BOTTOM)
    assert res.deferred is not None, "a deferred call with a result records its job"
    job = res.deferred.job
    restype = result_type(api.Reverse if split else mode, acts, res.restype)
    if with_primal:  # Enzyme's primal return: (derivatives, primal) / (tangent, primal)
        ret = widen(res.restype)
        if not _is_float(ret):
            raise TypeInferenceError(f"autodiff: {mode.name}WithPrimal in compiled code needs a function returning "
                                     f"a float, got {ret!r}", hint=f"use autodiff({mode.name}, ...) and call f")
        restype = T.TupleType((restype, ret) if mode is api.Reverse else (*restype.items, ret))

    def lower(cg, values, argtypes, rt):
        from .lowering import emit_autodiff

        if split:
            return emit_autodiff(cg, job, mode, acts, wrapped, values[3:], restype, tape=values[2], fn=f,
                                 runtime_activity=runtime_activity)
        return emit_autodiff(cg, job, mode, acts, wrapped, values[2:], restype, fn=f,
                             runtime_activity=runtime_activity, primal=with_primal)

    return CallResult(restype, lower)


__all__ = ["rules", "nested_rules", "ActivityType", "EnzymeMeta", "MARKER", "result_type", "width"]

from . import thunks  # noqa: E402,F401  (registers the handler of split-mode thunk calls)
from . import linalg  # noqa: E402,F401  (registers the loops of matrix products in differentiated code)
