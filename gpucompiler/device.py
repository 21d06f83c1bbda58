"""The kernel language: thread and block indices, barriers, atomics, shared memory.

Everything here is meant to be *called inside a kernel* (see
:mod:`gpucompiler.kernel`); from plain Python it raises. Numba-style
spelling::

    from gpucompiler import device as gd, kernel

    @kernel
    def saxpy(a, x, y, out):
        i = gd.grid(1)                 # blockIdx.x * blockDim.x + threadIdx.x
        if i < out.shape[0]:
            out[i] = a * x[i] + y[i]

* ``threadIdx``, ``blockIdx``, ``blockDim``, ``gridDim`` with ``.x/.y/.z``
  (``int64``); ``grid(ndim)`` the global index (a tuple for 2 or 3),
  ``gridsize(ndim)`` the number of threads of the grid per axis;
* ``syncthreads()``: the block-wide barrier;
* ``atomic_add/min/max/exch(array, index, value)`` and
  ``atomic_cas(array, index, expected, value)``: return the old element;
* ``shared_array(shape, dtype)``: a block-shared array of constant shape
  (``dtype`` a :mod:`gpucompiler.types` scalar, a NumPy scalar type or its name);
* ``shfl_down(value, delta)``: the ``value`` of the lane ``delta`` above in the
  warp (32 lanes), or the caller's own where that lane is past the warp's end
  (``shfl.sync.down`` with a full mask: every lane of the warp must call it).

Each intrinsic has one lowering per target: a target describes how it reads
the thread registers, waits at a barrier, places shared memory and exchanges
values in a warp (a :class:`KernelLowering`), and :func:`kernel_rules`
turns that into its overlay of interpreter rules (a GPU target's
``rule_overlays``); atomics are ``atomicrmw`` everywhere. The rules of the
``gpuc_grid`` plugin are the CPU grid emulation's
(:mod:`gpucompiler.runtime.grid` enables them for its jobs). In a ``@jit`` function they have no implementation
and compilation fails with the offending line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from llvmlite import ir

from . import plugin, types as T
from .core import GRID_EMULATION
from .errors import ReadOnlyArrayError, TypeInferenceError
from .language.python.containers import _element_pointer, _getitem_type, _indices
from .interpreter.lattice import Const, pyobj, widen
from .interpreter.rules import Any_, CallResult, Number, RuleSet

__all__ = ["threadIdx", "blockIdx", "blockDim", "gridDim", "grid", "gridsize", "syncthreads",
           "atomic_add", "atomic_min", "atomic_max", "atomic_exch", "atomic_cas", "shared_array", "shfl_down",
           "WARP_SIZE",
           "Dim3", "KernelLowering", "kernel_rules", "new_shared_name", "EMULATION_RULES"]


class KernelOnlyError(RuntimeError):
    """A device intrinsic was called from plain Python."""


class Intrinsic:
    """A device function: meaningful only in compiled kernels."""

    def __init__(self, name: str, doc: str):
        self.__name__ = self.__qualname__ = name
        self.__module__ = __name__
        self.__doc__ = doc

    def __call__(self, *args, **kwargs):
        raise KernelOnlyError(f"gpucompiler.device.{self.__name__}() can only be called inside a "
                              "@kernel (launch it with k[grid, block](...))")

    def __repr__(self) -> str:
        return f"<device intrinsic {self.__name__}>"


class Dim3:
    """A special register triple (``threadIdx`` ...) read as ``.x``, ``.y``, ``.z``."""

    def __init__(self, name: str, field: int):
        self.name, self.field = name, field
        self.__qualname__ = name
        self.__module__ = __name__

    def __getattr__(self, attr):
        if attr in ("x", "y", "z"):
            raise AttributeError(f"{self.name}.{attr} is available only inside a @kernel")
        raise AttributeError(attr)

    def __repr__(self) -> str:
        return f"gpucompiler.device.{self.name}"


threadIdx = Dim3("threadIdx", 0)
blockIdx = Dim3("blockIdx", 3)
blockDim = Dim3("blockDim", 6)
gridDim = Dim3("gridDim", 9)

grid = Intrinsic("grid", "grid(ndim): the global thread index (a tuple when ndim > 1).")
gridsize = Intrinsic("gridsize", "gridsize(ndim): threads of the grid per axis.")
syncthreads = Intrinsic("syncthreads", "syncthreads(): wait until every thread of the block arrives.")
atomic_add = Intrinsic("atomic_add", "atomic_add(a, i, v): a[i] += v atomically; returns the old a[i].")
atomic_min = Intrinsic("atomic_min", "atomic_min(a, i, v): a[i] = min(a[i], v); returns the old a[i].")
atomic_max = Intrinsic("atomic_max", "atomic_max(a, i, v): a[i] = max(a[i], v); returns the old a[i].")
atomic_exch = Intrinsic("atomic_exch", "atomic_exch(a, i, v): a[i] = v; returns the old a[i].")
atomic_cas = Intrinsic("atomic_cas", "atomic_cas(a, i, expected, v): a[i] = v if a[i] == expected; "
                                     "returns the old a[i].")
shared_array = Intrinsic("shared_array", "shared_array(shape, dtype): block-shared array of constant shape.")
shfl_down = Intrinsic("shfl_down", "shfl_down(value, delta): value of the lane delta above in the warp "
                                   "(the caller's own past the warp's end); all 32 lanes must call it.")
WARP_SIZE = 32

_AXES = {"x": 0, "y": 1, "z": 2}
_I64 = ir.IntType(64)
_I32 = ir.IntType(32)


@attrs.frozen
class KernelLowering:
    """How a target lowers the kernel language: the four operations that differ between devices.
    ``cg`` is the function's code generator (:class:`gpucompiler.codegen.FunctionCodegen`)."""

    read: Callable[[Any, Dim3, int], ir.Value]
    """``read(cg, triple, axis)``: ``threadIdx``/``blockIdx``/``blockDim``/``gridDim`` (a :class:`Dim3`)
    along ``axis`` (0, 1, 2) as an ``i64``"""
    barrier: Callable[[Any], None]
    """``barrier(cg)``: every thread of the block waits here (``syncthreads()``)"""
    shared: Callable[[Any, ir.ArrayType], ir.Value]
    """``shared(cg, array_type)``: a generic pointer to a new block-shared array of that LLVM type"""
    shuffle_down: Callable[[Any, ir.Value, ir.Value], ir.Value]
    """``shuffle_down(cg, word, delta)``: the ``i32``/``i64`` ``word`` of the lane ``delta`` above in the
    warp (``delta`` an ``i32``), the caller's own past the warp's end"""


def kernel_rules(rules: RuleSet, lowering: KernelLowering) -> RuleSet:
    """Define the whole kernel language in ``rules`` with ``lowering``; returns ``rules``."""
    _add_rules(rules, lowering.read, lowering.barrier, lowering.shared, lowering.shuffle_down)
    return rules


def _emu_context(cg):
    """The emulated thread's context (``pthread_getspecific(gpuc_emu_key)``)."""
    key = cg.b.load(cg.mod.extern_global("gpuc_emu_key"), typ=_I32)
    get = cg.mod.declare("pthread_getspecific", ir.PointerType(), [_I32])
    return cg.b.call(get, [key])


def _emu_register(cg, field: int, axis: int):
    ptr = cg.b.gep(_emu_context(cg), [ir.Constant(_I64, field + axis)], source_etype=_I64)
    return cg.b.load(ptr, typ=_I64)


# -- rule construction, shared by both targets ----------------------------------
def _constant_int(t) -> bool:
    return isinstance(t, Const) and type(t.value) is int


def _add_rules(rules: RuleSet, read, barrier, shared_global, shuffle_down) -> None:
    """Define every intrinsic in ``rules``; ``read(cg, field, axis)`` reads a register."""

    @rules.handler
    def _dim3(interp, fn, args):
        if (fn is getattr and len(args) == 2 and isinstance(args[0], Const)
                and isinstance(args[0].value, Dim3) and isinstance(args[1], Const)
                and args[1].value in _AXES):
            reg, axis = args[0].value, _AXES[args[1].value]
            return CallResult(T.int64, lambda cg, a, at, rt: read(cg, reg, axis))
        return None

    def _grid_type(n):
        if not _constant_int(n) or n.value not in (1, 2, 3):
            raise TypeInferenceError("grid(ndim)/gridsize(ndim) take a constant 1, 2 or 3", (widen(n),))
        return T.int64 if n.value == 1 else T.TupleType([T.int64] * n.value)

    def _tuple(cg, values, rt):
        if len(values) == 1:
            return values[0]
        out = ir.Constant(cg.ll(rt), ir.Undefined)
        for k, v in enumerate(values):
            out = cg.b.insert_value(out, v, k)
        return out

    @rules.define(grid, Any_, restype=_grid_type, pure=False)
    def _grid(cg, args, argtypes, rt):
        vals = [cg.b.add(cg.b.mul(read(cg, blockIdx, k), read(cg, blockDim, k)), read(cg, threadIdx, k))
                for k in range(argtypes[0].value)]
        return _tuple(cg, vals, rt)

    @rules.define(gridsize, Any_, restype=_grid_type, pure=False)
    def _gridsize(cg, args, argtypes, rt):
        vals = [cg.b.mul(read(cg, blockDim, k), read(cg, gridDim, k)) for k in range(argtypes[0].value)]
        return _tuple(cg, vals, rt)

    @rules.define(syncthreads, restype=T.none, pure=False)
    def _sync(cg, args, argtypes, rt):
        barrier(cg)

    _atomic_rules(rules)

    @rules.define(shfl_down, Number, Number, restype=_shuffle_type, pure=False)
    def _shfl_down(cg, args, argtypes, rt):
        value = cg.cast(args[0], widen(argtypes[0]), rt)
        delta = cg.b.trunc(cg.cast(args[1], widen(argtypes[1]), T.int64), _I32)
        bits = rt.bits
        ity = ir.IntType(bits)
        word = cg.b.bitcast(value, ity) if rt.kind == "f" else value
        out = shuffle_down(cg, word, delta)
        return cg.b.bitcast(out, cg.ll(rt)) if rt.kind == "f" else out

    @rules.define(shared_array, Any_, Any_, restype=_shared_type, pure=False)
    def _shared(cg, args, argtypes, rt):
        shape = _shared_shape(argtypes[0])
        count = 1
        for s in shape:
            count *= s
        ptr = shared_global(cg, ir.ArrayType(cg.ll(rt.dtype) if rt.dtype != T.boolean else ir.IntType(8),
                                             max(count, 1)))
        value = ir.Constant(cg.ll(rt), ir.Undefined)
        value = cg.b.insert_value(value, ptr, 0)
        stride = rt.dtype.itemsize
        strides = []
        for s in reversed(shape):
            strides.insert(0, stride)
            stride *= s
        for k, (s, st) in enumerate(zip(shape, strides)):
            value = cg.b.insert_value(value, ir.Constant(_I64, s), [1, k])
            value = cg.b.insert_value(value, ir.Constant(_I64, st), [2, k])
        return value


# -- warp shuffles -----------------------------------------------------------------
def _shuffle_type(value, delta):
    v, d = widen(value), widen(delta)
    if not isinstance(d, T.Scalar) or d.kind not in "iu" or d == T.boolean:
        raise TypeInferenceError("shfl_down(value, delta): delta must be an integer", (v, d))
    if v == T.boolean or not isinstance(v, T.Scalar) or v.kind not in "if" or v.bits < 32:
        raise TypeInferenceError("shfl_down shuffles int32, int64, float32 or float64 values", (v, d))
    return v


def _emu_shuffle_down(cg, word, delta):
    """``gpuc_emu_shfl(site, bits, delta)``: the emulation's warp exchange (a block barrier)."""
    count = getattr(cg.mod, "_gpuc_barrier_count", 0)
    cg.mod._gpuc_barrier_count = count + 1
    fn = cg.mod.declare("gpuc_emu_shfl", _I64, [_I64, _I64, _I64])
    wide = cg.b.zext(word, _I64) if word.type != _I64 else word
    out = cg.b.call(fn, [ir.Constant(_I64, count), wide, cg.b.zext(delta, _I64)])
    return cg.b.trunc(out, word.type) if word.type != _I64 else out


# -- atomics ---------------------------------------------------------------------
_RMW = {  # (intrinsic, dtype kind) -> atomicrmw operation
    ("add", "i"): "add", ("add", "f"): "fadd", ("min", "i"): "min", ("min", "f"): "fmin",
    ("max", "i"): "max", ("max", "f"): "fmax", ("exch", "i"): "xchg", ("exch", "f"): "xchg",
}


def _atomic_type(a, index, *values):
    a = widen(a)
    if not isinstance(a, T.ArrayType) or _getitem_type(a, index) != a.dtype:
        return None
    if a.dtype.kind not in "if" or a.dtype.bits < 32:
        raise TypeInferenceError(f"atomics need an int32/int64/float32/float64 array, got {a!r}", (a,))
    if a.readonly:
        raise ReadOnlyArrayError("assignment destination is read-only (an atomic writes the array)", (a,),
                                 hint="pass a writeable array")
    if not all(isinstance(widen(v), T.Scalar) for v in values):
        return None
    return a.dtype


def _atomic_pointer(cg, args, argtypes):
    idx, itypes = _indices(cg, args[1], argtypes[1])
    return _element_pointer(cg, args[0], idx, itypes, widen(argtypes[0]))


def _atomic_rules(rules: RuleSet) -> None:
    for name, fn in (("add", atomic_add), ("min", atomic_min), ("max", atomic_max), ("exch", atomic_exch)):
        def lower(cg, args, argtypes, rt, name=name):
            dtype = widen(argtypes[0]).dtype
            value = cg.cast(args[2], widen(argtypes[2]), dtype)
            op = _RMW[(name, dtype.kind)]
            return cg.b.atomic_rmw(op, _atomic_pointer(cg, args, argtypes), value, "monotonic")
        rules.define(fn, T.ArrayType, Any_, Number, restype=_atomic_type, pure=False)(lower)

    @rules.define(atomic_cas, T.ArrayType, Any_, Number, Number, restype=_atomic_type, pure=False)
    def _cas(cg, args, argtypes, rt):
        dtype = widen(argtypes[0]).dtype
        ptr = _atomic_pointer(cg, args, argtypes)
        cmp, val = (cg.cast(v, widen(t), dtype) for v, t in zip(args[2:], argtypes[2:]))
        if dtype.kind == "f":  # compare bit patterns, like CUDA's atomicCAS on floats
            ity = ir.IntType(dtype.bits)
            out = cg.b.cmpxchg(ptr, cg.b.bitcast(cmp, ity), cg.b.bitcast(val, ity), "monotonic", "monotonic")
            return cg.b.bitcast(cg.b.extract_value(out, 0), cg.ll(dtype))
        out = cg.b.cmpxchg(ptr, cmp, val, "monotonic", "monotonic")
        return cg.b.extract_value(out, 0)


# -- shared memory -----------------------------------------------------------------
_DTYPES = {**T.SCALARS, "float": T.float64, "int": T.int64, "bool": T.boolean}


def _scalar_of(dtype):
    if isinstance(dtype, T.Scalar):
        return dtype
    name = dtype if isinstance(dtype, str) else getattr(dtype, "__name__", None)
    return _DTYPES.get(str(name)) if name is not None else None


def _shared_shape(shape) -> tuple[int, ...]:
    value = shape.value if isinstance(shape, Const) else None
    value = (value,) if type(value) is int else value
    if not isinstance(value, tuple) or not value or not all(type(v) is int and v > 0 for v in value):
        raise TypeInferenceError("shared_array needs a constant shape: a positive int or a tuple of them "
                                 "(module-level constants are fine)", (widen(shape),))
    return value


def _shared_type(shape, dtype):
    dims = _shared_shape(shape)
    scalar = _scalar_of(dtype.value) if isinstance(dtype, Const) and dtype.type == pyobj else None
    if scalar is None:
        raise TypeInferenceError("shared_array dtype must be a constant scalar type (types.float32, "
                                 "numpy.float64, 'int32'...)", (widen(dtype),))
    return T.ArrayType(scalar, len(dims), "C")


def new_shared_name(cg) -> str:
    """A fresh name for the global of a ``shared_array`` in ``cg``'s module."""
    count = getattr(cg.mod, "_gpuc_shared_count", 0)
    cg.mod._gpuc_shared_count = count + 1
    return f"gpuc_shared_{count}"


def _emu_shared(cg, array_type):
    # one global per kernel: the emulation runs one block at a time
    g = ir.GlobalVariable(cg.mod.module, array_type, name=new_shared_name(cg))
    g.linkage, g.align = "internal", 16  # pyright: ignore[reportAttributeAccessIssue]
    g.initializer = ir.Constant(array_type, None)  # pyright: ignore[reportAttributeAccessIssue]
    return g


# -- barriers ------------------------------------------------------------------------
def _emu_barrier(cg):
    count = getattr(cg.mod, "_gpuc_barrier_count", 0)
    cg.mod._gpuc_barrier_count = count + 1
    fn = cg.mod.declare("gpuc_emu_barrier", ir.VoidType(), [_I64])
    cg.b.call(fn, [ir.Constant(_I64, count)])


EMULATION_RULES = kernel_rules(RuleSet("gpuc_grid"), KernelLowering(
    lambda cg, reg, axis: _emu_register(cg, reg.field, axis), _emu_barrier, _emu_shared, _emu_shuffle_down))
"""The CPU grid emulation's lowering; enabled by the ``gpuc_grid`` plugin only."""


class GridEmulationPlugin(plugin.Plugin):
    """Enables :data:`EMULATION_RULES` for the jobs of the CPU grid emulation."""

    name = GRID_EMULATION
    version = "1"
    rules = EMULATION_RULES


plugin.builtin(GridEmulationPlugin)
