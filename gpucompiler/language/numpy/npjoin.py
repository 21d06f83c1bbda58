"""``np.concatenate``, ``np.stack``, ``np.vstack`` and ``np.hstack`` of a tuple of arrays.

Each is one concatenation: the pieces, seen with the result's number of
dimensions (``stack`` inserts an axis of extent 1 at ``axis``; ``vstack``
before a 1-d piece; ``hstack`` of 1-d pieces joins along axis 0, of others
along axis 1), are copied one after another into a new C-ordered array of
NumPy's result dtype. ``concatenate(..., axis=None)`` joins the pieces'
elements in C order. The extents off the axis are checked at the user's line
with NumPy's ``ValueError``; a number of dimensions that differs is a
``TypeInferenceError`` when compiling (NumPy's ``ValueError``). The copies
are plain loops, which the Enzyme plugin differentiates.
"""

from __future__ import annotations

from llvmlite import ir

from ... import types as T
from ...errors import AxisError, TypeInferenceError
from ...frontend import intrinsics as K
from ...interpreter.lattice import Const, widen
from ...interpreter.rules import CallResult
from . import arraymem as mem
from .npdtypes import numpy_function
from ..python.numbers import base
from .ufuncs import keyword_call, numpy, scalar_type
from .views import copy_into

_A = T.ArrayType
_I64 = ir.IntType(64)
_NAMES = ("concatenate", "stack", "vstack", "hstack")


def _parts(cg, value, t: _A) -> tuple[list, list]:
    """``(shape, strides)`` of an array value (i64 values)."""
    shape = [cg.b.extract_value(value, [1, k]) for k in range(t.ndim)]
    if t.layout == "C":
        return shape, mem.c_strides(cg, shape, t.dtype.itemsize)
    return shape, [cg.b.extract_value(value, [2, k]) for k in range(t.ndim)]


def _seen(name: str, t: _A, axis: int | None, ndim: int) -> tuple[int, ...]:
    """Where ``name`` inserts axes of extent 1 into a piece of type ``t`` (positions in the result)."""
    if name == "stack":
        assert axis is not None
        return (axis,)
    if name == "vstack" and t.ndim == 1:
        return (0,)
    return ()


def _result(name: str, items: list[_A], axis) -> tuple[int, int | None]:
    """``(ndim of the result, axis joined along)`` (axis None: the elements in C order)."""
    ndims = {t.ndim for t in items}
    if name == "vstack":
        if ndims - {1, 2}:
            raise TypeInferenceError("np.vstack() of arrays of more than 2 dimensions is not supported in compiled "
                                     "code", tuple(items))
        return 2, 0
    if len(ndims) != 1:
        raise TypeInferenceError(f"np.{name}(): all the input arrays must have same number of dimensions (NumPy's "
                                 "ValueError)", tuple(items), hint="reshape the pieces to one number of dimensions")
    ndim = ndims.pop()
    if ndim == 0:
        raise TypeInferenceError(f"np.{name}() of 0-d arrays is not supported", tuple(items))
    if name == "hstack":
        return ndim, 0 if ndim == 1 else 1
    out_ndim = ndim + 1 if name == "stack" else ndim
    if axis is None:
        return (1, None) if name == "concatenate" else (out_ndim, 0)
    if not -out_ndim <= axis < out_ndim:
        raise AxisError(f"axis {axis} is out of bounds for array of dimension {out_ndim}")
    return out_ndim, axis % out_ndim


def _join(interp, name: str, pos: list, kw: dict) -> CallResult | None:
    allowed = {"axis"} if name in ("concatenate", "stack") else set()
    unknown = set(kw) - allowed
    if unknown or len(pos) > 1 + len(allowed) or not pos:
        extra = sorted(unknown)[0] if unknown else None
        raise TypeInferenceError(f"np.{name}() " + (f"keyword argument {extra!r} is not supported" if extra else
                                 "takes a tuple of arrays" + (" and an axis" if allowed else "")) + " in compiled code",
                                 hint="out=, dtype= and casting= are not supported")
    seq = widen(pos[0])
    if not (isinstance(seq, T.TupleType) and seq.items and all(isinstance(it, _A) for it in seq.items)):
        raise TypeInferenceError(f"np.{name}() takes a tuple of arrays in compiled code, not {seq!r}", (seq,),
                                 hint=f"write np.{name}((a, b)); evaluate an expression into an array first")
    given = pos[1] if len(pos) > 1 else kw.get("axis")
    if given is not None and not (isinstance(given, Const) and (given.value is None or type(given.value) is int)):
        raise TypeInferenceError(f"np.{name}(..., axis=...) must be a constant integer or None in compiled code",
                                 (widen(given),), hint="write the axis as a literal (Numba asks the same)")
    axis = given.value if given is not None else (0 if name in ("concatenate", "stack") else None)
    items = list(seq.items)
    ndim, along = _result(name, items, axis)
    dt = scalar_type(numpy().result_type(*(numpy().dtype(t.dtype.name) for t in items)))
    if interp.target.is_gpu:
        raise TypeInferenceError(f"np.{name}() makes a new array, which kernels on the GPU cannot do",
                                 hint="allocate the result on the host, pass it in and copy the pieces")
    rt = mem.managed_array(dt, ndim)
    inserted = [_seen(name, t, along, ndim) for t in items]

    def lower(cg, a, at, rt):
        pieces = []
        for k, t in enumerate(items):
            shape, strides = _parts(cg, cg.b.extract_value(a[0], k), t)
            for p in inserted[k]:
                shape.insert(p, ir.Constant(_I64, 1))
                strides.insert(p, ir.Constant(_I64, 0))
            pieces.append((cg.b.extract_value(a[0], k), t, shape, strides))
        return _copy_pieces(cg, name, pieces, rt, along)
    return CallResult(rt, lower)


def _copy_pieces(cg, name: str, pieces: list, rt: _A, along: int | None):
    b = cg.b
    if along is None:  # the elements of each piece in C order, one piece after another
        total = ir.Constant(_I64, 0)
        for _, _, shape, _ in pieces:
            size = ir.Constant(_I64, 1)
            for n in shape:
                size = b.mul(size, n)
            total = b.add(total, size)
        out = mem.allocate(cg, rt.dtype, [total])
        offset = ir.Constant(_I64, 0)
        for value, t, shape, strides in pieces:
            offset = _copy_at(cg, value, t, shape, strides, out, rt, offset, mem.c_strides(cg, shape, rt.dtype.itemsize))
        return out
    first = pieces[0][2]
    extent = ir.Constant(_I64, 0)
    for k, (_, _, shape, _) in enumerate(pieces):
        for d in range(rt.ndim):
            if d == along:
                continue
            if name == "stack":
                cg.check_statement(b.icmp_signed("==", shape[d], first[d]), "ValueError",
                                   "all input arrays must have the same shape")
            else:
                cg.check_statement(b.icmp_signed("==", shape[d], first[d]), "ValueError",
                                   "all the input array dimensions except for the concatenation axis must match "
                                   f"exactly, but along dimension {d}, the array at index 0 has size %lld and the "
                                   f"array at index {k} has size %lld", first[d], shape[d])
        extent = b.add(extent, shape[along])
    out_shape = [extent if d == along else first[d] for d in range(rt.ndim)]
    out = mem.allocate(cg, rt.dtype, out_shape)
    out_strides = mem.c_strides(cg, out_shape, rt.dtype.itemsize)
    offset = ir.Constant(_I64, 0)
    for value, t, shape, strides in pieces:
        _copy_at(cg, value, t, shape, strides, out, rt, offset, out_strides)
        offset = b.add(offset, b.mul(shape[along], out_strides[along]))
    return out


def _copy_at(cg, value, t: _A, shape, strides, out, rt: _A, offset, out_strides):
    """Copy the piece (seen with ``shape``/``strides``) into ``out`` from byte ``offset`` on, with
    ``out_strides``; returns the offset after the piece's block of elements (packed results)."""
    b = cg.b
    ndim = len(shape)
    src_t = _A(t.dtype, ndim, "A", True, False)
    dst_t = _A(rt.dtype, ndim, "A", False, False)
    src = mem.build_array(cg, src_t, b.extract_value(value, 0), shape, strides)
    data = b.gep(b.extract_value(out, 0), [offset], source_etype=ir.IntType(8))
    dst = mem.build_array(cg, dst_t, data, shape, out_strides)
    copy_into(cg, src, src_t, dst, dst_t)
    size = ir.Constant(_I64, rt.dtype.itemsize)
    for n in shape:
        size = b.mul(size, n)
    return b.add(offset, size)


@base.handler
def _join_call(interp, fn, args):
    """``np.concatenate((a, b), axis=1)`` and the stacking functions."""
    def claim(f, pos, kw):
        name = numpy_function(f)
        if name in _NAMES and f is getattr(numpy(), name):
            return _join(interp, name, pos, kw)
        return None
    if fn is K.call_kw:
        return keyword_call(args, claim)
    return claim(fn, list(args), {})
