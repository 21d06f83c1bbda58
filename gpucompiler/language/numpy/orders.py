"""The memory order of new arrays: NumPy's ``order=`` of the constructors and of the ``*_like`` forms.

``zeros``/``empty``/``ones``/``full`` take ``"C"`` or ``"F"``; ``*_like``
and ``np.copy`` take ``"K"`` (their default), ``"A"``, ``"C"`` or ``"F"``
and follow the prototype as NumPy does (``PyArray_NewLikeArray``): ``K``
gives C order to a C-contiguous prototype (and to any of one dimension),
F order to an F-contiguous one, and otherwise strides in the order of the
prototype's absolute strides, largest first (ties in axis order), packed
and positive; ``A`` gives F order to a prototype that is F- but not
C-contiguous. Contiguity is NumPy's: extents of 1 are ignored and an array
of no elements is both. The elements are always one packed block, so only
the strides differ: a result whose order is known only at run time has
layout ``"A"``.
"""

from __future__ import annotations

import enum

from llvmlite import ir

from ... import types as T
from ...errors import TypeInferenceError
from ...interpreter.lattice import Const, widen
from .arraymem import c_strides

_I64 = ir.IntType(64)


class Order(enum.Enum):
    """NumPy's ``order=`` argument."""

    C = "C"
    F = "F"
    A = "A"
    K = "K"


PLAIN = (Order.C, Order.F)
"""the orders of the constructors taking a shape"""
LIKE = (Order.K, Order.A, Order.C, Order.F)
"""the orders of the ``*_like`` constructors and ``np.copy`` (``K`` the default)"""


def order_of(name: str, value, allowed: tuple[Order, ...]) -> Order:
    """The order a constructor's ``order=`` argument names (None: the first of ``allowed``)."""
    if value is None or (isinstance(value, Const) and value.value is None):
        return allowed[0]
    text = value.value if isinstance(value, Const) and isinstance(value.value, str) else None
    names = [o.value for o in allowed]
    if text is None or text.upper() not in names:
        shown = repr(text) if text is not None else f"a value of type {widen(value)!r}"
        raise TypeInferenceError(f"np.{name}(): order={shown} is not supported: pass one of "
                                 + ", ".join(map(repr, names)) + " (a constant string)")
    return Order(text.upper())


def layout(order: Order, ndim: int, like: T.ArrayType | None = None) -> str:
    """The layout of a new array of ``ndim`` dimensions in ``order`` (prototype ``like``)."""
    if ndim <= 1 or order is Order.C or (order in (Order.K, Order.A) and like is not None and like.layout == "C"):
        return "C"
    return "A"


def _f_strides(cg, shape, itemsize: int) -> list:
    acc, strides = ir.Constant(_I64, itemsize), []
    for extent in shape:
        strides.append(acc)
        acc = cg.b.mul(acc, extent)
    return strides


def contiguous(cg, shape, strides, itemsize: int, fortran: bool):
    """Whether the strides are NumPy's C- (or F-) contiguous ones for ``shape`` (an ``i1``)."""
    b = cg.b
    ok, empty = ir.Constant(ir.IntType(1), 1), ir.Constant(ir.IntType(1), 0)
    expected = ir.Constant(_I64, itemsize)
    axes = range(len(shape)) if fortran else reversed(range(len(shape)))
    for k in axes:
        n = shape[k]
        empty = b.or_(empty, b.icmp_signed("==", n, ir.Constant(_I64, 0)))
        ok = b.and_(ok, b.or_(b.icmp_signed("==", n, ir.Constant(_I64, 1)), b.icmp_signed("==", strides[k], expected)))
        expected = b.mul(expected, n)
    return b.or_(ok, empty)


def _kept_strides(cg, shape, strides, itemsize: int) -> list:
    """Packed strides in the order of ``strides``' absolute values, largest first, ties in axis order."""
    b = cg.b
    size = [b.select(b.icmp_signed("<", s, ir.Constant(_I64, 0)), b.neg(s), s) for s in strides]
    out = []
    for i in range(len(shape)):
        stride = ir.Constant(_I64, itemsize)
        for j in range(len(shape)):  # the axes that come after i: smaller strides, or equal and later
            if j == i:
                continue
            after = b.icmp_signed("<", size[j], size[i])
            if j > i:
                after = b.or_(after, b.icmp_signed("==", size[j], size[i]))
            stride = b.mul(stride, b.select(after, shape[j], ir.Constant(_I64, 1)))
        out.append(stride)
    return out


def strides(cg, order: Order, shape: list, itemsize: int, like=None) -> list:
    """The strides (i64 values) of a new packed array of ``shape`` in ``order``; ``like``: the prototype's
    ``(value, type)`` for ``K`` and ``A``."""
    c = c_strides(cg, shape, itemsize)
    if len(shape) <= 1 or order is Order.C:
        return c
    f = _f_strides(cg, shape, itemsize)
    if order is Order.F:
        return f
    assert like is not None, "K and A order follow a prototype"
    value, t = like
    if t.layout == "C":
        return c
    b = cg.b
    old = [b.extract_value(value, [2, k]) for k in range(t.ndim)]
    is_c = contiguous(cg, shape, old, t.dtype.itemsize, fortran=False)
    is_f = contiguous(cg, shape, old, t.dtype.itemsize, fortran=True)
    if order is Order.A:
        pick_f = b.and_(is_f, b.not_(is_c))
        return [b.select(pick_f, fs, cs) for fs, cs in zip(f, c)]
    kept = _kept_strides(cg, shape, old, itemsize)
    return [b.select(is_c, cs, b.select(is_f, fs, ks)) for cs, fs, ks in zip(c, f, kept)]
