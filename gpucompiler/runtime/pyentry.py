"""Builtin function objects over compiled entries, and the word guards of their globals.

A specialization's ``<entry>.pyentry`` (:mod:`gpucompiler.codegen.pyentry`)
becomes a real builtin function (a ``PyMethodDef`` made here and
``PyCFunction_NewEx``, ``METH_FASTCALL | METH_KEYWORDS``): the jitted
object's class gets it as ``__call__`` and a warm call runs compiled code
from the interpreter's call to the boxed result. Its ``self`` is the tuple
``(fallback, numpy.ndarray, guard, method def)``.

A :class:`Guard` replaces per-call checks of every global the code read by
a few word compares the entry makes: the version tag of each dict a global
was read from (``ma_version_tag``: CPython gives a dict a new one whenever
a binding in it changes to another object; 3.10-3.12) and the content
pointer of each closure cell. Any change in such a dict, also of a global
the code never read, is a miss: the Python dispatcher checks the reads one
by one as before and, when they all hold, :meth:`Guard.refresh` takes the
new tags.

Every layout this relies on is checked on live objects first
(:func:`layout_ok`); where one differs (another Python), no entry is made
and calls stay on the ctypes path.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import types
from typing import Any

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
        words, pair = (ctypes.c_uint64 * 2)(), (_MARKER, 2)
        checks = [
            _word(id(1.5) + 8) == id(float),                                    # ob_type
            ctypes.c_double.from_address(id(1.5) + 16).value == 1.5,           # PyFloatObject
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


class Guard:
    """Word pairs ``(address, expected)`` the entry compares on each call: see the module docstring."""

    __slots__ = ("words", "_addresses", "_holders")

    def __init__(self, holders: list):
        self._holders = holders  # kept alive: their addresses are in the words
        self._addresses = [id(h) + (_CELL_REF if isinstance(h, types.CellType) else _DICT_VERSION)
                           for h in holders]
        self.words = (ctypes.c_uint64 * (1 + 2 * len(holders)))()
        self.words[0] = len(holders)
        for k, address in enumerate(self._addresses):
            self.words[1 + 2 * k] = address
        self.refresh()

    @classmethod
    def of(cls, deps) -> Guard | None:
        """The guard of the reads ``(holder, name, value)``; None when a holder has no word to watch."""
        holders: dict[int, Any] = {}
        for holder, _, _ in deps:
            if isinstance(holder, types.ModuleType):
                holder = vars(holder)
            if not isinstance(holder, (dict, types.CellType)):
                return None
            holders[id(holder)] = holder
        return cls(list(holders.values()))

    def refresh(self) -> None:
        """Take the current words as expected (call it after the reads were checked one by one)."""
        for k, address in enumerate(self._addresses):
            self.words[2 + 2 * k] = _word(address)


class FastEntry:
    """A builtin function object calling the compiled entry at ``address``; misses call ``fallback``."""

    __slots__ = ("function",)

    def __init__(self, address: int, name: str, fallback, guard: Guard, ndarray: Any):
        method = _MethodDef(name.encode(), address, _METH_FASTCALL | _METH_KEYWORDS, None)
        state = (fallback, ndarray, guard.words, method)  # the tuple keeps the def and the words alive
        self.function = _new_builtin(ctypes.byref(method), state, None)

    @staticmethod
    def available(argtypes) -> bool:
        """Whether entries can be made in this process for arguments of these types."""
        arrays = any(getattr(t, "ndim", 0) for t in argtypes)
        return layout_ok() and (not arrays or _ndarray_layout_ok())


__all__ = ["FastEntry", "Guard", "layout_ok"]
