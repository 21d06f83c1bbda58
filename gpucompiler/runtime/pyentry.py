"""Builtin function objects over compiled entries, and the word guards of their globals.

A specialization's ``<entry>.pyentry`` (:mod:`gpucompiler.codegen.pyentry`)
becomes a real builtin function (a ``PyMethodDef`` made here and
``PyCFunction_NewEx``, ``METH_FASTCALL | METH_KEYWORDS``): the jitted
object's class gets it as ``__call__`` and a warm call runs compiled code
from the interpreter's call to the boxed result. Its ``self`` is the tuple
``(fallback, numpy.ndarray, guard words, NumPy words, borrowed-array helper, keyword call, dtype
words, method def, guard, dtypes)``.

A :class:`Guard` replaces per-call checks of every global the code read by
a word compare each that the entry makes: the version tag of the dict a
global was read from (``ma_version_tag``: CPython gives a dict a new one
whenever a binding in it changes to another object; 3.10-3.12) and the
content pointer of a closure cell. Where a dict's tag moved, the entry
looks the name up again and takes the new tag if it still finds the same
object (a change to another global of the module); otherwise, and for a
changed cell, the call is a miss: the Python dispatcher checks the reads
one by one as before, recompiles when one changed, and when they all hold
:meth:`Guard.refresh` takes the current words.

A :class:`Dtypes` holds the structured dtypes an entry takes by address: per
structured argument, the last dtype object of the compiled layout that the
dispatcher typed (NumPy makes a new object for each structured dtype built,
equal or not), so that repeated calls with it, or with arrays sharing it
(plain arrays or ``np.recarray`` views), stay in compiled code; a call with
another object misses once and is remembered.

Every layout this relies on is checked on live objects first
(:func:`layout_ok`); where one differs (another Python), no entry is made
and calls stay on the ctypes path.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
import types
from typing import Any

from .. import types as T
from ..codegen.entrywords import DTYPE_HEADER, DTYPE_WORDS, GUARD_WORDS, NUMPY_FUNCTIONS, holds_array
from ..interpreter.lattice import MISSING
from . import owned

#: the slots of NumPy's C API table (``__multiarray_api.h``; NumPy's ABI, the same in NumPy 1 and 2):
#: the ``ndarray`` type and each of :data:`~gpucompiler.codegen.entrywords.NUMPY_FUNCTIONS`
_API_SLOTS = {"PyArray_Type": 2, "PyArray_NewFromDescr": 94, "PyArray_SetBaseObject": 282,
              "PyArray_DescrFromType": 45}

_METH_FASTCALL, _METH_KEYWORDS = 0x0080, 0x0002
_DICT_VERSION, _CELL_REF = 24, 16


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


_new_builtin = ctypes.pythonapi.PyCFunction_NewEx
_new_builtin.restype = ctypes.py_object
_new_builtin.argtypes = [ctypes.POINTER(_MethodDef), ctypes.py_object, ctypes.py_object]


_MARKER = object()


def _word(address: int) -> int:
    return ctypes.c_uint64.from_address(address).value


@functools.cache
def layout_ok() -> bool:
    """Whether this interpreter lays out the objects the entries read as they expect."""
    try:
        cell = types.CellType(_MARKER)
        d: dict[str, Any] = {}
        before = _word(id(d) + _DICT_VERSION)
        d["x"] = _MARKER
        words, pair, z = (ctypes.c_uint64 * 2)(), (_MARKER, 2), complex(1.5, -2.25)
        checks = [
            _word(id(1.5) + 8) == id(float),                                    # ob_type
            ctypes.c_double.from_address(id(1.5) + 16).value == 1.5,           # PyFloatObject
            ctypes.c_double.from_address(id(z) + 24).value == z.imag,           # PyComplexObject
            _word(id(pair) + 24) == id(_MARKER),                                # PyTupleObject items
            _word(id(words) + 16) == ctypes.addressof(words),                   # ctypes' buffer pointer
            _word(id(d) + _DICT_VERSION) != before,                             # dict version tags
            _word(id(cell) + _CELL_REF) == id(_MARKER),                         # cell contents
        ]
        return all(checks)
    except (AttributeError, TypeError, ValueError):
        return False


@functools.cache
def _ndarray_layout_ok() -> bool:
    """The ``PyArrayObject`` and descriptor fields the entries read (NumPy imported: arrays exist)."""
    np = sys.modules.get("numpy")
    if np is None:
        return False
    a = np.zeros((2, 3))[:, ::2]
    descr = _word(id(a) + 56)
    return (_word(id(a) + 16) == a.ctypes.data and ctypes.c_int.from_address(id(a) + 24).value == 2
            and descr == id(a.dtype) and ctypes.c_int.from_address(descr + 28).value == a.dtype.num
            and ctypes.c_int.from_address(id(a) + 64).value & 0xFFFF == a.flags.num & 0xFFFF)


@functools.cache
def names_offset() -> int | None:
    """Where a structured ``PyArray_Descr`` holds its ``names`` tuple (NumPy 1: 56, NumPy 2: 104), found on
    a live dtype whose fields are renamed (which must replace the tuple); None where neither holds it.
    56 is tried first: it lies inside both versions' struct (NumPy 2's ``metadata``, never the tuple)."""
    np: Any = sys.modules.get("numpy")
    if np is None:
        return None
    dtype = np.dtype([("a", np.int8), ("b", np.float64)])
    for offset in (56, 104):
        before = dtype.names
        if _word(id(dtype) + offset) == id(before):
            dtype.names = ("c", "d")
            return offset if _word(id(dtype) + offset) == id(dtype.names) != id(before) else None
    return None


@functools.cache
def numpy_words() -> ctypes.Array | None:
    """The addresses of :data:`~gpucompiler.codegen.entrywords.NUMPY_FUNCTIONS` in NumPy's C API (read from
    its ``_ARRAY_API`` table), after making an array with them; None where NumPy is not imported or
    the table does not hold what its slots should (calls returning arrays then stay on ctypes)."""
    np: Any = sys.modules.get("numpy")
    core: Any = getattr(np, "_core", None) or getattr(np, "core", None)
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    try:
        table = get(core._multiarray_umath._ARRAY_API, None)
    except (AttributeError, ValueError):
        return None
    slot = lambda name: ctypes.c_void_p.from_address(table + 8 * _API_SLOTS[name]).value  # noqa: E731
    if slot("PyArray_Type") != id(np.ndarray):
        return None
    words = (ctypes.c_uint64 * len(NUMPY_FUNCTIONS))(*(slot(name) for name in NUMPY_FUNCTIONS))
    return words if _makes_arrays(np, words) else None


def _makes_arrays(np: Any, words: ctypes.Array) -> bool:
    """Whether the three functions make a (2, 3) int32 view with a base, as the entry calls them."""
    new_from_descr = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object, ctypes.c_void_p, ctypes.c_int,
                                       ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                       ctypes.c_void_p)(words[0])
    set_base = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.py_object)(words[1])
    descr_from_type = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_int)(words[2])
    owner = np.arange(6, dtype=np.int32)
    extents = (ctypes.c_int64 * 4)(2, 3, 12, 4)
    descr = descr_from_type(5)
    if descr != id(np.dtype(np.int32)):
        return False
    a = new_from_descr(np.ndarray, descr, 2, ctypes.addressof(extents), ctypes.addressof(extents) + 16,
                       owner.ctypes.data, 0x0400, None)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(owner))  # the base takes a reference
    ok = set_base(a, owner) == 0
    return ok and a.base is owner and a.flags.writeable and np.array_equal(a, owner.reshape(2, 3))


class Guard:
    """The guard words the entry checks on each call (see :data:`~gpucompiler.codegen.entrywords.GUARD_WORDS`):
    one guard per global read, on its dict's version tag or its cell's contents."""

    __slots__ = ("words", "_addresses", "_holders")

    def __init__(self, rows: list[tuple[Any, Any, Any]]):
        """``rows``: ``(holder, name, value)`` with ``holder`` a dict or a cell (``name`` None)."""
        self._holders = rows  # kept alive: their addresses are in the words
        self._addresses = [id(h) + (_DICT_VERSION if isinstance(h, dict) else _CELL_REF) for h, _, _ in rows]
        self.words = (ctypes.c_uint64 * (1 + GUARD_WORDS * len(rows)))()
        self.words[0] = len(rows)
        for k, (holder, name, value) in enumerate(rows):
            at = 1 + GUARD_WORDS * k
            self.words[at] = self._addresses[k]
            if isinstance(holder, dict):
                self.words[at + 2], self.words[at + 3] = id(holder), id(name)
                self.words[at + 4] = 0 if value is MISSING else id(value)
        self.refresh()

    @classmethod
    def of(cls, deps) -> Guard | None:
        """The guard of the reads ``(holder, name, value)``; None when a holder has no word to watch."""
        rows = []
        for holder, name, value in deps:
            if isinstance(holder, types.ModuleType):
                holder = vars(holder)
            if isinstance(holder, types.CellType):
                rows.append((holder, None, value))
            elif isinstance(holder, dict) and isinstance(name, str):
                rows.append((holder, sys.intern(name), value))
            else:
                return None
        return cls(rows)

    def refresh(self) -> None:
        """Take the current words as expected (call it after the reads were checked one by one)."""
        for k, address in enumerate(self._addresses):
            self.words[2 + GUARD_WORDS * k] = _word(address)


class Dtypes:
    """The dtype words an entry reads (see :data:`~gpucompiler.codegen.entrywords.DTYPE_WORDS`): ``numpy.recarray``
    and, per structured argument, the last two dtype objects seen with the compiled layout (a plain array and
    its ``np.recarray`` view, two dtypes built alike) and their ``names`` tuples.

    Both objects stay referenced while the words hold their addresses, so an address in the words is
    never that of a freed object reused by a dtype of another layout."""

    __slots__ = ("words", "_layouts", "_recarray", "_kept", "_next", "_lock")

    def __init__(self, layouts: dict[int, T.StructDtype], count: int):
        self._layouts = layouts
        self.words = (ctypes.c_uint64 * (DTYPE_HEADER + DTYPE_WORDS * count))()
        self._recarray = getattr(sys.modules.get("numpy"), "recarray", None)
        self.words[0] = names_offset() or 0
        self.words[1] = 0 if self._recarray is None else id(self._recarray)
        self._kept: dict[tuple[int, int], tuple[Any, Any]] = {}  # (argument, slot) -> (dtype, names)
        self._next = dict.fromkeys(layouts, 0)  # the slot each argument's next new dtype replaces
        self._lock = threading.Lock()

    @classmethod
    def of(cls, argtypes) -> Dtypes | None:
        """The dtype words of a specialization on ``argtypes``; None without a structured argument."""
        layouts = {k: t.dtype for k, t in enumerate(argtypes) if isinstance(t, T.StructArrayType)}
        return cls(layouts, len(argtypes)) if layouts else None

    def take(self, args) -> None:
        """Remember the dtype of each structured argument of ``args`` (a call the dispatcher is about to run
        on this specialization) that has the compiled layout, names and alignment included: in its own slot
        where it is there with other names (renamed), else in the older one, whose dtype is released once
        no word names it."""
        words = self.words
        for k, layout in self._layouts.items():
            dtype = getattr(args[k], "dtype", None)
            if dtype is None:
                continue
            at = DTYPE_HEADER + DTYPE_WORDS * k
            pair = (id(dtype), id(dtype.names))
            if pair in ((words[at], words[at + 1]), (words[at + 2], words[at + 3])):
                continue
            names = dtype.names  # read before the layout: a rename in between leaves a stale word (a miss)
            if names is None or T.struct_dtype(dtype) != layout:
                continue
            with self._lock:
                slot = 0 if words[at] == id(dtype) else 1 if words[at + 2] == id(dtype) else self._next[k]
                words[at + 2 * slot], words[at + 2 * slot + 1] = id(dtype), id(names)
                self._kept[k, slot] = (dtype, names)
                self._next[k] = 1 - slot


def _keyword_call(fallback, address: int, nargs: int, kwnames: tuple[str, ...]) -> Any:
    """``fallback`` called as a keyword call that missed the entry was: its arguments read from the
    interpreter's vector at ``address`` (``nargs`` positional values, then one per name of
    ``kwnames``), which lives until the call returns."""
    values = ctypes.cast(address, ctypes.POINTER(ctypes.py_object))
    return fallback(*[values[k] for k in range(nargs)],
                    **{name: values[nargs + k] for k, name in enumerate(kwnames)})


class FastEntry:
    """A builtin function object calling the compiled entry at ``address``; misses call ``fallback``."""

    __slots__ = ("function",)

    def __init__(self, address: int, name: str, fallback, guard: Guard, ndarray: Any, numpy: Any = None,
                 dtypes: Dtypes | None = None):
        method = _MethodDef(name.encode(), address, _METH_FASTCALL | _METH_KEYWORDS, None)
        if numpy is None:  # the entry returns no array: it never reads them
            numpy = (ctypes.c_uint64 * len(NUMPY_FUNCTIONS))()
        # without a structured argument the entry never reads the dtype words
        dtype_words = dtypes.words if dtypes is not None else (ctypes.c_uint64 * 1)()
        # the tuple keeps the def, the words and (through the guard and dtypes) the objects they point into alive
        state = (fallback, ndarray, guard.words, numpy, owned.borrowed, functools.partial(_keyword_call, fallback),
                 dtype_words, method, guard, dtypes)
        self.function = _new_builtin(ctypes.byref(method), state, None)

    @staticmethod
    def available(argtypes, rettype=None) -> bool:
        """Whether entries can be made in this process for arguments and results of these types."""
        arrays = any(getattr(t, "ndim", 0) for t in argtypes)
        if holds_array(rettype) and numpy_words() is None:
            return False
        if any(isinstance(t, T.StructArrayType) for t in argtypes) and names_offset() is None:
            return False
        return layout_ok() and (not arrays or _ndarray_layout_ok())


__all__ = ["Dtypes", "FastEntry", "Guard", "layout_ok"]
