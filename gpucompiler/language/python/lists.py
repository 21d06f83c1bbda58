"""Lists made in compiled code: ``[]``, ``[a, b]``, comprehensions, ``append``, ``pop``, ``len``,
indexing, iteration, ``sum``; returned to Python as a Python list.

A list holds numbers of one type, as Numba's typed lists do: ``[1, 2.0]``
is a ``TypeInferenceError`` naming both types, and an append converts only
where no value changes (an int into a list of floats). An empty list ``[]``
has no item type until its first ``append`` in the function that made it:
the append records the type for the list's site (``interp.list_items``)
and inference runs again with the list typed. The memory is a
reference-counted block (listmem.py), freed with the last reference.
Indexing is checked always (``IndexError: list index out of range``, as
CPython); a loop over a list reads its length once, so a list that shrinks
inside a loop over it is an ``IndexError`` where CPython stops early.
Python lists passed as arguments are converted and reflected at the call boundary
(codegen/pyargs.py).
"""

from __future__ import annotations

from ...pristine import builtins  # as imported (pristine.py: the rules key on its functions)
import operator

from llvmlite import ir

from ... import types as T
from ...errors import TypeInferenceError
from ...frontend import intrinsics as K
from ...frontend.intrinsics import check, getitem_unchecked, setitem_unchecked
from ...frontend.ir import Const as IRConst
from ...interpreter.lattice import BOTTOM, Const, const, widen
from ...interpreter.rules import CallResult
from . import listimpl as M
from . import listmem as L
from ..numpy.npdtypes import numpy_function
from ..numpy.npintrinsics import new_array
from .numbers import base
from ..numpy.reductions import invoke_impl, returned
from ..numpy.views import slice_indices

_HINT = "a compiled list holds numbers of one type (Numba's typed list); use a tuple or a NumPy array for others"


def list_sum(lst, start):
    s = start
    for i in range(len(lst)):
        s = s + getitem_unchecked(lst, i)
    return s


_NAN = ("x in a list or tuple with x a NaN: CPython finds it by identity (the same object), which compiled "
        "numbers do not have")


def list_contains(lst, x):
    check(x == x, "ValueError", _NAN)
    return array_contains(lst, x)


def array_contains(lst, x):
    for i in range(len(lst)):  # noqa: SIM110  (compiled: a loop that stops at the first match)
        if getitem_unchecked(lst, i) == x:
            return True
    return False


def list_to_array(lst, dt):
    n = len(lst)
    out = new_array((n,), dt)
    for i in range(n):
        setitem_unchecked(out, i, getitem_unchecked(lst, i))
    return out


def _item(t, what: str) -> T.Scalar:
    """The item type of a list ``what`` holds, or a TypeInferenceError naming it."""
    t = widen(t)
    if not isinstance(t, T.Scalar):
        raise TypeInferenceError(f"{what}: a compiled list holds numbers, not {t!r}", (t,), hint=_HINT)
    return t


def _build(interp, args) -> CallResult:
    site, items = args[0].value, args[1:]
    if not items:
        typed = interp.list_items.get((interp.stack[-1], site)) if interp.stack else None
        t = T.ListType(typed) if typed is not None else T.ListType(None, site)
        return CallResult(t, lambda cg, a, at, rt: L.new_list(cg, None, 0))
    kinds = list(dict.fromkeys(_item(i, "[...]") for i in items))
    if len(kinds) > 1:
        raise TypeInferenceError(f"a list of items of several types ({', '.join(map(repr, kinds))}): a compiled "
                                 "list holds items of one type", tuple(kinds),
                                 hint="convert the items to one type: float(x), or write 1.0 for 1")
    item = kinds[0]

    def lower(cg, a, at, rt):
        lst = L.new_list(cg, item, len(items))
        for k, (v, vt) in enumerate(zip(a[1:], at[1:])):
            cg.store_scalar(cg.cast(v, widen(vt), item), L.item_pointer(cg, lst, ir.Constant(ir.IntType(64), k),
                                                                        item), item)
        return lst
    return CallResult(T.ListType(item), lower)


def _stored(t: T.ListType, x) -> T.Scalar:
    """The item type of ``t`` after a check that ``x`` fits it without changing value."""
    item, xt = t.item, _item(x, "append()")
    assert isinstance(item, T.Scalar)
    if xt != item and not (T.promote(item, xt) == item and item.kind != "b"):
        raise TypeInferenceError(f"a list of {item!r} cannot hold a {xt!r} (compiled lists hold items of one "
                                 "type)", (item, xt), hint="convert the value, or make the list of the wider "
                                 "type: [float(v) for v in ...]")
    return item


def _type_empty(interp, t: T.ListType, x) -> None:
    """Record the first append's item type of an empty list made in this function."""
    frame = interp.stack[-1] if interp.stack else None
    if not made_in(frame, t.site, K.build_list):
        raise TypeInferenceError("append() to an empty list made in another function: its item type is unknown "
                                 "here", (t,), hint="append in the function that makes the list, or make it "
                                 "with an item ([0.0] then pop()) so that it has a type")
    xt = _item(x, "append()")
    seen = interp.list_items.setdefault((frame, t.site), xt)
    if seen != xt:
        raise TypeInferenceError(f"appends of {seen!r} and {xt!r} to one list: a compiled list holds items of one "
                                 "type", (seen, xt), hint="convert the values to one type: float(x)")


def made_in(frame, site, maker) -> bool:
    """Whether ``frame``'s function makes an empty list or dict (``maker``: its intrinsic) at ``site``."""
    return frame is not None and any(
        isinstance(inst.fn, IRConst) and inst.fn.value is maker and isinstance(inst.args[0], IRConst)
        and inst.args[0].value == site for bl in frame.ir.blocks for inst in bl.insts)


def _append(interp, lst, x) -> CallResult:
    t = widen(lst)
    if t.item is None:
        _type_empty(interp, t, x)
        return CallResult(T.none, lambda *a: None)  # typed on the next round, lowered then
    item = _stored(t, x)

    def lower(cg, a, at, rt):
        L.append(cg, a[0], cg.cast(a[2], widen(at[2]), item), item)
    return CallResult(T.none, lower)


def _pop(interp, lst, rest) -> CallResult:
    t = widen(lst)
    if len(rest) > 1 or (rest and not _integer(rest[0])):
        raise TypeInferenceError(f"pop() takes one integer index at most, got {', '.join(repr(widen(r)) for r in rest)}",
                                 tuple(widen(r) for r in rest))
    if t.item is None:
        return CallResult(BOTTOM, untyped)
    item = t.item

    def lower(cg, a, at, rt):
        if len(a) > 2 and cg.mod.error_slot:  # the items' shift: its derivatives are wrong today
            raise TypeInferenceError("pop(i) of a list in code that is differentiated: the derivatives through "
                                     "the items it moves are not supported", (t,), cg.frame.where(cg.inst),
                                     cg.frame.ir.name, "pop() the last item, or build a new list without item i")
        if len(a) > 2:
            index = L.checked_index(cg, a[0], cg.cast(a[2], widen(at[2]), T.int64), "pop index out of range")
        else:
            n = L.length(cg, a[0])
            cg.check_required(cg.b.icmp_signed(">", n, ir.Constant(n.type, 0)), "IndexError", "pop from empty list")
            index = cg.b.sub(n, ir.Constant(n.type, 1))
        return L.pop(cg, a[0], index, item)
    return CallResult(item, lower)


def untyped(cg, a, at, rt):
    """The lowering of a read of a list or dict that stayed empty and untyped: a typed error at the line."""
    raise TypeInferenceError("the items of this empty list or dict have no type: nothing is added to it",
                             hint="append to the list (set an item of the dict) before reading it, or make it "
                             "with an item",
                             loc=cg.frame.where(cg.inst), function=cg.frame.ir.name)


def _integer(v) -> bool:
    t = widen(v)
    return isinstance(t, T.Scalar) and t.is_integer


def _impl(interp, what: str, impl, types: list, values) -> CallResult:
    """The call of the compiled Python ``impl`` (listimpl.py) on ``types``; ``values(cg, a, at)`` gives its
    run-time arguments."""
    res = invoke_impl(interp, what, impl, types)
    none = isinstance(res.restype, Const) and res.restype.value is None
    return CallResult(T.none if none else res.restype,
                      lambda cg, a, at, rt: returned(cg, cg.call_result(res, values(cg, a, at), types, rt), rt))


def _sliced(impl, what: str):
    """A rule calling ``impl(lst, start, step, count, *rest)`` for ``lst[slice]`` (and a value to assign)."""
    def rule(interp, lst, index, *rest) -> CallResult:
        t = widen(lst)
        if t.item is None:
            return CallResult(BOTTOM, untyped)
        if rest:
            _items_fit(t, rest[0], what)

        def values(cg, a, at):
            start, step, count = slice_indices(cg, a[1], widen(at[1]), L.length(cg, a[0]))
            return [a[0], start, step, count, *a[2:]]
        return _impl(interp, what, impl, [t, T.int64, T.int64, T.int64, *map(widen, rest)], values)
    return rule


def _item_of(seq) -> T.Type | None:
    """The item type of a list, a 1-d array or a tuple of numbers of one type (what a list can take the items
    of), else None."""
    t = widen(seq)
    if isinstance(t, T.ListType):
        return t.item
    if isinstance(t, T.ArrayType) and t.ndim == 1:
        return t.dtype
    if isinstance(t, T.TupleType) and _walkable(t):
        return widen(t.items[0])
    return None


def _items_fit(t: T.ListType, seq, what: str) -> None:
    """Check that the items of ``seq`` go into ``t`` unchanged (an int into a list of floats)."""
    item = _item_of(seq)
    if item is None:
        raise TypeInferenceError(f"{what} of {widen(seq)!r}: a compiled list takes the items of a list, a 1-d array "
                                 "or a tuple of numbers of one type", (t, widen(seq)))
    _stored(t, item)


def _getitem(interp, lst, index) -> CallResult:
    t = widen(lst)
    if isinstance(widen(index), T.SliceType):
        return _sliced(M.list_slice, "xs[a:b:c]")(interp, lst, index)
    if not _integer(index):
        raise TypeInferenceError(f"a list index must be an integer or a slice, got {widen(index)!r}",
                                 (widen(index),), hint="index one item at a time")
    if t.item is None:
        return CallResult(BOTTOM, untyped)
    item = t.item

    def lower(cg, a, at, rt):
        at_ = L.checked_index(cg, a[0], cg.cast(a[1], widen(at[1]), T.int64))
        return cg.load_scalar(L.item_pointer(cg, a[0], at_, item), item)
    return CallResult(item, lower)


def _setitem(interp, lst, index, value) -> CallResult:
    t = widen(lst)
    if isinstance(widen(index), T.SliceType):
        return _sliced(M.list_setslice, "xs[a:b:c] = ys")(interp, lst, index, value)
    if not _integer(index):
        raise TypeInferenceError(f"a list index must be an integer, got {widen(index)!r}", (widen(index),))
    if t.item is None:  # typed by a later append (inference runs again), else an error when lowered
        return CallResult(T.none, untyped)
    item = _stored(t, value)

    def lower(cg, a, at, rt):
        at_ = L.checked_index(cg, a[0], cg.cast(a[1], widen(at[1]), T.int64), "list assignment index out of range")
        cg.store_scalar(cg.cast(a[2], widen(at[2]), item), L.item_pointer(cg, a[0], at_, item), item)
    return CallResult(T.none, lower)


def _array(interp, lst) -> CallResult:
    """``np.array(l)``: a new 1-d array of the list's items (NumPy's dtype of Python numbers: bool, int64,
    float64, complex128)."""
    t = widen(lst)
    if t.item is None:
        return CallResult(BOTTOM, untyped)
    dt = const(t.item)
    res = invoke_impl(interp, "np.array(list)", list_to_array, [t, dt])
    return CallResult(res.restype, lambda cg, a, at, rt: returned(cg, cg.call_result(res, [a[0], None], [at[0], dt],
                                                                                      rt), rt))


def _sum(interp, lst, start) -> CallResult:
    t = widen(lst)
    if t.item is None:
        return CallResult(BOTTOM, untyped)
    first = start if start is not None else const(0)
    res = invoke_impl(interp, "sum()", list_sum, [t, first])

    def lower(cg, a, at, rt):
        s = a[1] if start is not None else cg.const(T.int64, 0)
        return returned(cg, cg.call_result(res, [a[0], s], [at[0], at[1] if start is not None else first], rt), rt)
    return CallResult(res.restype, lower)


def _delitem(interp, lst, index) -> CallResult:
    """``del xs[i]`` (CPython's IndexError out of range), ``del xs[a:b:c]``."""
    t = widen(lst)
    if isinstance(widen(index), T.SliceType):
        return _sliced(M.list_delslice, "del xs[a:b:c]")(interp, lst, index)
    if not _integer(index):
        raise TypeInferenceError(f"a list index must be an integer or a slice, got {widen(index)!r}", (widen(index),))
    if t.item is None:
        return CallResult(T.none, untyped)
    item = t.item

    def lower(cg, a, at, rt):
        if cg.mod.error_slot:  # the items' shift, as pop(i)
            raise TypeInferenceError("del xs[i] of a list in code that is differentiated: the derivatives through "
                                     "the items it moves are not supported", (t,), cg.frame.where(cg.inst),
                                     cg.frame.ir.name, "build a new list without item i")
        L.pop(cg, a[0], L.checked_index(cg, a[0], cg.cast(a[1], widen(at[1]), T.int64),
                                        "list assignment index out of range"), item)
    return CallResult(T.none, lower)


def _with_items(impl, what: str):
    """A method rule ``xs.name(ys)`` calling ``impl(xs, ys)`` after checking that ``ys``'s items fit."""
    def rule(interp, args) -> CallResult | None:
        if len(args) != 3:
            return None
        t = widen(args[0])
        if t.item is None:
            return CallResult(T.none, untyped)
        _items_fit(t, args[2], what)
        chosen = M.list_extend_iter if isinstance(widen(args[2]), T.TupleType) else impl
        return _impl(interp, what, chosen, [t, widen(args[2])], lambda cg, a, at: [a[0], a[2]])
    return rule


def _method(impl, what: str, nargs: int, value: bool = False):
    """A method rule ``xs.name(*rest)`` calling ``impl(xs, *rest)`` (``rest``: ``nargs`` arguments; with
    ``value``, the last a value the list must hold)."""
    def rule(interp, args) -> CallResult | None:
        if len(args) != 2 + nargs:
            return None
        t, rest = widen(args[0]), list(args[2:])
        if t.item is None:
            return CallResult(BOTTOM, untyped)
        if value:
            _stored(t, rest[-1])
        if what == "insert()" and not _integer(rest[0]):
            raise TypeInferenceError(f"insert()'s index must be an integer, not {widen(rest[0])!r}", (widen(rest[0]),))
        return _impl(interp, what, impl, [t, *map(widen, rest)], lambda cg, a, at: [a[0], *a[2:]])
    return rule


def _ordered(t: T.ListType, what: str) -> T.Scalar:
    item = t.item
    assert isinstance(item, T.Scalar)
    if item.kind == "c":
        raise TypeInferenceError(f"{what} of {t!r}: complex numbers have no order", (t,))
    return item


def sort_call(interp, lst, flag, new: bool) -> CallResult:
    """``xs.sort(reverse=flag)`` (``new``: ``sorted(xs, reverse=flag)``, a new list)."""
    t = widen(lst)
    if t.item is None:
        return CallResult(BOTTOM if new else T.none, untyped)
    if not (isinstance(flag, Const) and isinstance(flag.value, (bool, int))):
        raise TypeInferenceError("sort(reverse=...) must be a constant True or False in compiled code",
                                 (widen(flag),))
    dt, rev = const(_ordered(t, "sorting")), const(bool(flag.value))
    res = invoke_impl(interp, "sorted()" if new else "sort()", M.list_sorted if new else M.list_sort, [t, dt, rev])
    none = isinstance(res.restype, Const) and res.restype.value is None

    def lower(cg, a, at, rt):
        on = ir.Constant(ir.IntType(1), int(bool(flag.value)))  # a constant bool is still an argument
        return returned(cg, cg.call_result(res, [a[0], None, on], [t, dt, rev], rt), rt)
    return CallResult(T.none if none else res.restype, lower)


def _sort_method(interp, args) -> CallResult | None:
    return sort_call(interp, args[0], const(False), False) if len(args) == 2 else None


_METHODS = {"append": lambda interp, a: _append(interp, a[0], a[2]) if len(a) == 3 else None,
            "sort": _sort_method,
            "pop": lambda interp, a: _pop(interp, a[0], a[2:]),
            "extend": _with_items(M.list_extend, "extend()"),
            "insert": _method(M.list_insert, "insert()", 2, value=True),
            "reverse": _method(M.list_reverse, "reverse()", 0),
            "index": lambda interp, a: _method({3: M.list_index, 4: M.list_index_start, 5: M.list_index_from}.get(
                len(a), M.list_index), "index()", len(a) - 2)(interp, a) if len(a) in (3, 4, 5) else None,
            "remove": _method(M.list_remove, "remove()", 1),
            "count": _method(M.list_count, "count()", 1),
            "copy": _method(M.list_copy, "copy()", 0),
            "clear": _method(M.list_clear, "clear()", 0)}


def _concat(interp, a, b) -> CallResult:
    """``xs + ys`` of two lists of one item type: a new list."""
    ta, tb = widen(a), widen(b)
    if ta.item is None or tb.item is None:
        return CallResult(BOTTOM, untyped)
    if ta.item != tb.item:
        raise TypeInferenceError(f"{ta!r} + {tb!r}: a compiled list holds items of one type", (ta, tb),
                                 hint="convert the items of one list: [float(x) for x in ys]")
    return _impl(interp, "xs + ys", M.list_concat, [ta, tb], lambda cg, v, at: list(v))


def _repeat(interp, lst, k, first: bool) -> CallResult:
    """``xs * k`` and ``k * xs``: a new list."""
    t = widen(lst)
    if t.item is None:
        return CallResult(BOTTOM, untyped)
    return _impl(interp, "xs * k", M.list_repeat, [t, widen(k)],
                 lambda cg, v, at: [v[0], v[1]] if first else [v[1], v[0]])


#: builtins of one list -> (implementation, what)
_BUILTINS = {builtins.min: (M.list_min, "min()"), builtins.max: (M.list_max, "max()"),
             builtins.any: (M.list_any, "any()"), builtins.all: (M.list_all, "all()"),
             builtins.list: (M.list_copy, "list()")}


def _builtin(interp, fn, lst) -> CallResult:
    impl, what = _BUILTINS[fn]
    t = widen(lst)
    if t.item is None:
        return CallResult(BOTTOM, untyped)
    if fn in (builtins.min, builtins.max):
        _ordered(t, what)
    return _impl(interp, what, impl, [t], lambda cg, v, at: [v[0]])


def _equal(interp, fn, a, b) -> CallResult:
    ta, tb = widen(a), widen(b)
    if ta.item is None or tb.item is None:
        return CallResult(BOTTOM, untyped)
    impl = M.list_equal if fn is operator.eq else M.list_not_equal
    return _impl(interp, "xs == ys", impl, [ta, tb], lambda cg, v, at: list(v))


def _sort_keywords(interp, args) -> CallResult | None:
    """``xs.sort(reverse=...)``: the keyword call of the method."""
    names = args[1].value
    if len(args) != 4 + len(names) or tuple(names) != ("reverse",):
        raise TypeInferenceError("sort() takes only reverse= in compiled code (key= is not supported)",
                                 hint="sort by a key with np.argsort(keys) and index with the result")
    res = sort_call(interp, args[2], args[4], False)
    return CallResult(res.restype, lambda cg, a, at, rt: cg.call_result(res, a[2:3], at[2:3], rt))


def _inplace(interp, old, new) -> CallResult:
    """``xs += ys``, ``xs *= k``: the list ``xs`` itself takes the result, as CPython extends it in place."""
    t = widen(old)
    if t.item is None:
        return CallResult(BOTTOM, untyped)
    _stored(t, widen(new).item)
    return _impl(interp, "xs += ys", M.list_assign, [t, widen(new)], lambda cg, v, at: list(v))


def _walkable(seq) -> bool:
    """A 1-d array or a tuple of numbers of one type: ``x in seq`` is the loop of :func:`list_contains`."""
    t = widen(seq)
    if isinstance(t, T.ArrayType):
        return t.ndim == 1
    return isinstance(t, T.TupleType) and len({widen(i) for i in t.items}) == 1 and isinstance(widen(t.items[0]), T.Scalar)


def _contains(interp, seq, x) -> CallResult:
    """``x in seq`` (any item ``== x``, as CPython and NumPy compare) of a list, a 1-d array or a tuple."""
    _item(x, "x in sequence")
    impl = array_contains if isinstance(widen(seq), T.ArrayType) else list_contains  # NumPy compares by ==
    res = invoke_impl(interp, "x in sequence", impl, [widen(seq), x])
    return CallResult(res.restype, lambda cg, a, at, rt: cg.call_result(res, a, at, rt))


def _iter_len(interp, seq) -> CallResult | None:
    """``iter_len(seq, first)``: a list's length now; of anything else but a dict (dicts.py), its ``len``."""
    t = widen(seq)
    if isinstance(t, T.ListType):
        return CallResult(T.int64, lambda cg, a, at, rt: L.length(cg, a[0]))
    if isinstance(t, (T.DictType, T.DictView)):
        return None
    res = interp.abstract_call(builtins.len, [seq])
    if res is None:
        raise TypeInferenceError(f"no implementation of len({t!r}): a for loop walks arrays, tuples, lists and "
                                 "dicts", (t,))
    if isinstance(res.restype, Const):
        return CallResult(res.restype, lambda *a: None)
    return CallResult(res.restype, lambda cg, a, at, rt: cg.call_result(res, a[:1], at[:1], rt))


@base.handler
def _lists(interp, fn, args):
    """Every call that makes or takes a compiled list."""
    if fn is K.build_list:
        return _build(interp, args)
    if fn is K.call_kw and len(args) > 3 and isinstance(args[0], Const) and args[0].value is K.call_method \
            and isinstance(widen(args[2]), T.ListType) and isinstance(args[3], Const) and args[3].value == "sort":
        return _sort_keywords(interp, args)
    if fn is K.iter_len:
        return _iter_len(interp, args[0])
    if fn is operator.contains and len(args) == 2 and _walkable(args[0]):
        return _contains(interp, args[0], args[1])
    if fn in (builtins.bool, operator.not_) and len(args) == 1 and isinstance(widen(args[0]), (T.ListType,
                                                                                               T.DictType)):
        empty = "==" if fn is operator.not_ else "!="  # a list's or dict's length is its block's third word
        return CallResult(T.boolean, lambda cg, a, at, rt: cg.b.icmp_signed(empty, L.length(cg, a[0]),
                                                                             ir.Constant(ir.IntType(64), 0)))
    if fn in (operator.is_, operator.is_not) and len(args) == 2 and all(
            isinstance(widen(v), (T.ListType, T.DictType)) for v in args):  # the same block: the same object
        same = "==" if fn is operator.is_ else "!="
        return CallResult(T.boolean, lambda cg, a, at, rt: cg.b.icmp_unsigned(same, a[0], a[1]))
    if fn is operator.mul and len(args) == 2 and isinstance(widen(args[1]), T.ListType) and _integer(args[0]):
        return _repeat(interp, args[1], args[0], False)
    if not args or not isinstance(widen(args[0]), T.ListType):
        return None
    if fn is K.inplace and len(args) == 2 and isinstance(widen(args[1]), T.ListType):
        return _inplace(interp, args[0], args[1])
    if fn is operator.add and len(args) == 2 and isinstance(widen(args[1]), T.ListType):
        return _concat(interp, args[0], args[1])
    if fn is operator.mul and len(args) == 2 and _integer(args[1]):
        return _repeat(interp, args[0], args[1], True)
    if fn is operator.delitem and len(args) == 2:
        return _delitem(interp, args[0], args[1])
    if fn in _BUILTINS and len(args) == 1:
        return _builtin(interp, fn, args[0])
    if fn in (operator.eq, operator.ne) and len(args) == 2 and isinstance(widen(args[1]), T.ListType):
        return _equal(interp, fn, args[0], args[1])
    if fn is K.call_method and isinstance(args[1], Const) and args[1].value in _METHODS:
        return _METHODS[args[1].value](interp, args)
    if fn is builtins.len and len(args) == 1:
        return CallResult(T.int64, lambda cg, a, at, rt: L.length(cg, a[0]))
    if fn is builtins.getattr and len(args) == 2 and isinstance(args[1], Const):
        raise TypeInferenceError(f"a list has no attribute {args[1].value!r}", (widen(args[0]),),
                                 hint="a Python list passed in is a list in compiled code too: use len(xs) and "
                                 "xs[i], or pass np.asarray(xs) for an array")
    if fn in (operator.getitem, getitem_unchecked) and len(args) == 2:
        return _getitem(interp, args[0], args[1])
    if fn in (operator.setitem, setitem_unchecked) and len(args) == 3:
        return _setitem(interp, args[0], args[1], args[2])
    if numpy_function(fn) in ("array", "asarray") and len(args) == 1:
        return _array(interp, args[0])
    if fn is operator.contains and len(args) == 2:
        if widen(args[0]).item is None:
            return CallResult(T.boolean, lambda cg, a, at, rt: ir.Constant(ir.IntType(1), 0))
        return _contains(interp, args[0], args[1])
    if fn is builtins.sum and len(args) in (1, 2):
        return _sum(interp, args[0], args[1] if len(args) == 2 else None)
    return None
