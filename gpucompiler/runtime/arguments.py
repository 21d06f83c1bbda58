"""The frontend types of launch arguments: scalars, NumPy arrays, ``__cuda_array_interface__`` arrays and
DLPack arrays (``__dlpack__``, read as one of the two interfaces: :mod:`.dlpack`)."""

from __future__ import annotations

from .. import types as T
from ..arguments import argument
from ..errors import ArgumentTypeError
from . import dlpack

#: ``__array_interface__`` / ``__cuda_array_interface__`` type strings -> element types
TYPESTR = {f"{order}{code}": t for order in "<=|" for code, t in (
    ("f4", T.float32), ("f8", T.float64), ("b1", T.boolean), ("c8", T.complex64), ("c16", T.complex128),
    *((f"{t.kind}{t.bits // 8}", t) for t in T.SCALARS.values() if t.is_integer))}
#: Python scalar types -> frontend types
SCALAR_TYPES = {int: T.int64, float: T.float64, bool: T.boolean}


def cuda_array_type(cai: dict):
    """The frontend type of an array described by ``__cuda_array_interface__``; None if unsupported."""
    dtype = TYPESTR.get(cai["typestr"])
    if dtype is None:
        return None
    shape = tuple(cai["shape"])
    readonly = bool(cai["data"][1]) if isinstance(cai.get("data"), (tuple, list)) else False
    return T.ArrayType(dtype, len(shape), "C" if is_contiguous(shape, cai.get("strides"), dtype) else "A", readonly)


def is_contiguous(shape, strides, dtype) -> bool:
    if strides is None:
        return True
    expect = dtype.itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


def kernel_argument(value, name: str, function: str) -> tuple:
    """:func:`~gpucompiler.arguments.argument` for a kernel: tuples, records, lists and dicts are refused; a DLPack array
    in host memory is viewed as NumPy's ``np.from_dlpack`` would, one in CUDA memory passed as its
    :class:`~.dlpack.CudaView`."""
    if dlpack.is_dlpack(value):
        value = dlpack.view(value, name, function)
        if isinstance(value, dlpack.CudaView):
            return argument_type(value, name, function), value
    t, v = argument(value, name, function)
    if isinstance(t, (T.TupleType, T.RecordType)):
        raise ArgumentTypeError(name, type(value).__name__, function=function,
                                hint="kernels take scalars and arrays: pass the tuple's or record's fields "
                                     "as arguments of their own (@jit functions take tuples and records)")
    if isinstance(t, (T.ListType, T.DictType)):
        raise ArgumentTypeError(name, type(value).__name__, function=function,
                                hint="kernels take scalars and arrays: pass the list as an array (np.asarray(xs)); "
                                     "@jit functions take lists and dicts")
    if isinstance(t, T.StructArrayType):
        raise ArgumentTypeError(name, f"structured array of {t.dtype!r}", function=function,
                                hint="kernels take arrays of numbers: pass each field as an array of its own "
                                     "(a['x'], a['m']); @jit functions take structured arrays")
    return t, v


def argument_type(value, name: str = "?", function: str = ""):
    """The frontend type a kernel argument is specialised on."""
    t = SCALAR_TYPES.get(type(value))
    if t is not None:
        return t
    cai = getattr(value, "__cuda_array_interface__", None)
    if cai is None:
        return kernel_argument(value, name, function)[0]
    t = cuda_array_type(cai)
    if t is None or t.ndim == 0:
        raise ArgumentTypeError(name, type(value).__name__, function=function,
                                hint="kernels take bool/int/float scalars and arrays (NumPy, or any "
                                     "object with __cuda_array_interface__ or __dlpack__) of bool, int32, "
                                     "int64, float32 or float64")
    return t


__all__ = ["SCALAR_TYPES", "TYPESTR", "argument_type", "cuda_array_type", "is_contiguous", "kernel_argument"]
