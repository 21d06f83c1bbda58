"""Value types of the Python frontend: scalars, NumPy-style arrays, tuples.

Types are frozen ``attrs`` classes: hashable, comparable, part of job keys.
``typeof(value)`` gives the type of a Python argument; ``promote`` is the
numeric promotion used by arithmetic and by joins at control-flow merges.
"""

from __future__ import annotations

import attrs


class Type:
    """Base class of frontend types."""


@attrs.frozen(repr=False, cache_hash=True)
class Scalar(Type):
    """A machine scalar. ``kind`` is ``"b"`` (bool), ``"i"`` (signed int) or ``"f"`` (float)."""

    name: str
    kind: str
    bits: int

    @property
    def itemsize(self) -> int:
        return max(self.bits // 8, 1)

    def __repr__(self) -> str:
        return self.name


@attrs.frozen(repr=False, cache_hash=True)
class NoneType(Type):
    """The type of ``None`` (functions that return nothing)."""

    def __repr__(self) -> str:
        return "none"


@attrs.frozen(repr=False, cache_hash=True)
class ArrayType(Type):
    """A strided array: ``dtype``, ``ndim`` and ``layout`` (``"C"`` contiguous or ``"A"`` any).

    ``readonly`` arrays (NumPy's ``flags.writeable`` off) cannot be written by compiled code.
    """

    dtype: Scalar
    ndim: int
    layout: str = "C"
    readonly: bool = False

    def __repr__(self) -> str:
        return f"array({self.dtype!r}, {self.ndim}d, {self.layout}{', readonly' if self.readonly else ''})"


@attrs.frozen(repr=False, cache_hash=True)
class TupleType(Type):
    """A fixed-length heterogeneous tuple."""

    items: tuple = attrs.field(converter=tuple)

    def __repr__(self) -> str:
        return "tuple(" + ", ".join(map(repr, self.items)) + ")"


boolean = Scalar("bool", "b", 1)
int32 = Scalar("int32", "i", 32)
int64 = Scalar("int64", "i", 64)
float32 = Scalar("float32", "f", 32)
float64 = Scalar("float64", "f", 64)
none = NoneType()

SCALARS = {t.name: t for t in (boolean, int32, int64, float32, float64)}
_RANK = {boolean: 0, int32: 1, int64: 2, float32: 3, float64: 4}


def is_number(t) -> bool:
    return isinstance(t, Scalar)


def promote(a: Scalar, b: Scalar) -> Scalar:
    """The common type of ``a`` and ``b`` in arithmetic (NumPy-like; bool+bool is int64)."""
    if a == b:
        return int64 if a == boolean else a
    lo, hi = sorted((a, b), key=_RANK.__getitem__)
    if hi == float32 and lo.kind == "i":
        return float64
    return int64 if hi == boolean else hi


def array(dtype: Scalar, ndim: int, layout: str = "C") -> ArrayType:
    """Shorthand for :class:`ArrayType`."""
    return ArrayType(dtype, ndim, layout)


_PY_SCALARS = {bool: boolean, int: int64, float: float64}


def typeof(value):
    """The frontend type of a Python argument value; ``None`` when it has none.

    Arrays are NumPy ``ndarray``s of at least one dimension (an object that only
    has ``dtype``/``ndim`` attributes is no array: see :mod:`gpucompiler.arguments`);
    NumPy scalars and 0-d arrays have their scalar type.
    """
    t = _PY_SCALARS.get(type(value))
    if t is not None:
        return t
    if isinstance(value, tuple):
        items = tuple(typeof(v) for v in value)
        return None if None in items else TupleType(items)
    cls = type(value)
    numpy = _NUMPY_CLASSES.get(cls)
    if numpy is None:
        numpy = _NUMPY_CLASSES[cls] = cls.__module__ == "numpy" or _is_ndarray(cls)
    if not numpy:
        return None
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return None
    ndim = value.ndim
    if ndim == 0:
        return SCALARS.get(str(dtype))
    key = (dtype, ndim, value.flags.num)  # NumPy's flag bits: one read for contiguity and writeability
    try:
        return _ARRAY_TYPES[key]
    except KeyError:
        t = _ARRAY_TYPES[key] = _array_type(dtype, ndim, bool(key[2] & _C_CONTIGUOUS), not key[2] & _WRITEABLE)
        return t


def _is_ndarray(cls: type) -> bool:
    """Whether ``cls`` is NumPy's array class or a subclass (matrix, memmap...); NumPy is not imported here."""
    return any(c.__name__ == "ndarray" and c.__module__ == "numpy" for c in cls.__mro__)


#: class -> whether its instances are NumPy arrays or scalars (a memo: ``__module__`` of a C type is slow)
_NUMPY_CLASSES: dict = {}


#: (dtype, ndim, NumPy flag bits) -> type; typeof is on the dispatch path of every call
_ARRAY_TYPES: dict = {}
_C_CONTIGUOUS, _WRITEABLE = 0x0001, 0x0400  # NPY_ARRAY_C_CONTIGUOUS, NPY_ARRAY_WRITEABLE


def _array_type(dtype, ndim: int, c_contiguous: bool, readonly: bool):
    scalar = SCALARS.get(str(dtype))
    if scalar is None:
        return None
    return ArrayType(scalar, ndim, "C" if c_contiguous else "A", readonly)
