"""Dicts made in compiled code: ``{}``, ``{k: v}``, comprehensions, ``d[k] = v``, ``d[k]``,
``d.get(k, default)``, ``k in d``, ``len``, loops over keys, ``keys()``, ``values()``, ``items()``;
``pop``, ``popitem``, ``del d[k]``, ``clear``; returned to Python as a Python dict.

A dict maps numbers of one key type (bool, integer or float) to numbers of
one value type, as Numba's typed dicts do. An empty ``{}`` is typed by its
first item assignment in the function that made it (as an append types a
list: ``interp.list_items``). A missing key is CPython's ``KeyError``;
``d.get(k)`` without a default (it would return None) is refused. A removed
entry's followers keep their order (dictmem.py's ``remove``), and a loop
over a dict whose size changes is CPython's ``RuntimeError``. The memory
is a reference-counted hash table (dictmem.py). Python dicts passed as
arguments are converted and reflected at the call boundary (codegen/pyargs.py).
"""

from __future__ import annotations

from ...pristine import builtins  # as imported (pristine.py: the rules key on its functions)
import operator

from llvmlite import ir

from ... import types as T
from ...errors import TypeInferenceError
from ...frontend import intrinsics as K
from ...frontend.intrinsics import getitem_unchecked, setitem_unchecked
from ...interpreter.lattice import BOTTOM, Const, const, widen
from ...interpreter.rules import CallResult
from . import dictmem as D
from . import listimpl as M
from .lists import list_sum, made_in, untyped
from .numbers import base
from ..numpy.reductions import invoke_impl, returned

_I64 = ir.IntType(64)
_VIEWS = ("keys", "values", "items")


def _number(v, what: str, keys: bool = False) -> T.Scalar:
    t = widen(v)
    if not isinstance(t, T.Scalar) or (keys and t.kind == "c"):
        kinds = "bools, integers or floats" if keys else "numbers"
        raise TypeInferenceError(f"{what}: a compiled dict's {'keys' if keys else 'values'} are {kinds}, not {t!r}",
                                 (t,), hint="a compiled dict maps numbers to numbers (Numba's typed dict)")
    return t


def _fits(have: T.Scalar, v, what: str) -> T.Scalar:
    """``have`` after a check that ``v`` fits it without changing value (an int into a float dict)."""
    t = _number(v, what)
    if t != have and not (T.promote(have, t) == have and have.kind != "b"):
        raise TypeInferenceError(f"{what}: a dict of {have!r} cannot hold a {t!r} (compiled dicts hold one type)",
                                 (have, t), hint="convert the value: float(x), int(x)")
    return have


def _build(interp, args) -> CallResult:
    site, items = args[0].value, args[1:]
    if not items:
        typed = interp.list_items.get((interp.stack[-1], site)) if interp.stack else None
        t = T.DictType(*typed) if typed is not None else T.DictType(None, None, site)
        return CallResult(t, lambda cg, a, at, rt: D.new_dict(cg))
    keys = list(dict.fromkeys(_number(k, "{...}", True) for k in items[0::2]))
    values = list(dict.fromkeys(_number(v, "{...}") for v in items[1::2]))
    for kinds, what in ((keys, "keys"), (values, "values")):
        if len(kinds) > 1:
            raise TypeInferenceError(f"a dict with {what} of several types ({', '.join(map(repr, kinds))}): a "
                                     f"compiled dict holds {what} of one type", tuple(kinds),
                                     hint="convert them to one type: float(x), or write 1.0 for 1")
    kt, vt = keys[0], values[0]

    def lower(cg, a, at, rt):
        d = D.new_dict(cg)
        for k in range(1, len(a), 2):
            D.store(cg, d, _key(cg, T.DictType(kt, vt), a[k], at[k]), cg.cast(a[k + 1], widen(at[k + 1]), vt), kt, vt)
        return d
    return CallResult(T.DictType(kt, vt), lower)


def _setitem(interp, d, key, value) -> CallResult:
    t = widen(d)
    if t.key is None:
        frame = interp.stack[-1] if interp.stack else None
        if not made_in(frame, t.site, K.build_dict):
            raise TypeInferenceError("d[k] = v on an empty dict made in another function: its types are unknown here",
                                     (t,), hint="fill the dict in the function that makes it")
        kinds = (_number(key, "d[k] = v", True), _number(value, "d[k] = v"))
        seen = interp.list_items.setdefault((frame, t.site), kinds)
        if seen != kinds:
            raise TypeInferenceError(f"items {seen[0]!r}: {seen[1]!r} and {kinds[0]!r}: {kinds[1]!r} in one dict: a "
                                     "compiled dict holds one key type and one value type", (*seen, *kinds),
                                     hint="convert the keys and values to one type each")
        return CallResult(T.none, lambda *a: None)  # typed on the next round, lowered then
    kt, vt = _fits(t.key, key, "d[k] = v"), _fits(t.value, value, "d[k] = v")

    def lower(cg, a, at, rt):
        D.store(cg, a[0], _key(cg, T.DictType(kt, vt), a[1], at[1]), cg.cast(a[2], widen(at[2]), vt), kt, vt)
    return CallResult(T.none, lower)


def _key(cg, t: T.DictType, v, vt):
    """The key ``v`` (of type ``vt``, checked to fit: an int looks up a float key) at the dict's key type;
    a NaN is a ``ValueError`` (CPython finds a NaN key by identity, which compiled numbers do not have)."""
    k = cg.cast(v, widen(vt), t.key)
    if isinstance(t.key, T.Scalar) and t.key.kind == "f":
        cg.check_required(cg.b.fcmp_ordered("==", k, k), "ValueError", "a NaN dict key: CPython finds it by "
                          "identity (the same object), which compiled numbers do not have")
    return k


def _lookup(interp, d, key, default, has_default: bool) -> CallResult:
    t = widen(d)
    if t.key is None and has_default:  # nothing stored in it yet: the default (its type types the dict's values)
        return CallResult(widen(default), lambda cg, a, at, rt: cg.cast(a[2], widen(at[2]), rt))
    if t.key is None:
        return CallResult(BOTTOM, untyped)
    kt, vt = _fits(t.key, key, "d[k]"), t.value
    dt = _number(default, "d.get(k, default)") if has_default else vt
    out = vt if dt == vt else T.promote(vt, dt)

    def lower(cg, a, at, rt):
        k = _key(cg, t, a[1], at[1])
        found = D.Table(cg, a[0], kt, vt).find(k)
        there = cg.b.icmp_signed(">=", found, ir.Constant(_I64, 0))
        if not has_default:
            args = (k,) if kt.is_integer else ()
            cg.check_required(there, "KeyError", "%lld" if args else "key not in the dict", *args)
            return cg.load_scalar(D.Table(cg, a[0], kt, vt).value_at(found), vt)
        with cg.b.if_else(there) as (hit, miss):
            with hit:
                value = cg.cast(cg.load_scalar(D.Table(cg, a[0], kt, vt).value_at(found), vt), vt, out)
                hit_end = cg.b.block
            with miss:
                fallback = cg.cast(a[2], widen(at[2]), out)
                miss_end = cg.b.block
        phi = cg.b.phi(value.type)
        phi.add_incoming(value, hit_end)
        phi.add_incoming(fallback, miss_end)
        return phi
    return CallResult(out, lower)


def _pop(interp, d, key, default, has_default: bool, keep: bool) -> CallResult:
    """``d.pop(k)``, ``d.pop(k, default)``, and ``del d[k]`` (``keep``: no value)."""
    t = widen(d)
    if t.key is None and has_default:  # nothing stored in it yet: the default
        return CallResult(widen(default), lambda cg, a, at, rt: cg.cast(a[2], widen(at[2]), rt))
    if t.key is None:
        return CallResult(BOTTOM, untyped)
    what = "del d[k]" if not keep else "d.pop(k)"
    kt, vt = _fits(t.key, key, what), t.value
    out = T.none if not keep else vt
    if has_default:
        dt = _number(default, "d.pop(k, default)")
        out = vt if dt == vt else T.promote(vt, dt)

    def lower(cg, a, at, rt):
        k = _key(cg, t, a[1], at[1])
        found = D.Table(cg, a[0], kt, vt).find(k)
        there = cg.b.icmp_signed(">=", found, ir.Constant(_I64, 0))
        if not has_default:
            args = (k,) if kt.is_integer else ()
            cg.check_required(there, "KeyError", "%lld" if args else "key not in the dict", *args)
            value = cg.load_scalar(D.Table(cg, a[0], kt, vt).value_at(found), vt)
            D.remove(cg, a[0], found, kt, vt)
            return value if keep else None
        with cg.b.if_else(there) as (hit, miss):
            with hit:
                value = cg.cast(cg.load_scalar(D.Table(cg, a[0], kt, vt).value_at(found), vt), vt, out)
                D.remove(cg, a[0], found, kt, vt)
                hit_end = cg.b.block
            with miss:
                fallback = cg.cast(a[2], widen(at[2]), out)
                miss_end = cg.b.block
        phi = cg.b.phi(value.type)
        phi.add_incoming(value, hit_end)
        phi.add_incoming(fallback, miss_end)
        return phi
    return CallResult(out, lower)


def _popitem(interp, d) -> CallResult:
    """``d.popitem()``: the last entry, removed; CPython's KeyError when empty."""
    t = widen(d)
    if t.key is None:
        return CallResult(BOTTOM, untyped)
    kt, vt = t.key, t.value
    assert isinstance(kt, T.Scalar) and isinstance(vt, T.Scalar)

    def lower(cg, a, at, rt):
        n = D.length(cg, a[0])
        cg.check_required(cg.b.icmp_signed(">", n, ir.Constant(_I64, 0)), "KeyError",
                          "popitem(): dictionary is empty")
        last = cg.b.sub(n, ir.Constant(_I64, 1))
        table = D.Table(cg, a[0], kt, vt)
        key, value = cg.load_scalar(table.key_at(last), kt), cg.load_scalar(table.value_at(last), vt)
        D.remove(cg, a[0], last, kt, vt)
        pair = cg.b.insert_value(ir.Constant(ir.LiteralStructType([key.type, value.type]), ir.Undefined), key, 0)
        return cg.b.insert_value(pair, value, 1)
    return CallResult(T.TupleType((kt, vt)), lower)


def _impl(interp, what: str, impl, types: list, values) -> CallResult:
    """The call of the compiled Python ``impl`` (listimpl.py) on ``types``; ``values(a)``: its arguments."""
    res = invoke_impl(interp, what, impl, types)
    none = isinstance(res.restype, Const) and res.restype.value is None
    return CallResult(T.none if none else res.restype,
                      lambda cg, a, at, rt: returned(cg, cg.call_result(res, values(a), types, rt), rt))


def _copy(interp, d) -> CallResult:
    """``d.copy()``, ``dict(d)``: a new dict of the entries in their order."""
    t = widen(d)
    if t.key is None:
        return CallResult(BOTTOM, untyped)
    return _impl(interp, "dict(d)", M.dict_copy, [t], lambda a: [a[0]])


def _update(interp, d, other) -> CallResult:
    t, o = widen(d), widen(other)
    if not isinstance(o, T.DictType):
        raise TypeInferenceError(f"d.update() of {o!r}: compiled code updates a dict from a dict", (t, o),
                                 hint="set the items one by one: d[k] = v")
    if t.key is None or o.key is None:
        return CallResult(T.none, untyped)
    _fits(t.key, o.key, "d.update(other)")
    _fits(t.value, o.value, "d.update(other)")
    return _impl(interp, "d.update()", M.dict_update, [t, o], lambda a: [a[0], a[2]])


def _setdefault(interp, d, key, value) -> CallResult:
    t = widen(d)
    if t.key is None:
        return CallResult(BOTTOM, untyped)
    _fits(t.key, key, "d.setdefault(k, v)")
    _fits(t.value, value, "d.setdefault(k, v)")
    return _impl(interp, "d.setdefault()", M.dict_setdefault, [t, widen(key), widen(value)], lambda a: [a[0], *a[2:]])


def _clear(interp, d) -> CallResult:
    t = widen(d)
    if t.key is None:
        return CallResult(T.none, lambda *a: None)
    kt, vt = t.key, t.value
    assert isinstance(kt, T.Scalar) and isinstance(vt, T.Scalar)

    def lower(cg, a, at, rt):
        n = D.length(cg, a[0])
        D.loop(cg, ir.Constant(_I64, 0), n, lambda i: D.remove(cg, a[0], cg.b.sub(D.length(cg, a[0]),
                                                                                  ir.Constant(_I64, 1)), kt, vt))
    return CallResult(T.none, lower)


def _contains(interp, d, key) -> CallResult:
    t = widen(d)
    if t.key is None:
        return CallResult(T.boolean, lambda cg, a, at, rt: ir.Constant(ir.IntType(1), 0))
    _fits(t.key, key, "k in d")

    def lower(cg, a, at, rt):
        found = D.Table(cg, a[0], t.key, t.value).find(_key(cg, t, a[1], at[1]))
        return cg.b.icmp_signed(">=", found, ir.Constant(_I64, 0))
    return CallResult(T.boolean, lower)


def _item(interp, seq, index) -> CallResult:
    """The ``index``-th key (value, item) in insertion order: a loop's step over a dict or a view."""
    t = widen(seq)
    d, kind = (t, "keys") if isinstance(t, T.DictType) else (t.of, t.kind)
    if d.key is None:
        return CallResult(BOTTOM, untyped)
    kt, vt = d.key, d.value
    assert isinstance(kt, T.Scalar) and isinstance(vt, T.Scalar)
    out = {"keys": kt, "values": vt, "items": T.TupleType((kt, vt))}[kind]

    def lower(cg, a, at, rt):
        table = D.Table(cg, a[0], kt, vt)
        e = cg.cast(a[1], widen(at[1]), T.int64)
        key = lambda: cg.load_scalar(table.key_at(e), kt)  # noqa: E731
        value = lambda: cg.load_scalar(table.value_at(e), vt)  # noqa: E731
        if kind != "items":
            return key() if kind == "keys" else value()
        pair = cg.b.insert_value(ir.Constant(ir.LiteralStructType([key().type, value().type]), ir.Undefined), key(), 0)
        return cg.b.insert_value(pair, value(), 1)
    return CallResult(out, lower)


def _iter_len(interp, seq) -> CallResult:
    def lower(cg, a, at, rt):
        n = D.length(cg, a[0])
        cg.check_required(cg.b.icmp_signed("==", n, a[1]), "RuntimeError", "dictionary changed size during iteration")
        return n
    return CallResult(T.int64, lower)


def _sum(interp, seq, start) -> CallResult:
    """``sum(d)``, ``sum(d.values())``: the loop of lists.py's ``sum`` over the keys (values)."""
    t = widen(seq)
    if (t.of if isinstance(t, T.DictView) else t).key is None:
        return CallResult(T.int64 if start is None else widen(start), lambda cg, a, at, rt: cg.const(T.int64, 0)
                          if start is None else cg.cast(a[1], widen(at[1]), rt))
    first = start if start is not None else const(0)
    res = invoke_impl(interp, "sum()", list_sum, [t, first])

    def lower(cg, a, at, rt):
        s = a[1] if start is not None else cg.const(T.int64, 0)
        return cg.call_result(res, [a[0], s], [at[0], at[1] if start is not None else first], rt)
    return CallResult(res.restype, lower)


def _method(interp, args) -> CallResult | None:
    d, name, rest = args[0], args[1].value, args[2:]
    if name == "get":
        if len(rest) == 1:
            raise TypeInferenceError("d.get(k) without a default returns None for a missing key, which a compiled "
                                     "dict's value type cannot hold", (widen(d),), hint="give a default: d.get(k, 0.0)")
        if len(rest) != 2:
            return None
        res = _lookup(interp, d, rest[0], rest[1], True)  # lowered without the method's name
        return CallResult(res.restype, lambda cg, a, at, rt: cg.call_result(res, [a[0], *a[2:]], [at[0], *at[2:]], rt))
    if name in _VIEWS and not rest:
        return CallResult(T.DictView(widen(d), name), lambda cg, a, at, rt: a[0])
    if name == "pop" and len(rest) in (1, 2):
        res = _pop(interp, d, rest[0], rest[1] if len(rest) == 2 else None, len(rest) == 2, True)
        return CallResult(res.restype, lambda cg, a, at, rt: cg.call_result(res, [a[0], *a[2:]], [at[0], *at[2:]], rt))
    if name == "popitem" and not rest:
        return _popitem(interp, d)
    if name == "copy" and not rest:
        return _copy(interp, d)
    if name == "update" and len(rest) == 1:
        return _update(interp, d, rest[0])
    if name == "setdefault" and len(rest) == 2:
        return _setdefault(interp, d, rest[0], rest[1])
    if name == "clear" and not rest:
        return _clear(interp, d)
    return None


@base.handler
def _dicts(interp, fn, args):
    """Every call that makes or takes a compiled dict."""
    if fn is K.build_dict:
        return _build(interp, args)
    t = widen(args[0]) if args else None
    if fn is builtins.sum and isinstance(t, (T.DictType, T.DictView)) and len(args) in (1, 2):
        return _sum(interp, args[0], args[1] if len(args) == 2 else None)
    if isinstance(t, T.DictView):
        if fn is builtins.len and len(args) == 1:
            return CallResult(T.int64, lambda cg, a, at, rt: D.length(cg, a[0]))
        if fn is getitem_unchecked:
            return _item(interp, args[0], args[1])
        return _iter_len(interp, args[0]) if fn is K.iter_len else None
    if not isinstance(t, T.DictType):
        return None
    if fn is K.call_method and isinstance(args[1], Const) and isinstance(args[1].value, str):
        return _method(interp, args)
    if fn is builtins.len and len(args) == 1:
        return CallResult(T.int64, lambda cg, a, at, rt: D.length(cg, a[0]))
    if fn is builtins.dict and len(args) == 1:
        return _copy(interp, args[0])
    if fn in (operator.setitem, setitem_unchecked) and len(args) == 3:
        return _setitem(interp, args[0], args[1], args[2])
    if fn is operator.getitem and len(args) == 2:
        return _lookup(interp, args[0], args[1], None, False)
    if fn is operator.contains and len(args) == 2:
        return _contains(interp, args[0], args[1])
    if fn is operator.delitem and len(args) == 2:
        return _pop(interp, args[0], args[1], None, False, False)
    if fn is getitem_unchecked:
        return _item(interp, args[0], args[1])
    return _iter_len(interp, args[0]) if fn is K.iter_len else None
