"""Which array parameters a kernel may write, and which it may read: what a launch tape snapshots.

Read from the kernel's typed IR (the frames of type inference), over every
function it calls. Conservative: an array (or a tuple or activity holding
one) passed to anything that is not a known read (indexing, ``.shape``,
``len``) or a compiled callee counts as written; a value whose origin is not
a parameter makes every array parameter written. Too many snapshots cost a
copy; too few would give a wrong gradient.

An array is *read* unless it is only stored into (``a[i] = number``) or
added into by ``atomic_add`` whose old value is not used, and its metadata
asked for (``a.shape``, ``len(a)``): a kernel that writes an array without
reading it computes the same stores from the same inputs when its gradient
kernel runs again, so its launch needs no snapshot of it. The arrays added
into are *accumulated*: the gradient kernel's run adds the same values
again, so the tape keeps their final values aside while it replays.
"""

from __future__ import annotations

import operator

from gpucompiler import device as gd, types as T
from gpucompiler.frontend import intrinsics, ir
from gpucompiler.interpreter import Const, widen

_READS = {operator.getitem, intrinsics.getitem_unchecked, getattr, len}
"""Calls that read their array operands and never write through them."""
_STORES = {operator.setitem, intrinsics.setitem_unchecked}
"""Calls that store into their first operand (and read the others)."""
_METADATA = {getattr, len}
"""Calls that read an array's metadata, not its elements, when their result holds no array."""


def _carries_array(t) -> bool:
    t = widen(t)
    if isinstance(t, T.ArrayType):
        return True
    return isinstance(t, T.TupleType) and any(_carries_array(i) for i in t.items)


class _Everything(Exception):
    """A value whose arrays cannot be traced to parameters."""


def _origins(frame, v, seen: set) -> set[int]:
    """The parameters the arrays in ``v`` may come from."""
    if v in seen:
        return set()
    seen.add(v)
    if isinstance(v, ir.Arg):
        return {v.index}
    if isinstance(v, ir.Phi):
        return set().union(*(_origins(frame, x, seen) for x in v.incoming.values()))
    if isinstance(v, ir.Call):
        return set().union(*(_origins(frame, a, seen) for a in v.args if _carries_array(frame.typeof(a))))
    raise _Everything


def _unused(frame, inst) -> bool:
    """Whether no instruction, phi or terminator of ``frame`` takes the value of ``inst``."""
    for block in frame.ir.blocks:
        for other in (*block.phis, *block.insts, block.term):
            if other is not None and any(v is inst for v in getattr(other, "operands", ())):
                return False
    return True


def _added_into(frame, inst, fn) -> bool:
    """Whether ``inst`` is ``atomic_add(a, i, v)`` whose result (the old ``a[i]``) nothing uses."""
    return fn is gd.atomic_add and _unused(frame, inst)


def _written_by(frame, inst, fn, arrays: list[int]) -> list[int]:
    """The array operands a call may write: all of them unless it is a known read."""
    return [] if fn in _READS else arrays


def _read_by(frame, inst, fn, arrays: list[int]) -> list[int]:
    """The array operands a call may read: all but the metadata asked for and a parameter stored into."""
    if fn in _METADATA and not _carries_array(frame.typeof(inst)):
        return []
    if (fn in _STORES or _added_into(frame, inst, fn)) and isinstance(inst.args[0], ir.Arg):
        return [k for k in arrays if k != 0]  # a parameter itself, not a view of it
    return arrays


def _accumulated_by(frame, inst, fn, arrays: list[int]) -> list[int]:
    """The array operand ``atomic_add`` adds into, its result used or not."""
    return [k for k in arrays if k == 0] if fn is gd.atomic_add else []


def _touched(frame, touches, active: set) -> set[int]:
    """The parameters whose arrays ``touches`` (``_written_by``/``_read_by``) picks at some call of
    ``frame`` or, through the arguments, of the frames it calls."""
    if frame in active:  # recursion: kernels do not recurse, stay conservative
        raise _Everything
    active = active | {frame}
    out: set[int] = set()
    for block in frame.ir.blocks:
        for inst in block.insts:
            arrays = [k for k, a in enumerate(inst.args) if _carries_array(frame.typeof(a))]
            if not arrays:
                continue
            res = frame.calls.get(inst)
            if res is not None and res.callee is not None:
                picked = [j for j in _touched(res.callee, touches, active) if j < len(inst.args)]
            else:
                fn = frame.typeof(inst.fn)
                picked = touches(frame, inst, fn.value if isinstance(fn, Const) else None, arrays)
            for k in picked:
                out |= _origins(frame, inst.args[k], set())
    return out


def _parameters(frame, touches) -> frozenset[int]:
    arrays = {k for k, t in enumerate(frame.argtypes) if _carries_array(t)}
    try:
        return frozenset(_touched(frame, touches, set()) & arrays)
    except _Everything:
        return frozenset(arrays)


def read_parameters(frame) -> frozenset[int]:
    """Indices of the array parameters of ``frame`` whose elements it may read (see the module docstring)."""
    return _parameters(frame, _read_by)


def written_parameters(frame) -> frozenset[int]:
    """Indices of the array parameters of ``frame`` (a typed kernel) that it may write."""
    return _parameters(frame, _written_by)


def accumulated_parameters(frame) -> frozenset[int]:
    """Indices of the array parameters of ``frame`` that an ``atomic_add`` may add into (see the module
    docstring); every array parameter when an array's origin is not known."""
    return _parameters(frame, _accumulated_by)


__all__ = ["accumulated_parameters", "read_parameters", "written_parameters"]
