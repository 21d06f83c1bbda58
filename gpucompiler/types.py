"""Value types of the Python frontend: scalars, NumPy-style arrays, tuples, lists, dicts.

Types are frozen ``attrs`` classes: hashable, comparable, part of job keys.
``typeof(value)`` gives the type of a Python argument; ``promote`` is the
numeric promotion used by arithmetic and by joins at control-flow merges
(NumPy's table: ``int8 + uint8`` is ``int16``, ``uint64 + int64`` is
``float64``, ``int16 + float32`` is ``float32``).
"""

from __future__ import annotations

import dataclasses

import attrs


class Type:
    """Base class of frontend types."""


@attrs.frozen(repr=False, cache_hash=True)
class Scalar(Type):
    """A machine scalar. ``kind`` is NumPy's: ``"b"`` (bool), ``"i"`` (signed int), ``"u"``
    (unsigned int), ``"f"`` (float) or ``"c"`` (complex: ``bits`` counts both parts)."""

    name: str
    kind: str
    bits: int

    @property
    def itemsize(self) -> int:
        return max(self.bits // 8, 1)

    @property
    def is_integer(self) -> bool:
        """A signed or unsigned integer (not bool)."""
        return self.kind in "iu"

    @property
    def is_real(self) -> bool:
        """Any scalar but a complex one."""
        return self.kind != "c"

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
    ``managed`` arrays may live in memory the compiled code allocated: their values
    also carry the refcounted buffer they view (null for memory borrowed from Python).
    """

    dtype: Scalar
    ndim: int
    layout: str = "C"
    readonly: bool = False
    managed: bool = False

    def __repr__(self) -> str:
        flags = (", readonly" if self.readonly else "") + (", managed" if self.managed else "")
        return f"array({self.dtype!r}, {self.ndim}d, {self.layout}{flags})"


@attrs.frozen(repr=False, cache_hash=True)
class StructDtype(Type):
    """A NumPy structured dtype: ``fields`` are ``(name, scalar, byte offset, sub-array shape)`` in
    order, ``itemsize`` the element's bytes, ``alignment`` NumPy's (1 for a packed dtype); all read
    from the dtype, so packed, aligned and padded layouts are what NumPy made them (two layouts
    never share compiled code)."""

    fields: tuple = attrs.field(converter=tuple)
    itemsize: int
    alignment: int = 1

    def field(self, name: str):
        """``(scalar, offset, shape)`` of field ``name``, or None."""
        for n, t, offset, shape in self.fields:
            if n == name:
                return t, offset, shape
        return None

    def __repr__(self) -> str:
        parts = ", ".join(f"{n}: {t!r}{list(s) if s else ''} @{o}" for n, t, o, s in self.fields)
        return f"struct({parts}; {self.itemsize} bytes, align {self.alignment})"


@attrs.frozen(repr=False, cache_hash=True)
class StructArrayType(Type):
    """A strided array of a structured dtype (``{data, shape, strides in bytes}``, as :class:`ArrayType`).

    ``aligned``: NumPy's ``flags.aligned`` (data and strides multiples of the dtype's alignment), so
    that each field's loads may assume the alignment its offset gives it."""

    dtype: StructDtype
    ndim: int
    layout: str = "C"
    readonly: bool = False
    aligned: bool = True

    def __repr__(self) -> str:
        flags = (", readonly" if self.readonly else "") + ("" if self.aligned else ", unaligned")
        return f"array({self.dtype!r}, {self.ndim}d, {self.layout}{flags})"


@attrs.frozen(repr=False, cache_hash=True)
class StructRef(Type):
    """One element of a structured array (NumPy's ``a[i]``): its address, so that reads and writes of
    its fields go to the array's memory (``readonly`` and ``aligned`` are its array's)."""

    dtype: StructDtype
    readonly: bool = False
    aligned: bool = True

    def __repr__(self) -> str:
        flags = (", readonly" if self.readonly else "") + ("" if self.aligned else ", unaligned")
        return f"record({self.dtype!r}{flags})"


@attrs.frozen(repr=False, cache_hash=True)
class SliceType(Type):
    """A slice ``start:stop:step``; each part an integer or absent (``None``, known when compiling)."""

    has_start: bool
    has_stop: bool
    has_step: bool

    def __repr__(self) -> str:
        return "slice(" + ":".join("i" if p else "_" for p in (self.has_start, self.has_stop, self.has_step)) + ")"


@attrs.frozen(repr=False, cache_hash=True)
class TupleType(Type):
    """A fixed-length heterogeneous tuple."""

    items: tuple = attrs.field(converter=tuple)

    def __repr__(self) -> str:
        return "tuple(" + ", ".join(map(repr, self.items)) + ")"


@attrs.frozen(repr=False, cache_hash=True)
class ListType(Type):
    """A growable list of numbers of one ``item`` type (Numba's typed list), made by compiled code.

    A value is the address of a reference-counted block ``{count, data, length, capacity}``: every
    name holding the list sees its appends. ``item`` is None for an empty list whose items are not
    typed yet; ``site`` then names where it was made (the line and column of its ``[]``) so that
    the first ``append`` types it.
    """

    item: Type | None
    site: tuple | None = None

    def __repr__(self) -> str:
        return f"list({self.item!r})" if self.item is not None else "list(?)"


@attrs.frozen(repr=False, cache_hash=True)
class DictType(Type):
    """A dict of one ``key`` and one ``value`` number type (Numba's typed dict), made by compiled code.

    A value is the address of a reference-counted block ``{count, data, length, capacity}``
    (language/python/dictmem.py); ``key``/``value`` are None for an empty dict not typed yet,
    made at ``site`` (its first item assignment types it, as an append types a list).
    """

    key: Type | None
    value: Type | None
    site: tuple | None = None

    def __repr__(self) -> str:
        return f"dict({self.key!r}, {self.value!r})" if self.key is not None else "dict(?)"


@attrs.frozen(repr=False, cache_hash=True)
class DictView(Type):
    """``d.keys()``, ``d.values()`` or ``d.items()`` (``kind``) of a dict of type ``of``: at run time the dict."""

    of: DictType
    kind: str

    def __repr__(self) -> str:
        return f"{self.kind}({self.of!r})"


@attrs.frozen(repr=False, cache_hash=True)
class RecordType(Type):
    """An instance of a ``NamedTuple`` or dataclass: ``fields`` are ``(name, type)`` pairs in order.

    ``module`` and ``qualname`` name the class (compiled code that returns a record imports it to
    build the instance); ``indexable``: a named tuple (``r[0]``, unpacking and ``len`` work).
    """

    module: str
    qualname: str
    fields: tuple = attrs.field(converter=tuple)
    indexable: bool = False

    @property
    def items(self) -> tuple:
        return tuple(t for _, t in self.fields)

    def field(self, name: str):
        """The index and type of field ``name``, or None."""
        for k, (n, t) in enumerate(self.fields):
            if n == name:
                return k, t
        return None

    def __repr__(self) -> str:
        return f"{self.qualname}(" + ", ".join(f"{n}: {t!r}" for n, t in self.fields) + ")"


@attrs.frozen(repr=False, cache_hash=True)
class BoundMethod(Type):
    """``value.name`` of a method: at run time the receiver ``value`` (of type ``receiver``);
    calling it calls :func:`gpucompiler.frontend.intrinsics.call_method`."""

    receiver: Type
    name: str

    def __repr__(self) -> str:
        return f"method({self.receiver!r}.{self.name})"


@attrs.frozen(repr=False, cache_hash=True)
class ArrayExpr(Type):
    """A fused elementwise array expression, evaluated element by element where it is consumed.

    Its value is the tuple of its ``leaves`` (arrays and scalars, broadcast
    NumPy's way); ``tree`` is a leaf's index or ``(op, intype, dtype, subtrees)``:
    the scalar function ``op`` applied at ``intype`` to the subtrees, giving ``dtype``.
    """

    dtype: Scalar
    ndim: int
    leaves: tuple
    tree: object
    exact: bool = False
    """every array leaf is known to have the expression's shape (no broadcasting: indexed directly)"""

    def __repr__(self) -> str:  # names specializations: says everything that tells two apart
        exact = ", exact" if self.exact else ""
        return f"arrayexpr({self.dtype!r}, {self.ndim}d, {_show_tree(self.tree, self.leaves)}{exact})"


def _show_tree(tree, leaves) -> str:
    if isinstance(tree, int):
        return repr(leaves[tree])
    op, intypes, dtype, kids = tree
    args = ", ".join(_show_tree(k, leaves) for k in kids)
    return f"{getattr(op, '__name__', op)}[{','.join(map(repr, intypes))}->{dtype!r}]({args})"


boolean = Scalar("bool", "b", 1)
int8 = Scalar("int8", "i", 8)
int16 = Scalar("int16", "i", 16)
int32 = Scalar("int32", "i", 32)
int64 = Scalar("int64", "i", 64)
uint8 = Scalar("uint8", "u", 8)
uint16 = Scalar("uint16", "u", 16)
uint32 = Scalar("uint32", "u", 32)
uint64 = Scalar("uint64", "u", 64)
float32 = Scalar("float32", "f", 32)
float64 = Scalar("float64", "f", 64)
complex64 = Scalar("complex64", "c", 64)
complex128 = Scalar("complex128", "c", 128)
none = NoneType()

SCALARS = {t.name: t for t in (boolean, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                               float32, float64, complex64, complex128)}
_INTS = {(t.kind, t.bits): t for t in SCALARS.values() if t.is_integer}


def is_number(t) -> bool:
    return isinstance(t, Scalar)


def integer(kind: str, bits: int) -> Scalar:
    """The integer type of ``kind`` (``"i"``/``"u"``) and ``bits``."""
    return _INTS[(kind, bits)]


def float_of(t: Scalar) -> Scalar:
    """The float type of a complex type's parts (``complex64`` -> ``float32``)."""
    return float32 if t == complex64 else float64


def complex_of(t: Scalar) -> Scalar:
    """The complex type whose parts are the float ``t``."""
    return complex64 if t == float32 else complex128


def promote(a: Scalar, b: Scalar) -> Scalar:
    """The common type of ``a`` and ``b`` in arithmetic: NumPy's promotion table, except that
    ``bool`` with ``bool`` is ``int64`` (Python's ``True + True``)."""
    if a == b:
        return int64 if a == boolean else a
    if a == boolean or b == boolean:
        return b if a == boolean else a
    if a.kind == "c" or b.kind == "c":
        parts = promote(float_of(a) if a.kind == "c" else a, float_of(b) if b.kind == "c" else b)
        return complex_of(parts)
    if a.kind == "f" or b.kind == "f":
        f, other = (a, b) if a.kind == "f" and (b.kind != "f" or a.bits >= b.bits) else (b, a)
        if other.kind == "f" or f.bits == 64 or other.bits <= 16:
            return f
        return float64
    if a.kind == b.kind:
        return a if a.bits >= b.bits else b
    s, u = (a, b) if a.kind == "i" else (b, a)
    if s.bits > u.bits:
        return s
    return integer("i", 2 * u.bits) if u.bits < 64 else float64


def array(dtype: Scalar, ndim: int, layout: str = "C") -> ArrayType:
    """Shorthand for :class:`ArrayType`."""
    return ArrayType(dtype, ndim, layout)


_PY_SCALARS = {bool: boolean, int: int64, float: float64, complex: complex128}


def typeof(value):
    """The frontend type of a Python argument value; ``None`` when it has none.

    Arrays are NumPy ``ndarray``s, 0-d ones included (an object that only has
    ``dtype``/``ndim`` attributes is no array: see :mod:`gpucompiler.arguments`);
    NumPy scalars have their scalar type.
    """
    t = _PY_SCALARS.get(type(value))
    if t is not None:
        return t
    cls = type(value)
    if cls is tuple:
        items = tuple(typeof(v) for v in value)
        return None if None in items else TupleType(items)
    numpy = _NUMPY_CLASSES.get(cls)
    if numpy is None:
        numpy = _NUMPY_CLASSES[cls] = cls.__module__ == "numpy" or _is_ndarray(cls)
    if not numpy:
        return _record_type(value)
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return None
    ndim = value.ndim
    if ndim == 0 and not _is_ndarray(cls):  # a NumPy scalar; a 0-d array is an array
        return SCALARS.get(str(dtype))
    # NumPy's flag bits: one read for contiguity, writeability and alignment; the dtype's alignment too, as
    # NumPy calls a packed and an aligned structured dtype of the same offsets equal
    key = (dtype, ndim, value.flags.num, dtype.alignment)
    try:
        return _ARRAY_TYPES[key]
    except KeyError:
        t = _ARRAY_TYPES[key] = _array_type(dtype, ndim, bool(key[2] & _C_CONTIGUOUS), not key[2] & _WRITEABLE,
                                            bool(key[2] & _ALIGNED))
        return t


def _record_type(value):
    record = record_fields(value)
    if record is None:
        return None
    items = tuple(typeof(v) for _, v in record)
    if None in items:
        return None
    cls = type(value)
    return RecordType(cls.__module__, cls.__qualname__, tuple(zip((n for n, _ in record), items)),
                      isinstance(value, tuple))


def record_fields(value) -> list[tuple[str, object]] | None:
    """``(name, value)`` of each field of a ``NamedTuple`` or dataclass instance, else None."""
    if isinstance(value, tuple):
        names = getattr(type(value), "_fields", None)
        return list(zip(names, value)) if isinstance(names, tuple) else None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    return None


def _is_ndarray(cls: type) -> bool:
    """Whether ``cls`` is NumPy's array class or a subclass (matrix, memmap...); NumPy is not imported here."""
    return any(c.__name__ == "ndarray" and c.__module__ == "numpy" for c in cls.__mro__)


#: class -> whether its instances are NumPy arrays or scalars (a memo: ``__module__`` of a C type is slow)
_NUMPY_CLASSES: dict = {}


#: (dtype, ndim, NumPy flag bits) -> type; typeof is on the dispatch path of every call
_ARRAY_TYPES: dict = {}
_C_CONTIGUOUS, _WRITEABLE, _ALIGNED = 0x0001, 0x0400, 0x0100  # NPY_ARRAY_C_CONTIGUOUS, _WRITEABLE, _ALIGNED


def _array_type(dtype, ndim: int, c_contiguous: bool, readonly: bool, aligned: bool):
    if dtype.names is not None:
        struct = struct_dtype(dtype)
        return None if struct is None or ndim == 0 else StructArrayType(
            struct, ndim, "C" if c_contiguous else "A", readonly, aligned)
    scalar = SCALARS.get(str(dtype))
    if scalar is None:
        return None
    return ArrayType(scalar, ndim, "C" if c_contiguous else "A", readonly)


def struct_dtype(dtype) -> StructDtype | None:
    """The :class:`StructDtype` of a NumPy structured ``dtype``; None when a field is not a number (or
    a sub-array of numbers) in the machine's byte order: :func:`struct_problem` says which."""
    fields = []
    for name in dtype.names:
        ft, offset = dtype.fields[name][:2]
        scalar = SCALARS.get(str(ft.base))
        if scalar is None or not isinstance(name, str):
            return None
        fields.append((name, scalar, offset, tuple(ft.shape)))
    return StructDtype(tuple(fields), dtype.itemsize, dtype.alignment)


def struct_problem(dtype) -> str | None:
    """Why compiled code does not take the structured ``dtype`` (its first field that is not a number),
    or None."""
    for name in dtype.names or ():
        ft = dtype.fields[name][0]
        if SCALARS.get(str(ft.base)) is None:
            kind = ("a nested structure" if ft.base.names is not None else
                    "in the other byte order" if ft.base.byteorder == ">" else f"of dtype {ft.base}")
            return f"field {name!r} is {kind}"
    return None
