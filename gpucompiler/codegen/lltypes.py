"""LLVM types of frontend types."""

from __future__ import annotations

import functools

from llvmlite import ir

from .. import types as T
from ..interpreter.lattice import pyobj, widen

_SCALARS: dict[T.Type, ir.Type] = {
    T.boolean: ir.IntType(1), **{t: ir.IntType(t.bits) for t in T.SCALARS.values() if t.is_integer},
    T.float32: ir.FloatType(), T.float64: ir.DoubleType(),
    T.complex64: ir.LiteralStructType([ir.FloatType()] * 2), T.complex128: ir.LiteralStructType([ir.DoubleType()] * 2)}
"""Complex numbers are ``{real, imag}`` (NumPy's layout in memory)."""
PTR = ir.PointerType()
I64 = ir.IntType(64)


def has_value(t) -> bool:
    """Whether values of type ``t`` exist at run time (not None, not compile-time objects)."""
    t = widen(t)
    return t != T.none and t != pyobj and t is not None and isinstance(t, T.Type)


STATUS = ir.IntType(1)
"""The failure flag of a function with a status: ``true`` when it raised."""


def status_type(rt) -> ir.Type:
    """What a function with a status returns: ``{value, i1 failed}``, or ``i1 failed`` alone.

    A failed check sets the error (a Python exception, the emulation's
    record) and returns ``failed = true`` at once; every caller tests the
    flag after the call and returns at once too, up to the wrapper that
    raises. LLVM removes the flag where it inlines a callee that cannot fail.
    """
    return ir.LiteralStructType([ll(rt), STATUS]) if has_value(rt) else STATUS


@functools.cache
def ll(t) -> ir.Type:
    """The LLVM type of frontend type ``t``."""
    t = widen(t)
    if t in _SCALARS:
        return _SCALARS[t]
    if isinstance(t, (T.TupleType, T.RecordType)):
        return ir.LiteralStructType([ll(i) for i in t.items if has_value(i)])
    if isinstance(t, T.BoundMethod):
        return ll(t.receiver)
    if isinstance(t, (T.ArrayType, T.StructArrayType)):  # {data, shape, strides in bytes[, refcounted buffer]}
        dims = ir.ArrayType(I64, t.ndim)
        managed = isinstance(t, T.ArrayType) and t.managed
        return ir.LiteralStructType([PTR, dims, dims, PTR] if managed else [PTR, dims, dims])
    if isinstance(t, (T.ListType, T.DictType, T.DictView, T.StructRef)):  # an address: the block's, the element's
        return PTR
    if isinstance(t, T.SliceType):  # the parts that are present
        return ir.LiteralStructType([I64] * (t.has_start + t.has_stop + t.has_step))
    if isinstance(t, T.ArrayExpr):
        return ir.LiteralStructType([ll(leaf) for leaf in t.leaves])
    if t == T.none or t == pyobj:
        return ir.VoidType()
    raise TypeError(f"no LLVM type for {t!r}")
