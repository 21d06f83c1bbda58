"""Activities made in compiled code: ``Const(v)``, ``Active(x)``, ``Duplicated(a, da)`` & co typed as
:class:`~enzyme_plugin.language.types.ActivityType` (the primal and its shadows, tagged with the activity) and
lowered to the struct of their values."""

from __future__ import annotations

import attrs
from llvmlite import ir

from gpucompiler import types as T
from gpucompiler.errors import ReadOnlyArrayError, TypeInferenceError
from gpucompiler.interpreter import Any_, borrowed, pyobj, widen

from .. import activities
from ..activities import Activity
from .sets import rules
from .types import ActivityType, float_members, float_tuple, is_float, is_float_array, mixed_members


def _pack(cg, args, argtypes, rt):
    out = ir.Constant(cg.ll(rt), ir.Undefined)
    for k, v in enumerate(args):
        out = cg.b.insert_value(out, cg.cast(v, argtypes[k], rt.items[k]), k)
    return out


def _single(kind):
    def restype(x):
        w = widen(x)
        if kind is Activity.ACTIVE and not (is_float(w) or float_tuple(w)):
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
        if not (is_float(w) or is_float_array(w) or float_members(w)
                or (kind is Activity.MIXED and mixed_members(w))):
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


for _cls, _rt in ((activities.Const, _single(Activity.CONST)), (activities.Active, _single(Activity.ACTIVE)),
                  (activities.Duplicated, _double(Activity.DUP)),
                  (activities.DuplicatedNoNeed, _double(Activity.DUPNONEED)),
                  (activities.MixedDuplicated, _double(Activity.MIXED))):
    n = 2 if issubclass(_cls, activities.Duplicated) else 1
    rules.define(_cls, *([Any_] * n), restype=_rt, pure=False)(_pack)
for _cls, _rt in ((activities.BatchDuplicated, _batch(Activity.DUP)),
                  (activities.BatchDuplicatedNoNeed, _batch(Activity.DUPNONEED)),
                  (activities.BatchMixedDuplicated, _batch(Activity.MIXED))):
    rules.define(_cls, Any_, Any_, restype=_rt, pure=False)(_pack_batch)
