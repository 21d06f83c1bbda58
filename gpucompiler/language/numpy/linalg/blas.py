"""Calls of the host's BLAS and LAPACK (the OpenBLAS NumPy ships) from the NumPy implementations.

The implementations (:mod:`.linalgimpl`, :mod:`.lapackimpl`) call these intrinsics:

* ``blas_call(name, *args)``: CBLAS's or LAPACKE's ``name`` (``"gemm"``, ``"gesv"``...) of the
  precision of its first float array (``d`` for float64, ``s`` for float32), declared by name
  (``scipy_cblas_dgemm64_``, ``scipy_LAPACKE_dgesv64_``: NumPy 2's scipy-openblas, 64-bit
  integers) and resolved when the code is loaded (:mod:`gpucompiler.targets.hostlibs`);
  arrays pass their data pointer, the other arguments convert to the parameter's C type;
* ``blas_ready(x, dt)``: whether BLAS reads ``x`` in place as a matrix of ``dt`` (one unit
  stride, the other a positive multiple of the element size covering a row or column) or a
  vector (a positive stride in whole elements); constant False for expressions and other dtypes;
* ``trans(x)`` / ``lead(x)``: of a ready matrix, CBLAS's transpose flag (111: rows contiguous,
  112: columns contiguous, read as the transpose of a row-major matrix) and its leading
  dimension in elements; of a vector, ``lead`` is its increment;
* ``contiguous(x, dt)``: whether a matrix is one block of elements (C or F order);
* ``new_like(a, shape)``: a work array of ``a``'s dtype.

One record per function in :data:`SIGNATURES`; the IR names the symbols, never an address.
"""

from __future__ import annotations

from llvmlite import ir

from .... import types as T
from ....errors import TypeInferenceError
from ....interpreter.lattice import Const, const, widen
from ....interpreter.rules import CallResult
from ..arraymem import Fill, allocate, managed_array
from ...python.numbers import base

CBLAS, LAPACKE = "scipy_cblas_{}64_", "scipy_LAPACKE_{}64_"
"""The symbols of NumPy 2's bundled OpenBLAS (scipy-openblas64: prefixed, 64-bit integers)."""
ROW_MAJOR, COL_MAJOR, NO_TRANS, TRANS = 101, 102, 111, 112
"""CBLAS's and LAPACKE's constants."""

#: name -> (symbol pattern, result ('v' nothing, 'i' lapack_int, 'f' a float of the call's precision),
#: parameters): 'e' a C int (an enum,
#: LAPACKE's matrix layout), 'c' a char, 'i' a 64-bit integer, 'f' a float of the call's precision,
#: 'p' an array's data pointer
SIGNATURES: dict[str, tuple[str, str, str]] = {
    "dot": (CBLAS, "f", "ipipi"),
    "gemm": (CBLAS, "v", "eeeiiifpipifpi"),
    "gemv": (CBLAS, "v", "eeiifpipifpi"),
    "gesv": (LAPACKE, "i", "eiipippi"),
    "getrf": (LAPACKE, "i", "eiipip"),
    "potrf": (LAPACKE, "i", "ecipi"),
    "syevd": (LAPACKE, "i", "eccipip"),
    "gelsd": (LAPACKE, "i", "eiiipipipfp"),
}
_KINDS = {"e": ir.IntType(32), "c": ir.IntType(8), "i": ir.IntType(64)}
_I64 = ir.IntType(64)
_PRECISION = {"float64": "d", "float32": "s"}


def blas_call(name, *args):
    """CBLAS's or LAPACKE's ``name`` of ``args`` (an intrinsic: only compiled code calls it)."""
    raise NotImplementedError("blas_call is an intrinsic of compiled code")


def blas_ready(x, dt):
    """Whether BLAS reads ``x`` in place as an operand of ``dt`` (an intrinsic)."""
    raise NotImplementedError("blas_ready is an intrinsic of compiled code")


def trans(x):
    """CBLAS's transpose flag of a ready matrix ``x`` (an intrinsic)."""
    raise NotImplementedError("trans is an intrinsic of compiled code")


def lead(x):
    """The leading dimension of a ready matrix, the increment of a ready vector (an intrinsic)."""
    raise NotImplementedError("lead is an intrinsic of compiled code")


def new_like(a, shape):
    """A new C-ordered array of ``shape`` with the dtype of the array ``a``, uninitialised (an
    intrinsic): the work arrays of functions that take no dtype (derivative rules' convention)."""
    raise NotImplementedError("new_like is an intrinsic of compiled code")


def _new_like(interp, args) -> CallResult:
    x, shape = _array(args[0]), widen(args[1])
    if x is None or not isinstance(shape, T.TupleType) or interp.target.is_gpu:
        raise TypeInferenceError(f"new_like of {widen(args[0])!r} and {shape!r} (host arrays only)", (shape,))

    def lower(cg, a, at, rt):
        dims = [cg.cast(cg.b.extract_value(a[1], k), it, T.int64) if not isinstance(at[1], Const)
                else ir.Constant(_I64, at[1].value[k]) for k, it in enumerate(shape.items)]
        return allocate(cg, x.dtype, dims, Fill.UNINITIALIZED)
    return CallResult(managed_array(x.dtype, len(shape.items)), lower)


def _array(t) -> T.ArrayType | None:
    t = widen(t)
    return t if isinstance(t, T.ArrayType) and t.ndim in (1, 2) else None


def _row_ready(cg, x, t: T.ArrayType):
    """(rows contiguous, columns contiguous) of a 2-d array ``x``: a unit stride along one axis and a
    positive multiple of the element size, at least the other extent (at least 1), along the other."""
    b, size = cg.b, ir.Constant(_I64, t.dtype.itemsize)
    s0, s1 = (b.extract_value(x, [2, k]) for k in range(2))
    n0, n1 = (b.extract_value(x, [1, k]) for k in range(2))

    def covers(stride, extent):
        one = ir.Constant(_I64, 1)
        least = b.mul(b.select(b.icmp_signed(">", extent, one), extent, one), size)
        whole = b.icmp_signed("==", b.srem(stride, size), ir.Constant(_I64, 0))
        return b.and_(b.icmp_signed(">=", stride, least), whole)
    rows = b.and_(b.icmp_signed("==", s1, size), covers(s0, n1))
    cols = b.and_(b.icmp_signed("==", s0, size), covers(s1, n0))
    return rows, cols


def _ready(interp, args) -> CallResult | None:
    x = _array(args[0])
    if x is None or not isinstance(args[1], Const) or args[1].value != x.dtype:
        return CallResult(const(False), lambda cg, a, at, rt: ir.Constant(ir.IntType(1), 0))

    def lower(cg, a, at, rt):
        if x.ndim == 2:
            rows, cols = _row_ready(cg, a[0], x)
            return cg.b.or_(rows, cols)
        s, size = cg.b.extract_value(a[0], [2, 0]), ir.Constant(_I64, x.dtype.itemsize)
        return cg.b.and_(cg.b.icmp_signed(">", s, ir.Constant(_I64, 0)),
                         cg.b.icmp_signed("==", cg.b.srem(s, size), ir.Constant(_I64, 0)))
    return CallResult(T.boolean, lower)


def contiguous(x, dt):
    """Whether the matrix ``x`` of ``dt`` is one block of elements in C or F order (an intrinsic)."""
    raise NotImplementedError("contiguous is an intrinsic of compiled code")


def _contiguous(interp, args) -> CallResult:
    x = _array(args[0])
    if x is None or x.ndim != 2 or not isinstance(args[1], Const) or args[1].value != x.dtype:
        return CallResult(const(False), lambda cg, a, at, rt: ir.Constant(ir.IntType(1), 0))

    def lower(cg, a, at, rt):
        b, size = cg.b, ir.Constant(_I64, x.dtype.itemsize)
        s0, s1 = (b.extract_value(a[0], [2, k]) for k in range(2))
        n0, n1 = (b.extract_value(a[0], [1, k]) for k in range(2))
        c = b.and_(b.icmp_signed("==", s1, size), b.icmp_signed("==", s0, b.mul(n1, size)))
        f = b.and_(b.icmp_signed("==", s0, size), b.icmp_signed("==", s1, b.mul(n0, size)))
        return b.or_(c, f)
    return CallResult(T.boolean, lower)


def _layout(interp, fn, args) -> CallResult:
    x = _array(args[0])
    if x is None:
        raise TypeInferenceError(f"{fn.__name__}() of {widen(args[0])!r}: an array is expected", (widen(args[0]),))

    def lower(cg, a, at, rt):
        b, size = cg.b, ir.Constant(_I64, x.dtype.itemsize)
        if x.ndim == 1:
            return b.sdiv(b.extract_value(a[0], [2, 0]), size) if fn is lead else ir.Constant(_I64, NO_TRANS)
        rows, _ = _row_ready(cg, a[0], x)
        if fn is trans:
            return b.select(rows, ir.Constant(_I64, NO_TRANS), ir.Constant(_I64, TRANS))
        s0, s1 = (b.extract_value(a[0], [2, k]) for k in range(2))
        return b.sdiv(b.select(rows, s0, s1), size)
    return CallResult(T.int64, lower)


def _call(interp, args) -> CallResult:
    name = args[0].value if isinstance(args[0], Const) else None
    if not isinstance(name, str) or name not in SIGNATURES:
        raise TypeInferenceError(f"blas_call of {name!r}: not a function of {', '.join(SIGNATURES)}")
    pattern, result, params = SIGNATURES[name]
    types = [widen(a) for a in args[1:]]
    floats = [t for t in types if isinstance(t, T.ArrayType) and t.dtype.name in _PRECISION]
    if len(types) != len(params) or not floats:
        raise TypeInferenceError(f"blas_call of {name!r} takes {len(params)} arguments with a float array",
                                 tuple(types))
    letter = _PRECISION[floats[0].dtype.name]
    for kind, t in zip(params, types):
        if (kind == "p") != isinstance(t, T.ArrayType) or (kind == "f" and not isinstance(t, T.Scalar)):
            raise TypeInferenceError(f"blas_call of {name!r}: {t!r} where the parameter is {kind!r}", (t,))
    symbol = pattern.format(letter + name)

    def lower(cg, a, at, rt):
        values = []
        for kind, v, t in zip(params, a[1:], at[1:]):
            if kind == "p":
                values.append(cg.b.extract_value(v, 0))
            elif kind == "f":
                values.append(cg.cast(v, widen(t), floats[0].dtype))
            else:
                values.append(cg.b.trunc(cg.cast(v, widen(t), T.int64), _KINDS[kind]) if kind != "i"
                              else cg.cast(v, widen(t), T.int64))
        restype = {"i": _I64, "f": cg.ll(floats[0].dtype)}.get(result, ir.VoidType())
        out = cg.b.call(cg.mod.declare(symbol, restype, [v.type for v in values]), values)
        return None if result == "v" else out
    return CallResult({"i": T.int64, "f": floats[0].dtype}.get(result, T.none), lower)


@base.handler
def _blas(interp, fn, args):
    """The intrinsics of this module (host code only: a GPU has no BLAS of the host)."""
    if fn is blas_ready:
        return _ready(interp, args)
    if fn is contiguous:
        return _contiguous(interp, args)
    if fn is trans or fn is lead:
        return _layout(interp, fn, args)
    if fn is blas_call:
        return _call(interp, args)
    if fn is new_like:
        return _new_like(interp, args)
    return None


__all__ = ["blas_call", "blas_ready", "contiguous", "trans", "lead", "new_like", "SIGNATURES", "ROW_MAJOR", "COL_MAJOR", "NO_TRANS", "TRANS"]
