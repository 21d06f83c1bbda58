"""``np.sort``, ``np.argsort``, ``a.sort()`` and ``a.argsort()`` of 1-d and 2-d arrays.

As NumPy: along the last axis by default, ``axis=0`` or ``1`` (a constant),
``axis=None`` the elements in C order (a 1-d result); ``np.sort`` a new
array, ``a.sort()`` in place (``None``); ``argsort`` int64 indices. The loops
(:mod:`.npsortimpl`): NumPy's default kind (``quicksort``, ``heapsort``) an
introsort, which may order the indices of equal keys otherwise than NumPy
(as NumPy's own kinds do among themselves); ``kind="stable"``,
``"mergesort"`` or ``stable=True`` a merge sort, NumPy's ``kind="stable"``
order exactly. NaN sorts last. Complex numbers and ``order=`` are refused.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from .... import types as T
from ....errors import AxisError, ReadOnlyArrayError, TypeInferenceError
from ....frontend import intrinsics as K
from ....interpreter.lattice import Const, const, widen
from ....interpreter.rules import CallResult
from . import npsortimpl as S
from ..npdtypes import numpy_function
from ...python.numbers import base
from ..reductions import invoke_impl, returned
from ..ufuncs import is_arraylike, numpy

_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")
#: name -> implementations: (1-d, axis None of 2-d, axis 0 of 2-d, axis 1 of 2-d)
_IMPLS = {
    "sort": (S.sort1, S.sort_flat, S.sort_columns, S.sort_rows),
    "argsort": (S.argsort1, S.argsort_flat, S.argsort_columns, S.argsort_rows),
    "inplace": (S.inplace1, None, S.inplace_columns, S.inplace_rows),
}


def _bind(name: str, values: list, kwnames: tuple) -> dict:
    params = ("a", "axis", "kind", "order")
    npos = len(values) - len(kwnames)
    if npos > len(params):
        raise TypeInferenceError(f"{name}() takes an array, axis, kind and order in compiled code")
    given: dict[str, Any] = dict(zip(params, values[:npos]))
    for k, v in zip(kwnames, values[npos:]):
        if k not in (*params, "stable") or k in given:
            raise TypeInferenceError(f"{name}() keyword argument {k!r} is not supported in compiled code",
                                     hint="the supported keywords are axis, kind and stable")
        given[k] = v
    for k in ("kind", "order", "stable"):
        v = given.get(k)
        if v is not None and not isinstance(v, Const):
            raise TypeInferenceError(f"{name}(..., {k}=...) must be a constant in compiled code", (widen(v),))
    if given.get("order") is not None and given["order"].value is not None:
        raise TypeInferenceError(f"{name}(..., order=...) sorts structured arrays, which compiled code does not")
    if given.get("kind") is not None and given["kind"].value not in _KINDS:
        raise TypeInferenceError(f"{name}(): kind={given['kind'].value!r} is not one of NumPy's sort kinds",
                                 hint="quicksort, mergesort, heapsort or stable")
    return given


def _stable(given: dict) -> bool:
    """Whether the sort asked for is stable: ``kind="stable"`` or ``"mergesort"``, or ``stable=True``."""
    kind, flag = given.get("kind"), given.get("stable")
    return (kind is not None and kind.value in ("stable", "mergesort")) or (flag is not None and bool(flag.value))


def _sorting(interp, what: str, name: str, values: list, kwnames: tuple) -> tuple:
    """``(result, lower)`` of the sort ``what`` (``sort``, ``argsort``, ``inplace``) of ``values``;
    ``lower`` gets the values of all the arguments (only the array's is used)."""
    given = _bind(name, values, kwnames)
    x = widen(given.get("a"))
    if not is_arraylike(x) or (what == "inplace" and not isinstance(x, T.ArrayType)):
        raise TypeInferenceError(f"{name}() of {x!r} is not supported in compiled code", (x,), hint="pass an array")
    if x.ndim not in (1, 2):
        raise TypeInferenceError(f"{name}() of a {x.ndim}-d array is not supported in compiled code", (x,),
                                 hint="sort 1-d and 2-d arrays")
    if x.dtype.kind == "c":
        raise TypeInferenceError(f"{name}() of complex numbers is not supported in compiled code", (x,),
                                 hint="sort the real parts, or argsort by a real key")
    if what == "inplace" and x.readonly:
        raise ReadOnlyArrayError("a.sort() sorts in place: the array is read-only", (x,),
                                 hint="sort a copy: b = np.sort(a)")
    axis = given.get("axis", const(-1))
    if not (isinstance(axis, Const) and (axis.value is None or type(axis.value) is int)):
        raise TypeInferenceError(f"{name}(..., axis=...) must be a constant integer or None in compiled code",
                                 (widen(axis),), hint="write the axis as a literal (Numba asks the same)")
    if axis.value is not None and not -x.ndim <= axis.value < x.ndim:
        raise AxisError(f"axis {axis.value} is out of bounds for array of dimension {x.ndim}")
    impls = _IMPLS[what]
    if x.ndim == 1:
        impl = impls[0]
    elif axis.value is None:
        impl = impls[1]
        if impl is None:
            raise TypeInferenceError("a.sort(axis=None) is not NumPy's (a sorts in place along an axis)", (x,),
                                     hint="np.sort(a, axis=None) makes a sorted 1-d copy")
    else:
        impl = impls[2 + axis.value % 2]
    dt, stable = const(x.dtype), const(_stable(given))
    res = invoke_impl(interp, f"{name}()", impl, [x, dt, stable])

    def lower(cg, v, at, rt):
        flag = ir.Constant(ir.IntType(1), int(stable.value))  # a constant bool is still an argument
        value = cg.call_result(res, [v[0], None, flag], [at[0], dt, stable], rt)
        return returned(cg, value, rt) if what != "inplace" else value
    # in place: the type none, not the constant None (codegen emits no call of a constant result)
    return (res.restype if what != "inplace" else T.none), lower


def _method(args) -> str | None:
    """The sort a method call names (``a.sort()``: ``inplace``), or None."""
    if len(args) < 2 or not (is_arraylike(args[0]) and isinstance(args[1], Const)):
        return None
    return {"sort": "inplace", "argsort": "argsort"}.get(args[1].value)


def _function(fn) -> str | None:
    name = numpy_function(fn)
    return name if name in ("sort", "argsort") and fn is getattr(numpy(), name) else None


@base.handler
def _sort_call(interp, fn, args):
    """``np.sort(a)``, ``np.argsort(a, axis=0)``, ``a.sort()``, ``a.argsort(kind="stable")``."""
    if fn is K.call_kw:
        callee, names = args[0], args[1]
        if not (isinstance(callee, Const) and isinstance(names, Const)):
            return None
        what = _method(args[2:]) if callee.value is K.call_method else None
        if what is not None:
            rt, lower = _sorting(interp, what, f"a.{args[3].value}", [args[2], *args[4:]], names.value)
            return CallResult(rt, lambda cg, a, at, rt: lower(cg, [a[2], *a[4:]], [at[2], *at[4:]], rt))
        name = _function(callee.value)
        if name is None:
            return None
        rt, lower = _sorting(interp, name, f"np.{name}", list(args[2:]), names.value)
        return CallResult(rt, lambda cg, a, at, rt: lower(cg, a[2:], at[2:], rt))
    what = _method(args) if fn is K.call_method else None
    if what is not None:
        rt, lower = _sorting(interp, what, f"a.{args[1].value}", [args[0], *args[2:]], ())
        return CallResult(rt, lambda cg, a, at, rt: lower(cg, [a[0], *a[2:]], [at[0], *at[2:]], rt))
    name = _function(fn)
    if name is None:
        return None
    return CallResult(*_sorting(interp, name, f"np.{name}", list(args), ()))
