"""``sorted(t)`` of a tuple of numbers and ``sorted(a)`` of a 1-d array, ``reverse=`` too (of a list:
python/lists.py's ``sort_call``).

Compiled code has no lists: ``sorted`` of a tuple is a tuple (its items of
one type, as CPython orders them: a stable sort by ``<``), of a 1-d array a
new 1-d array of its elements (Numba gives a list of them). With
``reverse=True`` the items are reversed, sorted and reversed again, as
CPython does (equal items keep their order). CPython's order of a sequence
holding a NaN depends on its algorithm (NaN compares false both ways): here
it is a ``ValueError`` at the line, never another order; ``np.sort`` puts
NaN last. ``key=`` is refused.
"""

from __future__ import annotations

from llvmlite import ir

from ....pristine import builtins  # as imported (pristine.py: the rules key on its functions)

from .... import types as T
from ....errors import TypeInferenceError
from ....frontend import intrinsics as K
from ....frontend.intrinsics import check, getitem_unchecked, setitem_unchecked
from ....interpreter.lattice import Const, const, widen
from ....interpreter.rules import CallResult
from ..npintrinsics import element, new_array
from .npsortimpl import merge_sort
from ...python.lists import sort_call
from ...python.numbers import base
from ..reductions import invoke_impl, returned

_NAN = "sorted() of values holding a NaN: CPython's order of them is its algorithm's, not reproduced here"
_LARGEST_TUPLE = 64
"""the longest tuple sorted by a network of compare-and-swaps (n * (n - 1) / 2 of them)"""


def sorted_array(x, dt, reverse):
    n = x.shape[0]
    out = new_array((n,), dt)
    for i in range(n):
        v = element(x, n - 1 - i) if reverse else element(x, i)
        check(v == v, "ValueError", _NAN)
        setitem_unchecked(out, i, v)
    merge_sort(out, new_array((n,), dt))
    if reverse:
        for i in range(n // 2):
            v = getitem_unchecked(out, i)
            setitem_unchecked(out, i, getitem_unchecked(out, n - 1 - i))
            setitem_unchecked(out, n - 1 - i, v)
    return out


def _less(cg, a, b, t: T.Scalar):
    if t.kind == "f":
        return cg.b.fcmp_ordered("<", a, b)
    return (cg.b.icmp_signed if t.kind == "i" else cg.b.icmp_unsigned)("<", a, b)


def _sorted_tuple(t: T.TupleType, reverse: bool) -> CallResult:
    kinds = {widen(i) for i in t.items}
    item = next(iter(kinds)) if len(kinds) == 1 else None
    if not isinstance(item, T.Scalar) or item.kind == "c":
        raise TypeInferenceError(f"sorted() of {t!r} is not supported in compiled code", (t,),
                                 hint="sort a tuple of numbers of one type (complex numbers have no order)")
    n = len(t.items)
    if n > _LARGEST_TUPLE:
        raise TypeInferenceError(f"sorted() of a tuple of {n} items is not supported in compiled code", (t,),
                                 hint="sort an array: sorted(np.array(...)) or np.sort")

    def lower(cg, a, at, rt):
        b = cg.b
        values = [b.extract_value(a[0], k) for k in range(n)]
        if reverse:
            values.reverse()
        if item.kind == "f":
            ok = ir.Constant(ir.IntType(1), 1)
            for v in values:
                ok = b.and_(ok, b.fcmp_ordered("==", v, v))
            cg.check_statement(ok, "ValueError", _NAN)
        for i in range(1, n):  # insertion by compare-and-swap: stable (a swap only where strictly less)
            for j in range(i, 0, -1):
                swap = _less(cg, values[j], values[j - 1], item)
                values[j - 1], values[j] = (b.select(swap, values[j], values[j - 1]),
                                            b.select(swap, values[j - 1], values[j]))
        if reverse:
            values.reverse()
        out = ir.Constant(cg.ll(rt), ir.Undefined)
        for k, v in enumerate(values):
            out = b.insert_value(out, v, k)
        return out
    return CallResult(t, lower)


def _sorted(interp, x, kw: dict) -> CallResult:
    unknown = set(kw) - {"reverse"}
    if unknown:
        raise TypeInferenceError(f"sorted() keyword argument {sorted(unknown)[0]!r} is not supported in compiled "
                                 "code", hint="sort by a key with np.argsort(keys) and index with the result")
    flag = kw.get("reverse", const(False))
    if not (isinstance(flag, Const) and isinstance(flag.value, (bool, int))):
        raise TypeInferenceError("sorted(..., reverse=...) must be a constant True or False in compiled code",
                                 (widen(flag),))
    reverse = bool(flag.value)
    t = widen(x)
    if isinstance(t, T.TupleType):
        return _sorted_tuple(t, reverse)
    if isinstance(t, T.ListType):  # a new list (python/lists.py)
        return sort_call(interp, x, flag, True)
    if not (isinstance(t, (T.ArrayType, T.ArrayExpr)) and t.ndim == 1) or t.dtype.kind == "c":
        raise TypeInferenceError(f"sorted() of {t!r} is not supported in compiled code", (t,),
                                 hint="sort a tuple of numbers or a 1-d real array (rows of a 2-d array "
                                 "compare as arrays: np.sort(a, axis=0) sorts columns)")
    dt, rev = const(t.dtype), const(reverse)
    res = invoke_impl(interp, "sorted()", sorted_array, [t, dt, rev])

    def lower(cg, a, at, rt):
        flag = ir.Constant(ir.IntType(1), int(reverse))  # a constant bool is still an argument
        return returned(cg, cg.call_result(res, [a[0], None, flag], [at[0], dt, rev], rt), rt)
    return CallResult(res.restype, lower)


@base.handler
def _sorted_call(interp, fn, args):
    """``sorted(t)``, ``sorted(a, reverse=True)``."""
    if fn is builtins.sorted and len(args) == 1:
        return _sorted(interp, args[0], {})
    if fn is K.call_kw and isinstance(args[0], Const) and args[0].value is builtins.sorted:
        names = args[1].value
        positional = args[2:len(args) - len(names)]
        if len(positional) != 1:
            return None
        res = _sorted(interp, positional[0], dict(zip(names, args[len(args) - len(names):])))
        return CallResult(res.restype, lambda cg, a, at, rt: cg.call_result(res, a[2:3], at[2:3], rt))
    return None
